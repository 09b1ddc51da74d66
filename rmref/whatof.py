"""What Of: which machines the new processes go to, once How Much has set each job's count.

The RM's placement walk (NodepoolScheduler.whatOf*, NodePool.findShares/findMachines):

- Every cycle each nodepool rebuilds, per free-space size v, a java.util.HashMap of its
  schedulable machines with v free quanta ("virtual machines by order"): the pool's machines are
  put in the pool's own node-map order, then every process already running is accounted for,
  moving its machine to the map of its new free space (fixed and reserved work first, then fair
  share). A placement moves the machine again.
- Beside the maps, each pool keeps counts of its machines by free size (nMachinesByOrder for
  wholly free ones, vMachinesByOrder for the rest) and, from them, how many processes of each
  size could be carved out (nSharesByOrder), recomputed after each move; findShares skips a size
  whose carve-out count is 0. The counts are lowered before the map is looked up, so a machine
  the map does not hold (unschedulable at reset, with the free space it kept: `Machine.stale_free`;
  "bad virtual machine list") lowers them without a recount, and the next recount can hide free
  machines from findShares. Reset skips such a machine here as in How Much, so What Of's
  accounting starts from the free space How Much's accounting left it: How Much's output
  `HowMuch.stale_left`, What Of's input `stale_left` (when none is given, What Of works it out
  from the input as rmref's How Much does: `rmref.howmuch_state.stale_after_howmuch`).
- findShares(job) walks free-space sizes i = job order, order+1, ... and, for each, a *clone* of
  that map, in Java HashMap iteration order; on each machine it stacks
  g = min(still needed, free // job order) processes (vertical stacking), and stops when the job
  has its count. A fair-share job that is still short then tries the pool's subpools (by search
  order), recursively.
- Completed work never expands (UIMA-4327): that includes a service or managed reservation
  whose node died, which the purge marks completed.
- Priority tiers go from the best (lowest number) down. Jobs that the previous cycle's
  defragmentation left needy expand first (all tiers), then each tier's normal pass: fair share
  walks the nodepool tree depth first, subpools before their parent, each pool expanding the jobs
  of the classes bound to it, oldest job first (JobByTimeSorter); fixed share places each class's
  jobs without stacking two processes of one service on a machine, and only when that finds
  nothing, with stacking; reservations take whole free machines of exactly their order.

Which of several equally free machines is chosen is decided by the HashMap iteration order,
modelled in rmref.javahash; the order in which `CycleInput.machines` lists the machines is taken
as the order they joined the RM (the order of the pool's node map inserts), and the order of `CycleInput.work` as the
order the RM's class job tables (HashMaps keyed by random UUIDs, so not derivable from ids) list
the jobs; the log shows it (the whatOfFairShare / howMuchFixed "Scheduling job ..." lines). Both
only matter for machines whose keys share a bucket.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from rmref.bands import by_submission, class_map_order, priority_bands
from rmref.behaviours import Behaviours
from rmref.choices import HostTie, met_order, tie_groups
from rmref.evictions import departed, held_now, in_tables
from rmref.howmuch_state import old_records, stale_after_howmuch
from rmref.javahash import JavaHashMap, node_hash, node_map_order, spread, string_hash
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Machine, Placement, Work
from rmref.pool import n_shares_listed
from rmref.trees import trees

_SERVICE_TYPES = ("Service",)


@dataclass
class _Pool:
    """One nodepool's working tables for this cycle (mutable scratch, private to the walk)."""

    name: str
    search_order: int
    children: list[_Pool] = field(default_factory=list)
    machines: JavaHashMap = field(default_factory=JavaHashMap)  # allMachines: the pool's own nodes
    by_free: dict[int, JavaHashMap] = field(default_factory=dict)  # virtualMachinesByOrder
    # nMachinesByOrder + vMachinesByOrder (wholly and partly free machines by free space: only
    # their sum is read), one slot per order
    by_size: list[int] = field(default_factory=list)
    carve: list[int] = field(default_factory=list)  # nSharesByOrder as last recounted
    owed: bool = True  # the RM recounts after every move; done here when next read

    def recount(self) -> None:
        """calcNSharesByOrder: processes of each order the counted free spaces hold."""
        self.carve = n_shares_listed(self.by_size)
        self.owed = False

    def carved(self, size: int) -> int:
        """nSharesByOrder[size] as the RM's last recount left it."""
        if self.owed:
            self.recount()
        return self.carve[size]


