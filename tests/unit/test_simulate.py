"""The simulator's parts on hand-worked examples: the Orchestrator's work items and process life,
the RM's projected cap (checked against a line the real RM logged), the item-time fit (against
the simulation that generated the completions), and the workload table's validation."""

from __future__ import annotations

import math

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from replay.apps.simulate import rm
from replay.apps.simulate.fit import completion_times, fit_item_times
from replay.apps.simulate.metrics import nearest_rank
from replay.apps.simulate.orchestrator import COMPLETED, COMPLETING, Work
from replay.apps.simulate.workload import (
    SCHEMA,
    NodeEvent,
    StartShare,
    Workload,
    WorkSpec,
    workload_from_frame,
)
from replay.parsing.sources import InputError
from rmref import UNLIMITED
from rmref.model import ClassDef

STOP = 10_000.0


def _job(**kw) -> WorkSpec:
    base = {"job_id": 7, "work_type": "Job", "user": "ann", "class_name": "normal", "memory_gb": 4, "threads": 2,
            "max_processes": None, "submit": 0.0, "admit_delay": 0.0, "start_delay": 5.0, "stop_delay": 10.0,
            "init": 10.0, "items": 6, "items_done": 0, "item_ms": 20_000.0}
    return WorkSpec(**{**base, **kw})


def _work(spec: WorkSpec) -> Work:
    return Work(spec, spec.start_delay * 1000, spec.init * 1000, spec.item_ms)


def test_items_run_two_at_a_time_after_start_delay_and_initialization():
    """Assigned at 0: initializing from 5 s, running from 15 s; two threads, 20 s items: 2 done at
    35 s, 4 at 55 s, all 6 at 75 s; the publication at 80 s shows it Completing, and the one
    after the stop delay Completed."""
    w = _work(_job())
    w.add(1, "n1", 0.0)
    assert w.publish(10_000, STOP) == "Initializing"
    assert w.processes[1].init_elapsed(10_000) == 5_000
    states = {t: w.publish(t, STOP) for t in (20_000, 30_000, 40_000, 60_000, 70_000, 80_000, 90_000)}
    assert states[20_000] == "Running" and w.remaining == 0
    assert states[80_000] == COMPLETING and states[90_000] == COMPLETED


def test_a_preempted_process_loses_its_items_in_flight():
    """Two processes, one item each in flight when process 2 is removed at 30 s: its item goes
    back to the queue and is redone by process 1; the mean counts only completed items."""
    w = _work(_job(threads=1, items=3))
    w.add(1, "n1", 0.0)
    w.add(2, "n2", 0.0)
    w.publish(30_000, STOP)  # both run from 15 s; items 0 and 1 end at 35 s
    w.remove(2, 30_000)
    w.publish(40_000, STOP)
    assert w.done == 1  # item 0 on process 1; item 1 lost with process 2
    w.publish(80_000, STOP)  # process 1 redoes item 1 (35-55 s) then item 2 (55-75 s)
    assert w.done == 3 and w.mean_ms == 20_000


def test_a_service_runs_its_duration_from_its_first_process_start():
    spec = _job(work_type="Service", items=0, duration=30.0)
    w = _work(spec)
    w.add(1, "n1", 0.0)
    assert w.publish(40_000, STOP) == "Running"  # running from 15 s, ends at 45 s
    assert w.publish(50_000, STOP) == COMPLETING
    assert w.publish(60_000, STOP) == COMPLETED


def test_projected_cap_reproduces_a_logged_getprjcap_line():
    """e_initcap_prediction, 00:03:50: `getPrjCap pia O 2 T 66785 NTh 112 TI 46785 TR 9818.719298245614
    ... QR 2943 P 762 F 2181 ... return 546` (28 processes of 4 threads, epoch 10 s + fudge 10 s)."""
    job = rm.RmJob(_job(threads=4), max_shares=100, remaining=2943, time_per_item=9818.719298245614, init_wait=False)
    job.shares = {i: rm.RmShare(i, "h", initialized=True, init_ms=46785) for i in range(28)}
    cls = ClassDef("normal", "FAIR_SHARE", 10, 100, "--default--", prediction=True, prediction_fudge=10_000)
    assert rm.projected_cap(job, cls, 10_000) == (True, 546)


def test_processes_purged_this_cycle_leave_the_projection():
    """releases/2.0.0/eligible-order, 00:01:50: np109 is gone and NodePool.disable purges job 6's three
    processes there before the caps, so countNShares is 97 of the 100 it holds: `getPrjCap eve O 4 T 78220
    NTh 388 TI 8220 TR 9200.0 ... QR 421 P 3299 F 0 ... return 97` (4 threads, epoch 10 s + fudge 60 s)."""
    job = rm.RmJob(_job(threads=4), max_shares=100, remaining=421, time_per_item=9200.0, init_wait=False)
    job.shares = {i: rm.RmShare(i, "h", initialized=True, init_ms=8220) for i in range(100)}
    cls = ClassDef("fair2a", "FAIR_SHARE", 10, 100, "--default--", prediction=True, prediction_fudge=60_000)
    assert rm.projected_cap(job, cls, 10_000, purged=3) == (True, 97)
    assert rm.projected_cap(job, cls, 10_000) == (True, 100)  # read as if none were purged: the cycle's cap too high


