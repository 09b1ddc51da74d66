"""Arrow arrays over the compiled scanner's buffers and over numpy, built without a copy and
without pyarrow.compute: the pieces every table typed in C (replay.parsing.columns*) is made of."""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any, NamedTuple

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.compiled import COMPILED

if COMPILED:
    from replay.parsing import _scan


def from_scanner(kind: Any, n: int, got: tuple[Any, ...]) -> pa.Array:
    """An Arrow array over the scanner's buffers: (nulls, validity, values) or (nulls, validity,
    offsets, data)."""
    nulls, validity, *buffers = got
    valid = None if validity is None else pa.py_buffer(validity)
    return pa.Array.from_buffers(kind, n, [valid, *[pa.py_buffer(b) for b in buffers]], null_count=nulls)


def numeric(kind: Any, values: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """An Arrow array over a numpy array (`present`: which rows are not null)."""
    absent = 0 if present is None else int(len(present) - present.sum())
    valid = pa.py_buffer(np.packbits(present, bitorder="little")) if present is not None and absent else None
    return pa.Array.from_buffers(kind, len(values), [valid, pa.py_buffer(np.ascontiguousarray(values))],
                                 null_count=absent)


def names_column(at: np.ndarray, names: Sequence[str | None]) -> pa.Array:
    """A large_string column of `names[at]` (None: null), built from the few names' bytes."""
    table = name_bytes(names if isinstance(names, tuple) else tuple(names))
    n = len(at)
    if COMPILED:  # one pass in C: a table's constant columns are built per chunk, a dozen numpy steps each
        at = at if at.dtype.itemsize in (4, 8) and at.dtype.kind in "iu" else at.astype(np.int64)
        nulls, valid, offsets, data = _scan.names(np.ascontiguousarray(at), at.dtype.itemsize, table.starts,
                                                  table.blob, table.known)
        return pa.Array.from_buffers(pa.large_string(), n, [None if valid is None else pa.py_buffer(valid),
                                                            pa.py_buffer(offsets), pa.py_buffer(data)],
                                     null_count=nulls)
    if n and (at == at[0]).all():  # a chunk's rows mostly share one file
        return repeated(table.encoded[int(at[0])] if table.known[at[0]] else None, n)
    lengths = table.widths[at]
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if table.padded.shape[1] <= _WIDEST:  # each row's padded name, its bytes kept (row-major: in order)
        data = np.take(table.padded, at, axis=0)[np.take(table.used, at, axis=0)].tobytes()
    else:  # each name's bytes written at its rows' offsets
        out = np.empty(int(offsets[-1]), dtype=np.uint8)
        for k in np.flatnonzero((np.bincount(at, minlength=len(names)) > 0) & (table.widths > 0)).tolist():
            rows = np.flatnonzero(at == k)
            at_bytes = (offsets[rows][:, None] + np.arange(table.widths[k])).reshape(-1)
            out[at_bytes] = np.tile(np.frombuffer(table.encoded[k], dtype=np.uint8), len(rows))
        data = out.tobytes()
    return with_validity(pa.large_string(), n, [pa.py_buffer(offsets), pa.py_buffer(data)], table.known[at])


_WIDEST = 64  # bytes: names_column pads names up to this wide (a row's padding is gathered, then dropped)


def repeated(name: bytes | None, n: int) -> pa.Array:
    """A large_string column of the UTF-8 `name` on each of n rows (None: n nulls)."""
    if name is None:
        return pa.Array.from_buffers(pa.large_string(), n, [pa.py_buffer(np.zeros((n + 7) // 8, dtype=np.uint8)),
                                                            pa.py_buffer(np.zeros(n + 1, dtype=np.int64)),
                                                            pa.py_buffer(b"")], null_count=n)
    offsets = np.arange(n + 1, dtype=np.int64) * len(name)
    return pa.Array.from_buffers(pa.large_string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(name * n)],
                                 null_count=0)


class Names(NamedTuple):
    """A list of names as `names_column` lays them out: each one's UTF-8 bytes (b"" for None), its
    length, whether it is not None, and the names as rows of a byte matrix as wide as the longest
    (`padded`; `used`: which of a row's bytes are its name's), and for `_scan.names` the names'
    bytes end to end (`blob`) and where each starts (`starts`, one more: the end)."""

    encoded: tuple[bytes, ...]
    widths: np.ndarray
    known: np.ndarray
    padded: np.ndarray
    used: np.ndarray
    starts: np.ndarray
    blob: bytes


@lru_cache(maxsize=256)
def name_bytes(names: tuple[str | None, ...]) -> Names:
    """`names` encoded once per list (a bucket's constants name a value per family code, 181 of
    them, and a chunk builds some 80 such columns)."""
    encoded = tuple((n or "").encode() for n in names)
    widths = np.array([len(b) for b in encoded], dtype=np.int64)
    wide = max(widths.tolist(), default=0)
    used = np.arange(wide) < widths[:, None]
    padded = np.zeros((len(encoded), wide), dtype=np.uint8)
    padded[used] = np.frombuffer(b"".join(encoded), dtype=np.uint8)
    known = np.array([n is not None for n in names], dtype=bool)
    starts = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum(widths, out=starts[1:])
    for array in (widths, known, padded, used, starts):  # shared by every call: read-only
        array.flags.writeable = False
    return Names(encoded, widths, known, padded, used, starts, b"".join(encoded))


def with_validity(kind: Any, n: int, buffers: list[Any], present: np.ndarray, children: Any = None) -> pa.Array:
    """An Arrow array of `buffers`, null where not `present`."""
    absent = int(n - present.sum())
    valid = pa.py_buffer(np.packbits(present, bitorder="little")) if absent else None
    return pa.Array.from_buffers(kind, n, [valid, *buffers], null_count=absent, children=children)


TYPE_CODES = {pl.Int64: 0, pl.Float64: 1, pl.Boolean: 2, pl.String: 3}  # csrc/arrow.h COL_*
ARROW_TYPES = {pl.Int64: pa.int64(), pl.Float64: pa.float64(), pl.Boolean: pa.bool_(), pl.String: pa.large_string()}
def span_column(spans: np.ndarray, columns: tuple[str, ...], name: str) -> np.ndarray:
    """(start, end) per row of a bucket column (-1, -1 for every row where the bucket has none)."""
    if name not in columns:
        return np.full((len(spans), 2), -1, dtype=np.int32)
    i = columns.index(name)
    return spans[:, 2 * i:2 * i + 2]


def typed_spans(data: Any, spans: list[np.ndarray], types: Sequence[Any]) -> list[pa.Array] | None:
    """Span columns typed in C (`_scan.typed`): an Arrow array per column (None: a value refused)."""
    return typed_matrix(data, spans[0] if len(spans) == 1 else np.hstack(spans), types)


def typed_matrix(data: Any, matrix: np.ndarray, types: Sequence[Any]) -> list[pa.Array] | None:
    """The columns of a (rows, 2 * columns) span matrix typed in C (`_scan.typed`): an Arrow array
    per column (None: a value refused)."""
    codes, kinds = _typing(tuple(types))
    n = len(matrix)
    got = _scan.typed(data, np.ascontiguousarray(matrix, dtype=np.int32), len(kinds), codes)
    return None if got is None else [from_scanner(kind, n, col) for kind, col in zip(kinds, got)]


def typed_taken(data: Any, spans: np.ndarray, take: Sequence[int] | np.ndarray,
                types: Sequence[Any]) -> list[pa.Array] | None:
    """Columns typed in C straight from a (rows, 2 * columns) span matrix, column k from its span
    column take[k] (-1: a column of nulls): no matrix of the taken columns is gathered first."""
    width = spans.shape[1] // 2
    if not width:  # nothing to read from: every column null, as a matrix of -1 types it
        return typed_matrix(data, np.full((len(spans), 2 * len(take)), -1, dtype=np.int32), types)
    codes, kinds = _typing(tuple(types))
    got = _scan.typed(data, np.ascontiguousarray(spans, dtype=np.int32), width, codes,
                      np.ascontiguousarray(take, dtype=np.int32))
    return None if got is None else [from_scanner(kind, len(spans), col) for kind, col in zip(kinds, got)]


@lru_cache(maxsize=256)
def field_take(columns: tuple[str, ...], names: tuple[str, ...]) -> np.ndarray:
    """Per name, its span column among a bucket's `columns` (-1: the bucket has no such field), for `typed_taken`."""
    take = np.array([columns.index(n) if n in columns else -1 for n in names], dtype=np.int32)
    take.flags.writeable = False
    return take


@lru_cache(maxsize=256)
def _typing(types: tuple[Any, ...]) -> tuple[bytes, tuple[pa.DataType, ...]]:
    """`_scan.typed`'s type codes of `types` and their Arrow types."""
    return bytes(TYPE_CODES[t] for t in types), tuple(ARROW_TYPES[t] for t in types)


def int_values(array: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """An int64 Arrow array's values (a copy, to change) and which are present."""
    return np.frombuffer(array.buffers()[1], dtype=np.int64, count=len(array)).copy(), present_rows(array)


def present_rows(array: pa.Array) -> np.ndarray:
    """Which rows of an Arrow array are not null (its validity bits; no pyarrow.compute)."""
    valid = array.buffers()[0]
    if valid is None or array.null_count == 0:
        return np.ones(len(array), dtype=bool)
    return np.unpackbits(np.frombuffer(valid, dtype=np.uint8), bitorder="little", count=len(array)).astype(bool)


def table_of(name: str, arrays: dict[str, pa.Array]) -> pa.Table:
    """The table `name` from its columns, in its schema's order and types."""
    schema, names = _table_schema(name)
    return pa.Table.from_arrays([arrays[c] for c in names], schema=schema)


@lru_cache(maxsize=None)
def _table_schema(name: str) -> tuple[pa.Schema, tuple[str, ...]]:
    """The Arrow schema of the table `name` and its column names, in order."""
    from replay.parsing.store import arrow_schema

    schema = arrow_schema(name)
    return schema, tuple(schema.names)
