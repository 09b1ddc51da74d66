"""The scan of a whole chunk in one compiled call (`_scan.chunk`, replay.parsing.scanned `_whole_chunk`):
hand-made pieces worked from their text, then Hypothesis, each against the polars path (records.py),
and the lines it leaves to the piece by piece path."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing.chunks import Piece
from replay.parsing.families import FAMILY_CODE
from replay.parsing.records import Records, find_records, split_lines
from replay.parsing.routing import family_counts, route
from replay.parsing.scanned import Scanned, _whole_chunk, full_records, scan_records


def _header(jid: str = "N/A", tid: str = "1", method: str = "m", body: str = "b", cls: str = "X",
            day: str = "01 Jan 2015 00:01:00,000") -> str:
    return f"{day}  INFO RM.{cls} - {jid} T[{tid}] {method} {body}"


def _pieces(*files: tuple[int, list[str]]) -> list[Piece]:
    """One piece per (first line number, lines), file i the i-th."""
    return [Piece(i, first, ("\n".join(lines) + "\n").encode()) for i, (first, lines) in enumerate(files)]


def _assert_polars_path(pieces: list[Piece]) -> None:
    """scan_records of the pieces gives the polars path's lines, records, continuations, orphans and families."""
    lines, recs = scan_records(pieces)
    polars = find_records(split_lines(pieces))
    assert_frame_equal(lines.frame.drop("_s", "_e", "_piece"), split_lines(pieces).frame)
    got = full_records(recs).drop("_piece", "_bs", "_be", "_fam", "_job", "_mc", strict=False)
    assert_frame_equal(got, polars.records, check_exact=True)
    assert_frame_equal(recs.continuations.drop("_s", "_e", "_piece"), polars.continuations)
    assert_frame_equal(recs.orphans, polars.orphans)
    if "_job" in recs.records.columns:  # (a chunk with a header only polars reads has the JID's text instead)
        assert recs.records["_job"].to_list() == polars.records["jid"].cast(pl.Int64, strict=False).to_list()
    assert_frame_equal(route(recs.records, recs).select("rec", "family", "_code"),
                       route(polars.records, Records(polars.records, polars.continuations, polars.orphans))
                       .select("rec", "family", "_code"))


def test_a_chunk_of_three_files_is_scanned_in_one_call():
    # worked from the text: two orphans (file 0, lines 5-6) before the first header (line 7); its
    # record continues into file 1, which holds no header; file 2's line 3 starts the second record
    first = ["orphan one", "  orphan two", _header("12", "3", "countFixedForJob", "a body longer than twelve"), "  c1"]
    second = ["  c2", "c3 over twelve bytes long"]
    third = ["  c4", "", _header("N/A", "", "createState", "Schedule sent to Orchestrator", "JobManagerConverter",
                                 "02 Jan 2015 00:01:00,000"), "  c5"]
    pieces = _pieces((5, first), (1, second), (1, third))
    scanned = _whole_chunk(pieces)
    assert scanned is not None  # nothing here the scanner leaves to polars
    lines, recs = scanned
    assert isinstance(recs, Scanned) and recs.blocks == tuple(p.data for p in pieces)
    assert lines.frame.select("file", "line", "_piece").rows() == [
        (0, 5, 0), (0, 6, 0), (0, 7, 0), (0, 8, 0), (1, 1, 1), (1, 2, 1), (2, 1, 2), (2, 2, 2), (2, 3, 2), (2, 4, 2)]
    assert lines.frame["text"].to_list() == [*first, *second, *third]
    assert recs.records.select("rec", "file", "line", "tid", "_job", "_mc", "_piece").rows() == [
        (0, 0, 7, 3, 12, 1, 0), (1, 2, 3, None, None, 0, 2)]
    assert recs.records["ts"].dt.to_string("%d %b %Y %H:%M:%S%.3f").to_list() == [
        "01 Jan 2015 00:01:00.000", "02 Jan 2015 00:01:00.000"]
    assert recs.records["_fam"].to_list()[1] == FAMILY_CODE["schedule_sent"]
    # the body's span, in its own block: after "countFixedForJob "
    body = int(recs.records["_bs"][0]), int(recs.records["_be"][0])
    assert bytes(pieces[0].data[body[0]:body[1]]) == b"a body longer than twelve"
    assert recs.continuations.select("rec", "file", "line", "text", "_piece").rows() == [
        (0, 0, 8, "  c1", 0), (0, 1, 1, "  c2", 1), (0, 1, 2, "c3 over twelve bytes long", 1), (0, 2, 1, "  c4", 2),
        (0, 2, 2, "", 2), (1, 2, 4, "  c5", 2)]
    spans = recs.continuations.select("_s", "_e").rows()
    assert [bytes(pieces[p].data[s:e]).decode() for p, (s, e) in zip(recs.continuations["_piece"], spans)] == [
        "  c1", "  c2", "c3 over twelve bytes long", "  c4", "", "  c5"]
    assert recs.orphans.rows() == [(0, 5, "orphan one"), (0, 6, "  orphan two")]
    assert recs.heads is not None and recs.pieces is not None and recs.pieces.tolist() == [0, 2]
    assert full_records(recs)["body"].to_list() == ["a body longer than twelve", "Schedule sent to Orchestrator"]
    _assert_polars_path(pieces)


