"""The published schedule, its placements (and the share orders they carry to `stitch`), the
RmCounter table and the DEBUG occupancy table, typed in C (`_scan.typed`, `_scan.share_match`)
from the rows the compiled readers left unframed, in place of the polars steps (steps.schedule,
steps.placements, steps.rmcounter_assembled, steps.occupancy), which stay the reference: a chunk
the C code does not take whole goes that way, and tests/integration/test_engines.py holds the two
to identical tables.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.built import Built
from replay.parsing.chunks import Bytes
from replay.parsing.arrays import (field_take, from_scanner, names_column, numeric, present_rows, span_column, table_of,
                                  typed_spans, typed_taken, with_validity)
from replay.parsing.columns import Unframed
from replay.parsing.columns_plain import Records, where_columns
from replay.parsing.families import FAMILY_CODE
from replay.parsing.scan import RawRows, occupancy_frame, rmcounter_frame, schedule_frame
from replay.parsing.compiled import COMPILED
from replay.parsing.tables import series_from_arrow

if COMPILED:
    from replay.parsing import _scan

S, I64 = pl.String, pl.Int64
_KINDS = (None, "existing", "addition", "removal")  # steps.schedule's names of Existing, Additions, Removals
_PLACE_KINDS = ("new", "whole_machine", "recovered")
BUCKETS = ("_schedule_lines", "_placement_lines", "_rmcounter_rows", "_occupancy_lines")  # `build` owns them
_FAMILIES = {"_schedule_lines": "schedule_state", "_occupancy_lines": "occupancy_table"}


@dataclass(frozen=True)
class BlockRows:
    """A compiled reader's rows of one block, not yet a frame: `_scan.schedule`'s (bucket
    _schedule_lines), `_scan.occupancy`'s (_occupancy_lines) or `_scan.rmcounter`'s (_rmcounter_rows,
    `rec`: its records' numbers)."""

    bucket: str
    got: Any
    data: Bytes
    rec: pl.Series | None = None

    def frame(self) -> pl.DataFrame | None:
        """The rows as the reference path takes them (None: no row)."""
        if self.bucket == "_rmcounter_rows":
            assert self.rec is not None
            return rmcounter_frame(self.got, self.data, self.rec)
        if not self.got[0]:
            return None
        rows = (schedule_frame if self.bucket == "_schedule_lines" else occupancy_frame)(self.got, self.data)
        return rows.with_columns(pl.lit(_FAMILIES[self.bucket], S).alias("_family"))


def build(raw: Mapping[str, Sequence[Unframed]], recs: Records | None, framed: Collection[str]) -> Built:
    """The schedule, placements, rmcounter and occupancy tables of one chunk from `raw` (their
    buckets' unframed rows); `framed`: the buckets that have rows from the reference paths too."""
    out = Built()
    mine = {b: list(raw[b]) for b in BUCKETS if b in raw}
    sched_rows = mine.get("_schedule_lines")
    place_rows = mine.get("_placement_lines")
    for bucket, table, builder in (("_rmcounter_rows", "rmcounter", _rmcounter), ("_occupancy_lines", "occupancy",
                                                                                   _occupancy)):
        if bucket in mine:
            got = builder(mine[bucket], recs)
            if got is None:  # a frame per part: rows_of puts them in record order
                out.frames[bucket] = [f for f in (p.frame() for p in mine[bucket]) if f is not None]
            else:
                out.tables[table] = got
    # the schedule feeds the placements: both in C, or both the reference way
    pair = None if {"_schedule_lines", "_placement_lines"} & set(framed) else _schedule_pair(sched_rows, place_rows,
                                                                                              recs)
    if pair is None:
        for bucket, rows in (("_schedule_lines", sched_rows), ("_placement_lines", place_rows)):
            frames = [f for f in (r.frame() for r in rows or ()) if f is not None]
            if frames:  # as frames_of gives them
                out.frames[bucket] = [pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]]
        return out
    schedule, placements, out.share_orders = pair
    out.tables["schedule"] = schedule
    if placements is not None:
        out.tables["placements"] = placements
    return out


