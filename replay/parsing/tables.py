"""Table schemas (the contract other tools build on) and their assembly from family rows.

Family rows arrive as strings keyed by grammar field names, tagged with `rec` (the record) and
`_family`. Assembly is shared by both engines: cast to the schema, attach each record's time,
cycle, file and line, and build the tables that span records (RmCounter blocks, the occupancy
table, the published schedule, cap chains, configuration).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import polars as pl
from polars.datatypes import DataTypeClass

if TYPE_CHECKING:  # pyarrow loads where a parse runs: reading the tables (the TUI, a stored audit) does not need it
    import pyarrow as pa

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
              "work_type": S, "detail": S, **WHERE},
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


# Fields the assembly steps read; a log that lacks a family still yields these columns (null).
_SCALARS = ("user class host share_id kind memory_gb nodepool detail order m_order m_host m_blacklisted m_active "
            "m_unused memory_mb free shares shares_given nqm policy epoch count new_jobs existing_jobs maxorder "
            "entity descr quantum search_order prop_key value rich_from clear_kind needy_what").split()
_LISTS = "values names m_jobs classes subpools nodes hosts".split()
_ABSENT = {**{c: pl.lit(None, S).alias(c) for c in _SCALARS}, **{c: pl.lit(None, LS).alias(c) for c in _LISTS}}
# Per bucket, the fields its assembly step reads (the plain tables read none: `conform` fills them).
# Only these are added when absent: a null column costs as much as a full one.
READS: dict[str, tuple[str, ...]] = {
    "counts": ("nqm", "shares", "shares_given", "policy", "kind", "detail"),
    "evictions": ("host", "share_id", "order"),
    "_schedule_lines": ("kind", "memory_gb", "host", "share_id"),
    "_placement_lines": ("host", "share_id", "order", "m_order"),
    "_rmcounter_lines": ("descr", "maxorder", "names", "values", "entity"),
    "_eviction_count_lines": ("nodepool",),
    "_defrag_lines": ("class", "rich_from", "clear_kind", "needy_what", "detail"),
    "_occupancy_lines": ("nodepool", "m_host", "m_blacklisted", "m_order", "m_active", "m_unused", "memory_mb",
                         "m_jobs", "free"),
}
# The record columns every table's rows take (and `jid` for job_id); some tables take more.
WHERE_COLUMNS = ("ts", "cycle", "file", "line", "jid")
MORE_WHERE = {"counts": ("method",), "messages": ("level", "component", "cls", "tid", "method")}


def _rows(buckets: dict[str, list[pl.DataFrame]], name: str, info: pl.DataFrame) -> pl.DataFrame:
    """All family rows of one bucket, in log order, with their record's ts, cycle, file, line (and
    MORE_WHERE's columns), job_id (the record's JID where the row names no job), and the fields
    its assembly step reads (READS; null where no row carried them)."""
    where = (*WHERE_COLUMNS, *MORE_WHERE.get(name, ()))
    reads = READS.get(name, ())
    # most chunks lack a few families (the bootstrap, DEBUG tables): theirs is an empty frame
    parts = buckets.get(name) or [pl.DataFrame(schema={"rec": pl.UInt32, "_family": S})]
    parts = [p if p.schema["rec"] == pl.UInt32 else p.with_columns(pl.col("rec").cast(pl.UInt32)) for p in parts]
    # one part (the common case: the scanner's) is in record order already
    df = pl.concat(parts, how="diagonal_relaxed").sort("rec", maintain_order=True) if len(parts) > 1 else parts[0]
    cols = {RENAME[c] if c in RENAME and RENAME[c] not in df.columns else c: pl.col(c) for c in df.columns}
    # a record's number is its row in `info`: its columns are gathered, not joined
    cols.update({c: pl.lit(info[c]).gather(pl.col("rec")) for c in where})
    jid = cols["jid"].cast(I64, strict=False)
    cols["job_id"] = pl.coalesce(cols["job_id"].cast(I64, strict=False), jid) if "job_id" in cols else jid
    return df.select(*[e.alias(c) for c, e in cols.items()], *[_ABSENT[c] for c in reads if c not in cols])


def _filled(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with every column an assembly step reads (absent -> null)."""
    return df.with_columns([expr for c, expr in _ABSENT.items() if c not in df.columns])


