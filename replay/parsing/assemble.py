"""A chunk's tables assembled from its buckets of family rows, the chunks stitched into the log's frame,
and the tables that span the whole log."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing import builders, steps
from replay.parsing.columns import Unframed, shifted, to_polars
from replay.parsing.columns_plain import record_columns
from replay.parsing.columns_events import filled_orders, unordered_rows
from replay.parsing.compiled import COMPILED
from replay.parsing.families import FAMILY_CODE
from replay.parsing.scanned import word_column
from replay.parsing.tables import (FIXED_METHODS, I64, LS, RENAME, RESERVE_METHODS, S, SCHEMAS, TS, Frame,
                                   conform)

if COMPILED:
    from replay.parsing import _scan


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
# The record columns every table's rows take (and the record's JID, `_job`, for job_id); some tables take more.
WHERE_COLUMNS = ("ts", "cycle", "file", "line")
MORE_WHERE = {"counts": ("method",), "messages": ("jid", "level", "component", "cls", "tid", "method")}
# the header text columns of the records `rec` (replay.parsing.scanned.header_strings), for an `info` without them
Strings = Callable[[np.ndarray, list[str]], list[pl.Series]]


def rows_of(buckets: dict[str, list[pl.DataFrame]], name: str, info: pl.DataFrame,
            strings: Strings | None = None) -> pl.DataFrame:
    """All family rows of one bucket, in log order, with their record's ts, cycle, file, line (and
    MORE_WHERE's columns), job_id (the record's JID where the row names no job), and the fields
    its assembly step reads (READS; null where no row carried them). A header text column `info`
    lacks is built for these rows only, by `strings`."""
    where = (*WHERE_COLUMNS, *MORE_WHERE.get(name, ()))
    reads = READS.get(name, ())
    # most chunks lack a few families (the bootstrap, DEBUG tables): theirs is an empty frame
    parts = buckets.get(name) or [pl.DataFrame(schema={"rec": pl.UInt32, "_family": S})]
    parts = [p if p.schema["rec"] == pl.UInt32 else p.with_columns(pl.col("rec").cast(pl.UInt32)) for p in parts]
    # one part (the common case: the scanner's) is in record order already
    df = pl.concat(parts, how="diagonal_relaxed").sort("rec", maintain_order=True) if len(parts) > 1 else parts[0]
    cols = {RENAME[c] if c in RENAME and RENAME[c] not in df.columns else c: pl.col(c) for c in df.columns}
    # a record's number is its row in `info`: its columns are gathered, not joined
    cols.update({c: pl.lit(info[c]).gather(pl.col("rec")) for c in where if c in info.columns})
    missing = [c for c in where if c not in info.columns]
    if missing and strings is None:
        raise ValueError(f"rows_of: the records carry no {missing} and no way to read them")
    if missing and strings is not None:
        got = strings(df["rec"].to_numpy(), missing) if df.height else [pl.Series(c, [], S) for c in missing]
        cols.update({col.name: pl.lit(col) for col in got})
    jid = pl.lit(info["_job"]).gather(pl.col("rec"))
    cols["job_id"] = pl.coalesce(cols["job_id"].cast(I64, strict=False), jid) if "job_id" in cols else jid
    return df.select(*[e.alias(c) for c, e in cols.items()], *[_ABSENT[c] for c in reads if c not in cols])


def _filled(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with every column an assembly step reads (absent -> null)."""
    return df.with_columns([expr for c, expr in _ABSENT.items() if c not in df.columns])


# the rows of a bucket no chunk filled: the columns _rows gives every bucket, and nothing more
_NO_ROWS = pl.DataFrame(schema={"rec": pl.UInt32, "_family": S, "ts": TS, "cycle": pl.UInt32, "file": S,
                                "line": pl.UInt32, "job_id": I64})


