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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from rmref.bands import by_submission, priority_bands
from rmref.constants import KB_PER_GB, UNLIMITED
from rmref.evictions import held_now, in_tables
from rmref.apportion import Entity, apportion, apportion_nested
from rmref.howmuch_fixed import how_much_fixed, how_much_reserve
from rmref.howmuch_state import CounterRun, CountingCycle, SetAside, build_pools, counted_classes
from rmref.javahash import hashmap_order
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Work
from rmref.pool import PoolTables
from rmref.trees import trees

_SINGLE_PROCESS = ("Service", "Pop", "Reservation", "ManagedReservation")  # DuccTypes counted as one process


@dataclass(frozen=True)
class HowMuch:
    """What the How Much phase decided, with the intermediate awards that explain it."""

    counts: dict[int, int]  # processes each job is counted (truth `nshares_given`)
    deferred: dict[int, str] = field(default_factory=dict)  # job -> the RM's deferral reason
    class_given: dict[str, tuple[int, ...]] = field(default_factory=dict)  # fair-share class awards by order
    user_given: dict[tuple[str, str], tuple[int, ...]] = field(default_factory=dict)  # (class, user) awards
    runs: tuple[CounterRun, ...] = ()  # every counter run, in the RM's order
    pure_fair_share: dict[int, int] = field(default_factory=dict)  # job -> uncapped, un-bonused share (defrag)
    # every countFreeableMachines call for a reservation, with the machines it set aside to be
    # emptied: the clearing step's input (rmref.clearing), which picks those setupPreemptions empties
    set_aside: tuple[SetAside, ...] = ()
    # machine -> the free space the accounting left each unschedulable machine of known size: reset
    # skips it, so What Of's accounting starts from there (What Of's `stale_left` input); None: this
    # How Much did not say, and What Of works it out (rmref.howmuch_state.stale_after_howmuch)
    stale_left: dict[str, int] | None = None


def how_much(inp: CycleInput, caps: Mapping[int, int], user_limits: Mapping[str, int] | None = None,
             user_orders: Sequence[Sequence[str]] = (), cleared_first: Sequence[str] = (),
             given_first: Sequence[str] = ()) -> HowMuch:
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
    knows the RM's pick passes it (rmref.choices), so the rest of the cycle follows it (the
    clearing step, rmref.clearing, takes it too: which machines are emptied is decided there, from
    `HowMuch.set_aside`).
    `given_first` are the machines countFreeableMachines gave (free or to be freed), in the order
    its walk met them (the log shows it): where that order is open the walk meets them first. It
    matters before 2.1.0, when the walk did not take free machines first (rmref.behaviours).
    """
    parts = [_how_much_tree(tree, inp, caps, user_limits or {}, user_orders, tuple(cleared_first),
                            tuple(given_first)) for tree in trees(inp)]
    if len(parts) == 1:
        return parts[0]
    return HowMuch(
        counts={j: n for p in parts for j, n in p.counts.items()},
        deferred={j: r for p in parts for j, r in p.deferred.items()},
        class_given={c: g for p in parts for c, g in p.class_given.items()},
        user_given={u: g for p in parts for u, g in p.user_given.items()},
        runs=tuple(r for p in parts for r in p.runs),
        pure_fair_share={j: n for p in parts for j, n in p.pure_fair_share.items()},
        set_aside=tuple(a for p in parts for a in p.set_aside),
        stale_left={h: v for p in parts for h, v in (p.stale_left or {}).items()},
    )


def _how_much_tree(inp: CycleInput, whole: CycleInput, caps: Mapping[int, int], user_limits: Mapping[str, int],
                   user_orders: Sequence[Sequence[str]], cleared_first: tuple[str, ...] = (),
                   given_first: tuple[str, ...] = ()) -> HowMuch:
    """How Much of one top-level pool tree (`whole` is the cycle's input across every tree)."""
    class_of = counted_classes(inp)
    maxorder = max([m.order for m in inp.machines] + [w.order for w in inp.work] + [1])
    policy_of = {j: c.policy for j, c in class_of.items()}
    pools, stale_left = build_pools(inp, maxorder, policy_of)
    cyc = CountingCycle(inp, caps, maxorder, pools, class_of, user_limits,
                        {frozenset(order): tuple(order) for order in user_orders})
    cyc.cleared_first, cyc.given_first = cleared_first, given_first
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
            how_much_reserve(cyc, band)
        elif policy == FIXED_SHARE:
            how_much_fixed(cyc, band)
        else:
            _how_much_fair_share(cyc, band)
    return HowMuch(cyc.counts, cyc.deferred, cyc.class_given, cyc.user_given, tuple(cyc.runs), cyc.pure,
                   tuple(cyc.set_aside), stale_left)


# ---------------------------------------------------------------------------------------------
# FAIR_SHARE


def _class_cap(cyc: CountingCycle) -> int:
    """ResourceClass.calculateCap: Integer.MAX_VALUE over the quantum in KB (a limit on processes;
    before 2.1.0 over the quantum in GB, behaviour class_cap_in_kb)."""
    per_gb = KB_PER_GB if cyc.inp.config.behaviours.has("class_cap_in_kb") else 1
    return UNLIMITED // (cyc.quantum_gb * per_gb)


def _wanted(jobs: Sequence[Work], cyc: CountingCycle) -> tuple[int, ...]:
    """initWantedByOrder: the caps of these jobs, summed by share order (index 0 the total)."""
    wanted = [0] * (cyc.maxorder + 1)
    for w in jobs:
        wanted[w.order] += cyc.cap(w)
    wanted[0] = sum(wanted[1:])
    return tuple(wanted)


def _how_much_fair_share(cyc: CountingCycle, band: list[ClassDef]) -> None:
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


def _traverse_for_counts(cyc: CountingCycle, pool: PoolTables, eligible: list[ClassDef],
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


def _count_class_shares(cyc: CountingCycle, pool: PoolTables, rcs: list[ClassDef],
                        awards: dict[str, np.ndarray]) -> None:
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
    # the last (highest) pool that counts a class sets it; before 2.1.0 a machine away (dead, varied
    # off) is out of the tables that countTotalShares adds up
    total = sum(m.order for p in pool.subtree() for m in p.machines if in_tables(m, cyc.inp))
    weights = sum(cd.weight for cd in rcs)
    for cd in rcs:
        cyc.class_pure[cd.name] = (total * cd.weight) // weights if weights else 0


def _count_users_and_jobs(cyc: CountingCycle, cd: ClassDef, award: tuple[int, ...]) -> None:
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
