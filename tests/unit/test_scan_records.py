"""The scanner's records without text columns (replay.parsing.scan `Scanned`, `with_strings`), the
numbers it reads from each header (`_scan.numbers`) and the cycle numbering (replay.parsing.assemble.record_cycles,
compiled and in numpy): hand-worked lines, the polars path as reference, Hypothesis."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import assemble
from replay.parsing.assemble import record_cycles
from replay.parsing.chunks import Piece
from replay.parsing.compiled import COMPILED
from replay.parsing.families import FAMILY_CODE, GENERIC
from replay.parsing.records import find_records, split_lines
from replay.parsing.pipeline import parse
from replay.parsing.scanned import (Scanned, filled, first_last_stamps, full_records, scan_records, with_strings,
                                    word_column)
from replay.parsing.unparsed import line_cycles


def _header(jid: str = "N/A", tid: str = "1", method: str = "m", body: str = "b", cls: str = "X") -> str:
    return f"01 Jan 2015 00:01:00,000  INFO RM.{cls} - {jid} T[{tid}] {method} {body}"


def _scanned(lines: list[str]) -> pl.DataFrame:
    _, recs = scan_records([Piece(0, 1, ("\n".join(lines) + "\n").encode())])
    return recs.records


def test_the_jid_thread_and_method_class_are_read_from_the_header():
    # each value worked from the line: "N/A" is no job, "007" is job 7, a JID of letters is none,
    # "-5" is what the polars cast reads; T[] has no thread; the counting methods by their name
    records = _scanned([
        _header("123", "19", "countFixedForJob"), _header("N/A", "", "howMuchFixed"), _header("007", "0000000001"),
        _header("x12", "7", "countSingleReservation"), _header("-5", "4294967296", "countReservationForJob"),
        _header("99999999999999999999", "3", "countFixedForJobs"),
    ])
    assert "jid" not in records.columns and "body" not in records.columns  # no text until asked
    assert records["_job"].to_list() == [123, None, 7, None, -5, None]
    assert records["tid"].to_list() == [19, None, 1, 7, None, 3]
    assert records["_mc"].to_list() == [1, 1, 0, 2, 2, 0]


_JIDS = st.one_of(st.just("N/A"), st.from_regex(r"\A[-+]?[0-9]{1,22}\Z"), st.from_regex(r"\A[A-Za-z0-9/.-]{1,8}\Z"))


@settings(max_examples=200)
@given(st.lists(st.tuples(_JIDS, st.from_regex(r"\A[0-9]{0,12}\Z")), min_size=1, max_size=12))
def test_header_numbers_are_the_ones_the_polars_path_casts(fields):
    lines = [_header(jid, tid) for jid, tid in fields]
    polars = find_records(split_lines([Piece(0, 1, ("\n".join(lines) + "\n").encode())])).records
    records = _scanned(lines)
    assert records["_job"].to_list() == polars["jid"].cast(pl.Int64, strict=False).to_list()
    assert records["tid"].to_list() == polars["tid"].to_list()


def test_text_columns_are_built_for_the_rows_asked_from_the_right_block():
    # two files in one chunk: a long value (over 12 bytes, not inline in its view) points into its own block
    first = [_header("1", body="a body longer than twelve bytes"), "  a continuation line"]
    second = [_header("2", cls="AnotherLongClassName", body="short"), _header("3", body="second file's body, long")]
    pieces = [Piece(0, 1, ("\n".join(first) + "\n").encode()), Piece(1, 1, ("\n".join(second) + "\n").encode())]
    _, recs = scan_records(pieces)
    polars = find_records(split_lines(pieces)).records
    assert_frame_equal(full_records(recs).drop("_piece", "_bs", "_be", "_fam", "_job", "_mc"), polars)
    picked = with_strings(recs, recs.records[[2, 0]], ["body", "cls", "ts_text"])
    assert picked.select("rec", "body", "cls").rows() == [
        (2, "second file's body, long", "X"), (0, "a body longer than twelve bytes", "X")]
    assert picked["ts_text"].to_list() == ["01 Jan 2015 00:01:00,000"] * 2


def test_a_header_only_polars_reads_gives_the_chunk_its_text_columns_at_once():
    # another padding: the scanner leaves the line to the general regex, and the chunk's records
    # come with their text, as the polars path lays them out
    lines = [_header("5", body="canonical"), "01 Jan 2015 00:01:00,000   INFO RM.X - 6  T[2] m padded"]
    records = _scanned(lines)
    polars = find_records(split_lines([Piece(0, 1, ("\n".join(lines) + "\n").encode())])).records
    assert "jid" in records.columns and "_job" not in records.columns
    assert_frame_equal(records.drop("_piece", "_bs", "_be", "_fam"), polars)


def test_cycles_are_numbered_by_the_published_schedules():
    # X any family, S createState (the schedule being built), P the schedule published, N no family.
    # A record belongs to the next published schedule's cycle; createState to the one it builds
    # (the count of published ones before it); N has none.
    x, s, p, n = FAMILY_CODE[GENERIC], FAMILY_CODE["schedule_state"], FAMILY_CODE["schedule_sent"], -1
    codes = np.array([x, s, p, n, x, s, p, x], dtype=np.int32)
    # the last X comes after the log's last published schedule: no cycle in the last chunk
    assert record_cycles(codes, last=True).tolist() == [1, 0, 1, 0, 2, 1, 2, 0]
    assert record_cycles(codes, last=False).tolist() == [1, 0, 1, 0, 2, 1, 2, 3]


def test_lines_inside_single_line_records_and_bodies_of_no_shape_are_reported(tmp_path):
    # worked from the lines: the RmCounter line is a one-line record, so the text under it is an
    # unexpected line (the blank one is not); "no such shape" is no body apportion_qshares prints
    log = tmp_path / "rm.log"
    log.write_text("\n".join([
        _header(cls="NodepoolScheduler", method="apportion_qshares", body="countJobShares RmCounter Start"),
        "  stray text", "   ",
        _header(cls="NodepoolScheduler", method="apportion_qshares", body="no such shape"),
        "  its second line",
    ]) + "\n")
    for engine in ("fast", "polars"):
        got = parse([str(log)], engine=engine).tables["unparsed"].select("line", "text", "reason").rows()
        assert got == [
            (2, "  stray text", "unexpected line inside a NodepoolScheduler.apportion_qshares record "
                                "(interleaved or wrapped output)"),
            (4, _header(cls="NodepoolScheduler", method="apportion_qshares", body="no such shape"),
             "known message NodepoolScheduler.apportion_qshares with a body of no known shape"),
            # a line of a record of no family: a stray line keeps that first reason (unparsed_table)
            (5, "  its second line", "unexpected line inside a NodepoolScheduler.apportion_qshares record "
                                     "(interleaved or wrapped output)"),
        ], engine


def test_an_unparsed_line_takes_the_cycle_of_the_record_it_follows():
    # records at lines 2 (X), 4 (P: the cycle's schedule published), 6 (X, after the log's last
    # schedule); a second file's line 1 (X) continues the chunk. Line 1 comes before any record.
    x, p = FAMILY_CODE[GENERIC], FAMILY_CODE["schedule_sent"]
    records = pl.DataFrame({"file": [0, 0, 0, 1], "line": [2, 4, 6, 1], "_code": [x, p, x, x]},
                           schema={"file": pl.UInt16, "line": pl.UInt32, "_code": pl.Int32})
    rows = pl.DataFrame({"file": [0, 0, 0, 0, 1], "line": [1, 3, 5, 7, 2]},
                        schema={"file": pl.UInt16, "line": pl.UInt32})
    assert line_cycles(rows, records, last=True).to_list() == [None, 1, 1, None, None]
    assert line_cycles(rows, records, last=False).to_list() == [None, 1, 1, 2, 2]


_LINES = st.one_of(
    st.builds(_header, _JIDS, st.from_regex(r"\A[0-9]{0,3}\Z"), st.sampled_from(["m", "countFixedForJob", "x.y"]),
              st.from_regex(r"\A[ -~]{0,30}\Z"), st.sampled_from(["X", "NodepoolScheduler", "AVeryLongClassName"])),
    st.from_regex(r"\A[ -~\u00e9]{0,20}\Z"),  # continuation text, non-ASCII among it
    st.just("01 Jan 2015 00:01:00,000   INFO RM.X - N/A  T[1] m other padding"),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(_LINES, min_size=1, max_size=6), min_size=1, max_size=3))
def test_records_of_several_files_are_the_ones_the_polars_path_gives(files):
    # each inner list one file's piece of the chunk: the text columns built on demand (or at once,
    # when a header only polars reads is among them) are those of the polars path
    pieces = [Piece(i, 1, ("\n".join(lines) + "\n").encode()) for i, lines in enumerate(files)]
    lines, recs = scan_records(pieces)
    polars = find_records(split_lines(pieces))
    got = full_records(recs).drop("_piece", "_bs", "_be", "_fam", "_job", "_mc", strict=False)
    assert_frame_equal(got, polars.records, check_exact=True)
    assert_frame_equal(recs.continuations.drop("_s", "_e", "_piece"), polars.continuations)
    assert_frame_equal(recs.orphans, polars.orphans)
    assert_frame_equal(lines.frame.drop("_s", "_e", "_piece"), split_lines(pieces).frame)
    if "_job" in recs.records.columns:
        assert recs.records["_job"].to_list() == polars.records["jid"].cast(pl.Int64, strict=False).to_list()


def test_a_chunk_of_two_files_is_split_into_lines_records_continuations_and_orphans():
    # worked from the text: file 0 starts at its line 10 with a line before any header (an orphan),
    # its record continues over the roll into file 1, whose line 2 starts the second record
    first = ["orphan text", _header("1", body="first"), "  a1"]
    second = ["  a2", "02 Jan 2015 00:01:00,000  INFO RM.X - 2 T[3] m second"]
    pieces = [Piece(0, 10, ("\n".join(first) + "\n").encode()), Piece(1, 1, ("\n".join(second) + "\n").encode())]
    lines, recs = scan_records(pieces)
    # (file, line, text, start, end in its file's bytes, piece): the headers are 52 and 53 characters
    assert lines.frame.rows() == [
        (0, 10, "orphan text", 0, 11, 0), (0, 11, first[1], 12, 64, 0), (0, 12, "  a1", 65, 69, 0),
        (1, 1, "  a2", 0, 4, 1), (1, 2, second[1], 5, 58, 1)]
    assert lines.frame.columns == ["file", "line", "text", "_s", "_e", "_piece"]
    assert recs.records.select("rec", "file", "line", "tid", "_job", "_piece").rows() == [(0, 0, 11, 1, 1, 0),
                                                                                         (1, 1, 2, 3, 2, 1)]
    assert recs.continuations.select("rec", "file", "line", "text", "_piece").rows() == [
        (0, 0, 12, "  a1", 0), (0, 1, 1, "  a2", 1)]
    assert recs.orphans.rows() == [(0, 10, "orphan text")]
    assert first_last_stamps(recs) == ("01 Jan 2015 00:01:00,000", "02 Jan 2015 00:01:00,000")
    assert with_strings(recs, recs.records, ["body"])["body"].to_list() == ["first", "second"]


def test_a_chunk_of_no_records_has_no_stamps():
    _, recs = scan_records([Piece(0, 1, b"just text\n")])
    assert first_last_stamps(recs) == (None, None)
    assert recs.orphans.rows() == [(0, 1, "just text")]


def test_a_word_column_holds_the_words_at_the_rows_asked():
    # a short word (inline in its view), None (null), a word over 12 bytes (in the shared buffer)
    words = ["alpha", None, "a word longer than twelve", "beta-gamma-delta"]
    got = word_column("w", np.array([2, 0, 1, 3, 2]), words)
    assert got.name == "w" and got.dtype == pl.String
    longer = "a word longer than twelve"
    assert got.to_list() == [longer, "alpha", None, "beta-gamma-delta", longer]
    assert word_column("w", np.array([], dtype=np.int64), words).to_list() == []


def test_filled_reads_values_and_nulls_of_a_column_cut_out_of_a_longer_one():
    # [1, null, 3, null, 5] in two chunks; from row 1 on: [null, 3, null, 5] -> values 0 3 0 5
    col = pl.concat([pl.Series([1, None, 3], dtype=pl.Int64), pl.Series([None, 5], dtype=pl.Int64)], rechunk=False)
    values, present = filled(col[1:], np.int64)
    assert values.tolist() == [0, 3, 0, 5] and present.tolist() == [False, True, False, True]
    values, present = filled(pl.Series([7, 8, 9], dtype=pl.UInt32)[1:], np.uint32)
    assert values.tolist() == [8, 9] and values.dtype == np.uint32 and present.all()


def test_invalid_utf8_is_replaced_before_the_scan_and_counted():
    # worked from the bytes: the header's body and the continuation each hold one invalid byte,
    # replaced by U+FFFD; the header is non-ASCII then, so polars reads it (text columns at once)
    data = b"01 Jan 2015 00:01:00,000  INFO RM.X - 1 T[1] m b\xffody\n  cont \xfe\n"
    lines, recs = scan_records([Piece(0, 1, bytearray(data))])
    assert lines.bad_utf8_lines == 2
    assert lines.frame["text"].to_list() == [
        "01 Jan 2015 00:01:00,000  INFO RM.X - 1 T[1] m b\ufffdody", "  cont \ufffd"]
    assert recs.records["body"].to_list() == ["b\ufffdody"]
    assert recs.continuations.select("rec", "text").rows() == [(0, "  cont \ufffd")]


def test_valid_non_ascii_text_keeps_the_readers_bytes():
    data = bytearray("01 Jan 2015 00:01:00,000  INFO RM.X - 1 T[1] m ok\n  caf\u00e9\n".encode())
    lines, recs = scan_records([Piece(0, 1, data)])
    assert lines.bad_utf8_lines == 0 and recs.blocks[0] is data
    assert recs.continuations["text"].to_list() == ["  caf\u00e9"]


def test_continuation_lines_that_begin_with_a_date_are_found_from_their_bytes():
    # worked from the lines: a continuation line counts as stamped when its first 12 characters are
    # "DD Mon YYYY " (records.STAMPED); `_scan.chunk` lists them as it stitches them, and the
    # scanner's continuations read from their spans give the same answer as the regex over their text
    from dataclasses import replace

    from replay.parsing.unparsed_typed import stamped

    lines = [_header(), "12 Mar 2024 interleaved", "1 Mar 2024 short day", "12 mar 2024 lower month",
             "12 Mar 24 two-digit year", "12 Mar 2024", "  12 Mar 2024 indented", "ab Mar 2024 letters",
             "31 Dec 1999 x", "", "12 Mär 2024 non-ASCII"]
    _, recs = scan_records([Piece(0, 1, ("\n".join(lines) + "\n").encode())])
    expected = [True, False, False, False, False, False, False, True, False, False]
    assert "_s" in recs.continuations.columns
    assert isinstance(recs, Scanned) and recs.stamped is not None  # the chunk's one compiled call listed them
    assert stamped(recs).tolist() == expected
    assert stamped(replace(recs, stamped=None)).tolist() == expected  # from the spans
    text_only = replace(recs, continuations=recs.continuations.select("rec", "file", "line", "text"), stamped=None)
    assert stamped(text_only).tolist() == expected  # the regex over the text: the reference


@pytest.mark.skipif(not COMPILED, reason="the compiled scanner is not built")
@pytest.mark.parametrize("last", [True, False])
@pytest.mark.parametrize("unread", [True, False])
def test_the_compiled_cycles_are_the_numpy_ones(monkeypatch, last, unread):
    rng = np.random.default_rng(3)
    s, p = FAMILY_CODE["schedule_state"], FAMILY_CODE["schedule_sent"]
    # codes of no family, the two schedule families, and others; a chunk with none published too
    for codes in (rng.choice([-1, s, p, 0, 5, 40], size=500).astype(np.int32), np.array([-1, 0, s], dtype=np.int32),
                  np.zeros(0, dtype=np.int32)):
        compiled = record_cycles(codes, last, unread)
        monkeypatch.setattr(assemble, "COMPILED", False)
        assert compiled.tolist() == record_cycles(codes, last, unread).tolist()
        monkeypatch.undo()
