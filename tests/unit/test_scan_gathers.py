"""The compiled gathers the tables typed in C share (replay/parsing/csrc/where.c, names.c, and
`typed`'s `take`), against hand-worked rows."""

import re

import numpy as np
import polars as pl
import pyarrow as pa
import pytest

from replay.parsing import arrays
from replay.parsing.arrays import field_take, names_column, typed_taken
from replay.parsing.compiled import COMPILED

pytestmark = pytest.mark.skipif(not COMPILED, reason="the compiled scanner is not built")

if COMPILED:
    from replay.parsing import _scan

# two rows of a bucket with the columns (order, host, share_id): "12 abc x 7" holds their text
DATA = b"12 abc x 7"
SPANS = np.array([[0, 2, 3, 6, -1, -1],
                  [9, 10, 7, 8, 3, 4]], dtype=np.int32)


def test_columns_are_typed_from_the_spans_they_name():
    got = typed_taken(DATA, SPANS, [0, 1, -1, 2], [pl.Int64, pl.String, pl.String, pl.String])
    assert got is not None
    assert [c.to_pylist() for c in got] == [[12, 7], ["abc", "x"], [None, None], [None, "a"]]
    assert [c.null_count for c in got] == [0, 0, 2, 1]
    # a column taken twice, in any order
    again = typed_taken(DATA, SPANS, [2, 0, 0], [pl.String, pl.Int64, pl.String])
    assert again is not None and [c.to_pylist() for c in again] == [[None, "a"], [12, 7], ["12", "7"]]


def test_a_value_its_type_refuses_refuses_the_columns():
    assert typed_taken(DATA, SPANS, [1], [pl.Int64]) is None  # "abc" is no integer


def test_a_taken_column_outside_the_spans_is_an_error():
    with pytest.raises(ValueError, match="outside the spans"):
        _scan.typed(DATA, SPANS, 3, bytes([3]), np.array([3], dtype=np.int32))


def test_a_bucket_without_columns_gives_null_columns():
    got = typed_taken(DATA, np.zeros((2, 0), dtype=np.int32), [-1, -1], [pl.Int64, pl.String])
    assert got is not None and [c.to_pylist() for c in got] == [[None, None], [None, None]]


def test_the_fields_of_a_bucket_by_name():
    take = field_take(("order", "host", "share_id"), ("share_id", "user", "order"))
    assert take.tolist() == [2, -1, 0] and take.dtype == np.int32
    assert field_take(("order", "host", "share_id"), ("share_id", "user", "order")) is take


@pytest.mark.parametrize("dtype", [np.int32, np.uint32, np.int64])
def test_where_gathers_time_cycle_and_line_by_record(dtype):
    ts = np.array([1000, 1001, 1002, 1003], dtype=np.int64)
    cycle = np.array([0, 1, 1, 2], dtype=np.uint32)  # 0: no cycle (null)
    line = np.array([10, 11, 12, 13], dtype=np.uint32)
    rec = np.array([3, 0, 0, 2], dtype=dtype)
    got_ts, got_cycle, valid, nulls, got_line = _scan.where(rec, rec.itemsize, ts, cycle, line)
    assert np.frombuffer(got_ts, dtype=np.int64).tolist() == [1003, 1000, 1000, 1002]
    assert np.frombuffer(got_cycle, dtype=np.uint32).tolist() == [2, 0, 0, 1]
    assert nulls == 2 and bytes(valid)[0] & 0b1111 == 0b1001  # rows 0 and 3 have a cycle
    assert np.frombuffer(got_line, dtype=np.uint32).tolist() == [13, 10, 10, 12]
    _, _, valid, nulls, _ = _scan.where(rec[[0, 3]], rec.itemsize, ts, cycle, line)
    assert valid is None and nulls == 0


def test_where_refuses_a_record_it_does_not_have():
    ts, small = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.uint32)
    with pytest.raises(ValueError, match="outside the records"):
        _scan.where(np.array([2], dtype=np.int64), 8, ts, small, small)
    with pytest.raises(ValueError, match="outside the records"):  # a negative number is no record
        _scan.where(np.array([-1], dtype=np.int32), 4, ts, small, small)


@pytest.mark.parametrize("compiled", [True, False])
def test_names_are_picked_per_row(monkeypatch, compiled):
    monkeypatch.setattr(arrays, "COMPILED", compiled)
    got = names_column(np.array([2, 0, 1, 2, 3], dtype=np.int32), ("granted", None, "é", ""))
    assert got.type == pa.large_string() and got.null_count == 1
    assert got.to_pylist() == ["é", "granted", None, "é", ""]
    _, offsets, data = got.buffers()
    assert np.frombuffer(offsets, dtype=np.int64, count=6).tolist() == [0, 2, 9, 9, 11, 11]
    assert data.to_pybytes() == "égranted".encode() + "é".encode()


def test_names_refuses_a_pick_outside_the_names():
    table = arrays.name_bytes(("a", "b"))
    with pytest.raises(ValueError, match="outside the names"):
        _scan.names(np.array([0, 2], dtype=np.int64), 8, table.starts, table.blob, table.known)


