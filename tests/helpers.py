"""What the tests share besides fixtures: the bundled ground-truth logs (fixtures/), their truth and
scenario files, and a per-session parse of each log."""

from __future__ import annotations

import gzip
import json
from functools import lru_cache
from pathlib import Path

import polars as pl

from replay import parse

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SCENARIOS = sorted(p.name for p in FIXTURES.iterdir() if p.is_dir() and (p / "scenario.json.gz").exists())
LOGS = [(name, level) for name in SCENARIOS for level in ("rm.log", "rm-debug.log")]
# shrunk failures of the differential runs against the real RM (tests/oracle), fixed and kept:
# small logs the audit and rmref are held to, cycle by cycle (not the parser's engines or the TUI)
CORPUS = sorted(f"corpus/{p.name}" for p in (FIXTURES / "corpus").iterdir() if (p / "scenario.json.gz").exists())
CORPUS_LOGS = [(name, level) for name in CORPUS for level in ("rm.log", "rm-debug.log")]
# shrunk differential runs whose residual divergence rests on an input no log holds (the audit says so)
UNSETTLED = sorted(f"unsettled/{p.name}" for p in (FIXTURES / "unsettled").iterdir()
                   if (p / "scenario.json.gz").exists())
UNSETTLED_LOGS = [(name, level) for name in UNSETTLED for level in ("rm.log", "rm-debug.log")]


def log_path(name: str, level: str = "rm.log") -> Path:
    """The fixture's log, plain or gzipped."""
    for cand in (FIXTURES / name / level, FIXTURES / name / f"{level}.gz"):
        if cand.exists():
            return cand
    raise FileNotFoundError(f"{name}/{level}")


@lru_cache(maxsize=None)
def truth(name: str) -> list[dict]:
    """truth.jsonl: the real scheduler's state per published schedule."""
    with gzip.open(FIXTURES / name / "truth.jsonl.gz", "rt") as fh:
        return [json.loads(line) for line in fh]


@lru_cache(maxsize=None)
def scenario(name: str) -> dict:
    """scenario.json: what was run."""
    with gzip.open(FIXTURES / name / "scenario.json.gz", "rt") as fh:
        return json.load(fh)


@lru_cache(maxsize=None)
def parsed(name: str, level: str = "rm.log", engine: str = "fast"):
    """The parse of one fixture log (cached for the session)."""
    return parse([log_path(name, level)], engine=engine)


@lru_cache(maxsize=None)
def traced_audit(name: str, level: str, cycle: int):
    """The fixture log's audit, with rmref's run of `cycle` kept (`result.traces[cycle]`)."""
    from replay.apps.audit import audit

    return audit(parsed(name, level).tables, trace=(cycle,))


def truth_defrag_actions(name: str, cycle: int) -> list[tuple[int, int, str, int]]:
    """(needy job, donor job, host, share) of truth's defragmentation actions in `cycle`, in its order."""
    record = next(r for r in truth(name) if r["cycle"] == cycle)
    return [(a["needy_job"], a["donor_job"], a["host"], a["share"]) for a in record["defrag"]["actions"]]


def identity_simulation(name: str):
    """The closed-loop simulation of a fixture log with nothing changed (Simulation, not yet stepped)."""
    from replay.apps.simulate.loop import Simulation
    from replay.apps.simulate.simulation import log_context
    from replay.model.start import replay_start
    from rmref.cycle import Phases

    tables = parsed(name).tables
    start = replay_start(tables, None)
    ctx, workload = log_context(tables, start)
    return Simulation(ctx, workload, start.boot, Phases())


def audit_edited(tmp_path: Path, lines: list[str]) -> tuple[int, dict, pl.DataFrame]:
    """`rmreplay audit -o` on a fixture log whose lines a test edited: the exit code, report.json
    and divergences.parquet."""
    from replay.cli import main

    log = tmp_path / "rm.log"
    log.write_text("".join(lines))
    code = main(["audit", str(log), "-o", str(tmp_path / "out")])
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    return code, report, pl.read_parquet(tmp_path / "out" / "divergences.parquet")


def count_assembled(monkeypatch) -> list[int]:
    """The cycles assembled from now on on the start's settings and machines (`ReplayStart.inputs`,
    through replay.model.start.cycle_inputs), appended as each is assembled."""
    import replay.model.start as start_module

    assembled: list[int] = []
    cycle_inputs = start_module.cycle_inputs

    def counted(*args, **kwargs):
        for inp in cycle_inputs(*args, **kwargs):
            assembled.append(inp.cycle)
            yield inp
    monkeypatch.setattr(start_module, "cycle_inputs", counted)
    return assembled
