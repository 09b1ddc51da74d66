"""Benchmark `rmreplay audit` on i_mega24 (2,500 cycles, 53 nodes): cycles/s and peak RSS.

    python bench/bench_audit.py [--log PATH] [--runs N] [--json OUT] [--vs COMMIT]

Two figures: the command end to end (its own process, peak RSS from os.wait4) and the replay
alone (rebuild + rmref + compare on already parsed tables, in this process), so a slower parser
and a slower scheduler can be told apart. The command runs with a cache of its own: its first
run parses the log and caches the parse (`first_run`), the `--runs` runs after it (default 3)
read the cache, as every audit of a log after its first does; of those, the median seconds,
the highest peak, and the peak over the log's size once unpacked.

`--vs COMMIT` also times that commit's `rmreplay audit` (exported with `git archive`, with this
install's compiled scanner) beside this one, in turns (A B A B ...: a slower minute slows both), and
gives each run's ratio; the two must agree on every cycle.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_parse import ROOT, bench_parser, compile_bytecode, emit, own_peak_rss, run  # noqa: E402


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


def exported(commit: str, into: Path) -> list[str]:
    """The command line of `commit`'s rmreplay: its tree exported to `into`, with this install's
    compiled scanner (refused when the commit's scanner sources differ from this checkout's)."""
    # found, not imported: importing replay would load polars into this process, whose peak is
    # the floor of every child's figure (bench_parse.own_peak_rss)
    spec = importlib.util.find_spec("replay")
    assert spec is not None and spec.origin is not None
    scanner = next((Path(spec.origin).parent / "parsing").glob("_scan*.so"))
    if subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", commit, "--", "replay/parsing/csrc"]).returncode:
        sys.exit(f"bench: {commit}'s scanner differs from this checkout's: compare it from its own install")
    subprocess.run(f"git -C {ROOT} archive {commit} | tar -x -C {into}", shell=True, check=True)
    shutil.copy(scanner, into / "replay" / "parsing")
    compile_bytecode(into)
    # -P: the export, not this checkout, on the path (PYTHONPATH comes before the installed one)
    return ["env", f"PYTHONPATH={into}", sys.executable, "-P", "-c",
            "import sys; from replay.cli import main; sys.argv[0] = 'rmreplay'; sys.exit(main())"]


def figures(got: list, cycles: int, size: int) -> dict:
    """Median seconds, cycles/s and the highest peak of a command's runs."""
    wall, rss = statistics.median(r.wall for r in got), max(r.rss for r in got)
    return {"median_seconds": wall, "seconds": min(r.wall for r in got), "runs": len(got),
            "cpu_seconds": statistics.median(r.cpu for r in got), "cycles": cycles, "cycles_s": cycles / wall,
            "peak_rss_mb": rss / 1e6, "rss_over_file": rss / size}


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    parser = bench_parser(__doc__, 3)
    parser.add_argument("--vs", metavar="COMMIT", help="also time this commit's rmreplay audit, in turns")
    args = parser.parse_args()
    rmreplay = shutil.which("rmreplay") or sys.exit("bench: rmreplay is not installed (pip install -e .)")
    compile_bytecode()
    with gzip.open(args.log) if args.log.suffix == ".gz" else open(args.log, "rb") as fh:
        size = sum(len(block) for block in iter(lambda: fh.read(1 << 20), b""))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["RMREPLAY_CACHE"] = str(Path(tmp) / "cache")  # each command's own parse, cached once
        commands = {"this": [rmreplay]}
        if args.vs:
            (Path(tmp) / "vs").mkdir()
            commands["vs"] = exported(args.vs, Path(tmp) / "vs")
        reports, first, got = {}, {}, {name: [] for name in commands}

        def audit(name: str) -> object:
            out = Path(tmp) / f"audit-{name}"
            # exit status 1 (divergences) is a result here, not a failure
            ran = run([*commands[name], "audit", str(args.log), "-o", str(out), "--force"], ok=(0, 1))
            reports[name] = json.loads((out / "report.json").read_text())
            return ran

        for name in commands:
            first[name] = audit(name)
        for _ in range(args.runs):
            for name in commands:
                got[name].append(audit(name))
    cycles = reports["this"]["cycles"]
    results = {
        "log": str(args.log),
        "rss_floor_mb": own_peak_rss() / 1e6,  # no child's peak reads below it
        "end_to_end": figures(got["this"], cycles, size),
        "first_run": {"seconds": first["this"].wall, "peak_rss_mb": first["this"].rss / 1e6,
                      "rss_over_file": first["this"].rss / size},
        "replay_only": replay_only(args.log),
        "agreement": {k: v for k, v in reports["this"]["decisions"].items()},
        "cycles_agree": reports["this"]["cycles_agree"],
    }
    if args.vs:
        results["vs"] = {"commit": args.vs, "end_to_end": figures(got["vs"], cycles, size),
                         "first_run": {"seconds": first["vs"].wall, "peak_rss_mb": first["vs"].rss / 1e6},
                         "ratios": [a.wall / b.wall for a, b in zip(got["this"], got["vs"])],
                         "same_report": reports["vs"] == reports["this"]}
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
