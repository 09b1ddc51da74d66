"""The numpy glue around the compiled readers (replay.parsing.family_rows, scan): records chosen by
family code and taken by index, and the continuation lines of a set of records, on hand-worked logs
(the expected records and byte spans read off the lines)."""

from __future__ import annotations

import numpy as np
import pytest
from polars.testing import assert_frame_equal

from replay.parsing.chunks import Piece
from replay.parsing.family_rows import _SLIM, _partition, _slim
from replay.parsing.records import find_records, split_lines
from replay.parsing.routing import route
from replay.parsing.scan import line_spans
from replay.parsing.compiled import COMPILED
from replay.parsing.scanned import scan_records
from tests.unit.test_columns import _HEAD, _SENT

_PLACE = ("NodePool", "7", "connectShare", "share h1.3 order 2 machine h1 false 4 2 2 8192 <none>")
_FILLER = ("Filler", "N/A", "pad", "some text")


def _text(records: list[tuple[str, str, str, str]]) -> str:
    return "".join(_HEAD.format(m=0, s=i, cls=c, jid=j, method=m, body=b) + "\n"
                   for i, (c, j, m, b) in enumerate(records))


@pytest.mark.parametrize("scanned", [False, True])
def test_records_go_to_their_family_first_seen_first_each_in_log_order(scanned):
    if scanned and not COMPILED:
        pytest.skip("the compiled scanner is not built")
    text = _text([_FILLER, _PLACE, _FILLER, _SENT, _PLACE, _FILLER])
    pieces = [Piece(0, 1, text.encode())]
    recs = scan_records(pieces)[1] if scanned else find_records(split_lines(pieces))
    records = route(recs.records, recs)
    codes = records["_code"].to_numpy()
    parts = _partition(records, recs, np.arange(records.height)[1:], codes[1:])  # all but the first record
    assert list(parts) == ["connect_share", "message", "schedule_sent"]
    assert {f: p["rec"].to_list() for f, p in parts.items()} == {
        "connect_share": [1, 4], "message": [2, 5], "schedule_sent": [3]}
    assert parts["message"]["body"].to_list() == ["some text", "some text"]
    assert parts["connect_share"].columns[:3] == ["rec", "family", "body"]


@pytest.mark.skipif(not COMPILED, reason="the compiled scanner is not built")
def test_the_lines_of_some_records_are_their_continuation_lines_with_their_byte_spans():
    text = _text([_FILLER]) + "  a1\n  a2\n" + _text([_FILLER]) + _text([_FILLER]) + "  c1\n"
    _, recs = scan_records([Piece(0, 1, text.encode())])
    records = route(recs.records, recs)
    span = [(text.index(s), text.index(s) + len(s)) for s in ("  a1", "  a2", "  c1")]
    block, (rec, start, end) = line_spans(records[[0, 2]], recs.continuations)
    assert block == 0
    assert list(zip(rec.tolist(), start.tolist(), end.tolist())) == [(0, *span[0]), (0, *span[1]), (2, *span[2])]
    assert line_spans(records[[1]], recs.continuations)[0] == -1  # a record with no line
    polars_recs = find_records(split_lines([Piece(0, 1, text.encode())]))  # lines without spans
    assert line_spans(route(polars_recs.records), polars_recs.continuations) is None


@pytest.mark.skipif(not COMPILED, reason="the compiled scanner is not built")
def test_the_slim_columns_taken_in_numpy_are_polars_gather_row_for_row():
    # records in an order that is neither the log's nor one family's (as _partition takes them), one
    # taken twice: the numpy takes must give polars' gather of the same positions, row for row
    text = _text([_FILLER, _PLACE, _FILLER, _SENT, _PLACE, _FILLER])
    _, recs = scan_records([Piece(0, 1, text.encode())])
    records = route(recs.records, recs)
    at = np.array([4, 0, 3, 1, 4, 5])
    codes = records["_code"].to_numpy()[at]
    got = _slim(records, at, codes)
    assert_frame_equal(got, records[at, [c for c in _SLIM if c in records.columns]], check_exact=True)
    # read off the lines: record n is line n + 1, and its family is the one its body names
    assert got["rec"].to_list() == [4, 0, 3, 1, 4, 5]
    assert got["family"].to_list() == ["connect_share", "message", "schedule_sent", "connect_share",
                                       "connect_share", "message"]
    # the polars path's records carry their text (body): polars' gather, as before
    polars_recs = find_records(split_lines([Piece(0, 1, text.encode())]))
    slow = route(polars_recs.records)
    assert_frame_equal(_slim(slow, at, codes), slow[at, [c for c in _SLIM if c in slow.columns]], check_exact=True)


@pytest.mark.skipif(not COMPILED, reason="the compiled scanner is not built")
def test_a_partition_of_numbers_and_spans_gains_the_text_columns_the_text_readers_read():
    # the compiled readers read a record's number and body span only: with the chunk's numpy
    # columns the parts hold those, and `_worded` gives each family the layout of the reference
    # partition (its names and bodies read off the lines above)
    from replay.parsing.family_rows import _worded
    from replay.parsing.scan import RecordArrays

    text = _text([_FILLER, _PLACE, _FILLER, _SENT, _PLACE, _FILLER])
    _, recs = scan_records([Piece(0, 1, text.encode())])
    records = route(recs.records, recs, names=False)
    assert "family" not in records.columns
    at = np.arange(records.height)[1:]
    codes = records["_code"].to_numpy()[at]
    spanned = _partition(records, recs, at, codes, RecordArrays.of(records))
    assert {f: p.columns for f, p in spanned.items()} == {f: ["rec", "_piece", "_bs", "_be"] for f in spanned}
    reference = _partition(route(recs.records, recs), recs, at, codes)
    assert list(spanned) == list(reference) == ["connect_share", "message", "schedule_sent"]
    for family, part in spanned.items():
        assert_frame_equal(_worded(part, recs, family), reference[family], check_exact=True)
    assert _worded(spanned["connect_share"], recs, "connect_share")["family"].to_list() == ["connect_share"] * 2
    assert _worded(spanned["message"], recs, "message")["body"].to_list() == ["some text", "some text"]
