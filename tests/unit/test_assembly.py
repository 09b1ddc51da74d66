"""Hand-worked examples for the table assembly steps that no fixture exercises."""

from __future__ import annotations

import polars as pl

from replay.parsing.assemble import Carry, ChunkCarry, rows_of, stitch
from replay.parsing.steps import placements as _placements
from replay.parsing.tables import SCHEMAS, conform
from replay.parsing.steps import schedule as _schedule


def test_a_share_handed_to_a_needy_job_belongs_to_the_published_job():
    """Defragmentation can give a share placed for job 1 to needy job 2 in the same cycle."""
    lines = pl.DataFrame({
        "_family": ["connect_share", "connect_new_share", "connect_share", "connect_new_share"],
        "cycle": [5, 5, 5, 5], "job_id": [1, 1, 1, 1],
        "host": ["n1", "n1", "n2", "n2"], "share_id": ["10", "10", "11", "11"],
        "order": ["2", None, "2", None], "m_order": ["4", None, "4", None],
    })
    schedule = _schedule(pl.DataFrame({
        "rec": [9, 9, 9], "job_id": [1, 2, 2], "kind": ["Additions", "Additions", "Existing"],
        "host": ["n2", "n1", "n1"], "share_id": ["11", "10", "10"], "memory_gb": ["8", "8", "8"],
    }).with_columns(cycle=pl.lit(5)))
    got = _placements(lines, schedule).select("job_id", "share_id", "kind", "placed_for", "reassigned").rows()
    assert got == [(2, "10", "new", 1, True), (1, "11", "new", None, False)]


def test_a_job_with_no_shares_keeps_one_row_for_its_reason():
    rows = pl.DataFrame({
        "rec": [3, 3, 3, 3], "job_id": [7, 7, 7, 8], "kind": ["Existing", "Additions", "Removals", "Existing"],
        "host": [None, None, None, "n1"], "share_id": [None, None, None, "4"],
        "memory_gb": ["8", "8", "8", "8"], "reason": ["Waiting for defragmentation."] * 3 + [None],
    })
    got = _schedule(rows).select("job_id", "kind", "host", "reason").rows()
    assert got == [(7, None, None, "Waiting for defragmentation."), (8, "existing", "n1", None)]


def test_a_family_absent_from_a_chunk_gives_the_columns_an_empty_one_gives():
    """`_rows` skips its steps for a bucket no record filled; the frame must be the one they give."""
    info = pl.DataFrame(schema={"rec": pl.UInt32, "ts": pl.Datetime("ms"), "cycle": pl.UInt32, "file": pl.String,
                                "line": pl.UInt32, "jid": pl.String, "method": pl.String, "level": pl.String,
                                "component": pl.String, "cls": pl.String, "tid": pl.UInt32, "_job": pl.Int64,
                                "_mc": pl.UInt8})
    for name in ("nodes", "counts", "messages", "_defrag_lines", "_occupancy_lines"):
        empty = {name: [pl.DataFrame(schema={"rec": pl.UInt32, "_family": pl.String})]}
        assert rows_of({}, name, info).schema == rows_of(empty, name, info).schema, name


def _carried(cycles: int, orders: list[tuple[str | None, str | None, str | None]],
             unordered: list[tuple[int, str, str]]) -> ChunkCarry:
    """A chunk's carry: its share orders (host, share_id, order as text) and unordered evictions."""
    so = pl.DataFrame(orders, schema={"host": pl.String, "share_id": pl.String, "_order": pl.String}, orient="row")
    un = pl.DataFrame(unordered, schema={"_row": pl.UInt32, "host": pl.String, "share_id": pl.String}, orient="row")
    return ChunkCarry(cycles, so, un if unordered else None, {})


def _evictions(orders: list[int | None]) -> pl.DataFrame:
    """A chunk's evictions table (every column; cycle 1) with these orders."""
    rows = pl.DataFrame({"cycle": [1] * len(orders), "order": orders}, schema={"cycle": pl.UInt32, "order": pl.Int64})
    return conform(rows, SCHEMAS["evictions"])


def test_stitch_gives_an_eviction_the_order_of_its_shares_first_placement_in_log_order():
    carry = Carry()
    # chunk 1: h1.3 placed with order 2, then 5; a placement whose host is null matches nothing;
    # h4.1's first placement shows no number, so it gives none (a later one does not stand in)
    first = _carried(1, [("h1", "3", "2"), ("h1", "3", "5"), (None, "3", "9"), ("h4", "1", "x")], [])
    stitch({"evictions": _evictions([])}, first, carry)
    # chunk 2: h1.3 placed again with 6, h2.5 with 4; rows 0, 1, 3 and 4 show no order, row 2 shows 8
    second = _carried(2, [("h1", "3", "6"), ("h2", "5", "4"), ("h4", "1", "7")],
                      [(0, "h1", "3"), (1, "h2", "5"), (3, "h3", "3"), (4, "h4", "1")])
    out = stitch({"evictions": _evictions([None, None, 8, None, None])}, second, carry)
    # the cycles moved on by chunk 1's one
    assert out["evictions"].select("cycle", "order").rows() == [(2, 2), (2, 4), (2, 8), (2, None), (2, None)]
    assert carry.cycles == 3