@dataclass
class Carry:
    """What the chunks hand on, in log order: cycles so far, known share orders (the first placement's
    per (host, share_id), as an integer; None: its order is not one), and the rows of the small
    tables that span the whole log (assembled once, at the end)."""

    cycles: int = 0
    share_orders: dict[tuple[str, str], int | None] = field(default_factory=dict)
    spanning: dict[str, list[Frame]] = field(default_factory=lambda: {b: [] for b in SPANNING})


@dataclass(frozen=True)
class ChunkCarry:
    """What one chunk, assembled on its own (its cycles counted from 1), leaves for `stitch`: its
    published schedules, the share orders its placements show, its evictions whose order only an
    earlier chunk may know (`unordered`: row, host, share_id), and its rows of the spanning tables."""

    cycles: int
    share_orders: pl.DataFrame | None
    unordered: pl.DataFrame | None
    spanning: dict[str, Frame]  # a boot bucket's rows typed in C: a pyarrow Table (columns_boot)


# Buckets whose tables need the whole log: loop returns close cycles in the next chunk, and the
# configuration may be printed again by a reconfigure.
SPANNING: tuple[str, ...] = ("_cycle_lines", "_config_lines", "_nodepool_lines")


def compact(df: pl.DataFrame) -> pl.DataFrame:
    """`df` with its text copied out of the chunk it points into, so rows kept across chunks do not
    keep every chunk's bytes alive (polars string views share their source buffers)."""
    # the oldest Arrow layout (large strings, large lists) is a copy polars makes without
    # pyarrow.compute, which a cast to that layout would load (0.07 s of start-up)
    frame = pl.from_arrow(df.to_arrow(compat_level=pl.CompatLevel.oldest()))
    if not isinstance(frame, pl.DataFrame):  # an Arrow table always gives one (the type allows a Series)
        raise TypeError(f"pl.from_arrow of a table gave a {type(frame).__name__}")
    return frame


def file_names(names: list[str]) -> pl.DataFrame:
    """file index -> file name (`fname`), to label rows with the file they came from."""
    return pl.DataFrame({"file": range(len(names)), "fname": names}, schema={"file": pl.UInt16, "fname": S})


def record_cycles(codes: np.ndarray, last: bool, unread: bool = False) -> np.ndarray:
    """Per record (its family code, -1 for none), its cycle: that of the next published schedule at
    or after it, counted from 1 in the chunk; 0 for none (a record of no family unless `unread`,
    or, in the log's last chunk, one after its last published schedule)."""
    if COMPILED and codes.dtype == np.int32:  # one pass; what follows is its reference
        got = _scan.cycles(np.ascontiguousarray(codes), FAMILY_CODE["schedule_sent"], FAMILY_CODE["schedule_state"],
                           last, unread)
        return np.frombuffer(got, dtype=np.uint32, count=len(codes))
    sent = codes == FAMILY_CODE["schedule_sent"]
    before = np.cumsum(sent, dtype=np.int64) - sent
    cyc = before + (codes != FAMILY_CODE["schedule_state"])
    # a chunk ends after a published schedule, so only the log's last chunk has records after its
    # last one (no cycle); a chunk cut elsewhere (no schedule for a long stretch) continues into the next
    valid = ((codes >= 0) | unread) & (cyc >= 1) & ((cyc <= int(sent.sum())) | (not last))
    return np.where(valid, cyc, 0).astype(np.uint32)


