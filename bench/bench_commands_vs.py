"""Benchmark `explain`, `whatif` and `simulate` on parsed logs, this checkout against another commit, in turns.

    python bench/bench_commands_vs.py --vs COMMIT [--runs N] [--open-threshold] [--json OUT] DIR[:CONFIG] ...

Each side runs in its own process (the commit exported with `git archive`, with this install's
compiled scanner, as `bench_audit_vs.py` does), turn by turn (this, vs; then vs, this). In it, for
every DIR (a `rmreplay parse -o` directory; CONFIG: a --config folder), each command runs in turn
through rmreplay's own entry point, on a cache of its own emptied before the log's first command:
`whatif --no-cache`, `explain --no-cache` (the job with the most published rows, at the middle of
its cycles), `simulate --no-cache`, a first `whatif` (which runs the audit and stores it), a second
one (from the stored audit), and `explain` from the stored audit; the what-ifs and simulations
double the weight of the first fair-share class (bench/command_choice.py). The figures are summed over the logs per
command: CPU seconds (the load moves them less than wall time) and the highest peak RSS above what
the process held before the command (/proc/self/clear_refs). `--open-threshold` leaves the
fragmentation threshold open on every log (0 to 16 tried; a patched `read_bootstrap`), as on an
INFO log without ducc.properties, whose threshold is inferred.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit_vs import child_figures, vs_sides  # noqa: E402
from bench_parse import emit  # noqa: E402

CHILD = r"""
import contextlib, io, json, os, shutil, sys, time
from dataclasses import replace
from pathlib import Path
import replay.model.start as start
if os.environ.get("BENCH_OPEN_THRESHOLD"):
    read = start.read_bootstrap
    def opened(tables):
        boot = read(tables)
        t = boot.config.fragmentation_threshold
        return replace(boot, thresholds_open=tuple(x for x in range(17) if x != t))
    start.read_bootstrap = opened
from replay.cli import main
from replay.model.resources import read_resources
from replay.parsing.store import ParquetTables, all_columns
import replay.apps.whatif, replay.apps.simulate.simulation, replay.apps.simulate.metrics  # loaded before the clock
import replay.apps.explain.scope, replay.apps.stored  # noqa
sys.path.insert(0, "bench")  # (run from this checkout's root, either side)
from command_choice import choose

def status(key):
    return int(next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(key)).split()[1])

work = Path(sys.argv[1])
figures = {}
for spec in sys.argv[2:]:
    log, _, config = spec.partition(":")
    tables = ParquetTables(Path(log), all_columns())
    if config:
        tables.update(read_resources(Path(config)))
    chosen = choose(tables)
    change = list(chosen.change)
    given = ["--config", config] if config else []
    explain = ["explain", log, *given, "--job", str(chosen.job), "--cycle", str(chosen.cycle)]
    whatif = ["whatif", log, *given, *change, "-o", str(work / "whatif"), "--force"]
    runs = [("whatif --no-cache", [*whatif, "--no-cache"]), ("explain --no-cache", [*explain, "--no-cache"]),
            ("simulate --no-cache", ["simulate", log, *given, *change, "-o", str(work / "sim"), "--force",
                                     "--no-cache"]),
            ("whatif, first", whatif), ("whatif, stored", whatif), ("explain, stored", explain)]
    os.environ["RMREPLAY_CACHE"] = str(work / "cache")
    shutil.rmtree(work / "cache", ignore_errors=True)
    for name, argv in runs:
        held = status("VmRSS")
        Path("/proc/self/clear_refs").write_text("5")
        cpu = time.process_time()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = main(argv)
        if code:
            sys.exit(f"{name} on {spec}: exit status {code}")
        got = figures.setdefault(name, {"cpu_s": 0.0, "peak_mb": 0.0})
        got["cpu_s"] += time.process_time() - cpu
        got["peak_mb"] = max(got["peak_mb"], (status("VmHWM") - held) * 1024 / 1e6)
print(json.dumps(figures))
"""


def side(python: list[str], work: Path, specs: list[str], open_threshold: bool) -> dict:
    """One side's figures over every log."""
    env = {**os.environ, **({"BENCH_OPEN_THRESHOLD": "1"} if open_threshold else {})}
    return child_figures(["nice", "-n", "10", *python, "-c", CHILD, str(work), *specs], env)


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", metavar="DIR[:CONFIG]")
    ap.add_argument("--vs", required=True, metavar="COMMIT")
    ap.add_argument("--runs", type=int, default=2, help="turns (default 2)")
    ap.add_argument("--open-threshold", action="store_true", help="leave the fragmentation threshold open")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    loads = []
    with tempfile.TemporaryDirectory() as tmp:
        sides = vs_sides(args.vs, Path(tmp))
        got: dict[str, list[dict]] = {name: [] for name in sides}
        for turn in range(args.runs):
            for name in (list(sides) if turn % 2 == 0 else list(reversed(sides))):
                loads.append(os.getloadavg()[0])
                work = Path(tmp) / f"work-{name}"
                work.mkdir(exist_ok=True)
                got[name].append(side(sides[name], work, args.logs, args.open_threshold))
    commands = list(got["this"][0])
    results = {
        "logs": args.logs, "commit": args.vs, "open_threshold": args.open_threshold,
        "load_average": [min(loads), max(loads)],
        "commands": {c: {"cpu_s": {n: statistics.median(r[c]["cpu_s"] for r in rows) for n, rows in got.items()},
                         "peak_mb": {n: max(r[c]["peak_mb"] for r in rows) for n, rows in got.items()},
                         "cpu_ratios": [a[c]["cpu_s"] / b[c]["cpu_s"] for a, b in zip(got["this"], got["vs"])]}
                     for c in commands},
    }
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
