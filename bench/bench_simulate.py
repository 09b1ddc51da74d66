"""Benchmark `rmreplay simulate` on i_mega24 (2,500 cycles, 53 nodes): simulated cycles per second.

    python bench/bench_simulate.py [--log PATH] [--runs N] [--json OUT]

The log is parsed once. Timed on the parsed tables, each the fastest of N runs (wall and CPU):
the workload's reconstruction from the log (with the item-time fit), one closed-loop simulation
of the unchanged workload (the Orchestrator model, the RM's bookkeeping and rmref's chained phases,
cycle by cycle), the whole `simulate` with a class weight changed (reconstruction, baseline and
changed runs, the three histories measured), and, beside them, the open-loop what-if identity
replay of the same cycles (bench_whatif.py's first figure) for comparison.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from bench_parse import bench_args, emit  # noqa: E402 (after the path insert)


def _best(runs: int, fn) -> tuple[float, float, object]:
    """(fastest wall seconds, its CPU seconds, the last result) of `runs` calls."""
    best, cpu, result = float("inf"), 0.0, None
    for _ in range(runs):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        wall = time.perf_counter() - w0
        if wall < best:
            best, cpu = wall, time.process_time() - c0
    return best, cpu, result


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    from replay import parse
    from replay.apps.simulate.loop import simulate_run
    from replay.apps.simulate.metrics import measure
    from replay.apps.simulate.reconstruct import workload_from_log
    from replay.apps.simulate.simulation import context_from_log, simulate
    from replay.apps.change import Change
    from replay.apps.whatif import whatif
    from replay.model.start import bootstrap

    args = bench_args(__doc__, 1)
    start = time.perf_counter()
    tables = parse([args.log]).tables
    results: dict = {"log": str(args.log), "parse_seconds": round(time.perf_counter() - start, 2)}
    boot = bootstrap(tables)
    cycles = tables["cycles"].height
    low = next((c for c in boot.classes if c.name == "low"), next(c for c in boot.classes if c.policy == "FAIR_SHARE"))
    sets = ((f"class.{low.name}.weight", str(8 * low.weight)),)

    def figures(name: str, wall: float, cpu: float, simulated: int) -> None:
        results[name] = {"seconds": round(wall, 2), "cpu_seconds": round(cpu, 2), "simulated_cycles": simulated,
                         "cycles_s": round(simulated / wall, 1), "cycles_cpu_s": round(simulated / cpu, 1)}
        print(name, results[name], flush=True)

    wall, cpu, workload = _best(args.runs, lambda: workload_from_log(tables, boot))
    figures("reconstruct the workload", wall, cpu, 0)
    ctx = context_from_log(tables, boot)
    wall, cpu, _ = _best(args.runs, lambda: simulate_run(ctx, workload, boot))
    figures("one simulation (identity)", wall, cpu, cycles)
    wall, cpu, _ = _best(args.runs, lambda: measure(tables, simulate(tables, Change(sets), boot=boot)))
    figures(f"simulate {sets[0][0]}={sets[0][1]} (baseline + change, measured)", wall, cpu, 2 * cycles)
    wall, cpu, _ = _best(args.runs, lambda: whatif(tables, Change(), boot=boot))
    figures("whatif identity (open loop, for comparison)", wall, cpu, cycles)
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