def record_info(records: pl.DataFrame, names: list[str], last: bool, cycle: np.ndarray | None = None) -> pl.DataFrame:
    """Per record (row `rec`): ts, cycle (`record_cycles`, or `cycle` as it gives them), file name,
    line, tid, the JID as an integer (`_job`), its METHOD's class (`_mc`: 1 a FIXED_SHARE counting
    method, 2 a RESERVE one, 0 any other) and the header text columns the records carry (the
    scanner's carry none: `rows_of` builds the ones it needs)."""
    # a copy: the compiled tables read the one given, and record_cycles' may be read-only
    cycle = (record_cycles(records["_code"].to_numpy(), last) if cycle is None else cycle).copy()
    none = np.flatnonzero(cycle == 0)
    cycles = pl.Series("cycle", cycle)
    cycles = cycles.scatter(none, None) if none.size else cycles
    text = [c for c in ("jid", "method", "level", "component", "cls") if c in records.columns]
    if "_job" in records.columns:  # read by the scanner: its columns as they are, no query
        file = word_column("file", records["file"].to_numpy(), names)
        return pl.DataFrame([records["rec"], records["ts"], cycles, file, records["line"],
                             *[records[c] for c in (*text, "tid", "_job", "_mc")]])
    method = pl.col("method")
    numbers = [pl.col("jid").cast(I64, strict=False).alias("_job"),
               (method.is_in(FIXED_METHODS).cast(pl.UInt8) + 2 * method.is_in(RESERVE_METHODS).cast(pl.UInt8))
               .alias("_mc")]
    fname = pl.lit(pl.Series(names, dtype=S)).gather(pl.col("file"))
    return records.select("rec", "ts", pl.lit(cycles), fname.alias("file"), "line", *text, "tid", *numbers)


