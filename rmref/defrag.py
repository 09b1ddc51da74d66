"""Defragmentation: the last phase of a cycle (NodepoolScheduler.insureFullEviction).

How Much counts processes on an idealised, unfragmented cluster; What Of may not find room for
them all. Defragmentation finds the jobs that came out short and takes space from "rich" jobs:

1. Detection (detectFragmentation). A job is *potentially needy* when it holds fewer processes
   than it was counted (held = assigned + new - being removed). A fair-share job only if it holds
   fewer than the fragmentation threshold and fewer than its pure fair share (the share it
   deserves before any bonus), and then for at most `threshold` processes; fixed-share and reserve
   work whenever it is short. All potentially needy jobs go on the RM's needy list, which What Of
   serves first in the next cycle. Then each pool tallies the space that is free or will be once
   the processes being removed are gone (per machine, propagated to every ancestor pool), and a
   job whose shortfall that space cannot cover is *actually needy*. (The RM only subtracts the
   space a job uses from the tally when the job is partly covered, never when fully covered.)
2. Donors (doFinalEvictions), for each actually needy job: the fair-share jobs of classes in a
   compatible nodepool (one pool contains the other) whose priority is not better. A job is a
   *rich* candidate when it holds processes, is not needy itself, is initialized and holds at
   least the threshold; when the needy job's priority is strictly better, the others in such
   classes are *poor* candidates, tried only if the rich ones do not give enough. A user's wealth
   is the quantum shares its candidate jobs hold.
3. takeFromTheRich: machines of the needy job's pool tree that are big enough and whose free space
   plus candidate processes could make room are eligible (a reservation also wants an exact-size
   machine holding only candidates). They are tried richest user first, then largest memory;
   on the first that can make room, candidate processes are cleared, richest owner first (an
   exact size match jumps the queue), until there is room for one process: a process not yet
   started is handed to the needy job when it has the same size and dropped otherwise, a running
   one is evicted. The machines are re-sorted (wealth changed) and the round repeats until the
   job has what it needs or nothing more is found.

Equal candidates are ordered as the RM's java.util collections order them: TreeMaps whose
comparators never tie put a newcomer before its equals; machine maps iterate in HashMap order
(rmref.javahash, machines put in `CycleInput.machines` order). Jobs, shares and users are hashed
by random UUIDs, so the order in which needy jobs are served cannot be computed: the caller may
pass it (`job_order`, e.g. from the log); otherwise jobs go by id.

Some of those orders are not settled by the input at all. Shares of equally wealthy owners go by
RmJob.compareInvestment: two processes still initializing by initialization time, and on a tie
(new processes have none) the comparator says "equal", so the sort keeps the machine's share
HashMap order, keyed by the shares' random ids; two initialized processes of different jobs by
their investment, which an input may give only as each job's own ranking
(`CycleInput.investment_ranked`). Where such an order decided which shares were cleared, or in
what order, rmref picks one and says so (`Defrag.unsettled`).

Users' wealth lives on in the RM between cycles: the machine and share orders read the wealth of
*every* user with a process there, including users that were not candidates this time, whose
value is the one left by the last defragmentation that counted them. `Defrag.wealth` returns it
so a caller can pass it to the next cycle.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import product

import numpy as np

from rmref.choices import MAX_OPEN, allowed_orders, linear_orders
from rmref.constants import CANCEL, EVICT, REASSIGN
from rmref.evictions import HeldShare, investment_key
from rmref.javahash import JavaHashMap, node_hash, string_hash
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, CycleInput, DefragAction, Eviction, Machine, Placement, Work
from rmref.pool import n_shares_by_order, remove_shares
from rmref.trees import trees
from rmref.whatof import unschedulable_free

_MASK = 0xFFFFFFFF


@dataclass(frozen=True)
class TakeFromTheRich:
    """One takeFromTheRich call: what the needy job asked for and how many processes it made room for."""

    needy_job: int
    needed: int
    given: int


# Why the RM's order of two shares is not settled by the input (Unsettled.reasons)
INVESTMENT = "investment"  # initialized processes of different jobs: only each job's own ranking is known
SHARE_MAP = "share map"  # the comparator ties: the machine's share HashMap order (random share ids)
NODE_IP = "node ip"  # machines of equal wealth and memory: a map hashed on node IPs the log never shows


@dataclass(frozen=True)
class Unsettled:
    """A machine where takeFromTheRich's choice rested on an order of shares its input does not settle."""

    needy_job: int
    host: str
    shares: tuple[tuple[int, int], ...]  # (job, share id; 0 for a new process) of the shares in question
    reasons: tuple[str, ...]  # INVESTMENT, SHARE_MAP and/or NODE_IP
    action: int  # index in Defrag.actions of the first action the choice decided
    # every set of shares (job, share id; 0 for a new process), in clearing order, the round could
    # clear by an order of the shares in question the input allows (empty: too many to list)
    alternatives: tuple[tuple[tuple[int, int], ...], ...] = ()
    taken: int = 0  # the alternative cleared
    tied: tuple[str, ...] = ()  # NODE_IP: the other eligible machines met in the same open node-map order


