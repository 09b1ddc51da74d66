"""Benchmark `audit()` on parsed logs, this checkout against another commit, in turns (A B A B).

    python bench/bench_audit_vs.py --vs COMMIT [--runs N] [--json OUT] LOG[:CONFIG] ...

Each side runs in its own process (the commit exported with `git archive`, with this install's
compiled scanner, as `bench_audit.py --vs` does): every LOG is parsed (CONFIG: a --config folder
read beside it), then audited; the figures are the audit's alone, summed over the logs: CPU
seconds, wall seconds, and the audit's peak RSS above what the process held before it (the peak
is reset after the parse, /proc/self/clear_refs). A digest of every report tells whether the two
sides agree. Where the logs are many short ones (mid-stream cuts), CPU seconds are the figure.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_audit import exported  # noqa: E402 (after the path insert)
from bench_parse import ROOT, emit  # noqa: E402

CHILD = r"""
import hashlib, json, sys, time
from pathlib import Path
from replay import parse
from replay.apps.audit import audit
from replay.model.resources import read_resources

def status(key):
    return int(next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(key)).split()[1])

cpu = wall = peak = 0.0
digest = hashlib.sha256()
for spec in sys.argv[1:]:
    log, _, config = spec.partition(":")
    tables = parse([Path(log)]).tables
    if config:
        tables.update(read_resources(Path(config)))
    held = status("VmRSS")
    Path("/proc/self/clear_refs").write_text("5")  # the peak from here on: the audit's
    w, c = time.perf_counter(), time.process_time()
    result = audit(tables)
    wall += time.perf_counter() - w
    cpu += time.process_time() - c
    peak = max(peak, (status("VmHWM") - held) * 1024 / 1e6)
    digest.update(json.dumps(result.report(), sort_keys=True, default=str).encode() + repr(result.assumed).encode())
print(json.dumps({"cpu_s": cpu, "wall_s": wall, "audit_peak_mb": peak, "digest": digest.hexdigest()[:16]}))
"""


def child_figures(command: list[str], env: dict[str, str] | None = None) -> dict:
    """The figures a child process prints as its last line (JSON); its error ends the bench."""
    out = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env)
    if out.returncode:
        sys.exit(f"bench: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def vs_sides(commit: str, tmp: Path) -> dict[str, list[str]]:
    """The two interpreters of an A/B run: this tree's ("this") and one running `commit`'s tree,
    exported under `tmp` ("vs")."""
    vs = tmp / "vs"
    vs.mkdir()
    command = exported(commit, vs)  # env PYTHONPATH=... python -P -c CODE: CODE replaced by ours
    return {"this": [sys.executable], "vs": command[:-2]}


def side(python: list[str], specs: list[str]) -> dict:
    """One side's figures over every log."""
    return child_figures([*python, "-c", CHILD, *specs])


def main() -> int:
    """Run the benchmark and print (and optionally save) the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("logs", nargs="+", metavar="LOG[:CONFIG]")
    ap.add_argument("--vs", required=True, metavar="COMMIT")
    ap.add_argument("--runs", type=int, default=3, help="turns of A B (default 3)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sides = vs_sides(args.vs, Path(tmp))
        got: dict[str, list[dict]] = {name: [] for name in sides}
        for _ in range(args.runs):
            for name, python in sides.items():
                got[name].append(side(python, args.logs))
    results = {
        "logs": args.logs, "commit": args.vs,
        **{name: {"cpu_s": statistics.median(r["cpu_s"] for r in rows),
                  "wall_s": statistics.median(r["wall_s"] for r in rows),
                  "audit_peak_mb": max(r["audit_peak_mb"] for r in rows)} for name, rows in got.items()},
        "cpu_ratios": [a["cpu_s"] / b["cpu_s"] for a, b in zip(got["this"], got["vs"], strict=True)],
        "same_reports": len({r["digest"] for rows in got.values() for r in rows}) == 1,
    }
    return emit(results, args.json)


if __name__ == "__main__":
    sys.exit(main())