@dataclass(frozen=True)
class _Schedule:
    """The schedule rows placements read: additions' host and share spans, cycles and jobs."""

    data: Bytes
    spans: np.ndarray  # (n, 4) int32: host, share_id
    cycle: np.ndarray
    job: np.ndarray
    adds: np.ndarray  # uint8


def _schedule_pair(sched_rows: list[Unframed] | None, place_rows: list[Unframed] | None,
                   recs: Records | None) -> tuple[pa.Table, pa.Table | None, pl.DataFrame | None] | None:
    """(schedule, placements or None for no rows, share orders) built in C; None: the reference way."""
    if recs is None or (sched_rows is not None and len(sched_rows) != 1) or (
            place_rows is not None and len(place_rows) != 1):
        return None
    sched = sched_rows[0] if sched_rows else None
    place = place_rows[0] if place_rows else None
    if not isinstance(sched, BlockRows | None) or not isinstance(place, RawRows | None):
        return None
    got = _schedule(sched, recs)
    if got is None:
        return None
    table, adds = got
    if place is None:
        return table, None, None
    placed = _placements(place, recs, adds)
    return None if placed is None else (table, *placed)


_SCHED_SPANS = ("work_type", "job_id", "memory_gb", "reason", "host", "share_id", "init_ms")  # scan._SCHEDULE_SPANS
_SCHED_TYPES = (S, I64, I64, S, S, I64, I64)


def _schedule(rows: BlockRows | None, recs: Records) -> tuple[pa.Table, _Schedule] | None:
    """The schedule table (steps.schedule's rows: per record and job, its share rows, else its
    first row) and its additions; None: a value the C code does not read."""
    got = rows.got if rows is not None else (b"",) * 5
    rec = np.frombuffer(got[0], dtype=np.int32)
    kind = np.frombuffer(got[1], dtype=np.int32)
    purged = np.frombuffer(got[2], dtype=np.int32)
    spans = np.frombuffer(got[3], dtype=np.int32).reshape(-1, 2 * len(_SCHED_SPANS))
    data = rows.data if rows is not None else b""
    # per record and job its share rows, else its first row, grouped in one compiled pass
    kept = _scan.schedule_keep(data, np.ascontiguousarray(spans), np.ascontiguousarray(rec))
    if kept is None:
        return None
    keep, job = np.frombuffer(kept[0], dtype=np.int32), np.frombuffer(kept[1], dtype=np.int64, count=len(rec))
    at = spans[keep]
    others = [i for i, c in enumerate(_SCHED_SPANS) if c != "job_id"]  # the job is typed already
    typed = typed_taken(data, at, others, [_SCHED_TYPES[i] for i in others])
    if typed is None:
        return None
    k_rec, k_kind, k_purged, k_job = rec[keep], kind[keep], purged[keep], job[keep]
    host = at[:, 8] >= 0
    bits = pa.py_buffer(np.packbits(k_purged == 1, bitorder="little"))
    columns = {
        **dict(zip([_SCHED_SPANS[i] for i in others], typed)), **where_columns(recs, k_rec),
        "job_id": numeric(pa.int64(), k_job),
        "kind": names_column(np.where(host, k_kind + 1, 0), _KINDS),
        "purged": with_validity(pa.bool_(), len(keep), [bits], k_purged >= 0),
        "refused": pa.Array.from_buffers(pa.bool_(), len(keep),
                                         [None, pa.py_buffer(np.packbits(k_kind == -1, bitorder="little"))]),
    }
    adds = np.ascontiguousarray(host & (k_kind == 1), dtype=np.uint8)
    place = _Schedule(data, np.ascontiguousarray(at[:, 8:12]), np.ascontiguousarray(recs.cycle[k_rec], np.uint32),
                      k_job, adds)
    return table_of("schedule", columns), place


_PLACE_SPANS = ("host", "share_id", "order", "m_order", "m_active", "m_unused", "memory_mb")
_PLACE_TYPES = (S, I64, I64, I64, I64, I64, I64)


