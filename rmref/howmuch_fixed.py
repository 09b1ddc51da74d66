"""How Much for the non-preemptable policies (rmref.howmuch): RESERVE (howMuchReserve, whole
machines, freed if need be) and FIXED_SHARE (howMuchFixed). Which of the machines set aside for
reservations setupPreemptions empties is a step of its own, after What Of (rmref.clearing)."""

from __future__ import annotations

from collections.abc import Callable

from rmref.evictions import departed
from rmref.howmuch_state import CountingCycle, SetAside, allotment_for_job, schedulable, single_allotment_ok
from rmref.javahash import node_map_order
from rmref.model import FAIR_SHARE, ClassDef, Work
from rmref.pool import PoolTables


# ---------------------------------------------------------------------------------------------
# RESERVE


def _reservables(pool: PoolTables, w: Work) -> int:
    """countReservables: the pool's own machines of the job's exact size (any state)."""
    return sum(1 for m in pool.machines if m.order == w.order)


def _freeable_machines(cyc: CountingCycle, pool: PoolTables, w: Work, needed: int) -> int:
    """countFreeableMachines: machines of the job's size that are free, or hold no fixed process.

    Free machines come first (before 2.1.0, behaviour freeable_by_eviction_cost, the walk is in
    node-map order, free or not); a machine that must be emptied is set aside (and leaves the tables):
    the call is recorded (`SetAside`) for the clearing step, which empties some of them.
    """
    on_host: dict[str, list[bool]] = {}  # per machine, whether each process there is fixed
    for other in cyc.inp.work:
        policy = cyc.class_of[other.job_id].policy if other.job_id in cyc.class_of else FAIR_SHARE
        for s in other.shares:
            if departed(s, cyc.inp):  # (before 2.1.0 its machine came back new and empty)
                continue
            # Machine.isFreeable reads the share's fixed bit, which a share handed over by
            # defragmentation never gets, whatever its new job's policy
            on_host.setdefault(s.host, []).append(policy != FAIR_SHARE and not s.handed_over)
    # machinesByOrder[order]: the pool's nodes of that size, a HashMap filled as they arrived; the
    # eviction-cost sort only puts free machines first (its comparator never reaches a cost); the
    # size sort before it keeps the map's order (the machines are all of one size)
    by_name = {m.name: m for m in pool.machines}
    sized = [m for m in pool.machines if m.order == w.order]
    candidates = [by_name[n] for n in cyc.walk(node_map_order([(m.name, m.ip) for m in sized]))]
    if cyc.inp.config.behaviours.has("freeable_by_eviction_cost"):
        candidates.sort(key=lambda m: bool(on_host.get(m.name)))
    given, set_aside = 0, []
    for m in candidates:
        if given >= needed:
            break
        if not schedulable(m) or m.name in pool.preemptable:
            continue
        fixed = on_host.get(m.name, [])
        if any(fixed):
            continue  # holds non-preemptable work: cannot be freed
        given += 1
        if fixed:
            set_aside.append(m)
    for m in set_aside:
        pool.preemptable.add(m.name)
        pool.n[m.order] -= 1
    cyc.set_aside.append(SetAside(pool.name, w.order, tuple(set_aside), given, w.job_id))
    return given


_Counter = Callable[["CountingCycle", ClassDef, PoolTables, Work], None]


def _count_band(cyc: CountingCycle, band: list[ClassDef], for_job: _Counter, for_single: _Counter) -> None:
    """Each class of the band, oldest work first: a Job may get several processes, other work one."""
    for cd in band:
        pool = cyc.pools[cd.nodepool]
        for w in cyc.jobs_of(cd):
            (for_job if w.work_type == "Job" else for_single)(cyc, cd, pool, w)


def how_much_reserve(cyc: CountingCycle, band: list[ClassDef]) -> None:
    """howMuchReserve: whole machines for reservations (and jobs) of the band's classes."""
    _count_band(cyc, band, _count_reservation_for_job, _count_single_reservation)


def _count_single_reservation(cyc: CountingCycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countSingleReservation: one machine, or a deferral."""
    if cyc.held(w) > 0:
        cyc.counts[w.job_id] = 1
        return
    if not single_allotment_ok(cyc, w):
        return
    if _reservables(pool, w) == 0:
        cyc.deferred[w.job_id] = f"Deferred because there are no hosts of the correct size in class {cd.name}"
        return
    if _freeable_machines(cyc, pool, w, 1) == 0:
        cyc.deferred[w.job_id] = "Deferred because resources are exhausted."
        return
    cyc.counts[w.job_id] = 1


def _count_reservation_for_job(cyc: CountingCycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countReservationForJob: as many whole machines as the allotment allows and can be found."""
    if _reservables(pool, w) == 0:
        if cyc.held(w) == 0:
            cyc.deferred[w.job_id] = f"Deferred because there are no hosts of the correct size in class {cd.name}"
        return  # (the RM counts none even for a job that holds machines)
    needed = allotment_for_job(cyc, w) - cyc.held(w)
    freeable = 0
    if needed > 0:
        freeable = _freeable_machines(cyc, pool, w, needed)
        if freeable + cyc.held(w) == 0:
            cyc.deferred[w.job_id] = "Deferred because resources are exhausted."
            return
    cyc.counts[w.job_id] = freeable + cyc.held(w)


# ---------------------------------------------------------------------------------------------
# FIXED_SHARE


def how_much_fixed(cyc: CountingCycle, band: list[ClassDef]) -> None:
    """howMuchFixed: non-preemptable processes for the band's classes, oldest job first."""
    _count_band(cyc, band, _count_fixed_for_job, _count_single_fixed)


def _no_room_reason(cyc: CountingCycle, cd: ClassDef, pool: PoolTables, w: Work, spaces: str) -> str:
    """Why a fixed-share request found no room: busy machines of its size, or none big enough."""
    # countFixable counts the pool's machines of exactly the job's order (once per order below the
    # largest), so a job as big as the largest order always reads as "no hosts big enough"
    fixable = sum(1 for m in pool.machines if m.order == w.order) * max(0, cyc.maxorder - w.order)
    if fixable > 0:
        return f"Deferred{spaces}because insufficient resources are availble."
    return f"Deferred because no hosts in class {cd.name} have sufficient memory to accomodate the request."


def _count_single_fixed(cyc: CountingCycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countSingleFixedProcess: one process for a service or managed reservation."""
    if w.cap_input.completed:
        return
    if cyc.held(w) > 0:
        cyc.counts[w.job_id] = 1
        return
    if pool.local_nshares()[w.order] == 0:
        cyc.deferred[w.job_id] = _no_room_reason(cyc, cd, pool, w, "  ")  # the RM's double space
        return
    if not single_allotment_ok(cyc, w):
        return
    cyc.counts[w.job_id] = 1
    pool.count_out(w.order, 1)


def _count_fixed_for_job(cyc: CountingCycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countFixedForJob: a fixed-share job gets its cap, bounded by the allotment."""
    if pool.local_nshares()[w.order] == 0 and cyc.held(w) == 0:
        cyc.deferred[w.job_id] = _no_room_reason(cyc, cd, pool, w, " ")
        return
    granted = allotment_for_job(cyc, w)
    cyc.counts[w.job_id] = granted
    pool.count_out(w.order, granted - cyc.held(w))