# the rows of a bucket no chunk filled: the columns _rows gives every bucket, and nothing more
_NO_ROWS = pl.DataFrame(schema={"rec": pl.UInt32, "_family": S, "ts": TS, "cycle": pl.UInt32, "file": S,
                                "line": pl.UInt32, "jid": S, "job_id": I64})


@dataclass
class Carry:
    """What the chunks hand on, in log order: cycles so far, known share orders, and the rows of the
    small tables that span the whole log (assembled once, at the end)."""

    cycles: int = 0
    share_orders: pl.DataFrame | None = None
    spanning: dict[str, list[pl.DataFrame]] = field(default_factory=lambda: {b: [] for b in SPANNING})


@dataclass(frozen=True)
class ChunkCarry:
    """What one chunk, assembled on its own (its cycles counted from 1), leaves for `stitch`: its
    published schedules, the share orders its placements show, its evictions whose order only an
    earlier chunk may know (`unordered`: row, host, share_id), and its rows of the spanning tables."""

    cycles: int
    share_orders: pl.DataFrame | None
    unordered: pl.DataFrame | None
    spanning: dict[str, pl.DataFrame]


# Buckets whose tables need the whole log: loop returns close cycles in the next chunk, and the
# configuration may be printed again by a reconfigure.
SPANNING: tuple[str, ...] = ("_cycle_lines", "_config_lines", "_nodepool_lines")


