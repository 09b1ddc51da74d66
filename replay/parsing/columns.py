"""Tables whose columns the compiled scanner types and lays out itself (Arrow buffers it owns, handed
to pyarrow without a copy, filled with the GIL released), in place of the polars assembly step.

Each compiled table has a reference: the polars step (replay.parsing.steps) over the rows
`fill_rows` frames. A chunk the C code cannot take whole (rows from the regex or lark paths, rows
in two blocks, a value it will not read, a record without a time) goes the reference way, and
tests/integration/test_engines.py holds the two to identical tables.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.families import FAMILY_CODE
from replay.parsing.scan import COMPILED, RawRows

if COMPILED:
    from replay.parsing import _scan

# bucket -> the table built from it in C. Tests empty it to run the reference steps instead.
COMPILED_TABLES: dict[str, str] = {"_cap_lines": "job_caps"}

# _scan.caps's span fields, in its order (replay/parsing/csrc/caps.c)
_CAPS_SPANS = ("user", "order", "base_cap", "expected_cap", "potential_cap", "actual_cap", "prj_t", "prj_nth",
               "prj_ti", "prj_tr", "prj_r", "prj_qr", "prj_p", "prj_f", "prj_st", "prj_return", "init_wait",
               "time_per_item")
_CAPS_TYPES = {"user": pa.large_string(), "prj_tr": pa.float64(), "prj_r": pa.float64(), "init_wait": pa.bool_(),
               "time_per_item": pa.float64(), "prj_kind": pa.large_string(), "init_time_zero": pa.bool_()}
_CAPS_FAMILIES = ("init_job_cap", "prj_cap", "prj_cannot_predict", "prj_init_zero")


def _caps_families() -> tuple[int, int, int, int]:
    init, prj, cannot, zero = (FAMILY_CODE[f] for f in _CAPS_FAMILIES)
    return init, prj, cannot, zero


def compiled_buckets() -> frozenset[str]:
    """The buckets whose rows `fill_rows` leaves unframed for a compiled table."""
    return frozenset(COMPILED_TABLES) if COMPILED else frozenset()


def _array(kind: Any, n: int, got: tuple[Any, ...]) -> pa.Array:
    """An Arrow array over the scanner's buffers: (nulls, validity, values) or (nulls, validity,
    offsets, data)."""
    nulls, validity, *buffers = got
    valid = None if validity is None else pa.py_buffer(validity)
    return pa.Array.from_buffers(kind, n, [valid, *[pa.py_buffer(b) for b in buffers]], null_count=nulls)


def _numeric(kind: Any, values: np.ndarray, present: np.ndarray | None = None) -> pa.Array:
    """An Arrow array over a numpy array (`present`: which rows are not null)."""
    absent = 0 if present is None else int(len(present) - present.sum())
    valid = pa.py_buffer(np.packbits(present, bitorder="little")) if present is not None and absent else None
    return pa.Array.from_buffers(kind, len(values), [valid, pa.py_buffer(np.ascontiguousarray(values))],
                                 null_count=absent)


def _names(file: np.ndarray, names: list[str]) -> pa.Array:
    """A large_string column of file names from their indices (a chunk's rows mostly share one)."""
    encoded = [n.encode() for n in names]
    lengths = np.array([len(b) for b in encoded], dtype=np.int64)[file]
    offsets = np.zeros(len(file) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if len(file) and (file == file[0]).all():
        data = encoded[int(file[0])] * len(file)
    else:
        data = b"".join(encoded[i] for i in file.tolist())
    return pa.Array.from_buffers(pa.large_string(), len(file), [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def _where(records: pl.DataFrame, info: pl.DataFrame, names: list[str],
           rec: np.ndarray) -> dict[str, pa.Array] | None:
    """ts, cycle, file and line of the records `rec` as Arrow arrays (None: a record has no time)."""
    ts = records["ts"]
    if ts.null_count():
        return None
    cycle = info["cycle"][rec]
    return {
        "ts": _numeric(pa.timestamp("ms"), ts.to_physical().to_numpy()[rec]),
        "cycle": _numeric(pa.uint32(), cycle.fill_null(0).to_numpy(), cycle.is_not_null().to_numpy()),
        "file": _names(records["file"].to_numpy()[rec], names),
        "line": _numeric(pa.uint32(), records["line"].to_numpy()[rec]),
    }


def _job_caps(raw: RawRows, records: pl.DataFrame, info: pl.DataFrame, names: list[str]) -> pa.Table | None:
    """The job_caps table of one chunk, typed in C (`_scan.caps`; steps.caps is the reference)."""
    rows = raw.rows
    rec = raw.rec[rows]
    jid = records["jid"][rec].cast(pl.Int64, strict=False)
    job_ok = jid.is_not_null().to_numpy()
    cycle = info["cycle"][rec].fill_null(0).to_numpy()
    columns = raw.bucket.columns
    slots = np.array([columns.index(c) if c in columns else -1 for c in _CAPS_SPANS], dtype=np.int32)
    got = _scan.caps(raw.data, np.ascontiguousarray(raw.spans), len(columns),
                     np.ascontiguousarray(raw.codes[rows], np.int32), np.ascontiguousarray(cycle, np.uint32),
                     np.ascontiguousarray(jid.fill_null(0).to_numpy(), np.int64), job_ok.astype(np.uint8),
                     slots, _caps_families())
    if got is None:
        return None
    at = np.frombuffer(got[0], dtype=np.int32)
    where = _where(records, info, names, rec[at])
    if where is None:
        return None
    n = len(at)
    built = {name: _array(_CAPS_TYPES.get(name, pa.int64()), n, col)
             for name, col in zip((*_CAPS_SPANS, "prj_kind", "init_time_zero"), got[1:])}
    built["job_id"] = _numeric(pa.int64(), jid.fill_null(0).to_numpy()[at], job_ok[at])
    return _table("job_caps", {**built, **where})


def _table(name: str, arrays: dict[str, pa.Array]) -> pa.Table:
    """The table `name` from its columns, in its schema's order and types."""
    from replay.parsing.store import _arrow_schema

    schema = _arrow_schema(name)
    return pa.Table.from_arrays([arrays[f.name] for f in schema], schema=schema)


_BUILDERS: dict[str, Callable[[RawRows, pl.DataFrame, pl.DataFrame, list[str]], pa.Table | None]] = {
    "job_caps": _job_caps,
}


def compiled_table(bucket: str, raw: list[RawRows], records: pl.DataFrame, info: pl.DataFrame,
                   names: list[str]) -> pl.DataFrame | None:
    """The table built from `bucket` in C, as a polars frame; None when the C code does not take
    this chunk (the caller assembles it the reference way from `RawRows.frame`)."""
    if len(raw) != 1:  # rows in two blocks (a chunk across files): the reference way
        return None
    table = _BUILDERS[COMPILED_TABLES[bucket]](raw[0], records, info, names)
    if table is None:
        return None
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):  # a Table always gives one (the type allows a Series)
        raise TypeError(f"pl.from_arrow of a table gave a {type(frame).__name__}")
    return frame


def frames_of(raw: list[RawRows]) -> pl.DataFrame:
    """The rows of `raw` as `fill_rows` frames them (the reference path's input)."""
    frames = [f for f in (r.frame() for r in raw) if f is not None]
    return pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]
