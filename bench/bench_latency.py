"""Benchmark how fast each command answers once a log has been read and audited, against the audit.

    python bench/bench_latency.py [--log PATH]... [--runs N] [--jobs ID,...] [--json OUT]

For each log (default: i_mega24), with a cache of its own, every command runs in its own process
under `/usr/bin/time -v` (wall seconds, CPU seconds (user and system) and peak RSS as it reports
them), in one run so that the ratios compare like with like:

* `parse -o DIR` once; every command after reads DIR;
* the reference, `audit DIR --no-cache`: the audit's own time from the cache (the parse read from
  disk, rmref run on every cycle, nothing stored), as every audit took before it was stored;
* `audit DIR` the first time: the same, and the audit stored beside the parse;
* then, `--runs` times each (median wall, highest peak): a second `audit DIR`, `explain DIR --job J`
  for each job of `--jobs` (its life and last cycle) and at a random cycle of the job, `report`,
  `report --no-audit`, `whatif --set`, `simulate`, `check`, and the TUI's first screen from DIR
  (a headless Textual app: seconds from the process's start until the first cycle is on screen
  with the audit's columns filled; also its CPU seconds then, which the machine's load moves less,
  and when the whole views built after it are done; its peak RSS includes them). The first run
  draws it from the views and keeps it (tui.summary); the later ones draw it from what was kept,
  and are named apart.

Each command's wall time is given as a ratio to the reference's (its CPU seconds beside it: the
machine's load moves them less), and its peak as a ratio to the log's size unpacked; the load
average is taken as the log's part starts and as it ends. The project's sources are compiled to
bytecode first (this environment sets PYTHONDONTWRITEBYTECODE, and a user's install has the bytecode).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from bench_parse import compile_bytecode  # noqa: E402 (after the path insert)

DEFAULT_LOG = ROOT / "fixtures" / "i_mega24" / "rm.log.gz"
TUI_FIRST_SCREEN = """
import asyncio, sys, time
from pathlib import Path
from replay.cli.process import tune_allocators
tune_allocators("tui")  # as `rmreplay tui` sets them, before polars loads
from tui.app import RmReplayApp
async def main():
    app = RmReplayApp([sys.argv[1]])
    async with app.run_test(size=(160, 45)) as pilot:
        while not (app.first_audited or app.error):  # (drawn from its summary, or from the views)
            await pilot.pause(0.005)
        ready, cpu, shown = time.time(), time.process_time(), app.shown
        while not (app.ready or app.error):  # the views (from a summary: polars loads once it is drawn)
            await pilot.pause(0.005)
        if app.browse is not None:  # the whole views (built on a thread once the first screen is drawn)
            for view in (app.browse.jobs, app.browse.nodes, app.browse.defrag):
                view.frame
        Path(sys.argv[2]).write_text(repr((ready, cpu, time.time(), app.error,
                                           app.browse.audited if app.browse else None, shown)))
        await pilot.press("q")
asyncio.run(main())
"""


def timed(cmd: list[str], ok: tuple[int, ...] = (0,)) -> tuple[float, int, float]:
    """(wall seconds, peak RSS bytes, CPU seconds: user and system) of one run under /usr/bin/time -v,
    its output discarded."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-v", *cmd], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in ok:
        raise SystemExit(f"bench: {' '.join(cmd)} failed ({proc.returncode}): {proc.stderr[-2000:]}")
    kb = re.search(r"Maximum resident set size \(kbytes\): (\d+)", proc.stderr)
    assert kb is not None, proc.stderr
    cpu = sum(float(m.group(1)) for m in re.finditer(r"(?:User|System) time \(seconds\): ([\d.]+)", proc.stderr))
    return wall, int(kb.group(1)) * 1024, cpu


def tui_first_screen(parsed: Path, tmp: Path) -> tuple[float, int, float, float, str]:
    """Seconds from the TUI process's start to its first screen with the audit's columns filled;
    peak RSS (the whole views built, as a user's session has them); the process's CPU seconds at
    the first screen (the machine's load moves them less than the wall's); seconds until the whole
    views are built; what the first screen was drawn from (`summary`: the one kept, tui.summary;
    `views`: the first run, which keeps it)."""
    out = tmp / "tui-ready"
    start = time.time()
    _, rss, _ = timed([sys.executable, "-c", TUI_FIRST_SCREEN, str(parsed), str(out)])
    ready, cpu, whole, error, audited, shown = eval(out.read_text())  # noqa: S307 - our own child's repr
    if error or not audited:
        raise SystemExit(f"bench: the TUI did not open with the audit: {error}")
    return ready - start, rss, cpu, whole - start, shown