def compact(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with its text copied out of the chunk it points into, so rows kept across chunks do not
    keep every chunk's bytes alive (polars string views share their source buffers)."""
    import pyarrow as pa

    table = df.to_arrow()
    frame = pl.from_arrow(table.cast(pa.schema([f.with_type(_plain(f.type)) for f in table.schema])))
    if not isinstance(frame, pl.DataFrame):  # an Arrow table always gives one (the type allows a Series)
        raise TypeError(f"pl.from_arrow of a table gave a {type(frame).__name__}")
    return frame


def series_from_arrow(array: pa.Array | pa.ChunkedArray) -> pl.Series:
    """An Arrow array as a polars Series, its buffers shared (pl.from_arrow, whose type also allows a frame)."""
    series = pl.from_arrow(array)
    if not isinstance(series, pl.Series):  # an array always gives one
        raise TypeError(f"pl.from_arrow of an array gave a {type(series).__name__}")
    return series


def _plain(t: pa.DataType) -> pa.DataType:
    import pyarrow as pa

    if pa.types.is_string_view(t) or pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.large_list(_plain(t.value_type))
    return t


def file_names(names: list[str]) -> pl.DataFrame:
    """file index -> file name (`fname`), to label rows with the file they came from."""
    return pl.DataFrame({"file": range(len(names)), "fname": names}, schema={"file": pl.UInt16, "fname": S})


def record_info(records: pl.DataFrame, names: list[str], last: bool) -> pl.DataFrame:
    """Per record (row `rec`): ts, cycle, file name, line and the header fields (cycle: that of the
    next published schedule at or after it, counted from 1 in the chunk)."""
    sent = (pl.col("family") == "schedule_sent").cast(pl.Int64)
    before = sent.cum_sum() - sent
    total = records.filter(pl.col("family") == "schedule_sent").height
    cyc = pl.when(pl.col("family") == "schedule_state").then(before).otherwise(before + 1)
    # a chunk ends after a published schedule, so only the log's last chunk has records after its
    # last one (no cycle); a chunk cut elsewhere (no schedule for a long stretch) continues into the next
    valid = (cyc >= 1) & ((cyc <= total) | (not last))
    fname = pl.lit(pl.Series(names, dtype=S)).gather(pl.col("file"))
    return records.select(
        "rec", "ts", pl.when(valid).then(cyc).otherwise(None).cast(pl.UInt32).alias("cycle"),
        fname.alias("file"), "line", "jid", "method", "level", "component", "cls", "tid",
    )


def assemble_chunk(buckets: dict[str, list[pl.DataFrame]], records: pl.DataFrame, names: list[str],
                   unparsed: pl.DataFrame, last: bool) -> tuple[dict[str, pl.DataFrame], ChunkCarry]:
    """The per-cycle tables of one chunk (conformed to SCHEMAS), on their own: cycles count from 1
    and evictions take share orders from this chunk only; `stitch` puts them in the log's frame.
    Chunks are independent here, so they can be assembled in parallel."""
    info = record_info(records, names, last)
    get: Callable[[str], pl.DataFrame] = lambda name: _rows(buckets, name, info)  # noqa: E731

    def table(name: str, bucket: str, step: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> pl.DataFrame:
        # a bucket no record of the chunk filled gives an empty table without a step (most
        # chunks lack several: the bootstrap, allotments, the DEBUG tables)
        if bucket not in buckets:
            return _empty_table(name)
        rows = get(bucket)
        return conform(step(rows) if step else rows, SCHEMAS[name])

    # only the columns its rows carry (the fill comes once, at the end)
    spanning = {name: compact(get(name)) for name in SPANNING if name in buckets}
    schedule = _schedule(get("_schedule_lines"))
    placements = _placements(get("_placement_lines"), schedule) if "_placement_lines" in buckets else None
    share_orders = None
    if placements is not None and placements.height:
        known = compact(placements.select("host", pl.col("share_id").cast(S), pl.col("order").cast(S).alias("_order")))
        share_orders = known.unique(["host", "share_id"], keep="first", maintain_order=True)
    evictions, unordered = _empty_table("evictions"), None
    if "evictions" in buckets:
        rows = get("evictions")
        # an eviction line without the share's order takes it from where the share was placed,
        # in this chunk or an earlier one (stitch)
        unordered = compact(rows.with_row_index("_row").filter(pl.col("order").is_null()).select(
            "_row", "host", "share_id"))
        evictions = conform(rows, SCHEMAS["evictions"])
    tables = {
        "nodes": table("nodes", "nodes"),
        "job_caps": table("job_caps", "_cap_lines", _caps),
        "counts": table("counts", "counts", _counts),
        "rmcounter": (conform(_rmcounter_assembled(buckets["_rmcounter_rows"][0], info), SCHEMAS["rmcounter"])
                      if "_rmcounter_rows" in buckets else table("rmcounter", "_rmcounter_lines", _rmcounter)),
        "placements": _empty_table("placements") if placements is None else conform(placements, SCHEMAS["placements"]),
        "evictions": evictions,
        "eviction_counts": table("eviction_counts", "_eviction_count_lines", _eviction_counts),
        "defrag": table("defrag", "_defrag_lines", _defrag),
        "schedule": conform(schedule, SCHEMAS["schedule"]),
        "jobs": table("jobs", "jobs", lambda rows: rows.filter(pl.col("job_id").is_not_null())),
        "job_events": table("job_events", "job_events"),
        "processes": table("processes", "processes"),
        "allotments": table("allotments", "allotments"),
        "expansions": table("expansions", "expansions"),
        "occupancy": table("occupancy", "_occupancy_lines", _occupancy),
        "pool_tables": table("pool_tables", "pool_tables"),
        "messages": table("messages", "messages", lambda rows: rows.rename({"detail": "text"}, strict=False)),
        "unparsed": conform(unparsed, SCHEMAS["unparsed"]),
    }
    cycles = records.filter(pl.col("family") == "schedule_sent").height
    return tables, ChunkCarry(cycles, share_orders, unordered, spanning)


def stitch(tables: Mapping[str, pl.DataFrame], part: ChunkCarry, carry: Carry) -> dict[str, pl.DataFrame]:
    """One chunk's tables (from `assemble_chunk`) in the log's frame, chunks taken in log order:
    cycles numbered after the earlier chunks', evictions given the order of a share placed in an
    earlier chunk (the first placement of a share wins, as it does within a chunk)."""
    offset = carry.cycles
    carry.cycles += part.cycles
    for name, rows in part.spanning.items():
        carry.spanning[name].append(_shift(rows, offset))
    if part.share_orders is not None:
        both = part.share_orders if carry.share_orders is None else pl.concat([carry.share_orders, part.share_orders])
        carry.share_orders = both.unique(["host", "share_id"], keep="first", maintain_order=True)
    out = {name: _shift(df, offset) for name, df in tables.items()}
    if part.unordered is not None and part.unordered.height and carry.share_orders is not None:
        found = part.unordered.join(carry.share_orders, on=["host", "share_id"], **LEFT).select("_row", "_order")
        out["evictions"] = out["evictions"].with_row_index("_row").join(found, on="_row", **LEFT).select(
            *[pl.coalesce("order", pl.col("_order").cast(I64, strict=False)).alias(c) if c == "order" else pl.col(c)
              for c in SCHEMAS["evictions"]])
    return out


def _shift(df: pl.DataFrame, offset: int) -> pl.DataFrame:
    """`df` with its chunk-relative cycle numbers moved `offset` cycles on."""
    if not offset or "cycle" not in df.columns:
        return df
    return df.with_columns(pl.col("cycle") + pl.lit(offset, pl.UInt32))


@lru_cache(maxsize=None)
def _empty_table(name: str) -> pl.DataFrame:
    """The table with no rows (shared: nothing mutates a chunk's tables)."""
    return pl.DataFrame(schema=SCHEMAS[name])


def assemble_final(carry: Carry) -> dict[str, pl.DataFrame]:
    """The tables that span the whole log: cycles, config, classes, nodepools."""
    rows = {name: _filled(pl.concat(parts, how="diagonal_relaxed") if parts else _NO_ROWS)
            for name, parts in carry.spanning.items()}
    config = rows["_config_lines"]
    tables = {
        "cycles": _cycles(rows["_cycle_lines"]),
        "config": _config(config),
        "classes": _classes(config),
        "nodepools": _nodepools(rows["_nodepool_lines"]),
    }
    return {name: conform(df, SCHEMAS[name]) for name, df in tables.items()}


def _fam(name: str) -> pl.Expr:
    return pl.col("_family") == name


def _cycles(lines: pl.DataFrame) -> pl.DataFrame:
    sent = lines.filter(_fam("schedule_sent")).select("cycle", "ts", "file", "line")
    enter = lines.filter(_fam("loop_enter") & pl.col("cycle").is_not_null()).group_by("cycle").agg(
        pl.col("epoch").last(), pl.col("ts").last().alias("ts_start"), pl.col("file").last().alias("efile"),
        pl.col("line").last().alias("eline"),
    )
    # a loop-return line closes the cycle before the one it is counted in (the last one: none);
    # epochs restart with every RM incarnation, so match on both
    closes = pl.when(pl.col("cycle").is_null()).then(sent["cycle"].max()).otherwise(pl.col("cycle") - 1)
    returns = lines.filter(_fam("loop_return")).select(
        closes.cast(pl.UInt32).alias("cycle"), "epoch", pl.col("ts").alias("ts_end"))
    ret = returns.unique(["cycle", "epoch"], keep="first")
    # a log that starts inside a cycle lacks its loop-entry line: the first return after the
    # schedule names the same epoch, so the cycle keeps the number the whole log gives it
    first_return = returns.unique("cycle", keep="first").select("cycle", pl.col("epoch").alias("_epoch"))
    last: Callable[[str, str, str], pl.DataFrame]
    last = lambda fam, col, alias: lines.filter(_fam(fam) & pl.col("cycle").is_not_null()).group_by("cycle").agg(  # noqa: E731
        pl.col(col).last().alias(alias))
    out = (sent.join(enter, on="cycle", **LEFT).join(first_return, on="cycle", **LEFT)
           .with_columns(pl.coalesce("epoch", "_epoch").alias("epoch")).drop("_epoch")
           .join(ret, on=["cycle", "epoch"], **LEFT))
    for fam, col, alias in (("total_arrivals", "count", "total_arrivals"), ("schedule_summary", "new_jobs", "new_jobs"),
                            ("schedule_summary", "existing_jobs", "existing_jobs")):
        out = out.join(last(fam, col, alias), on="cycle", **LEFT)
    # whether the cycle's loop-entry line is in the log (a log cut inside a cycle lacks it)
    return out.with_columns(
        pl.col("eline").is_not_null().alias("started"),
        pl.coalesce("ts_start", "ts").alias("ts_start"),
        pl.coalesce("efile", "file").alias("file"), pl.coalesce("eline", "line").alias("line"),
    ).sort("cycle")


def _caps(lines: pl.DataFrame) -> pl.DataFrame:
    """initJobCap rows, each with the getPrjCap line its job logged last before it in the cycle,
    and whether the job logged "Initialization time is 0" in the cycle."""
    prj = _fam("prj_cap") | _fam("prj_cannot_predict")
    prj_cols = [c for c in lines.columns if c.startswith("prj_") or c in ("init_wait", "time_per_item")]
    job_cycle = ("job_id", pl.col("cycle").fill_null(0))
    last = pl.when(prj).then(pl.col("_i")).forward_fill().over(*job_cycle)  # the row of its last getPrjCap
    kind = pl.when(_fam("prj_cap")).then(pl.lit("predicted")).otherwise(pl.lit("cannot_predict"))
    return lines.with_row_index("_i").with_columns(
        *[pl.col(c).gather(last) for c in prj_cols], kind.gather(last).alias("prj_kind"),
        _fam("prj_init_zero").any().over(*job_cycle).alias("init_time_zero"),
    ).filter(_fam("init_job_cap"))


def _counts(rows: pl.DataFrame) -> pl.DataFrame:
    nqm_n = pl.col("nqm").str.extract(r"^(\d+)Q", 1).cast(I64)
    shares = pl.col("shares").cast(I64, strict=False)
    given = pl.col("shares_given").cast(I64, strict=False)
    return rows.with_columns(
        pl.coalesce(
            pl.col("policy"),
            pl.when(pl.col("method").is_in(FIXED_METHODS)).then(pl.lit("FIXED_SHARE"))
            .when(pl.col("method").is_in(RESERVE_METHODS)).then(pl.lit("RESERVE")),
        ).alias("policy"),
        pl.coalesce(given, pl.when(pl.col("kind") == "granted").then(pl.coalesce(nqm_n, pl.lit(1))),
                    pl.when(pl.col("kind") == "stable").then(shares),
                    # a deferral is a decision to give nothing this cycle
                    pl.when(pl.col("kind").is_in(["deferred", "deferring", "out_of_shares"])).then(pl.lit(0))
                    ).alias("shares_given"),
        pl.col("detail").alias("reason"),
    )


def _rmcounter(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.select("_family", "ts", "cycle", "file", "line", "descr", "maxorder", "names", "values", "entity")
    lines = lines.with_columns(_fam("rmc_start").cast(I64).cum_sum().alias("_blk"))
    start = lines.filter(_fam("rmc_start")).select("_blk", "ts", "cycle", "file", "line", "descr")
    start = start.with_columns(pl.col("_blk").rank("ordinal").over("cycle").cast(I64).alias("block"))
    def per_block(fam: str, col: str, alias: str, by: tuple[str, ...] = ("_blk",)) -> pl.DataFrame:
        # unique(keep=last) rather than group_by().last(): list aggregation is slow
        got = lines.filter(_fam(fam)).select(*by, pl.col(col).alias(alias))
        return got.unique(list(by), keep="last", maintain_order=True)

    names = lines.filter(_fam("rmc_names")).select("_blk", "names")
    weights = per_block("rmc_weights", "values", "weights")
    entities = names.join(weights, on="_blk", **LEFT).with_columns(
        pl.int_ranges(0, pl.col("names").list.len()).alias("_i")
    ).explode("names", "_i").select(
        "_blk", pl.col("names").alias("entity"),
        pl.col("weights").list.get(pl.col("_i"), null_on_oob=True).alias("weight"),
    ).filter(pl.col("entity").is_not_null())
    wanted = per_block("rmc_wanted", "values", "wanted", ("_blk", "entity"))
    given = per_block("rmc_given", "values", "given", ("_blk", "entity"))
    out = start.join(entities, on="_blk", **LEFT).join(wanted, on=["_blk", "entity"], **LEFT)
    out = out.join(per_block("rmc_vmachines", "values", "vmachines"), on="_blk", **LEFT)
    out = out.join(per_block("rmc_maxorder", "maxorder", "maxorder"), on="_blk", **LEFT)
    out = out.join(given, on=["_blk", "entity"], **LEFT) if given.height else out
    return out.sort("_blk", maintain_order=True)


def _rmcounter_assembled(rows: pl.DataFrame, info: pl.DataFrame) -> pl.DataFrame:
    """RmCounter rows the scanner assembled (replay.parsing.scan.rmcounter_rows): the Start line's time,
    cycle and place, and the block's number within its cycle, as `_rmcounter` gives them."""
    where = info.select("ts", "cycle", "file", "line").select(pl.all().gather(rows["rec"]))
    return rows.hstack(where).with_columns(pl.col("rec").rank("dense").over("cycle").cast(I64).alias("block"))


def _schedule(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    kind = pl.col("kind").replace_strict({"Existing": "existing", "Additions": "addition", "Removals": "removal"},
                                         default=None, return_dtype=S)
    # an empty structure (no work at all) is a record with no rows
    lines = lines.filter(pl.col("job_id").is_not_null())
    # a refused item has no share lists (2.0.x print no memory for any item, so memory cannot tell)
    lines = lines.with_columns(kind.alias("kind"), pl.col("kind").is_null().alias("refused"))
    has_share = pl.col("host").is_not_null().any().over("rec", "job_id")
    keep = pl.col("host").is_not_null() | (~has_share & (pl.int_range(pl.len()).over("rec", "job_id") == 0))
    return lines.filter(keep).with_columns(
        pl.when(pl.col("host").is_null()).then(None).otherwise(pl.col("kind")).alias("kind")
    )


def _placements(lines: pl.DataFrame, schedule: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    new = lines.filter(_fam("connect_new_share")).select("cycle", "host", "share_id").unique()
    new = new.with_columns(_new=pl.lit(True))
    conn = lines.filter(_fam("connect_share")).join(new, on=["cycle", "host", "share_id"], nulls_equal=True, **LEFT)
    conn = conn.with_columns(
        pl.when(pl.col("_new")).then(pl.lit("new"))
        .when(pl.col("order").cast(I64) == pl.col("m_order").cast(I64)).then(pl.lit("whole_machine"))
        .otherwise(pl.lit("recovered")).alias("kind")
    )
    # defragmentation can hand a share placed for one job to a needy job in the same cycle: the
    # placement belongs to the job the published schedule adds it to
    adds = schedule.filter(pl.col("kind") == "addition").select(
        "cycle", "host", pl.col("share_id").cast(S), pl.col("job_id").alias("_sched_job"))
    first_add = adds.unique(["cycle", "host", "share_id"], keep="first", maintain_order=True)
    conn = conn.join(first_add, on=["cycle", "host", "share_id"], nulls_equal=True, **LEFT)
    moved = pl.col("_sched_job").is_not_null() & (pl.col("_sched_job") != pl.col("job_id"))
    return conn.with_columns(
        pl.when(moved).then(pl.col("job_id")).otherwise(None).alias("placed_for"),
        moved.alias("reassigned"),
        pl.when(moved).then(pl.col("_sched_job")).otherwise(pl.col("job_id")).alias("job_id"),
    )


def _eviction_counts(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    hdr = _fam("evict_header")
    lines = lines.with_columns(
        pl.when(hdr).then(pl.col("nodepool")).forward_fill().alias("nodepool"),
        hdr.cast(I64).cum_sum().over("cycle").alias("block"),
    )
    return lines.filter(_fam("evict_row"))


DEFRAG_KINDS = {
    "frag_header": "class_header", "frag_row": "analysis", "frag_free": "free_space", "frag_needy": "needy",
    "frag_vmachines": "vmachines", "frag_max_size": "max_size_warning", "frag_none": "bypassed",
    "frag_detected": "needy_detected", "rich_candidate": "candidate_machine",
    "rich_not_candidate": "not_candidate_machine", "rich_found": "machines_found",
    "rich_eligible": "eligible_machines", "rich_bypass": "bypass_machine", "rich_satisfied": "satisfied",
    "rich_retry": "retry_all_candidates", "rich_failed": "failed", "rich_candidate_job": "donor_candidate",
    "rich_looking": "looking", "rich_attempt": "attempt", "clear_share": "clear_share",
    "needy_assign": "expand_needy_assign", "needy_expand": "expand_needy",
}


def _defrag(lines: pl.DataFrame) -> pl.DataFrame:
    """The defrag rows; `class` is the class of the row's own job (null for a row naming none).

    detectFragmentation prints a `Class:` header, then that class's jobs: those rows take the
    header's class. Every later line of the cycle naming a job (needy, takeFromTheRich,
    clearShare, ...) takes the class its job was listed under, not whichever header came last.
    """
    if lines.is_empty():
        return lines
    header = _fam("frag_header")
    block = pl.when(header).then(pl.col("class")).forward_fill().over("cycle")
    lines = lines.with_columns(pl.when(header | _fam("frag_row")).then(block).alias("class"))  # header, rows
    own = pl.col("class").drop_nulls().first().over("cycle", "job_id")
    return lines.with_columns(
        pl.col("_family").replace_strict(DEFRAG_KINDS, default=None).alias("kind"),
        pl.when(pl.col("job_id").is_not_null()).then(own).otherwise(pl.col("class")).alias("class"),
        pl.coalesce("rich_from", "clear_kind", "needy_what", "detail").alias("detail"),
    )


def _occupancy(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    pool = pl.when(_fam("occupancy_begin")).then(pl.col("nodepool")).forward_fill()
    lines = lines.with_columns(pool.alias("nodepool"))
    return lines.filter(_fam("occupancy_table") & pl.col("m_host").is_not_null()).select(
        "rec", "ts", "cycle", "nodepool", pl.col("m_host").alias("host"), pl.col("m_blacklisted").alias("blacklisted"),
        pl.col("m_order").alias("order"), pl.col("m_active").alias("active"), pl.col("m_unused").alias("unused"),
        "memory_mb", pl.col("m_jobs").alias("jobs"),
        "free", "file", "line",
    )


def _config(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    owner = pl.when(_fam("class_begin")).then(pl.concat_str(pl.lit("class."), "class")).when(
        _fam("user_begin")).then(pl.concat_str(pl.lit("user."), "user")).when(
        ~_fam("property")).then(pl.lit(""))
    lines = lines.with_columns(owner.forward_fill().alias("_owner"))
    params = lines.filter(_fam("init_param")).select(pl.col("prop_key").alias("key"), "value", "file", "line")
    users = lines.filter(_fam("property") & pl.col("_owner").str.starts_with("user.")).select(
        pl.concat_str("_owner", pl.lit("."), "prop_key").alias("key"), "value", "file", "line")
    jd = lines.filter(_fam("jd_host_class")).select(pl.lit("jd.host").alias("key"), "value", "file", "line")
    out = pl.concat([params, users, jd], how="diagonal_relaxed")
    return out.unique("key", keep="last", maintain_order=True)


_PROPS = {"Policy": "policy", "Priority": "priority", "Weight": "weight", "Nodepool": "nodepool",
          "Initialization Cap": "init_cap", "Expand By Doubling": "expand_by_doubling",
          "Use Prediction": "prediction", "Prediction Fudge": "prediction_fudge",
          "Enforce Memory Size": "enforce", "Max Allotment": "max_allotment", "max-allotment": "max_allotment",
          "Cap": "cap", "Debug": "debug", "Authorized Users": "authorized_users"}


def _classes(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.with_columns(
        pl.when(_fam("class_begin")).then(pl.col("class")).when(_fam("user_begin") | _fam("class_row")).then(pl.lit(""))
        .forward_fill().alias("_cls"))
    props = lines.filter(_fam("property") & (pl.col("_cls") != "")).with_columns(
        pl.col("prop_key").replace_strict(_PROPS, default=None).alias("_k")).filter(pl.col("_k").is_not_null())
    begins = lines.filter(_fam("class_begin")).select(pl.col("class").alias("name"), "file", "line")
    begins = begins.unique("name", keep="last")
    wide = props.select(pl.col("_cls").alias("name"), "_k", "value").unique(["name", "_k"], keep="last").pivot(
        "_k", index="name", values="value") if props.height else pl.DataFrame({"name": []}, schema={"name": S})
    table_columns = [c for c in ("policy", "priority", "weight", "nodepool", "init_cap", "expand_by_doubling",
                                 "prediction", "prediction_fudge", "enforce") if c in lines.columns]
    table = lines.filter(_fam("class_row")).select(
        pl.col("class").alias("name"), *table_columns, pl.col("file").alias("tfile"), pl.col("line").alias("tline"),
    ).unique("name", keep="last") if lines.filter(_fam("class_row")).height else None
    out = begins.join(wide, on="name", how="full", coalesce=True)
    if table is not None:
        out = out.join(table, on="name", how="full", coalesce=True, suffix="_t")
        for col in [c for c in out.columns if c.endswith("_t")]:
            out = out.with_columns(pl.coalesce(col, col.removesuffix("_t")).alias(col.removesuffix("_t"))).drop(col)
        out = out.with_columns(pl.coalesce("file", "tfile").alias("file"), pl.coalesce("line", "tline").alias("line"))
    return out.sort("name")


def _nodepools(lines: pl.DataFrame) -> pl.DataFrame:
    if lines.is_empty():
        return lines
    lines = lines.with_columns(pl.when(_fam("np_name")).then(pl.col("nodepool")).forward_fill().alias("name"))
    def last(fam: str, col: str, alias: str) -> pl.DataFrame:
        return lines.filter(_fam(fam)).group_by("name").agg(pl.col(col).last().alias(alias))
    out = lines.filter(_fam("np_name")).select("name", "file", "line").unique("name", keep="last", maintain_order=True)
    for fam, col, alias in (("np_quantum", "quantum", "quantum"), ("np_search_order", "search_order", "search_order"),
                            ("np_node_file", "detail", "node_file"), ("np_node_rule", "detail", "node_rule"),
                            ("np_classes", "classes", "classes"), ("np_subpools", "subpools", "subpools"),
                            ("np_nodes", "nodes", "nodes")):
        out = out.join(last(fam, col, alias), on="name", **LEFT)
    parents = out.select(pl.col("name").alias("parent"), pl.col("subpools").alias("child")).explode("child")
    out = out.join(parents.filter(pl.col("child").is_not_null()), left_on="name", right_on="child", **LEFT)
    return out
