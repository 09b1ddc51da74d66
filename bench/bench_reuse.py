"""Benchmark one parse reused: `explain` and `report --no-audit` on a log parsed before (i_mega24, 137 MB).

    python bench/bench_reuse.py [--log PATH] [--runs N] [--json OUT] [--compare RMREPLAY]

The log is decompressed first. Two kinds of figures, each the fastest of N runs in its own process
(with a private $RMREPLAY_CACHE):

* parse work: the seconds `replay.parsing.cache.open_input` takes to hand over the tables (imports
  excluded), from the cache (each file's digest memoised), from the cache with the memo deleted (the
  log hashed again), from a `rmreplay parse -o` directory, and parsing without the cache;
* end to end: `rmreplay explain LOG --job J` (J: the job published in most cycles) and
  `rmreplay report LOG --no-audit`, given the log with --no-cache, the log again (the cache) and
  the parse directory; `rmreplay parse -o` itself beside them.

`--compare` runs another installation's `rmreplay` (an earlier release's console script) on the
same commands, in turn with this one's, so the figures are taken side by side.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import bench_parser, best, emit, unpack  # noqa: E402

OPEN = """
import sys, time
from replay.parsing.cache import open_input
start = time.perf_counter()
open_input([sys.argv[1]], use_cache=sys.argv[2] == "cache")
print(time.perf_counter() - start)
"""


def parse_work(source: str, cache: bool, runs: int, before: str | None = None) -> float:
    """Fastest seconds of open_input in a fresh process (`before`: a file to delete before each run)."""
    times = []
    for _ in range(runs):
        if before:
            Path(before).unlink(missing_ok=True)
        out = subprocess.run([sys.executable, "-c", OPEN, source, "cache" if cache else "none"],
                             check=True, capture_output=True, text=True).stdout
        times.append(float(out.strip().splitlines()[-1]))
    return round(min(times), 3)


def busiest_job(parse_dir: Path) -> int:
    """The job published in most cycles (its story is the longest to tell)."""
    import polars as pl

    sched = pl.read_parquet(parse_dir / "schedule.parquet").filter(pl.col("job_id").is_not_null())
    top = (sched.group_by("job_id").agg(pl.col("cycle").n_unique().alias("n"))
           .sort("n", "job_id", descending=[True, False]))
    return int(top["job_id"][0])


def side_by_side(other: str, ours: str, log: Path, tmp_path: Path, commands: dict[str, list[str]],
                 runs: int) -> dict:
    """Fastest seconds of `parse -o` and each command on the log, the other rmreplay's and this one's
    run in turn (this one from its cache, as a second command on the same log would be)."""
    out: dict[str, dict[str, float]] = {}
    jobs = {"parse_o": ["parse", str(log), "-o", str(tmp_path / "p")],
            **{k: [cmd[0], str(log), *cmd[1:]] for k, cmd in commands.items()}}
    for name, cmd in jobs.items():
        times: dict[str, list[float]] = {"other": [], "this": []}
        for _ in range(runs):
            times["other"].append(best([other, *cmd], 1)[0])
            times["this"].append(best([ours, *cmd], 1)[0])
        out[name] = {k: round(min(v), 3) for k, v in times.items()}
    return out


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = bench_parser(__doc__, 3)
    ap.add_argument("--compare", metavar="RMREPLAY", help="another rmreplay console script to time beside this one")
    args = ap.parse_args()
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        os.environ["RMREPLAY_CACHE"] = str(tmp_path / "cache")
        log = tmp_path / "rm.log"
        size, _lines = unpack(args.log, log)
        parsed = tmp_path / "parsed"
        parse_s, parse_rss = best([rmreplay, "parse", str(log), "-o", str(parsed)], args.runs)
        job = busiest_job(parsed)
        memo = str(tmp_path / "cache" / "digests.json")
        work = {
            "no_cache": parse_work(str(log), False, 1),
            "cache_first_run": parse_work(str(log), True, 1),  # parses and fills the cache
            "cache": parse_work(str(log), True, args.runs),
            "cache_rehashed": parse_work(str(log), True, args.runs, before=memo),
            "parse_dir": parse_work(str(parsed), True, args.runs),
        }
        commands = {"explain": ["explain", "--job", str(job)],
                    "report_no_audit": ["report", "--no-audit", "-o", str(tmp_path / "r.html")]}
        end_to_end = {}
        for name, cmd in commands.items():
            end_to_end[name] = {
                "no_cache": best([rmreplay, cmd[0], str(log), *cmd[1:], "--no-cache"], 1)[0],
                "cache": best([rmreplay, cmd[0], str(log), *cmd[1:]], args.runs)[0],
                "parse_dir": best([rmreplay, cmd[0], str(parsed), *cmd[1:]], args.runs)[0],
            }
        compared = side_by_side(args.compare, rmreplay, log, tmp_path, commands, args.runs) if args.compare else None
    results = {
        "log": str(args.log), "mb": round(size / 1e6, 1), "job": job,
        "parse_o": {"seconds": round(parse_s, 3), "peak_rss_mb": round(parse_rss / 1e6)},
        "parse_work_s": work,
        "end_to_end_s": {k: {s: round(v, 3) for s, v in d.items()} for k, d in end_to_end.items()},
        "compared": compared,
    }
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
