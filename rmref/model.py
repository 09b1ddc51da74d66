"""The records one scheduling cycle reads and writes: rmref's whole public data model.

Inputs describe what the RM knew when a cycle began (configuration, classes, the nodepool tree,
machines with the shares on them, the work with its cap inputs, the needy jobs carried from the
last cycle). Outputs are the decisions of each phase. Everything is a frozen dataclass of plain
values so a cycle can be built by hand in a test, or rebuilt from a log by `replay`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from rmref.behaviours import Behaviours
from rmref.caps import CapInput, Caps
from rmref.constants import DEFAULT_QUANTUM_GB, UNLIMITED

FAIR_SHARE, FIXED_SHARE, RESERVE = "FAIR_SHARE", "FIXED_SHARE", "RESERVE"


@dataclass(frozen=True)
class Config:
    """ducc.properties values the scheduler reads."""

    quantum_gb: int = DEFAULT_QUANTUM_GB  # ducc.rm.share.quantum
    fragmentation_threshold: int = 8  # ducc.rm.fragmentation.threshold
    defragmentation: bool = True
    global_allotment: int = UNLIMITED  # ducc.rm.global_allotment, in GB
    user_allotments: tuple[tuple[str, int], ...] = ()  # ducc.users max-allotment overrides, GB
    behaviours: Behaviours = Behaviours()  # the release whose scheduling rmref reproduces (rmref.behaviours)


@dataclass(frozen=True)
class ClassDef:
    """One scheduling class (ducc.classes)."""

    name: str
    policy: str  # FAIR_SHARE / FIXED_SHARE / RESERVE
    priority: int
    weight: int
    nodepool: str
    init_cap: int = 0
    expand_by_doubling: bool = False
    prediction: bool = False
    prediction_fudge: int = 0
    cap: int = UNLIMITED  # max shares for the class (fair share), UNLIMITED when unset
    max_allotment: int = UNLIMITED  # per-user allotment in quantum shares (fixed / reserve)


@dataclass(frozen=True)
class Nodepool:
    """One node of the nodepool tree; `parent` is None for a top-level pool."""

    name: str
    parent: str | None
    search_order: int = 100
    quantum_gb: int = 0  # a top-level pool's share-quantum (0: the configuration's ducc.rm.share.quantum)


@dataclass(frozen=True)
class Share:
    """A process slot a job holds on a machine."""

    share_id: int  # the RM's number after the host name ("nodeB.sim.ducc.2" is 2)
    job_id: int
    host: str
    order: int  # quantum shares it occupies
    pending_removal: bool = False  # preempted, not yet confirmed gone by the Orchestrator
    initialized: bool = True  # Share.isInitialized: the end of its initialization was reported
    init_ms: int = 0
    investment: int = 0  # work-item time invested (ms), for the eviction order
    # place in the job's share map (RmJob.assignedShares, a HashMap keyed by random share ids),
    # which orders processes the eviction comparator finds equal (neither initialized, same
    # initialization time); 0 when unknown (rmref.evictions then takes the newest first)
    map_rank: int = 0
    # NodePool.disable purged it (the schedule marks it ^P); before 2.1.0 its machine left the pool's
    # tables with it, and came back empty (behaviour purge_by_policy)
    purged: bool = False
    # before 2.1.0 (purge_by_policy): NodePool.disable left it on its machine's old record, and the
    # node came back as a new, empty machine (rmref.evictions.departed, rmref.howmuch_state)
    stranded: bool = False
    # before 2.1.0: its machine died and came back as the same record (`Host reactivated`), which
    # still holds it, purged or not, until the Orchestrator confirms it gone (rmref.evictions.departed)
    revived: bool = False
    # defragmentation handed it, pending, from a fair-share job to this one (clearShare reassigns
    # the share, fixed bit and all): the RM never fixes it, so even a reservation's or fixed-share
    # job's process there leaves its machine freeable (countFreeableMachines)
    handed_over: bool = False


@dataclass(frozen=True)
class Machine:
    """A node as the scheduler sees it at the start of the cycle."""

    name: str
    nodepool: str  # the deepest pool it belongs to
    order: int  # share order: memory in whole quanta
    memory_mb: int
    ip: str = ""
    online: bool = True  # responsive and not offline (schedulable)
    blacklisted: bool = False
    varied_off: bool = False  # offline because an administrator varied it off (not dead: it keeps non-preemptable work)
    # unschedulable: the free space the RM's tables last left it (reset skips it) as How Much's
    # accounting meets it; None if not known
    stale_free: int | None = None
    # the same as What Of's accounting meets it, where the log shows it: How Much's accounting of
    # the fixed and reserved work there moved it in between (None: What Of starts from `stale_free`)
    stale_free_whatof: int | None = None
    # before 2.1.0: the free space of its old record, which the disable took out of the tables with
    # the processes it kept (`Share.stranded`) and no reset touches since: what the last schedule
    # before the disable left it, or the cycle's "bad virtual machine list" line; None if not known
    old_free: int | None = None
    # NodePool.disable ran on it since the previous cycle, which purges its work this cycle: DEAD (it
    # stopped answering) or VARIED_OFF (an administrator took it offline); "" when it did not
    disabled: str = ""
    # False: no line states it and `memory_mb` is order x quantum, only its least (the RM's memory is
    # the node's total, its order what is free of it less the reserved DRAM): how it compares with
    # another machine's is open (rmref.take_from_the_rich)
    memory_stated: bool = True


@dataclass(frozen=True)
class Work:
    """A job, service or reservation with what the phases read about it."""

    job_id: int
    work_type: str  # Job / Service / Reservation / ManagedReservation / Pop
    user: str
    class_name: str
    order: int  # share order of one process
    memory_gb: int
    cap_input: CapInput
    submit_seq: int = 0  # submission time, or any number ordered like it (JobByTimeSorter; equal = a tie)
    shares: tuple[Share, ...] = ()


@dataclass(frozen=True)
class CycleInput:
    """Everything one scheduling cycle starts from."""

    cycle: int
    config: Config
    classes: tuple[ClassDef, ...]
    nodepools: tuple[Nodepool, ...]
    machines: tuple[Machine, ...]
    work: tuple[Work, ...]
    # job ids left needy by the previous cycle's defragmentation, in the order it found them
    needy: tuple[int, ...] = ()
    # Share.investment only ranks each job's own processes (a log prints every job's processes in
    # investment order, never the amounts), so two jobs' investments do not compare
    investment_ranked: bool = False

    def class_of(self, work: Work) -> ClassDef | None:
        """The work's class, or None when the configuration does not define it."""
        return self._classes_by_name.get(work.class_name)

    @cached_property
    def _classes_by_name(self) -> dict[str, ClassDef]:
        # every phase asks for each job's class, many times a cycle: a walk of the classes each time
        # was a fortieth of an audit (the first of a name wins, as the walk found it)
        named: dict[str, ClassDef] = {}
        for c in self.classes:
            named.setdefault(c.name, c)
        return named


@dataclass(frozen=True)
class Placement:
    """A new process: job, host and order (share ids are the RM's and are not predicted)."""

    job_id: int
    host: str
    order: int


@dataclass(frozen=True)
class Eviction:
    """A process the cycle takes from a job."""

    job_id: int
    host: str
    share_id: int
    order: int
    reason: str  # purge / reservation / shrink (rmref.evictions)


@dataclass(frozen=True)
class DefragAction:
    """One defragmentation step: a donor's share given up (or reassigned) for a needy job."""

    action: str  # evict / reassign_pending / cancel_pending
    needy_job: int
    donor_job: int
    host: str
    share_id: int
    order: int


@dataclass(frozen=True)
class CycleDecisions:
    """What rmref decided for one cycle, phase by phase."""

    cycle: int
    caps: dict[int, Caps] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)  # How Much: processes per job
    deferred: dict[int, str] = field(default_factory=dict)  # job -> reason it got nothing
    placements: tuple[Placement, ...] = ()
    evictions: tuple[Eviction, ...] = ()
    needy: tuple[int, ...] = ()
    defrag: tuple[DefragAction, ...] = ()
