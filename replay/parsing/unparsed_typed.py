"""The unparsed table of a chunk whose only unparsed lines are lines inside single-line records
(unparsed.unexpected_continuations), built from the scanner's spans of those lines as Arrow arrays
(replay.parsing.arrays), not framed by polars.

The reference is `unparsed.unparsed_table` over `pipeline._unexpected`'s rows. A chunk with any other
unparsed line (a damaged record, a line before the first record, a record the grammar rejected or no
route knows), or with bad UTF-8, or whose lines have no spans or lie in two blocks, or where `_scan.typed`
refuses a text, goes the reference way.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.arrays import names_column, numeric, table_of, typed_spans
from replay.parsing import columns_text
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, MULTILINE
from replay.parsing.records import STAMPED
from replay.parsing.records import Records as Scan
from replay.parsing.scanned import Scanned, with_strings
from replay.parsing.unparsed import line_cycles

# per family code (-1, no family, last): whether its records are single-line (a table, not np.isin's sort)
_SINGLE = np.ones(len(FAMILY_NAMES) + 1, dtype=bool)
_SINGLE[[FAMILY_CODE[f] for f in MULTILINE]] = False


def unexpected_lines(records: pl.DataFrame, recs: Scan) -> tuple[np.ndarray, bool]:
    """The rows of `recs.continuations` inside single-line records of `records` or beginning with a
    date (records.STAMPED) inside any of them, and whether the blank ones are left out already
    (read from spans, `columns_text.blank_lines`; else the reference's strip_chars decides)."""
    owner = recs.continuations["rec"].to_numpy()
    codes = records["_code"].to_numpy()
    if records.height == recs.records.height:  # every record: a record's number is its row
        hit = np.flatnonzero(_SINGLE[codes][owner] | stamped(recs))
    else:  # by record number (`records` lacks the damaged)
        single = np.zeros(recs.records.height, dtype=bool)
        kept = np.zeros(recs.records.height, dtype=bool)
        rec = records["rec"].to_numpy()
        single[rec], kept[rec] = _SINGLE[codes], True
        hit = np.flatnonzero(single[owner] | (kept[owner] & stamped(recs)))
    blank = columns_text.blank_lines(recs, hit) if hit.size else None
    return (hit, False) if blank is None else (hit[~blank], True)


def stamped(recs: Scan) -> np.ndarray:
    """Which continuation lines begin with a date (records.STAMPED), from their text or, on
    the scanner's records, from their bytes (the few that begin with a digit are checked; a
    third of the regex's time, and no polars query per chunk)."""
    cont = recs.continuations
    if isinstance(recs, Scanned) and recs.stamped is not None:  # found by `_scan.chunk` as it stitched them
        out = np.zeros(cont.height, dtype=bool)
        out[recs.stamped] = True
        return out
    spanned = {"_s", "_e", "_piece"} <= set(cont.columns) and not cont["_s"].null_count() + cont["_piece"].null_count()
    if "text" in cont.columns and not spanned:
        return cont["text"].str.contains(STAMPED).to_numpy()
    out = np.zeros(cont.height, dtype=bool)
    starts, ends, piece = cont["_s"].to_numpy(), cont["_e"].to_numpy(), cont["_piece"].to_numpy()
    for p in np.unique(piece).tolist():
        mine = np.flatnonzero((piece == p) & (ends - starts >= len(_STAMP)))
        data = np.frombuffer(recs.blocks[p], dtype=np.uint8)
        mine = mine[np.isin(data[starts[mine]], _DIGIT)]
        if mine.size:
            head = data[starts[mine, None] + np.arange(len(_STAMP))]
            out[mine] = np.all([np.isin(head[:, i], allowed) for i, allowed in enumerate(_STAMP)], axis=0)
    return out


# records.STAMPED byte by byte: the allowed bytes at each of the date's 12 positions
_DIGIT = np.frombuffer(b"0123456789", dtype=np.uint8)
_UPPER = np.frombuffer(bytes(range(ord("A"), ord("Z") + 1)), dtype=np.uint8)
_LOWER = np.frombuffer(bytes(range(ord("a"), ord("z") + 1)), dtype=np.uint8)
_STAMP = [{"9": _DIGIT, "A": _UPPER, "a": _LOWER}.get(c, np.frombuffer(c.encode(), dtype=np.uint8))
          for c in "99 Aaa 9999 "]


def unexpected_table(records: pl.DataFrame, recs: Scan, hit: np.ndarray, names: list[str],
                     last: bool) -> pa.Table | None:
    """The unparsed table of the continuation lines `hit` (unexpected_lines; none other unparsed in
    the chunk): file, line, text from their spans, the reason their record gives, the chunk cycle."""
    cont = recs.continuations
    piece = cont["_piece"].to_numpy()[hit]
    if not hit.size or (piece != piece[0]).any():
        return None
    file = cont["file"].to_numpy()[hit].astype(np.int64)
    line = cont["line"].to_numpy()[hit].astype(np.int64)
    key = (file << 32) + line
    if (np.diff(key) <= 0).any():  # not one row per line in log order: the reference sorts and dedups
        return None
    spans = np.stack([cont["_s"].to_numpy()[hit], cont["_e"].to_numpy()[hit]], axis=1).astype(np.int32)
    text = typed_spans(recs.blocks[int(piece[0])], [spans], [pl.String])
    if text is None:
        return None
    rec = cont["rec"].to_numpy()[hit]
    owners, at = np.unique(rec, return_inverse=True)
    heads = with_strings(recs, records.filter(pl.col("rec").is_in(pl.Series(owners).implode())).sort("rec"),
                         ["cls", "method"])
    if heads.height != len(owners):
        return None
    reasons = [None if cls is None or method is None else
               f"unexpected line inside a {cls}.{method} record (interleaved or wrapped output)"
               for cls, method in zip(heads["cls"].to_list(), heads["method"].to_list())]
    cycle = line_cycles(pl.DataFrame({"file": file, "line": line}), records, last)
    return table_of("unparsed", {
        "file": names_column(file, names), "line": numeric(pa.uint32(), line.astype(np.uint32)), "text": text[0],
        "reason": names_column(at, reasons),
        "cycle": numeric(pa.uint32(), cycle.fill_null(0).to_numpy(), cycle.is_not_null().to_numpy()),
    })
