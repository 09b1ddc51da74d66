"""The Scheduling Tables an RM prints when it starts (family pool_tables), read by the compiled
scanner (`_scan.pools`, csrc/pools.c): one row per table row of each nodepool block, as the
grammar (grammars/rmlog.lark `pool_tables`, read by lark) gives them. A record of another shape
goes to the grammar, which stays the reference and decides.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.scan import block_lines, list_series, not_taken
from replay.parsing.scanned import string_views
from replay.parsing.scanned import COMPILED

if COMPILED:
    from replay.parsing import _scan

_SPANS = ("nodepool", "depth", "table_row")  # _scan.pools's spans, in its order
_BODY = "Scheduling Tables:"  # the record's own line: anything after it is the grammar's to read


def pool_rows(part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of the pool_tables records `part` (rec, body): the scanner reads every record
    of the canonical shape and leaves the others (a body with more on its line, no continuation
    line, lines in two blocks, a line of another shape) to the grammar."""
    none = pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32})
    canonical = part.filter(pl.col("body").str.strip_chars_end(" ") == _BODY)
    lines = block_lines(canonical, cont) if COMPILED and canonical.height else None
    if lines is None:
        return none, part.select("rec")
    data = blocks[lines["_piece"][0]]
    raw_rec, raw_spans, raw_counts, raw_items, _ = _scan.pools(
        data, *[np.ascontiguousarray(lines[c].to_numpy(), np.int32) for c in ("rec", "_s", "_e")])
    rec = np.frombuffer(raw_rec, dtype=np.int32)
    spans = np.frombuffer(raw_spans, dtype=np.int32).reshape(-1, 2 * len(_SPANS))
    cols = [pl.Series("rec", rec).cast(pl.UInt32)]
    cols += [string_views(data, spans[:, 2 * i], spans[:, 2 * i + 1], name) for i, name in enumerate(_SPANS)]
    counts = np.frombuffer(raw_counts, dtype=np.int32)
    items = np.frombuffer(raw_items, dtype=np.int32).reshape(-1, 2)
    values = string_views(data, items[:, 0], items[:, 1], "item").to_arrow()
    offsets = np.concatenate(([0], np.cumsum(np.maximum(counts, 0))))
    cols.append(list_series(values, offsets, "values_list", counts >= 0))
    return pl.DataFrame(cols), not_taken(part, rec)
