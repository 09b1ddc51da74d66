"""The eviction tables, typed in C like the plain tables (replay.parsing.columns_plain): `evictions`, one
row per templated record, and `eviction_counts`, whose rows take their nodepool from the header
before them and count the headers of their cycle (steps.eviction_counts, done here in numpy over
the typed columns). An eviction whose line shows no order takes it, in `stitch`, from where its
share was placed (`unordered_rows`, `filled_orders`), as the reference evictions do.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.arrays import int_values, numeric, present_rows, span_column, table_of
from replay.parsing.columns_plain import Records, plain_columns, plain_table
from replay.parsing.families import FAMILY_CODE
from replay.parsing.scan import RawRows


def _subset(raw: RawRows, keep: np.ndarray, spans: np.ndarray) -> RawRows:
    """`raw` with only the rows `keep` (a mask) and these spans in place of its own (no lists)."""
    positions = np.frombuffer(raw.got[0], dtype=np.int32)[keep]
    return replace(raw, got=(positions.tobytes(), np.ascontiguousarray(spans[keep], np.int32).tobytes(), raw.got[2]))


def eviction_counts(raw: RawRows, recs: Records) -> pa.Table | None:
    """The eviction_counts table of one chunk: doEvictions' rows, each with the nodepool of the
    header before it in the chunk and the number of headers of its cycle so far (`block`)."""
    if raw.bucket.lists:
        return None
    rows, spans, columns = raw.rows, raw.spans, raw.bucket.columns
    code = raw.codes[rows]
    header, row = code == FAMILY_CODE["evict_header"], code == FAMILY_CODE["evict_row"]
    recurse = code == FAMILY_CODE["evict_recurse"]  # neither a header nor a row: no part in the table
    if not row.any() or not (header | row | recurse).all() or "nodepool" not in columns:
        return None  # no row to give, or a family the reference step reads otherwise
    pool = span_column(spans, columns, "nodepool")
    # forward fill of the headers' nodepools (a header without one keeps the one before)
    named = np.where(header & (pool[:, 0] >= 0), np.arange(len(rows)), -1)
    last = np.maximum.accumulate(named)
    filled = np.where(last[:, None] >= 0, pool[np.maximum(last, 0)], -1)
    i = columns.index("nodepool")
    spans = spans.copy()
    spans[:, 2 * i:2 * i + 2] = filled
    # headers so far in the row's cycle (a cycle's rows lie together: cycles only grow in a chunk)
    cycle = recs.cycle[raw.rec[rows]]
    seen = np.cumsum(header)
    starts = np.flatnonzero(np.r_[True, cycle[1:] != cycle[:-1]])
    before = np.repeat(seen[starts] - header[starts], np.diff(np.r_[starts, len(rows)]))
    # cycles that never go back lie in one run each (the common case: no sort to find out)
    if (cycle[1:] < cycle[:-1]).any() and len(starts) != len(np.unique(cycle)):
        return None  # a cycle in two runs: the reference step groups it
    built = plain_columns("eviction_counts", _subset(raw, row, spans), recs)
    if built is None:
        return None
    built["block"] = numeric(pa.int64(), (seen - before)[row].astype(np.int64))
    return table_of("eviction_counts", built)


def evictions(raw: RawRows, recs: Records) -> pa.Table | None:
    """The evictions table of one chunk (one row per templated record; `unordered_rows` gives the rows
    `stitch` fills the order of)."""
    sid = span_column(raw.spans, raw.bucket.columns, "share_id")
    data = np.frombuffer(raw.data, dtype=np.uint8)
    first = data[np.maximum(sid[:, 0], 0)] if len(data) else np.zeros(len(sid), np.uint8)
    if ((sid[:, 0] >= 0) & (sid[:, 1] - sid[:, 0] > 1) & (first == ord("0"))).any():
        # "h.007": the share orders are keyed by the share id's text, which its number would not give
        return None
    return plain_table("evictions", raw, recs)


def unordered_rows(table: pa.Table) -> pl.DataFrame | None:
    """The rows of an evictions table built in C whose line shows no order: (_row, host, share_id),
    keyed as the share orders are (text), as assemble_chunk gives them for the reference table.
    A chunk has a few dozen: read from the Arrow arrays one by one, not framed whole and gathered."""
    at = np.flatnonzero(~present_rows(table.column("order").chunk(0)))
    if not at.size:
        return None
    host = table.column("host").chunk(0)
    share, known = int_values(table.column("share_id").chunk(0))
    rows = at.tolist()
    return pl.DataFrame([pl.Series("_row", at.astype(np.uint32)),
                         pl.Series("host", [host[i].as_py() for i in rows], dtype=pl.String),
                         pl.Series("share_id", [str(share[i]) if known[i] else None for i in rows], dtype=pl.String)])


def filled_orders(table: pa.Table, rows: np.ndarray, orders: np.ndarray) -> pa.Table:
    """An evictions table built in C with `orders` (int64) at `rows` where its own order is null
    (stitch's coalesce)."""
    i = table.schema.get_field_index("order")
    (column,) = table.column(i).chunks
    values, present = int_values(column)
    empty = ~present[rows]
    values[rows[empty]] = orders[empty]
    present[rows[empty]] = True
    return table.set_column(i, "order", numeric(pa.int64(), values, present))
