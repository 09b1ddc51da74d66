"""Benchmark the one node model (replay.model.nodes) on i_mega24: what the report and the TUI pay for it.

    python bench/bench_nodes.py [--log PATH] [--runs N] [--json OUT]

On the parsed log (not timed): the bootstrap and the per-cycle machines (`node_cycles`, from
replay.model.start.node_liveness), capacity and use per cycle, and the TUI's whole `build` (every
view, the Nodes tab's included); best of --runs, CPU seconds beside. The figures also say
whether in use stayed within capacity in every cycle, and how many machine rows there were.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_midstream import _timed  # noqa: E402 (after the path insert)
from bench_parse import bench_parser, emit  # noqa: E402


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    args = bench_parser(__doc__, 3).parse_args()
    from replay.model.nodes import capacity_and_use, node_cycles
    from replay.model.start import bootstrap
    from replay.parsing.cache import open_input
    from tui.data import build

    tables = open_input([str(args.log)]).tables
    boot, boot_s, boot_cpu = _timed(lambda: bootstrap(tables), args.runs)
    nodes, nodes_s, nodes_cpu = _timed(lambda: node_cycles(tables, boot), args.runs)
    totals, totals_s, _ = _timed(lambda: capacity_and_use(nodes), args.runs)
    _, build_s, build_cpu = _timed(lambda: build(args.log.name, tables), args.runs)
    return emit({
        "log": str(args.log), "cycles": tables["cycles"].height, "machine_rows": nodes.height,
        "bootstrap_s": round(boot_s, 3), "bootstrap_cpu_s": round(boot_cpu, 3),
        "node_cycles_s": round(nodes_s, 3), "node_cycles_cpu_s": round(nodes_cpu, 3),
        "capacity_and_use_s": round(totals_s, 4),
        "tui_build_s (bootstrap, nodes and every other view)": round(build_s, 3),
        "tui_build_cpu_s": round(build_cpu, 3),
        "in_use_within_capacity": bool((totals["in_use"] <= totals["capacity"]).all()),
    }, args.json)


if __name__ == "__main__":
    sys.exit(main())
