"""The recorded workload through a Java RM build, closed loop on the harness's simulated clock.

The harness (run.py) writes the RM's own rm.log; rmreplay parses it with its own parser and reads
the same `History` it reads from any log (replay.apps.simulate.metrics.logged_history), then puts
it in the workload's terms: the harness's DuccIds back to the log's job ids, its cycles onto the
log's cycles at the same time from the first cycle.
"""

from __future__ import annotations

import bisect
import dataclasses
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay.apps.simulate.metrics import History, logged_history
from replay.apps.simulate.simulation import Simulated, context_from_log
from replay.javarm.build import JavaBuild
from replay.javarm.harness import RUN_PY
from replay.javarm.scenario import Scenario
from replay.model.start import bootstrap
from replay.parsing.cache import open_input
from replay.parsing.digest import cache_root
from replay.parsing.sources import InputError


@dataclass(frozen=True)
class JavaRun:
    """One Java RM run of a workload: its log, its history in the workload's terms, what it left out."""

    build: JavaBuild
    log: Path
    history: History
    schedule: pl.DataFrame  # the run's schedule table, job ids and cycles in the log's terms
    unmatched_cycles: int  # the run's cycles with no log cycle at their time


def run_scenario(build: JavaBuild, scenario: Scenario, timeout: float = 3600) -> Path:
    """The harness's rm.log for the scenario on the build (cached by build and scenario)."""
    text = json.dumps(scenario.scenario, sort_keys=True)
    key = hashlib.sha256(f"{build.dir.name}\0{RUN_PY.read_bytes().hex()}\0{text}".encode()).hexdigest()[:24]
    out = cache_root() / "javarm" / "runs" / key
    if (out / "rm.log").is_file():
        return out / "rm.log"
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.", dir=out.parent))
    (tmp / "scenario.json").write_text(json.dumps(scenario.scenario, indent=1) + "\n")
    cmd = [sys.executable, str(RUN_PY), str(tmp / "scenario.json"), str(tmp), "--build", str(build.dir), "--no-debug"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"the Java RM ({build.label}) did not finish in {timeout:.0f} s") from None
    if p.returncode != 0 or not (tmp / "rm.log").is_file():
        shutil.rmtree(tmp, ignore_errors=True)
        lines = [ln for ln in p.stdout.splitlines() if "Exception" in ln or "Error" in ln] or p.stdout.splitlines()[-1:]
        raise InputError(f"the Java RM ({build.label}) failed: {lines[0].strip() if lines else p.returncode}")
    shutil.rmtree(out, ignore_errors=True)
    try:
        tmp.rename(out)
    except OSError:  # the same run cached meanwhile
        shutil.rmtree(tmp, ignore_errors=True)
    return out / "rm.log"


def _cycle_map(java_times: list[float], log_cycles: tuple[int, ...], log_times: tuple[float, ...],
               java_cycles: list[int]) -> dict[int, int]:
    """Java cycle -> the log's cycle at the same time from the first cycle (within half a period)."""
    out: dict[int, int] = {}
    gaps = sorted(b - a for a, b in zip(log_times, log_times[1:], strict=False)) or [10_000.0]
    half = gaps[len(gaps) // 2] / 2
    for c, t in zip(java_cycles, java_times, strict=True):
        i = bisect.bisect_left(log_times, t)
        best = min((k for k in (i - 1, i) if 0 <= k < len(log_times)), key=lambda k: abs(log_times[k] - t),
                   default=None)
        if best is not None and abs(log_times[best] - t) <= half and log_cycles[best] not in out.values():
            out[c] = log_cycles[best]
    return out


def java_run(build: JavaBuild, scenario: Scenario, sim: Simulated) -> JavaRun:
    """Run the build on the scenario and read its history in the workload's terms."""
    log = run_scenario(build, scenario)
    tables = open_input([log]).tables
    boot = bootstrap(tables)
    ctx = context_from_log(tables, boot)
    by_id = {w.job_id: w for w in sim.workload.work}
    work = tuple(dataclasses.replace(by_id[job], job_id=k) for k, job in scenario.job_of.items())
    view = dataclasses.replace(sim, boot=boot, context=ctx, workload=dataclasses.replace(sim.workload, work=work))
    h = logged_history(tables, view)
    cmap = _cycle_map(list(ctx.times), sim.context.cycles, sim.context.times, list(ctx.cycles))
    job = scenario.job_of.get
    history = History(
        held={(cmap[c], job(j, -j)): p for (c, j), p in h.held.items() if c in cmap},
        used={cmap[c]: v for c, v in h.used.items() if c in cmap},
        users={cmap[c]: v for c, v in h.users.items() if c in cmap},
        taken={(job(j, -j), s): (cmap.get(c, -1), why) for (j, s), (c, why) in h.taken.items()},
        first_share={job(j, -j): t for j, t in h.first_share.items()},
        finish={job(j, -j): t for j, t in h.finish.items()})
    sched = tables["schedule"].filter(pl.col("cycle").is_in(list(cmap)))
    sched = sched.with_columns(pl.col("cycle").replace_strict(cmap, return_dtype=pl.Int64),
                               pl.col("job_id").replace_strict(scenario.job_of, default=None, return_dtype=pl.Int64))
    return JavaRun(build, log, history, sched, len(ctx.cycles) - len(cmap))


def same_history(a: Mapping[tuple[int, int], int], b: Mapping[tuple[int, int], int]) -> list[tuple[int, int]]:
    """The (cycle, job) keys whose processes held differ, in cycle then job order."""
    return sorted(k for k in set(a) | set(b) if a.get(k, 0) != b.get(k, 0))
