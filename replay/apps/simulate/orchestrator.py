"""The simulated Orchestrator: what happens to work once the RM has scheduled it.

The RM publishes a schedule; the Orchestrator starts the processes it added and stops those it
removed, and publishes, before each scheduling cycle, the state the RM's next cycle reads. This
module models that side as DUCC's Orchestrator behaves (and as the log shows it):

* a process assigned at time `a` starts initializing at `a + start_delay`, initializes for the
  job's `init` time, then runs; the RM first hears of it at the next publication;
* a running job process has one work-item slot per thread; items are handed out in order (items
  given back first) to the slot that is free first; the k-th hand-out takes the log's time for
  it (`replay.apps.simulate.fit`), hand-outs past the log the job's mean item time; the mean the
  Orchestrator reports counts the log's completions in their order;
* a removed process (preempted, purged, or stopping because its work ended) does no more work;
  the items it had in flight go back to the front of the job's queue; it is Stopped (and the RM
  forgets its share) `stop_delay` after the removal;
* a job whose items are all done, a service or managed reservation that has run its `duration`
  from its first process's start, or work its user canceled, is Completing at that publication
  with every process stopping, and Completed at the first publication with none left;
* a reservation is held for its `duration` after the RM assigned it.

All times are milliseconds from the log's first cycle.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from dataclasses import dataclass, field

from replay.apps.simulate.workload import WorkSpec

COMPLETING, COMPLETED = "Completing", "Completed"


@dataclass(frozen=True)
class ItemModel:
    """A job's work items as the Orchestrator runs and reports them (rmref's loop and the Java harness
    read this one model): how long each hand-out keeps its thread busy, and what each completion adds
    to the mean the Orchestrator reports. Past either list, the job's mean `item_ms`."""

    handouts: tuple[float, ...]  # ms, in hand-out order since the log began (fitted to the log)
    reported: tuple[tuple[int, float], ...]  # (items, ms each) in completion order, the log's own means
    item_ms: float


def item_model(spec: WorkSpec, item_ms: float) -> ItemModel:
    """The job's item model; an `item_ms` edited away from the log's mean scales the log's item times
    (the log's own leaves them as they are)."""
    profile = spec.item_profile
    listed = sum(n for n, _ in profile)
    mean = sum(n * ms for n, ms in profile) / listed if listed else 0.0
    scale = item_ms / mean if mean and abs(item_ms / mean - 1.0) > 1e-9 else 1.0
    return ItemModel(tuple(ms * scale for ms in spec.item_times), tuple((n, ms * scale) for n, ms in profile), item_ms)


@dataclass
class Process:
    """One process the RM asked for (a share), as the Orchestrator runs it."""

    share_id: int
    host: str
    index: int  # creation order within the job: ties between free slots go to the oldest process
    assigned: float
    init_start: float
    run_start: float
    removed: float | None = None
    stopping: bool = False  # stopped because the work ended, not by the RM

    def stopped(self, t: float, stop_delay: float) -> bool:
        """Gone by `t` (the Orchestrator reports it Stopped)."""
        return self.removed is not None and t >= self.removed + stop_delay

    def init_elapsed(self, t: float) -> float:
        """The initialization window as reported at `t` (open windows end "now")."""
        return max(0.0, min(t, self.run_start) - self.init_start) if t > self.init_start else 0.0