def _placements(raw: RawRows, recs: Records, sched: _Schedule) -> tuple[pa.Table, pl.DataFrame | None] | None:
    """The placements table (steps.placements: connectShare rows, each new when a "Connecting new
    share" line of its cycle names it, and given to the job the schedule adds it to) and the share
    orders they show; None: the reference way."""
    columns, lists = raw.bucket.columns, raw.bucket.lists
    if "job_id" in columns or set(lists) - {"m_jobs_list"} or raw.data is not sched.data and len(sched.job):
        return None  # fields no template gives, or the schedule in another block
    rows = raw.rows
    rec, code = raw.rec[rows], raw.codes[rows]
    role = (np.where(code == FAMILY_CODE["connect_share"], 1, 0)
            + np.where(code == FAMILY_CODE["connect_new_share"], 2, 0)).astype(np.uint8)
    keys = np.ascontiguousarray(np.hstack([span_column(raw.spans, columns, "host"),
                                           span_column(raw.spans, columns, "share_id")]), dtype=np.int32)
    if (role == 0).any() or (keys < 0).any():
        return None
    got_new, got_row, got_first = _scan.share_match(raw.data, sched.spans, sched.cycle, sched.adds, keys,
                                         np.ascontiguousarray(recs.cycle[rec], np.uint32), role)
    conn = np.flatnonzero(role == 1)
    n = len(conn)
    spans = raw.spans[conn]
    typed = typed_taken(raw.data, spans, field_take(columns, _PLACE_SPANS), _PLACE_TYPES)
    # the first placement of each share, as polars' unique keeping the first gives them: its order as written
    first = conn[np.frombuffer(got_first, dtype=np.uint8)[conn].astype(bool)]
    known = typed_taken(raw.data, raw.spans[first], field_take(columns, ("host", "share_id", "order")), (S, S, S))
    if typed is None or known is None:
        return None
    cols = dict(zip(_PLACE_SPANS, typed))
    is_new = np.frombuffer(got_new, dtype=np.uint8)[conn].astype(bool)
    row = np.frombuffer(got_row, dtype=np.int32)[conn]
    order, m_order = (np.frombuffer(cols[c].buffers()[1], dtype=np.int64, count=n) for c in ("order", "m_order"))
    whole = present_rows(cols["order"]) & present_rows(cols["m_order"]) & (order == m_order)
    job, job_ok = recs.job[rec[conn]], recs.job_ok[rec[conn]]
    found = row >= 0
    sched_job = np.where(found, sched.job[np.maximum(row, 0)] if len(sched.job) else 0, 0)
    moved = found & job_ok & (sched_job != job)
    reassigned = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(np.packbits(moved, bitorder="little"))])
    if (found & ~job_ok).any():  # the reference's comparison with no job: null
        reassigned = with_validity(pa.bool_(), n, [pa.py_buffer(np.packbits(moved, bitorder="little"))],
                                    ~(found & ~job_ok))
    m_jobs = _list_at(raw, "m_jobs_list", conn)
    table = table_of("placements", {
        **cols, **where_columns(recs, rec[conn]), "m_jobs": m_jobs, "reassigned": reassigned,
        "kind": names_column(np.where(is_new, 0, np.where(whole, 1, 2)), _PLACE_KINDS),
        "placed_for": numeric(pa.int64(), job, moved),
        "job_id": numeric(pa.int64(), np.where(moved, sched_job, job), job_ok),
    })
    if not n:
        return table, None
    return table, pl.DataFrame([series_from_arrow(a).alias(c) for c, a in zip(("host", "share_id", "_order"), known)])


def _list_at(raw: RawRows, name: str, at: np.ndarray) -> pa.Array:
    """The int64 list column `name` of the rows `at` (null where a row has none)."""
    if name not in raw.bucket.lists:
        return pa.nulls(len(at), pa.large_list(pa.int64()))
    counts_raw, values_raw = raw.got[2][raw.bucket.lists.index(name)]
    counts = np.frombuffer(counts_raw, dtype=np.int32)
    starts = np.concatenate(([0], np.cumsum(np.maximum(counts, 0))))[:-1]
    values = np.frombuffer(values_raw, dtype=np.int64)
    return _gathered_lists(values, starts[at], np.maximum(counts[at], 0), counts[at] >= 0)


