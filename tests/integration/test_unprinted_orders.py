"""A job's order where no line of a mid-stream log prints it, in a pool with a quantum of its own.

corpus/midstream_reserve_in_own_quantum: pool alt (share-quantum 3, its node file lists alt01 and
alt02) holds reservation 1 (29 GB: order 10) and fixed-share service 2 (5 GB: order 2); the global
quantum is 1 GB. The log is cut inside the last cycle's scheduling pass over alt, after the cap
lines that print the orders: the one cycle left prints neither. Cut after those lines, the
counting lines still name the classes (the order is its class's pool's); cut inside the RmCounter
block, they are gone too (the order is the pool's its processes run in, as the node file says).
Every view reads the orders from replay.model.orders: the logged holdings (report, what-if,
simulate), explain's processes and share order line, and the audit's `assumed` names them.
Ground truth: truth.jsonl's jobs and shares of that cycle.
"""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import audit
from replay.apps.explain import explain_job
from replay.apps.measures import logged_held
from replay.model.orders import ORDER_CLASS, ORDER_POOL, ORDERS_ASSUMED, ORDERS_FROM_POOL, work_orders
from replay.model.resources import read_resources
from replay.model.start import replay_start
from tests.helpers import truth
from tests.midstream import _lines, classes_only

NAME = "corpus/midstream_reserve_in_own_quantum"
# where the cut falls in the last cycle's pass over pool alt: (the line it follows, lines kept after it)
CUTS = {"after the caps": ("Maxorder set to", 0),
        "inside the counter": ("countClassShares RmCounter Start", 3)}


def _cut(tmp_path: Path, where: str) -> dict[str, pl.DataFrame]:
    lines = _lines(NAME, "rm.log")
    alt = max(i for i, line in enumerate(lines) if "Run scheduler 1 with top-level nodepool alt" in line)
    marker, after = CUTS[where]
    first = next(i for i in range(alt, len(lines)) if marker in lines[i]) + after
    (tmp_path / "cut.log").write_text("".join(lines[first:]))
    return {**parse([tmp_path / "cut.log"]).tables, **read_resources(classes_only(NAME, tmp_path / "config"))}


def _truth_jobs(tables: dict[str, pl.DataFrame]) -> dict[int, dict]:
    (epoch,) = tables["cycles"]["epoch"].to_list()
    return {j["id"]: j for j in next(r for r in truth(NAME) if r["epoch"] == epoch)["jobs"]}


@pytest.mark.parametrize("where", CUTS)
def test_the_logged_holdings_count_each_unprinted_order_in_its_pools_quantum(tmp_path, where):
    """Each job's processes and quantum shares after the cycle, as the report and the what-if read
    them, are truth's: the reservation holds 10 quanta (alt's 3 GB), not 30 (the global 1 GB)."""
    tables = _cut(tmp_path, where)
    boot = replay_start(tables).boot
    held = {j: (p, q) for _c, j, p, q in logged_held(tables, boot.config.quantum_gb, boot).iter_rows()}
    want = {j: (len(job["shares"]), sum(s["order"] for s in job["shares"])) for j, job in _truth_jobs(tables).items()
            if job["shares"]}
    assert held == want and held[1] == (1, 10)


@pytest.mark.parametrize("where", CUTS)
def test_every_unprinted_order_is_truths_and_says_where_it_comes_from(tmp_path, where):
    """The order every view reads is truth's; where no line prints it, it comes from the class
    (counting lines name it) or from the pool of the hosts the processes run on."""
    tables = _cut(tmp_path, where)
    orders = {j: (o, src) for j, o, src in work_orders(tables, 1, replay_start(tables).boot).iter_rows()}
    for job_id, job in _truth_jobs(tables).items():
        assert orders[job_id][0] == job["order"], job_id
    source = ORDER_CLASS if where == "after the caps" else ORDER_POOL
    assert orders[1][1] == orders[2][1] == source


def test_the_audit_names_the_orders_it_takes_from_the_pool_a_host_no_node_file_lists_included(tmp_path):
    """Cut inside the counter, the reservation's and the service's orders come from pool alt's
    node file (named, inferred); job 4 runs on def01, which no node file lists: the RM puts such a
    host in the first top-level pool (--default--, of the global quantum), so its order comes from
    that pool too, truth's, where it was taken as an assumption over the global quantum."""
    tables = _cut(tmp_path, "inside the counter")
    assumed = {a.setting: a for a in audit(tables).assumed}
    assert assumed[ORDERS_FROM_POOL].value == "job 1 order 10, job 2 order 2, job 4 order 3"
    assert assumed[ORDERS_FROM_POOL].source == "inferred"
    assert ORDERS_ASSUMED not in assumed
    sources = dict(work_orders(tables, 1, replay_start(tables).boot).select("job_id", "order_from").iter_rows())
    assert sources[4] == ORDER_POOL
    hosts = {s["host"] for s in _truth_jobs(tables)[4]["shares"]}
    assert hosts == {"def01.sim.ducc"} and _truth_jobs(tables)[4]["order"] == 3


def test_explain_gives_the_reservations_processes_its_pools_order(tmp_path):
    """explain's held processes have truth's order, and its share order line divides the memory by
    alt's 3 GB quantum."""
    tables = _cut(tmp_path, "inside the counter")
    (cycle,) = tables["cycles"]["cycle"].to_list()
    story = explain_job(tables, 1, cycle, audit(tables))
    want = {(s["host"], s["id"]): s["order"] for s in _truth_jobs(tables)[1]["shares"]}
    assert {(h.host, h.share_id): h.order for h in story.shares} == want
    line = next(ln for ln in story.sections[0].lines if "share order" in ln)
    assert re.search(r"share order 10 \(\d+ GB / 3 GB quantum", line), line



def test_simulate_finds_the_orders_once_and_counts_the_logs_use_in_truths_quanta(tmp_path, monkeypatch):
    """The simulation's measure of the log's own history reads the orders its replay start found
    (one `work_orders` per command, not one per measure), and the quanta in use it counts with
    them are truth's in every cycle."""
    import replay.model.orders as orders_module
    import replay.model.start as start_module
    from replay.apps.simulate.metrics import measure
    from replay.apps.simulate.simulation import simulate

    (tmp_path / "whole.log").write_text("".join(_lines(NAME, "rm.log")))
    tables = {**parse([tmp_path / "whole.log"]).tables, **read_resources(classes_only(NAME, tmp_path / "config"))}
    found = orders_module.work_orders
    calls: list[int] = []

    def counted(*args, **kwargs):
        calls.append(1)
        return found(*args, **kwargs)
    monkeypatch.setattr(orders_module, "work_orders", counted)
    monkeypatch.setattr(start_module, "work_orders", counted)
    logged = measure(tables, simulate(tables)).sides["logged"]
    assert len(calls) == 1
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    in_use = {r["epoch"]: sum(s["order"] for job in r["jobs"] for s in job["shares"]) for r in truth(NAME)}
    assert {c: used for c, (used, _cap) in logged.used.items()} == {c: in_use[epochs[c]] for c in logged.used}
