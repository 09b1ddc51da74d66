"""The pieces the compiled tables are laid out from, once per chunk (replay.parsing.arrays,
columns.plain_plan, columns._counts_plan, columns_schedule._gathered_lists): hand-worked inputs and
the Arrow buffers and layouts worked out from them by hand."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from replay.parsing.arrays import _WIDEST, name_bytes, names_column, repeated
from replay.parsing.columns import _counts_plan
from replay.parsing import columns_plain
from replay.parsing.columns_plain import Records, plain_plan, where_columns
from replay.parsing.columns_schedule import _gathered_lists
from replay.parsing.families import FAMILY_NAMES
from replay.parsing.scan import Bucket


def _buffers(array: pa.Array) -> tuple[list[int], bytes]:
    """A large_string array's offsets and data."""
    _, offsets, data = array.buffers()
    return np.frombuffer(offsets, dtype=np.int64, count=len(array) + 1).tolist(), data.to_pybytes()


def test_names_are_laid_out_from_their_bytes():
    names = ("granted", None, "é", "")
    got = names_column(np.array([0, 1, 2, 0, 3]), names)
    assert got.type == pa.large_string() and got.null_count == 1
    assert got.to_pylist() == ["granted", None, "é", "granted", ""]
    # "é" is two bytes in UTF-8; a null and an empty name take none
    assert _buffers(got) == ([0, 7, 7, 9, 16, 16], b"granted\xc3\xa9granted")


def test_one_name_on_every_row_is_repeated_without_a_gather():
    assert _buffers(names_column(np.array([2, 2, 2]), ("a", None, "rm.log"))) == ([0, 6, 12, 18], b"rm.logrm.logrm.log")
    nulls = names_column(np.array([1, 1]), ("a", None))
    assert nulls.to_pylist() == [None, None] and nulls.null_count == 2
    assert repeated(b"xy", 2).to_pylist() == ["xy", "xy"] and repeated(None, 3).null_count == 3
    assert repeated(b"xy", 0).to_pylist() == [] and names_column(np.array([], dtype=np.int64), ("a",)).to_pylist() == []


def test_names_wider_than_the_padded_matrix_are_written_name_by_name():
    wide = "w" * (_WIDEST + 1)
    got = names_column(np.array([1, 0, 1, 2]), ("ab", wide, None))
    assert got.to_pylist() == [wide, "ab", wide, None]
    assert _buffers(got)[0] == [0, _WIDEST + 1, _WIDEST + 3, 2 * _WIDEST + 4, 2 * _WIDEST + 4]


def test_a_name_list_is_encoded_once():
    names = ("ab", None, "c")
    table = name_bytes(names)
    assert name_bytes(names) is table
    assert table.encoded == (b"ab", b"", b"c") and table.widths.tolist() == [2, 0, 1]
    assert table.known.tolist() == [True, False, True]
    assert table.padded.tolist() == [[97, 98], [0, 0], [99, 0]]
    assert table.used.tolist() == [[True, True], [False, False], [True, False]]
    with pytest.raises(ValueError):  # shared by every chunk: nobody writes to it
        table.widths[0] = 5


def test_list_rows_that_follow_each_other_and_repeated_ones():
    values = np.array([10, 11, 12, 13, 14], dtype=np.int64)  # lists [10, 11], [12], [], [13, 14]
    present = np.array([True, True, False, True])
    following = _gathered_lists(values, np.array([0, 2, 3, 3]), np.array([2, 1, 0, 2]), present)
    assert following.to_pylist() == [[10, 11], [12], None, [13, 14]]
    # an RmCounter block's machines on each of its rows: the first list twice, then the last
    repeated_rows = _gathered_lists(values, np.array([0, 0, 3]), np.array([2, 2, 2]), np.array([True, True, True]))
    assert repeated_rows.to_pylist() == [[10, 11], [10, 11], [13, 14]]
    assert _gathered_lists(values, np.array([1]), np.array([0]), np.array([True])).to_pylist() == [[]]


def test_lists_of_one_length_are_gathered_as_whole_rows():
    values = np.arange(10, 16, dtype=np.int64)  # three lists of two: [10, 11], [12, 13], [14, 15]
    rows = _gathered_lists(values, np.array([4, 0, 4]), np.array([2, 2, 2]), np.array([True, True, True]))
    assert rows.to_pylist() == [[14, 15], [10, 11], [14, 15]]
    # a list starting off the rows of two (at 3) goes the general way: [13, 14] then [11, 12]
    off = _gathered_lists(values, np.array([3, 1]), np.array([2, 2]), np.array([True, False]))
    assert off.to_pylist() == [[13, 14], None]
    assert off.values.to_pylist() == [13, 14, 11, 12]  # a null row keeps its values, as the scanner gave them


