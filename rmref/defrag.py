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

from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from itertools import product

import numpy as np

from rmref.choices import Clearing, allowed_orders
from rmref.constants import CANCEL, EVICT, REASSIGN
from rmref.defrag_state import (
    INVESTMENT, MEMORY, NODE_IP, SHARE_MAP, DJob, DState, TakeFromTheRich, Unsettled, build_state, contains,
    own_machines, post_order,
)
from rmref.model import FAIR_SHARE, RESERVE, CycleInput, DefragAction, Eviction, Placement
from rmref.pool import n_shares_by_order, remove_shares
from rmref.take_from_the_rich import take_from_the_rich
from rmref.trees import trees
from rmref.whatof import unschedulable_free

# the result types and reasons are read from here (replay.apps.audit and simulate import NODE_IP, the action kinds)
__all__ = ["CANCEL", "EVICT", "INVESTMENT", "MEMORY", "NODE_IP", "REASSIGN", "SHARE_MAP", "Defrag", "TakeFromTheRich",
           "Unsettled", "Verdict", "defragment"]

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
# Detection


def _potential_need(state: DState, job: DJob) -> int:
    """detectFragmentation's first pass: processes a job is short (0 when not potentially needy)."""
    if job.work.cap_input.refused:
        return 0
    held, needed = job.held, job.counted - job.held
    if job.policy != FAIR_SHARE:  # fixed share and reservations: always, if short
        return max(needed, 0)
    if held >= state.threshold or held >= job.pure_fs or needed <= 0:
        return 0
    return min(needed, state.threshold)


def _detect(state: DState) -> tuple[dict[int, int], list[int], tuple[Verdict, ...]]:
    """Actually needy jobs (job -> processes still needed), the potentially needy ones, and the
    verdicts every tally order the known pairs allow would give."""
    potential: dict[str, dict[int, int]] = {}
    for job in state.jobs.values():
        need = _potential_need(state, job)
        if need > 0:
            potential.setdefault(job.pool, {})[job.work.job_id] = need
    if not potential:
        return {}, [], ((),)
    pools = post_order(state)
    size = state.max_order + 1
    vfree = {p: np.zeros(size, dtype=np.int64) for p in pools}
    for pool in pools:  # space free now or once removals finish, per machine, up the tree
        for name in own_machines(state, pool):
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
    # the RM puts them on its needy TreeMap pool by pool, each pool's in the HashMap order of its jobs, for
    # which the order the input lists work in stands (job ids have no part in it): of two that tie
    # (JobByTimeSorter) the one put last stays (rmref.whatof._needy_jobs)
    table = {w.job_id: i for i, w in enumerate(state.inp.work)}
    carried = [j for p in pools for j in sorted(potential.get(p, {}), key=table.__getitem__)]
    return needy, carried, tuple(sorted(verdicts))