def assemble_chunk(buckets: dict[str, list[pl.DataFrame]], records: pl.DataFrame, names: list[str],
                   unparsed: Frame, last: bool, raw: dict[str, list[Unframed]] | None = None,
                   strings: Strings | None = None) -> tuple[dict[str, Frame], ChunkCarry]:
    """The per-cycle tables of one chunk (conformed to SCHEMAS), on their own: cycles count from 1
    and evictions take share orders from this chunk only; `stitch` puts them in the log's frame.
    Chunks are independent here, so they can be assembled in parallel. `raw`: the unframed rows
    of the compiled tables' buckets (replay.parsing.builders types those tables in C), emptied as the
    builders take them; `strings`: the header text columns of records that carry none (rows_of)."""
    codes = records["_code"].to_numpy()
    cycle = record_cycles(codes, last)
    # the records' polars frame only the reference steps read: most chunks, their tables all typed
    # in C, never build it
    made: list[pl.DataFrame] = []

    def info() -> pl.DataFrame:
        if not made:
            made.append(record_info(records, names, last, cycle))
        return made[0]

    recs = record_columns(records, info, names, cycle) if raw else None
    raw = raw or {}
    if unowned := set(raw) - {bucket for b in builders.BUILDERS for bucket in b.buckets}:
        raise ValueError(f"assemble_chunk: no compiled table builder owns the buckets {sorted(unowned)}")
    # each builder its own buckets (replay.parsing.builders); what it does not take whole, framed.
    # Taken out of `raw` (the caller's dict), so each builder's rows go once it has built them, not
    # when the whole chunk is assembled: the chunk's peak memory is during this assembly
    built = []
    for b in builders.BUILDERS:
        built.append(b.build({k: raw.pop(k) for k in b.buckets if k in raw}, recs, buckets))
    frames = {bucket: rows for b in built for bucket, rows in b.frames.items()}
    buckets = {**buckets, **frames} if frames else buckets
    compiled: dict[str, Frame] = {name: table for b in built for name, table in b.tables.items()}
    get: Callable[[str], pl.DataFrame] = lambda name: rows_of(buckets, name, info(), strings)  # noqa: E731

    def table(name: str, bucket: str, step: Callable[[pl.DataFrame], pl.DataFrame] | None = None) -> pl.DataFrame:
        # a bucket no record of the chunk filled gives an empty table without a step (most
        # chunks lack several: the bootstrap, allotments, the DEBUG tables)
        if bucket not in buckets:
            return _empty_table(name)
        rows = get(bucket)
        return conform(step(rows) if step else rows, SCHEMAS[name])

    # only the columns its rows carry (the fill comes once, at the end)
    spanning: dict[str, Frame] = {name: compact(get(name)) for name in SPANNING if name in buckets}
    spanning.update({bucket: rows for b in built for bucket, rows in b.spanning.items()})
    schedule = None if "schedule" in compiled else steps.schedule(get("_schedule_lines"))
    placements = (steps.placements(get("_placement_lines"), schedule)
                  if schedule is not None and "_placement_lines" in buckets else None)
    # the first placement per share (columns_schedule's, or below)
    share_orders = next((b.share_orders for b in built if b.share_orders is not None), None)
    if placements is not None and placements.height:
        known = compact(placements.select("host", pl.col("share_id").cast(S), pl.col("order").cast(S).alias("_order")))
        share_orders = known.unique(["host", "share_id"], keep="first", maintain_order=True)
    evictions, unordered = _empty_table("evictions"), None
    if "evictions" in compiled:
        unordered = unordered_rows(compiled["evictions"])
    elif "evictions" in buckets:
        rows = get("evictions")
        # an eviction line without the share's order takes it from where the share was placed,
        # in this chunk or an earlier one (stitch)
        unordered = compact(rows.with_row_index("_row").filter(pl.col("order").is_null()).select(
            "_row", "host", "share_id"))
        evictions = conform(rows, SCHEMAS["evictions"])
    tables: dict[str, Frame] = {
        "nodes": table("nodes", "nodes"),
        "job_caps": table("job_caps", "_cap_lines", steps.caps),
        "counts": table("counts", "counts", steps.counts),
        "rmcounter": (conform(steps.rmcounter_assembled(buckets["_rmcounter_rows"][0], info()), SCHEMAS["rmcounter"])
                      if "_rmcounter_rows" in buckets else table("rmcounter", "_rmcounter_lines", steps.rmcounter)),
        "placements": _empty_table("placements") if placements is None else conform(placements, SCHEMAS["placements"]),
        "evictions": evictions,
        "eviction_counts": table("eviction_counts", "_eviction_count_lines", steps.eviction_counts),
        "defrag": table("defrag", "_defrag_lines", steps.defrag),
        "schedule": _empty_table("schedule") if schedule is None else conform(schedule, SCHEMAS["schedule"]),
        "jobs": table("jobs", "jobs", lambda rows: rows.filter(pl.col("job_id").is_not_null())),
        "job_events": table("job_events", "job_events"),
        "processes": table("processes", "processes"),
        "allotments": table("allotments", "allotments"),
        "expansions": table("expansions", "expansions"),
        "occupancy": table("occupancy", "_occupancy_lines", steps.occupancy),
        "pool_tables": table("pool_tables", "pool_tables"),
        "messages": table("messages", "messages", lambda rows: rows.rename({"detail": "text"}, strict=False)),
        "unparsed": (unparsed if not isinstance(unparsed, pl.DataFrame)
                     else conform(unparsed, SCHEMAS["unparsed"]) if unparsed.height else _empty_table("unparsed")),
    }
    tables.update(compiled)
    cycles = int((codes == FAMILY_CODE["schedule_sent"]).sum())
    return tables, ChunkCarry(cycles, share_orders, unordered, spanning)


def stitch(tables: Mapping[str, Frame], part: ChunkCarry, carry: Carry) -> dict[str, Frame]:
    """One chunk's tables (from `assemble_chunk`) in the log's frame, chunks taken in log order:
    cycles numbered after the earlier chunks', evictions given the order of a share placed in an
    earlier chunk (the first placement of a share wins, as it does within a chunk). The share
    orders are a dict, not a frame: a chunk adds a few dozen, and a query a chunk cost more."""
    offset = carry.cycles
    carry.cycles += part.cycles
    for name, rows in part.spanning.items():
        carry.spanning[name].append(_shift(rows, offset))
    if part.share_orders is not None and part.share_orders.height:
        _add_orders(carry.share_orders, part.share_orders)
    out = {name: _shift(df, offset) for name, df in tables.items()}
    if part.unordered is not None and part.unordered.height and carry.share_orders:
        rows, orders = _found_orders(part.unordered, carry.share_orders)
        evictions = out["evictions"]
        if not isinstance(evictions, pl.DataFrame):  # built in C
            out["evictions"] = filled_orders(evictions, rows, orders)
        elif rows.size:  # the rows without an order take the placement's (a coalesce)
            out["evictions"] = _replaced(evictions, evictions["order"].scatter(rows, orders))
    return out


