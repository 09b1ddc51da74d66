"""How Much, the whole phase: how many processes each job is counted this cycle (NodepoolScheduler.findHowMuch).

The RM counts one priority band at a time, best (lowest number) first, against nodepool tables
that start as every schedulable machine's whole memory less the non-preemptable (FIXED_SHARE and
RESERVE) processes already running; fair-share processes count as free, since fair share can be
preempted. Each band takes from the tables what later bands may count.

- RESERVE (howMuchReserve): a reservation already holding its machine keeps its count of one;
  otherwise the user's allotment, a machine of its exact size in its class's pool, and a machine
  that is free or can be freed (it holds only preemptable work) must all be found. A machine that
  must be freed is set aside for the reservation; a wholly free one is not (so it can be counted
  twice, and stays in the tables fair share counts from).
- FIXED_SHARE (howMuchFixed): a service or managed reservation gets one process while its pool
  still has room for one of its order and the user's allotment allows it; a fixed-share job gets
  its cap, bounded by the user's allotment.
- FAIR_SHARE (howMuchFairShare): the classes of the band are counted by nodepool, depth first,
  subpools before their parent, each pool's classes (with those of its subpools) competing for
  the free space of the pool and its subpools; each class's award is then divided among its users
  and each user's among its jobs, all with the weighted fair-share counter of rmref.apportion.
  Two RM details matter: a class counted again in a parent pool keeps its subpool award (plus
  any bonus), though the parent's count spends shares for it too; and a class is capped at
  Integer.MAX_VALUE / (quantum in KB) processes.

Orders follow the RM's sorters: classes by weight then name, jobs by submission, users in
java.util.HashMap order (the RM's user sorter is a no-op; see `how_much` for the one thing no
input can tell).

Deferral reasons are the RM's own strings (spelling included).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rmref.bands import by_submission, priority_bands
from rmref.caps import job_caps
from rmref.constants import KB_PER_GB, UNLIMITED
from rmref.evictions import departed, held_now
from rmref.apportion import Entity, apportion, apportion_nested
from rmref.javahash import hashmap_order, node_map_order
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Machine, Work
from rmref.pool import PoolTables
from rmref.trees import trees

_SINGLE_PROCESS = ("Service", "Pop", "Reservation", "ManagedReservation")  # DuccTypes counted as one process


@dataclass(frozen=True)
class CounterRun:
    """One run of the weighted counter, as the RM logs it (an RmCounter block)."""

    descr: str  # countClassShares / countUserShares / countJobShares
    scope: str  # the nodepool (classes), the class (users) or "class/user" (jobs)
    entities: tuple[Entity, ...]  # in the RM's apportionment order
    vmachines: tuple[int, ...]
    given: dict[str, tuple[int, ...]]  # processes by share order, index 0 the total


@dataclass(frozen=True)
class HowMuch:
    """What the How Much phase decided, with the intermediate awards that explain it."""

    counts: dict[int, int]  # processes each job is counted (truth `nshares_given`)
    deferred: dict[int, str] = field(default_factory=dict)  # job -> the RM's deferral reason
    class_given: dict[str, tuple[int, ...]] = field(default_factory=dict)  # fair-share class awards by order
    user_given: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)  # (class, user) awards
    runs: tuple[CounterRun, ...] = ()  # every counter run, in the RM's order
    pure_fair_share: dict[int, int] = field(default_factory=dict)  # job -> uncapped, un-bonused share (defrag)
    cleared: tuple[str, ...] = ()  # machines set aside to be emptied for a reservation (the evictions' input)


# ---------------------------------------------------------------------------------------------
# Java ordering the counter depends on


# ---------------------------------------------------------------------------------------------
# The nodepool tables (scratch state of one cycle; every count-out changes them)


def _schedulable(m: Machine) -> bool:
    """NodePool.isSchedulable: responsive, online and not blacklisted."""
    return m.online and not m.blacklisted


def _build_pools(inp: CycleInput, maxorder: int, policy_of: Mapping[int, str]) -> dict[str, PoolTables]:
    """NodePool.reset then accountForNonPreemptable: the tables every band starts from."""
    size = maxorder + 1
    pools = {p.name: PoolTables(p.name, p.search_order, [0] * size, [0] * size) for p in inp.nodepools}
    if not pools:
        pools["--default--"] = PoolTables("--default--", 100, [0] * (maxorder + 1), [0] * (maxorder + 1))
    for name in hashmap_order([p.name for p in inp.nodepools]):
        parent = next(p.parent for p in inp.nodepools if p.name == name)
        if parent in pools:
            pools[parent].children.append(pools[name])
    free: dict[str, int] = {}
    for m in inp.machines:
        pool = pools.get(m.nodepool)
        if pool is None:
            continue
        pool.machines.append(m)
        if _schedulable(m):
            pool.n[m.order] += 1
            free[m.name] = m.order
    by_name = {m.name: m for m in inp.machines}
    listed = {name: {m.order for m in pool.machines if m.name in free}
              for name, pool in pools.items()}  # the free sizes the pool's tables have a map for
    stale = {m.name: m.stale_free for m in inp.machines if m.name not in free and m.stale_free}
    for w in inp.work:  # non-preemptable processes are not there to count
        if policy_of.get(w.job_id) not in (FIXED_SHARE, RESERVE):
            continue
        for s in w.shares:
            host = None if departed(s, inp) else by_name.get(s.host)
            if host is not None and host.name in stale and host.nodepool in pools:
                _account_stale(pools[host.nodepool], listed[host.nodepool], host, s.order,
                               policy_of[w.job_id] == RESERVE, stale)
                continue
            if host is None or host.name not in free:  # (an unschedulable machine is not in the tables)
                continue
            m = host
            pool = pools[m.nodepool]
            left = free[m.name]
            # rearrangeVirtual: a share bigger than the space left, or any reservation, takes it all
            take = left if (s.order > left or policy_of[w.job_id] == RESERVE) else s.order
            if left == m.order:
                pool.n[m.order] -= 1
            elif left > 0:
                pool.v[left] -= 1
            left -= take
            if left > 0:
                pool.v[left] += 1
                listed[m.nodepool].add(left)
            free[m.name] = left
    return pools


def _account_stale(pool: PoolTables, listed: set[int], m: Machine, order: int, reserve: bool,
                   stale: dict[str, int]) -> None:
    """rearrangeVirtual on a machine reset left out, from the free space it kept (`stale`).

    The RM first takes the machine off the count of its free size, then looks for the table of
    that size: when there is none it stops there ("bad virtual machine list"), the count already
    lowered; when there is one, the machine moves on to the table of what is left, as any other.
    """
    left = stale[m.name]
    take = left if (order > left or reserve) else order
    if left == m.order:
        pool.n[m.order] -= 1
    else:
        pool.v[left] -= 1
    if left not in listed:
        return
    left -= take
    stale[m.name] = left
    if left > 0:
        pool.v[left] += 1
        listed.add(left)
    else:
        del stale[m.name]


# ---------------------------------------------------------------------------------------------
# The cycle


@dataclass
class _Cycle:
    """What every counting step reads: the input, caps, classes and the live tables."""

    inp: CycleInput
    caps: Mapping[int, int]
    maxorder: int
    pools: dict[str, PoolTables]
    class_of: dict[int, ClassDef]
    user_limits: Mapping[str, int]
    user_orders: dict[frozenset[str], tuple[str, ...]]
    counts: dict[int, int] = field(default_factory=dict)
    deferred: dict[int, str] = field(default_factory=dict)
    runs: list[CounterRun] = field(default_factory=list)
    class_given: dict[str, tuple[int, ...]] = field(default_factory=dict)
    # an earlier band's class's given-by-order as its user count left it (see _count_users_and_jobs)
    class_left: dict[str, tuple[int, ...]] = field(default_factory=dict)
    user_given: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)
    class_pure: dict[str, int] = field(default_factory=dict)  # the class's pure fair share, quantum shares
    pure: dict[int, int] = field(default_factory=dict)
    by_class: dict[str, list[Work]] = field(default_factory=dict)  # class -> its jobs, oldest first
    occupancy: dict[str, int] = field(default_factory=dict)  # user -> quantum shares its non-preemptable work holds
    current: dict[int, int] = field(default_factory=dict)  # job -> processes held (RmJob.countNShares)
    set_aside: list[tuple[PoolTables, int, list[Machine]]] = field(default_factory=list)  # per freeable count
    cleared_first: tuple[str, ...] = ()  # machines met first where the node-map order is open (how_much)

    def open_order(self) -> bool:
        """Whether the order the RM meets alike machines in is open: its node map hashes IPs the
        log (before DUCC 3.0.0) never gives (any IP the input has then was inferred)."""
        return not self.inp.config.behaviours.has("node_ip_logged")

    def first(self, names: list[str]) -> list[str]:
        """`names` in node-map order, with `cleared_first` ahead where that order is open."""
        if not self.cleared_first or not self.open_order():
            return names
        return sorted(names, key=lambda n: n not in self.cleared_first)

    @property
    def quantum_gb(self) -> int:
        """ducc.rm.share.quantum."""
        return self.inp.config.quantum_gb

    def jobs_of(self, cd: ClassDef) -> list[Work]:
        """The class's jobs, oldest first."""
        return self.by_class.get(cd.name, [])

    def held(self, w: Work) -> int:
        """RmJob.countNShares: processes held, less those already being taken away (or purged)."""
        return self.current.get(w.job_id, 0)

    def np_occupancy(self, user: str) -> int:
        """User.countNPShares: quantum shares the user's non-preemptable work occupies."""
        return self.occupancy.get(user, 0)

    def allotment_gb(self, user: str) -> int:
        """The user's allotment in GB: the registry's override, else ducc.rm.global_allotment."""
        return self.user_limits.get(user, self.inp.config.global_allotment)

    def cap(self, w: Work) -> int:
        """The job's cap from the cap phase (computed here when the caller has none)."""
        return self.caps[w.job_id] if w.job_id in self.caps else job_caps(w.cap_input).actual


