"""The story's records: frozen facts about one job and one cycle, and the sections that tell them."""

from __future__ import annotations

from dataclasses import dataclass

from replay.model.settings import Assumption
from rmref import Caps


@dataclass(frozen=True)
class Section:
    """A titled block of the story."""

    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class HeldShare:
    """A process the job holds after the cycle (the published schedule's Existing list)."""

    host: str
    share_id: int
    order: int
    new: bool = False  # added by this cycle
    removing: bool = False  # listed as a removal (preempted, not yet gone)


@dataclass(frozen=True)
class Placed:
    """A new process and the machine it went to, as the machine was just before."""

    host: str
    share_id: int
    order: int
    machine_order: int | None
    free_before: int | None  # quantum shares unused on the machine
    active_before: int | None  # quantum shares in use on the machine
    placed_for: int | None = None  # placed for another job, handed over by defragmentation
    cancelled: bool = False  # never published: defragmentation gave the space to a needy job


@dataclass(frozen=True)
class Taken:
    """A process taken from the job this cycle, and why."""

    host: str
    share_id: int | None
    order: int | None
    # the eviction reason (shrink, node_purge, ...), defrag, removal (only the schedule says), or
    # leaving (decided before a mid-stream log began)
    reason: str
    needy_job: int | None = None  # defrag: the job the process was taken for
    inferred: bool = False  # defrag read from the needy job's eligible machines (INFO names no share), or leaving
    by_rmref: bool = False  # defrag: the needy job is the one rmref's run of the cycle took this same share for


@dataclass(frozen=True)
class LoggedCaps:
    """The cap chain the RM logged (initJobCap)."""

    base: int | None
    expected: int | None
    potential: int | None
    actual: int | None
    prediction: str | None  # predicted / cannot_predict


@dataclass(frozen=True)
class Competitor:
    """One entity of an RmCounter block: what it weighs, wanted and got, by share order."""

    name: str
    weight: int
    wanted: tuple[int, ...]  # index 0 is the total
    given: tuple[int, ...]


@dataclass(frozen=True)
class Counting:
    """One How Much counter run (an RmCounter block) the job took part in."""

    level: str  # countClassShares / countUserShares / countJobShares
    block: int
    vmachines: tuple[int, ...]  # free spaces by size in quanta
    competitors: tuple[Competitor, ...]
    given_logged: bool  # results printed by a DEBUG log (else rmref's run)
    mine: str  # the entity this story follows (class, user or job id)
    approximate: bool = False  # recomputed classes of a nodepool tree (rmref does not bound bonuses per subpool)
    logged_vmachines: tuple[int, ...] | None = None  # the free space the RM's block divided (its log)
    logged_award: tuple[int, ...] | None = None  # what the RM gave `mine`, where its log shows it

    @property
    def quantum_shares(self) -> int:
        """Quantum shares the block divides."""
        return sum(size * n for size, n in enumerate(self.vmachines))

    def of(self, name: str) -> Competitor | None:
        """The competitor called `name`, if it is in the block."""
        return next((c for c in self.competitors if c.name == name), None)


@dataclass(frozen=True)
class LifeEvent:
    """A cycle where the job's processes (or its waiting reason) changed."""

    cycle: int
    processes: int  # held after the cycle
    text: str
    added: int = 0
    preempted: int = 0  # newly listed removals
    count: int | None = None  # the How Much count
    epoch: int | None = None  # the RM's scheduling epoch of the cycle (its name in any copy of the log)


@dataclass(frozen=True)
class Decisions:
    """One side's decisions about the job in the cycle, in the audit's shapes (equal by construction);
    rmref's side holds None for a kind the audit left out in the cycle (no verdict there)."""

    cap: int | None
    count: int | None
    placed: tuple[tuple[str, int], ...] | None  # (host, order) of each new process, sorted
    evicted: tuple[tuple[str, int | None], ...] | None  # (host, share id) taken by doEvictions (None: a purge's host)


@dataclass(frozen=True)
class Divergence:
    """A decision on which the audit finds rmref and the RM apart, and the first step where they part."""

    decision: str
    step: str
    explanation: str


@dataclass(frozen=True)
class Story:
    """Everything `explain` says about one job and one cycle: the facts, then the sections."""

    job_id: int
    cycle: int  # the cycle told in detail
    first_cycle: int
    last_cycle: int
    work_type: str
    user: str
    class_name: str
    policy: str | None
    nodepool: str | None
    memory_gb: int
    order: int
    threads: int | None
    remaining: int | None
    count: int | None  # the How Much count the RM logged (processes the job should have)
    logged_caps: LoggedCaps | None
    caps: Caps | None  # rmref's chain on the rebuilt input
    shares: tuple[HeldShare, ...]
    placed: tuple[Placed, ...]
    taken: tuple[Taken, ...]
    reason: str | None  # the published waiting / deferral reason
    classes: Counting | None  # the How Much levels as the audit's rmref run counted them
    users: Counting | None
    jobs: Counting | None
    life: tuple[LifeEvent, ...]
    sections: tuple[Section, ...]
    rmref: Decisions | None = None  # the audit's rmref run of this cycle, for this job
    logged: Decisions | None = None  # what the RM logged it decided, as the audit reads it
    causes: tuple[Divergence, ...] = ()  # where the two part, per decision (the audit's divergences)
    # the RM's free choices the audit verified (one of the choices rmref found equal: docs/verified-choices.md)
    verified: tuple[Divergence, ...] = ()
    epoch: int | None = None  # the RM's epochs of `cycle`, `first_cycle` and `last_cycle` (replay.model.cycleref)
    first_epoch: int | None = None
    last_epoch: int | None = None
    not_audited: str | None = None  # why the audit left this cycle out (replay.model.start), if it did
    predates_log: bool = False  # already there when the log begins (its submission is not in the log)
    assumed: tuple[Assumption, ...] = ()  # the settings not given by the log or --config, as the audit read them
    damaged: str | None = None  # why the cycle's input is damaged (replay.model.damage): no verdict on the RM there
    rm_release: dict[str, str] | None = None  # the DUCC release replayed: release, source, evidence

    @property
    def actual_cap(self) -> int | None:
        """The cap the RM logged, else rmref's."""
        if self.logged_caps and self.logged_caps.actual is not None:
            return self.logged_caps.actual
        return self.caps.actual if self.caps else None

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts of the processes held after the cycle, sorted (a host once per process)."""
        return tuple(sorted(s.host for s in self.shares))