Verdict = tuple[tuple[int, int], ...]  # actually needy jobs and what they still need, sorted


@dataclass(frozen=True)
class Defrag:
    """What defragmentation decided in one cycle."""

    needy: dict[int, int]  # actually needy job -> processes it still needs
    take_from_the_rich: tuple[TakeFromTheRich, ...]
    actions: tuple[DefragAction, ...]  # in the order the RM cleared the shares
    carried: tuple[int, ...] = ()  # the needy list What Of serves first next cycle (potentially needy jobs)
    wealth: dict[str, int] = field(default_factory=dict)  # users' share wealth as the RM keeps it afterwards
    unsettled: tuple[Unsettled, ...] = ()  # choices that rest on an order the input does not settle
    # detectFragmentation's verdict for every order of tallying jobs the caller's known pairs allow
    # (`known_order`), rmref's own among them
    verdicts: tuple[Verdict, ...] = ()


# ---------------------------------------------------------------------------------------------
# Working state (mutable scratch, private to one call)


@dataclass
class _Share:
    share_id: int  # 0 for a new process: the RM numbers it, we do not predict the number
    job_id: int
    host: str
    order: int
    pending: bool  # placed this cycle, not yet published (can be handed over or dropped)
    evicted: bool
    initialized: bool
    init_ms: int
    investment: int


@dataclass
class _Job:
    work: Work
    policy: str
    priority: int
    pool: str
    counted: int
    pure_fs: int
    shares: list[_Share] = field(default_factory=list)

    @property
    def held(self) -> int:
        """countNShares: assigned plus new, less those being removed."""
        return sum(1 for s in self.shares if not s.evicted)


@dataclass
class _Node:
    machine: Machine
    virtual: int  # free space as What Of left it (the RM does not update it during defrag)
    shares: list[_Share] = field(default_factory=list)  # activeShares

    def freed_up(self) -> int:
        """countFreedUpShares: unused space plus the space of processes being removed."""
        used = sum(s.order for s in self.shares if not s.evicted)
        return self.machine.order - used


@dataclass
class _State:
    inp: CycleInput
    jobs: dict[int, _Job]
    nodes: dict[str, _Node]
    children: dict[str, list[str]]  # pool -> child pools in the RM's HashMap order
    parent: dict[str, str | None]
    threshold: int
    max_order: int
    rank: dict[int, int]  # job id -> position in the RM's job HashMap order
    wealth: dict[str, int]
    actions: list[DefragAction] = field(default_factory=list)
    calls: list[TakeFromTheRich] = field(default_factory=list)
    unsettled: list[Unsettled] = field(default_factory=list)
    known: Container[tuple[int, int]] | None = None  # pairs of jobs whose tally order is known
    choose: Mapping[str, frozenset[tuple[int, int]]] = field(default_factory=dict)  # the RM's clearings