@dataclass
class Walk:
    """The state findShares reads and changes: free space per machine and who runs where."""

    jobs: dict[int, Work]  # by id, in `CycleInput.work` order
    machines: dict[str, Machine]
    pools: dict[str, _Pool]
    free: dict[str, int]  # virtual share order: what the pool tables believe is free
    used: dict[str, int]  # quanta held by processes (countFreeShares reads this)
    jobs_on: dict[str, list[int]]  # job ids with a process on the machine
    current: dict[int, int]  # processes a job holds, less those being removed
    placements: list[Placement] = field(default_factory=list)
    # the job whose process walk (random ids) last moved a machine at accounting; None once placed on
    walked_by: dict[str, int | None] = field(default_factory=dict)
    # where that job is fixed share or a reservation, its class: howMuchFixed and the reservations'
    # lines list a class's jobs oldest first, not in the class's job map order (keyed by random ids)
    # that accounting walks them in, so which of the class's jobs moved a machine last no line settles
    walked_in: dict[str, str] = field(default_factory=dict)
    prefer: Mapping[str, int] = field(default_factory=dict)  # rank of a machine within an open order
    ties: list[HostTie] = field(default_factory=list)

    behaviours: Behaviours = field(default_factory=Behaviours)  # the release's (Config.behaviours)
    # per reservation findMachines expanded: the free machines of its size it found (countFreeMachines)
    free_found: dict[int, int] = field(default_factory=dict)
    tables: list[TableWalk] = field(default_factory=list)  # findShares' walks of free-space tables, in order


@dataclass(frozen=True)
class TableWalk:
    """One walk findShares made of a free-space table's clone: the machines in the order met, the clone's
    buckets, and the placements it made (`first` to `end`, indices into What Of's placements)."""

    job_id: int
    hosts: tuple[str, ...]
    capacity: int
    first: int
    end: int


@dataclass(frozen=True)
class WhatOf:
    """What Of's placements and the choices it made by an order its input leaves open."""

    placements: tuple[Placement, ...]
    ties: tuple[HostTie, ...] = ()
    free_found: tuple[tuple[int, int], ...] = ()  # (reservation, free machines its findMachines found)
    tables: tuple[TableWalk, ...] = ()  # the free-space tables findShares walked (they decide ties by node hash)


def _hash(machine: Machine) -> int:
    return node_hash(machine.name, machine.ip)


def _schedulable(machine: Machine) -> bool:
    return machine.online and not machine.blacklisted


def _policy(cls: ClassDef | None) -> str:
    """The class's policy, FAIR_SHARE when unknown."""
    if cls is None:
        return FAIR_SHARE
    return cls.policy if cls.policy in (FIXED_SHARE, RESERVE) else FAIR_SHARE


def _build_pools(inp: CycleInput) -> dict[str, _Pool]:
    pools = {p.name: _Pool(p.name, p.search_order) for p in inp.nodepools}
    children: dict[str, JavaHashMap] = {}
    for p in inp.nodepools:  # NodePool.children is a HashMap keyed by pool name
        if p.parent in pools:
            children.setdefault(p.parent, JavaHashMap()).put(p.name, string_hash(p.name))
    for parent, names in children.items():
        kids = [pools[n] for n in names]
        pools[parent].children = sorted(kids, key=lambda k: k.search_order)  # stable, like Collections.sort
    for m in inp.machines:
        if m.nodepool in pools:
            pools[m.nodepool].machines.put(m.name, _hash(m))
    return pools


def roots(inp: CycleInput) -> list[str]:
    """Top-level nodepools, by search order."""
    names = {p.name for p in inp.nodepools}
    top = [p for p in inp.nodepools if p.parent not in names]
    return [p.name for p in sorted(top, key=lambda p: p.search_order)]


