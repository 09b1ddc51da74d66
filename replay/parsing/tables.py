"""Table schemas (the contract other tools build on), and rows conformed to them.

Family rows arrive as strings keyed by grammar field names, tagged with `rec` (the record) and
`_family`. Assembly is shared by both engines: cast to the schema, attach each record's time,
cycle, file and line, and build the tables that span records (RmCounter blocks, the occupancy
table, the published schedule, cap chains, configuration).
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypeAlias

import polars as pl
from polars.datatypes import DataTypeClass

if TYPE_CHECKING:  # pyarrow loads where a parse runs: reading the tables (the TUI, a stored audit) does not need it
    import pyarrow as pa

# a chunk's table: a polars frame, or a pyarrow Table the compiled scanner built (replay.parsing.columns)
Frame: TypeAlias = "pl.DataFrame | pa.Table"
Dtype = pl.DataType | DataTypeClass  # a column's type, as polars takes it: pl.Int64 or pl.List(pl.Int64)
Schema = dict[str, Dtype]  # a table's columns and their types
I64, S, B, F = pl.Int64, pl.String, pl.Boolean, pl.Float64
LI, LS = pl.List(pl.Int64), pl.List(pl.String)
TS = pl.Datetime("ms")
WHERE = {"file": S, "line": pl.UInt32}
# A left join that keeps the left frame's row order: polars promises none unless asked, and the
# tables must come out the same, byte for byte, on every run.
LEFT: dict[str, Any] = {"how": "left", "maintain_order": "left"}

SCHEMAS: dict[str, Schema] = {
    "cycles": {"cycle": pl.UInt32, "epoch": I64, "ts_start": TS, "ts_end": TS, **WHERE,
               "total_arrivals": I64, "new_jobs": I64, "existing_jobs": I64, "started": pl.Boolean},
    "nodes": {"ts": TS, "cycle": pl.UInt32, "host": S, "event": S, "nodepool": S, "share_order": I64,
              "memory_mb": I64, "count": I64, "short_name": S, "ip": S, "status": S, "job_id": I64,
              "work_type": S, "detail": S, "down": S, **WHERE},
    "job_caps": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "user": S, "order": I64, "base_cap": I64,
                 "expected_cap": I64, "potential_cap": I64, "actual_cap": I64, "prj_kind": S, "prj_t": I64,
                 "prj_nth": I64, "prj_ti": I64, "prj_tr": F, "prj_r": F, "prj_qr": I64, "prj_p": I64, "prj_f": I64,
                 "prj_st": I64, "prj_return": I64, "init_wait": B, "time_per_item": F, "init_time_zero": B, **WHERE},
    "counts": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "class": S, "shares_given": I64, "order": I64,
               "policy": S, "kind": S, "nodepool": S, "type_code": S, "shares": I64, "qshares": I64, "nqm": S,
               "count": I64, "reason": S, **WHERE},
    "rmcounter": {"ts": TS, "cycle": pl.UInt32, "descr": S, "block": I64, "entity": S, "weight": I64,
                  "wanted": LI, "vmachines": LI, "maxorder": I64, "given": LI, **WHERE},
    "placements": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "host": S, "share_id": I64, "order": I64,
                   "kind": S, "placed_for": I64, "reassigned": B, "m_order": I64, "m_active": I64, "m_unused": I64,
                   "memory_mb": I64, "m_jobs": LI, **WHERE},
    "evictions": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "host": S, "share_id": I64, "order": I64,
                  "reason": S, "nodepool": S, "work_type": S, **WHERE},
    "eviction_counts": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "nodepool": S, "block": I64, "counted": I64,
                        "current": I64, "needed": I64, "order": I64, **WHERE},
    "defrag": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "kind": S, "nodepool": S, "class": S, "user": S,
               "host": S, "share_id": I64, "donor_job": I64, "pure_fs": I64, "nsh": I64, "counted": I64, "needed": I64,
               "order": I64, "count": I64, "shares": I64, "qshares": I64, "potentially_needy": B, "space_kind": S,
               "detail": S, "values": LI, "hosts": LS, "job_ids": LI, **WHERE},
    "schedule": {"cycle": pl.UInt32, "job_id": I64, "work_type": S, "memory_gb": I64, "reason": S, "kind": S,
                 "host": S, "share_id": I64, "init_ms": I64, "purged": B, "refused": B, "ts": TS, **WHERE},
    "jobs": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "source": S, "section": S, "type_code": S,
             "job_name": S, "user": S, "class": S, "shares": I64, "order": I64, "qshares": I64, "threads": I64,
             "memory_gb": I64, "nquest": I64, "remaining": I64, "init_wait": B, "max_processes": I64, **WHERE},
    "job_events": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "event": S, "tag": S, "state_from": S,
                   "state_to": S, "total": I64, "completed": I64, "errors": I64, "remaining": I64, "mean": F,
                   "skew": F, "max_processes": I64, "count": I64, "pid": S, "host": S, "share_id": I64,
                   "hosts": LS, "detail": S, **WHERE},
    "processes": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "event": S, "pid": S, "host": S, "share_id": I64,
                  "state_from": S, "state_to": S, "init_ms": I64, "run_ms": I64, "rss": I64, "uuid": S,
                  "count": I64, "free_shares": I64, "share_order": I64, **WHERE},
    "allotments": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "kind": S, "nqm": S, "wanted_nqm": S,
                   "qshares": I64, "memory_gb": I64, "allotment_qshares": I64, "allotment_gb": I64, "user": S,
                   "count": I64, **WHERE},
    "expansions": {"ts": TS, "cycle": pl.UInt32, "job_id": I64, "kind": S, "nodepool": S, "found": B,
                   "pools": LS, "hosts": LS, "counted": I64, "current": I64, "needed": I64, "order": I64, "count": I64,
                   "nqm": S, "assign": S, "because": S, "host": S, **WHERE},
    "occupancy": {"ts": TS, "cycle": pl.UInt32, "nodepool": S, "host": S, "blacklisted": B, "order": I64,
                  "active": I64, "unused": I64, "memory_mb": I64, "jobs": LI, "free": I64, **WHERE},
    "pool_tables": {"ts": TS, "cycle": pl.UInt32, "nodepool": S, "depth": I64, "table_row": S, "values": LI,
                    **WHERE},
    "config": {"key": S, "value": S, **WHERE},
    "classes": {"name": S, "policy": S, "priority": I64, "weight": I64, "nodepool": S, "init_cap": I64,
                "expand_by_doubling": B, "prediction": B, "prediction_fudge": I64, "enforce": B,
                "max_allotment": S, "cap": S, "debug": S, "authorized_users": S, **WHERE},
    "nodepools": {"name": S, "parent": S, "search_order": I64, "quantum": I64, "node_file": S, "node_rule": S,
                  "classes": LS, "subpools": LS, "nodes": LS, **WHERE},
    "messages": {"ts": TS, "cycle": pl.UInt32, "level": S, "component": S, "cls": S, "jid": S, "tid": pl.UInt32,
                 "method": S, "text": S, **WHERE},
    # cycle: the one the line is part of or precedes (null after the last schedule): the damage it does
    "unparsed": {"file": S, "line": pl.UInt32, "text": S, "reason": S, "cycle": pl.UInt32},
}

TRUE_WORDS = ["true", "found", "POTENTIALLY NEEDY"]
RENAME = {"values_list": "values", "hosts_list": "hosts", "pools_list": "pools", "names_list": "names",
          "m_jobs_list": "m_jobs", "job_id_list": "job_ids", "classes_list": "classes",
          "subpools_list": "subpools", "nodes_list": "nodes", "text": "detail"}
FIXED_METHODS = ["countFixedForJob", "countSingleFixedProcess", "howMuchFixed"]
RESERVE_METHODS = ["countReservationForJob", "countSingleReservation"]


def _convert(col: str, dtype: Dtype, have: Dtype) -> pl.Expr:
    c = pl.col(col)
    if dtype == B:
        return c if have == B else pl.when(c.is_null()).then(None).otherwise(c.cast(S).is_in(TRUE_WORDS))
    if isinstance(dtype, pl.List):
        if isinstance(have, pl.List):
            return c.list.eval(pl.element().cast(dtype.inner, strict=False))
        return c.cast(dtype, strict=False)
    return c.cast(dtype, strict=False)


def conform(df: pl.DataFrame, schema: Schema) -> pl.DataFrame:
    """The schema's columns, in order, cast from whatever the rows carried (absent -> null)."""
    have = tuple((c, t) for c, t in df.schema.items() if c in schema)
    return df.select(_conform_exprs(have, tuple(schema.items())))


