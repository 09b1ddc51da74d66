"""Benchmark the arrival-order search after a gap (replay.apps.verify.follow_arrival_order) on a
large log with a span removed, against the same log undamaged, in one run.

    python bench/bench_arrival_search.py [--log PATH] [--span 5000000,6000000] [--runs N] [--json OUT]

The span (byte offsets, widened to whole lines) is removed from the log: the epoch jumps, and
after the gap every node there before it is first heard from again, so the nodes whose node
hashes share a bucket of the RM's node map have their arrival order open (i_mega24: 46 of 53).
Where What Of's placements of a cycle then differ from the log's, the audit runs What Of again
under other orders of them (at most ARRIVAL_ORDERS - 1 a cycle). Three audits of parsed tables
are timed (best of --runs, wall and CPU seconds; the CPU seconds are the figure on a shared
machine): the log undamaged, the damaged copy with the search, and the same copy with it off
(ARRIVAL_ORDERS = 1: no other order is tried). Beside them: the cycles the search ran in (their
placements differ from the log's), the What Of runs it made, the cycles an order was found for,
and each audit's cycles agreeing and RM divergences. A fourth audit forces the worst case in every
K-th cycle (--force-every): the search tries every order and finds none; the CPU seconds it adds,
per such cycle, are one full search's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _damaged(log: Path, start: int, stop: int, out: Path) -> Path:
    """The log with the lines from the one holding byte `start` to the one holding `stop` removed."""
    data = log.read_bytes()
    data = gzip.decompress(data) if log.suffix == ".gz" else data
    first = data.rindex(b"\n", 0, start) + 1
    last = data.index(b"\n", stop) + 1
    out.write_bytes(data[:first] + data[last:])
    return out


_NEVER = {-1: "a placement no order gives"}  # forced: the log's placements read as this, which no order matches


@contextmanager
def _counted(limit: int | None, force_every: int = 0) -> Iterator[dict[str, int]]:
    """Count the search's cycles (those whose placements differ from the log's), What Of runs and
    orders found; `limit` replaces ARRIVAL_ORDERS; `force_every` K > 0: in every K-th cycle the
    log's placements read as ones no order gives, so the search tries every order (its worst case)
    and finds none, and the audit goes on as it would have."""
    from replay.apps import verify
    from replay.apps.audit import cycle

    seen = {"cycles searched": 0, "What Of runs": 0, "orders found": 0}
    inside = [False]
    own_follow, own_what_of, own_limit = cycle.follow_arrival_order, verify.what_of, verify.ARRIVAL_ORDERS

    def follow(inp: Any, counts: Any, logged: Any, placements: Any, *args: Any, **kw: Any) -> Any:
        forced = force_every and inp.cycle % force_every == 0
        ours = verify._per_job(placements)
        if forced or any(logged.get(j) != ours.get(j) for j in {*logged, *ours}):
            seen["cycles searched"] += 1
        inside[0] = True
        try:
            got = own_follow(inp, counts, _NEVER if forced else logged, placements, *args, **kw)
        finally:
            inside[0] = False
        if forced:
            return own_follow(inp, counts, logged, placements, *args, **kw)
        seen["orders found"] += got is not None
        return got

    def what_of(*args: Any, **kw: Any) -> Any:
        seen["What Of runs"] += inside[0]
        return own_what_of(*args, **kw)

    cycle.follow_arrival_order, verify.what_of = follow, what_of
    if limit is not None:
        verify.ARRIVAL_ORDERS = limit
    try:
        yield seen
    finally:
        cycle.follow_arrival_order, verify.what_of, verify.ARRIVAL_ORDERS = own_follow, own_what_of, own_limit


def _timed(fn: Callable[[], Any], runs: int) -> tuple[Any, float, float]:
    """(result, fastest wall seconds, that run's CPU seconds) of fn() over `runs` runs."""
    best: tuple[Any, float, float] | None = None
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        got = fn()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        if best is None or wall < best[1]:
            best = (got, wall, cpu)
    assert best is not None
    return best


def _audit(tables: dict[str, Any], runs: int, limit: int | None, force_every: int = 0) -> dict[str, Any]:
    from replay.apps.audit import audit

    with _counted(limit, force_every) as seen:
        result, wall, cpu = _timed(lambda: audit(tables), runs)
        searched = dict(seen)
    report = result.report()
    per_run = {k: v // runs for k, v in searched.items()}
    return {"audit_s": round(wall, 2), "audit_cpu_s": round(cpu, 2), "cycles": report["cycles"],
            "cycles_audited": report["cycles_audited"], "cycles_agree": report["cycles_agree"],
            "rm_divergences": len(result.divergences), "arrival_open": len(result.arrival_open), **per_run}


def main() -> None:
    """Print (and optionally write) the three audits' figures."""
    from replay import parse
    from replay.apps.verify import ARRIVAL_ORDERS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", type=Path, default=ROOT / "fixtures" / "i_mega24" / "rm.log.gz")
    ap.add_argument("--span", default="5000000,6000000", help="byte offsets of the span removed")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--force-every", type=int, default=100,
                    help="also audit the damaged copy with a full search forced in every K-th cycle (0: not)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    start, stop = map(int, args.span.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        copy = _damaged(args.log, start, stop, Path(tmp) / "rm.log")
        out: dict[str, Any] = {
            "log": str(args.log.relative_to(ROOT) if args.log.is_relative_to(ROOT) else args.log),
            "span": [start, stop], "arrival_orders": ARRIVAL_ORDERS,
            "undamaged": _audit(parse([args.log]).tables, args.runs, None)}  # (one log's tables at a time)
        damaged = parse([copy]).tables
        out["damaged, search"] = _audit(damaged, args.runs, None)
        out["damaged, no search"] = _audit(damaged, args.runs, 1)
        if args.force_every:
            out[f"damaged, full search forced every {args.force_every}th cycle"] = forced = _audit(
                damaged, args.runs, None, args.force_every)
            extra = forced["audit_cpu_s"] - out["damaged, search"]["audit_cpu_s"]
            out["CPU s of one full search (forced)"] = round(extra / max(forced["cycles searched"], 1), 3)
            out["CPU s of one cycle's audit (undamaged)"] = round(
                out["undamaged"]["audit_cpu_s"] / out["undamaged"]["cycles_audited"], 4)
    for what, a, b in (("undamaged", "damaged, search", "undamaged"), ("no search", "damaged, search",
                                                                      "damaged, no search")):
        out[f"search / {what} (CPU)"] = round(out[a]["audit_cpu_s"] / out[b]["audit_cpu_s"], 3)
    text = json.dumps(out, indent=1)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