def _identity_hash(m: Machine) -> int:
    """Machine.hashCode (NodeIdentity's): the node-map key hash less DuccNode's own 31."""
    return (node_hash(m.name, m.ip) - 31) & _MASK


def _user_of(state: _State, job_id: int) -> str:
    return state.jobs[job_id].work.user


def _build(inp: CycleInput, counts: Mapping[int, int], placements: Sequence[Placement],
           evictions: Sequence[Eviction], pure_fair_share: Mapping[int, int],
           job_order: Sequence[int], wealth: Mapping[str, int] | None) -> _State:
    """The scheduler's state after What Of and the shrink evictions: what defragmentation starts from."""
    classes = {c.name: c for c in inp.classes}
    pools = {p.name for p in inp.nodepools}
    evicted = {(e.job_id, e.share_id) for e in evictions}
    jobs: dict[int, _Job] = {}
    nodes = {m.name: _Node(m, m.order) for m in inp.machines}
    for w in inp.work:
        cls = classes.get(w.class_name)
        if cls is None:
            continue
        policy = cls.policy if cls.policy in (FIXED_SHARE, RESERVE) else FAIR_SHARE
        job = _Job(w, policy, cls.priority, cls.nodepool, counts.get(w.job_id, 0), pure_fair_share.get(w.job_id, 0))
        for held in sorted(w.shares, key=lambda s: s.share_id):
            job.shares.append(_Share(held.share_id, w.job_id, held.host, held.order, False,
                                     held.pending_removal or (w.job_id, held.share_id) in evicted,
                                     held.initialized, held.init_ms, held.investment))
        jobs[w.job_id] = job
    for placed in placements:
        if placed.job_id in jobs:
            jobs[placed.job_id].shares.append(_Share(0, placed.job_id, placed.host, placed.order, True, False, False,
                                                     0, 0))
    for job in jobs.values():
        for s in job.shares:
            node = nodes.get(s.host)
            if node is None:
                continue
            node.shares.append(s)
            # What Of's tables: every process (even one being removed) occupies its space; a
            # reservation takes the whole machine
            take = node.virtual if job.policy == RESERVE else min(s.order, node.virtual)
            node.virtual -= take
    for host, free in unschedulable_free(inp).items():  # reset skipped these: their stale value
        nodes[host].virtual = free
    children: dict[str, JavaHashMap] = {}
    for p in inp.nodepools:  # NodePool.children: a HashMap keyed by pool name
        if p.parent in pools:
            children.setdefault(p.parent, JavaHashMap()).put(p.name, string_hash(p.name))
    max_order = max([m.order for m in inp.machines] + [w.order for w in inp.work] + [1])
    listed = list(dict.fromkeys(job_order))
    rank = {j: i for i, j in enumerate(listed)}
    for j in sorted(jobs):
        rank.setdefault(j, len(listed) + j)
    return _State(inp, jobs, nodes, {k: list(v) for k, v in children.items()},
                  {p.name: (p.parent if p.parent in pools else None) for p in inp.nodepools},
                  inp.config.fragmentation_threshold, max_order, rank, dict(wealth or {}))


# ---------------------------------------------------------------------------------------------
# Nodepool tree


def _post_order(state: _State) -> list[str]:
    """getNodepools: every pool, children (in HashMap order) before their parent."""
    out: list[str] = []

    def visit(name: str) -> None:
        for child in state.children.get(name, []):
            visit(child)
        out.append(name)

    for root in (name for name, parent in state.parent.items() if parent is None):
        visit(root)
    return out


def _contains(state: _State, outer: str, inner: str) -> bool:
    """NodePool.containsSubpool: `inner` is `outer` or lies below it."""
    name: str | None = inner
    while name is not None:
        if name == outer:
            return True
        name = state.parent.get(name)
    return False


def _own_machines(state: _State, pool: str) -> JavaHashMap:
    table = JavaHashMap()
    for m in state.inp.machines:
        if m.nodepool == pool:
            table.put(m.name, node_hash(m.name, m.ip))
    return table


