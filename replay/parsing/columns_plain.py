"""The shared part of the tables the compiled scanner lays out: the chunk's per-record columns
(`Records`: time, cycle, job, file and line, by record number) and the tables with no assembly step,
one row per templated record (`plain_table`), which the event and count builders extend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.arrays import (ARROW_TYPES, TYPE_CODES, names_column, numeric, present_rows, repeated,
                                  table_of, typed_spans, typed_taken, with_validity)
from replay.parsing.scan import Bucket, RawRows
from replay.parsing.compiled import COMPILED
from replay.parsing.scanned import filled

if COMPILED:
    from replay.parsing import _scan


@dataclass(frozen=True)
class Records:
    """A chunk's per-record columns the compiled tables gather from (by record number), as numpy:
    read once per chunk, shared by every compiled table."""

    ts: np.ndarray  # epoch ms
    cycle: np.ndarray  # uint32, 0 for none
    job: np.ndarray  # the record's JID as an integer (0 where `job_ok` is false)
    job_ok: np.ndarray
    file: np.ndarray  # file index into `names`
    line: np.ndarray
    names: list[str]
    method: np.ndarray  # 1: a FIXED_SHARE counting method, 2: a RESERVE one, 0: any other (steps.counts)


def record_columns(records: pl.DataFrame, info: Callable[[], pl.DataFrame], names: list[str],
                   cycle: np.ndarray) -> Records | None:
    """The chunk's `Records` from `records`, their cycles (assemble.record_cycles, 0 for none) and,
    for records the scanner did not number, their `info` (assemble.record_info: the JID as an
    integer, the METHOD's class; built only then); None: a record has no time, which the compiled
    tables do not take."""
    if records["ts"].null_count():
        return None
    numbered = records if "_job" in records.columns else info()
    job, job_ok = filled(numbered["_job"], np.int64)
    return Records(filled(records["ts"], np.int64)[0], cycle, job, job_ok, records["file"].to_numpy(),
                   records["line"].to_numpy(), names, numbered["_mc"].to_numpy())


def where_columns(recs: Records, rec: np.ndarray) -> dict[str, pa.Array]:
    """ts, cycle, file and line of the records `rec` as Arrow arrays."""
    n = len(rec)
    # most parses read one file: its name on every row, no gather
    file = (repeated(recs.names[0].encode(), n) if len(recs.names) == 1
            else names_column(recs.file[rec], recs.names))
    if not COMPILED:
        cycles = recs.cycle[rec]
        return {"ts": numeric(pa.timestamp("ms"), recs.ts[rec]), "cycle": numeric(pa.uint32(), cycles, cycles != 0),
                "file": file, "line": numeric(pa.uint32(), recs.line[rec])}
    # gathered in one compiled pass: every compiled table of every chunk takes them, and three numpy
    # gathers, a comparison and a packbits a table were a fixed cost of each
    rec = rec if rec.dtype.itemsize in (4, 8) and rec.dtype.kind in "iu" else rec.astype(np.int64)
    ts, cycle, valid, nulls, line = _scan.where(np.ascontiguousarray(rec), rec.dtype.itemsize,
                                                np.ascontiguousarray(recs.ts, np.int64),
                                                np.ascontiguousarray(recs.cycle, np.uint32),
                                                np.ascontiguousarray(recs.line, np.uint32))
    return {
        "ts": pa.Array.from_buffers(pa.timestamp("ms"), n, [None, pa.py_buffer(ts)], null_count=0),
        "cycle": pa.Array.from_buffers(pa.uint32(), n, [None if valid is None else pa.py_buffer(valid),
                                                        pa.py_buffer(cycle)], null_count=nulls),
        "file": file,
        "line": pa.Array.from_buffers(pa.uint32(), n, [None, pa.py_buffer(line)], null_count=0),
    }


def list_column(raw: RawRows, name: str, ints: bool) -> pa.Array | None:
    """A large_list column from the scanner's list (counts, values): int64 values as they are, words
    typed in C; None when refused."""
    counts_raw, values_raw = raw.got[2][raw.bucket.lists.index(name)]
    counts = np.frombuffer(counts_raw, dtype=np.int32)
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.maximum(counts, 0), out=offsets[1:])
    if ints:
        child = pa.Array.from_buffers(pa.int64(), int(offsets[-1]), [None, pa.py_buffer(values_raw)])
    else:
        words = typed_spans(raw.data, [np.frombuffer(values_raw, dtype=np.int32).reshape(-1, 2)], [pl.String])
        if words is None:
            return None
        child = words[0]
    return with_validity(pa.large_list(child.type), len(counts), [pa.py_buffer(offsets)], counts >= 0, [child])


@lru_cache(maxsize=256)
def bucket_sources(bucket: Bucket) -> dict[str, str] | None:
    from replay.parsing.tables import RENAME

    fields = (*bucket.columns, *bucket.lists, *[key for key, _ in bucket.consts])
    out: dict[str, str] = {}
    for field in fields:
        target = RENAME[field] if field in RENAME and RENAME[field] not in fields else field
        if target in out:
            return None
        out[target] = field
    return out


@dataclass(frozen=True)
class Plain:
    """How `plain_table` lays out a table from a bucket's rows, worked out once per (table, bucket):
    the bucket column of the row's own job (-1: none), the columns typed from spans, their types
    and the bucket's span columns they read (`take`: one per column, -1 where the bucket has no such
    field), the columns that are a constant of the row's family (per family code), and the list
    columns (the bucket's list, None for a null column; whether it holds integers; its Arrow type)."""

    job: int
    spanned: tuple[str, ...]
    types: tuple[Any, ...]
    take: np.ndarray
    consts: tuple[tuple[str, tuple[str | None, ...]], ...]
    lists: tuple[tuple[str, str | None, bool, pa.DataType], ...]


@lru_cache(maxsize=256)
def plain_plan(name: str, bucket: Bucket) -> Plain | None:
    """The layout of table `name` from `bucket`'s rows; None: the reference way takes every chunk
    (two fields give one column, a type or constant the C code does not lay out)."""
    from replay.parsing.tables import SCHEMAS

    schema, sources, consts = SCHEMAS[name], bucket_sources(bucket), dict(bucket.consts)
    if sources is None:
        return None
    columns, lists = bucket.columns, bucket.lists
    scalars = [c for c in schema if c not in ("job_id", "ts", "cycle", "file", "line")
               and not isinstance(schema[c], pl.List)]
    spanned = [c for c in scalars if sources.get(c) in columns or c not in sources]
    constant = [c for c in scalars if c not in spanned]
    if any(schema[c] not in TYPE_CODES for c in spanned) or any(
            schema[c] != pl.String or sources[c] not in consts for c in constant):
        return None
    take = np.array([columns.index(sources[c]) if c in sources else -1 for c in spanned], dtype=np.int32)
    listed = []
    for c in schema:
        if isinstance(schema[c], pl.List):
            inner = schema[c].inner  # type: ignore[union-attr]
            field = sources.get(c)
            ints = field in lists and bucket.list_ints[lists.index(field)]
            if field in lists and ints != (inner == pl.Int64):
                return None
            listed.append((c, field if field in lists else None, ints, pa.large_list(ARROW_TYPES[inner])))
    job = columns.index(sources["job_id"]) if sources.get("job_id") in columns else -1
    return Plain(job, tuple(spanned), tuple(schema[c] for c in spanned), take,
                 tuple((c, consts[sources[c]]) for c in constant), tuple(listed))


def plain_table(name: str, raw: RawRows, recs: Records) -> pa.Table | None:
    """A table with no assembly step (one row per templated record, `jobs` without the rows that
    name no job), typed in C (`_scan.typed`); conform after rows_of is the reference."""
    columns = plain_columns(name, raw, recs)
    return None if columns is None else table_of(name, columns)


def plain_columns(name: str, raw: RawRows, recs: Records) -> dict[str, pa.Array] | None:
    """`plain_table`'s columns, by name (None: the reference way)."""
    plan = plain_plan(name, raw.bucket)
    if plan is None:
        return None
    rows, spans = raw.rows, raw.spans
    rec = raw.rec[rows]
    job, job_ok = recs.job[rec], recs.job_ok[rec]
    if plan.job >= 0:  # the row's own job, else its record's (rows_of's coalesce)
        own = typed_taken(raw.data, spans, (plan.job,), (pl.Int64,))
        if own is None:
            return None
        present = present_rows(own[0])
        job = np.where(present, np.frombuffer(own[0].buffers()[1], dtype=np.int64, count=len(rows)), job)
        job_ok = present | job_ok
    if name == "jobs" and not job_ok.all():
        if raw.bucket.lists:
            return None
        rows, spans, job, job_ok = rows[job_ok], spans[job_ok], job[job_ok], job_ok[job_ok]
        rec = raw.rec[rows]
    code, n = raw.codes[rows], len(rows)
    out = {"job_id": numeric(pa.int64(), job, job_ok), **where_columns(recs, rec)}
    if plan.spanned:
        typed = typed_taken(raw.data, spans, plan.take, plan.types)
        if typed is None:
            return None
        out.update(zip(plan.spanned, typed))
    for c, names in plan.consts:  # a constant of the row's family
        out[c] = names_column(code, names)
    for c, field, ints, kind in plan.lists:
        got = pa.nulls(n, kind) if field is None else list_column(raw, field, ints)
        if got is None:
            return None
        out[c] = got
    return out
