"""The RM's own bookkeeping between cycles, which rmref's phases read but do not keep.

What the RM's JobManagerConverter does with each Orchestrator publication (jobArrives,
jobUpdate, reconcileProcess, "Removing unschedulable"), the share ids it hands out, and the one
cap input it computes itself, `RmJob.getPrjCap` (the projected cap of a job with prediction):

* a job arrives with the Orchestrator's work count (never less than 1 remaining), a time per item
  of 0 and, when the job sets no process limit, the RM's default of 10; from the next
  publication on, jobUpdate sets the remaining work, the mean item time (NaN before the first
  completed item), the Orchestrator's limit (none when unset) and `init_wait` (the job is not
  Running yet); a Completing job is marked complete (its cap is what it holds);
* services and managed reservations are limited to one process; a service's processes are
  reconciled only when its state changes, a managed reservation's at every publication;
* a process the Orchestrator reports gives its share the initialization window and investment
  it reports; a Stopped process's share is forgotten; a Completed piece of work leaves.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from replay.apps.simulate.orchestrator import COMPLETED, COMPLETING
from replay.apps.simulate.orchestrator import Work as OrWork
from replay.apps.simulate.workload import WorkSpec
from rmref import UNLIMITED, CapInput
from rmref.behaviours import Behaviours
from rmref.model import ClassDef, Share

DEFAULT_PROCESSES = 10  # SchedConstants.DEFAULT_PROCESSES: a job's limit until the Orchestrator's arrives
DEFAULT_TASKS = 10  # ducc.rm.default.tasks: the work count of work that states none


@dataclass
class RmShare:
    """A share as the RM holds it."""

    share_id: int
    host: str
    pending_removal: bool = False
    initialized: bool = False  # the Orchestrator sent an initialization window
    init_ms: int = 0
    investment: int = 0
    # what a NodePool.disable and the node's return did to it (rmref.model.Share's flags of the
    # same names): purged by the disable; left on the old record when the node came back as a new
    # one; on a dead node's record that came back (`Host reactivated`)
    purged: bool = False
    stranded: bool = False
    revived: bool = False
    handed_over: bool = False  # defragmentation handed it to this job (rmref.model.Share.handed_over)


@dataclass
class RmJob:
    """A job as the RM's job table holds it."""

    spec: WorkSpec
    max_shares: int
    remaining: int
    time_per_item: float
    init_wait: bool
    completed: bool = False
    state: str = ""  # the Orchestrator state last seen
    shares: dict[int, RmShare] = field(default_factory=dict)

    def held(self) -> int:
        """countNShares: processes held, less those being removed."""
        return sum(not s.pending_removal for s in self.shares.values())


def arrive(spec: WorkSpec, work: OrWork, state: str, cls: ClassDef | None) -> RmJob:
    """jobArrives: the RM's first view of the work."""
    if spec.is_job:
        total = spec.items if spec.items > 0 else DEFAULT_TASKS
        limit = spec.max_processes or DEFAULT_PROCESSES
        return RmJob(spec, limit, max(total - work.done, 1), 0.0, state != "Running", state=state)
    one = 1 if spec.work_type == "Reservation" or (cls is not None and cls.policy != "FAIR_SHARE") else UNLIMITED
    return RmJob(spec, one, DEFAULT_TASKS, 0.0, spec.work_type != "Reservation" and state != "Running", state=state)


def update(job: RmJob, work: OrWork, state: str, t: float, stop_delay: float) -> None:
    """One publication of an admitted piece of work: jobUpdate, then reconcileProcess."""
    spec = job.spec
    changed = state != job.state
    job.state = state
    if spec.work_type == "Reservation":
        return
    if spec.is_job:
        job.max_shares = spec.max_processes or UNLIMITED
        job.remaining = work.remaining
        job.time_per_item = work.mean_ms
        job.init_wait = state != "Running"
        if state == COMPLETING:
            job.completed = True
    elif spec.work_type == "Service" and not changed:
        return  # the RM reconciles a service's processes only when its state changes
    _reconcile(job, work, t, stop_delay)