def _all_machines(state: _State, pool: str) -> JavaHashMap:
    """NodePool.getAllMachines: a clone of the pool's node map, each subpool's putAll in after
    (into the clone of an empty map, putAll sizes the table by the subpool's count)."""
    table = _own_machines(state, pool).clone()
    for child in state.children.get(pool, []):
        table.put_all(_all_machines(state, child).entries())
    return table


# ---------------------------------------------------------------------------------------------
# Detection


def _potential_need(state: _State, job: _Job) -> int:
    """detectFragmentation's first pass: processes a job is short (0 when not potentially needy)."""
    if job.work.cap_input.refused:
        return 0
    held, needed = job.held, job.counted - job.held
    if job.policy != FAIR_SHARE:  # fixed share and reservations: always, if short
        return max(needed, 0)
    if held >= state.threshold or held >= job.pure_fs or needed <= 0:
        return 0
    return min(needed, state.threshold)


def _detect(state: _State) -> tuple[dict[int, int], list[int], tuple[Verdict, ...]]:
    """Actually needy jobs (job -> processes still needed), the potentially needy ones, and the
    verdicts every tally order the known pairs allow would give."""
    potential: dict[str, dict[int, int]] = {}
    for job in state.jobs.values():
        need = _potential_need(state, job)
        if need > 0:
            potential.setdefault(job.pool, {})[job.work.job_id] = need
    if not potential:
        return {}, [], ((),)
    pools = _post_order(state)
    size = state.max_order + 1
    vfree = {p: np.zeros(size, dtype=np.int64) for p in pools}
    for pool in pools:  # space free now or once removals finish, per machine, up the tree
        for name in _own_machines(state, pool):
            free = state.nodes[name].freed_up()
            if free <= 0:  # (less than none only on a node that shrank; the RM would fail there)
                continue
            up: str | None = pool
            while up is not None:
                free = min(free, size - 1)
                vfree[up][free] += 1
                up = state.parent.get(up)
    orders = {p: sorted(potential.get(p, {}), key=state.rank.__getitem__) for p in pools}
    needy = _tally(state, potential, vfree, orders)
    verdicts = {tuple(sorted(needy.items()))}
    for other in allowed_orders(orders, state.known):
        verdicts.add(tuple(sorted(_tally(state, potential, vfree, other).items())))
    carried = sorted(j for jobs in potential.values() for j in jobs)
    return needy, carried, tuple(sorted(verdicts))


def _tally(state: _State, potential: Mapping[str, Mapping[int, int]], free: Mapping[str, np.ndarray],
           orders: Mapping[str, Sequence[int]]) -> dict[int, int]:
    """Each pool's potentially needy jobs in `orders`, each covered by the tallied free space or
    actually needy for what it lacks (the space it could get comes out of the tally)."""
    vfree = {p: v.copy() for p, v in free.items()}
    needy: dict[int, int] = {}
    for pool, jobs in orders.items():
        for job_id in jobs:
            needed = potential[pool][job_id]
            order = state.jobs[job_id].work.order
            available = int(n_shares_by_order(vfree[pool])[order])
            if available >= needed:
                continue  # covered; the RM does not take the space out of the tally here
            needed -= available
            up: str | None = pool
            while up is not None:
                remove_shares(vfree[up], available, order)
                up = state.parent.get(up)
            needy[job_id] = needed
    return needy


# ---------------------------------------------------------------------------------------------
# Donors