@dataclass
class Work:
    """One piece of work on the Orchestrator: its processes and, for a job, its work items."""

    spec: WorkSpec
    start_delay: float
    init: float
    item_ms: float
    processes: dict[int, Process] = field(default_factory=dict)  # share id -> process, creation order
    done: int = 0
    done_ms: float = 0.0  # total time of the completed items (the mean the RM reads)
    next_item: int = 0
    requeued: deque[tuple[int, float]] = field(default_factory=deque)  # (item, available from)
    free: list[tuple[float, int, int]] = field(default_factory=list)  # heap of (free from, process index, slot)
    # heap of (ends, process index, slot, started, item)
    busy: list[tuple[float, int, int, float, int]] = field(default_factory=list)
    assigned_at: float | None = None  # a reservation: when the RM first gave it resources
    completing_at: float | None = None
    completed: bool = False
    ever_running: bool = False

    def __post_init__(self) -> None:
        spec = self.spec
        self.done = self.next_item = spec.items_done
        self._by_index: list[Process] = []
        model = item_model(spec, self.item_ms)
        self._times = model.handouts
        self._report = [list(seg) for seg in model.reported]  # completion order: what the mean reads
        self._segment = 0
        self.handed = 0  # items handed out since the log began (a lost one handed out again counts again)
        self.done_ms = 0.0
        for _ in range(self.done):
            self.done_ms += self._reported()

    def _reported(self) -> float:
        """The time the next completed item adds to the mean the Orchestrator reports: the log's
        completions in their order (the mean past them)."""
        report = self._report
        while self._segment < len(report):
            seg = report[self._segment]
            if seg[0] > 0:
                seg[0] -= 1
                return seg[1]
            self._segment += 1
        return self.item_ms

    def _item_time(self, start: float, index: int) -> float:
        """How long the next item handed out (at `start`, to process `index`) keeps its thread busy:
        the log's time for that hand-out, the mean past the log (a hook for fitting)."""
        k = self.handed
        return self._times[k] if k < len(self._times) else self.item_ms

    # -- processes ------------------------------------------------------------------------------

    def add(self, share_id: int, host: str, t: float, running: bool = False, running_from: float | None = None) -> None:
        """The RM assigned a process at `t` (`running`: it was there before the log began, running,
        or from `running_from` on when it was still initializing)."""
        if running and running_from is not None:  # initializing since before the log: as long as the job's others
            start, run = running_from - self.init, running_from
        else:
            start = -math.inf if running else t + self.start_delay
            run = -math.inf if running else start + self.init
        p = Process(share_id, host, len(self._by_index), t, start, run)
        self.processes[share_id] = p
        self._by_index.append(p)
        if self.assigned_at is None:
            self.assigned_at = t
        if self.spec.is_job:
            for slot in range(self.spec.threads):
                heapq.heappush(self.free, (t if running else run, p.index, slot))

    def remove(self, share_id: int, t: float, stopping: bool = False) -> None:
        """The process stops working at `t`; its items in flight go back to the queue."""
        p = self.processes.get(share_id)
        if p is None or p.removed is not None:
            return
        self.advance(t)
        p.removed, p.stopping = t, stopping
        if not self.spec.is_job:
            return
        lost = [b for b in self.busy if b[1] == p.index]
        if lost:
            self.busy = [b for b in self.busy if b[1] != p.index]
            heapq.heapify(self.busy)
            for item in sorted((b[4] for b in lost), reverse=True):
                self.requeued.appendleft((item, t))

    # -- work items -----------------------------------------------------------------------------

    def advance(self, t: float) -> None:
        """Run the job's work items up to `t`: completions first, then dispatch to the earliest free slot."""
        if not self.spec.is_job:
            return
        free, busy, procs, total, requeued = self.free, self.busy, self._by_index, self.spec.items, self.requeued
        pop, push = heapq.heappop, heapq.heappush
        while True:
            while free and procs[free[0][1]].removed is not None:
                pop(free)  # a removed process's slot
            start = None
            if free and (requeued or self.next_item < total):
                start = free[0][0]
                if requeued and requeued[0][1] > start:
                    start = requeued[0][1]
                if start > t:
                    start = None
            if busy and busy[0][0] <= t and (start is None or busy[0][0] <= start):
                ends, index, slot, _began, _item = pop(busy)
                self.done += 1
                self.done_ms += self._reported()
                push(free, (ends, index, slot))
                continue
            if start is None:
                return
            _, index, slot = pop(free)
            if requeued:
                item = requeued.popleft()[0]
            else:
                item = self.next_item
                self.next_item += 1
            push(busy, (start + self._item_time(start, index), index, slot, start, item))
            self.handed += 1

    def investments(self, t: float) -> dict[int, float]:
        """share id -> investment of every process with an item in flight."""
        young: dict[int, float] = {}
        for _e, index, _s, began, _i in self.busy:
            if began <= t:
                age = t - began
                young[index] = min(age, young.get(index, age))
        return {self._by_index[i].share_id: a for i, a in young.items()}

    @property
    def remaining(self) -> int:
        """Items not done (those in flight included)."""
        return max(0, self.spec.items - self.done)

    @property
    def mean_ms(self) -> float:
        """The mean time of a completed item, NaN before the first."""
        return self.done_ms / self.done if self.done else math.nan

    # -- the work's own life --------------------------------------------------------------------

    def live(self, t: float, stop_delay: float) -> list[Process]:
        """Processes not yet Stopped at `t`."""
        return [p for p in self.processes.values() if not p.stopped(t, stop_delay)]

    def running(self, t: float, stop_delay: float) -> bool:
        """Some process reports Running at `t` (a removed one keeps its state until it is Stopped)."""
        return any(not p.stopping and p.run_start <= t and not p.stopped(t, stop_delay)
                   for p in self.processes.values())

    def natural_end(self, t: float) -> bool:
        """All items done; a service's duration run out; a reservation's time up."""
        spec = self.spec
        if spec.is_job:
            return spec.items > 0 and self.done >= spec.items
        if spec.duration is None:
            return False
        if spec.work_type == "Reservation":
            return self.assigned_at is not None and t >= self.assigned_at + spec.duration * 1000.0
        if not self._by_index:
            return False
        first = self._by_index[0]
        # a process running before the log began: its duration counts from the log's first cycle
        began = first.assigned if first.run_start == -math.inf else first.run_start
        return t >= began + spec.duration * 1000.0

    def publish(self, t: float, stop_delay: float) -> str:
        """Advance to the publication at `t` and return the work's state then."""
        self.advance(t)
        spec = self.spec
        if self.completed:
            return COMPLETED
        if self.completing_at is None:
            canceled = spec.cancel is not None and t >= spec.cancel * 1000.0
            if canceled or self.natural_end(t):
                self.completing_at = t
                for p in list(self.processes.values()):
                    if p.removed is None:
                        self.remove(p.share_id, t, stopping=True)
        if self.completing_at is not None:
            if spec.work_type == "Reservation" or (self.completing_at != t and not self.live(t, stop_delay)):
                self.completed = True
                return COMPLETED
            return COMPLETING
        if self.running(t, stop_delay):
            self.ever_running = True
        if not self.processes and not self.ever_running:
            return "WaitingForResources"
        if spec.work_type == "Reservation":
            return "Assigned"
        return "Running" if self.ever_running else "Initializing"
