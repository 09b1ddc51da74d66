"""A job's quanta per process in a second top-level pool with a `share-quantum` of its own.

The RM counts a class's processes in the quantum of its pool's tree (rmref.trees.class_quantum),
not the global `ducc.rm.share.quantum`. Every view reads the job's order from that one place:
explain's held and taken processes and its "share order" line, simulate's quanta in use, and a
what-if that changes the global quantum (which leaves a pool's own quantum standing). Held against
truth.jsonl of the real RM, and, for the what-if, against the configuration worked by hand.
"""

from __future__ import annotations

import re
from functools import cache

import pytest

from replay.apps.audit import AuditResult, audit
from replay.apps.change import adapt, apply_sets
from replay.apps.explain import explain_job
from replay.apps.measures import logged_held
from replay.apps.report import build_report
from replay.apps.simulate.metrics import measure
from replay.apps.simulate.simulation import simulate
from replay.model.start import replay_start
from rmref import job_order, machine_order
from tests.helpers import identity_simulation, parsed, truth

LOGS = ["corpus/second_toplevel_quantum", "corpus/two_toplevel_pools"]


@cache
def _audited(name: str) -> AuditResult:
    tables = parsed(name).tables
    return audit(tables, trace=set(tables["cycles"]["cycle"].to_list()))


@pytest.mark.parametrize("name", [*LOGS, "heldout/seed47-120"])
def test_explain_gives_each_process_its_pools_order(name):
    """Every held process explain lists has the order truth gives that process; the job section
    gives truth's memory (as submitted: seed47-120's schedule prints it rounded up to the quantum)
    and a quantum that divides it into truth's order."""
    tables, result = parsed(name).tables, _audited(name)
    checked, records = 0, truth(name)
    for rec in records[::1 if len(records) <= 60 else 7]:  # every cycle of a short log
        for job in rec["jobs"]:
            if not job["shares"] or rec["cycle"] not in result.traces:
                continue
            story = explain_job(tables, job["id"], rec["cycle"], result)
            want = {(s["host"], s["id"]): s["order"] for s in job["shares"]}
            for held in story.shares:
                assert held.order == want[(held.host, held.share_id)], (rec["cycle"], job["id"], held)
                checked += 1
            line = next(ln for ln in story.sections[0].lines if "share order" in ln)
            memory, order, quantum = (int(x) for x in re.findall(
                r"Memory (\d+) GB: share order (\d+) \(\d+ GB / (\d+) GB quantum", line)[0])
            assert (memory, order) == (job["memory"], job["order"]) and order == job_order(memory, quantum), line
    assert checked


def _in_use(rec: dict) -> tuple[int, int]:
    """Truth's quanta in use and capacity after the cycle: its online machines' orders, less their free quanta."""
    online = [n for n in rec["nodes"] if n["online"]]
    return sum(n["order"] - n["free_qshares"] for n in online), sum(n["order"] for n in online)


@pytest.mark.parametrize("name", LOGS)
def test_simulate_counts_quanta_in_use_as_the_rm_does(name):
    """The unchanged simulation's quanta in use and capacity per cycle, and the log's as simulate
    measures them (cycles.parquet's used_logged), are truth's."""
    sim = identity_simulation(name)
    for i in range(len(sim.ctx.cycles)):
        sim.step(i)
    by_cycle = {r["cycle"]: r for r in truth(name)}
    for cycle, used, capacity in sim.run.used:
        assert (used, capacity) == _in_use(by_cycle[cycle]), cycle
    tables = parsed(name).tables
    logged = measure(tables, simulate(tables)).cycles
    by_epoch = {r["epoch"]: r for r in truth(name)}
    epoch_of = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    for cycle, used, capacity in logged.select("cycle", "used_logged", "capacity_logged").iter_rows():
        assert (used, capacity) == _in_use(by_epoch[epoch_of[cycle]]), cycle


