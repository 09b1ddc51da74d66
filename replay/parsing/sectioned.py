"""The DEBUG schedule's job rows (sched_sections, read by `_scan.sections`) joined to the templated
rows of the `jobs` bucket, so that the chunk's `jobs` table is typed in C (replay.parsing.columns)
instead of going the reference way because one of its families came from another path."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.families import FAMILY_CODE
from replay.parsing.joined import join_rows, record_positions, widen_bucket
from replay.parsing.scan import SECTION_SPANS, RawRows, section_spans

FAMILY = "sched_sections"


def with_sections(raw: Sequence[object], part: pl.DataFrame, cont: pl.DataFrame,
                  blocks: tuple[Bytes, ...]) -> RawRows | None:
    """`raw` (one block's templated `jobs` rows) and the rows `_scan.sections` reads from `part`'s
    records, as one `RawRows` in record order; None when the scanner does not take every record
    of `part` from the same block (then the family goes its own way, and the chunk's `jobs` the
    reference way, as before)."""
    old = raw[0] if len(raw) == 1 else None
    if not isinstance(old, RawRows):
        return None
    got = section_spans(part, cont, blocks)
    if got is None or got[0] is not old.data:
        return None
    _, srec, sspans = got
    if not np.array_equal(np.unique(srec), np.sort(part["rec"].to_numpy())):
        return None  # some records the scanner refused: the polars path reads those
    where = record_positions(old.rec, srec)
    if where is None or (old.codes[where] != FAMILY_CODE[FAMILY]).any():
        return None
    spans = {name: sspans[:, 2 * i:2 * i + 2] for i, name in enumerate(SECTION_SPANS)}
    return join_rows(old, widen_bucket(old.bucket, FAMILY, SECTION_SPANS), where, spans, {}, old.data, old.rec,
                     old.codes)