def start_walk(inp: CycleInput, stale_left: Mapping[str, int] | None = None) -> Walk:
    """NodePool.reset then accountForNonPreemptable and accountForFairShare, each unschedulable
    machine from the free space How Much's accounting left it (`stale_left`, `HowMuch.stale_left`;
    None: worked out from `inp`, `stale_after_howmuch`)."""
    machines = {m.name: m for m in inp.machines}
    pools = _build_pools(inp)
    jobs = {w.job_id: w for w in inp.work}
    stale_end = stale_after_howmuch(inp) if stale_left is None else stale_left
    size = max([m.order for m in inp.machines] + [w.order for w in inp.work] + [1]) + 1  # NodePool.getArraySize
    walk = Walk(jobs, machines, pools, {}, {n: 0 for n in machines}, {n: [] for n in machines}, {},
                 behaviours=inp.config.behaviours)
    for pool in pools.values():
        pool.by_size = [0] * size
        for name in pool.machines:
            m = machines[name]
            if _schedulable(m):
                walk.free[name] = m.order
                pool.by_size[m.order] += 1
                pool.by_free.setdefault(m.order, JavaHashMap()).put(name, _hash(m))
            else:  # reset leaves it the free space How Much's accounting left it (when the log showed it)
                kept = stale_end.get(name)
                walk.free[name] = m.order if kept is None else kept
    old = old_records(inp, {w.job_id: _policy(inp.class_of(w)) for w in inp.work})
    for work in _accounting_order(inp):
        for share in sorted(work.shares, key=lambda s: s.share_id):
            if share.stranded and not share.purged and share.host in old and departed(share, inp):
                _move_old(walk, share.host, share.order, old)
            elif share.host in machines and not departed(share, inp):
                walk.used[share.host] += share.order
                walk.jobs_on[share.host].append(work.job_id)
                if in_tables(machines[share.host], inp):
                    _move(walk, share.host, share.order, _policy(inp.class_of(work)))
                walk.walked_by[share.host] = work.job_id
                if _policy(inp.class_of(work)) == FAIR_SHARE:
                    walk.walked_in.pop(share.host, None)
                else:
                    walk.walked_in[share.host] = work.class_name
    walk.current.update(held_now(inp))
    return walk


def _accounting_order(inp: CycleInput) -> list[Work]:
    """accountForNonPreemptable then accountForFairShare: classes in the RM's class-map order, jobs in
    `inp.work` order."""
    ordered: list[Work] = []
    for wanted in ((FIXED_SHARE, RESERVE), (FAIR_SHARE,)):
        for c in class_map_order(inp.classes):
            if _policy(c) in wanted:
                ordered.extend(w for w in inp.work if w.class_name == c.name)
    return ordered


def _move(walk: Walk, host: str, order: int, policy: str) -> None:
    """NodePool.rearrangeVirtual: a process of `order` now occupies `host`; move it to its new free-space map."""
    machine = walk.machines[host]
    pool = walk.pools.get(machine.nodepool)
    if pool is None:
        return
    v = walk.free[host]
    if order > v:  # more than is free (a resized node): count the machine as full (2.0.x indexes a
        order = v  # negative free space there and its pass fails, which rmref does not model)
    elif order < v and policy == RESERVE and walk.behaviours.has("free_space_clamped"):
        order = v  # a reservation always takes the whole machine
    table = pool.by_free.get(v)
    if table is None:  # no map of its free size ("bad virtual machine list"): counts lowered, no recount
        if pool.owed:  # (the recount the last move made comes before this change)
            pool.recount()
        pool.by_size[v] -= 1
        return
    pool.by_size[v] -= 1
    table.remove(host)
    walk.free[host] = v - order
    if v - order:
        pool.by_free.setdefault(v - order, JavaHashMap()).put(host, _hash(machine))
        pool.by_size[v - order] += 1
    pool.owed = True


def _move_old(walk: Walk, host: str, order: int, old: dict[str, int]) -> None:
    """rearrangeVirtual on a machine's old record (before 2.1.0: `Share.stranded`), which its key
    finds in the tables once the node is back as a new machine: from the free space the old record
    kept (`old`), which no reset touches. With no map of that size ("bad virtual machine list") it
    only lowers that size's count, which is what findShares then reads (nSharesByOrder); with one,
    the counts move on as for any machine (the RM also puts the old record in that size's map, under
    the node's key, which rmref does not model)."""
    machine = walk.machines[host]
    pool = walk.pools.get(machine.nodepool)
    if pool is None or not _schedulable(machine):
        return
    v = old[host]
    if pool.owed:  # (the recount the last move made comes before this change)
        pool.recount()
    pool.by_size[v] -= 1
    if v not in pool.by_free:
        return
    old[host] = left = v - min(order, v)
    if left:
        pool.by_size[left] += 1
    pool.owed = True