def _reconcile(job: RmJob, work: OrWork, t: float, stop_delay: float) -> None:
    """reconcileProcess: reported processes update their share, Stopped ones give it up."""
    invested = work.investments(t) if job.spec.is_job else {}
    for sid, share in list(job.shares.items()):
        p = work.processes.get(sid)
        if p is None or p.assigned >= t:
            continue  # not published by the Orchestrator yet
        if p.stopped(t, stop_delay):
            del job.shares[sid]
            if not job.spec.is_job:
                job.completed = True
            continue
        if p.removed is not None and p.stopping:
            continue  # "ignoring update because of state Stopping"
        if p.run_start == -math.inf:
            pass  # running since before the log: the initialization it reported then, as it arrived (RmShare.init_ms)
        elif t > p.init_start:
            share.initialized = True
            share.init_ms = int(p.init_elapsed(t))
        share.investment = int(invested.get(sid, 0.0))


def gone(state: str) -> bool:
    """The RM removes work the Orchestrator shows Completed."""
    return state == COMPLETED


def projected_cap(job: RmJob, cls: ClassDef, epoch_ms: int, purged: int = 0) -> tuple[bool, int]:
    """(has an item time, getPrjCap's answer): the RM's projection of the processes a job will need.

    Nothing is projected (UNLIMITED) while the job waits for its first process to run or has no
    time per item yet; whether the job then still counts as initializing is the release's rule
    (rmref.caps.waiting). Otherwise the work its current processes would do in (mean
    initialization time + one epoch + the class's fudge) is taken off the remaining work, and the
    rest divided among threads (at least the processes it holds). The processes it holds are
    countNShares', which leaves out the `purged` ones NodePool.disable took this cycle (before the
    caps: shrinkByOne).
    """
    tpi = job.time_per_item
    if job.init_wait or math.isnan(tpi) or tpi == 0.0:
        return False, UNLIMITED
    inits = [s.init_ms for s in job.shares.values() if s.initialized and s.init_ms > 0]
    init = sum(inits) // len(inits) if inits else 0
    target = init + epoch_ms + cls.prediction_fudge
    held = job.held() - purged
    threads = job.spec.threads
    projected = math.floor(target * (held * threads / tpi) + 0.5)
    future = max(job.remaining - projected, 0)
    answer = -(-future // threads)
    return True, answer if answer else held


def cap_input(job: RmJob, cls: ClassDef | None, epoch_ms: int, purged: int, behaviours: Behaviours) -> CapInput:
    """What initJobCap reads for the job this cycle (`behaviours`: the release's, Config.behaviours)."""
    spec = job.spec
    reservation = spec.work_type == "Reservation"
    item_time, projected = (projected_cap(job, cls, epoch_ms, purged) if cls is not None and spec.is_job
                            else (True, UNLIMITED))
    return CapInput(
        remaining=1 if reservation else job.remaining, threads=1 if reservation else spec.threads,
        current=job.held() - purged, max_processes=job.max_shares, initialized=not job.init_wait,
        projected=projected, init_cap=cls.init_cap if cls else 0,
        expand_by_doubling=cls.expand_by_doubling if cls else False,
        use_prediction=cls.prediction if cls else False, completed=job.completed, item_time=item_time,
        behaviours=behaviours,
    )


def shares(job: RmJob, order: int, ranks: Mapping[tuple[str, int], int] | None = None) -> tuple[Share, ...]:
    """The job's shares as rmref reads them.

    `ranks` is the order the log printed the job's shares in this cycle (the RM sorts its
    Existing list by its own investment comparator). Where the simulated job holds exactly the
    shares the log shows, that order stands in for the simulated investment, as the audit does:
    it is what the Orchestrator's per-item timing made it, which a replay cannot know to the
    millisecond, and which decides who is preempted.
    """
    held = sorted(job.shares.values(), key=lambda s: s.share_id)
    if not ranked(job, ranks):
        ranks = None  # they do not name exactly these shares: keep the investments
    return tuple(Share(s.share_id, job.spec.job_id, s.host, order, s.pending_removal, s.initialized,
                       s.init_ms if s.initialized else 0,
                       (ranks[(s.host, s.share_id)] + 1 if s.initialized else 0) if ranks is not None else s.investment,
                       ranks[(s.host, s.share_id)] + 1 if ranks is not None else 0,  # the share map's order, for ties
                       purged=s.purged, stranded=s.stranded, revived=s.revived, handed_over=s.handed_over)
                 for s in held)


def ranked(job: RmJob, ranks: Mapping[tuple[str, int], int] | None) -> bool:
    """Whether the log's Existing order (`ranks`) names exactly the job's shares: `shares` then
    reads it as their investments."""
    return ranks is not None and len(ranks) == len(job.shares) and all(
        (s.host, s.share_id) in ranks for s in job.shares.values())
