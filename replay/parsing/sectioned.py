"""The DEBUG schedule's job rows (sched_sections, read by `_scan.sections`) joined to the templated
rows of the `jobs` bucket, so that the chunk's `jobs` table is typed in C (replay.parsing.columns)
instead of going the reference way because one of its families came from another path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, TARGETS
from replay.parsing.chunks import Bytes
from replay.parsing.scan import SECTION_SPANS, Bucket, RawRows, section_spans

FAMILY = "sched_sections"


def with_sections(raw: Sequence[object], part: pl.DataFrame, cont: pl.DataFrame,
                  blocks: tuple[Bytes, ...]) -> RawRows | None:
    """`raw` (one block's templated `jobs` rows) and the rows `_scan.sections` reads from `part`'s
    records, as one `RawRows` in record order; None when the scanner does not take every record
    of `part` from the same block (then the family goes its own way, and the chunk's `jobs` the
    reference way, as before)."""
    old = raw[0] if len(raw) == 1 else None
    if not isinstance(old, RawRows) or old.bucket.lists:
        return None
    got = section_spans(part, cont, blocks)
    if got is None or got[0] is not old.data:
        return None
    _, srec, sspans = got
    if not np.array_equal(np.unique(srec), np.sort(part["rec"].to_numpy())):
        return None  # some records the scanner refused: the polars path reads those
    where = np.searchsorted(old.rec, srec)
    if (where >= len(old.rec)).any() or not np.array_equal(old.rec[where], srec):
        return None
    code = FAMILY_CODE[FAMILY]
    if (old.codes[where] != code).any():
        return None
    columns = (*old.bucket.columns, *[c for c in SECTION_SPANS if c not in old.bucket.columns])
    spans = np.full((len(old.rows) + len(srec), 2 * len(columns)), -1, dtype=np.int32)
    spans[:len(old.rows), :old.spans.shape[1]] = old.spans
    for i, name in enumerate(SECTION_SPANS):
        j = columns.index(name)
        spans[len(old.rows):, 2 * j:2 * j + 2] = sspans[:, 2 * i:2 * i + 2]
    at = np.concatenate((old.rows, where))
    order = np.argsort(at, kind="stable")  # a record's rows keep their order
    (target,) = TARGETS[FAMILY]
    consts = dict(old.bucket.consts)
    for key, value in target.consts.items():
        per = list(consts.get(key, (None,) * len(FAMILY_NAMES)))
        per[code] = value
        consts[key] = tuple(per)
    bucket = Bucket(old.bucket.table, columns, (), (), tuple(consts.items()))
    rows = np.arange(len(at), dtype=np.int32).tobytes()
    return RawRows(bucket, (rows, np.ascontiguousarray(spans[order]).tobytes(), ()), old.data, at[order], old.rec,
                   old.codes)