def _service_id(work: Work) -> int:
    """RmJob.getServiceId: 0 for everything but services (we take the job id as a service's id)."""
    return work.job_id if work.work_type in _SERVICE_TYPES else 0


def _conflicts(walk: Walk, host: str, work: Work) -> bool:
    """Machine.hasVerticalConflict: the machine already runs a process of the same service id."""
    sid = _service_id(work)
    return any(_service_id(walk.jobs[j]) == sid for j in walk.jobs_on[host] if j in walk.jobs)


def _place(walk: Walk, work: Work, host: str, policy: str) -> None:
    """connectShare: record the process and update the tables."""
    walk.placements.append(Placement(work.job_id, host, work.order))
    walk.used[host] += work.order
    walk.jobs_on[host].append(work.job_id)
    walk.current[work.job_id] = walk.current.get(work.job_id, 0) + 1
    walk.walked_by[host] = None
    walk.walked_in.pop(host, None)
    _move(walk, host, work.order, policy)


def _find_shares(walk: Walk, pool: _Pool, work: Work, counts: Mapping[int, int], policy: str,
                 vertical: bool = True) -> int:
    """NodePool.findShares: place up to count - current processes of `work` in `pool` (and, for fair
    share, or for any work before 2.1.0, its subpools)."""
    needed = counts.get(work.job_id, 0) - walk.current.get(work.job_id, 0)
    if needed <= 0 or work.order <= 0 or work.cap_input.completed:
        return 0
    given = 0
    for size in range(work.order, max(pool.by_free, default=0) + 1):
        table = pool.by_free.get(size)
        if not table or not pool.carved(size):  # nSharesByOrder says nothing is here
            continue
        g = _walk_table(walk, table, work, needed, policy, vertical)
        given += g
        needed -= g
        if needed == 0:
            return given
    if needed > 0 and (policy not in (FIXED_SHARE, RESERVE) or not walk.behaviours.has("subpools_for_fair_share_only")):
        for child in pool.children:
            g = _find_shares(walk, child, work, counts, policy)
            given += g
            needed -= g
            if needed <= 0:
                break
    return given


def _walk_table(walk: Walk, table: JavaHashMap, work: Work, needed: int, policy: str, vertical: bool) -> int:
    """findShares over one free-space table (a clone, in HashMap order): stack processes machine by
    machine until `needed` are placed; returns how many were.

    Machines in one bucket of the table (and of its clone) whose last move came from one job's
    process walk at accounting met in an order no input settles: rmref meets them in its own
    order (or by `walk.prefer`) and, where that order decided what the job got, records a tie."""
    clone = table.clone()
    hosts = list(clone)

    def capacity(host: str) -> int:
        return (walk.machines[host].order - walk.used[host]) // work.order

    def usable(host: str) -> bool:
        return _schedulable(walk.machines[host]) and (vertical or not _conflicts(walk, host, work))

    def key(host: str) -> tuple[int, int, int | str, int] | None:
        by = walk.walked_by.get(host)
        if by is None or not usable(host):
            return None
        h = spread(_hash(walk.machines[host]))
        return h & (table.capacity - 1), h & (clone.capacity - 1), walk.walked_in.get(host, by), capacity(host)

    groups = tie_groups(hosts, key)
    met = met_order(hosts, groups, walk.prefer)
    walked_by = {i: walk.walked_by.get(hosts[group[0]]) for i, group in enumerate(groups)}
    # a class named only where its jobs, not one job's processes, left the order open
    walked_in = {i: walk.walked_in.get(hosts[group[0]], "") if len({walk.walked_by.get(hosts[k]) for k in group}) > 1
                 else "" for i, group in enumerate(groups)}
    got: dict[str, int] = {}
    given = 0
    first = len(walk.placements)
    for host in met:
        if needed - given == 0:
            break
        if not usable(host):
            continue
        g = min(needed - given, capacity(host))
        for _ in range(g):
            _place(walk, work, host, policy)
        got[host] = g
        given += g
    walk.tables.append(TableWalk(work.job_id, tuple(met), clone.capacity, first, len(walk.placements)))
    for i, group in enumerate(groups):
        members = tuple(met[k] for k in group)
        counts = tuple(got.get(h, 0) for h in members)
        if len(set(counts)) > 1:
            walk.ties.append(HostTie(work.job_id, members, counts, walked_by[i] or 0, walked_in[i]))
    return given