def how_much(inp: CycleInput, caps: Mapping[int, int], user_limits: Mapping[str, int] | None = None,
             user_orders: Sequence[Sequence[str]] = (), cleared_first: Sequence[str] = ()) -> HowMuch:
    """Every job's count for the cycle (truth `nshares_given`), and why the deferred got none.

    `caps` is each job's actual cap from the cap phase; `user_limits` the registry's per-user
    allotment overrides in GB (ducc.users `max-allotment`). `user_orders` are orders the RM was
    seen to count a class's users in (its log's countUserShares blocks): a class whose users are
    exactly one of them is counted in that order. Without one, users whose names share a HashMap
    bucket are taken in job submission order, which is only a guess: the RM put them in the
    order of its job map, whose keys hash random UUIDs.

    Each top-level nodepool tree is counted by a scheduler of its own (rmref.trees), with the
    tree's quantum; a user's non-preemptable occupancy counts its work in every tree.

    `cleared_first` are machines to take first, for a reservation, where the order the RM meets
    alike machines in is open (a node map hashed on IPs the input does not give): a caller that
    knows the RM's pick passes it (rmref.choices), so the rest of the cycle follows it.
    """
    parts = [_how_much_tree(tree, inp, caps, user_limits or {}, user_orders, tuple(cleared_first))
             for tree in trees(inp)]
    if len(parts) == 1:
        return parts[0]
    return HowMuch(
        counts={j: n for p in parts for j, n in p.counts.items()},
        deferred={j: r for p in parts for j, r in p.deferred.items()},
        class_given={c: g for p in parts for c, g in p.class_given.items()},
        user_given={u: g for p in parts for u, g in p.user_given.items()},
        runs=tuple(r for p in parts for r in p.runs),
        pure_fair_share={j: n for p in parts for j, n in p.pure_fair_share.items()},
        cleared=tuple(h for p in parts for h in p.cleared),
    )