def _candidates(state: _State, needy_id: int, needy: Mapping[int, int]) -> tuple[set[int], set[int]]:
    """doFinalEvictions: the rich and the poor (backup) donor jobs for one needy job.

    The RM keeps them (and the users, by wealth) in sorted TreeMaps, but only ever asks whether a
    job is among them, so plain sets do.
    """
    nj = state.jobs[needy_id]
    rich: set[int] = set()
    poor: set[int] = set()
    classes = {c.name: c for c in state.inp.classes}
    for job in state.jobs.values():
        cls = classes[job.work.class_name]
        if job.policy != FAIR_SHARE:  # fixed share and reservations are never preempted
            continue
        if not (_contains(state, nj.pool, cls.nodepool) or _contains(state, cls.nodepool, nj.pool)):
            continue
        if nj.priority > cls.priority:  # the donors' class is better
            continue
        backup = nj.priority < cls.priority  # a better needy job may fall back on the poor
        held = job.held
        if held == 0:
            continue
        # RmJob.isInitialized: some process of the job has reported the end of its initialization
        if (job.work.job_id in needy or not any(s.initialized for s in job.work.shares)
                or held < state.threshold):
            if backup:
                poor.add(job.work.job_id)
            continue
        rich.add(job.work.job_id)
    return rich, poor


def _collect_wealth(state: _State, candidates: set[int]) -> None:
    """collectWealth: each candidate user's wealth is the quantum shares its candidate jobs hold."""
    totals: dict[str, int] = {}
    for job_id in candidates:
        job = state.jobs[job_id]
        totals[job.work.user] = totals.get(job.work.user, 0) + job.held * job.work.order
    state.wealth.update(totals)


# ---------------------------------------------------------------------------------------------
# takeFromTheRich


def _forceable(share: _Share) -> bool:
    return not share.evicted


def _machine_wealth(state: _State, node: _Node) -> int:
    """EligibleMachineSorter: the wealth of the richest user with a process on the machine."""
    return max((state.wealth.get(_user_of(state, s.job_id), 0) for s in node.shares), default=0)


def _sorted_machines(state: _State, names: Sequence[str]) -> list[str]:
    """A TreeMap on EligibleMachineSorter filled in `names` order: a newcomer goes before its equals."""
    out: list[str] = []
    keys: list[tuple[int, int]] = []
    for name in names:
        node = state.nodes[name]
        key = (-_machine_wealth(state, node), -node.machine.memory_mb)
        at = next((i for i, k in enumerate(keys) if k >= key), len(keys))
        out.insert(at, name)
        keys.insert(at, key)
    return out


def _rehash(state: _State, names: Sequence[str]) -> list[str]:
    """new HashMap<Machine, Machine>().putAll(treemap): machines in Machine.hashCode order."""
    table = JavaHashMap()
    table.put_all((name, _identity_hash(state.nodes[name].machine)) for name in names)
    return list(table)


def _share_key(state: _State, share: _Share) -> tuple[int, tuple[int, int, int, int, int]]:
    """ShareByWealthSorter: richest owner first, then the least investment (RmJob.compareInvestment)."""
    # no map_rank: ties here keep the machine's share map order, not the job's (see _undecided)
    held = HeldShare(share.share_id, share.host, share.initialized, share.init_ms, share.investment,
                     state.nodes[share.host].machine.memory_mb)
    return (-state.wealth.get(_user_of(state, share.job_id), 0), investment_key(held))


def _undecided(state: _State, a: _Share, b: _Share) -> str | None:
    """Why the input does not settle the RM's order of two shares (None: it does)."""
    owners = (state.wealth.get(_user_of(state, a.job_id), 0), state.wealth.get(_user_of(state, b.job_id), 0))
    if owners[0] != owners[1] or a.initialized != b.initialized:
        return None
    if not a.initialized:
        if a.init_ms != b.init_ms:
            return None
        interchangeable = a.pending and b.pending and a.job_id == b.job_id  # same job, no ids yet
        return None if interchangeable else SHARE_MAP
    return INVESTMENT if a.job_id != b.job_id and state.inp.investment_ranked else None