def _find_machines(walk: Walk, pool: _Pool, work: Work, counts: Mapping[int, int]) -> None:
    """NodePool.findMachines: a reservation takes wholly free machines of exactly its order in its own pool."""
    needed = counts.get(work.job_id, 0) - walk.current.get(work.job_id, 0)
    if needed <= 0 or work.cap_input.completed:
        return
    # machinesByOrder[order] is filled as nodes arrive (`walk.machines` keeps the input's arrival
    # order); the pool's own node map (`pool.machines`) iterates in another order
    same_order = [m for m in walk.machines.values() if m.nodepool == pool.name and m.order == work.order]
    walk.free_found[work.job_id] = sum(1 for m in same_order if _schedulable(m) and walk.used[m.name] == 0
                                       and not walk.jobs_on[m.name])
    for host in node_map_order([(m.name, m.ip) for m in same_order]):
        m = walk.machines[host]
        if _schedulable(m) and walk.used[host] == 0 and not walk.jobs_on[host]:
            _place(walk, work, host, RESERVE)
            needed -= 1
            if needed == 0:
                return


def _expand_pool_jobs(walk: Walk, pool: _Pool, jobs: list[Work], counts: Mapping[int, int], policy: str) -> None:
    """Expand jobs of one policy in one pool, oldest first (doExpansion, or the needy fixed/reserve loops)."""
    for w in sorted(jobs, key=by_submission):
        if policy == RESERVE:
            _find_machines(walk, pool, w, counts)
        else:  # needy fixed-share jobs may stack (findShares with vertical allowed)
            _find_shares(walk, pool, w, counts, policy)


def _needy_pass(walk: Walk, pool: _Pool, tier: list[ClassDef], counts: Mapping[int, int], needy: set[int]) -> None:
    """expandNeedyJobs: subpools first, then this pool's needy jobs of the tier: reservations, fixed, fair."""
    for child in pool.children:
        _needy_pass(walk, child, tier, counts, needy)
    classes = {c.name: c for c in tier if c.nodepool == pool.name}
    mine = [w for w in walk.jobs.values() if w.job_id in needy and w.class_name in classes]
    for policy in (RESERVE, FIXED_SHARE, FAIR_SHARE):
        jobs = [w for w in mine if _policy(classes[w.class_name]) == policy]
        if jobs:
            _expand_pool_jobs(walk, pool, jobs, counts, policy)
        needy.difference_update(w.job_id for w in jobs)


def _fair_pass(walk: Walk, pool: _Pool, tier: list[ClassDef], counts: Mapping[int, int]) -> None:
    """traverseNodepoolsForExpansion: subpools first, then the jobs of the classes bound to this pool."""
    for child in pool.children:
        _fair_pass(walk, child, tier, counts)
    names = {c.name for c in tier if c.nodepool == pool.name}
    jobs = [w for w in walk.jobs.values() if w.class_name in names]
    if jobs:
        _expand_pool_jobs(walk, pool, jobs, counts, FAIR_SHARE)


def _fixed_pass(walk: Walk, tier: list[ClassDef], counts: Mapping[int, int]) -> None:
    """whatOfFixedShare: per class, oldest job first; no stacking of one service first, stacking if
    that found nothing."""
    for c in tier:
        pool = walk.pools.get(c.nodepool)
        if pool is None:
            continue
        for w in sorted((w for w in walk.jobs.values() if w.class_name == c.name), key=by_submission):
            if counts.get(w.job_id, 0) <= walk.current.get(w.job_id, 0):
                continue
            if not walk.behaviours.has("service_horizontal_stacking"):  # one stacking findShares
                _find_shares(walk, pool, w, counts, FIXED_SHARE, vertical=True)
                continue
            _find_shares(walk, pool, w, counts, FIXED_SHARE, vertical=False)
            if walk.current.get(w.job_id, 0) == 0:
                _find_shares(walk, pool, w, counts, FIXED_SHARE, vertical=True)


def _reserve_pass(walk: Walk, tier: list[ClassDef], counts: Mapping[int, int]) -> None:
    """whatOfReserve: per class, oldest reservation first."""
    for c in tier:
        pool = walk.pools.get(c.nodepool)
        if pool is None:
            continue
        for w in sorted((w for w in walk.jobs.values() if w.class_name == c.name), key=by_submission):
            _find_machines(walk, pool, w, counts)