def test_a_global_quantum_change_leaves_a_pools_own_quantum_standing():
    """ducc.classes gives pool `alt` a share-quantum of 3 GB; the global quantum is 1 GB. Raised
    to 2 GB, the other pools' machines and jobs are counted in 2 GB quanta; alt's stay in 3 GB,
    and the what-if names the pools it takes to follow the global quantum."""
    name = "corpus/second_toplevel_quantum"
    tables = parsed(name).tables
    start = replay_start(tables)
    before = start.boot
    assert before.config.quantum_gb == 1 and {p.name: p.quantum_gb for p in before.nodepools}["alt"] == 3
    after = apply_sets(before, [("ducc.rm.share.quantum", "2")])
    (assumed,) = after.assumed
    assert assumed.source == "inferred" and "alt" not in assumed.value.split(", ")
    assert set(assumed.value.split(", ")) == {"--default--", "np1", "np2"}
    pool_of = {c.name: c.nodepool for c in before.classes}
    seen = set()
    for inp in start.inputs(tables):
        changed = adapt(inp, before, after)
        for old, new in zip(inp.machines, changed.machines):
            quantum = 3 if old.nodepool == "alt" else 2
            assert new.order == machine_order(old.memory_mb * 1024, quantum), old
            seen.add(old.nodepool)
        for old, new in zip(inp.work, changed.work):
            assert new.order == job_order(old.memory_gb, 3 if pool_of.get(old.class_name) == "alt" else 2), old
    assert "alt" in seen


def test_a_class_moved_to_a_tree_of_another_quantum_counts_in_it():
    """`class.fair12alt.nodepool=np2a` moves the class out of pool alt (share-quantum 10 GB) into
    the tree of the global 1 GB quantum: its 3 GB jobs hold 3 quanta a process, not 1."""
    name = "corpus/two_toplevel_pools"
    tables = parsed(name).tables
    start = replay_start(tables)
    before = start.boot
    after = apply_sets(before, [("class.fair12alt.nodepool", "np2a")])
    checked = 0
    for inp in start.inputs(tables):
        for old, new in zip(inp.work, adapt(inp, before, after).work):
            assert old.class_name == "fair12alt" and old.order == job_order(old.memory_gb, 10)
            assert new.order == job_order(old.memory_gb, 1) != old.order
            checked += 1
    assert checked


def test_a_quantum_change_rounds_the_memory_submitted_not_the_memory_printed():
    """The schedule prints a job's memory rounded up to the quantum (seed47-120, 10 GB quantum:
    submitted 15 GB, printed 20). At a 4 GB quantum the RM rounds the 15 GB submitted: 4 quanta,
    not the 5 that 20 GB would give."""
    name = "heldout/seed47-120"
    tables = parsed(name).tables
    start = replay_start(tables)
    before = start.boot
    assert before.config.quantum_gb == 10
    after = apply_sets(before, [("ducc.rm.share.quantum", "4")])
    submitted = dict(tables["jobs"].filter(tables["jobs"]["source"] == "submit")
                     .select("job_id", "memory_gb").iter_rows())
    printed = dict(tables["schedule"].select("job_id", "memory_gb").drop_nulls().iter_rows())
    checked = 0
    for inp in start.inputs(tables):
        changed = adapt(inp, before, after)
        for old, new in zip(inp.machines, changed.machines):  # every pool follows: none has a quantum of its own
            assert new.order == machine_order(old.memory_mb * 1024, 4), old
        for w in changed.work:
            if w.job_id in submitted:
                assert w.order == job_order(submitted[w.job_id], 4), (inp.cycle, w.job_id)
                checked += submitted[w.job_id] != printed[w.job_id]
    assert checked


@pytest.mark.parametrize("name", LOGS)
def test_the_logged_holdings_count_each_process_in_its_pools_quanta(name):
    """What the report and the what-if read as each job's holdings after the RM's cycle: truth's
    processes, each of its job's order, the removals still listed left out."""
    tables = parsed(name).tables
    held = {(c, j): (p, q) for c, j, p, q in logged_held(tables, 1, replay_start(tables).boot).iter_rows()}
    by_epoch = {r["epoch"]: r for r in truth(name)}
    checked = 0
    for cycle, epoch in tables["cycles"].select("cycle", "epoch").iter_rows():
        for job in by_epoch[epoch]["jobs"]:
            kept = [s for s in job["shares"] if not s["evicted"] and not s["pending_remove"] and not s["purged"]]
            if kept:
                assert held[(cycle, job["id"])] == (len(kept), sum(s["order"] for s in kept)), (cycle, job["id"])
                checked += 1
    assert checked


def test_the_report_says_which_pools_count_in_a_quantum_of_their_own():
    """The report's shares note names pool alt's own 3 GB quantum (its ducc.classes stanza) beside the global 1 GB."""
    page = build_report(parsed("corpus/second_toplevel_quantum").tables)
    assert "(1 GB each; the pool trees with a quantum of their own count in it (alt 3 GB))" in page
    assert "quantum of their own" not in build_report(parsed("heldout/seed47-120").tables)
