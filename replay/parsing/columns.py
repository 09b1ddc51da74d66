"""Tables whose columns the compiled scanner types and lays out itself (Arrow buffers it owns, handed
to pyarrow without a copy, filled with the GIL released), in place of the polars assembly step.

Each compiled table has a reference: the polars step (replay.parsing.steps) over the rows
`fill_rows` frames. A chunk the C code cannot take whole (rows from the regex or lark paths, rows
in two blocks, a value it will not read, a record without a time) goes the reference way, and
tests/integration/test_engines.py holds the two to identical tables.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import lru_cache, partial
from typing import Protocol

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.arrays import (field_take, from_scanner, int_values, names_column, numeric, span_column,
                                  table_of, typed_matrix, typed_taken)
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES
from replay.parsing.scan import Bucket
from replay.parsing.scan import RawRows
from replay.parsing.columns_events import eviction_counts, evictions
from replay.parsing.columns_plain import Records, bucket_sources, list_column, plain_columns, plain_table, where_columns
from replay.parsing.compiled import COMPILED

if COMPILED:
    from replay.parsing import _scan

# bucket -> the table built from it in C. Tests empty it to run the reference steps instead.
COMPILED_TABLES: dict[str, str] = {"_cap_lines": "job_caps", "_defrag_lines": "defrag", "jobs": "jobs",
                                   "processes": "processes", "nodes": "nodes", "job_events": "job_events",
                                   "counts": "counts", "evictions": "evictions",
                                   "_eviction_count_lines": "eviction_counts", "allotments": "allotments",
                                   "expansions": "expansions",  # and these four: replay.parsing.columns_schedule
                                   "_schedule_lines": "schedule", "_placement_lines": "placements",
                                   "_rmcounter_rows": "rmcounter", "_occupancy_lines": "occupancy",
                                   "messages": "messages", "_unexpected_lines": "unparsed",  # columns_text
                                   "pool_tables": "pool_tables", "_cycle_lines": "cycles",  # columns_small
                                   "_config_lines": "config", "_nodepool_lines": "nodepools"}  # columns_boot

# _scan.caps's span fields, in its order (replay/parsing/csrc/caps.c)
_CAPS_SPANS = ("user", "order", "base_cap", "expected_cap", "potential_cap", "actual_cap", "prj_t", "prj_nth",
               "prj_ti", "prj_tr", "prj_r", "prj_qr", "prj_p", "prj_f", "prj_st", "prj_return", "init_wait",
               "time_per_item")
_CAPS_TYPES = {"user": pa.large_string(), "prj_tr": pa.float64(), "prj_r": pa.float64(), "init_wait": pa.bool_(),
               "time_per_item": pa.float64(), "prj_kind": pa.large_string(), "init_time_zero": pa.bool_()}
_CAPS_FAMILIES = ("init_job_cap", "prj_cap", "prj_cannot_predict", "prj_init_zero")


@lru_cache(maxsize=16)
def _caps_slots(columns: tuple[str, ...]) -> np.ndarray:
    """Per _CAPS_SPANS field, its column in a bucket of `columns` (-1: none)."""
    return np.array([columns.index(c) if c in columns else -1 for c in _CAPS_SPANS], dtype=np.int32)


def _caps_families() -> tuple[int, int, int, int]:
    init, prj, cannot, zero = (FAMILY_CODE[f] for f in _CAPS_FAMILIES)
    return init, prj, cannot, zero


def compiled_buckets() -> frozenset[str]:
    """The buckets whose rows `fill_rows` leaves unframed for a compiled table."""
    return frozenset(COMPILED_TABLES) if COMPILED else frozenset()


def _job_caps(raw: RawRows, recs: Records) -> pa.Table | None:
    """The job_caps table of one chunk, typed in C (`_scan.caps`; steps.caps is the reference)."""
    rows = raw.rows
    rec = raw.rec[rows]
    job, job_ok = recs.job[rec], recs.job_ok[rec]
    columns = raw.bucket.columns
    got = _scan.caps(raw.data, np.ascontiguousarray(raw.spans), len(columns),
                     np.ascontiguousarray(raw.codes[rows], np.int32), np.ascontiguousarray(recs.cycle[rec], np.uint32),
                     np.ascontiguousarray(job, np.int64), job_ok.astype(np.uint8), _caps_slots(columns),
                     _caps_families())
    if got is None:
        return None
    at = np.frombuffer(got[0], dtype=np.int32)
    n = len(at)
    built = {name: from_scanner(_CAPS_TYPES.get(name, pa.int64()), n, col)
             for name, col in zip((*_CAPS_SPANS, "prj_kind", "init_time_zero"), got[1:])}
    built["job_id"] = numeric(pa.int64(), job[at], job_ok[at])
    return table_of("job_caps", {**built, **where_columns(recs, rec[at])})


_DEFRAG_SPANS = ("nodepool", "class", "user", "host", "share_id", "donor_job", "pure_fs", "nsh", "counted", "needed",
                 "order", "count", "shares", "qshares", "potentially_needy", "space_kind", "detail")
_DEFRAG_DETAIL = ("rich_from", "clear_kind", "needy_what", "detail")  # the first a row has (steps.defrag)
_DEFRAG_OWN = tuple(c for c in _DEFRAG_SPANS if c not in ("class", "detail"))  # typed from the bucket's spans


@lru_cache(maxsize=1)
def _defrag_kinds() -> tuple[str | None, ...]:
    from replay.parsing.steps import DEFRAG_KINDS

    return tuple(DEFRAG_KINDS.get(f) for f in FAMILY_NAMES)


@lru_cache(maxsize=1)
def _defrag_roles() -> np.ndarray:
    """Per family code (and -1, no family: the last), its role in `_scan.defrag_class`: 1 a header, 2 a row, 0 other."""
    roles = np.zeros(len(FAMILY_NAMES) + 1, dtype=np.uint8)
    roles[FAMILY_CODE["frag_header"]], roles[FAMILY_CODE["frag_row"]] = 1, 2
    roles.flags.writeable = False
    return roles


def _defrag(raw: RawRows, recs: Records) -> pa.Table | None:
    """The defrag table of one chunk, typed in C (`_scan.typed`, `_scan.defrag_class`; steps.defrag
    is the reference)."""
    from replay.parsing.tables import SCHEMAS

    columns, spans, lists = raw.bucket.columns, raw.spans, raw.bucket.lists
    if "job_id" in columns or set(lists) - {"values_list", "hosts_list", "job_id_list"}:
        return None  # fields none of today's templates gives: the reference way
    rows = raw.rows
    rec, code = raw.rec[rows], raw.codes[rows]
    job, job_ok = recs.job[rec], recs.job_ok[rec]
    own = np.ascontiguousarray(span_column(spans, columns, "class"))
    klass = np.frombuffer(_scan.defrag_class(own, _defrag_roles()[code], np.ascontiguousarray(recs.cycle[rec]),
                                             np.ascontiguousarray(job), job_ok.view(np.uint8)),
                          dtype=np.int32).reshape(-1, 2)
    # the first of the detail fields the row has, picked in one compiled pass
    first = np.array([columns.index(f) for f in _DEFRAG_DETAIL if f in columns], dtype=np.int32)
    detail = (np.frombuffer(_scan.first_spans(np.ascontiguousarray(spans, np.int32), len(columns), first),
                            dtype=np.int32).reshape(-1, 2) if first.size else np.full((len(rows), 2), -1, np.int32))
    schema = SCHEMAS["defrag"]
    # the bucket's own fields typed from its spans in place; the two worked out here from their own matrix
    own_fields = typed_taken(raw.data, spans, field_take(columns, _DEFRAG_OWN), [schema[c] for c in _DEFRAG_OWN])
    worked = typed_matrix(raw.data, np.hstack([klass, detail]), [schema["class"], schema["detail"]])
    typed = None if own_fields is None or worked is None else {**dict(zip(_DEFRAG_OWN, own_fields)),
                                                               "class": worked[0], "detail": worked[1]}
    n = len(rows)
    values = (list_column(raw, "values_list", True) if "values_list" in lists
              else pa.nulls(n, pa.large_list(pa.int64())))
    hosts = (list_column(raw, "hosts_list", False) if "hosts_list" in lists
             else pa.nulls(n, pa.large_list(pa.large_string())))
    job_ids = (list_column(raw, "job_id_list", True) if "job_id_list" in lists
               else pa.nulls(n, pa.large_list(pa.int64())))
    if typed is None or values is None or hosts is None or job_ids is None:
        return None
    return table_of("defrag", {
        **typed, **where_columns(recs, rec), "kind": names_column(code, _defrag_kinds()),
        "job_id": numeric(pa.int64(), job, job_ok), "values": values, "hosts": hosts,
        "job_ids": job_ids,
    })


def _counts(raw: RawRows, recs: Records) -> pa.Table | None:
    """The counts table of one chunk: its rows typed in C (`plain_table`), then steps.counts's policy
    (the family's, else by the record's method) and shares given (the row's, else by its kind)."""
    plan = _counts_plan(raw.bucket)
    columns = None if plan is None else plain_columns("counts", raw, recs)
    if plan is None or columns is None:
        return None
    labels, family_policy, family_kind = plan
    rows = raw.rows
    code = raw.codes[rows]
    policy = np.where(family_policy[code] >= 0, family_policy[code], recs.method[raw.rec[rows]].astype(np.int64))
    kind = family_kind[code]
    given, given_ok = int_values(columns["shares_given"])
    shares, shares_ok = int_values(columns["shares"])
    granted = (kind == _GRANTED) & ~given_ok
    for r in np.flatnonzero(granted).tolist():  # a few a cycle: "<n>Q<m>" gives n, no nqm 1
        got = _nqm_count(raw, r)
        if got is None:
            return None
        given[r] = got
    stable = (kind == _STABLE) & ~given_ok & shares_ok
    given = np.where(stable, shares, given)
    deferred = (kind == _DEFERRED) & ~given_ok & ~granted & ~stable
    given = np.where(deferred, 0, given)
    columns["policy"] = names_column(policy, labels)
    columns["shares_given"] = numeric(pa.int64(), given, given_ok | granted | stable | deferred)
    return table_of("counts", columns)


# steps.counts's kinds that give shares (deferred: also deferring, out_of_shares)
_GRANTED, _STABLE, _DEFERRED = 1, 2, 3
_KIND_CLASS = {"granted": _GRANTED, "stable": _STABLE, "deferred": _DEFERRED, "deferring": _DEFERRED,
               "out_of_shares": _DEFERRED}


@lru_cache(maxsize=64)
def _counts_plan(bucket: Bucket) -> tuple[tuple[str | None, ...], np.ndarray, np.ndarray] | None:
    """The policy labels of a counts bucket (none, the methods' two, its families' own), per family
    code the label of its family's policy (-1: by the record's method) and the class of its kind
    (_KIND_CLASS, 0 for any other); None: a field the reference step reads (detail, reason)."""
    sources = bucket_sources(bucket)
    if sources is None or {"detail", "reason"} & set(sources):
        return None
    consts, none = dict(bucket.consts), (None,) * len(FAMILY_NAMES)
    family_policy = consts.get("policy", none)
    labels = (None, "FIXED_SHARE", "RESERVE", *sorted({p for p in family_policy if p}))
    policy = np.array([-1 if p is None else labels.index(p) for p in family_policy], dtype=np.int64)
    kind = np.array([_KIND_CLASS.get(k or "", 0) for k in consts.get("kind", none)], dtype=np.int8)
    return labels, policy, kind


def _nqm_count(raw: RawRows, r: int) -> int | None:
    """The leading number of row r's nqm field ("<n>Q<m>"), 1 without one; None: too long to read."""
    span = span_column(raw.spans, raw.bucket.columns, "nqm")[r]
    if span[0] < 0:
        return 1
    text = bytes(raw.data[span[0]:span[1]])
    digits = text.split(b"Q", 1)[0]
    if b"Q" not in text or not digits.isdigit():  # steps.counts: ^(\d+)Q
        return 1
    return int(digits) if len(digits) <= 18 else None


_BUILDERS: dict[str, Callable[[RawRows, Records], pa.Table | None]] = {
    "job_caps": _job_caps, "defrag": _defrag,
    **{name: partial(plain_table, name) for name in ("jobs", "processes", "nodes", "job_events")}, "counts": _counts,
    **{name: partial(plain_table, name) for name in ("allotments", "expansions")},
    "evictions": evictions, "eviction_counts": eviction_counts,
}


def compiled_table(bucket: str, raw: list[RawRows], recs: Records | None) -> pa.Table | None:
    """The table built from `bucket` in C, as a pyarrow Table in its schema's Arrow types (the
    writer takes it as it is); None when the C code does not take this chunk (the caller
    assembles it the reference way from `RawRows.frame`)."""
    if recs is None or len(raw) != 1:  # a record without time, rows in two blocks: the reference way
        return None
    return _BUILDERS[COMPILED_TABLES[bucket]](raw[0], recs)


class Unframed(Protocol):
    """Rows a compiled reader left unframed (RawRows, columns_schedule.BlockRows)."""

    def frame(self) -> pl.DataFrame | None: ...  # the rows as the reference path takes them (None: none)


def frames_of(raw: Sequence[Unframed]) -> pl.DataFrame:
    """The rows of `raw` as `fill_rows` frames them (the reference path's input)."""
    frames = [f for f in (r.frame() for r in raw) if f is not None]
    return pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]


def shifted(table: pa.Table, offset: int) -> pa.Table:
    """`table` with its cycle numbers moved `offset` on (stitch, for a table built in C)."""
    i = table.schema.get_field_index("cycle")
    (cycle,) = table.column(i).chunks  # built here: one array, not a slice
    valid, values = cycle.buffers()
    moved = np.frombuffer(values, dtype=np.uint32, count=len(cycle)) + np.uint32(offset)
    return table.set_column(i, "cycle", pa.Array.from_buffers(pa.uint32(), len(cycle), [valid, pa.py_buffer(moved)],
                                                             null_count=cycle.null_count))


def to_polars(table: pa.Table) -> pl.DataFrame:
    """A table built in C as a polars frame (its strings copied into polars' own layout)."""
    frame = pl.from_arrow(table)
    if not isinstance(frame, pl.DataFrame):  # a Table always gives one (the type allows a Series)
        raise TypeError(f"pl.from_arrow of a table gave a {type(frame).__name__}")
    return frame
