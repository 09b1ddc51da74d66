"""The small tables typed in C: `pool_tables`, from the rows `_scan.pools` reads (replay.parsing.pools),
and the per-chunk rows of `cycles` (bucket _cycle_lines, which steps.cycles assembles once at the end
of the log), their spans typed by `_scan.typed` and laid out as Arrow arrays without polars.

The reference is the rows framed from spans (`pools.pool_frame`, `RawRows.frame`) then
`assemble.rows_of` (and `conform`). A chunk whose rows the C code cannot take whole (a record without
a time, a value `_scan.typed` refuses, rows of two blocks, records the regexes or the grammar read)
goes the reference way.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.built import Built
from replay.parsing.arrays import field_take, names_column, table_of, typed_spans, typed_taken, with_validity
from replay.parsing.columns import Unframed
from replay.parsing.columns_plain import Records, where_columns
from replay.parsing.families import FAMILY_NAMES
from replay.parsing.pools import SPANS, PoolRows
from replay.parsing.scan import RawRows

CYCLES = "_cycle_lines"
BUCKETS = ("pool_tables", CYCLES)  # the buckets `build` takes (assemble_chunk leaves them to it)
# the fields of the _cycle_lines rows steps.cycles reads, and their types (epoch stays text: the step
# matches a loop's entry and return lines on it)
_CYCLE_FIELDS = {"epoch": pl.String, "count": pl.Int64, "new_jobs": pl.Int64, "existing_jobs": pl.Int64}
_TYPES = (pl.String, pl.Int64, pl.String)  # SPANS's column types (tables.SCHEMAS["pool_tables"])


def build(raw: Mapping[str, Sequence[Unframed]], recs: Records | None, framed: Collection[str] = ()) -> Built:
    """The pool_tables table and the cycles' rows of one chunk from their unframed rows (the
    reference's frame when the C code does not take them; `framed`: unused)."""
    out = Built()
    lines = [p for p in raw.get(CYCLES, ()) if isinstance(p, RawRows)]
    if lines:
        rows = cycle_rows(lines[0], recs) if len(lines) == 1 and recs is not None else None
        if rows is None:
            out.frames[CYCLES] = [f for f in (p.frame() for p in lines) if f is not None]
        else:
            out.spanning[CYCLES] = rows
    parts = [p for p in raw.get("pool_tables", ()) if isinstance(p, PoolRows)]
    if not parts:
        return out
    table = pool_table(parts[0], recs) if len(parts) == 1 and recs is not None else None
    if table is None:
        out.frames["pool_tables"] = [f for f in (p.frame() for p in parts) if f is not None]
    else:
        out.tables["pool_tables"] = table
    return out


def pool_table(rows: PoolRows, recs: Records) -> pa.Table | None:
    """The pool_tables table of one block's rows: nodepool, depth, table_row and the values typed
    in C; None: a value `_scan.typed` refuses (the reference casts it)."""
    raw_rec, raw_spans, raw_counts, raw_items, _ = rows.got
    rec = np.frombuffer(raw_rec, dtype=np.int32)
    spans = np.frombuffer(raw_spans, dtype=np.int32).reshape(-1, 2 * len(SPANS))
    counts = np.frombuffer(raw_counts, dtype=np.int32)
    items = np.frombuffer(raw_items, dtype=np.int32).reshape(-1, 2)
    if not len(rec):
        return None
    typed = typed_spans(rows.data, [spans[:, 2 * i:2 * i + 2] for i in range(len(SPANS))], list(_TYPES))
    values = typed_spans(rows.data, [items], [pl.Int64]) if len(items) else [pa.array([], pa.int64())]
    if typed is None or values is None:
        return None
    offsets = np.zeros(len(rec) + 1, dtype=np.int64)  # the table's large_list, so no cast (pyarrow.compute)
    np.cumsum(np.maximum(counts, 0), out=offsets[1:])
    lists = with_validity(pa.large_list(pa.int64()), len(rec), [pa.py_buffer(offsets)], counts >= 0, children=values)
    built = dict(zip(SPANS, typed))
    return table_of("pool_tables", {**built, "values": lists, **where_columns(recs, rec.astype(np.int64))})


def cycle_rows(raw: RawRows, recs: Records) -> pa.Table | None:
    """The _cycle_lines rows of one chunk as steps.cycles reads them: _family, ts, cycle, file, line
    and the fields it reads (_CYCLE_FIELDS) typed in C; None: a value `_scan.typed` refuses."""
    rows, spans, columns = raw.rows, raw.spans, raw.bucket.columns
    if not len(rows):
        return None
    typed = typed_taken(raw.data, spans, field_take(columns, tuple(_CYCLE_FIELDS)), list(_CYCLE_FIELDS.values()))
    if typed is None:
        return None
    rec = raw.rec[rows]
    arrays = {"_family": names_column(raw.codes[rows], FAMILY_NAMES), **where_columns(recs, rec),
              **dict(zip(_CYCLE_FIELDS, typed))}
    return pa.table(arrays)  # framed by polars once, all chunks' together (assemble.assemble_final)
