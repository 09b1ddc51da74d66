"""What an audit finds: its result, each divergent or verified decision, and what one cycle carries and runs."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from replay.apps.baseline import NONE, BaselineCycle, Choices
from replay.model.cycleref import span_of
from replay.model.damage import Damage, damage_report
from replay.model.logged import Logged
from replay.apps.reports import Agreement, AuditReport, Coverage, LeftOut, as_json
from replay.model.release import ReleaseChoice
from replay.model.settings import Assumption
from rmref import Caps, Defrag, HowMuch, Memory
from rmref.cycle import CycleResult
from rmref.model import CycleInput, Eviction, Placement

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "schedule")


@dataclass(frozen=True)
class Finding:
    """One decision rmref and the log part on (a divergence), or one free choice of the RM's that
    rmref found among its equal ones (a verified choice): a row of divergences.parquet or
    verified_choices.parquet (DIVERGENCE_SCHEMA, without the epoch)."""

    cycle: int
    job_id: int | None
    decision: str  # the decision kind (DECISIONS)
    logged: str
    reference: str  # rmref's decision; for a verified choice, rmref's own pick
    explanation: str  # the whole sentence
    step: str  # the RM's method the decision is made in
    detail: str

    def row(self) -> tuple[int, int | None, str, str, str, str, str, str]:
        """The values in DIVERGENCE_SCHEMA's order."""
        return (self.cycle, self.job_id, self.decision, self.logged, self.reference, self.explanation, self.step,
                self.detail)


@dataclass
class AuditResult:
    """rmref's decisions, the divergences and the per-kind tallies of one audit."""

    cycles: list[int] = field(default_factory=list)
    ref: dict[str, list[tuple[Any, ...]]] = field(default_factory=lambda: {k: [] for k in DECISIONS})
    divergences: list[Finding] = field(default_factory=list)
    # the RM's free choices found among rmref's equal ones (replay.apps.verify), counted as agreeing
    verified: list[Finding] = field(default_factory=list)
    tally: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in DECISIONS})
    audited: tuple[str, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)  # cycles not audited at all, and why
    damaged: dict[int, Damage] = field(default_factory=dict)  # cycles not audited: their input is damaged
    # decision kind -> cycle -> why that kind was not audited in that cycle (whole cycles included)
    skipped_kinds: dict[str, dict[int, str]] = field(default_factory=dict)
    assumed: tuple[Assumption, ...] = ()  # every setting rmref read and its source, and the nodes inferred
    arrival_open: tuple[str, ...] = ()  # nodes whose arrival order is assumed (Inventory.arrival_open)
    # the orders no line states, as every view draws them (replay.model.nodes.drawn_orders)
    orders_drawn: dict[str, tuple[int, str]] = field(default_factory=dict)
    wealth: dict[str, int] | None = None  # users' wealth, which defragmentation carries between cycles
    chained: CycleResult | None = None  # the last cycle's end-to-end run (what rmref carries forward)
    start: Carried | None = None  # what the first cycle run starts from, when not the log's start (a re-entry)
    # a stored audit's way back into any audited cycle (replay.apps.stored): (tables, cycle) -> its trace
    reenter: Callable[[Mapping[str, pl.DataFrame], int], CycleTrace | None] | None = None
    traces: dict[int, CycleTrace] = field(default_factory=dict)  # rmref's whole run of the cycles asked for
    # what each audited cycle started from and the kinds run in it (to run it again: `run.rerun`)
    carried: dict[int, tuple[Carried, tuple[str, ...]]] = field(default_factory=dict)
    epochs: dict[int, int | None] = field(default_factory=dict)  # cycle -> the RM's epoch (its name in any copy)
    config_conflicts: tuple[dict[str, str], ...] = ()  # where --config contradicts the log (configdir.apply_config)
    users_open: bool = False  # whether users have allotments of their own is not known (Bootstrap.users_open)
    thresholds_open: tuple[int, ...] = ()  # other fragmentation thresholds the log allows (Bootstrap.thresholds_open)
    rm_release: ReleaseChoice | None = None  # the DUCC release replayed, its source and evidence
    # cycle -> rmref unchanged as the chained run left it: the baseline of whatif and check
    baseline: dict[int, BaselineCycle] = field(default_factory=dict)

    def report(self) -> dict[str, Any]:
        """The report.json contract (`summary`, in JSON's shapes)."""
        return as_json(self.summary())

    def summary(self) -> AuditReport:
        """What the audit found, as report.json holds it."""
        bad = {d.cycle for d in self.divergences}
        return AuditReport(
            cycles=len(self.cycles) + len(self.damaged) + len(self.skipped),
            cycles_audited=len(self.cycles),
            cycles_agree=sum(1 for c in self.cycles if c not in bad),
            damaged=damage_report(self.damaged),
            config_conflicts=list(self.config_conflicts),
            decisions={k: Agreement(a, t) for k, (a, t) in self.tally.items()},
            verified_choices={k: sum(1 for v in self.verified if v.decision == k) for k in self.audited},
            audited=list(self.audited),
            skipped=LeftOut(len(self.skipped), next(iter(self.skipped.values()), None)),
            span=span_of(self.cycles, self.epochs),
            coverage=self.coverage(),
            assumed=list(self.assumed),
            rm_release=self.rm_release.to_json() if self.rm_release else None,
        )

    def coverage(self) -> dict[str, Coverage]:
        """Per decision kind: cycles audited, cycles skipped and why (reason -> cycles)."""
        out = {}
        for kind in self.audited:
            skipped = self.skipped_kinds.get(kind, {})
            reasons: dict[str, int] = {}
            for why in skipped.values():
                reasons[why] = reasons.get(why, 0) + 1
            out[kind] = Coverage(sum(1 for c in self.cycles if c not in skipped), len(skipped), reasons)
        return out

    def carry(self) -> Carried:
        """What rmref carries into the next cycle from the cycles run so far."""
        if self.chained is not None:
            return Carried(self.wealth, self.chained.memory)
        return Carried(self.wealth, self.start.memory if self.start else Memory())

    def mark(self) -> Mark:
        """Where the audit stands: what `undo` goes back to."""
        return Mark({k: list(v) for k, v in self.tally.items()}, len(self.divergences), len(self.verified),
                    {k: len(v) for k, v in self.ref.items()})

    def undo(self, mark: Mark, kinds: Collection[str]) -> None:
        """Take back what was tallied and found for `kinds` since `mark` (a cycle run, then left out)."""
        for kind in kinds:
            self.tally[kind] = list(mark.tally[kind])
            del self.ref[kind][mark.ref[kind]:]
        since = self.divergences[mark.divergences:]
        self.divergences[mark.divergences:] = [d for d in since if d.decision not in kinds]
        self.verified[mark.verified:] = [v for v in self.verified[mark.verified:] if v.decision not in kinds]

    def skip(self, cycle: int, kinds: Collection[str], why: str) -> None:
        """Record that `kinds` were not audited in `cycle`, and why."""
        for kind in kinds:
            self.skipped_kinds.setdefault(kind, {})[cycle] = why

    def left_in(self, cycle: int, ran: Collection[str]) -> tuple[str, ...]:
        """The kinds of `ran` (those a cycle's audit ran) the audit left in for `cycle`: its verdicts
        there, as it recorded them (a kind run, then taken back, is in `skipped_kinds`)."""
        return tuple(k for k in ran if cycle not in self.skipped_kinds.get(k, {}))

    def for_rerun(self, carried: Carried) -> AuditResult:
        """An audit that runs one cycle again from `carried` under this audit's settings: what it
        assumed open (users' allotments, thresholds, node orders) decides the run as it did here."""
        return AuditResult(audited=self.audited, wealth=carried.wealth, start=carried, epochs=self.epochs,
                           arrival_open=self.arrival_open, orders_drawn=self.orders_drawn,
                           users_open=self.users_open, thresholds_open=self.thresholds_open)


