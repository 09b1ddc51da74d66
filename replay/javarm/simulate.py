"""`rmreplay simulate LOG --rm java:SRC [--vs java:SRC2]`: the Java RM's runs in simulate's report.

Without `--vs`, the report's sides are the log (`logged`), rmref's closed loop of the same workload
(`baseline`) and the Java build's (`sim`). With `--vs java:SRC2`, `baseline` is the first build and
`sim` the second: `check --simulate` gates the second against the first, and `rm.vs` names the
first job-cycle where their schedules part.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.simulate.metrics import Measured, identity, measure
from replay.apps.simulate.simulation import Simulated
from replay.javarm.build import JavaBuild, build
from replay.javarm.loop import JavaRun, java_run, same_history
from replay.javarm.scenario import config_from_dir, config_from_log, scenario_of, with_sets
from replay.parsing.sources import InputError

PREFIX = "java:"


def java_spec(text: str, option: str) -> str:
    """SRC of `java:SRC`; InputError for anything else."""
    if not text.startswith(PREFIX) or len(text) == len(PREFIX):
        raise InputError(f"{option} {text!r}: expected java:SRC (a DUCC source tree or a release name; "
                         "`rmreplay rm build SRC` builds it)")
    return text[len(PREFIX):]


def resources_of(logs: list[str], config: str | None) -> tuple[Path | None, str]:
    """The DUCC resources directory the scenario takes its configuration from, and how it was found."""
    if config:
        return Path(config), f"--config {config}"
    first = Path(logs[0])
    for folder in (first if first.is_dir() else first.parent, (first if first.is_dir() else first.parent).parent):
        if (folder / "resources" / "ducc.classes").is_file():
            return folder / "resources", f"the resources directory beside the log ({folder / 'resources'})"
    return None, "the log's printed configuration (classes, nodepools, the RM's settings; the rest the tree's defaults)"


def _schedule_key(sched: pl.DataFrame) -> dict[tuple[int, int], tuple[tuple[str, str, int], ...]]:
    """(cycle, job) -> the schedule lines of the job that cycle (kind, host, share), sorted."""
    rows = sched.filter(pl.col("job_id").is_not_null()).select("cycle", "job_id", "kind", "host", "share_id")
    out: dict[tuple[int, int], list[tuple[str, str, int]]] = {}
    for c, j, kind, host, share in rows.iter_rows():
        out.setdefault((c, j), []).append((str(kind), str(host), -1 if share is None else share))
    return {k: tuple(sorted(v)) for k, v in out.items()}


def vs_block(a: JavaRun, b: JavaRun) -> dict[str, Any]:
    """Where two builds' runs part: job-cycles whose processes held differ, and schedules that differ."""
    held = same_history(a.history.held, b.history.held)
    sa, sb = _schedule_key(a.schedule), _schedule_key(b.schedule)
    lines = sorted(k for k in set(sa) | set(sb) if sa.get(k) != sb.get(k))
    first = lines[0] if lines else None
    return {"baseline": a.build.label, "sim": b.build.label,
            "job_cycles_differ": len(held), "first_held_difference": list(held[0]) if held else None,
            "schedules_differ": len(lines),
            "first_difference": None if first is None else {"cycle": first[0], "job_id": first[1],
                                                            "baseline": [list(x) for x in sa.get(first, ())],
                                                            "sim": [list(x) for x in sb.get(first, ())]}}


def _run_block(run: JavaRun, assumed: tuple[str, ...], source: str) -> dict[str, Any]:
    return {"build": run.build.label, "source": run.build.source, "version": run.build.version,
            "release": run.build.release.name, "log": str(run.log), "unmatched_cycles": run.unmatched_cycles,
            "configuration": source, "assumed": list(assumed)}


def measure_java(tables: Mapping[str, pl.DataFrame], sim: Simulated, rm: str, vs: str | None,
                 logs: list[str], config: str | None, seed: int = 1) -> Measured:
    """Run the build(s) on the simulation's workload and measure them beside the log (and rmref)."""
    builds: list[JavaBuild] = [build(java_spec(rm, "--rm"))] + ([build(java_spec(vs, "--vs"))] if vs else [])
    folder, source = resources_of(logs, config)
    conf = with_sets(config_from_dir(folder) if folder else config_from_log(tables), sim.change.sets)
    scen = scenario_of(sim.workload, len(sim.context.cycles), conf, seed, tables)
    runs = [java_run(b, scen, sim) for b in builds]
    given = {"sim": runs[-1].history} | ({"baseline": runs[0].history} if vs else {})
    m = measure(tables, sim, given)
    block = {"sides": {"logged": "the log", "baseline": runs[0].build.label if vs else "rmref",
                       "sim": runs[-1].build.label},
             "runs": [_run_block(r, scen.assumed, source) for r in runs],
             "identity_sim": identity(m, "sim"),
             "log_release": sim.boot.release.release.name if sim.boot.release else None}
    if vs:
        block["vs"] = vs_block(runs[0], runs[1])
    return replace(m, rm=block)
