"""The Scheduling Tables read by the compiled scanner (replay.parsing.pools, csrc/pools.c) against
the grammar (lark, the reference): hand-worked rows read off the log text, and each way a record
goes to the grammar instead."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns, family_rows
from replay.parsing.pipeline import parse

_RESET = "01 Jan 2015 00:01:00,000  INFO RM.NodePool - N/A T[19] reset  {body}"
_SENT = "01 Jan 2015 00:01:10,000  INFO RM.JobManagerConverter - N/A T[19] createState  Schedule sent to Orchestrator"
_RULE = " " + "-" * 40
_BLOCK = ["Nodepool {pool} depth {depth}: ",
          "             Order    0    1    2    3 ",
          "  nMachinesByOrder    0    0    2    1 ",
          "  vMachinesByOrder    0    0    0    0 ",
          "    nSharesByOrder    0    5    2    1 "]


def _block(pool: str, depth: int) -> list[str]:
    return [line.format(pool=pool, depth=depth) for line in _BLOCK]


def _both(tmp_path, lines: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """The pool_tables table with the compiled reader and with the grammar alone, and how many records
    the reader took."""
    path = tmp_path / "rm.log"
    path.write_text("\n".join(lines) + "\n")
    taken = []
    real = family_rows.pool_rows

    def spy(part, cont, blocks):
        rows, failed = real(part, cont, blocks)
        taken.append(part.height - failed.height)
        return rows, failed

    with pytest.MonkeyPatch.context() as m:
        m.delitem(columns.COMPILED_TABLES, "pool_tables")  # the reader's rows, framed (columns_small types them)
        m.setattr(family_rows, "pool_rows", spy)
        compiled = parse([str(path)]).tables["pool_tables"]
        m.setattr(family_rows, "pool_rows", lambda part, cont, blocks: (pl.DataFrame({"rec": []}, schema={
            "rec": pl.UInt32}), part.select("rec")))
        reference = parse([str(path)]).tables["pool_tables"]
    return compiled, reference, sum(taken)


def test_a_row_per_table_row_of_each_nodepool(tmp_path):
    compiled, reference, taken = _both(tmp_path, [
        _RESET.format(body="Scheduling Tables:"), _RULE, *_block("--default--", 0), *_block("nd1", 1), _RULE, "",
        _SENT])
    assert taken == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("nodepool", "depth", "table_row", "values").rows() == [
        ("--default--", 0, "nMachinesByOrder", [0, 0, 2, 1]), ("--default--", 0, "vMachinesByOrder", [0, 0, 0, 0]),
        ("--default--", 0, "nSharesByOrder", [0, 5, 2, 1]), ("nd1", 1, "nMachinesByOrder", [0, 0, 2, 1]),
        ("nd1", 1, "vMachinesByOrder", [0, 0, 0, 0]), ("nd1", 1, "nSharesByOrder", [0, 5, 2, 1])]
    assert compiled["line"].to_list() == [1] * 6 and compiled["cycle"].to_list() == [1] * 6


def test_tables_with_no_nodepool_give_one_row_with_no_fields(tmp_path):
    compiled, reference, taken = _both(tmp_path, [_RESET.format(body="Scheduling Tables:"), _RULE, _RULE, _SENT])
    assert taken == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("nodepool", "depth", "table_row", "values").rows() == [(None, None, None, None)]


@pytest.mark.parametrize("lines", [
    [_RESET.format(body="Scheduling Tables: now"), _RULE, *_block("a", 0)],  # more on the record's line
    [_RESET.format(body="Scheduling Tables:")],  # no continuation line
    [_RESET.format(body="Scheduling Tables:"), _RULE, *_block("depth", 0)],  # a name the grammar may lex as a word
    [_RESET.format(body="Scheduling Tables:"), *_block("a", 0)[:4]],  # a row missing
    [_RESET.format(body="Scheduling Tables:"), *_block("a", 0)[:2], "  nMachinesByOrder    0\t1", *_block("a", 0)[3:]],
    [_RESET.format(body="Scheduling Tables:"), _RULE, "", *_block("a", 0)],  # a blank line inside
    [_RESET.format(body="Scheduling Tables:"), *_block("a", 0)[:4], "    nSharesByOrder    0    5x"],
])
def test_a_record_of_another_shape_goes_to_the_grammar(tmp_path, lines):
    compiled, reference, taken = _both(tmp_path, [*lines, _SENT])
    assert taken == 0
    assert_frame_equal(compiled, reference, check_exact=True)


_POOL = st.sampled_from(["--default--", "nd1", "7", "-3", "depth", "a:b", "pöol"])
_VALUES = st.lists(st.sampled_from(["0", "12", "-4", "007", "5x", "1.5"]), max_size=4).map(" ".join)
_ROW = st.tuples(st.sampled_from(["nMachinesByOrder", "vMachinesByOrder", "nSharesByOrder", "Order", "nFoo"]),
                 _VALUES).map(lambda t: f"  {t[0]}    {t[1]} ")


@st.composite
def _pool_block(draw):
    depth = draw(st.sampled_from(["0:", "1 :", "x:", "2"]))
    return [f"Nodepool {draw(_POOL)} depth {depth} ", f"   Order {draw(_VALUES)}",
            *draw(st.lists(_ROW, min_size=2, max_size=4))]


_LINES = st.one_of(st.just([_RULE]), st.just([""]), st.just([" --"]), _pool_block(), st.just(_block("nd2", 3)))


@settings(max_examples=40, deadline=None)
@given(st.lists(_LINES, max_size=4), st.sampled_from(["Scheduling Tables:", "Scheduling Tables:  "]))
def test_generated_tables_give_the_grammars_rows(blocks, body):
    # about two in five of these records are the C reader's; the rest go to the grammar
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, _ = _both(Path(tmp), [_RESET.format(body=body), *sum(blocks, []), _SENT])
        assert_frame_equal(compiled, reference, check_exact=True)
