"""Benchmark `rmreplay whatif` on i_mega24 (2,500 cycles, 53 nodes): cycles/s of the replay.

    python bench/bench_whatif.py [--log PATH] [--runs N] [--json OUT]

The log is parsed once; then three what-ifs are timed on the parsed tables (rebuild each cycle's
inputs + rmref's chained phases + compare + tally): the identity (rmref once per cycle), a class
weight doubled and a quantum change (each runs rmref twice per cycle: the change and the unchanged
baseline that tells a change from a decision rmref does not reproduce).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_parse import bench_args, emit  # noqa: E402


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    from replay import parse
    from replay.apps.change import Change
    from replay.apps.whatif import whatif
    from replay.model.start import bootstrap

    args = bench_args(__doc__, 1)
    start = time.perf_counter()
    tables = parse([args.log]).tables
    parse_s = time.perf_counter() - start
    boot = bootstrap(tables)
    fair = next(c for c in boot.classes if c.policy == "FAIR_SHARE")
    quantum = boot.config.quantum_gb
    cases = {
        "identity": (),
        f"class.{fair.name}.weight x2": ((f"class.{fair.name}.weight", str(2 * fair.weight)),),
        f"ducc.rm.share.quantum {quantum} -> {2 * quantum}": (("ducc.rm.share.quantum", str(2 * quantum)),),
    }
    results = {"log": str(args.log), "parse_seconds": round(parse_s, 2), "whatif": {}}
    for name, sets in cases.items():
        best, report = float("inf"), None
        for _ in range(args.runs):
            t0 = time.perf_counter()
            res = whatif(tables, Change(sets))
            best = min(best, time.perf_counter() - t0)
            report = res.report()
        results["whatif"][name] = {"seconds": round(best, 2), "cycles": report["cycles"],
                                   "cycles_s": round(report["cycles"] / best, 1),
                                   "cycles_changed": report["cycles_changed"],
                                   "unreproduced": report["unreproduced"]}
        print(name, results["whatif"][name], flush=True)
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
