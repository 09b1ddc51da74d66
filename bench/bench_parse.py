"""Benchmark `rmreplay parse` end to end (rm.log -> Parquet) on i_mega24, beside lnav and grep.

    python bench/bench_parse.py [--log PATH] [--runs N] [--json OUT]

The log is decompressed first (the fixture ships gzipped). Each tool runs as its own process;
peak RSS is that process's maximum resident set (os.wait4), the highest of the runs; the time is
the fastest run's, with the median and the CPU seconds beside it for rmreplay (this machine is
shared, and its wall times vary by a third from hour to hour). lnav is `apt-get install lnav`.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_LOG = ROOT / "fixtures" / "i_mega24" / "rm.log.gz"


@dataclass(frozen=True)
class Run:
    """One run of a command: wall seconds, CPU seconds (user + system, all threads), peak RSS bytes."""

    wall: float
    cpu: float
    rss: int


def run(cmd: list[str], ok: tuple[int, ...] = (0,)) -> Run:
    """One run of a command, its output discarded; `ok` lists accepted exit statuses."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) not in ok:
        raise SystemExit(f"bench: {' '.join(cmd)} failed with status {os.waitstatus_to_exitcode(status)}")
    return Run(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss * 1024)


def best(cmd: list[str], runs: int, ok: tuple[int, ...] = (0,)) -> tuple[float, int]:
    """(fastest wall seconds, highest peak RSS) of `runs` runs: memory is not chosen by luck."""
    got = [run(cmd, ok) for _ in range(runs)]
    return min(r.wall for r in got), max(r.rss for r in got)


def spread(cmd: list[str], runs: int) -> dict:
    """Fastest and median wall seconds, the fastest run's CPU seconds, and the highest peak RSS of
    `runs` runs (on a shared machine the wall time varies; CPU seconds vary less)."""
    got = sorted((run(cmd) for _ in range(runs)), key=lambda r: r.wall)
    return {"seconds": got[0].wall, "median_seconds": statistics.median(r.wall for r in got),
            "cpu_seconds": got[0].cpu, "peak_rss": max(r.rss for r in got)}


def bench_args(doc: str, runs: int) -> argparse.Namespace:
    """The options every benchmark here takes: --log, --runs, --json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--runs", type=int, default=runs, help=f"best of N (default {runs})")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    return ap.parse_args()


def emit(results: dict, path: Path | None) -> int:
    """Print the figures (and save them when asked)."""
    print(json.dumps(results, indent=2))
    if path:
        path.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _compiled() -> bool:
    """Whether the installed rmreplay has its compiled scanner (else the figures are the polars path's)."""
    try:
        from replay.scan import COMPILED
    except ImportError:
        return False
    return COMPILED


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    args = bench_args(__doc__, 3)
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "rm.log"
        data = gzip.decompress(args.log.read_bytes()) if args.log.suffix == ".gz" else args.log.read_bytes()
        log.write_bytes(data)
        size, lines = len(data), data.count(b"\n")
        rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
        results = {"file_mb": size / 1e6, "lines": lines, "compiled_scanner": _compiled()}
        # warm the page cache and lark's parser cache so every tool reads from memory
        run([rmreplay, "parse", str(log), "-o", str(Path(tmp) / "warm")])
        got = spread([rmreplay, "parse", str(log), "-o", str(Path(tmp) / "out")], args.runs)
        wall, rss = got["seconds"], got["peak_rss"]
        results["rmreplay"] = {"seconds": wall, "median_seconds": got["median_seconds"],
                               "cpu_seconds": got["cpu_seconds"], "mb_s": size / 1e6 / wall,
                               "lines_s": lines / wall, "peak_rss_mb": rss / 1e6, "rss_over_file": rss / size}
        if shutil.which("lnav"):
            wall, rss = best(["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)], args.runs)
            results["lnav_index"] = {"seconds": wall, "mb_s": size / 1e6 / wall, "peak_rss_mb": rss / 1e6}
        else:
            results["lnav_index"] = "not installed (apt-get install lnav)"
        # grep stops at the first match when its output is /dev/null: give it a real file
        wall, rss = best(["sh", "-c", f"grep -c . {log} > {Path(tmp) / 'grep.out'}"], args.runs)
        results["grep_count"] = {"seconds": wall, "mb_s": size / 1e6 / wall}
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
