"""Defragmentation's working state (rmref.defrag): the scheduler's jobs, shares and machines after
What Of and the shrink evictions, the nodepool tree it walks, and the records it keeps.

The state is mutable scratch, private to one `defragment` call.
"""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from dataclasses import dataclass, field

from rmref.choices import Clearing
from rmref.evictions import departed
from rmref.javahash import JavaHashMap, node_hash, string_hash
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, CycleInput, DefragAction, Eviction, Machine, Placement, Work
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
MEMORY = "memory"  # machines of equal wealth, the memory of one not stated: their order by memory is open


@dataclass(frozen=True)
class Unsettled:
    """A machine where takeFromTheRich's choice rested on an order of shares its input does not settle."""

    needy_job: int
    host: str
    shares: tuple[tuple[int, int], ...]  # (job, share id; 0 for a new process) of the shares in question
    reasons: tuple[str, ...]  # INVESTMENT, SHARE_MAP, NODE_IP and/or MEMORY
    action: int  # index in Defrag.actions of the first action the choice decided
    # every set of shares (job, share id; 0 for a new process), in clearing order, the round could
    # clear by an order of the shares in question the input allows (`partial`: too many to list)
    alternatives: tuple[tuple[tuple[int, int], ...], ...] = ()
    taken: int = 0  # the alternative cleared
    tied: tuple[str, ...] = ()  # NODE_IP, MEMORY: the other eligible machines whose order with `host` is open
    # too many orders of the shares in question to walk (rmref.choices.MAX_STEPS): `alternatives` holds
    # only rmref's own clearing and, given the RM's, the one an allowed order putting the RM's shares
    # first clears (each reachable)
    partial: bool = False



# ---------------------------------------------------------------------------------------------
# Working state (mutable scratch, private to one call)


@dataclass
class DShare:
    """A process as defragmentation sees it: held, or placed this cycle and not yet published."""

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
class DJob:
    """A job with its class's policy, priority and pool, How Much's counts and its processes."""

    work: Work
    policy: str
    priority: int
    pool: str
    counted: int
    pure_fs: int
    shares: list[DShare] = field(default_factory=list)

    @property
    def held(self) -> int:
        """countNShares: assigned plus new, less those being removed."""
        return sum(1 for s in self.shares if not s.evicted)


@dataclass
class DNode:
    """A machine, the free space What Of left on it, and its processes."""

    machine: Machine
    virtual: int  # free space as What Of left it (the RM does not update it during defrag)
    shares: list[DShare] = field(default_factory=list)  # activeShares

    def freed_up(self) -> int:
        """countFreedUpShares: unused space plus the space of processes being removed."""
        used = sum(s.order for s in self.shares if not s.evicted)
        return self.machine.order - used


@dataclass
class DState:
    """Everything one pool tree's defragmentation reads and changes."""

    inp: CycleInput
    jobs: dict[int, DJob]
    nodes: dict[str, DNode]
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
    choose: Mapping[str, Clearing] = field(default_factory=dict)  # the RM's clearings
    # needy job -> the machines each of its takeFromTheRich calls met, in the order the RM's first round met them
    searched: Mapping[int, Sequence[Sequence[str]]] = field(default_factory=dict)
    # where several alternatives of a round fit the RM's clearing equally well: which one each such
    # round takes (in the order they come; 0 past the end), and how many each offered
    picks: tuple[int, ...] = ()
    branches: list[int] = field(default_factory=list)


def identity_hash(m: Machine) -> int:
    """Machine.hashCode (NodeIdentity's): the node-map key hash less DuccNode's own 31."""
    return (node_hash(m.name, m.ip) - 31) & _MASK


def user_of(state: DState, job_id: int) -> str:
    """The user a job belongs to."""
    return state.jobs[job_id].work.user


