"""The expansions table typed in C with the doExpansion rows read by `_scan.expansions`
(replay.parsing.columns_expansions) against the polars reference (fast._explode_expansions and
lark), on hand-worked logs (expected rows read off the lines) and Hypothesis-generated bodies."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns
from replay.parsing.pipeline import parse
from tests.unit.test_columns import _SENT, _both, _log

_ORDER = ("NodePool", "N/A", "findShares", "--default-- Doing expansions in this order: --default-- nd1")
_COUNTED = ("NodePool", "7", "findShares", "counted 1 current 0 needed 2 order 3 given 2")


def _expand(jid: str, body: str) -> tuple[str, str, str, str]:
    return ("NodePool", jid, "doExpansion", body)


def test_a_do_expansion_line_gives_a_row_per_listed_job(tmp_path, monkeypatch):
    path = _log(tmp_path, [
        _ORDER,
        _expand("N/A", "NP: --default-- Expansions in this order: 7:found 12:notfound "),
        _COUNTED,
        _expand("9", "NP:  nd1 Expansions in this order: "),  # no job listed: one row, the record's JID
        _expand("N/A", "NP: nd1 Expansions in this order:"),
        _SENT,
    ])
    compiled, reference, built = _both(path, "expansions")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("kind", "job_id", "nodepool", "found", "pools", "counted", "order", "count").rows() == [
        ("expansion_order", None, "--default--", None, ["--default--", "nd1"], None, None, None),
        ("do_expansion", 7, "--default--", True, None, None, None, None),
        ("do_expansion", 12, "--default--", False, None, None, None, None),
        ("find_shares_counted", 7, None, None, None, 1, 3, 2),
        ("do_expansion", 9, "nd1", None, None, None, None, None),
        ("do_expansion", None, "nd1", None, None, None, None, None),
    ]
    assert compiled["cycle"].to_list() == [1] * 6 and compiled["line"].to_list() == [1, 2, 2, 3, 4, 5]


# NodePool.findShares prints countNSharesGiven() as it is: How Much may leave it negative (the INFO
# line before says "-4 shares given"), so counted and needed can be below zero (lines 45845, 45850
# and 12376 of the real RM's rm-debug.log of oracle seed 11010, scenario 001, as it wrote them)
_NEGATIVE = [
    ("NodePool", "6", "findShares", "counted -1 current 0 needed -1 order 2 given 0"),
    ("NodePool", "27", "findShares", "counted -4 current 1 needed -5 order 3 given 0"),
    ("NodePool", "13", "findShares", "counted 2 current 4 needed -2 order 13 given 0"),
]


@pytest.mark.parametrize("engine", ["fast", "polars", "lark"])
def test_find_shares_lines_with_negative_counts_give_rows_in_every_engine(tmp_path, engine):
    path = _log(tmp_path, [*_NEGATIVE, _SENT])
    tables = parse([path], engine=engine).tables
    assert tables["unparsed"].height == 0
    got = tables["expansions"].select("kind", "job_id", "counted", "current", "needed", "order", "count")
    assert got.rows() == [
        ("find_shares_counted", 6, -1, 0, -1, 2, 0),
        ("find_shares_counted", 27, -4, 1, -5, 3, 0),
        ("find_shares_counted", 13, 2, 4, -2, 13, 0),
    ]


@pytest.mark.parametrize("engine", ["fast", "polars", "lark"])
def test_the_neighbouring_forms_with_negative_counts_give_rows_in_every_engine(tmp_path, engine):
    # findMachines and whatOfFairShare print the same countNSharesGiven(), doEvictions its difference
    path = _log(tmp_path, [
        ("NodePool", "5", "findMachines", "counted -1 current 0 needed -1 order 2"),
        ("NodePool", "5", "findMachines", "Setup preemptions. Have 0 free machines, needed -1"),
        ("NodepoolScheduler", "6", "whatOfFairShare", "Scheduling job in class fair24a : -4 shares given, order 2"),
        _SENT,
    ])
    tables = parse([path], engine=engine).tables
    assert tables["unparsed"].height == 0
    assert tables["expansions"].select("kind", "job_id", "counted", "current", "needed", "order").rows() == [
        ("find_machines", 5, -1, 0, -1, 2), ("find_machines_preempt", 5, None, None, -1, None)]
    assert tables["counts"].select("kind", "job_id", "shares_given", "order").rows() == [("given", 6, -4, 2)]


def test_find_shares_lines_with_negative_counts_are_typed_alike_in_c_and_polars(tmp_path):
    path = _log(tmp_path, [_ORDER, *_NEGATIVE, _COUNTED, _SENT])
    compiled, reference, _ = _both(path, "expansions")
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.filter(kind="find_shares_counted")["counted"].to_list() == [-1, -4, 2, 1]


def test_a_chunk_of_only_do_expansion_lines_is_typed_in_c(tmp_path, monkeypatch):
    path = _log(tmp_path, [_expand("N/A", "NP: --default-- Expansions in this order: 3:found"), _SENT])
    compiled, reference, built = _both(path, "expansions")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("kind", "job_id", "found").rows() == [("do_expansion", 3, True)]


@pytest.mark.parametrize("body, rows", [
    # not ASCII: the C reader refuses the record, the handler's \S reads the name
    ("NP: pöol Expansions in this order: 7:found", [("pöol", 7, True)]),
    # a tab between entries: neither C nor the handler's regex reads it; lark does
    ("NP: --default-- Expansions in this order: 7:found\t8:notfound", None),
    # a word the handler's regex refuses: lark decides (an unparsed record)
    ("NP: --default-- Expansions in this order: 7:maybe", None),
])
def test_a_body_the_c_reader_refuses_goes_the_handlers_way(tmp_path, monkeypatch, body, rows):
    path = _log(tmp_path, [_ORDER, _expand("N/A", body), _SENT])
    compiled, reference, built = _both(path, "expansions")
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    if rows is not None:
        assert compiled.filter(kind="do_expansion").select("nodepool", "job_id", "found").rows() == rows


def test_a_regex_family_of_the_bucket_sends_the_chunk_the_reference_way(tmp_path, monkeypatch):
    path = _log(tmp_path, [
        _expand("N/A", "NP: --default-- Expansions in this order: 7:found"),
        ("NodePool", "N/A", "countFreeableMachines", "Bypass because machine\th1 is busy"),
        _SENT,
    ])
    compiled, reference, built = _both(path, "expansions")
    assert_frame_equal(compiled, reference, check_exact=True)
    # a tab in the bypass line: its template refuses it and lark reads it, so the reference assembly takes the bucket
    assert built == 0 and compiled["kind"].to_list() == ["do_expansion", "freeable_bypass"]
    assert compiled.filter(kind="do_expansion").select("job_id", "found").rows() == [(7, True)]


def test_do_expansion_lines_in_two_files_go_the_reference_way(tmp_path, monkeypatch):
    second = tmp_path / "b"
    second.mkdir()
    first = _log(tmp_path, [_expand("N/A", "NP: a Expansions in this order: 1:found")])
    other = _log(second, [_expand("N/A", "NP: b Expansions in this order: 2:notfound"), _SENT])
    built = []
    monkeypatch.setitem(columns._BUILDERS, "expansions", lambda *a: built.append(1))
    both = parse([first, other]).tables["expansions"]
    assert not built
    assert both.select("nodepool", "job_id", "found").rows() == [("a", 1, True), ("b", 2, False)]


_SPACES = st.sampled_from([" ", "  ", "", "\t"])
_ENTRY = st.tuples(st.sampled_from(["7", "12", "007", "", "x", "123456789012345678901"]),
                   st.sampled_from([":found", ":notfound", ":maybe", ":", "found"]))
_GOOD_ENTRY = st.tuples(st.sampled_from(["7", "12", "007"]), st.sampled_from([":found", ":notfound"]))


@st.composite
def _body(draw):
    """Mostly the canonical shape (a chunk is C's only when every record is), now and then any."""
    if draw(st.integers(0, 3)):
        pool = draw(st.sampled_from(["--default--", "nd1", "p:q"]))
        entries = draw(st.lists(st.tuples(st.sampled_from([" ", "  "]), _GOOD_ENTRY), max_size=4))
        lead, tail = draw(st.sampled_from(["", " "])), draw(st.sampled_from(["", " ", "  "]))
    else:
        pool = draw(st.sampled_from(["--default--", "nd1", "p:q", "", "pöol"]))
        entries = draw(st.lists(st.tuples(_SPACES, _ENTRY), max_size=4))
        lead, tail = draw(_SPACES), draw(_SPACES)
    text = "".join(s + j + f for s, (j, f) in entries)
    return f"NP:{lead} {pool} Expansions in this order:{text}{tail}"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["N/A", "4"]), _body()), min_size=1, max_size=4))
def test_generated_do_expansion_lines_give_the_reference_table(records):
    with tempfile.TemporaryDirectory() as tmp:
        path = _log(Path(tmp), [_ORDER, *[_expand(j, b) for j, b in records], _SENT])
        compiled, reference, _ = _both(path, "expansions")
        assert_frame_equal(compiled, reference, check_exact=True)
