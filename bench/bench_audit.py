"""Benchmark `rmreplay audit` on i_mega24 (2,500 cycles, 53 nodes): cycles/s and peak RSS.

    python bench/bench_audit.py [--log PATH] [--runs N] [--json OUT]

Two figures: the command end to end (parse + rebuild + rmref + compare + write; its own process,
peak RSS from os.wait4; the median of `--runs` runs, default 3, the highest peak, and the peak
over the log's size once unpacked) and the replay alone (rebuild + rmref + compare on already
parsed tables, in this process), so a slower parser and a slower scheduler can be told apart.
"""

from __future__ import annotations

import gzip
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import bench_args, emit, run  # noqa: E402


def replay_only(log: Path) -> dict:
    """Seconds and cycles/s of the audit on tables parsed beforehand."""
    from replay import parse
    from replay.apps.audit import audit

    tables = parse([log]).tables
    start = time.perf_counter()
    result = audit(tables)
    wall = time.perf_counter() - start
    return {"seconds": wall, "cycles": len(result.cycles), "cycles_s": len(result.cycles) / wall,
            "audited": list(result.audited)}


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    args = bench_args(__doc__, 3)
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        # exit status 1 (divergences) is a result here, not a failure
        got = [run([rmreplay, "audit", str(args.log), "-o", str(out)], ok=(0, 1)) for _ in range(args.runs)]
        report = json.loads((out / "report.json").read_text())
        with gzip.open(args.log) if args.log.suffix == ".gz" else open(args.log, "rb") as fh:
            size = sum(len(block) for block in iter(lambda: fh.read(1 << 20), b""))
    cycles = report["cycles"]
    wall, rss = statistics.median(r.wall for r in got), max(r.rss for r in got)
    results = {
        "log": str(args.log),
        "end_to_end": {"median_seconds": wall, "seconds": min(r.wall for r in got), "runs": len(got),
                       "cpu_seconds": statistics.median(r.cpu for r in got), "cycles": cycles,
                       "cycles_s": cycles / wall, "peak_rss_mb": rss / 1e6, "rss_over_file": rss / size},
        "replay_only": replay_only(args.log),
        "agreement": {k: v for k, v in report["decisions"].items()},
        "cycles_agree": report["cycles_agree"],
    }
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