def _pick(ordered: Sequence[_Share], cand: Container[int], virtual: int, want: int) -> list[_Share] | None:
    """One round on one machine, its shares in the RM's order (`cand`: positions of the candidates):
    the shares it clears, or None when they cannot make room. It takes candidates until there is
    room (an exact fit first in the list), then clears from that list until there is room."""
    room, chosen = virtual, list[_Share]()
    for i, share in enumerate(ordered):
        if i in cand:
            room += share.order
            if share.order == want:
                chosen.insert(0, share)
            else:
                chosen.append(share)
        if room >= want:
            break
    if room < want:
        return None
    room, cleared = virtual, list[_Share]()
    for share in chosen:
        room += share.order
        cleared.append(share)
        if room >= want:
            break
    return cleared


def _ids(shares: Sequence[_Share]) -> tuple[tuple[int, int], ...]:
    return tuple((s.job_id, s.share_id) for s in shares)


def _alternatives(state: _State, ordered: Sequence[_Share], cand: Container[int], doubtful: Sequence[int],
                  virtual: int, want: int) -> list[list[_Share]]:
    """What the round clears for every order of the `doubtful` candidates (positions in `ordered`)
    that keeps the order of each pair the input settles; [] when there are too many to list."""
    if len(doubtful) > MAX_OPEN:
        return []
    out: dict[tuple[tuple[int, int], ...], list[_Share]] = {}
    members = [ordered[i] for i in doubtful]
    n = len(members)
    settled = {(x, y) for x in range(n) for y in range(x + 1, n) if _undecided(state, members[x], members[y]) is None}
    for perm in linear_orders(n, settled):
        order = list(ordered)
        for i, k in zip(doubtful, perm):
            order[i] = members[k]
        cleared = _pick(order, cand, virtual, want) or []
        out.setdefault(_ids(cleared), cleared)
    return list(out.values())


def _round(state: _State, nj: _Job, name: str, ordered: Sequence[_Share], candidates: set[int]) -> list[_Share] | None:
    """The shares one round clears on machine `name` (None: it cannot make room). Where that rests
    on an order of candidates the input does not settle, the round is recorded (`Unsettled`, with
    every alternative) and the RM's clearing is followed when the caller gives it (`choose`)."""
    node, want = state.nodes[name], nj.work.order
    cand = {i for i, s in enumerate(ordered) if _forceable(s) and s.job_id in candidates}
    cleared = _pick(ordered, cand, node.virtual, want)
    if cleared is None:
        return None
    room, scanned = node.virtual, []  # the candidates the round looked at
    for i, share in enumerate(ordered):
        if i in cand:
            room += share.order
            scanned.append(i)
        if room >= want:
            break
    doubtful: dict[int, None] = {}
    reasons: dict[str, None] = {}
    for i in scanned:
        for k in sorted(cand):
            why = _undecided(state, ordered[i], ordered[k]) if k > i else None
            if why:
                doubtful.update({i: None, k: None})
                reasons[why] = None
    if not doubtful:
        return cleared
    alternatives = _alternatives(state, ordered, cand, sorted(doubtful), node.virtual, want)
    rm = state.choose.get(name)
    if rm is not None:  # the RM's clearing, when it is one of the alternatives
        cleared = next((alt for alt in alternatives if set(_ids(alt)) <= rm), cleared)
    taken = next((i for i, alt in enumerate(alternatives) if _ids(alt) == _ids(cleared)), 0)
    shares = tuple(sorted({(ordered[i].job_id, ordered[i].share_id) for i in doubtful}))
    state.unsettled.append(Unsettled(nj.work.job_id, name, shares, tuple(reasons), len(state.actions),
                                     tuple(_ids(a) for a in alternatives), taken))
    return cleared


def _ip_tie(state: _State, name: str, eligible: Sequence[str]) -> list[str]:
    """The other eligible machines that tie with `name` in EligibleMachineSorter (same owner
    wealth, same memory) where the log shows no node IP (behaviour node_ip_logged absent): the RM
    meets them in the order of a map hashed on the IPs."""
    if state.inp.config.behaviours.has("node_ip_logged"):
        return []  # any IP a machine has here was inferred (replay.apps.verify), so the order stays open
    node = state.nodes[name]
    key = (_machine_wealth(state, node), node.machine.memory_mb)
    return [other for other in eligible if other != name
            and (_machine_wealth(state, state.nodes[other]), state.nodes[other].machine.memory_mb) == key]


