"""The Nodes tab on a log cut mid-stream (fixtures/cuts/alike_orders, INFO, no bootstrap), against
truth.jsonl: alike nodes no line tells apart show the orders they share and no free space of their
own; an inferred order is drawn "N?" and is truth's."""

from __future__ import annotations

import gzip
import json

import polars as pl

from replay import parse
from replay.model.resources import read_resources
from tests.helpers import FIXTURES
from tui.data import build

ALIKE = FIXTURES / "cuts" / "alike_orders"


def test_nodes_tab_draws_what_the_log_tells() -> None:
    tables = dict(parse([ALIKE / "rm.log.gz"]).tables)
    tables.update(read_resources(ALIKE / "resources"))
    browse = build("alike_orders", tables)
    with gzip.open(ALIKE / "truth.jsonl.gz", "rt") as fh:
        by_epoch = {r["epoch"]: r for r in map(json.loads, fh)}
    checked = 0
    for cycle, epoch in tables["cycles"].select("cycle", "epoch").iter_rows():
        want = {n["name"]: n for n in by_epoch[epoch]["nodes"]}
        for r in browse.nodes.at(cycle).iter_rows(named=True):
            truth = want[r["host"]]
            if r["order_from"] == "alike":  # which of 4 or 5: not told, so no free space either
                assert r["order_shown"] == "4|5?" and r["free"] is None
                assert str(truth["order"]) in ("4", "5")
            else:
                assert r["order_shown"] == f"{truth['order']}?" and r["free"] == truth["free_qshares"]
            checked += 1
    assert checked and browse.nodes.at(1).filter(pl.col("order_from") == "alike").height == 3