def _needy_jobs(inp: CycleInput) -> set[int]:
    """The RM's needy list: a TreeMap on JobByTimeSorter, so of jobs that tie (same submission
    time and order) one entry stays, holding the last one put. The RM puts them in the order of a
    map keyed by random job ids; `inp.needy` stands in for it (the caller drops the jobs it
    knows were left off)."""
    work = {w.job_id: w for w in inp.work}
    kept: dict[tuple[int, int], int] = {}
    for job in inp.needy:
        w = work.get(job)
        kept[by_submission(w) if w else (job, 0)] = job
    return set(kept.values())


def what_of(inp: CycleInput, counts: Mapping[int, int], prefer: Mapping[str, int] | None = None,
            stale_left: Mapping[str, int] | None = None) -> tuple[Placement, ...]:
    """The new processes of the cycle (job, host, order), in the order the RM creates them
    (each top-level pool tree by its own scheduler, one tree after the other: rmref.trees)."""
    return what_of_choices(inp, counts, prefer, stale_left).placements


def what_of_choices(inp: CycleInput, counts: Mapping[int, int], prefer: Mapping[str, int] | None = None,
                    stale_left: Mapping[str, int] | None = None) -> WhatOf:
    """What Of's placements and its ties (`rmref.choices.HostTie`: the machines it met in an order
    no input settles, where that order decided a job's placement). `prefer` ranks machines within
    such an order (a caller that knows the RM's pick passes it, so the rest of the walk follows);
    `stale_left` is How Much's `HowMuch.stale_left` (None: worked out from `inp`, see `start_walk`)."""
    parts = [_what_of_tree(tree, counts, prefer or {}, stale_left) for tree in trees(inp)]
    tables, offset = [], 0
    for w in parts:  # each tree's walks, by their placements' place among all the trees'
        tables += [replace(t, first=t.first + offset, end=t.end + offset) for t in w.tables]
        offset += len(w.placements)
    return WhatOf(tuple(p for w in parts for p in w.placements), tuple(t for w in parts for t in w.ties),
                  tuple(f for w in parts for f in w.free_found), tuple(tables))


def free_at_find_machines(inp: CycleInput, counts: Mapping[int, int],
                          stale_left: Mapping[str, int] | None = None) -> dict[int, int]:
    """Per reservation What Of expands, the free machines of its size findMachines finds
    (countFreeMachines), after the placements of the passes before it: setupPreemptions is asked
    only for what they leave short (rmref.clearing)."""
    return dict(what_of_choices(inp, counts, None, stale_left).free_found)


def unschedulable_free(inp: CycleInput, stale_left: Mapping[str, int] | None = None) -> dict[str, int]:
    """The free space What Of's accounting leaves on each machine that cannot be scheduled on and
    holds work or a known stale size: NodePool.reset skips it, so accounting moves its stale value
    (How Much's `stale_left`, as `start_walk` reads it) only where a table of that size exists.
    Defragmentation reads it as the machine's virtual share order."""
    out: dict[str, int] = {}
    for tree in trees(inp):
        held = {s.host for w in tree.work for s in w.shares}
        if any(not _schedulable(m) and (m.name in held or m.stale_free is not None or m.stale_free_whatof is not None)
               for m in tree.machines):
            walk = start_walk(tree, stale_left)
            out.update((name, walk.free[name]) for name, m in walk.machines.items() if not _schedulable(m))
    return out


def _what_of_tree(inp: CycleInput, counts: Mapping[int, int], prefer: Mapping[str, int],
                  stale_left: Mapping[str, int] | None) -> WhatOf:
    """What Of for one top-level pool tree."""
    walk = start_walk(inp, stale_left)
    walk.prefer = prefer
    tiers = priority_bands(inp.classes)
    top = [walk.pools[n] for n in roots(inp)]
    needy = _needy_jobs(inp)
    for tier in tiers:
        for pool in top:
            _needy_pass(walk, pool, tier, counts, needy)
    for tier in tiers:
        policy = tier[0].policy
        if policy == FIXED_SHARE:
            _fixed_pass(walk, tier, counts)
        elif policy == RESERVE:
            _reserve_pass(walk, tier, counts)
        else:
            for pool in top:
                _fair_pass(walk, pool, tier, counts)
    return WhatOf(tuple(walk.placements), tuple(walk.ties), tuple(walk.free_found.items()), tuple(walk.tables))
