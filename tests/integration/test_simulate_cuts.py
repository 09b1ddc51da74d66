"""`rmreplay simulate` on INFO logs of the real RM cut mid-stream (fixtures/cuts, with the run's
ducc.classes as `--config` gives it): truth.jsonl, the real RM's state after each schedule from the
cycle before the cut on, is the ground truth. With nothing changed, each job holds in each cycle
the processes truth says the RM left it; where the cut leaves something open that a decision rests
on, the workload's notes say what the simulation took.
"""

from __future__ import annotations

import dataclasses
import gzip
import json

import pytest

from replay import parse
from replay.apps.simulate.metrics import identity, measure
from replay.apps.simulate.simulation import simulate
from replay.model.resources import read_resources
from tests.helpers import FIXTURES

CUTS = FIXTURES / "cuts"


def _cut(name: str, level: str = "rm.log"):
    """The cut's tables (with its resources), truth by epoch, and cycle -> epoch."""
    tables = dict(parse([CUTS / name / f"{level}.gz"]).tables)
    tables.update(read_resources(CUTS / name / "resources"))
    with gzip.open(CUTS / name / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    return tables, records, dict(tables["cycles"].select("cycle", "epoch").iter_rows())


def _truth_held(records: dict, epochs: dict) -> dict[tuple[int, int], int]:
    """(cycle, job) -> processes truth says the RM left the job (its shares not being removed)."""
    return {(c, j["id"]): sum(not s["pending_remove"] for s in j["shares"])
            for c, e in epochs.items() for j in records[e]["jobs"] if not j["refused"]}


def _held(sim) -> dict[tuple[int, int], int]:
    return {(c, j): p for c, j, p in sim.baseline.held}


def test_a_node_down_when_the_log_began_stays_down():
    """fixtures/cuts/leaving_or_cleared (2.1.0): np105, an order-7 node of np1, is offline in every
    record truth has of the cut, and countFreeableMachines passes it over; job 13 wants a whole
    order-7 machine of np1, whose other one (np104) is busy, and is deferred throughout (truth: no
    process in any cycle). The simulation had np105 arrive online at the log's start and gave it
    to job 13 from the first cycle; it stays down (a death at 0, said in its note)."""
    tables, records, epochs = _cut("leaving_or_cleared")
    assert all(not n["online"] for e in epochs.values() for n in records[e]["nodes"] if n["name"] == "np105.sim.ducc")
    sim = simulate(tables)
    events = [(n.time, n.event) for n in sim.workload.nodes if n.host == "np105.sim.ducc"]
    assert events == [(0.0, "arrive"), (0.0, "death")]
    assert "down when the log began" in next(n.note for n in sim.workload.nodes if n.event == "death")
    held, want = _held(sim), _truth_held(records, epochs)
    assert {c: held.get((c, 13), 0) for c in epochs} == {c: want.get((c, 13), 0) for c in epochs}


def _leaving_at(records: dict, epoch: int) -> set[tuple[int, int]]:
    """(job, share) truth lists as preempted in the record before `epoch` and still held at it."""
    before, now = records[epoch - 1], records[epoch]
    held = {(j["id"], s["id"]) for j in now["jobs"] for s in j["shares"]}
    return {(j["id"], s) for j in before["jobs"] for s in j["preempted"]} & held


@pytest.mark.parametrize("name, level", [("leaving_or_cleared", "rm.log"), ("leaving_or_cleared", "rm-debug.log"),
                                         ("shrink_unreported", "rm.log")])
def test_processes_leaving_as_the_log_began_stop_without_a_decision(name, level):
    """The first schedule lists jobs 5 and 6's np102.12 and .19 for removal, preempted in the cycle
    before the cut (truth), and np102.11, which the cycle's clearing of np102 took. The simulation
    held 12 and 19 as running, so the simulated np102 stayed full and job 15 (order 2) got no
    process there in the next cycle, where the RM gave it one. They start leaving (countNShares
    leaves them out; they stop at the stop delay after the cycle before): at DEBUG the findShares
    counts tell them (the replay's start's assumption); at INFO, where the clearing leaves it open,
    the log shows them gone one cycle sooner than a removal in the first cycle can be, and 11
    not (the notes say which was taken). Every job then holds in every cycle what truth says."""
    tables, records, epochs = _cut(name, level)
    first = min(epochs.values())
    sim = simulate(tables)
    assert _held(sim) == _truth_held(records, epochs)
    leaving = {(s.job_id, s.share_id) for s in sim.workload.shares if s.leaving}
    assert leaving == _leaving_at(records, first) == {(5, 12), (6, 19)}
    notes = {w.job_id: w.note for w in sim.workload.work}
    assert "np102.sim.ducc.12" in notes[5] and "np102.sim.ducc.19" in notes[6]
    if level == "rm.log":
        assert "np102.sim.ducc.11 taken as removed by the first cycle's clearing" in notes[6]
    assert identity(measure(tables, sim))["shares_match"] == 1.0


def test_nodes_of_an_open_order_are_named_and_the_divergence_rests_on_them():
    """fixtures/cuts/open_order_defrag (3.0.0): the counters leave eight nodes 11 or 32; taken as
    the replay's start takes them, n11 is 32 and n03 11 where truth has 11 and 32, and in the first
    cycle the simulated takeFromTheRich takes ten of job 21's processes for needy job 31 on n11
    (tests/integration/test_open_orders.py), where the RM took none. The workload's notes name
    every node whose order is open; given truth's orders (the workload edited as a user would),
    every job holds in every cycle what truth says."""
    tables, records, epochs = _cut("open_order_defrag")
    sim = simulate(tables)
    truth_orders = {n["name"]: n["order"] for n in records[min(epochs.values())]["nodes"]}
    taken = {n.host: n.share_order for n in sim.workload.nodes if n.event == "arrive"}
    wrong = sorted(h for h, o in taken.items() if o != truth_orders[h])
    assert wrong == ["n03.sim.ducc", "n11.sim.ducc"]
    named = {n.host for n in sim.workload.nodes if "no line tells which" in n.note}
    assert set(wrong) <= named and "n08.sim.ducc" not in named  # n08's 32 no inference disputes
    first = min(epochs)
    assert _held(sim)[(first, 21)] != _truth_held(records, epochs)[(first, 21)]
    memory = {n["name"]: n["memory_kb"] // 1024 for n in records[min(epochs.values())]["nodes"]}
    nodes = tuple(dataclasses.replace(n, share_order=truth_orders[n.host], memory_mb=memory[n.host])
                  if n.host in wrong else n for n in sim.workload.nodes)
    fixed = simulate(tables, workload=dataclasses.replace(sim.workload, nodes=nodes))
    assert _held(fixed) == _truth_held(records, epochs)


@pytest.mark.parametrize("name, job", [("alike_orders", 12), ("open_orders", 10), ("rival_orders", 11)])
def test_work_whose_class_no_job_line_names_is_simulated_with_the_class_other_lines_give(name, job):
    """A job there before the cut that the RM deferred throughout (alike_orders 12, open_orders 10),
    or held without a line of the job table naming its class (rival_orders 11): simulate refused the
    log. Its class is read where another line names it (open_orders: its deferral, "no hosts of the
    correct size in class rsvb"; rival_orders: detectFragmentation's table), else narrowed to the
    configuration's classes of the policy its counting lines show in the pool doEvictions shows
    (alike_orders: RESERVE, --default--: rsva alone), and said in the job's note. Truth's class
    for it matches, and every job holds in every cycle what truth says."""
    tables, records, epochs = _cut(name)
    sim = simulate(tables)
    spec = next(w for w in sim.workload.work if w.job_id == job)
    truth_class = next(j["class"] for j in records[min(epochs.values())]["jobs"] if j["id"] == job)
    assert spec.class_name == truth_class
    assert "no line of the job table names its class" in spec.note
    assert _held(sim) == _truth_held(records, epochs)


def test_a_projected_rate_the_log_never_shows_is_said_to_be_assumed():
    """leaving_or_cleared's job 15 completes no item while the log runs (its jobUpdate lines show
    none done): the rate its remaining items are projected at is the median of the log's jobs,
    assumed, not "the mean observed" as the note said; job 5's, which the log shows, is."""
    tables, _records, _epochs = _cut("leaving_or_cleared")
    updates = tables["job_events"].filter((tables["job_events"]["job_id"] == 15)
                                          & tables["job_events"]["completed"].is_not_null())
    assert updates["completed"].max() in (None, 0)
    notes = {w.job_id: w.note for w in simulate(tables).workload.work}
    assert "projected at 8000 ms each (assumed: the median of the log's jobs)" in notes[15]
    assert "the mean observed" not in notes[15]
    assert "projected at 7000 ms each (the mean observed)" in notes[5]


def test_an_item_time_no_job_of_the_log_shows_is_not_called_a_median():
    """corpus/midstream_rich_donor_threshold: no jobUpdate line of the log reports a completed item
    or a mean item time; jobs 1 and 2 run past its end at 0 ms an item, which their notes called
    "the median of the log's jobs" and their projection "the mean observed"."""
    tables = parse([FIXTURES / "corpus" / "midstream_rich_donor_threshold" / "rm.log.gz"]).tables
    events = tables["job_events"]
    assert events.filter(events["completed"] > 0).is_empty()
    assert events.filter(events["mean"].is_not_nan() & (events["mean"] > 0)).is_empty()
    notes = {w.job_id: w.note for w in simulate(tables).workload.work}
    for job in (1, 2):
        assert "0 ms per item assumed (no job of the log completed one)" in notes[job]
        assert "projected at 0 ms each (assumed: no job of the log completed one)" in notes[job]
    assert not any("(the median of the log's jobs)" in n or "mean observed" in n for n in notes.values())


def _midstream(name: str, tmp_path):
    """A bundled log cut between cycles where a node went idle (tests/midstream.py), with its
    ducc.classes only, as a rotated log and `--config` give it."""
    from tests.helpers import truth
    from tests.midstream import classes_only, cut

    tables = dict(parse([cut(name, "rm.log", "between", tmp_path / "rm.log")]).tables)
    tables.update(read_resources(classes_only(name, tmp_path / "config")))
    return tables, {r["epoch"]: r for r in truth(name)}, dict(tables["cycles"].select("cycle", "epoch").iter_rows())


def test_work_the_log_never_describes_runs_with_the_threads_and_limit_its_cap_lines_give(tmp_path):
    """b_classes cut where a node went idle: jobs 7 (class fixed) and 8 (debug), submitted before the
    cut, are not fair share, so no line describes them; scenario.json gives them 4 threads and limits
    of 3 and 1. The simulation ran them with one thread and no limit (its own projection of job 7
    then wanted 220 processes where getPrjCap's wanted 45). getPrjCap's NTh is processes x threads
    (12 over job 7's 3), the highest base cap is the limit as the audit reads it. Job 1 holds no
    process at the cut, but has 8 items done: it ran, and the Orchestrator reports it Running (the
    RM's getPrjCap predicts its cap, as for a job not waiting to initialize), not waiting for
    resources. The cut matched 17.5% of job-cycles;
    every job now holds in every cycle what truth says."""
    from tests.helpers import scenario

    tables, records, epochs = _midstream("b_classes", tmp_path)
    sim = simulate(tables)
    spec = {w.job_id: w for w in sim.workload.work}
    given = scenario("b_classes")["work"]
    for job in (7, 8):
        assert (spec[job].threads, spec[job].max_processes) == (given[job - 1]["threads"],
                                                                  int(given[job - 1]["processes_max"]))
        assert "getPrjCap's" in spec[job].note and "highest base cap" in spec[job].note
    first = records[min(epochs.values())]
    assert not next(j for j in first["jobs"] if j["id"] == 1)["shares"] and spec[1].items_done > 0
    caps = tables["job_caps"]  # the RM's getPrjCap predicts for it: not waiting for initialization
    assert caps.filter((caps["job_id"] == 1) & (caps["cycle"] == min(epochs)))["prj_kind"].to_list() == ["predicted"]
    assert _held(sim) == _truth_held(records, epochs)


def test_a_cut_of_c_nodepools_holds_what_truth_says(tmp_path):
    """c_nodepools cut the same way (29.3% of job-cycles before): every job holds what truth says."""
    tables, records, epochs = _midstream("c_nodepools", tmp_path)
    assert _held(simulate(tables)) == _truth_held(records, epochs)


def test_processes_running_since_before_the_log_keep_the_initialization_they_reported(tmp_path):
    """corpus/needy_tally_order cut where a node went idle: job 13's four processes run from before
    the cut, the schedule shows each initialized in 5 s (`^5000`) and getPrjCap's TI is 5000. The
    simulation took the job's initialization as unseen (no line shows a process become Running:
    one leaving Running shows it too), assumed the log's median 7.5 s, then had its Orchestrator
    report 0 ms for them, and projected job 13 at 5 processes where getPrjCap gives 4. The cut
    matched 81.6% of job-cycles; every job now holds in every cycle what truth says."""
    tables, records, epochs = _midstream("corpus/needy_tally_order", tmp_path)
    sched = tables["schedule"]
    shown = sched.filter((sched["job_id"] == 13) & (sched["cycle"] == min(epochs)) & (sched["kind"] == "existing"))
    assert set(shown["init_ms"].to_list()) == {5000}
    caps = tables["job_caps"]
    assert set(caps.filter((caps["job_id"] == 13) & caps["prj_ti"].is_not_null())["prj_ti"].to_list()) == {5000}
    sim = simulate(tables)
    assert next(w for w in sim.workload.work if w.job_id == 13).init == 5.0
    assert _held(sim) == _truth_held(records, epochs)
