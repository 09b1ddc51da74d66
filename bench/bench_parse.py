"""Benchmark `rmreplay parse` end to end (rm.log -> Parquet) on i_mega24, beside lnav and grep.

    python bench/bench_parse.py [--log PATH] [--runs N] [--json OUT] [--chunk-mb 4,8,16,32]
                                [--debug-copies N]

The log is decompressed first (the fixture ships gzipped). Each tool runs as its own process;
peak RSS is that process's maximum resident set (os.wait4), the highest of the runs (never below
the bench's own peak, reported as rss_floor_mb, so the bench keeps no copy of the log); the time is
the fastest run's, with the median and the CPU seconds beside it for rmreplay (this machine is
shared, and its wall times vary by a third from hour to hour). lnav is `apt-get install lnav`.
`--chunk-mb` also times `rmreplay parse --chunk-mb N` for each N: the speed-for-memory trade.
A DEBUG-level log reads differently (occupancy tables, the pretty-printed schedule, a third of its
records generic messages), and no big one ships: `--debug-copies N` (default 20, 0: skip) also
times the parse of h_mega15's genuine rm-debug.log written N times over (130 MB at 20).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
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
DEBUG_LOG = ROOT / "fixtures" / "h_mega15" / "rm-debug.log.gz"


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


def unpack(src: Path, dest: Path, copies: int = 1) -> tuple[int, int]:
    """Copy the log to `dest` (`copies` times over), gunzipped when it is .gz, block by block:
    (bytes, lines). This process must not hold the log: see own_peak_rss."""
    opener = gzip.open if src.suffix == ".gz" else open
    size = lines = 0
    with open(dest, "wb") as out:
        for _ in range(copies):
            with opener(src, "rb") as fh:
                while block := fh.read(1 << 20):
                    out.write(block)
                    size, lines = size + len(block), lines + block.count(b"\n")
    return size, lines


def own_peak_rss() -> int:
    """This process's peak RSS in bytes: the floor of every child's figure. Linux hands a process's
    peak to the program it execs, so a child's ru_maxrss is at least the bench's own peak (the
    bench once held the decompressed log, and every figure under 311 MB read as 311)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


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


def bench_parser(doc: str, runs: int) -> argparse.ArgumentParser:
    """The options every benchmark here takes: --log, --runs, --json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--log", type=Path, default=DEFAULT_LOG)
    ap.add_argument("--runs", type=int, default=runs, help=f"best of N (default {runs})")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    return ap


def bench_args(doc: str, runs: int) -> argparse.Namespace:
    """The parsed options every benchmark here takes."""
    return bench_parser(doc, runs).parse_args()


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give chunk sizes in MB, comma-separated (4,8,16)") from None
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: chunk sizes are whole MB, at least 1")
    return sizes


def emit(results: dict, path: Path | None) -> int:
    """Print the figures (and save them when asked)."""
    print(json.dumps(results, indent=2))
    if path:
        path.write_text(json.dumps(results, indent=2) + "\n")
    return 0


def _compiled() -> bool:
    """Whether the installed rmreplay has its compiled scanner (else the figures are the polars path's)."""
    try:
        from replay.parsing.scan import COMPILED
    except ImportError:
        return False
    return COMPILED


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = bench_parser(__doc__, 3)
    ap.add_argument("--chunk-mb", type=_sizes, default=[], metavar="N,N,...",
                    help="also time these chunk sizes (rmreplay parse --chunk-mb)")
    ap.add_argument("--debug-copies", type=int, default=20, metavar="N",
                    help="also time h_mega15's rm-debug.log written N times over (0: skip)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "rm.log"
        size, lines = unpack(args.log, log)
        rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
        results = {"file_mb": size / 1e6, "lines": lines, "rss_floor_mb": own_peak_rss() / 1e6}
        # warm the page cache and lark's parser cache so every tool reads from memory
        run([rmreplay, "parse", str(log), "-o", str(Path(tmp) / "warm")])
        got = spread([rmreplay, "parse", str(log), "-o", str(Path(tmp) / "out")], args.runs)
        wall, rss = got["seconds"], got["peak_rss"]
        results["rmreplay"] = {"seconds": wall, "median_seconds": got["median_seconds"],
                               "cpu_seconds": got["cpu_seconds"], "mb_s": size / 1e6 / wall,
                               "lines_s": lines / wall, "peak_rss_mb": rss / 1e6, "rss_over_file": rss / size}
        sweep = []
        for mb in args.chunk_mb:
            got = spread([rmreplay, "parse", str(log), "-o", str(Path(tmp) / f"out{mb}"), "--chunk-mb", str(mb)],
                         args.runs)
            sweep.append({"chunk_mb": mb, "seconds": got["seconds"], "median_seconds": got["median_seconds"],
                          "cpu_seconds": got["cpu_seconds"], "mb_s": size / 1e6 / got["seconds"],
                          "peak_rss_mb": got["peak_rss"] / 1e6, "rss_over_file": got["peak_rss"] / size})
        if sweep:
            results["chunk_sweep"] = sweep
        if shutil.which("lnav"):
            wall, rss = best(["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)], args.runs)
            results["lnav_index"] = {"seconds": wall, "mb_s": size / 1e6 / wall, "peak_rss_mb": rss / 1e6}
        else:
            results["lnav_index"] = "not installed (apt-get install lnav)"
        # grep stops at the first match when its output is /dev/null: give it a real file
        wall, rss = best(["sh", "-c", f"grep -c . {log} > {Path(tmp) / 'grep.out'}"], args.runs)
        results["grep_count"] = {"seconds": wall, "mb_s": size / 1e6 / wall}
        if args.debug_copies > 0:
            debug = Path(tmp) / "rm-debug.log"
            log.unlink()  # one big log on disk at a time
            dsize, dlines = unpack(DEBUG_LOG, debug, args.debug_copies)
            got = spread([rmreplay, "parse", str(debug), "-o", str(Path(tmp) / "debug")], args.runs)
            results["rmreplay_debug"] = {
                "log": f"{DEBUG_LOG.relative_to(ROOT)} x{args.debug_copies}", "file_mb": dsize / 1e6,
                "lines": dlines, "seconds": got["seconds"], "median_seconds": got["median_seconds"],
                "cpu_seconds": got["cpu_seconds"], "mb_s": dsize / 1e6 / got["seconds"],
                "lines_s": dlines / got["seconds"], "peak_rss_mb": got["peak_rss"] / 1e6,
                "rss_over_file": got["peak_rss"] / dsize}
    results["compiled_scanner"] = _compiled()  # last: importing replay would raise the floor
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
