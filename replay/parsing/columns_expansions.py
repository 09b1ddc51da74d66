"""The doExpansion rows read in C (`_scan.expansions`: one row per listed job, one with no job for an
empty list) and put among the expansions bucket's templated rows, so that the chunk's expansions
table is typed in C like the other plain tables (replay.parsing.columns `plain_table`). The polars
handler (replay.parsing.fast `_explode_expansions`) stays the reference and takes any chunk this
module does not take whole.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.joined import join_rows, record_positions, widen_bucket
from replay.parsing.scan import RawRows, fill_plan
from replay.parsing.compiled import COMPILED

if COMPILED:
    from replay.parsing import _scan

FAMILY = "do_expansion"
_FIELDS = ("nodepool", "job_id", "found")  # _scan.expansions's spans, in its order


def expansion_scan(part: pl.DataFrame, blocks: tuple[Bytes, ...]) -> tuple[np.ndarray, np.ndarray, Bytes] | None:
    """(rec, spans: nodepool, job, found) of every row of the doExpansion records `part` (rec, _piece,
    _bs, _be) and their block; None when C does not take every record (a header the polars path
    read, records in two blocks, a body of another shape)."""
    if not COMPILED or part.is_empty() or "_bs" not in part.columns or part["_bs"].null_count():
        return None
    piece = part["_piece"].to_numpy()  # one block, compared in numpy (polars' n_unique is a query)
    if part["_piece"].null_count() or (piece != piece[0]).any():
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
    old = None if templated is None else templated[0]
    assert old is None or isinstance(old, RawRows)
    if old is None:
        base = next(b for b in fill_plan()[0] if b.table == "expansions")
        every, codes = records["rec"].to_numpy(), records["_code"].to_numpy().astype(np.int32)
    elif old.data is not data:
        return None
    else:
        base, every, codes = old.bucket, old.rec, old.codes
    at = record_positions(every, rec_of)
    if at is None:
        return None
    spans = {name: spans_of[:, 2 * i:2 * i + 2] for i, name in enumerate(_FIELDS)}
    return join_rows(old, widen_bucket(base, FAMILY, _FIELDS), at, spans, {}, data, every, codes)
