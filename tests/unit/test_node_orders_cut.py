"""A node's share order on a log that starts mid-stream (INFO, no bootstrap), against truth.jsonl.

What no line states and the counters do not imply is unknown (None, drawn "?"), never 0; an
inferred order is marked so ("N?"); among alike nodes no line tells apart, no view shows which has
which (fixtures/cuts/alike_orders: an INFO log of the real RM cut between cycles, where three alike
nodes hold orders 4, 4 and 5); and an order the counts that fit the counters disagree on is open.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.report import _unsized
from replay.apps.causes import placement_cause
from replay.model.machines.liveness import ORDER_ALIKE, ORDER_INFERRED, ORDER_OPEN
from replay.model.nodes import capacity_and_use, drawn_orders, node_cycles
from replay.model.resources import read_resources
from replay.model.start import bootstrap, machine_inventory, replay_start
from tests.helpers import FIXTURES, truth
from tests.midstream import classes_only, cut

ALIKE = FIXTURES / "cuts" / "alike_orders"


def _truth_orders(records: list[dict], epochs: dict[int, int]) -> dict[tuple[int, str], int]:
    by_epoch = {r["epoch"]: r for r in records}
    return {(c, n["name"]): n["order"] for c, e in epochs.items() if e in by_epoch for n in by_epoch[e]["nodes"]}


def _nodes(tables: dict[str, pl.DataFrame]) -> tuple[pl.DataFrame, dict[tuple[int, str], int]]:
    boot = bootstrap(tables)
    nodes = node_cycles(tables, boot, machine_inventory(tables, boot))
    return nodes, dict(tables["cycles"].select("cycle", "epoch").iter_rows())


@pytest.fixture(scope="module")
def unsized(tmp_path_factory: pytest.TempPathFactory) -> tuple[pl.DataFrame, dict[tuple[int, str], int]]:
    """corpus/midstream_pool_no_counter_covers cut inside an RmCounter block: n06, idle in a pool no
    counter covers, is sized by no line (truth: order 9)."""
    name, tmp = "corpus/midstream_pool_no_counter_covers", tmp_path_factory.mktemp("unsized")
    tables = dict(parse([cut(name, "rm.log", "counter", tmp / "cut.log")]).tables)
    tables.update(read_resources(classes_only(name, tmp / "config")))
    nodes, epochs = _nodes(tables)
    return nodes, _truth_orders(truth(name), epochs)


def test_an_unknown_order_is_none_not_zero(unsized):
    nodes, want = unsized
    n06 = nodes.filter(pl.col("host") == "n06.sim.ducc")
    assert n06.height and {want[(c, "n06.sim.ducc")] for c in n06["cycle"]} == {9}
    assert n06["order"].is_null().all() and n06["memory_mb"].is_null().all()
    assert set(n06["order_shown"]) == {"?"} and n06["order_from"].is_null().all()
    # every order shown as known is truth's
    known = nodes.filter(pl.col("order").is_not_null())
    assert all(o == want[(c, h)] for c, h, o in known.select("cycle", "host", "order").iter_rows())


def test_capacity_is_unknown_while_a_node_of_unknown_order_is_online(unsized):
    nodes, _ = unsized
    online = set(nodes.filter(pl.col("online") & (pl.col("host") == "n06.sim.ducc"))["cycle"])
    capacity = dict(capacity_and_use(nodes).select("cycle", "capacity").iter_rows())
    assert online and all(capacity[c] is None for c in online)


def _cut_fixture(folder: Path) -> tuple[pl.DataFrame, dict[tuple[int, str], int]]:
    tables = dict(parse([folder / "rm.log.gz"]).tables)
    tables.update(read_resources(folder / "resources"))
    nodes, epochs = _nodes(tables)
    with gzip.open(folder / "truth.jsonl.gz", "rt") as fh:
        records = [json.loads(line) for line in fh]
    return nodes, _truth_orders(records, epochs)


@pytest.fixture(scope="module")
def alike() -> tuple[pl.DataFrame, dict[tuple[int, str], int]]:
    return _cut_fixture(ALIKE)


def test_a_counting_line_gives_the_policy_of_work_whose_class_the_cut_lacks() -> None:
    """fixtures/cuts/rival_orders: n01 holds a reservation (job 11) whose class the cut never
    names, only its countReservationForJob line; taken for fair share, the counters fit no order
    (one of five order-1 nodes is not counted). As a reservation, every node's order is inferred,
    and is truth's, and every cycle's counters fit."""
    folder = FIXTURES / "cuts" / "rival_orders"
    nodes, want = _cut_fixture(folder)
    inferred = nodes.filter(pl.col("order_from") == ORDER_INFERRED)
    assert set(inferred["host"]) == {f"n{i:02d}.sim.ducc" for i in range(1, 13)}
    assert all(o == want[(c, h)] and shown == f"{o}?"
               for c, h, o, shown in inferred.select("cycle", "host", "order", "order_shown").iter_rows())
    tables = dict(parse([folder / "rm.log.gz"]).tables)
    tables.update(read_resources(folder / "resources"))
    assert machine_inventory(tables, bootstrap(tables)).unsettled == {}


def test_orders_the_counters_leave_open_are_drawn_open_and_hold_truth() -> None:
    """fixtures/cuts/open_orders: more counts fit the counters than the search keeps; np103
    (truth: 11) was drawn 2|9? from the counts kept. Every node drawn open holds truth among its
    options, its quanta unknown; a node drawn as one order has truth's."""
    nodes, want = _cut_fixture(FIXTURES / "cuts" / "open_orders")
    np103 = nodes.filter(pl.col("host") == "np103.sim.ducc")
    assert {want[(c, "np103.sim.ducc")] for c in np103["cycle"]} == {11}
    assert np103["order_from"].eq(ORDER_OPEN).all() and "11" in np103["order_shown"][0].rstrip("?").split("|")
    open_ = nodes.filter(pl.col("order_from") == ORDER_OPEN)
    assert open_["order"].is_null().all()
    for c, h, shown in open_.select("cycle", "host", "order_shown").iter_rows():
        assert str(want[(c, h)]) in shown.rstrip("?").split("|"), (c, h, shown)
    known = nodes.filter(pl.col("order").is_not_null())
    assert all(o == want[(c, h)] for c, h, o in known.select("cycle", "host", "order").iter_rows())
    assert capacity_and_use(nodes)["capacity"].is_null().all()


