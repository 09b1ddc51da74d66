"""Benchmark `rmreplay audit` on i_mega24 (2,500 cycles, 53 nodes): cycles/s and peak RSS.

    python bench/bench_audit.py [--log PATH] [--runs N] [--json OUT]

Two figures: the command end to end (parse + rebuild + rmref + compare + write; its own process,
peak RSS from os.wait4) and the replay alone (rebuild + rmref + compare on already parsed tables,
in this process), so a slower parser and a slower scheduler can be told apart.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import bench_args, best, emit  # noqa: E402


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
    args = bench_args(__doc__, 1)
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "audit"
        # exit status 1 (divergences) is a result here, not a failure
        wall, rss = best([rmreplay, "audit", str(args.log), "-o", str(out)], args.runs, ok=(0, 1))
        report = json.loads((out / "report.json").read_text())
    cycles = report["cycles"]
    results = {
        "log": str(args.log),
        "end_to_end": {"seconds": wall, "cycles": cycles, "cycles_s": cycles / wall, "peak_rss_mb": rss / 1e6},
        "replay_only": replay_only(args.log),
        "agreement": {k: v for k, v in report["decisions"].items()},
        "cycles_agree": report["cycles_agree"],
    }
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