def build_state(inp: CycleInput, counts: Mapping[int, int], placements: Sequence[Placement],
           evictions: Sequence[Eviction], pure_fair_share: Mapping[int, int],
           job_order: Sequence[int], wealth: Mapping[str, int] | None,
           unschedulable: Mapping[str, int] | None = None) -> DState:
    """The scheduler's state after What Of and the shrink evictions: what defragmentation starts from.
    `unschedulable` is `rmref.whatof.unschedulable_free` of `inp` (None: worked out here)."""
    classes = {c.name: c for c in inp.classes}
    pools = {p.name for p in inp.nodepools}
    evicted = {(e.job_id, e.share_id) for e in evictions}
    # before 2.1.0 a machine back after a disable is a new record without them (rmref.evictions.departed)
    elsewhere = {(w.job_id, s.share_id) for w in inp.work for s in w.shares if departed(s, inp)}
    jobs: dict[int, DJob] = {}
    nodes = {m.name: DNode(m, m.order) for m in inp.machines}
    for w in inp.work:
        cls = classes.get(w.class_name)
        if cls is None:
            continue
        policy = cls.policy if cls.policy in (FIXED_SHARE, RESERVE) else FAIR_SHARE
        job = DJob(w, policy, cls.priority, cls.nodepool, counts.get(w.job_id, 0), pure_fair_share.get(w.job_id, 0))
        for held in sorted(w.shares, key=lambda s: s.share_id):
            job.shares.append(DShare(held.share_id, w.job_id, held.host, held.order, False,
                                     held.pending_removal or (w.job_id, held.share_id) in evicted,
                                     held.initialized, held.init_ms, held.investment))
        jobs[w.job_id] = job
    for placed in placements:
        if placed.job_id in jobs:
            jobs[placed.job_id].shares.append(DShare(0, placed.job_id, placed.host, placed.order, True, False, False,
                                                     0, 0))
    for job in jobs.values():
        for s in job.shares:
            node = nodes.get(s.host)
            if node is None or (not s.pending and (s.job_id, s.share_id) in elsewhere):
                continue
            node.shares.append(s)
            # What Of's tables: every process (even one being removed) occupies its space; a
            # reservation takes the whole machine
            take = node.virtual if job.policy == RESERVE else min(s.order, node.virtual)
            node.virtual -= take
    stale = unschedulable_free(inp) if unschedulable is None else unschedulable
    for host, free in stale.items():  # reset skipped these: their stale value
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
    return DState(inp, jobs, nodes, {k: list(v) for k, v in children.items()},
                  {p.name: (p.parent if p.parent in pools else None) for p in inp.nodepools},
                  inp.config.fragmentation_threshold, max_order, rank, dict(wealth or {}))


# ---------------------------------------------------------------------------------------------
# Nodepool tree


def post_order(state: DState) -> list[str]:
    """getNodepools: every pool, children (in HashMap order) before their parent."""
    out: list[str] = []

    def visit(name: str) -> None:
        for child in state.children.get(name, []):
            visit(child)
        out.append(name)

    for root in (name for name, parent in state.parent.items() if parent is None):
        visit(root)
    return out


def contains(state: DState, outer: str, inner: str) -> bool:
    """NodePool.containsSubpool: `inner` is `outer` or lies below it."""
    name: str | None = inner
    while name is not None:
        if name == outer:
            return True
        name = state.parent.get(name)
    return False


def own_machines(state: DState, pool: str) -> JavaHashMap:
    """The pool's own node map (its subpools' machines not in it). Before 2.1.0 (purge_by_policy) a
    dead or varied-off machine has left it, and one varied on is back only once it reports."""
    kept = state.inp.config.behaviours.has("purge_by_policy")
    table = JavaHashMap()
    for m in state.inp.machines:
        if m.nodepool == pool and (kept or m.online):
            table.put(m.name, node_hash(m.name, m.ip))
    return table


def all_machines(state: DState, pool: str) -> JavaHashMap:
    """NodePool.getAllMachines: a clone of the pool's node map, each subpool's putAll in after
    (into the clone of an empty map, putAll sizes the table by the subpool's count)."""
    table = own_machines(state, pool).clone()
    for child in state.children.get(pool, []):
        table.put_all(all_machines(state, child).entries())
    return table
