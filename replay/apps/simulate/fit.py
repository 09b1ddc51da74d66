"""Work-item times from the log: how long each item, in the order it was handed out, kept a thread busy.

The Orchestrator reports, at each publication, how many of a job's items are done and their
mean time; it does not say which item took how long. Taking the items in completion order with
each publication's mean gives short items to the first ones handed out whenever many threads
start together (the short ones finish first), and a simulation replaying them runs ahead.

So the items are fitted to the log instead: the job's processes are replayed exactly as the log
shows them (assigned, started after the start delay and initialization, removed), items are
handed out as the Orchestrator does, and the j-th item to complete is made to complete at the
log's j-th completion (the completions a publication reports spread evenly over the interval
before it). An item's time is then its completion less the moment it was handed out. Replaying
the same processes with these times completes the same items at the same publications; a
changed schedule hands them out at other times and they take as long as before. The times are
those of the hand-outs in order: an item lost with a preempted process (its hand-out outlasts the
process) is handed out again, and that hand-out has a time of its own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from replay.apps.simulate.orchestrator import Work
from replay.apps.simulate.workload import WorkSpec

_EPS = 1e-3  # ms: an item completes strictly after it is handed out


def completion_times(updates: Sequence[tuple[float, int]], done_before: int, first: float) -> list[float]:
    """The time of each completion after `done_before`: the n a publication at t reports beyond the
    last spread evenly over (previous publication, t) (each in the middle of its n-th of it, so
    none falls on a publication). `first` is the time the window before the first publication starts."""
    out: list[float] = []
    last_t, last_n = first, done_before
    for t, n in updates:
        if n > last_n:
            step = (t - last_t) / (n - last_n)
            out += [last_t + step * (k + 0.5) for k in range(n - last_n)]
            last_n = n
        last_t = t
    return out


class _Fit(Work):
    """A job on the Orchestrator whose hand-out times are chosen to complete as the log shows."""

    def setup(self, completions: Sequence[float], removals: Mapping[int, float], horizon: float) -> None:
        self._targets, self._removals, self._horizon = list(completions), dict(removals), horizon
        self._next = 0
        self.fitted: list[float] = []

    def _item_time(self, start: float, index: int) -> float:
        removed = self._removals.get(self._by_index[index].share_id)
        if start >= self._horizon:
            return self.item_ms  # handed out after the log's last report: the mean
        if self._next >= len(self._targets):  # still running when the log ends (or is lost): at least that long
            took = max(self.item_ms, min(removed or self._horizon, self._horizon) - start + _EPS)
        else:
            end = max(self._targets[self._next], start + _EPS)
            if removed is not None and removed < end:  # a hand-out the preemption loses: it must outlast it
                took = max(self.item_ms, removed - start + _EPS)
            else:
                self._next += 1
                took = end - start
        self.fitted.append(took)
        return took


def fit_item_times(spec: WorkSpec, times: Sequence[float], added: Mapping[float, Sequence[tuple[int, str]]],
                   removed: Mapping[int, float], running: Sequence[tuple[int, str]],
                   updates: Sequence[tuple[float, int]], stop_delay: float) -> tuple[float, ...]:
    """Hand-out times (ms, in the order items are handed out after the log began) that replay the log's
    completions on the log's own processes (`added`: time -> (share id, host) assigned then;
    `removed`: share id -> removal time; `running`: processes there before the first cycle;
    `updates`: (time, items done) of each publication; `times`: the cycles' times)."""
    if not spec.is_job or not updates:
        return ()
    work = _Fit(spec, spec.start_delay * 1000.0, spec.init * 1000.0, spec.item_ms)
    first = max((t for t in times if t < updates[0][0]), default=updates[0][0])
    work.setup(completion_times(updates, spec.items_done, first), removed, updates[-1][0])
    for sid, host in running:
        work.add(sid, host, times[0], running=True)
    removed_at: dict[float, list[int]] = {}
    for sid, at in sorted(removed.items()):
        removed_at.setdefault(at, []).append(sid)
    first_added = min(added, default=times[0])
    for t in times:
        if t < first_added:
            continue  # nothing runs before its first process
        if t > updates[-1][0]:
            break  # past the log's last report: nothing more to fit
        work.publish(t, stop_delay)
        for sid, host in sorted(added.get(t, ())):
            work.add(sid, host, t)
        for sid in removed_at.get(t, ()):
            work.remove(sid, t)
    return tuple(work.fitted)