@lru_cache(maxsize=1024)
def _conform_exprs(have: tuple[tuple[str, Dtype], ...],
                   schema: tuple[tuple[str, Dtype], ...]) -> list[pl.Expr]:
    # every chunk brings the same few input schemas per table: build their casts once
    known = dict(have)
    return [_convert(col, dtype, known[col]).alias(col) if col in known else pl.lit(None, dtype=dtype).alias(col)
            for col, dtype in schema]


class _ArrowArray:
    """An Arrow array seen only through the Arrow C data interface (`__arrow_c_array__`)."""

    __slots__ = ("array",)

    def __init__(self, array: pa.Array) -> None:
        self.array = array

    def __arrow_c_array__(self, requested_schema: object | None = None) -> tuple[object, object]:
        """The array's (schema, array) capsules."""
        capsules: tuple[object, object] = self.array.__arrow_c_array__(requested_schema)
        return capsules


def series_from_arrow(array: pa.Array | pa.ChunkedArray) -> pl.Series:
    """An Arrow array as a polars Series, its buffers shared. A plain array goes in through the
    Arrow C data interface: a sixth of pl.from_arrow's cost per call (its pyarrow checks), and a
    parse builds thousands of columns (docs/benchmarks.md)."""
    if not hasattr(array, "num_chunks"):  # a ChunkedArray has no single array to hand over
        return pl.Series("", _ArrowArray(array))
    series = pl.from_arrow(array)
    if not isinstance(series, pl.Series):  # an array always gives one
        raise TypeError(f"pl.from_arrow of an array gave a {type(series).__name__}")
    return series
