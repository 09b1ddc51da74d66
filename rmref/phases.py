"""The shape of each phase a developer may swap (`rmref.cycle.Phases`): what rmref calls it with, and
what it must return. rmref's own functions are one implementation of each; a `--scheduler` plugin
type-checks against these."""

from __future__ import annotations

from collections.abc import Container, Mapping, Sequence
from typing import Protocol

from rmref.caps import CapInput, Caps
from rmref.choices import Clearing
from rmref.defrag import Defrag
from rmref.howmuch import HowMuch
from rmref.howmuch_state import SetAside
from rmref.model import CycleInput, Eviction, Placement


class CapsPhase(Protocol):
    """The cap phase (RmJob.initJobCap): one job's cap chain for the cycle (rmref.caps.job_caps)."""

    def __call__(self, job: CapInput, /) -> Caps: ...


class HowMuchPhase(Protocol):
    """How Much (NodepoolScheduler.howMuch): every job's process count (rmref.howmuch.how_much), from the
    jobs' actual caps, the users' allotments, the order each class's users were counted in and, where
    the node-map order is open, the machines to clear first for a reservation. Its `HowMuch.set_aside`
    (may be empty) is the clearing step's input."""

    def __call__(self, inp: CycleInput, caps: Mapping[int, int], user_limits: Mapping[str, int] | None = None,
                 user_orders: Sequence[Sequence[str]] = (), /, *, cleared_first: Sequence[str] = (),
                 given_first: Sequence[str] = ()) -> HowMuch: ...


class WhatOfPhase(Protocol):
    """What Of (NodepoolScheduler.whatOfToken): the new processes of the cycle on How Much's counts
    (rmref.whatof.what_of); `prefer` ranks machines where their order is open; `stale_left` is How
    Much's `HowMuch.stale_left`, the free space its accounting left each unschedulable machine of
    known size, where What Of's accounting starts (passed only when some machine has one: None, a
    What Of that reads it works it out from `inp`, rmref.howmuch_state.stale_after_howmuch)."""

    def __call__(self, inp: CycleInput, counts: Mapping[int, int], /, *,
                 prefer: Mapping[str, int] | None = None,
                 stale_left: Mapping[str, int] | None = None) -> Sequence[Placement]: ...


class ClearingPhase(Protocol):
    """setupPreemptions (in findMachines): the machines emptied for reservations (rmref.clearing.clearing),
    from How Much's `HowMuch.set_aside`, its counts and What Of's placements; `stale_left` is How
    Much's (None: worked out from `inp`), `cleared_first` the machines the RM cleared, where the
    node-map order is open (passed only when known). rmref's own counts the free machines each
    reservation finds with rmref's What Of walk, not with `placements` (see rmref.clearing)."""

    def __call__(self, inp: CycleInput, counts: Mapping[int, int], set_aside: Sequence[SetAside],
                 placements: Sequence[Placement], /, *, stale_left: Mapping[str, int] | None = None,
                 cleared_first: Sequence[str] = ()) -> Sequence[str]: ...


class EvictionsPhase(Protocol):
    """doEvictions: the shares taken before defragmentation (rmref.evictions.evictions): purges,
    the machines the clearing step empties for reservations (`clear_hosts`), shrinks (a cleared
    host's shares in `share_walk`'s order)."""

    def __call__(self, inp: CycleInput, counts: Mapping[int, int], clear_hosts: Sequence[str] = (),
                 share_walk: Mapping[str, Sequence[int]] | None = None, /) -> Sequence[Eviction]: ...


class DefragPhase(Protocol):
    """Defragmentation (detectFragmentation, takeFromTheRich): rmref.defrag.defragment, on the cycle's
    counts, placements and evictions, with what the RM carries between cycles, the choices to follow
    and How Much's `stale_left` (as What Of takes it)."""

    def __call__(self, inp: CycleInput, counts: Mapping[int, int], placements: Sequence[Placement],
                 evictions: Sequence[Eviction], /, *, pure_fair_share: Mapping[int, int],
                 job_order: Sequence[int] = (), wealth: Mapping[str, int] | None = None,
                 serve: Mapping[int, int] | None = None, known_order: Container[tuple[int, int]] | None = None,
                 choose: Mapping[str, Clearing] | None = None,
                 stale_left: Mapping[str, int] | None = None,
                 searched: Mapping[int, Sequence[Sequence[str]]] | None = None) -> Defrag: ...
