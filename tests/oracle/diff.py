"""Differential test: generated scenarios through the real RM, then rmreplay's audit and truth check.

    python -m tests.oracle.diff --n 200 --seed S [--release trunk] [--jobs 2] [--out /tmp/corpus/S]
                                [--focus all] [--build DIR] [--levels info,debug] [--keep-going]

Scenario i has seed S*100000+i (tests/oracle/generate.py). `--release R` runs the real RM of that
DUCC release (rmref.releases; built first if needed by tests/oracle/builds.py into
/tmp/oracle/build-R); `--build DIR` names a build directly. Oracle outputs are cached by scenario
content and build (tests/oracle/oracle.py), so a re-run does not rerun the JVM. OUT gets
scenarios/NNN.json (input for shrink.py), summary.json (machine-readable) and report.txt (the table
printed at the end). Without --keep-going the run stops after the first failing scenario.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from multiprocessing import get_context
from pathlib import Path

from tests.oracle.check import check_run
from tests.oracle.generate import FOCI, generate, scenario_seed
from rmref.releases import LATEST, RELEASES
from tests.oracle.builds import ensure_build
from tests.oracle.oracle import DEFAULT_CACHE, build_fingerprint, run_cached

MAX_FAILURES_KEPT = 40  # per scenario and level, in summary.json


def evaluate(scenario: dict, build: Path, cache: Path, levels: tuple[str, ...]) -> dict:
    """Run one scenario through the oracle and check each level; a JSON-ready result."""
    run = run_cached(scenario, build, cache, debug="debug" in levels)
    out: dict = {"name": scenario["name"], "seed": scenario["seed"], "description": scenario["description"],
                 "max_cycles": scenario["max_cycles"], "oracle_dir": str(run.dir), "oracle_ok": run.ok,
                 "oracle_error": run.error, "oracle_seconds": run.seconds, "cached": run.cached, "levels": {}}
    if not run.ok:
        return out
    try:
        checked = check_run(run.dir, levels)
    except Exception as exc:  # noqa: BLE001 - e.g. an unreadable truth.jsonl: this scenario's failure
        out["oracle_error"] = f"cannot read the oracle's output: {type(exc).__name__}: {exc}"
        return out
    for level, res in checked.items():
        first = res.first_failure()
        entry = res.to_json()
        entry["failing_kinds"] = sorted({f"{f.kind}/{f.source}" for f in res.failures})
        entry["failures_total"] = len(res.failures)
        entry["verified_choices_total"] = sum(res.verified.values())
        entry["failures"] = entry["failures"][:MAX_FAILURES_KEPT]
        entry["first_failure"] = None if first is None else first.__dict__
        out["levels"][level] = entry
    return out


def status(result: dict) -> str:
    """ok (no divergence: the RM's free choices that the audit verified agree) / fail (divergences) /
    error (rmreplay raised) / oracle (the real RM run failed)."""
    if not result["oracle_ok"]:
        return "oracle"
    levels = result["levels"].values()
    if any(lv["error"] for lv in levels):
        return "error"
    return "fail" if any(lv["failures_total"] for lv in levels) else "ok"


def _work(args: tuple) -> tuple[int, dict]:
    index, scenario, build, cache, levels = args
    return index, evaluate(scenario, build, cache, levels)


def _pct(a: int, t: int) -> str:
    return f"{a}/{t} ({100 * a / t:.2f}%)" if t else "-"


def _totals(results: list[dict], level: str) -> dict:
    """Sums over the scenarios for one level: cycles, agreement, per-kind tallies."""
    tot: dict = {"scenarios": 0, "ok": 0, "fail": 0, "error": 0, "cycles": 0, "cycles_agree_log": 0,
                 "cycles_agree_truth": 0, "audit": {}, "truth": {}, "verified": {}}
    for r in results:
        lv = r["levels"].get(level)
        if lv is None:
            continue
        tot["scenarios"] += 1
        tot["error" if lv["error"] else "fail" if lv["failures_total"] else "ok"] += 1
        for k in ("cycles", "cycles_agree_log", "cycles_agree_truth"):
            tot[k] += lv.get(k, 0)
        for kind, n in lv.get("verified", {}).items():
            tot["verified"][kind] = tot["verified"].get(kind, 0) + n
        for side in ("audit", "truth"):
            for kind, tally in lv[side].items():
                if tally is None:  # truth cannot tell for this kind
                    tot[side].setdefault(kind, None)
                    continue
                acc = tot[side].get(kind) or [0, 0]
                tot[side][kind] = [acc[0] + tally[0], acc[1] + tally[1]]
    return tot


def table(results: list[dict], levels: tuple[str, ...]) -> str:
    """The human-readable report: totals per level and kind, then the failing scenarios."""
    lines = []
    n = len(results)
    oracle_bad = [r for r in results if not r["oracle_ok"]]
    lines.append(f"scenarios {n}: ok {sum(status(r) == 'ok' for r in results)}, "
                 f"divergent {sum(status(r) == 'fail' for r in results)}, "
                 f"rmreplay error {sum(status(r) == 'error' for r in results)}, oracle failed {len(oracle_bad)}")
    for level in levels:
        t = _totals(results, level)
        lines.append("")
        lines.append(f"{level.upper()} ({'rm.log' if level == 'info' else 'rm-debug.log'}): {t['scenarios']} scenarios "
                     f"(agree {t['ok']}, divergent {t['fail']}, rmreplay error {t['error']}), {t['cycles']} cycles")
        lines.append(f"  cycles agreeing   audit vs log {_pct(t['cycles_agree_log'], t['cycles'])}"
                     f"   rmref vs truth {_pct(t['cycles_agree_truth'], t['cycles'])}")
        lines.append(f"  {'decision':<12} {'audit: rmref vs log':>28} {'rmref vs truth.jsonl':>28} "
                     f"{'verified choices':>17}")
        for kind in sorted(set(t["audit"]) | set(t["truth"])):
            a, tr = t["audit"].get(kind), t["truth"].get(kind)
            lines.append(f"  {kind:<12} {_pct(*a) if a else 'n/a':>28} "
                         f"{_pct(*tr) if tr else 'n/a (truth has none)':>28} {t['verified'].get(kind, 0):>17}")
    bad = [r for r in results if status(r) != "ok"]
    if bad:
        lines.append("")
        lines.append("FAILING SCENARIOS (first failure per level: cycle, decision, source, job: text)")
        for r in bad:
            head = f"  {r['name']} [{status(r)}] {r['scenario_path']}"
            lines.append(head)
            if not r["oracle_ok"]:
                lines.append(f"      oracle: {r['oracle_error']}")
                continue
            for level, lv in r["levels"].items():
                if lv["error"]:
                    lines.append(f"      {level}: rmreplay raised {lv['error']}")
                elif lv["first_failure"]:
                    f = lv["first_failure"]
                    kinds = ", ".join(lv["failing_kinds"])
                    lines.append(f"      {level}: cycle {f['cycle']} {f['kind']} ({f['source']}) job {f['job']}: "
                                 f"{f['text'][:300]}  [{lv['failures_total']} failures: {kinds}]")
    return "\n".join(lines)


def _progress(done: int, total: int, counts: dict[str, int], start: float) -> None:
    elapsed = time.monotonic() - start
    eta = elapsed / done * (total - done) if done else 0
    sys.stderr.write(f"\r[{done:>4}/{total}] ok {counts['ok']} divergent {counts['fail']} "
                     f"error {counts['error']} oracle {counts['oracle']}  {elapsed:5.0f}s elapsed, ~{eta:4.0f}s left ")
    sys.stderr.flush()


def run(n: int, seed: int, focus: str, jobs: int, out: Path, build: Path, cache: Path,
        levels: tuple[str, ...], keep_going: bool, release: str = LATEST.name) -> list[dict]:
    """Generate, run and check N scenarios in parallel; write OUT/summary.json and OUT/report.txt."""
    (out / "scenarios").mkdir(parents=True, exist_ok=True)
    tasks = []
    for i in range(n):
        scen = generate(scenario_seed(seed, i), focus, release)  # valid for the release's RM
        path = out / "scenarios" / f"{i:03d}.json"
        path.write_text(json.dumps(scen, indent=1) + "\n")
        tasks.append((i, scen, build, cache, levels))
    results: dict[int, dict] = {}
    counts = {"ok": 0, "fail": 0, "error": 0, "oracle": 0}
    start = time.monotonic()
    _progress(0, n, counts, start)
    # spawn, not fork: a forked child of a process whose polars thread pool has run can deadlock
    with get_context("spawn").Pool(jobs) as pool:
        stream: Iterator = pool.imap_unordered(_work, tasks)
        for index, result in stream:
            result["scenario_path"] = str(out / "scenarios" / f"{index:03d}.json")
            result["index"] = index
            results[index] = result
            counts[status(result)] += 1
            _progress(len(results), n, counts, start)
            if not keep_going and status(result) != "ok":
                pool.terminate()  # the scenarios in flight are dropped
                break
    sys.stderr.write("\n")
    ordered = [results[i] for i in sorted(results)]
    summary = {"seed": seed, "n": n, "run": len(ordered), "focus": focus, "levels": list(levels),
               "release": release, "build": str(build), "build_fingerprint": build_fingerprint(build),
               "seconds": round(time.monotonic() - start, 1),
               "totals": {lv: _totals(ordered, lv) for lv in levels}, "scenarios": ordered}
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    report = table(ordered, levels)
    (out / "report.txt").write_text(report + "\n")
    print(report)
    return ordered


def main(argv: list[str] | None = None) -> int:
    """CLI; exit 0 when every scenario agrees, 1 otherwise."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20, help="number of scenarios")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--focus", choices=FOCI, default="all", help="weight the draw towards one family")
    ap.add_argument("--jobs", type=int, default=2, help="scenarios in parallel")
    ap.add_argument("--out", type=Path, help="default /tmp/corpus/SEED (or SEED-FOCUS)")
    ap.add_argument("--release", choices=[r.name for r in RELEASES], default=LATEST.name,
                    help="the DUCC release whose real RM writes the logs (default %(default)s)")
    ap.add_argument("--build", type=Path, help="an oracle build directory (default: the release's, built if needed)")
    ap.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    ap.add_argument("--levels", default="info,debug", help="info, debug or both")
    ap.add_argument("--keep-going", action="store_true", help="run every scenario even after a failure")
    a = ap.parse_args(argv)
    levels = tuple(lv for lv in a.levels.split(",") if lv)
    suffix = ("" if a.focus == "all" else f"-{a.focus}") + ("" if a.release == LATEST.name else f"-{a.release}")
    out = a.out or Path(f"/tmp/corpus/{a.seed}{suffix}")
    build = a.build or ensure_build(a.release)
    results = run(a.n, a.seed, a.focus, a.jobs, out, build, a.cache, levels, a.keep_going, a.release)
    print(f"\nsummary: {out / 'summary.json'}")
    return 0 if all(status(r) == "ok" for r in results) and len(results) == a.n else 1


if __name__ == "__main__":
    sys.exit(main())
