"""Benchmark `rmreplay fleet` on this machine: MB/s and streams/s with 1, 2, ... Dask workers.

    python bench/bench_fleet.py [--clusters N] [--workers 1,2] [--runs N] [--audit] [--big] [--json OUT]

The fleet: N clusters (default 4), each a folder holding every bundled scenario's INFO and
DEBUG log (16 streams, 43 MB once unpacked), so streams are many and alike; `--big` adds
i_mega24 (137 MB) as one more cluster, the case where one long stream bounds the run. For each
worker count a fresh dataset is built by a LocalCluster of that many single-threaded worker
processes, `--runs` times (default 1; the median is reported): the whole command's wall time
(cluster start-up included) and the build's own (tasks submitted to the last result). MB are
the logs' bytes once unpacked (10^6).
"""

from __future__ import annotations

import os
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
from bench_parse import bench_parser, emit  # noqa: E402

FIXTURES = ROOT / "fixtures"
LINE = re.compile(r"([\d,.]+) MB in ([\d.]+) s")


def build_sources(root: Path, clusters: int, big: bool) -> list[str]:
    """SOURCES arguments: `clusters` folders of every scenario's logs (symlinks), and i_mega24."""
    scenarios = sorted(p.name for p in FIXTURES.iterdir() if (p / "scenario.json.gz").exists())
    out = []
    for c in range(clusters):
        for name in scenarios:
            for log in (FIXTURES / name).glob("rm*.log*"):
                (root / f"c{c}" / name).mkdir(parents=True, exist_ok=True)
                os.symlink(log, root / f"c{c}" / name / log.name)
        out.append(str(root / f"c{c}"))
    if big:
        (root / "big").mkdir()
        os.symlink(FIXTURES / "i_mega24" / "rm.log.gz", root / "big" / "rm.log.gz")
        out.append(str(root / "big"))
    return out


def one_build(sources: list[str], workers: int, audit: bool, tmp: Path) -> dict:
    """One fresh build with `workers` workers: wall seconds (command; build only), MB, streams."""
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    out = tmp / f"dataset-{workers}"
    shutil.rmtree(out, ignore_errors=True)
    cmd = [rmreplay, "fleet", *sources, "-o", str(out), "--workers", str(workers), *(["--audit"] if audit else [])]
    start = time.perf_counter()
    got = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    wall = time.perf_counter() - start
    if got.returncode != 0:
        sys.exit(f"bench: {' '.join(cmd)} failed ({got.returncode}): {got.stderr or got.stdout}")
    mb, build = LINE.search(got.stdout.replace("\n", " ")).groups()
    import polars as pl

    streams = pl.read_parquet(out / "manifest.parquet").height
    return {"wall_s": wall, "build_s": float(build), "mb": float(mb.replace(",", "")), "streams": streams}


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = bench_parser(__doc__, 1)
    ap.add_argument("--clusters", type=int, default=4)
    ap.add_argument("--workers", default="1,2", help="worker counts, comma-separated (default 1,2)")
    ap.add_argument("--audit", action="store_true", help="also audit every stream")
    ap.add_argument("--big", action="store_true", help="add i_mega24 (137 MB) as one more cluster")
    args = ap.parse_args()
    counts = [int(x) for x in args.workers.split(",") if x.strip()]
    results: dict = {"clusters": args.clusters, "big": args.big, "audit": args.audit, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        sources = build_sources(tmp / "sources", args.clusters, args.big)
        for _ in range(args.runs):  # rounds: every worker count once per round
            for n in counts:
                results.setdefault(str(n), []).append(one_build(sources, n, args.audit, tmp))
    for n in counts:
        runs = results[str(n)]
        wall = statistics.median(r["wall_s"] for r in runs)
        build = statistics.median(r["build_s"] for r in runs)
        mb, streams = runs[0]["mb"], runs[0]["streams"]
        results[str(n)] = {"runs": runs, "wall_s": wall, "build_s": build, "mb": mb, "streams": streams,
                           "mb_s": mb / build, "streams_s": streams / build, "mb_s_with_startup": mb / wall}
    if "1" in results and len(counts) > 1:
        results["speedup"] = {str(n): results["1"]["build_s"] / results[str(n)]["build_s"] for n in counts}
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
