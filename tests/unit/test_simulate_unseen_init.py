"""The initialization time of a job no process of which was seen running, on a case taken from a
2,600-cycle oracle log (the i_mega24 cluster, its work reshuffled; docs/simulate-fidelity.md).

Job 172 (302 items of 52.64 ms, 4 threads, start delay 5 s): its first process, assigned at
25,780 s, was preempted at 25,800 s while still initializing; its second, assigned at 25,880 s,
was last shown initializing for 25 s and the job was Completing at the 25,920 s publication. The
real RM's run used an initialization of 29.96 s (the scenario's `init_ms` 29,960).
"""

from __future__ import annotations

from replay.apps.simulate.orchestrator import COMPLETING, Work
from replay.apps.simulate.reconstruct import _surviving_start, _unseen_init
from replay.apps.simulate.workload import WorkSpec

ADDED = {25_780_000.0: [(1329, "sys293-51")], 25_880_000.0: [(1336, "sys293-51")]}
REMOVED = {1329: 25_800_000.0}
END = {"end": 25_920.0, "left": 0}
ITEMS, ITEM_MS, THREADS, DELAY, SHOWN = 302, 52.639073, 4, 5.0, 25.0
TRUE_INIT = 29.96  # the scenario's init_ms
LOGGED_END = 25_920.0


def _init(start: float) -> float:
    it = {"item_profile": [{"items": ITEMS, "ms": ITEM_MS}]}
    return _unseen_init(SHOWN, 30.0, END, start, DELAY, ITEMS, it, ITEM_MS, THREADS, 10.0)[0]


def _simulated_end(init: float) -> float:
    """The first publication (every 10 s) that shows the job Completing, its process assigned at 25,880 s."""
    spec = WorkSpec(172, "Job", "Rufus", "normal", 37, THREADS, 10, 25_700.0, 10.0, DELAY, 10.0, init,
                    ITEMS, 0, ITEM_MS, (), ((ITEMS, ITEM_MS),))
    work = Work(spec, DELAY * 1000.0, init * 1000.0, ITEM_MS)
    work.add(1336, "sys293-51", 25_880_000.0)
    t = 25_890_000.0
    while work.publish(t, 10_000.0) != COMPLETING:
        t += 10_000.0
    return t / 1000.0


def test_the_range_counts_from_the_process_still_held_at_the_end():
    """A process preempted while initializing did none of the work: the range's upper end counts
    from the later assignment, and the scenario's own initialization lies inside it."""
    start = _surviving_start((ADDED, REMOVED, []), END, 25_780.0)
    assert start == 25_880.0
    init = _init(start)
    assert SHOWN <= init <= END["end"] - start - DELAY
    assert abs(init - TRUE_INIT) < END["end"] - start - DELAY - SHOWN


def test_the_job_completes_at_the_logged_publication():
    """Replayed with the estimate, the job is Completing at the publication the log shows (with the
    range counted from the first assignment it was 50 s late)."""
    assert _simulated_end(TRUE_INIT) == LOGGED_END  # the hand-worked case itself is consistent
    assert _simulated_end(_init(_surviving_start((ADDED, REMOVED, []), END, 25_780.0))) == LOGGED_END
    assert _simulated_end(_init(25_780.0)) > LOGGED_END


def test_without_a_timeline_the_first_assignment_is_kept():
    """No process timeline (or no end): the first assignment, as before."""
    assert _surviving_start(None, END, 25_780.0) == 25_780.0
    assert _surviving_start((ADDED, REMOVED, []), None, 25_780.0) == 25_780.0


def test_still_initializing_at_the_log_s_end_takes_longer_than_it_was_shown():
    """releases/2.0.0/free-before-clearing: job 2's processes were last shown initializing for 92 s,
    at the log's last publication (its cap line: init_wait true), and no job that ran took more
    than 60 s (median 5 s). An initialization of exactly 92 s would have them running at that very
    publication; one publication (10 s) more keeps them initializing through it, as the log shows."""
    init, why = _unseen_init(92.0, 5.0, None, None, DELAY, 29, {}, 0.0, 1, 10.0)
    assert init == 102.0 and "one publication more than the 92 s" in why
    assert _unseen_init(25.0, 30.0, None, None, DELAY, 29, {}, 0.0, 1, 10.0)[0] == 30.0  # the median, longer