def _how_much_tree(inp: CycleInput, whole: CycleInput, caps: Mapping[int, int], user_limits: Mapping[str, int],
                   user_orders: Sequence[Sequence[str]], cleared_first: tuple[str, ...] = ()) -> HowMuch:
    """How Much of one top-level pool tree (`whole` is the cycle's input across every tree)."""
    classes = {c.name: c for c in inp.classes}
    class_of = {w.job_id: classes[w.class_name] for w in inp.work
                if w.class_name in classes and not w.cap_input.refused}
    maxorder = max([m.order for m in inp.machines] + [w.order for w in inp.work] + [1])
    policy_of = {j: c.policy for j, c in class_of.items()}
    cyc = _Cycle(inp, caps, maxorder, _build_pools(inp, maxorder, policy_of), class_of, user_limits,
                 {frozenset(order): tuple(order) for order in user_orders})
    cyc.cleared_first = cleared_first
    cyc.current = held_now(inp)
    for w in sorted(inp.work, key=by_submission):  # each class's jobs oldest first (getAllJobsSorted)
        cyc.counts[w.job_id] = 0
        if w.job_id in class_of:
            cyc.by_class.setdefault(class_of[w.job_id].name, []).append(w)
    every_class = {c.name: c for c in whole.classes}
    for w in whole.work:  # the occupancy allotments are checked against (User.countNPShares)
        cd = every_class.get(w.class_name)
        if cd is not None and not w.cap_input.refused and cd.policy != FAIR_SHARE:
            cyc.occupancy[w.user] = cyc.occupancy.get(w.user, 0) + len(w.shares) * w.order
    for band in priority_bands(inp.classes):  # best (lowest) priority first
        policy = band[0].policy
        if policy == RESERVE:
            _how_much_reserve(cyc, band)
        elif policy == FIXED_SHARE:
            _how_much_fixed(cyc, band)
        else:
            _how_much_fair_share(cyc, band)
    cleared = _setup_preemptions(cyc)
    return HowMuch(cyc.counts, cyc.deferred, cyc.class_given, cyc.user_given, tuple(cyc.runs), cyc.pure, cleared)