def test_a_chunk_of_no_header_is_all_orphans():
    pieces = _pieces((1, ["one", "two"]), (1, ["three over twelve bytes"]))
    got = _whole_chunk(pieces)
    assert got is not None
    lines, recs = got
    assert recs.records.height == 0 and recs.continuations.height == 0
    assert recs.orphans.rows() == [(0, 1, "one"), (0, 2, "two"), (1, 1, "three over twelve bytes")]
    _assert_polars_path(pieces)


@pytest.mark.parametrize("unsure", [
    "  caf\u00e9",  # not ASCII (valid UTF-8)
    "12 Mar 2024 a line that starts with a date",
    "01 Jan 2015 00:01:00,000 no header after all",
])
def test_lines_the_scanner_is_not_sure_of_are_read_by_the_general_regex(unsure):
    # worked from the text: the general regex finds no header in the line, so it is a continuation
    # line of the record before it, and the chunk stays with the one call
    pieces = _pieces((1, ["before", _header("1"), "  cont"]), (1, [unsure, _header("2")]))
    got = _whole_chunk(pieces)
    assert got is not None
    assert got[1].continuations.select("rec", "file", "line", "text").rows() == [(0, 0, 3, "  cont"),
                                                                                 (0, 1, 1, unsure)]
    _assert_polars_path(pieces)


@pytest.mark.parametrize("odd", [
    "01 Jan 2015 00:01:00,000   INFO RM.X - N/A  T[1] m other padding",  # a header of another layout
    _header(day="31 Dec 2016 23:59:60,000"),  # a leap second: polars reads the timestamp
    _header(day="30 Feb 2015 00:01:00,000"),  # no such day
    _header(tid="12345678901"),  # a thread id over nine digits: polars casts it
    _header(jid="-5"),  # a JID of another shape
    "  a replacement character \ufffd",  # counted as a line of bad UTF-8, as the repair counts it
])
def test_what_the_scanner_is_not_sure_of_takes_the_piece_by_piece_path(odd):
    pieces = _pieces((1, [_header("1"), "  cont"]), (1, ["before", odd, _header("2")]))
    assert _whole_chunk(pieces) is None
    _assert_polars_path(pieces)


def test_invalid_utf8_takes_the_piece_by_piece_path():
    pieces = [Piece(0, 1, (_header("1") + "\n").encode()),
              Piece(1, 1, b"  bad \xff byte\n" + (_header("2") + "\n").encode())]
    assert _whole_chunk(pieces) is None
    lines, _ = scan_records(pieces)
    assert lines.bad_utf8_lines == 1 and lines.frame["text"].to_list()[1] == "  bad \ufffd byte"


_LINES = st.one_of(
    st.builds(_header, st.one_of(st.just("N/A"), st.from_regex(r"\A[0-9]{1,18}\Z")), st.from_regex(r"\A[0-9]{0,9}\Z"),
              st.sampled_from(["m", "countFixedForJob", "countSingleReservation", "createState", "x.y"]),
              st.from_regex(r"\A[ -~]{0,30}\Z"),
              st.sampled_from(["X", "NodepoolScheduler", "JobManagerConverter", "AVeryLongClassName"])),
    st.from_regex(r"\A[ -~]{0,30}\Z"),  # continuation text (ASCII: the scanner is sure of it)
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 4_000_000_000), st.lists(_LINES, min_size=1, max_size=6)),
                min_size=1, max_size=4))
def test_whole_chunks_are_the_polars_paths(files):
    pieces = _pieces(*files)
    got = _whole_chunk(pieces)
    if any(ln[:2].isdigit() and not ln.startswith("01 Jan 2015 00:01:00,000  INFO") for _, lns in files for ln in lns):
        return  # a continuation line that starts with a date: the general regex decides (the test above)
    assert got is not None
    _assert_polars_path(pieces)


def test_the_chunk_counts_its_records_per_family_as_it_routes_them():
    # worked from the lines: three generic messages, two connectShare records of the placement's
    # shape, one of no known shape (a record of no family), one "Schedule sent"
    place = ("NodePool", "7", "connectShare", "share h1.3 order 2 machine h1 false 4 2 2 8192 <none>")
    odd = ("NodePool", "7", "connectShare", "no such shape")
    sent = ("JobManagerConverter", "N/A", "createState", "Schedule sent to Orchestrator")
    filler = ("Filler", "N/A", "pad", "some text")
    rows = [filler, place, odd, sent, place, filler, filler]
    pieces = _pieces((1, [_header(jid, "19", method, body, cls, f"01 Jan 2015 00:00:0{i},000")
                          for i, (cls, jid, method, body) in enumerate(rows)]))
    scanned = _whole_chunk(pieces)
    assert scanned is not None
    recs = scanned[1]
    assert isinstance(recs, Scanned) and recs.counts is not None  # counted by the compiled call
    want = {"message": 3, "connect_share": 2, "None": 1, "schedule_sent": 1}
    records = route(recs.records, recs, names=False)
    assert family_counts(records, recs) == want
    assert family_counts(records, replace(recs, counts=None)) == want  # from the routes' codes
