"""Facts of one cycle, table by table: the job's identity, its logged cap chain and count, its processes."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import polars as pl

from replay.apps.explain.lookup import cycle_rows
from replay.apps.explain.story import HeldShare, LoggedCaps, Placed
from replay.model.inputs import job_descriptions
from replay.model.bootstrap import Bootstrap
from replay.model.orders import work_orders
from rmref import job_order
from rmref.model import CycleInput, Work

# (job, memory GB) -> quanta per process
OrderOf = Callable[[int, int | None], int]


def process_orders(tables: Mapping[str, pl.DataFrame], inp: CycleInput | None, boot: Bootstrap,
                   orders: pl.DataFrame | None = None) -> OrderOf:
    """A job's quanta per process, as the audit reads it: its cycle input's order (in its own pool
    tree's quantum), else its order as every view reads it (replay.model.orders.work_orders: as
    printed, from its class or its pool, else assumed, which the story's `assumed` names), else
    (no line gives its memory) its memory over the global quantum. `orders`: work_orders' rows,
    where the caller's replay start found them already (ReplayStart.work_orders)."""
    quantum = boot.config.quantum_gb
    found = orders if orders is not None else work_orders(tables, quantum, boot)
    known = dict(found.select("job_id", "order").iter_rows())
    known.update({w.job_id: w.order for w in inp.work} if inp else {})
    return lambda job, mem: known.get(job) or job_order(mem or 0, quantum)


@dataclass(frozen=True)
class JobIdentity:
    """The job's identity in the detailed cycle."""

    work_type: str
    user: str
    class_name: str
    memory_gb: int
    order: int


def job_identity(tables: Mapping[str, pl.DataFrame], work: Work | None, cycle: int, job_id: int,
                 order_of: OrderOf) -> JobIdentity:
    """The job's type, user, class, memory and order: from its cycle input, else its published row."""
    if work is not None:
        return JobIdentity(work.work_type, work.user, work.class_name, work.memory_gb, work.order)
    row = cycle_rows(tables, "schedule", cycle, job_id).row(0, named=True)
    printed = row["memory_gb"] or 0  # rounded up to the quantum: the memory submitted where the log gives it
    submitted = job_descriptions(tables).filter((pl.col("job_id") == job_id) & pl.col("memory_gb").is_not_null())
    mem = submitted["memory_gb"][0] if submitted.height else printed
    return JobIdentity(row["work_type"] or "Job", "", "", mem, order_of(job_id, printed))


def read_logged_caps(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> LoggedCaps | None:
    """The cap chain the RM logged for the job in the cycle (None: it logged none)."""
    rows = cycle_rows(tables, "job_caps", cycle, job_id).filter(pl.col("actual_cap").is_not_null())
    if rows.is_empty():
        return None
    r = rows.row(-1, named=True)
    return LoggedCaps(r["base_cap"], r["expected_cap"], r["potential_cap"], r["actual_cap"], r["prj_kind"])


def schedule_shares(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int,
                    order: int) -> tuple[tuple[HeldShare, ...], str | None]:
    """Held processes after the cycle (the published Existing list; each of the job's `order`
    quanta) and the published reason."""
    rows = cycle_rows(tables, "schedule", cycle, job_id)
    reason = next((r for r in rows["reason"].to_list() if r), None)
    with_host = rows.filter(pl.col("host").is_not_null())

    def key(kind: str) -> set[tuple[Any, ...]]:
        return set(with_host.filter(pl.col("kind") == kind).select("host", "share_id").iter_rows())

    added, removing = key("addition"), key("removal")
    held = tuple(
        HeldShare(host, sid, order, (host, sid) in added, (host, sid) in removing)
        for host, sid in with_host.filter(pl.col("kind") == "existing").select("host", "share_id").iter_rows()
    )
    return held, reason


def placed_processes(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> tuple[Placed, ...]:
    """New processes connected for the job; one the published Additions lacks was cancelled."""
    rows = cycle_rows(tables, "placements", cycle, job_id)
    sched = cycle_rows(tables, "schedule", cycle, job_id).filter(pl.col("kind") == "addition")
    added = set(sched.select("host", "share_id").iter_rows())
    return tuple(
        Placed(r["host"], r["share_id"], r["order"], r["m_order"], r["m_unused"], r["m_active"],
               r["placed_for"] if r["reassigned"] else None, (r["host"], r["share_id"]) not in added)
        for r in rows.iter_rows(named=True)
    )