def unpacked_size(log: Path) -> int:
    """The log's size once unpacked."""
    with gzip.open(log) if log.suffix == ".gz" else open(log, "rb") as fh:
        return sum(len(block) for block in iter(lambda: fh.read(1 << 20), b""))


def job_cycles(parsed: Path, jobs: list[int], rnd: random.Random) -> list[tuple[int, int | None]]:
    """(job, cycle) pairs to explain: each job at its last cycle (None) and at a random one of its cycles."""
    code = ("import json, sys, polars as pl; s = pl.read_parquet(sys.argv[1], columns=['cycle', 'job_id'])"
            ".drop_nulls(); print(json.dumps({str(j): sorted(set(s.filter(pl.col('job_id') == j)['cycle']"
            ".to_list())) for j in json.loads(sys.argv[2])}))")
    got = json.loads(subprocess.run([sys.executable, "-c", code, str(parsed / "schedule.parquet"), json.dumps(jobs)],
                                    capture_output=True, text=True, check=True).stdout)
    pairs: list[tuple[int, int | None]] = []
    for job in jobs:
        if got[str(job)]:
            pairs += [(job, None), (job, rnd.choice(got[str(job)]))]
    return pairs


def bench_log(log: Path, runs: int, jobs: list[int], tmp: Path) -> dict:
    """Every command's figures on one log (see the module docstring)."""
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    os.environ["RMREPLAY_CACHE"] = str(tmp / "cache")
    parsed, size = tmp / "parsed", unpacked_size(log)
    got: dict[str, list[tuple[float, int, float]]] = {}
    tui: list[dict[str, float]] = []
    load_start = os.getloadavg()[0]

    def add(name: str, cmd: list[str], ok: tuple[int, ...] = (0,)) -> None:
        got.setdefault(name, []).append(timed([rmreplay, *cmd], ok))

    add("parse -o", ["parse", str(log), "-o", str(parsed)])
    for _ in range(runs):  # the reference: rmref on every cycle, nothing stored
        add("audit (reference: the parse from disk, nothing stored)", ["audit", str(parsed), "--no-cache"], (0, 1))
    add("audit, first (run and stored)", ["audit", str(parsed)], (0, 1))
    pairs = job_cycles(parsed, jobs, random.Random(7))
    for _ in range(runs):
        add("audit, second (read)", ["audit", str(parsed)], (0, 1))
        add("audit -o, second (read)", ["audit", str(parsed), "-o", str(tmp / "audit"), "--force"], (0, 1))
        for job, cycle in pairs:
            add(f"explain --job {job}" + (f" --cycle {cycle}" if cycle else ""),
                ["explain", str(parsed), "--job", str(job), *(["--cycle", str(cycle)] if cycle else [])])
        add("report", ["report", str(parsed), "-o", str(tmp / "r.html"), "--force"])
        add("report --no-audit", ["report", str(parsed), "--no-audit", "-o", str(tmp / "r.html"), "--force"])
        add("whatif --set", ["whatif", str(parsed), "--set", "class.low.weight=400", "-o", str(tmp / "w"), "--force"])
        add("simulate", ["simulate", str(parsed), "-o", str(tmp / "s"), "--force"])
        add("check", ["check", str(parsed)], (0, 1))
        wall, rss, cpu, whole, shown = tui_first_screen(parsed, tmp)
        got.setdefault(f"tui first screen, audit filled (from the {shown})", []).append((wall, rss, cpu))
        tui.append({"cpu_seconds": round(cpu, 2), "whole_views_seconds": round(whole, 2), "from": shown})
    reference = statistics.median(w for w, _, _ in got["audit (reference: the parse from disk, nothing stored)"])
    load = os.getloadavg()[0]
    return {"log": str(log), "mb": round(size / 1e6, 1), "reference_seconds": round(reference, 2),
            "load_average": [round(load_start, 1), round(load, 1)], "tui": tui, "commands": {
        name: {"seconds": round(statistics.median(w for w, _, _ in runs_), 3),
               "ratio_to_audit": round(statistics.median(w for w, _, _ in runs_) / reference, 3),
               "cpu_seconds": round(statistics.median(c for _, _, c in runs_), 2),
               "peak_rss_mb": round(max(r for _, r, _ in runs_) / 1e6, 1),
               "rss_over_log": round(max(r for _, r, _ in runs_) / size, 2), "runs": len(runs_)}
        for name, runs_ in got.items()}}


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, action="append", help="a log (repeatable; default i_mega24)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each command (median; default 3)")
    ap.add_argument("--jobs", default="16,100", help="jobs to explain (default 16,100)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    compile_bytecode()
    results = []
    for log in args.log or [DEFAULT_LOG]:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(bench_log(log, args.runs, [int(j) for j in args.jobs.split(",")], Path(tmp)))
    print(json.dumps(results, indent=2))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