# decimals at the edges of the exact path (mantissa up to 2^53, 19 digits, scale within 22 of the
# point) and past them (strtod's), and a spread of the shapes the logs print ("21139.000000", "0.5")
EDGES = ["0", "-0", "+0", "0.0", "-0.0", "5.", "007.50", "9007199254740992", "9007199254740993", "1e22", "1e23",
         "1e-22", "1e-23", "1234567890123456789", "12345678901234567890", "0.1", "0.3", "2.5E+3", "-2.5e-0",
         "123.456e5", "4.9e-324", "1.7976931348623157e308", "0.000000000000000000000000001", "NaN", "-Infinity",
         "21139.000000", "26328.666667", "8.9999999999999995e15", "0.30000000000000004", "1e-5"]


def _decimals() -> list[str]:
    rng = np.random.default_rng(7)
    out = list(EDGES)
    for _ in range(3000):
        digits = "".join(rng.choice(list("0123456789"), size=int(rng.integers(1, 22))))
        point = int(rng.integers(0, len(digits) + 1))
        text = f"{digits[:point]}.{digits[point:]}" if 0 < point < len(digits) else digits
        if rng.random() < 0.3:
            text += f"e{int(rng.integers(-30, 31))}"
        out.append(("-" if rng.random() < 0.3 else "") + text)
    return out


def test_numbers_are_typed_as_polars_casts_them():
    values = _decimals()
    data = " ".join(values).encode()
    ends = np.cumsum([len(v) + 1 for v in values]) - 1
    spans = np.stack([ends - [len(v) for v in values], ends], axis=1).astype(np.int32)
    got = typed_taken(data, spans, [0], [pl.Float64])
    assert got is not None
    want = pl.Series(values).cast(pl.Float64).to_numpy()
    # bit for bit: the same double, its sign of zero and the NaNs included
    assert got[0].to_numpy(zero_copy_only=False).view(np.uint64).tolist() == want.view(np.uint64).tolist()


def test_a_tables_columns_are_typed_row_by_row_alike():
    # many rows (the typing reads lines ahead), every type, a column of nulls between the others
    rows = 100
    data = b"".join(b"%d x%d %d.5 true " % (i, i, i) for i in range(rows))
    words = np.array([(m.start(), m.end()) for m in re.finditer(rb"\S+", data)], dtype=np.int32)
    spans = words.reshape(rows, 8).copy()
    spans[::3, 2:4] = -1  # every third row has no word
    got = typed_taken(data, spans, [0, 1, -1, 2, 3, 1], [pl.Int64, pl.String, pl.String, pl.Float64, pl.Boolean,
                                                       pl.String])
    assert got is not None
    assert got[0].to_pylist() == list(range(rows))
    assert got[1].to_pylist() == [None if i % 3 == 0 else f"x{i}" for i in range(rows)] == got[5].to_pylist()
    assert got[2].to_pylist() == [None] * rows and got[2].null_count == rows
    assert got[3].to_pylist() == [i + 0.5 for i in range(rows)] and got[4].to_pylist() == [True] * rows
    # a value refused in the last row refuses every column
    spans[-1, 0:2] = words[4 * rows - 3]  # "x99" as the integer column
    assert typed_taken(data, spans, [0, 1], [pl.Int64, pl.String]) is None


def _schedule_rows(rows: list[tuple[int, tuple[int, int] | None, bool]]) -> tuple[np.ndarray, np.ndarray]:
    """Spans (work_type, job_id, memory_gb, reason, host, share_id, init_ms) and records of rows
    (record, job span or None, whether it names a share) over b"5 9 n1 x"."""
    spans = np.full((len(rows), 14), -1, dtype=np.int32)
    for r, (_, job, share) in enumerate(rows):
        if job is not None:
            spans[r, 2:4] = job
        if share:
            spans[r, 8:10] = (4, 6)
    return spans, np.array([rec for rec, _, _ in rows], dtype=np.int32)


def test_the_schedule_keeps_per_record_and_job_its_share_rows_else_its_first():
    five, nine = (0, 1), (2, 3)
    spans, rec = _schedule_rows([(0, five, False), (0, nine, False), (0, five, True), (0, nine, False),
                                 (1, five, False), (1, None, False), (1, None, True)])
    got = _scan.schedule_keep(b"5 9 n1 x", spans, rec)
    assert got is not None
    keep, job = got
    # job 5 of record 0 has a share row (row 2), job 9 none (its first, row 1); record 1's job 5 is
    # another group (row 4); rows without a job are one job, whose share row wins (row 6)
    assert np.frombuffer(keep, dtype=np.int32).tolist() == [1, 2, 4, 6]
    assert np.frombuffer(job, dtype=np.int64).tolist() == [5, 9, 5, 9, 5, 0, 0]


def test_the_schedule_refuses_a_job_that_is_no_integer():
    spans, rec = _schedule_rows([(0, (0, 1), False), (0, (7, 8), False)])
    assert _scan.schedule_keep(b"5 9 n1 x", spans, rec) is None


def test_a_row_takes_the_first_of_several_fields_it_has():
    # rows of three span columns; the fields wanted in the order 2, 0
    spans = np.array([[0, 1, 2, 3, 4, 5], [-1, -1, 2, 3, 4, 5], [0, 1, -1, -1, -1, -1], [-1, -1, 7, 8, -1, -1]],
                     dtype=np.int32)
    got = np.frombuffer(_scan.first_spans(spans, 3, np.array([2, 0], dtype=np.int32)), dtype=np.int32)
    assert got.reshape(-1, 2).tolist() == [[4, 5], [4, 5], [0, 1], [-1, -1]]
    with pytest.raises(ValueError, match="outside the spans"):
        _scan.first_spans(spans, 3, np.array([3], dtype=np.int32))
