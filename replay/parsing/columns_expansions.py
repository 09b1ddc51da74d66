"""The doExpansion rows read in C (`_scan.expansions`: one row per listed job, one with no job for an
empty list) and put among the expansions bucket's templated rows, so that the chunk's expansions
table is typed in C like the other plain tables (replay.parsing.columns `plain_table`). The polars
handler (replay.parsing.fast `_explode_expansions`) stays the reference and takes any chunk this
module does not take whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.families import FAMILY_CODE
from replay.parsing.scan import Bucket, RawRows, fill_plan
from replay.parsing.scanned import COMPILED

if COMPILED:
    from replay.parsing import _scan

FAMILY = "do_expansion"
_FIELDS = ("nodepool", "job_id", "found")  # _scan.expansions's spans, in its order


def _bucket(base: Bucket) -> tuple[Bucket, list[int]]:
    """The expansions bucket with doExpansion's fields and kind; the slot of each of _FIELDS in it."""
    columns = (*base.columns, *[f for f in _FIELDS if f not in base.columns])
    consts = []
    for key, per_code in base.consts:
        if key == "kind":
            per_code = tuple(FAMILY if i == FAMILY_CODE[FAMILY] else v for i, v in enumerate(per_code))
        consts.append((key, per_code))
    return replace(base, columns=columns, consts=tuple(consts)), [columns.index(f) for f in _FIELDS]


def expansion_scan(part: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[np.ndarray, np.ndarray, Bytes] | None:
    """(rec, spans: nodepool, job, found) of every row of the doExpansion records `part` (rec, _piece,
    _bs, _be) and their block; None when C does not take every record (a header the polars path
    read, records in two blocks, a body of another shape)."""
    if not COMPILED or part.is_empty() or "_bs" not in part.columns or part["_bs"].null_count():
        return None
    if part["_piece"].n_unique() != 1:
        return None
    data = blocks[part["_piece"][0]]
    got = _scan.expansions(data, *[np.ascontiguousarray(part[c].to_numpy(), np.int32) for c in ("rec", "_bs", "_be")])
    if got[2]:
        return None
    return np.frombuffer(got[0], dtype=np.int32), np.frombuffer(got[1], dtype=np.int32).reshape(-1, 6), data


def merged_rows(part: pl.DataFrame, blocks: tuple[Bytes, ...], templated: Sequence[object] | None,
                records: pl.DataFrame) -> RawRows | None:
    """The expansions bucket's templated rows (`templated`, one block's) with the doExpansion records
    `part` read in C, in record order as rows_of orders them; None: the handler's way."""
    if templated is not None and (len(templated) != 1 or not isinstance(templated[0], RawRows)):
        return None
    got = expansion_scan(part, blocks)
    if got is None:
        return None
    rec_of, spans_of, data = got
    if templated is not None:
        raw = templated[0]
        assert isinstance(raw, RawRows)
        if raw.data is not data:
            return None
        base, all_rec, codes = raw.bucket, raw.rec, raw.codes
        old_rows, old_spans, lists = raw.rows, raw.spans, raw.got[2]
    else:
        base = next(b for b in fill_plan()[0] if b.table == "expansions")
        all_rec, codes = records["rec"].to_numpy(), records["_code"].to_numpy().astype(np.int32)
        old_rows, old_spans = np.zeros(0, np.int64), np.zeros((0, 2 * len(base.columns)), np.int32)
        lists = tuple((b"", b"") for _ in base.lists)
    position = np.searchsorted(all_rec, rec_of)
    if (position >= len(all_rec)).any() or (all_rec[np.minimum(position, len(all_rec) - 1)] != rec_of).any():
        return None
    bucket, slots = _bucket(base)
    n_old, n = len(old_rows), len(old_rows) + len(rec_of)
    spans = np.full((n, 2 * len(bucket.columns)), -1, dtype=np.int32)
    spans[:n_old, :old_spans.shape[1]] = old_spans
    for i, slot in enumerate(slots):
        spans[n_old:, 2 * slot:2 * slot + 2] = spans_of[:, 2 * i:2 * i + 2]
    rows = np.concatenate([old_rows, position]).astype(np.int64)
    order = np.argsort(all_rec[rows], kind="stable")  # the templated rows first within a record: none share one
    # a list's values stay in their order: the new rows have none (count -1)
    counts = [np.concatenate([np.frombuffer(c, dtype=np.int32), np.full(len(rec_of), -1, np.int32)])[order]
              for c, _ in lists]
    new_lists = [(c.tobytes(), values) for c, (_, values) in zip(counts, lists)]
    got_rows = (np.arange(n, dtype=np.int32).tobytes(), np.ascontiguousarray(spans[order]).tobytes(), new_lists)
    return RawRows(bucket, got_rows, data, rows[order], all_rec, codes)