def _per_code(**names: str) -> tuple[str | None, ...]:
    """A constant per family code: `names` by family, None for the others."""
    return tuple(names.get(f) for f in FAMILY_NAMES)


def test_a_plain_tables_layout_is_worked_out_once_per_bucket():
    family = FAMILY_NAMES[1]
    bucket = Bucket("allotments", ("nqm", "user", "qshares"), (), (), (("kind", _per_code(**{family: "given"})),))
    plan = plain_plan("allotments", bucket)
    assert plan is not None and plain_plan("allotments", bucket) is plan
    # tables.SCHEMAS["allotments"]: ts cycle job_id kind nqm wanted_nqm qshares memory_gb allotment_qshares
    # allotment_gb user count file line; the record gives ts, cycle, job_id, file and line
    assert plan.spanned == ("nqm", "wanted_nqm", "qshares", "memory_gb", "allotment_qshares", "allotment_gb", "user",
                            "count")
    # nqm is the bucket's column 0, qshares column 2, user column 1; the rest none
    assert plan.take.tolist() == [0, -1, 2, -1, -1, -1, 1, -1]
    assert [c for c, _ in plan.consts] == ["kind"] and plan.consts[0][1][1] == "given"
    assert plan.job == -1 and plan.lists == ()


def test_a_constant_the_c_code_does_not_lay_out_sends_the_table_the_reference_way():
    # a family constant for `count`, an integer column: the reference casts it
    bucket = Bucket("allotments", ("nqm",), (), (), (("count", _per_code(**{FAMILY_NAMES[1]: "3"})),))
    assert plain_plan("allotments", bucket) is None


def test_counts_policies_and_kinds_per_family_code():
    granted, stable = FAMILY_NAMES[1], FAMILY_NAMES[2]
    bucket = Bucket("counts", ("shares",), (), (), (
        ("policy", _per_code(**{granted: "FAIR_SHARE"})),
        ("kind", _per_code(**{granted: "granted", stable: "out_of_shares"}))))
    plan = _counts_plan(bucket)
    assert plan is not None
    labels, policy, kind = plan
    assert labels == (None, "FIXED_SHARE", "RESERVE", "FAIR_SHARE")
    assert policy[1] == 3 and policy[2] == -1 and (np.delete(policy, 1) == -1).all()
    assert kind[1] == 1 and kind[2] == 3 and (np.delete(kind, [1, 2]) == 0).all()
    reason = Bucket("counts", ("shares", "reason"), (), (), ())
    assert _counts_plan(reason) is None  # steps.counts reads the reason: the reference way


def _records(names: list[str], file: list[int]) -> Records:
    """Five records: ts 1000 + i ms, cycles 0 (none), 1, 1, 2, 2, lines 10 + i, in files `file`."""
    n = len(file)
    return Records(ts=np.arange(1000, 1000 + n, dtype=np.int64), cycle=np.array([0, 1, 1, 2, 2], dtype=np.uint32)[:n],
                   job=np.zeros(n, dtype=np.int64), job_ok=np.zeros(n, dtype=bool),
                   file=np.array(file, dtype=np.uint16), line=np.arange(10, 10 + n, dtype=np.uint32), names=names,
                   method=np.zeros(n, dtype=np.uint8))


@pytest.mark.parametrize(("names", "file", "want"), [
    (["rm.log"], [0, 0, 0, 0, 0], ["rm.log", "rm.log", "rm.log"]),  # one file: its name repeated, no gather
    (["rm.log.1", "rm.log"], [0, 0, 0, 1, 1], ["rm.log.1", "rm.log.1", "rm.log"]),
])
@pytest.mark.parametrize("compiled", [True, False])  # _scan.where, and numpy without the scanner
def test_where_columns_of_some_records(monkeypatch, names, file, want, compiled):
    monkeypatch.setattr(columns_plain, "COMPILED", compiled and columns_plain.COMPILED)
    got = where_columns(_records(names, file), np.array([0, 2, 4]))
    assert got["file"].to_pylist() == want
    assert got["cycle"].to_pylist() == [None, 1, 2]  # cycle 0: the record precedes no published schedule
    assert got["line"].to_pylist() == [10, 12, 14]
    assert got["ts"].cast(pa.int64()).to_pylist() == [1000, 1002, 1004]
