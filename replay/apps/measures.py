"""What a schedule amounts to, cycle by cycle: the shares each job holds, the shares taken, Jain's fairness.

Read by the what-if (every side: logged, rmref unchanged, with the change), the simulation's
metrics and the report.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.logged import Logged
from replay.model.orders import with_quanta
from replay.model.reads import narrow
from rmref.constants import PURGES
from rmref.cycle import CycleResult
from rmref.model import CycleInput


def holdings(inp: CycleInput, result: CycleResult) -> dict[int, int]:
    """Quantum shares each job holds once the cycle's decisions are carried out (pending removals gone)."""
    held = {(w.job_id, s.host, s.share_id): s.order for w in inp.work for s in w.shares if not s.pending_removal}
    per: dict[int, int] = {}
    for (job, _h, _s), order in held.items():
        per[job] = per.get(job, 0) + order
    d = result.decisions
    for p in d.placements:
        per[p.job_id] = per.get(p.job_id, 0) + p.order
    gone = set()
    for e in d.evictions:
        if e.reason in PURGES:
            gone |= {k for k in held if k[0] == e.job_id and k[1] == e.host}
        else:
            gone.add((e.job_id, e.host, e.share_id))
    for a in d.defrag:
        if a.action == "evict":
            gone.add((a.donor_job, a.host, a.share_id))
        elif a.action in ("cancel_pending", "reassign_pending"):  # a share What Of had just placed
            per[a.donor_job] = per.get(a.donor_job, 0) - a.order
            if a.action == "reassign_pending":
                per[a.needy_job] = per.get(a.needy_job, 0) + a.order
    for key in gone:
        if key in held:
            per[key[0]] -= held.pop(key)
    return per


def logged_held(tables: Mapping[str, pl.DataFrame], quantum: int, boot: Bootstrap | None,
                orders: pl.DataFrame | None = None) -> pl.DataFrame:
    """(cycle, job_id, processes, qshares) each job held after the RM's cycle: its published
    Existing shares less the Removals (preempted, still running until the Orchestrator confirms),
    each of its job's order (`orders`, else replay.model.orders.work_orders, on `boot`'s classes
    and pools where there is one; `quantum`: the global one)."""
    sched = narrow(tables, "schedule", ("cycle", "job_id", "kind", "host", "share_id", "memory_gb")).filter(
        pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    removed = sched.filter(pl.col("kind") == "removal").select("cycle", "job_id", "share_id").unique()
    held = sched.filter(pl.col("kind") == "existing").join(removed, on=["cycle", "job_id", "share_id"], how="anti")
    return (with_quanta(held, tables, quantum, boot, orders)
            .group_by("cycle", "job_id").agg(pl.len().cast(pl.Int64).alias("processes"),
                                             pl.col("quanta").sum().cast(pl.Int64).alias("qshares"))
            .sort("cycle", "job_id"))


def logged_holdings(tables: Mapping[str, pl.DataFrame], quantum: int, boot: Bootstrap | None,
                    orders: pl.DataFrame | None = None) -> dict[int, dict[int, int]]:
    """Per cycle, the quantum shares each job held after the RM's cycle (`logged_held`, on `orders`)."""
    out: dict[int, dict[int, int]] = {}
    for cycle, job, q in logged_held(tables, quantum, boot, orders).select("cycle", "job_id", "qshares").iter_rows():
        out.setdefault(cycle, {})[job] = q
    return out


def taken_shares(result: CycleResult) -> dict[str, set[tuple[int, int]]]:
    """(job, share id) of the shares the cycle takes from running work for the scheduler's own
    reasons (not node deaths): by doEvictions (shrink, reservation clearing) and by defragmentation."""
    d = result.decisions
    return {"evictions": {(e.job_id, e.share_id) for e in d.evictions if e.reason not in PURGES},
            "defrag_takes": {(a.donor_job, a.share_id) for a in d.defrag if a.action == "evict"}}


def logged_taken_shares(logged: Logged, cycle: int) -> dict[str, set[tuple[int, int]]]:
    """The shares the RM took in the cycle, in the shapes of `taken_shares` (a purge names no share)."""
    return {"evictions": {(j, sid) for j, v in logged.evictions.get(cycle, {}).items() for _h, sid in v
                          if sid is not None},
            "defrag_takes": {(j, sid) for j, v in logged.defrag.get(cycle, {}).items() for _h, sid in v}}


def jain(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2); None when nobody holds anything."""
    xs = list(values)
    square = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * square) if xs and square else None
