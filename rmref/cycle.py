"""One whole scheduling cycle: rmref's phases chained, each fed the one before (NodepoolScheduler.schedule).

    caps -> How Much (counts) -> What Of (placements) -> doEvictions -> defragmentation

`Phases` names the function used for each; replace one (same signature) to see how history
would have gone with a change. `Hints` carries what no input can predict but a log shows: the
RM iterates some maps keyed by random ids, and keeps a few values from one cycle to the next.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from rmref.caps import CapInput, Caps, job_caps
from rmref.counting import HowMuch, how_much
from rmref.defrag import Defrag, defragment
from rmref.evictions import evictions
from rmref.model import CycleDecisions, CycleInput, Eviction, Placement
from rmref.whatof import what_of


@dataclass(frozen=True)
class Hints:
    """Orders and carried values the RM's log reveals and its inputs do not determine."""

    user_orders: tuple[tuple[str, ...], ...] = ()  # the order each class's users were counted in
    job_order: tuple[int, ...] = ()  # the order needy jobs are served in by defragmentation
    cleared_hosts: tuple[str, ...] = ()  # hosts cleared for a reservation this cycle
    pure_fair_share: dict[int, int] = field(default_factory=dict)  # last known, for jobs not counted now
    wealth: dict[str, int] | None = None  # users' wealth left by the last defragmentation


@dataclass(frozen=True)
class Phases:
    """The function used for each phase (rmref's own by default)."""

    caps: Callable[[CapInput], Caps] = job_caps
    how_much: Callable[..., HowMuch] = how_much
    what_of: Callable[..., tuple[Placement, ...]] = what_of
    evictions: Callable[..., tuple[Eviction, ...]] = evictions
    defrag: Callable[..., Defrag] = defragment


@dataclass(frozen=True)
class CycleResult:
    """A cycle's decisions, with the full How Much and defragmentation records and what to carry on."""

    decisions: CycleDecisions
    how_much: HowMuch
    defrag: Defrag
    pure_fair_share: dict[int, int]  # to pass on in the next cycle's Hints


def schedule(inp: CycleInput, hints: Hints = Hints(), phases: Phases = Phases()) -> CycleResult:
    """Run every phase of one cycle on `inp`; each phase reads the decisions of the ones before."""
    caps = {w.job_id: phases.caps(w.cap_input) for w in inp.work}
    hm = phases.how_much(inp, {j: c.actual for j, c in caps.items()}, dict(inp.config.user_allotments),
                         hints.user_orders)
    placed = tuple(phases.what_of(inp, hm.counts))
    evicted = tuple(phases.evictions(inp, hm.counts, hints.cleared_hosts))
    pure = {**hints.pure_fair_share, **hm.pure_fair_share}  # the RM keeps a job's last pure share
    d = phases.defrag(inp, hm.counts, placed, evicted, pure_fair_share=pure, job_order=hints.job_order,
                      wealth=hints.wealth)
    decisions = CycleDecisions(inp.cycle, caps, dict(hm.counts), dict(hm.deferred), placed, evicted,
                               tuple(d.carried), tuple(d.actions))
    return CycleResult(decisions, hm, d, pure)