def test_no_projection_before_a_time_per_item():
    job = rm.RmJob(_job(), max_shares=10, remaining=100, time_per_item=math.nan, init_wait=False)
    cls = ClassDef("normal", "FAIR_SHARE", 10, 100, "--default--", prediction=True)
    assert rm.projected_cap(job, cls, 10_000) == (False, UNLIMITED)


def test_completion_times_spread_each_publication_over_its_interval():
    assert completion_times([(10.0, 0), (20.0, 2), (30.0, 2), (40.0, 3)], 0, 0.0) == [12.5, 17.5, 35.0]


@given(st.lists(st.floats(min_value=1.0, max_value=40_000.0), min_size=1, max_size=60),
       st.lists(st.tuples(st.integers(0, 20), st.integers(0, 30)), min_size=1, max_size=4),
       st.integers(1, 3))
def test_fitted_item_times_replay_the_completions_they_were_fitted_to(durations, procs, threads):
    """Generate a job's completions with arbitrary item times and a process timeline (processes
    assigned at some publication, some removed later); fit item times to those completions alone;
    replaying the same processes with the fitted times completes as many items at every publication."""
    times = [10_000.0 * k for k in range(45)]
    spec = _job(threads=threads, items=len(durations), item_ms=sum(durations) / len(durations), init=3.0)
    added: dict[float, list] = {}
    removed: dict[int, float] = {}
    for sid, (start, life) in enumerate(procs, 1):
        added.setdefault(times[start], []).append((sid, f"n{sid}"))
        if life and start + life < len(times):
            removed[sid] = times[start + life]

    def run(item_times: tuple[float, ...]) -> list[tuple[float, int]]:
        w = Work(spec, spec.start_delay * 1000, spec.init * 1000, spec.item_ms)
        w._times = item_times  # the hand-out times under test
        seen = []
        for t in times:
            w.publish(t, STOP)
            seen.append((t, w.done))
            for sid, host in added.get(t, ()):
                w.add(sid, host, t)
            for sid, at in removed.items():
                if at == t:
                    w.remove(sid, t)
        return seen

    truth = run(tuple(durations) * 3)  # hand-outs past the list (items lost and redone) repeat it
    fitted = fit_item_times(spec, times, added, removed, [], truth, STOP)
    assert run(fitted) == truth


def test_nearest_rank_quantiles():
    assert nearest_rank([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert nearest_rank([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0], 0.9) == 9.0
    assert nearest_rank([], 0.9) is None


def _workload() -> Workload:
    return Workload((_job(), _job(job_id=8, work_type="Reservation", items=0, duration=60.0)),
                    (NodeEvent(0.0, "n1", "arrive", "--default--", 32768, 8, "10.0.0.1", note="order 8 of 8 or 9"),
                     NodeEvent(50.0, "n1", "death")), (StartShare(7, "n1", 3), StartShare(7, "n1", 4, leaving=True)))


def test_the_workload_table_round_trips():
    assert workload_from_frame(_workload().frame()) == _workload()


@pytest.mark.parametrize("edit, message", [
    (lambda f: f.drop("item_ms"), "missing column(s) item_ms"),
    (lambda f: f.with_columns(pl.lit("many").alias("threads")), "wrong type"),
    (lambda f: f.with_columns(pl.when(pl.col("kind") == "work").then(None).otherwise(pl.col("init")).alias("init")),
     "have no init"),
    (lambda f: f.with_columns(pl.when(pl.col("job_id") == 7).then(-1).otherwise(pl.col("threads")).alias("threads")),
     "job 7: threads must be positive"),
    (lambda f: f.with_columns(pl.when(pl.col("kind") == "node").then(pl.lit("explode")).otherwise(pl.col("event"))
                              .alias("event")), "node event 'explode'"),
    (lambda f: f.with_columns(pl.lit("job").alias("kind")), "row kind 'job'"),
    (lambda f: f.with_columns(pl.when(pl.col("kind") == "share").then(pl.lit("gone")).otherwise(pl.col("event"))
                              .alias("event")), "share row event 'gone' (job 7)"),
])
def test_a_workload_table_that_cannot_be_used_says_why(edit, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        workload_from_frame(edit(_workload().frame()))


def test_the_schema_names_every_column_the_frame_writes():
    assert list(_workload().frame().columns) == list(SCHEMA)