@dataclass(frozen=True)
class Mark:
    """An audit's tallies and the lengths of its lists at one point (`AuditResult.mark`)."""

    tally: dict[str, list[int]]
    divergences: int
    verified: int
    ref: dict[str, int]


@dataclass(frozen=True)
class Carried:
    """What rmref carries into a cycle from the ones before (so one cycle can be run again alone):
    the users' wealth the phase-isolated defragmentation left, and the chained run's memory
    (`rmref.Memory`, its `Hints`). Everything else a cycle reads is in its own input."""

    wealth: dict[str, int] | None
    memory: Memory


# what `audit` hands every audited cycle to, before running it: its input, the logged decisions,
# what it starts from and the kinds audited in it (replay.apps.stored keeps them, to re-enter a cycle)
Checkpoint = Callable[[CycleInput, Logged, Carried, tuple[str, ...]], None]


@dataclass(frozen=True)
class CycleTrace:
    """rmref's run of one audited cycle, every phase as the audit ran it: what `explain` tells."""

    cycle: int
    input: CycleInput
    caps: dict[int, Caps] = field(default_factory=dict)
    how_much: HowMuch | None = None  # on the RM's logged caps
    placements: tuple[Placement, ...] = ()  # on the RM's logged counts
    evictions: tuple[Eviction, ...] = ()
    defrag: Defrag | None = None
    chained: CycleResult | None = None  # the phases chained on rmref's own decisions
    followed: Choices = NONE  # the RM's free choices the chained run followed
    served: Mapping[int, int] | None = None  # the RM's needy verdict the chained run served (None: its own)
    logged: Logged | None = None  # the RM's logged decisions the cycle was compared with (the cycle's at least)
    # the decision kinds the audit left in for the cycle: the trace holds rmref's decisions of these only
    kinds: tuple[str, ...] = DECISIONS

    def left_in(self, kinds: Collection[str]) -> CycleTrace:
        """The trace with rmref's decisions of `kinds` only (those the audit left in for the cycle): a
        decision the audit ran and left out is no verdict of its, so no view shows it as rmref's."""
        keep = tuple(k for k in self.kinds if k in kinds)
        schedule = "schedule" in keep
        return replace(self, kinds=keep, caps=self.caps if "caps" in keep else {},
                       how_much=self.how_much if "counts" in keep else None,
                       placements=self.placements if "placements" in keep else (),
                       evictions=self.evictions if "evictions" in keep else (),
                       defrag=self.defrag if "defrag" in keep else None,
                       chained=self.chained if schedule else None, followed=self.followed if schedule else NONE,
                       served=self.served if schedule else None)