def _gathered_lists(values: np.ndarray, starts: np.ndarray, lengths: np.ndarray, present: np.ndarray) -> pa.Array:
    """A large_list<int64> column whose row i is values[starts[i]:starts[i] + lengths[i]]."""
    offsets = np.zeros(len(starts) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    if not total:
        picked = values[:0]
    elif (starts[1:] == starts[:-1] + lengths[:-1]).all():  # rows that follow each other: one slice
        picked = values[starts[0]:starts[0] + total]
    elif (lengths == lengths[0]).all() and not (starts % lengths[0]).any():
        # lists of one length, each where a matrix of rows that long has a row (an RmCounter block's
        # machines on each of its rows): a gather of whole rows
        width = int(lengths[0])
        picked = np.take(values[:len(values) // width * width].reshape(-1, width), starts // width, axis=0).reshape(-1)
    else:  # value j of the column is value (j - its row's offset) of its row's list
        picked = values[np.repeat(starts - offsets[:-1], lengths) + np.arange(total)]
    child = pa.Array.from_buffers(pa.int64(), total, [None, pa.py_buffer(np.ascontiguousarray(picked, np.int64))])
    return with_validity(pa.large_list(pa.int64()), len(starts), [pa.py_buffer(offsets)], present, [child])


def _rmcounter(parts: list[Unframed], recs: Records | None) -> pa.Table | None:
    """The rmcounter table from `_scan.rmcounter`'s rows (steps.rmcounter_assembled: the Start line's
    time, cycle and place, and the block's number within its cycle); None: the reference way."""
    if recs is None or len(parts) != 1 or not isinstance(parts[0], BlockRows) or parts[0].rec is None:
        return None
    got, data = parts[0].got, parts[0].data

    def i32(key: str) -> np.ndarray:
        return np.frombuffer(got[key], dtype=np.int32)

    block_of = i32("row_block")
    rec = parts[0].rec.to_numpy()[i32("block_line")[block_of]]
    # a block's description is on each of its rows: read once a block, then laid out per row
    blocks = typed_spans(data, [i32("descr").reshape(-1, 2)], [S])
    entity = typed_spans(data, [i32("entity").reshape(-1, 2)], [S])
    if blocks is None or entity is None:
        return None
    typed = [_per_row(blocks[0], block_of), entity[0]]
    cycle = recs.cycle[rec]
    maxorder = np.frombuffer(got["maxorder"], dtype=np.int64)[block_of]
    return table_of("rmcounter", {
        **where_columns(recs, rec), "descr": typed[0], "entity": typed[1],
        "block": numeric(pa.int64(), _block(cycle, rec)),
        "weight": numeric(pa.int64(), np.frombuffer(got["weight"], dtype=np.int64), i32("weight_ok") != 0),
        "wanted": _lists_of(got, "wanted"), "given": _lists_of(got, "given"),
        "vmachines": _lists_of(got, "vmachines", block_of),
        "maxorder": numeric(pa.int64(), maxorder, i32("maxorder_ok")[block_of] != 0),
    })


def _per_row(names: pa.Array, at: np.ndarray) -> pa.Array:
    """The large_string column of `names[at]` (`_scan.names` over the names' own offsets and bytes)."""
    valid, offsets, blob = names.buffers()
    starts = np.frombuffer(offsets, dtype=np.int64, count=len(names) + 1)
    got = _scan.names(np.ascontiguousarray(at, dtype=np.int32), 4, starts, b"" if blob is None else blob,
                      present_rows(names).view(np.uint8))
    return from_scanner(pa.large_string(), len(at), got)


def _lists_of(got: dict[str, Any], key: str, at: np.ndarray | None = None) -> pa.Array:
    """The scanner's int64 lists `key` (values, end offsets, validity), rows `at` of them (None: all)."""
    ends = np.frombuffer(got[f"{key}_off"], dtype=np.int32).astype(np.int64)
    starts = np.concatenate(([0], ends[:-1])) if len(ends) else ends
    present = np.frombuffer(got[f"{key}_ok"], dtype=np.int32) != 0
    values = np.frombuffer(got[key], dtype=np.int64)
    if at is not None:
        return _gathered_lists(values, starts[at], (ends - starts)[at], present[at])
    child = pa.Array.from_buffers(pa.int64(), len(values), [None, pa.py_buffer(got[key])])  # in row order already
    offsets = np.concatenate(([0], ends)) if len(ends) else np.zeros(1, dtype=np.int64)
    return with_validity(pa.large_list(pa.int64()), len(ends), [pa.py_buffer(offsets)], present, [child])


def _block(cycle: np.ndarray, rec: np.ndarray) -> np.ndarray:
    """The dense rank of each row's record among its cycle's (a null cycle, 0, is one group)."""
    n = len(rec)
    if not n:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort((rec, cycle))
    c, r = cycle[order], rec[order]
    group = np.ones(n, dtype=bool)
    group[1:] = c[1:] != c[:-1]
    step = group.copy()
    step[1:] |= r[1:] != r[:-1]
    ranks = np.cumsum(step)
    start = np.maximum.accumulate(np.where(group, np.arange(n), 0))
    out = np.empty(n, dtype=np.int64)
    out[order] = ranks - ranks[start] + 1
    return out


_OCC_SPANS = ("host", "blacklisted", "order", "active", "unused", "memory_mb", "free")  # scan._OCCUPANCY_SPANS
_OCC_TYPES = (S, pl.Boolean, I64, I64, I64, I64, I64)


def _occupancy(parts: list[Unframed], recs: Records | None) -> pa.Table | None:
    """The occupancy table (steps.occupancy: the machine rows, each with the nodepool of the last
    "Query Machines" line before it) from `_scan.occupancy`'s rows; None: the reference way."""
    heads = [p for p in parts if isinstance(p, RawRows)]
    rows = [p for p in parts if isinstance(p, BlockRows)]
    if recs is None or len(rows) != 1 or len(heads) > 1 or len(heads) + len(rows) != len(parts):
        return None
    got, data = rows[0].got, rows[0].data
    keep = np.flatnonzero(np.frombuffer(got[1], dtype=np.int32).reshape(-1, 2 * len(_OCC_SPANS))[:, 0] >= 0)
    rec = np.frombuffer(got[0], dtype=np.int32)[keep]
    spans = np.frombuffer(got[1], dtype=np.int32).reshape(-1, 2 * len(_OCC_SPANS))[keep]
    pool = np.full((len(keep), 2), -1, dtype=np.int32)
    if heads:
        head = heads[0]
        if head.data is not data or "nodepool" not in head.bucket.columns:
            return None
        at = head.rows
        begin = head.codes[at] == FAMILY_CODE["occupancy_begin"]
        named = span_column(head.spans, head.bucket.columns, "nodepool")[begin]
        before = np.searchsorted(head.rec[at][begin], rec) - 1  # the last begin line before the row's record
        pool = np.where((before >= 0)[:, None], named[np.maximum(before, 0)] if len(named) else pool, pool)
    typed = typed_spans(data, [pool, *[spans[:, 2 * i:2 * i + 2] for i in range(len(_OCC_SPANS))]], [S, *_OCC_TYPES])
    counts = np.frombuffer(got[2], dtype=np.int32)
    items = np.frombuffer(got[3], dtype=np.int32).reshape(-1, 2)
    jobs = typed_spans(data, [items], [I64]) if len(items) else [pa.nulls(0, pa.int64())]
    if typed is None or jobs is None or jobs[0].null_count:
        return None
    starts = np.concatenate(([0], np.cumsum(np.maximum(counts, 0))))[:-1]
    values = np.frombuffer(jobs[0].buffers()[1], dtype=np.int64, count=len(items)) if len(items) else np.zeros(0)
    return table_of("occupancy", {
        "nodepool": typed[0], **dict(zip(_OCC_SPANS, typed[1:])), **where_columns(recs, rec),
        "jobs": _gathered_lists(values, starts[keep], np.maximum(counts[keep], 0), counts[keep] >= 0),
    })
