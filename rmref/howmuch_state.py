"""How Much's scratch state of one cycle (rmref.howmuch): the nodepool tables every band counts
from, the counts and awards so far, and the allotment checks every policy makes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from rmref.apportion import Entity
from rmref.caps import job_caps
from rmref.evictions import departed, in_tables
from rmref.javahash import hashmap_order
from rmref.model import FIXED_SHARE, RESERVE, ClassDef, CycleInput, Machine, Work
from rmref.pool import PoolTables



@dataclass(frozen=True)
class CounterRun:
    """One run of the weighted counter, as the RM logs it (an RmCounter block)."""

    descr: str  # countClassShares / countUserShares / countJobShares
    scope: str  # the nodepool (classes), the class (users) or "class/user" (jobs)
    entities: tuple[Entity, ...]  # in the RM's apportionment order
    vmachines: tuple[int, ...]
    given: dict[str, tuple[int, ...]]  # processes by share order, index 0 the total


@dataclass(frozen=True)
class SetAside:
    """One countFreeableMachines call for a reservation (How Much's `HowMuch.set_aside`): the busy
    machines it set aside to be emptied, and how many machines it gave, free or freeable. The
    clearing step (rmref.clearing) reads it: setupPreemptions empties machines of it later."""

    pool: str  # the nodepool whose preemptables hold the machines (the reservation's class's)
    order: int  # the reservation's share order: the size of machine it asked for
    machines: tuple[Machine, ...]  # set aside, in the walk's order (clearing reads name, IP and order)
    wanted: int  # the machines the walk gave (free or freeable): the reservation's new processes
    job: int  # the reservation



# ---------------------------------------------------------------------------------------------
# The nodepool tables (scratch state of one cycle; every count-out changes them)


def schedulable(m: Machine) -> bool:
    """NodePool.isSchedulable: responsive, online and not blacklisted."""
    return m.online and not m.blacklisted


def stale_after_howmuch(inp: CycleInput) -> dict[str, int]:
    """`HowMuch.stale_left` worked out from the input alone, as rmref's How Much's accounting
    leaves it (it reads neither caps nor counts): What Of's rule where no How Much result hands it
    one. Empty, and nothing accounted, when no unschedulable machine has a known size."""
    if not any(not schedulable(m) and (m.stale_free is not None or m.stale_free_whatof is not None)
               for m in inp.machines):
        return {}
    policy_of = {j: c.policy for j, c in counted_classes(inp).items()}
    maxorder = max([m.order for m in inp.machines] + [w.order for w in inp.work] + [1])
    return build_pools(inp, maxorder, policy_of)[1]


def counted_classes(inp: CycleInput) -> dict[int, ClassDef]:
    """The class of each job How Much counts: its class defined, the job not refused."""
    classes = {c.name: c for c in inp.classes}
    return {w.job_id: classes[w.class_name] for w in inp.work if w.class_name in classes and not w.cap_input.refused}


def build_pools(inp: CycleInput, maxorder: int,
                policy_of: Mapping[int, str]) -> tuple[dict[str, PoolTables], dict[str, int]]:
    """NodePool.reset then accountForNonPreemptable: the tables every band starts from, and the
    free space that accounting left each unschedulable machine of known size (`HowMuch.stale_left`:
    reset skips such a machine, so What Of's accounting starts from there)."""
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
        if schedulable(m):
            pool.n[m.order] += 1
            free[m.name] = m.order
    by_name = {m.name: m for m in inp.machines}
    listed = {name: {m.order for m in pool.machines if m.name in free}
              for name, pool in pools.items()}  # the free sizes the pool's tables have a map for
    start = {name: v for name, v in stale_start(inp, policy_of).items() if name not in free}
    stale = {name: v for name, v in start.items() if v}
    old = old_records(inp, policy_of)
    for w in inp.work:  # non-preemptable processes are not there to count
        if policy_of.get(w.job_id) not in (FIXED_SHARE, RESERVE):
            continue
        for s in w.shares:
            if s.stranded and departed(s, inp):
                host = by_name.get(s.host)
                if host is not None and host.name in free and host.nodepool in pools:
                    kept = {host.name: old[host.name]}
                    _account_stale(pools[host.nodepool], listed[host.nodepool], host, s.order,
                                   policy_of[w.job_id] == RESERVE, kept)
                    old[host.name] = kept.get(host.name, 0)
                continue
            host = None if departed(s, inp) else by_name.get(s.host)
            if host is not None and host.name in stale and host.nodepool in pools:
                _account_stale(pools[host.nodepool], listed[host.nodepool], host, s.order,
                               policy_of[w.job_id] == RESERVE, stale)
                continue
            if host is None or host.name not in free:  # (an unschedulable machine is not in the tables)
                continue
            m = host
            pool = pools[m.nodepool]
            pool.frozen = None  # rearrangeVirtual computes nSharesByOrder again
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
    return pools, {name: stale.get(name, 0) for name in start}  # (a machine accounted down to 0 leaves `stale`)


def stale_start(inp: CycleInput, policy_of: Mapping[int, str]) -> dict[str, int]:
    """The free space each unschedulable machine of known size has as How Much's accounting
    begins: `Machine.stale_free`, else, where only What Of's accounting printed it
    (`Machine.stale_free_whatof`), that size plus the fixed and reserved work How Much accounted
    there before: each such move was silent, so it took exactly the process's order."""
    kept = [m for m in inp.machines if in_tables(m, inp)]  # (one out of the tables is never accounted)
    out = {m.name: m.stale_free for m in kept if m.stale_free is not None}
    for m in kept:
        if m.stale_free is None and m.stale_free_whatof is not None:
            out[m.name] = m.stale_free_whatof + sum(
                s.order for w in inp.work if policy_of.get(w.job_id) in (FIXED_SHARE, RESERVE)
                for s in w.shares if s.host == m.name and not departed(s, inp))
    return out


def old_records(inp: CycleInput, policy_of: Mapping[int, str]) -> dict[str, int]:
    """Before 2.1.0, the free space of the old record of each machine that came back new with
    processes stranded on it (`Share.stranded`): `Machine.old_free` (what the last schedule before
    the disable left it, or the cycle's "bad virtual machine list" line), else its order less those
    processes. The key the RM accounts them by is the node's, which the new machine shares, so
    rearrangeVirtual finds the old record "in" the tables and works on its free space, frozen at the
    disable (a reservation alone on its machine: 0, which no table has; "bad virtual machine list")."""
    by_name = {m.name: m for m in inp.machines}
    old: dict[str, int] = {}
    for w in inp.work:
        for s in w.shares:
            if s.stranded and s.host in by_name and policy_of.get(w.job_id) in (FIXED_SHARE, RESERVE):
                old[s.host] = old.get(s.host, by_name[s.host].order) - s.order
    return {h: max(v, 0) if (kept := by_name[h].old_free) is None else kept for h, v in old.items()}


def _account_stale(pool: PoolTables, listed: set[int], m: Machine, order: int, reserve: bool,
                   stale: dict[str, int]) -> None:
    """rearrangeVirtual on a machine reset left out, from the free space it kept (`stale`).

    The RM first takes the machine off the count of its free size, then looks for the table of
    that size: when there is none it stops there ("bad virtual machine list"), the count already
    lowered; when there is one, the machine moves on to the table of what is left, as any other.
    """
    left = stale[m.name]
    take = left if (order > left or reserve) else order
    if left not in listed:  # it stops before computing nSharesByOrder again
        pool.freeze()
    if left == m.order:
        pool.n[m.order] -= 1
    else:
        pool.v[left] -= 1
    if left not in listed:
        return
    pool.frozen = None
    left -= take
    stale[m.name] = left
    if left > 0:
        pool.v[left] += 1
        listed.add(left)
    else:
        del stale[m.name]


# ---------------------------------------------------------------------------------------------
# The cycle


def open_node_order(inp: CycleInput) -> bool:
    """Whether the order the RM meets alike machines in is open: its node map hashes IPs the
    log (before DUCC 3.0.0) never gives (any IP the input has then was inferred)."""
    return not inp.config.behaviours.has("node_ip_logged")


def met_first(inp: CycleInput, names: list[str], first: Sequence[str]) -> list[str]:
    """`names` (in node-map order) with the machines of `first` ahead where that order is open: the
    RM's picks a caller knows (How Much's and clearing's `cleared_first`)."""
    if not first or not open_node_order(inp):
        return names
    return sorted(names, key=lambda n: n not in first)


@dataclass
class CountingCycle:
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
    set_aside: list[SetAside] = field(default_factory=list)  # every countFreeableMachines call, in order
    cleared_first: tuple[str, ...] = ()  # machines met first where the node-map order is open (how_much)
    given_first: tuple[str, ...] = ()  # countFreeableMachines' picks, met first in that order where it is open

    def open_order(self) -> bool:
        """Whether the order the RM meets alike machines in is open (`open_node_order`)."""
        return open_node_order(self.inp)

    def first(self, names: list[str]) -> list[str]:
        """`names` in node-map order, with `cleared_first` ahead where that order is open."""
        return met_first(self.inp, names, self.cleared_first)

    def walk(self, names: list[str]) -> list[str]:
        """`names` in the order countFreeableMachines meets them: node-map order, with `given_first`
        ahead in its order where that order is open (else as `first`)."""
        if not self.given_first or not self.open_order():
            return self.first(names)
        rank = {n: i for i, n in enumerate(self.given_first)}
        return sorted(names, key=lambda n: rank.get(n, len(rank)))

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



# ---------------------------------------------------------------------------------------------
# Allotments


def single_allotment_ok(cyc: CountingCycle, w: Work) -> bool:
    """validSingleAllotment: one more process must keep the user within its allotment."""
    limit = cyc.allotment_gb(w.user)
    if (cyc.np_occupancy(w.user) + w.order) * cyc.quantum_gb > limit:
        cyc.deferred[w.job_id] = f"Deferred because allotment of {limit}GB is exceeded by user {w.user}"
        return False
    return True


def allotment_for_job(cyc: CountingCycle, w: Work) -> int:
    """getAllotmentForJob: processes the job may hold in all, its cap bounded by the user's allotment."""
    limit = cyc.allotment_gb(w.user)
    additional = max(0, limit // cyc.quantum_gb - cyc.np_occupancy(w.user)) // w.order
    if additional == 0:
        if cyc.held(w) == 0:
            cyc.deferred[w.job_id] = f"Deferred because allotment of {limit}GB is exceeded."
        return cyc.held(w)
    return min(cyc.cap(w), cyc.held(w) + additional)

