"""Benchmark `rmreplay audit` on i_mega24 cut mid-stream, with a --config folder of ducc.classes only.

    python bench/bench_midstream.py [--log PATH] [--runs N] [--json OUT] [--cut 0.4,0.95]

Each cut keeps the log from that fraction of its lines on (the bootstrap, every node's arrival
and the jobs' submissions roll away). On the parsed cut: the settings (bootstrap), the machine
inventory (stated by the log, or solved for from the counters) and the audit are timed
(best of --runs, CPU seconds beside), and the cycles agreeing are counted; every inventory node's
order is compared with truth.jsonl.
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import bench_parser, emit  # noqa: E402 (after the path insert)


def _cut(log: Path, fraction: float, out: Path) -> Path:
    opener = gzip.open if log.suffix == ".gz" else open
    with opener(log, "rt") as fh:
        lines = fh.readlines()
    out.write_text("".join(lines[int(len(lines) * fraction):]))
    return out


def _timed(fn, runs: int):
    """(result, fastest wall seconds, that run's CPU seconds) of fn() over `runs` runs."""
    best = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        result = fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if best is None or wall < best[1]:
            best = (result, wall, cpu)
    return best


def one_cut(log: Path, fraction: float, runs: int, tmp: Path) -> dict:
    """The figures of one cut."""
    from replay import parse
    from replay.apps.audit import audit
    from replay.model.resources import read_resources
    from replay.model.start import bootstrap, machine_inventory

    config = tmp / "config"
    config.mkdir(exist_ok=True)
    (config / "ducc.classes").write_text((log.parent / "resources" / "ducc.classes").read_text())
    path = _cut(log, fraction, tmp / f"cut-{fraction}.log")
    tables, parse_s, _ = _timed(lambda: parse([path]).tables, 1)
    tables.update(read_resources(config))
    boot, boot_s, boot_cpu = _timed(lambda: bootstrap(tables), runs)
    inventory, inv_s, inv_cpu = _timed(lambda: machine_inventory(tables, boot), runs)
    result, audit_s, audit_cpu = _timed(lambda: audit(tables), runs)
    report = result.report()
    truth_path = log.parent / "truth.jsonl.gz"
    orders = {}
    if truth_path.exists():
        with gzip.open(truth_path, "rt") as fh:
            orders = {n["name"]: n["order"] for line in fh for n in json.loads(line)["nodes"]}
    inferred = [h for h in inventory.hosts if h.source == "inferred"]
    return {
        "cut_at": fraction, "mb": round(path.stat().st_size / 1e6, 1), "cycles": report["cycles"],
        "cycles_agree": report["cycles_agree"], "parse_s": round(parse_s, 2),
        "settings_s": round(boot_s, 2), "settings_cpu_s": round(boot_cpu, 2),
        "inventory_s": round(inv_s, 2), "inventory_cpu_s": round(inv_cpu, 2),
        "audit_s (settings, inventory, replay)": round(audit_s, 2), "audit_cpu_s": round(audit_cpu, 2),
        "nodes": len(inventory.hosts), "nodes_inferred": len(inferred),
        "nodes_wrong": sorted(h.name for h in inventory.hosts if orders and h.order != orders.get(h.name)),
        "unsettled_cycles": len(inventory.unsettled),
        "inferred": {a.setting: f"{a.value} ({a.source})" for a in result.assumed
                     if a.source != "config" and not a.setting.startswith("node ")},
    }


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    parser = bench_parser(__doc__, 1)
    parser.add_argument("--cut", default="0.4,0.95", help="fractions of the lines to cut away (default 0.4,0.95)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        cuts = [one_cut(args.log, float(f), args.runs, Path(tmp)) for f in args.cut.split(",")]
    return emit({"log": str(args.log), "cuts": cuts}, args.json)


if __name__ == "__main__":
    sys.exit(main())