def test_a_machine_its_fixed_share_processes_fill_is_sized_by_the_counters_that_leave_it_out(tmp_path: Path) -> None:
    """fixtures/c_nodepools cut between cycles 95% in (INFO, the classes and node files given):
    gpu01 and gpu02 each hold a fixed-share process of order 16 and truth's order is 16. A full
    machine is in no counter, and the gpu pool's counter counts none: they were inferred 24, an
    order no counter shows, from counts that fit no cycle."""
    name = "c_nodepools"
    tables = dict(parse([cut(name, "rm.log", "between", tmp_path / "cut.log", at=0.95)]).tables)
    tables.update(read_resources(classes_only(name, tmp_path / "config")))
    nodes, epochs = _nodes(tables)
    want = _truth_orders(truth(name), epochs)
    gpu = nodes.filter(pl.col("host").str.starts_with("gpu"))
    assert gpu.height and {want[(c, h)] for c, h in gpu.select("cycle", "host").iter_rows()} == {16}
    assert set(gpu["order_shown"]) == {"16?"}
    shown = nodes.filter(pl.col("order").is_not_null())
    assert shown.height == nodes.height
    assert all(o == want[(c, h)] for c, h, o in shown.select("cycle", "host", "order").iter_rows())


def test_alike_nodes_show_no_distinction_the_log_cannot_tell(alike):
    nodes, want = alike
    open_ = nodes.filter(pl.col("order_from") == ORDER_ALIKE)
    hosts = set(open_["host"])
    assert hosts == {"n01.sim.ducc", "n02.sim.ducc", "n05.sim.ducc"}
    assert sorted(want[(nodes["cycle"][0], h)] for h in hosts) == [4, 4, 5]  # truth: n05 is the 5
    assert set(open_["order_shown"]) == {"4|5?"}  # one drawing for all three: which is which, unknown
    for c, h, shown in open_.select("cycle", "host", "order_shown").iter_rows():
        assert str(want[(c, h)]) in shown.rstrip("?").split("|")
    # what they share is known: every cycle's capacity is truth's
    per = dict(capacity_and_use(nodes).select("cycle", "capacity").iter_rows())
    truth_capacity: dict[int, int] = {}
    for (c, _h), o in want.items():
        truth_capacity[c] = truth_capacity.get(c, 0) + o
    assert per and all(per[c] == truth_capacity[c] for c in per)


