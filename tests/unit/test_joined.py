"""The join of a compiled reader's rows to a bucket's templated rows (replay.parsing.joined), on a
hand-built block: the expected order, spans and list counts are written out by hand below."""

from __future__ import annotations

import numpy as np
import pytest

from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES
from replay.parsing.joined import join_rows, record_positions, widen_bucket
from replay.parsing.scan import Bucket, RawRows
from replay.parsing.compiled import COMPILED

TEMPLATED, READ = FAMILY_CODE["np_name"], FAMILY_CODE["np_nodes"]
# the block's text: every value a word of its own, so a span names the row and field it came from
DATA = b"t0a t0b t2a t2b t2c t5b i0 i5a i5b r1a r1c r3a r3c r3d r4c n1 n2 n3"
REC = np.array([100, 101, 102, 103, 104, 105])  # every record's number: positions 0 to 5
CODES = np.array([TEMPLATED, READ, TEMPLATED, READ, READ, TEMPLATED], dtype=np.int32)


def _span(*words: str) -> list[int]:
    """The (start, end) of each word of DATA, flat; "-": an absent field (start -1)."""
    out: list[int] = []
    for word in words:
        at = -1 if word == "-" else (b" " + DATA + b" ").index(f" {word} ".encode())
        out += [-1, -1] if word == "-" else [at, at + len(word)]
    return out


def _templated() -> RawRows:
    """Templated rows as `_scan.fill` gives them: the block holds records 0, 2 and 5; record 2 has
    two rows. Columns a, b; list tl (items i0 on record 0's row, none on 2's second, i5a i5b on 5's)."""
    bucket = Bucket("t", ("a", "b"), ("tl",), (False,),
                    (("item", tuple("templ" if c == TEMPLATED else None for c in range(len(FAMILY_NAMES)))),))
    rows = np.array([0, 1, 1, 2], dtype=np.int32)  # indices into `at`
    spans = np.array([_span("t0a", "t0b"), _span("t2a", "t2b"), _span("t2c", "-"), _span("-", "t5b")], np.int32)
    counts = np.array([1, -1, 0, 2], dtype=np.int32)
    items = np.array(_span("i0", "i5a", "i5b"), dtype=np.int32)
    got = (rows.tobytes(), spans.tobytes(), [(counts.tobytes(), items.tobytes())])
    return RawRows(bucket, got, DATA, np.array([0, 2, 5]), REC, CODES)


# the reader's rows: records 1, 3, 3 and 4 (positions), filling a (a templated column) and c (new),
# and the list rl (n1 n2 on record 1's row, none on 3's second, n3 on 4's)
READ_AT = np.array([1, 3, 3, 4])
READ_SPANS = {"a": np.array([_span("r1a"), _span("r3a"), _span("-"), _span("-")], np.int32).reshape(4, 2),
              "c": np.array([_span("r1c"), _span("r3c"), _span("r3d"), _span("r4c")], np.int32).reshape(4, 2)}
READ_LISTS = {"rl": (np.array([2, 0, -1, 1], dtype=np.int32), np.array(_span("n1", "n2", "n3"), np.int32).tobytes())}


def _words(spans: np.ndarray) -> list[list[str | None]]:
    """Each row's fields as the words of DATA its spans name (None: absent)."""
    pairs = spans.reshape(len(spans), -1, 2)
    return [[None if s < 0 else DATA[s:e].decode() for s, e in row] for row in pairs]


def test_the_reader_rows_go_between_the_templated_rows_in_record_order():
    old = _templated()
    bucket = widen_bucket(old.bucket, "np_nodes", ("a", "c"), ("rl",))
    assert bucket.columns == ("a", "b", "c") and bucket.lists == ("tl", "rl") and bucket.list_ints == (False, False)
    assert dict(bucket.consts)["item"][TEMPLATED] == "templ" and dict(bucket.consts)["item"][READ] == "np_nodes"

    joined = join_rows(old, bucket, READ_AT, READ_SPANS, READ_LISTS, DATA, REC, CODES)
    assert joined.rows.tolist() == [0, 1, 2, 2, 3, 3, 4, 5]  # records 100 to 105; a record's rows keep their order
    assert _words(joined.spans) == [
        ["t0a", "t0b", None], ["r1a", None, "r1c"], ["t2a", "t2b", None], ["t2c", None, None],
        ["r3a", None, "r3c"], [None, None, "r3d"], [None, None, "r4c"], [None, "t5b", None]]
    (tl_counts, tl_items), (rl_counts, rl_items) = joined.got[2]
    assert np.frombuffer(tl_counts, np.int32).tolist() == [1, -1, -1, 0, -1, -1, -1, 2]
    assert np.frombuffer(rl_counts, np.int32).tolist() == [-1, 2, -1, -1, 0, -1, 1, -1]
    assert _words(np.frombuffer(tl_items, np.int32).reshape(-1, 2)) == [["i0"], ["i5a"], ["i5b"]]
    assert _words(np.frombuffer(rl_items, np.int32).reshape(-1, 2)) == [["n1"], ["n2"], ["n3"]]


@pytest.mark.skipif(not COMPILED, reason="the rows are framed over the block by the compiled scanner")
def test_the_joined_rows_frame_as_the_reference_would_read_them():
    old = _templated()
    bucket = widen_bucket(old.bucket, "np_nodes", ("a", "c"), ("rl",))
    frame = join_rows(old, bucket, READ_AT, READ_SPANS, READ_LISTS, DATA, REC, CODES).frame()
    assert frame is not None
    assert frame.rows() == [
        (100, "np_name", "t0a", "t0b", None, ["i0"], None, "templ"),
        (101, "np_nodes", "r1a", None, "r1c", None, ["n1", "n2"], "np_nodes"),
        (102, "np_name", "t2a", "t2b", None, None, None, "templ"),
        (102, "np_name", "t2c", None, None, [], None, "templ"),
        (103, "np_nodes", "r3a", None, "r3c", None, [], "np_nodes"),
        (103, "np_nodes", None, None, "r3d", None, None, "np_nodes"),
        (104, "np_nodes", None, None, "r4c", None, ["n3"], "np_nodes"),
        (105, "np_name", None, "t5b", None, ["i5a", "i5b"], None, "templ"),
    ]


def test_with_no_templated_rows_the_reader_rows_stand_alone():
    bucket = widen_bucket(_templated().bucket, "np_nodes", ("c",), ("rl",))
    joined = join_rows(None, bucket, READ_AT, {"c": READ_SPANS["c"]}, READ_LISTS, DATA, REC, CODES)
    assert joined.rows.tolist() == [1, 3, 3, 4]
    assert _words(joined.spans) == [[None, None, "r1c"], [None, None, "r3c"], [None, None, "r3d"], [None, None, "r4c"]]
    assert [np.frombuffer(c, np.int32).tolist() for c, _ in joined.got[2]] == [[-1] * 4, [2, 0, -1, 1]]


def test_a_list_both_sides_fill_is_refused():
    old = _templated()
    bucket = widen_bucket(old.bucket, "np_nodes", (), ("tl",))
    with pytest.raises(ValueError, match="both sides"):
        join_rows(old, bucket, READ_AT, {}, {"tl": READ_LISTS["rl"]}, DATA, REC, CODES)


def test_a_record_not_in_the_chunk_has_no_position():
    assert record_positions(REC, np.array([101, 104, 104])).tolist() == [1, 4, 4]
    assert record_positions(REC, np.array([101, 106])) is None  # past the last
    assert record_positions(REC, np.array([99])) is None  # before the first
    assert record_positions(np.array([100, 102]), np.array([101])) is None  # between two
