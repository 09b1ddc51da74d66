"""One whole scheduling cycle: rmref's phases chained, each fed the one before (NodepoolScheduler.schedule).

    caps -> How Much (counts, stale_left, set_aside) -> What Of (placements)
         -> clearing (machines emptied for reservations) -> doEvictions -> defragmentation

`Phases` names the function used for each; replace one (same signature) to see how history
would have gone with a change. Each phase reads what the ones before hand it: How Much's
`HowMuch.stale_left` (the free space its accounting left unschedulable machines) goes to What Of
and defragmentation as `stale_left`, where some machine has one; a swapped How Much that leaves
it None has rmref's What Of work it out from the input (`rmref.howmuch_state.stale_after_howmuch`).
How Much's `HowMuch.set_aside` (the machines countFreeableMachines set aside for reservations) goes
to the clearing step, which picks the machines setupPreemptions empties for doEvictions; rmref's
clearing counts the free machines each reservation finds with rmref's own What Of walk, whichever
What Of ran (rmref.clearing says what a developer swapping What Of should know).
`Hints` carries what no input can predict but a log shows: the RM iterates some maps keyed by
random ids, and keeps a few values from one cycle to the next (`rmref.memory.Memory`, which
`CycleResult.memory` hands on to the next cycle).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from typing import Any

from rmref.caps import job_caps
from rmref.choices import Clearing
from rmref.clearing import clearing
from rmref.constants import EVICT, NOT_NEW, REASSIGN
from rmref.howmuch import HowMuch, how_much
from rmref.memory import Memory
from rmref.defrag import Defrag, defragment
from rmref.evictions import evictions
from rmref.model import CycleDecisions, CycleInput, DefragAction, Eviction, Placement
from rmref.phases import CapsPhase, ClearingPhase, DefragPhase, EvictionsPhase, HowMuchPhase, WhatOfPhase
from rmref.whatof import what_of


@dataclass(frozen=True)
class Hints:
    """Orders and carried values the RM's log reveals and its inputs do not determine."""

    user_orders: tuple[tuple[str, ...], ...] = ()  # the order each class's users were counted in
    job_order: tuple[int, ...] = ()  # the order needy jobs are served in by defragmentation
    share_walk: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # a cleared host's shares, walk order
    memory: Memory = Memory()  # what the RM kept from the cycle before (the last CycleResult.memory)
    needy: Mapping[int, int] | None = None  # the needy jobs to serve, if not those detection finds (defragment's serve)
    # the RM's free choices, to follow where rmref finds them equal to its own (rmref.choices)
    prefer: Mapping[str, int] = field(default_factory=dict)  # machines' rank in an open order (what_of)
    # machines cleared for a reservation, in an open node-map order (how_much's walk, clearing)
    cleared_first: tuple[str, ...] = ()
    given_first: tuple[str, ...] = ()  # machines countFreeableMachines gave, in its walk over an open order (how_much)
    choose: Mapping[str, Clearing] = field(default_factory=dict)  # clearings (defragment)
    known_order: Container[tuple[int, int]] | None = None  # job pairs of known tally order (defragment)
    # needy job -> the machines each takeFromTheRich call met, in its first round's order (defragment)
    searched: Mapping[int, tuple[tuple[str, ...], ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class Phases:
    """The function used for each phase (rmref's own by default; each one's shape: rmref.phases)."""

    caps: CapsPhase = job_caps
    how_much: HowMuchPhase = how_much
    what_of: WhatOfPhase = what_of
    clearing: ClearingPhase = clearing
    evictions: EvictionsPhase = evictions
    defrag: DefragPhase = defragment


@dataclass(frozen=True)
class Published:
    """One job's part of the schedule a cycle publishes: its Additions and its new Removals."""

    additions: tuple[str, ...]  # hosts of the new processes, sorted (the RM numbers the shares itself)
    removals: tuple[tuple[str, int], ...]  # (host, share id) taken from the job this cycle, sorted


def publish(placements: tuple[Placement, ...], evictions: tuple[Eviction, ...],
            actions: tuple[DefragAction, ...]) -> dict[int, Published]:
    """The schedule the chained phases publish, per job with a change.

    Defragmentation works on What Of's result: a new process it cancels is never published, one
    it hands over is published for the needy job, and a running one it takes is a removal.
    """
    added: dict[int, list[str]] = {}
    for p in placements:
        added.setdefault(p.job_id, []).append(p.host)
    removed: dict[int, list[tuple[str, int]]] = {}
    for e in evictions:
        if e.reason not in NOT_NEW:
            removed.setdefault(e.job_id, []).append((e.host, e.share_id))
    for a in actions:
        if a.action == EVICT:
            removed.setdefault(a.donor_job, []).append((a.host, a.share_id))
            continue
        added[a.donor_job].remove(a.host)
        if a.action == REASSIGN:
            added.setdefault(a.needy_job, []).append(a.host)
    jobs = {j for j, hosts in added.items() if hosts} | {j for j, shares in removed.items() if shares}
    return {j: Published(tuple(sorted(added.get(j, ()))), tuple(sorted(removed.get(j, ())))) for j in sorted(jobs)}


@dataclass(frozen=True)
class CycleResult:
    """A cycle's decisions, with the full How Much and defragmentation records and what to carry on."""

    decisions: CycleDecisions
    how_much: HowMuch
    defrag: Defrag
    memory: Memory  # what the RM keeps for the next cycle (its Hints' memory)
    published: dict[int, Published] = field(default_factory=dict)  # the schedule sent to the Orchestrator
    cleared: tuple[str, ...] = ()  # the machines the clearing step emptied for reservations (evictions' input)


def schedule(inp: CycleInput, hints: Hints = Hints(), phases: Phases = Phases()) -> CycleResult:
    """Run every phase of one cycle on `inp`; each phase reads the decisions of the ones before."""
    caps = {w.job_id: phases.caps(w.cap_input) for w in inp.work}
    hm = phases.how_much(inp, {j: c.actual for j, c in caps.items()}, dict(inp.config.user_allotments),
                         hints.user_orders, **_walks(hints))
    # How Much's accounting hands What Of (and defragmentation, which reads What Of's) the free space
    # it left unschedulable machines: passed only where a machine has one, as `prefer`
    stale: dict[str, Any] = {"stale_left": hm.stale_left} if hm.stale_left else {}
    placed = tuple(phases.what_of(inp, hm.counts, **({"prefer": hints.prefer} if hints.prefer else {}), **stale))
    # setupPreemptions runs inside findMachines: rmref's clearing reads rmref's What Of walk again,
    # for the free machines each reservation finds (a state, not an output, of What Of)
    clear: dict[str, Any] = {} if hm.stale_left is None else {"stale_left": hm.stale_left}
    clear.update({"cleared_first": hints.cleared_first} if hints.cleared_first else {})
    cleared = tuple(phases.clearing(inp, hm.counts, hm.set_aside, placed, **clear))
    evicted = tuple(phases.evictions(inp, hm.counts, cleared, hints.share_walk))
    pure = {**hints.memory.pure_fair_share, **hm.pure_fair_share}  # the RM keeps a job's last pure share
    extra: dict[str, Any] = {} if hints.needy is None else {"serve": hints.needy}  # passed only when known
    extra.update({"choose": hints.choose} if hints.choose else {})
    extra.update(stale)
    extra.update({} if hints.known_order is None else {"known_order": hints.known_order})
    extra.update({"searched": hints.searched} if hints.searched else {})
    d = phases.defrag(inp, hm.counts, placed, evicted, pure_fair_share=pure, job_order=hints.job_order,
                      wealth=hints.memory.wealth, **extra)
    decisions = CycleDecisions(inp.cycle, caps, dict(hm.counts), dict(hm.deferred), placed, evicted,
                               tuple(d.carried), tuple(d.actions))
    memory = Memory(pure, dict(d.wealth), tuple(d.carried))
    return CycleResult(decisions, hm, d, memory, publish(placed, evicted, tuple(d.actions)), cleared)


def _walks(hints: Hints) -> dict[str, tuple[str, ...]]:
    """How Much's keyword hints, each passed only when given (a developer's How Much may take neither)."""
    return {k: v for k, v in (("cleared_first", hints.cleared_first), ("given_first", hints.given_first)) if v}