def test_an_inferred_order_is_marked_and_is_truths(alike):
    nodes, want = alike
    inferred = nodes.filter(pl.col("order_from") == ORDER_INFERRED)
    assert inferred.height
    for c, h, o, shown in inferred.select("cycle", "host", "order", "order_shown").iter_rows():
        assert o == want[(c, h)] and shown == f"{o}?"


def test_alike_fixture_is_cut_mid_stream() -> None:
    """The fixture has no bootstrap: its nodes are all there before the log began."""
    tables = parse([Path(ALIKE / "rm.log.gz")]).tables
    assert tables["classes"].is_empty() and tables["nodes"].filter(pl.col("event") == "arrive").is_empty()


def test_a_placement_cause_names_an_order_no_line_states_as_the_views_draw_it(alike):
    """The cause of a placement divergence names each host's order: an alike node's is drawn as
    the Nodes view draws it, with the order rmref took, never a bare order no line states
    (truth: n05 is the 5 of the 4, 4 and 5)."""
    nodes, want = alike
    tables = dict(parse([ALIKE / "rm.log.gz"]).tables)
    tables.update(read_resources(ALIKE / "resources"))
    start = replay_start(tables)
    cycle = nodes["cycle"][0]
    inp = next(start.inputs(tables, range(cycle, cycle + 1)))
    drawn = drawn_orders(start.inventory)
    text = placement_cause(inp, 1, [("n05.sim.ducc", 1)], [("n01.sim.ducc", 1)], None, drawn).detail
    row = nodes.filter(pl.col("cycle") == cycle).select("host", "order_shown", "order")
    shown = dict(row.select("host", "order_shown").iter_rows())
    taken = {m.name: m.order for m in inp.machines}
    assert shown["n05.sim.ducc"] == shown["n01.sim.ducc"] == "4|5?" and want[(cycle, "n05.sim.ducc")] == 5
    for host in ("n05.sim.ducc", "n01.sim.ducc"):
        assert f"{host} (1x; order {shown[host]}, rmref taking {taken[host]}, pool" in text
    inferred = nodes.filter((pl.col("cycle") == cycle) & (pl.col("order_from") == ORDER_INFERRED))["host"][0]
    text = placement_cause(inp, 1, [(inferred, 1)], [], None, drawn).detail
    assert f"order {shown[inferred]}, pool" in text and shown[inferred].endswith("?")


def _with_death(tables: dict[str, pl.DataFrame], host: str, cycle: int) -> dict[str, pl.DataFrame]:
    nodes = tables["nodes"]
    row = {name: None for name in nodes.columns} | {"cycle": cycle, "host": host, "event": "death"}
    return tables | {"nodes": pl.concat([nodes, pl.DataFrame([row], schema=nodes.schema)])}


@pytest.mark.parametrize("dead", ["n05.sim.ducc", "n01.sim.ducc"])
def test_the_capacity_left_by_a_dead_alike_node_is_not_assumed(dead):
    """fixtures/cuts/alike_orders, worked by hand: n01, n02 and n05 share orders 4, 4 and 5 (truth:
    n05 is the 5), and one of them dies after the last counters (the inventory inferred before):
    the capacity left is 8 or 9 as it was n05 or another, which no line tells. Before the death
    every cycle's capacity is truth's; from it on none is shown, and the report says why."""
    tables = dict(parse([ALIKE / "rm.log.gz"]).tables)
    tables.update(read_resources(ALIKE / "resources"))
    boot = bootstrap(tables)
    inventory = machine_inventory(tables, boot)
    cycles = tables["cycles"]["cycle"].to_list()
    nodes = node_cycles(_with_death(tables, dead, cycles[2]), boot, inventory)
    per = dict(capacity_and_use(nodes).select("cycle", "capacity").iter_rows())
    _, want = _cut_fixture(ALIKE)
    truth_capacity = {c: sum(o for (k, _h), o in want.items() if k == c) for c in cycles}
    assert [per[c] for c in cycles[:2]] == [truth_capacity[c] for c in cycles[:2]]
    assert [per[c] for c in cycles[2:]] == [None, None]
    after = nodes.filter(pl.col("cycle") == cycles[2])
    alike = after.filter(pl.col("host").is_in(["n01.sim.ducc", "n02.sim.ducc", "n05.sim.ducc"]))
    assert set(alike["order_shown"]) == {"4|5?"} and alike["order"].is_null().all()
    assert "some are down" in _unsized(nodes) and "(n01.sim.ducc, n02.sim.ducc, n05.sim.ducc)" in _unsized(nodes)