def _note_machine_tie(state: _State, nj: _Job, name: str, eligible: Sequence[str], chosen: Sequence[_Share]) -> None:
    """Record the round's machine as unsettled when it ties with other eligible machines in an
    open node-map order (`_ip_tie`)."""
    tied = _ip_tie(state, name, eligible)
    if tied:
        state.unsettled.append(Unsettled(nj.work.job_id, name, tuple(sorted((s.job_id, s.share_id) for s in chosen)),
                                         (NODE_IP,), len(state.actions), tied=tuple(tied)))


def _rm_machines_first(state: _State, eligible: list[str]) -> list[str]:
    """Eligible machines with those the RM cleared (`choose`) first among their open-order ties."""
    if not state.choose:
        return eligible
    out = list(eligible)
    for i, name in enumerate(out):
        if name in state.choose:
            continue
        ahead = next((j for j in range(i + 1, len(out))
                      if out[j] in state.choose and name in _ip_tie(state, out[j], out)), None)
        if ahead is not None:
            out.insert(i, out.pop(ahead))
    return out


def _clear(state: _State, share: _Share, nj: _Job) -> None:
    """clearShare: hand over a same-size new process, drop a different-size one, evict a running one."""
    donor = state.jobs[share.job_id]
    node = state.nodes[share.host]
    if share.pending:
        donor.shares.remove(share)
        node.shares.remove(share)
        if share.order == nj.work.order:
            kind = REASSIGN
            share.job_id = nj.work.job_id
            nj.shares.append(share)
            node.shares.append(share)  # removed and put back: it goes to the end of its bucket
        else:
            kind = CANCEL
    else:
        kind = EVICT
        share.evicted = True
    state.actions.append(DefragAction(kind, nj.work.job_id, donor.work.job_id, share.host, share.share_id, share.order))


def _take_from_the_rich(state: _State, nj: _Job, needed: int, candidates: set[int]) -> int:
    """Clear space for up to `needed` processes of the needy job; returns how many it made room for."""
    want = nj.work.order
    eligible: list[str] = []
    for name in _all_machines(state, nj.pool):
        node = state.nodes[name]
        if node.machine.order < want:
            continue
        if nj.policy == RESERVE:  # a reservation wants a whole machine of its size
            if node.machine.order != want or any(s.job_id not in candidates for s in node.shares):
                continue
        room = node.virtual + sum(state.jobs[s.job_id].work.order for s in node.shares
                                  if _forceable(s) and s.job_id in candidates)
        if room >= want:
            eligible.append(name)
    eligible = _rm_machines_first(state, _sorted_machines(state, eligible))
    given = 0
    while True:
        cleared, room = 0, 0
        for name in eligible:
            node = state.nodes[name]
            ordered = sorted(node.shares, key=lambda s: _share_key(state, s))
            chosen = _round(state, nj, name, ordered, candidates)
            if chosen is None:
                continue
            _note_machine_tie(state, nj, name, eligible, chosen)
            room = node.virtual
            for share in chosen:
                room += share.order
                cleared += 1
                owner = _user_of(state, share.job_id)
                _clear(state, share, nj)
                state.wealth[owner] = state.wealth.get(owner, 0) - share.order
            break  # one machine per round
        if cleared:
            eligible = _rm_machines_first(state, _sorted_machines(state, _rehash(state, eligible)))
            given += room // want
        if cleared == 0 or given >= needed:
            return given


def _final_evictions(state: _State, needy: dict[int, int]) -> None:
    """doFinalEvictions: for each needy job, take from the rich, then (if allowed) from the poor."""
    for needy_id in sorted(needy, key=state.rank.__getitem__):
        nj = state.jobs[needy_id]
        rich, poor = _candidates(state, needy_id, needy)
        _collect_wealth(state, rich)
        needed = needy[needy_id]
        given = _take_from_the_rich(state, nj, needed, rich)
        state.calls.append(TakeFromTheRich(needy_id, needed, given))
        needed -= given
        if needed <= 0 or not poor:
            continue
        everyone = rich | poor
        _collect_wealth(state, everyone)
        given = _take_from_the_rich(state, nj, needed, everyone)
        state.calls.append(TakeFromTheRich(needy_id, needed, given))


