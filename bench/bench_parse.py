"""Benchmark `rmreplay parse` end to end (rm.log -> Parquet) beside lnav, on one core and on all.

    python bench/bench_parse.py [--log PATH] [--runs N] [--json OUT] [--chunk-mb 4,8,16,32]
                                [--debug-copies N] [--where]

Two logs: i_mega24 (137 MB, INFO; the fixture ships gzipped and is decompressed first) and a
DEBUG-level log, which reads differently (occupancy tables, the pretty-printed schedule, a third
of its records generic messages): no big one ships, so `--debug-copies N` (default 20, 0: skip)
writes h_mega15's genuine rm-debug.log N times over (130 MB at 20). On each, in rounds of one run
each (so a slower hour slows them alike): `lnav -n -c ';SELECT count(*) FROM all_logs'` (its
indexing; `apt-get install lnav`), `rmreplay parse -j 1` (one core) and `rmreplay parse` (every
core this process may use, its default). Each figure is the median of `--runs` rounds (default
3), with the fastest run, CPU seconds (user + system, all threads) and peak RSS (the highest;
os.wait4 of that process, never below the bench's own peak, reported as rss_floor_mb, so the
bench keeps no copy of the log). `x_lnav` is lnav's median time over rmreplay's: 1.0 is as fast.
`--chunk-mb` also times `rmreplay parse -j 1 --chunk-mb N` for each N: the speed-for-memory
trade. `--where` also says where a one-core parse's time goes (bench_where.py). The project's
bytecode is compiled first, as a user's second run finds it (`compile_bytecode`).
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


def compile_bytecode(tree: Path = ROOT) -> None:
    """Compile the tree's packages to bytecode, as a user's second run finds them: a process started
    with PYTHONDONTWRITEBYTECODE (or a read-only install) would otherwise compile every module of
    the command from source on every run, which is start-up no user pays twice."""
    packages = [str(tree / name) for name in ("replay", "rmref", "tui") if (tree / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *packages], check=True,
                   stdout=subprocess.DEVNULL)


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
        from replay.parsing.compiled import COMPILED
    except ImportError:
        return False
    return COMPILED


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def side_by_side(commands: dict[str, list[str]], runs: int) -> dict[str, dict]:
    """Each command `runs` times, in rounds (one run of each per round): median and fastest wall
    seconds, the median run's CPU seconds, and the highest peak RSS, per command."""
    got: dict[str, list[Run]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, cmd in commands.items():
            got[name].append(run(cmd))
    out = {}
    for name, results in got.items():
        by_wall = sorted(results, key=lambda r: r.wall)
        median = by_wall[len(by_wall) // 2]
        out[name] = {"median_seconds": statistics.median(r.wall for r in results), "seconds": by_wall[0].wall,
                     "cpu_seconds": median.cpu, "peak_rss": max(r.rss for r in results), "runs": len(results)}
    return out


def compare_with_lnav(log: Path, size: int, lines: int, runs: int, tmp: Path, rmreplay: str) -> dict:
    """lnav's indexing, rmreplay parse on one core and on all, side by side on one log."""
    cores = _cores()
    commands = {"rmreplay_1_core": [rmreplay, "parse", str(log), "-o", str(tmp / "one"), "-j", "1"],
                f"rmreplay_{cores}_cores": [rmreplay, "parse", str(log), "-o", str(tmp / "all"), "-j", str(cores)]}
    if shutil.which("lnav"):
        commands = {"lnav_index": ["lnav", "-n", "-c", ";SELECT count(*) FROM all_logs", str(log)], **commands}
    # warm the page cache and lark's parser cache so every tool reads from memory
    run(commands["rmreplay_1_core"])
    got = side_by_side(commands, runs)
    out: dict = {"file_mb": size / 1e6, "lines": lines}
    lnav = got.get("lnav_index", {}).get("median_seconds")
    for name, r in got.items():
        out[name] = {**{k: v for k, v in r.items() if k != "peak_rss"}, "mb_s": size / 1e6 / r["median_seconds"],
                     "lines_s": lines / r["median_seconds"], "peak_rss_mb": r["peak_rss"] / 1e6,
                     "rss_over_file": r["peak_rss"] / size}
        if lnav and name != "lnav_index":
            out[name]["x_lnav"] = lnav / r["median_seconds"]
    if not lnav:
        out["lnav_index"] = "not installed (apt-get install lnav)"
    return out


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = bench_parser(__doc__, 3)
    ap.add_argument("--chunk-mb", type=_sizes, default=[], metavar="N,N,...",
                    help="also time these chunk sizes (rmreplay parse -j 1 --chunk-mb)")
    ap.add_argument("--debug-copies", type=int, default=20, metavar="N",
                    help="also time h_mega15's rm-debug.log written N times over (0: skip)")
    ap.add_argument("--where", action="store_true", help="also say where a one-core parse's time goes")
    args = ap.parse_args()
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        log = tmp / "rm.log"
        size, lines = unpack(args.log, log)
        rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
        results: dict = {"cores": _cores(), "rss_floor_mb": own_peak_rss() / 1e6}
        results["info"] = compare_with_lnav(log, size, lines, args.runs, tmp, rmreplay)
        sweep = []
        for mb in args.chunk_mb:
            got = spread([rmreplay, "parse", str(log), "-o", str(tmp / f"out{mb}"), "-j", "1", "--chunk-mb", str(mb)],
                         args.runs)
            sweep.append({"chunk_mb": mb, "seconds": got["seconds"], "median_seconds": got["median_seconds"],
                          "cpu_seconds": got["cpu_seconds"], "mb_s": size / 1e6 / got["median_seconds"],
                          "peak_rss_mb": got["peak_rss"] / 1e6, "rss_over_file": got["peak_rss"] / size})
        if sweep:
            results["chunk_sweep"] = sweep
        # grep stops at the first match when its output is /dev/null: give it a real file
        wall, _ = best(["sh", "-c", f"grep -c . {log} > {tmp / 'grep.out'}"], args.runs)
        results["grep_count"] = {"seconds": wall, "mb_s": size / 1e6 / wall}
        if args.where:  # in its own process: importing replay here would raise the bench's RSS floor
            where = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_where.py"), str(log)],
                                   capture_output=True, text=True, check=True)
            results["where"] = json.loads(where.stdout)
        if args.debug_copies > 0:
            debug = tmp / "rm-debug.log"
            log.unlink()  # one big log on disk at a time
            dsize, dlines = unpack(DEBUG_LOG, debug, args.debug_copies)
            results["debug"] = {"log": f"{DEBUG_LOG.relative_to(ROOT)} x{args.debug_copies}",
                                **compare_with_lnav(debug, dsize, dlines, args.runs, tmp, rmreplay)}
    results["compiled_scanner"] = _compiled()  # last: importing replay would raise the floor
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
