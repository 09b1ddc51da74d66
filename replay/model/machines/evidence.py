"""The evidence the inventory solver reads: per whole cycle, the first priority band's counters
(countClassShares `vmachines`) less the known machines' part, and what each unseen machine shows.

A *clean* cycle (no fixed-share or reservation process added, no machine cleared for a
reservation) leaves in its first band's vectors exactly the unseen machines' free-size histogram
(replay.model.machines.solver).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import polars as pl

from replay.model.logged import Logged
from replay.model.reads import narrow
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, CycleInput


def free_space(order: int, np_shares: Iterable[tuple[int, str]]) -> int:
    """A machine's free quanta once its non-preemptable processes are accounted for, as the RM's
    rearrangeVirtual takes them (rmref.howmuch_state.build_pools): a process bigger than the space
    left, or any reservation, takes all of it."""
    left = order
    for size, policy in np_shares:
        take = left if (size > left or policy == RESERVE) else size
        left -= take
    return left


@dataclass(frozen=True)
class Seen:
    """What one unseen machine shows in one cycle: schedulable, and its non-preemptable processes."""

    schedulable: bool
    np_shares: tuple[tuple[int, str], ...]


@dataclass
class CycleEvidence:
    """One whole cycle's evidence."""

    inp: CycleInput
    clean: bool
    scopes: list[str | None]  # the first band's counted pools, in the log's order (None: not one pool)
    logged: list[tuple[int, ...]]  # their vmachines
    residual: list[list[int]]  # logged less the known machines' part (clean cycles)
    seen: dict[str, Seen]


def policies(inp: CycleInput, counted: Mapping[int, str] | None = None) -> dict[int, str]:
    """job -> its class's policy; where the configuration lacks the class, the one the RM counted
    it under (`counted`: `counted_policies`), else FAIR_SHARE."""
    classes = {c.name: c.policy for c in inp.classes}
    counted = counted or {}
    return {w.job_id: classes.get(w.class_name) or counted.get(w.job_id, FAIR_SHARE) for w in inp.work}


def counted_policies(tables: Mapping[str, pl.DataFrame]) -> dict[int, str]:
    """job -> the policy its counting lines show (countReservationForJob counts a reservation,
    countFixedForJob a fixed-share job): what a cut log tells of work whose class it never names."""
    rows = narrow(tables, "counts", ("job_id", "policy")).drop_nulls()
    return dict(rows.unique("job_id", keep="last", maintain_order=True).iter_rows())


def _np_shares(inp: CycleInput, counted: Mapping[int, str]) -> dict[str, list[tuple[int, str]]]:
    """host -> its fixed-share and reservation processes (order, policy), in accounting order."""
    policy = policies(inp, counted)
    out: dict[str, list[tuple[int, str]]] = {}
    for w in inp.work:
        if policy[w.job_id] in (FIXED_SHARE, RESERVE):
            for s in w.shares:
                out.setdefault(s.host, []).append((s.order, policy[w.job_id]))
    return out


class PoolTree:
    """The nodepool tree: each pool's depth, and which pools a pool's counter covers."""

    def __init__(self, inp: CycleInput):
        self.parent = {p.name: p.parent for p in inp.nodepools}
        self.class_pool = {c.name: c.nodepool for c in inp.classes}

    def chain(self, pool: str) -> list[str]:
        """The pool and its ancestors."""
        out = [pool]
        while (parent := self.parent.get(out[-1])) is not None:
            out.append(parent)
        return out

    def covers(self, scope: str, pool: str) -> bool:
        """Whether the counter of `scope` counts `pool`'s machines (scope is pool or above it)."""
        return scope in self.chain(pool)

    def scope_of(self, class_names: Sequence[str]) -> str | None:
        """The pool a countClassShares block counted: the highest pool among its classes' pools."""
        pools = [self.class_pool[c] for c in class_names if c in self.class_pool]
        return min(pools, key=lambda p: len(self.chain(p))) if pools else None


def _first_band(rmcounter: pl.DataFrame) -> dict[int, list[tuple[list[str], tuple[int, ...]]]]:
    """Per cycle, the leading countClassShares blocks (the first priority band's counters):
    (classes, vmachines)."""
    rows = rmcounter.filter(pl.col("cycle").is_not_null())
    out: dict[int, list[tuple[list[str], tuple[int, ...]]]] = {}
    done: set[int] = set()
    for (cycle, _block), block in rows.group_by("cycle", "block", maintain_order=True):
        if cycle in done:
            continue
        if block["descr"][0] != "countClassShares" or block["vmachines"][0] is None:
            done.add(cycle)  # (a block without its vmachines line, cut short, tells nothing)
            continue
        out.setdefault(cycle, []).append((block["entity"].to_list(), tuple(block["vmachines"][0])))
    return out


def _clean(inp: CycleInput, logged: Logged, counted: Mapping[int, str]) -> bool:
    """No earlier band changed the tables: no fixed-share or reservation process counted beyond
    those held, no machine set aside for a reservation."""
    if logged.cleared.get(inp.cycle):
        return False
    counts = logged.counts.get(inp.cycle, {})
    policy = policies(inp, counted)
    for w in inp.work:
        if policy[w.job_id] in (FIXED_SHARE, RESERVE):
            held = sum(1 for s in w.shares if not s.pending_removal)
            if counts.get(w.job_id, 0) > held:
                return False
    return True


def histogram(machines: Iterable[tuple[str, int, bool, Sequence[tuple[int, str]]]], pools: PoolTree,
               scope: str, size: int) -> list[int]:
    """Free-size histogram of (pool, order, schedulable, non-preemptable processes) machines a
    counter of `scope` covers."""
    out = [0] * size
    for pool, order, schedulable, np_shares in machines:
        if schedulable and pools.covers(scope, pool):
            free = free_space(order, np_shares)
            # the RM's reset counts every schedulable machine at its order, a machine smaller than
            # a quantum at 0; one its processes fill is taken out of the count, not moved to 0
            if (0 < free or order == 0) and free < size:
                out[free] += 1
    return out


def gather_evidence(tables: Mapping[str, pl.DataFrame], inputs: Sequence[CycleInput], unknown: set[str],
                    logged: Logged) -> tuple[list[CycleEvidence], PoolTree]:
    """Every whole cycle's counters, with the known machines' part taken out."""
    pools = PoolTree(inputs[0])
    band = _first_band(narrow(tables, "rmcounter", ("cycle", "block", "descr", "entity", "vmachines")))
    counted = counted_policies(tables)
    out = []
    for inp in inputs:
        blocks = band.get(inp.cycle, [])
        scopes = [pools.scope_of(names) for names, _ in blocks]
        np_of = _np_shares(inp, counted)
        known = [(m.nodepool, m.order, m.online and not m.blacklisted, np_of.get(m.name, ()))
                 for m in inp.machines if m.name not in unknown]
        seen = {m.name: Seen(m.online and not m.blacklisted, tuple(np_of.get(m.name, ())))
                for m in inp.machines if m.name in unknown}
        logged_v = [v for _, v in blocks]
        residual = [[a - b for a, b in zip(v, histogram(known, pools, s, len(v)))] if s else []
                    for s, v in zip(scopes, logged_v)]
        clean = (bool(blocks) and None not in scopes and _clean(inp, logged, counted)
                 and all(x >= 0 for r in residual for x in r))
        out.append(CycleEvidence(inp, clean, scopes, logged_v, residual, seen))
    return out, pools
