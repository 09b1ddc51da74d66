"""The rows of the boot tables (config, classes, nodepools) typed in C per chunk.

Their buckets (`_config_lines`, `_nodepool_lines`) span the whole log: a reconfigure prints the
configuration again, so the tables are built once, at the log's end (assemble.assemble_final,
steps.config, steps.classes, steps.nodepools over a few hundred rows). Per chunk, their rows (the
templated ones, with the node lists and JD host lines of replay.parsing.boot_scan) are typed here
from the scanner's spans (`_scan.typed`) into an Arrow table with the columns
`assemble.rows_of` gives the reference way (rec, _family, the fields the rows have, the lists, the
family's constants, ts, cycle, file, line, job_id), carried as it is and read by the final steps.

A chunk whose rows lie in two blocks, whose records lack a time, or where `_scan.typed` refuses a
span, goes the reference way (the rows framed by `fill_rows`); rows of the regex or lark paths in
the same bucket send the chunk the reference way before this (family_rows.parse_families).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.built import Built
from replay.parsing.arrays import names_column, numeric, typed_spans, with_validity
from replay.parsing.columns import Unframed, frames_of
from replay.parsing.columns_plain import Records, where_columns
from replay.parsing.families import FAMILY_NAMES
from replay.parsing.scan import RawRows
from replay.parsing.tables import RENAME

BUCKETS = ("_config_lines", "_nodepool_lines")


def build(raw: Mapping[str, Sequence[Unframed]], recs: Records | None, framed: Collection[str] = ()) -> Built:
    """The boot buckets' rows of one chunk from `raw` (their unframed rows), typed in C where the
    chunk allows it, as rows of the tables that span the log (`framed`: unused)."""
    out = Built()
    for bucket in BUCKETS:
        parts = list(raw.get(bucket, ()))
        if not parts:
            continue
        one = parts[0] if len(parts) == 1 and isinstance(parts[0], RawRows) else None
        got = None if one is None or recs is None else boot_rows(one, recs)
        if got is None:
            out.frames[bucket] = [frames_of(parts)]
        else:
            out.spanning[bucket] = got
    return out


def boot_rows(raw: RawRows, recs: Records) -> pa.Table | None:
    """One block's rows of a boot bucket as `assemble.rows_of` gives them, typed in C; None: a span
    `_scan.typed` refuses."""
    rows = raw.rows
    rec, code = raw.rec[rows], raw.codes[rows]
    spans, columns = raw.spans, raw.bucket.columns
    # a field none of the rows has is left out, as fill_rows leaves it out
    present = [i for i in range(len(columns)) if len(rows) and spans[:, 2 * i].max() >= 0]
    out: dict[str, pa.Array] = {"rec": numeric(pa.uint32(), rec.astype(np.uint32)),
                                "_family": names_column(code, FAMILY_NAMES)}
    names: list[str] = [columns[i] for i in present]
    arrays: list[pa.Array] = []
    if present:
        typed = typed_spans(raw.data, [spans[:, 2 * i:2 * i + 2] for i in present], [pl.String] * len(present))
        if typed is None:
            return None
        arrays += typed
    for name, (raw_counts, raw_values) in zip(raw.bucket.lists, raw.got[2]):
        counts = np.frombuffer(raw_counts, dtype=np.int32)
        if not len(counts) or counts.max() < 0:
            continue
        lists = _list_column(raw, counts, raw_values)
        if lists is None:
            return None
        names.append(name)
        arrays.append(lists)
    for name, array in zip(names, arrays):  # rows_of's renames (classes_list -> classes, text -> detail)
        out[RENAME[name] if name in RENAME and RENAME[name] not in names else name] = array
    seen = set(code.tolist())
    for key, per_code in raw.bucket.consts:
        if any(per_code[c] is not None for c in seen):
            out[key] = names_column(code, per_code)
    out.update(where_columns(recs, rec))
    out["job_id"] = numeric(pa.int64(), recs.job[rec], recs.job_ok[rec])
    return pa.table(out)


def _list_column(raw: RawRows, counts: np.ndarray, raw_values: bytes) -> pa.Array | None:
    """A list-of-strings column from the scanner's item counts (-1: null) and item spans."""
    items = np.frombuffer(raw_values, dtype=np.int32).reshape(-1, 2)
    if len(items):
        typed = typed_spans(raw.data, [items], [pl.String])
        if typed is None:
            return None
        values = typed[0]
    else:
        values = pa.array([], pa.large_string())
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(np.maximum(counts, 0), out=offsets[1:])
    return with_validity(pa.large_list(pa.large_string()), len(counts), [pa.py_buffer(offsets)], counts >= 0,
                         children=[values])
