"""The job-cap phase (RmJob.initJobCap): how many processes a job may use this cycle.

The rules are RmJob.initJobCap's (and RmJob.getPrjCap's prediction): the base cap rounds
remaining work *up* and never drops below the processes held; prediction only lowers the
potential cap, and never below the processes held.
"""

from __future__ import annotations

from dataclasses import dataclass

from rmref.behaviours import Behaviours


@dataclass(frozen=True)
class CapInput:
    """What initJobCap reads for one job."""

    remaining: int  # work items not yet done
    threads: int  # threads per process (work items run at once by one process)
    current: int  # processes held (assigned + pending)
    max_processes: int  # process_deployments_max (UNLIMITED when not set)
    initialized: bool  # a process finished initialization (the Orchestrator cleared init_wait)
    projected: int  # getPrjCap's answer (UNLIMITED when it could not predict, 0 = nothing known)
    init_cap: int  # the class's initialization cap (0 = none)
    expand_by_doubling: bool
    use_prediction: bool
    completed: bool = False
    refused: bool = False
    # the job has a work-item time (getPrjCap could predict); from UIMA-4882 on, a job without one
    # is capped as still initializing (behaviour init_wait_without_item_time)
    item_time: bool = True
    behaviours: Behaviours = Behaviours()  # the release's (Config.behaviours)


@dataclass(frozen=True)
class Caps:
    """The cap chain, as initJobCap logs it: which rule bound the job is the first that is smaller."""

    base: int
    projected: int
    potential: int
    actual: int
    rule: str  # what set `actual`: base, prediction, initialization_cap, doubling, restart, completed, refused


def base_cap(remaining: int, threads: int, current: int, max_processes: int) -> int:
    """ceil(remaining / threads), at least the processes held, at most max processes (never < 0)."""
    wanted = -(-max(remaining, 0) // max(threads, 1))
    return max(0, min(max_processes, max(wanted, current)))


def waiting(job: CapInput) -> bool:
    """Whether initJobCap treats the job as waiting for initialization (init_wait)."""
    if not job.initialized:
        return True
    return not job.item_time and job.behaviours.has("init_wait_without_item_time")


def job_caps(job: CapInput) -> Caps:
    """The cap chain of one job for one cycle."""
    if job.refused:
        return Caps(0, 0, 0, 0, "refused")
    if job.completed:
        return Caps(job.current, job.current, job.current, job.current, "completed")
    base = base_cap(job.remaining, job.threads, job.current, job.max_processes)
    projected = base if job.projected == 0 else job.projected
    potential, rule = base, "base"
    if job.use_prediction and projected < base:
        potential, rule = max(projected, job.current), "prediction"
    if waiting(job):
        if job.init_cap > 0 and job.init_cap < potential:
            return Caps(base, projected, potential, job.init_cap, "initialization_cap")
        return Caps(base, projected, potential, potential, rule)
    if job.expand_by_doubling:
        if job.current == 0:  # pushed out entirely: start doubling again from the init cap
            actual = min(base, max(1, job.init_cap))
            return Caps(base, projected, potential, actual, "restart")
        if 2 * job.current < potential:
            return Caps(base, projected, potential, 2 * job.current, "doubling")
    return Caps(base, projected, potential, potential, rule)