def _add_orders(known: dict[tuple[str, str], int | None], placed: pl.DataFrame) -> None:
    """Add a chunk's share orders (host, share_id, _order as text) the earlier chunks did not place."""
    orders = placed["_order"].cast(I64, strict=False).to_list()  # as the eviction's order takes it
    for key, order in zip(zip(placed["host"].to_list(), placed["share_id"].to_list()), orders):
        if None not in key:  # a null key matches no eviction (a join's nulls match nothing)
            known.setdefault(key, order)


def _found_orders(unordered: pl.DataFrame, known: dict[tuple[str, str], int | None]) -> tuple[np.ndarray, np.ndarray]:
    """(rows, int64 orders) of the evictions `unordered` (_row, host, share_id) whose share has a known order."""
    found = [known.get(key) for key in zip(unordered["host"].to_list(), unordered["share_id"].to_list())]
    at = np.flatnonzero([order is not None for order in found])
    return unordered["_row"].to_numpy()[at], np.array([found[i] for i in at.tolist()], dtype=np.int64)


def _replaced(df: pl.DataFrame, column: pl.Series) -> pl.DataFrame:
    """`df` with `column` in place of its column of that name (a new frame; no query)."""
    return df.clone().replace_column(df.get_column_index(column.name), column)  # a shallow copy: no query


def _shift(df: Frame, offset: int) -> Frame:
    """`df` with its chunk-relative cycle numbers moved `offset` cycles on."""
    if not offset:
        return df
    if not isinstance(df, pl.DataFrame):
        return shifted(df, offset)  # a table built in C (every one has a cycle)
    if not df.height or "cycle" not in df.columns:  # most chunks leave several tables empty
        return df
    return _replaced(df, df.get_column("cycle") + offset)  # stays UInt32


@lru_cache(maxsize=None)
def _empty_table(name: str) -> pl.DataFrame:
    """The table with no rows (shared: nothing mutates a chunk's tables)."""
    return pl.DataFrame(schema=SCHEMAS[name])


def _polars(rows: Frame) -> pl.DataFrame:
    """A chunk's spanning rows as a polars frame (a boot bucket's typed in C are a pyarrow Table)."""
    return rows if isinstance(rows, pl.DataFrame) else to_polars(rows)


def _joined(parts: list[Frame]) -> pl.DataFrame:
    """The chunks' rows of a spanning table as one polars frame: the tables typed in C joined in Arrow
    and framed once (a polars frame a chunk costs a call on polars' thread pool each)."""
    tables = [p for p in parts if isinstance(p, pa.Table)]
    if len(tables) == len(parts) and all(t.schema.equals(tables[0].schema) for t in tables):
        return to_polars(pa.concat_tables(tables) if len(tables) > 1 else tables[0])
    return pl.concat([_polars(p) for p in parts], how="diagonal_relaxed")


def assemble_final(carry: Carry) -> dict[str, pl.DataFrame]:
    """The tables that span the whole log: cycles, config, classes, nodepools."""
    rows = {name: _filled(_joined(parts) if parts else _NO_ROWS) for name, parts in carry.spanning.items()}
    config = rows["_config_lines"]
    tables = {
        "cycles": steps.cycles(rows["_cycle_lines"]),
        "config": steps.config(config),
        "classes": steps.classes(config),
        "nodepools": steps.nodepools(rows["_nodepool_lines"]),
    }
    return {name: conform(df, SCHEMAS[name]) for name, df in tables.items()}