def defragment(inp: CycleInput, counts: Mapping[int, int], placements: Sequence[Placement],
               evictions: Sequence[Eviction], *, pure_fair_share: Mapping[int, int],
               job_order: Sequence[int] = (), wealth: Mapping[str, int] | None = None,
               serve: Mapping[int, int] | None = None, known_order: Container[tuple[int, int]] | None = None,
               choose: Mapping[str, frozenset[tuple[int, int]]] | None = None) -> Defrag:
    """Detect jobs left short by fragmentation and clear space for them (insureFullEviction).

    `counts` are How Much's processes per job, `pure_fair_share` its pure (pre-bonus) fair share
    per job; `placements` and `evictions` are what What Of and the shrink evictions decided this
    cycle (the state defragmentation starts from). `job_order` is the RM's HashMap order of jobs
    (the order needy jobs are served), `wealth` the users' wealth left by the previous cycle.
    `serve`, when given, is the needy jobs (job -> processes still needed) to take from the rich
    for instead of those detection finds: the RM's own verdict where a caller knows it (a log's
    ACTUALLY NEEDY lines), since detection tallies jobs in a HashMap order no input settles
    (`Defrag.needy` stays rmref's verdict). `known_order`, when given, holds the pairs (a, b) of
    jobs known to be tallied a before b: every other order is open, and `Defrag.verdicts` lists
    the verdict of each. `choose` (host -> the shares, job and share id or 0 for a new process,
    the RM cleared there) makes a round whose choice rests on an open order of shares take the
    alternative the RM took (`Unsettled.alternatives`).
    Each top-level pool tree is defragmented by its own scheduler, in turn (rmref.trees).
    """
    parts: list[Defrag] = []
    for tree in trees(inp):
        jobs = {w.job_id for w in tree.work}
        served = None if serve is None else {j: n for j, n in serve.items() if j in jobs}
        state = _build(tree, counts, [p for p in placements if p.job_id in jobs],
                       [e for e in evictions if e.job_id in jobs], pure_fair_share, job_order, wealth)
        state.known, state.choose = known_order, choose or {}
        parts.append(_defragment_tree(state, served))
        wealth = parts[-1].wealth  # users are shared by the trees' schedulers
    if len(parts) == 1:
        return parts[0]
    unsettled, before = [], 0
    for p in parts:  # action indexes run on across the trees
        unsettled += [replace(u, action=u.action + before) for u in p.unsettled]
        before += len(p.actions)
    verdicts = {tuple(sorted(v for verdict in combo for v in verdict))
                for combo in product(*(p.verdicts or ((),) for p in parts))}
    return Defrag({j: n for p in parts for j, n in p.needy.items()},
                  tuple(t for p in parts for t in p.take_from_the_rich), tuple(a for p in parts for a in p.actions),
                  tuple(j for p in parts for j in p.carried), dict(parts[-1].wealth), tuple(unsettled),
                  tuple(sorted(verdicts)))


def _defragment_tree(state: _State, serve: Mapping[int, int] | None) -> Defrag:
    """insureFullEviction for one top-level pool tree."""
    if not state.inp.config.defragmentation or not any(j.policy != RESERVE for j in state.jobs.values()):
        return Defrag({}, (), (), (), dict(state.wealth), (), ((),))
    needy, carried, verdicts = _detect(state)
    served = needy if serve is None else {j: n for j, n in serve.items() if j in state.jobs and n > 0}
    if served:
        _final_evictions(state, served)
    return Defrag(needy, tuple(state.calls), tuple(state.actions), tuple(carried), dict(state.wealth),
                  tuple(state.unsettled), verdicts)
