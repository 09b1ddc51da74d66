"""The Scheduling Tables an RM prints when it starts (family pool_tables), read by the compiled
scanner (`_scan.pools`, csrc/pools.c): one row per table row of each nodepool block, as the
grammar (grammars/rmlog.lark `pool_tables`, read by lark) gives them. A record of another shape
goes to the grammar, which stays the reference and decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.scan import block_lines, not_taken, reader_frame
from replay.parsing.compiled import COMPILED

if COMPILED:
    from replay.parsing import _scan

SPANS = ("nodepool", "depth", "table_row")  # _scan.pools's spans, in its order
_BODY = "Scheduling Tables:"  # the record's own line: anything after it is the grammar's to read


@dataclass(frozen=True)
class PoolRows:
    """`_scan.pools`'s rows of one block, not yet a frame (the pool_tables table typed in C,
    replay.parsing.columns_small, reads them; `frame` gives the reference path's rows)."""

    got: tuple[bytes, bytes, bytes, bytes, bytes]
    data: Bytes

    def frame(self) -> pl.DataFrame | None:
        """The rows as the reference path takes them (None: no row)."""
        rows = pool_frame(self.got, self.data)
        return rows if rows.height else None


def pool_scan(part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]) -> PoolRows | None:
    """`_scan.pools` over the canonical records of `part` (rec, body); None: none the scanner reads."""
    canonical = part.filter(pl.col("body").str.strip_chars_end(" ") == _BODY)
    lines = block_lines(canonical, cont) if COMPILED and canonical.height else None
    if lines is None:
        return None
    data = blocks[lines["_piece"][0]]
    got = _scan.pools(data, *[np.ascontiguousarray(lines[c].to_numpy(), np.int32) for c in ("rec", "_s", "_e")])
    return PoolRows(got, data)


def pool_frame(got: Any, data: Bytes) -> pl.DataFrame:
    """`_scan.pools`'s rows as a frame: rec, the SPANS as text, values_list (text items)."""
    return reader_frame(got, data, SPANS, "values_list")


def pool_rows(part: pl.DataFrame, cont: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(rows, failures) of the pool_tables records `part` (rec, body): the scanner reads every record
    of the canonical shape and leaves the others (a body with more on its line, no continuation
    line, lines in two blocks, a line of another shape) to the grammar."""
    got = pool_scan(part, cont, blocks)
    if got is None:
        return pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32}), part.select("rec")
    return pool_frame(got.got, got.data), not_taken(part, np.frombuffer(got.got[0], dtype=np.int32))


def taken_all(part: pl.DataFrame, rows: PoolRows) -> bool:
    """Whether the scanner gave rows for every record of `part` (else the records go the reference way)."""
    return bool(part["rec"].is_in(np.frombuffer(rows.got[0], dtype=np.int32)).all())