# ---------------------------------------------------------------------------------------------
# Allotments


def _single_allotment_ok(cyc: _Cycle, w: Work) -> bool:
    """validSingleAllotment: one more process must keep the user within its allotment."""
    limit = cyc.allotment_gb(w.user)
    if (cyc.np_occupancy(w.user) + w.order) * cyc.quantum_gb > limit:
        cyc.deferred[w.job_id] = f"Deferred because allotment of {limit}GB is exceeded by user {w.user}"
        return False
    return True


def _allotment_for_job(cyc: _Cycle, w: Work) -> int:
    """getAllotmentForJob: processes the job may hold in all, its cap bounded by the user's allotment."""
    limit = cyc.allotment_gb(w.user)
    additional = max(0, limit // cyc.quantum_gb - cyc.np_occupancy(w.user)) // w.order
    if additional == 0:
        if cyc.held(w) == 0:
            cyc.deferred[w.job_id] = f"Deferred because allotment of {limit}GB is exceeded."
        return cyc.held(w)
    return min(cyc.cap(w), cyc.held(w) + additional)


# ---------------------------------------------------------------------------------------------
# RESERVE


def _reservables(pool: PoolTables, w: Work) -> int:
    """countReservables: the pool's own machines of the job's exact size (any state)."""
    return sum(1 for m in pool.machines if m.order == w.order)


def _freeable_machines(cyc: _Cycle, pool: PoolTables, w: Work, needed: int) -> int:
    """countFreeableMachines: machines of the job's size that are free, or hold only preemptable work.

    Free machines come first; a machine that must be emptied is set aside (and leaves the tables).
    """
    on_host: dict[str, list[str]] = {}
    for other in cyc.inp.work:
        for s in other.shares:
            on_host.setdefault(s.host, []).append(cyc.class_of[other.job_id].policy if other.job_id in cyc.class_of
                                                  else FAIR_SHARE)
    # machinesByOrder[order]: the pool's nodes of that size, a HashMap filled as they arrived; the
    # eviction-cost sort only puts free machines first (its comparator never reaches a cost)
    by_name = {m.name: m for m in pool.machines}
    sized = [m for m in pool.machines if m.order == w.order]
    candidates = [by_name[n] for n in cyc.first(node_map_order([(m.name, m.ip) for m in sized]))]
    candidates.sort(key=lambda m: bool(on_host.get(m.name)))
    given, set_aside = 0, []
    for m in candidates:
        if given >= needed:
            break
        if not _schedulable(m) or m.name in pool.preemptable:
            continue
        policies = on_host.get(m.name, [])
        if policies and any(p != FAIR_SHARE for p in policies):
            continue  # holds non-preemptable work: cannot be freed
        given += 1
        if policies:
            set_aside.append(m)
    for m in set_aside:
        pool.preemptable.add(m.name)
        pool.n[m.order] -= 1
    cyc.set_aside.append((pool, w.order, set_aside))
    return given


def _setup_preemptions(cyc: _Cycle) -> tuple[str, ...]:
    """The machines setupPreemptions actually clears, of those countFreeableMachines set aside.

    findMachines asks, per reservation, for as many machines as were set aside for it, walking the
    pool's preemptables (a HashMap on the node) for machines of the request's order. But the RM
    reuses the order variable for each share it evicts, so after the first machine it looks for
    machines of that share's order: machines of the request's size are skipped unless the last
    share evicted filled one. (Which share is last is a HashMap walk over random ids; when a
    machine's shares differ in size the largest is taken.)
    """
    policy = {w.job_id: (cyc.class_of[w.job_id].policy if w.job_id in cyc.class_of else FAIR_SHARE)
              for w in cyc.inp.work}
    share_orders: dict[str, set[int]] = {}
    for w in cyc.inp.work:
        if policy[w.job_id] == FAIR_SHARE:
            for s in w.shares:
                share_orders.setdefault(s.host, set()).add(s.order)
    cleared: list[str] = []
    for pool in {id(p): p for p, _, _ in cyc.set_aside}.values():
        asked = [(order, list(machines)) for p, order, machines in cyc.set_aside if p is pool and machines]
        in_pool = [m for _, machines in asked for m in machines]
        left = cyc.first(node_map_order([(m.name, m.ip) for m in in_pool]))  # put in set-aside order
        size = {m.name: m.order for m in in_pool}
        for order, machines in asked:
            given = 0
            for name in list(left):
                if given >= len(machines):
                    break
                if size[name] != order:
                    continue
                cleared.append(name)
                left.remove(name)
                given += 1
                order = max(share_orders.get(name, {order}))
    return tuple(cleared)


_Counter = Callable[["_Cycle", ClassDef, PoolTables, Work], None]


def _count_band(cyc: _Cycle, band: list[ClassDef], for_job: _Counter, for_single: _Counter) -> None:
    """Each class of the band, oldest work first: a Job may get several processes, other work one."""
    for cd in band:
        pool = cyc.pools[cd.nodepool]
        for w in cyc.jobs_of(cd):
            (for_job if w.work_type == "Job" else for_single)(cyc, cd, pool, w)


def _how_much_reserve(cyc: _Cycle, band: list[ClassDef]) -> None:
    """howMuchReserve: whole machines for reservations (and jobs) of the band's classes."""
    _count_band(cyc, band, _count_reservation_for_job, _count_single_reservation)


def _count_single_reservation(cyc: _Cycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countSingleReservation: one machine, or a deferral."""
    if cyc.held(w) > 0:
        cyc.counts[w.job_id] = 1
        return
    if not _single_allotment_ok(cyc, w):
        return
    if _reservables(pool, w) == 0:
        cyc.deferred[w.job_id] = f"Deferred because there are no hosts of the correct size in class {cd.name}"
        return
    if _freeable_machines(cyc, pool, w, 1) == 0:
        cyc.deferred[w.job_id] = "Deferred because resources are exhausted."
        return
    cyc.counts[w.job_id] = 1


def _count_reservation_for_job(cyc: _Cycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countReservationForJob: as many whole machines as the allotment allows and can be found."""
    if _reservables(pool, w) == 0:
        if cyc.held(w) == 0:
            cyc.deferred[w.job_id] = f"Deferred because there are no hosts of the correct size in class {cd.name}"
        return  # (the RM counts none even for a job that holds machines)
    needed = _allotment_for_job(cyc, w) - cyc.held(w)
    freeable = 0
    if needed > 0:
        freeable = _freeable_machines(cyc, pool, w, needed)
        if freeable + cyc.held(w) == 0:
            cyc.deferred[w.job_id] = "Deferred because resources are exhausted."
            return
    cyc.counts[w.job_id] = freeable + cyc.held(w)


# ---------------------------------------------------------------------------------------------
# FIXED_SHARE


def _how_much_fixed(cyc: _Cycle, band: list[ClassDef]) -> None:
    """howMuchFixed: non-preemptable processes for the band's classes, oldest job first."""
    _count_band(cyc, band, _count_fixed_for_job, _count_single_fixed)


def _no_room_reason(cyc: _Cycle, cd: ClassDef, pool: PoolTables, w: Work, spaces: str) -> str:
    """Why a fixed-share request found no room: busy machines of its size, or none big enough."""
    # countFixable counts the pool's machines of exactly the job's order (once per order below the
    # largest), so a job as big as the largest order always reads as "no hosts big enough"
    fixable = sum(1 for m in pool.machines if m.order == w.order) * max(0, cyc.maxorder - w.order)
    if fixable > 0:
        return f"Deferred{spaces}because insufficient resources are availble."
    return f"Deferred because no hosts in class {cd.name} have sufficient memory to accomodate the request."


def _count_single_fixed(cyc: _Cycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countSingleFixedProcess: one process for a service or managed reservation."""
    if w.cap_input.completed:
        return
    if cyc.held(w) > 0:
        cyc.counts[w.job_id] = 1
        return
    if pool.local_nshares()[w.order] == 0:
        cyc.deferred[w.job_id] = _no_room_reason(cyc, cd, pool, w, "  ")  # the RM's double space
        return
    if not _single_allotment_ok(cyc, w):
        return
    cyc.counts[w.job_id] = 1
    pool.count_out(w.order, 1)


def _count_fixed_for_job(cyc: _Cycle, cd: ClassDef, pool: PoolTables, w: Work) -> None:
    """countFixedForJob: a fixed-share job gets its cap, bounded by the allotment."""
    if pool.local_nshares()[w.order] == 0 and cyc.held(w) == 0:
        cyc.deferred[w.job_id] = _no_room_reason(cyc, cd, pool, w, " ")
        return
    granted = _allotment_for_job(cyc, w)
    cyc.counts[w.job_id] = granted
    pool.count_out(w.order, granted - cyc.held(w))


# ---------------------------------------------------------------------------------------------
# FAIR_SHARE


def _class_cap(cyc: _Cycle) -> int:
    """ResourceClass.calculateCap: Integer.MAX_VALUE over the quantum in KB (a limit on processes)."""
    return UNLIMITED // (cyc.quantum_gb * KB_PER_GB)


def _wanted(jobs: Sequence[Work], cyc: _Cycle) -> tuple[int, ...]:
    """initWantedByOrder: the caps of these jobs, summed by share order (index 0 the total)."""
    wanted = [0] * (cyc.maxorder + 1)
    for w in jobs:
        wanted[w.order] += cyc.cap(w)
    wanted[0] = sum(wanted[1:])
    return tuple(wanted)


def _how_much_fair_share(cyc: _Cycle, band: list[ClassDef]) -> None:
    """howMuchFairShare: class awards by nodepool, then users, then jobs."""
    eligible = [cd for cd in sorted(band, key=lambda c: -c.weight) if cyc.jobs_of(cd)]
    if not eligible:
        return
    awards: dict[str, np.ndarray] = {}  # each class's persisted given-by-order
    top = [p for p in cyc.pools.values() if not any(p in q.children for q in cyc.pools.values())]
    roots = sorted(top, key=lambda p: p.search_order)
    for root in roots:
        _traverse_for_counts(cyc, root, eligible, awards)
    for root in roots:  # what this band was given is gone for the bands after it
        _update_nodepools(root, eligible, awards, top=True)
    for cd in eligible:
        if cd.name not in awards:
            continue
        cyc.class_given[cd.name] = tuple(int(x) for x in awards[cd.name])
        cyc.class_left[cd.name] = cyc.class_given[cd.name]
        if cyc.class_given[cd.name][0] > 0:  # (with no award its jobs keep a count of 0)
            _count_users_and_jobs(cyc, cd, cyc.class_given[cd.name])


def _traverse_for_counts(cyc: _Cycle, pool: PoolTables, eligible: list[ClassDef],
                         awards: dict[str, np.ndarray]) -> list[ClassDef]:
    """traverseNodepoolsForCounts: count each pool's classes with those of its subpools, leaves first."""
    mine = [cd for cd in eligible if cd.nodepool == pool.name]
    counted = list(mine)
    for child in pool.ascending():
        counted += _traverse_for_counts(cyc, child, eligible, awards)
    if mine:  # a pool with no classes of its own leaves its subpools' classes to its parent
        _count_class_shares(cyc, pool, counted, awards)
    return counted


def _update_nodepools(pool: PoolTables, classes: list[ClassDef], awards: Mapping[str, np.ndarray], top: bool) -> None:
    """updateNodepools: count each class's award out of its own pool's tables.

    The RM recurses one level only: a subpool's call receives just the classes bound to that
    subpool, so the classes of a grand-child pool match none of its children and are never
    counted out; a lower band then sees their space as free. rmref keeps that.
    """
    for child in pool.ascending():
        mine = [cd for cd in classes if cd.nodepool == child.name]
        if mine:
            _update_nodepools(child, mine, awards, top=False)
    if top:
        classes = [cd for cd in classes if cd.nodepool == pool.name]
    for cd in classes:
        given = awards.get(cd.name)
        if given is None:
            continue
        for order in range(len(given) - 1, 0, -1):
            pool.count_out(order, int(given[order]))


def _count_class_shares(cyc: _Cycle, pool: PoolTables, rcs: list[ClassDef], awards: dict[str, np.ndarray]) -> None:
    """countClassShares: the classes compete for the free space of the pool and its subpools."""
    cap = _class_cap(cyc)
    entities = sorted((Entity(cd.name, cd.weight, _wanted(cyc.jobs_of(cd), cyc), cap=cap) for cd in rcs),
                      key=lambda e: (-e.weight, e.name))  # ApportionmentSorterCl: heavier first, then name
    by_name = {cd.name: cd for cd in rcs}
    below = {p.name: p.subtree() for p in cyc.pools.values()}
    pool_shares = {p.name: p.local_nshares() for p in cyc.pools.values()}
    classes_of_pool = {p: [c.name for c in cyc.inp.classes if c.nodepool == p] for p in cyc.pools}

    def bonus_ok(e: Entity, order: int, wanted: Sequence[int], kept: Mapping[str, Sequence[int]]) -> bool:
        # canUseBonus: under the cap, still wanting, and the class's pools (its own and below)
        # still have a process of this order that no class of theirs has been given
        if kept[e.name][0] >= e.cap or wanted[order] <= 0:
            return False
        room = 0
        for p in below[by_name[e.name].nodepool]:
            room += int(pool_shares[p.name][order])
            for c in classes_of_pool[p.name]:
                # a class of an earlier band still holds what its users did not take
                gbo = kept.get(c, awards.get(c, cyc.class_left.get(c)))
                if gbo is not None:
                    room -= int(gbo[order])
        return room > 0

    vmachines = pool.vmachines()
    earlier = {name: tuple(int(x) for x in a) for name, a in awards.items() if name in by_name}
    result = apportion_nested(entities, vmachines, earlier, bonus_ok)
    for name, given in result.given.items():
        awards[name] = np.array(given, dtype=np.int64)
    cyc.runs.append(CounterRun("countClassShares", pool.name, tuple(entities), tuple(vmachines), dict(result.given)))
    # the pure fair share (for defragmentation): the pool tree's quantum shares by weight alone;
    # the last (highest) pool that counts a class sets it
    total = sum(m.order for p in pool.subtree() for m in p.machines)
    weights = sum(cd.weight for cd in rcs)
    for cd in rcs:
        cyc.class_pure[cd.name] = (total * cd.weight) // weights if weights else 0


def _count_users_and_jobs(cyc: _Cycle, cd: ClassDef, award: tuple[int, ...]) -> None:
    """countUserShares then countJobShares: the class award split among users, each user's among its jobs."""
    jobs = cyc.jobs_of(cd)
    users = hashmap_order([w.user for w in jobs])  # a HashMap of users; the user sorter leaves it so
    users = list(cyc.user_orders.get(frozenset(users), users))
    entities = tuple(Entity(u, 1, _wanted([w for w in jobs if w.user == u], cyc)) for u in users)
    result = apportion(entities, award)
    # countUserShares divides the class's own given-by-order array, and removeSharesByOrder
    # changes it in place: what the users did not take stays there, and a lower band's
    # canUseBonus (NodePool.countAssignableShares) subtracts it from the pool's free shares
    cyc.class_left[cd.name] = result.vmachines_left
    cyc.runs.append(CounterRun("countUserShares", cd.name, entities, award, dict(result.given)))
    user_pure = cyc.class_pure.get(cd.name, 0) // max(len(users), 1)
    for user in users:
        cyc.user_given[(cd.name, user)] = result.given[user]
        mine = [w for w in jobs if w.user == user]
        job_entities = tuple(Entity(str(w.job_id), 1, _wanted([w], cyc), order=w.order) for w in mine)
        vector = result.given[user]
        split = apportion(job_entities, vector)
        cyc.runs.append(CounterRun("countJobShares", f"{cd.name}/{user}", job_entities, vector, dict(split.given)))
        for w in mine:
            cyc.counts[w.job_id] = split.given[str(w.job_id)][w.order]
            cyc.pure[w.job_id] = user_pure // len(mine)