def _tally(state: DState, potential: Mapping[str, Mapping[int, int]], free: Mapping[str, np.ndarray],
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


def _candidates(state: DState, needy_id: int, needy: Mapping[int, int]) -> tuple[set[int], set[int]]:
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
        if not (contains(state, nj.pool, cls.nodepool) or contains(state, cls.nodepool, nj.pool)):
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


def _collect_wealth(state: DState, candidates: set[int]) -> None:
    """collectWealth: each candidate user's wealth is the quantum shares its candidate jobs hold."""
    totals: dict[str, int] = {}
    for job_id in candidates:
        job = state.jobs[job_id]
        totals[job.work.user] = totals.get(job.work.user, 0) + job.held * job.work.order
    state.wealth.update(totals)


# ---------------------------------------------------------------------------------------------
# takeFromTheRich


def _final_evictions(state: DState, needy: dict[int, int]) -> None:
    """doFinalEvictions: for each needy job, take from the rich, then (if allowed) from the poor."""
    for needy_id in sorted(needy, key=state.rank.__getitem__):
        nj = state.jobs[needy_id]
        rich, poor = _candidates(state, needy_id, needy)
        _collect_wealth(state, rich)
        needed = needy[needy_id]
        given = take_from_the_rich(state, nj, needed, rich)
        state.calls.append(TakeFromTheRich(needy_id, needed, given))
        needed -= given
        if needed <= 0 or not poor:
            continue
        everyone = rich | poor
        _collect_wealth(state, everyone)
        given = take_from_the_rich(state, nj, needed, everyone)
        state.calls.append(TakeFromTheRich(needy_id, needed, given))


def defragment(inp: CycleInput, counts: Mapping[int, int], placements: Sequence[Placement],
               evictions: Sequence[Eviction], *, pure_fair_share: Mapping[int, int],
               job_order: Sequence[int] = (), wealth: Mapping[str, int] | None = None,
               serve: Mapping[int, int] | None = None, known_order: Container[tuple[int, int]] | None = None,
               choose: Mapping[str, Clearing] | None = None, stale_left: Mapping[str, int] | None = None,
               searched: Mapping[int, Sequence[Sequence[str]]] | None = None) -> Defrag:
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
    alternative the RM took (`Unsettled.alternatives`). `stale_left` is How Much's
    `HowMuch.stale_left`, from which What Of's accounting leaves each unschedulable machine the
    virtual share order defragmentation reads (None: worked out from `inp`, as What Of does).
    `searched` (needy job -> the machines each of its takeFromTheRich calls met, in the order its
    first round met them, as a log prints them) orders the machines that round finds alike.
    Each top-level pool tree is defragmented by its own scheduler, in turn (rmref.trees).
    """
    parts: list[Defrag] = []
    for tree in trees(inp):
        jobs = {w.job_id for w in tree.work}
        served = None if serve is None else {j: n for j, n in serve.items() if j in jobs}
        fresh = partial(build_state, tree, counts, [p for p in placements if p.job_id in jobs],
                        [e for e in evictions if e.job_id in jobs], pure_fair_share, job_order, wealth,
                        unschedulable_free(tree, stale_left))  # (each run starts from the same What Of)
        parts.append(_follow_clearing(fresh, served, known_order, choose or {}, searched or {}))
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


MAX_RUNS = 64  # runs of one pool tree's defragmentation tried for a clearing that matches the RM's


def _clearing(state: DState) -> dict[str, Clearing]:
    """Host -> the (donor job, share id; 0 for a new process) the run cleared there."""
    out: dict[str, list[tuple[int, int]]] = {}
    for a in state.actions:
        out.setdefault(a.host, []).append((a.donor_job, a.share_id))
    return {h: tuple(sorted(v)) for h, v in out.items()}


def _matches(state: DState) -> bool:
    """Whether the run cleared on each of the tree's machines what the RM cleared there (`choose`)."""
    mine = _clearing(state)
    return all(mine.get(h, ()) == tuple(sorted(state.choose.get(h, ()))) for h in state.nodes)


def _follow_clearing(fresh: Callable[[], DState], serve: Mapping[int, int] | None,
                     known: Container[tuple[int, int]] | None,
                     choose: Mapping[str, Clearing], searched: Mapping[int, Sequence[Sequence[str]]]) -> Defrag:
    """One pool tree defragmented from a `fresh` state. Where rounds offered alternatives that fit
    the RM's clearing on their machine equally (`choose`: each a subset as full as the others), a
    later round tells which the RM took (a share left in place kept its machine eligible): the
    picks are tried depth first for the run whose clearing is the RM's on every machine; when none
    is, or there is no RM clearing, each such round takes its first alternative (picks ())."""
    picks: tuple[int, ...] = ()
    first: Defrag | None = None
    for _ in range(MAX_RUNS):
        state = fresh()
        state.known, state.choose, state.picks, state.searched = known, choose, picks, searched
        result = _defragment_tree(state, serve)
        if first is None:
            first = result
        if not choose or _matches(state):
            return result
        taken = (list(picks) + [0] * len(state.branches))[:len(state.branches)]
        nxt = next((i for i in reversed(range(len(taken))) if taken[i] + 1 < state.branches[i]), None)
        if nxt is None:
            break
        picks = (*taken[:nxt], taken[nxt] + 1)
    assert first is not None
    return first


def _defragment_tree(state: DState, serve: Mapping[int, int] | None) -> Defrag:
    """insureFullEviction for one top-level pool tree."""
    if not state.inp.config.defragmentation or not any(j.policy != RESERVE for j in state.jobs.values()):
        return Defrag({}, (), (), (), dict(state.wealth), (), ((),))
    needy, carried, verdicts = _detect(state)
    served = needy if serve is None else {j: n for j, n in serve.items() if j in state.jobs and n > 0}
    if served:
        _final_evictions(state, served)
    return Defrag(needy, tuple(state.calls), tuple(state.actions), tuple(carried), dict(state.wealth),
                  tuple(state.unsettled), verdicts)
