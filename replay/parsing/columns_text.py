"""The messages table typed in C: every generic record kept whole (header fields and text, the body
joined with its continuation lines), its columns laid out as Arrow buffers from the scanner's spans.

The reference is `records.full_bodies` then `assemble.rows_of` and `conform`. A record's text is
its body, a newline and each continuation line joined by newlines, trimmed: in the chunk's bytes
that is one span, from the body's start to the end of its last continuation line, when every line
of the record follows the one before it after a single newline (and the body runs to its line's
end). A chunk where that does not hold for some generic record, or where a trimmed text would
start or end with a non-ASCII byte, or whose records carry their text columns already (another
header layout), or whose generic records lie in two blocks, goes the reference way.

`blank_lines` reads the same way which continuation lines are blank, for the unparsed table.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.built import Built
from replay.parsing.chunks import Bytes
from replay.parsing.arrays import numeric, table_of, typed_spans
from replay.parsing.columns import Unframed, compiled_buckets
from replay.parsing.columns_plain import Records, where_columns
from replay.parsing.records import Records as Scan
from replay.parsing.records import full_bodies
from replay.parsing.families import FAMILY_CODE, GENERIC
from replay.parsing.compiled import COMPILED
from replay.parsing.scanned import FIELD_COLS, Scanned, with_strings

if COMPILED:
    from replay.parsing import _scan

BUCKET = "messages"
UNEXPECTED = "_unexpected_lines"  # columns.COMPILED_TABLES's key of the unparsed lines read from spans
_HEADER = {name: FIELD_COLS[name] for name in ("level", "component", "cls", "jid", "method")}  # start; end next
_LINE_END, _BODY_START, _BODY_END = 1, 15, 16  # csrc/lines.c's columns of a header line


@dataclass(frozen=True)
class MessageRows:
    """A chunk's generic records, not yet a frame: their numbers `rec` and the scan they come from."""

    rec: np.ndarray
    recs: Scan

    def frame(self) -> pl.DataFrame | None:
        """The rows as the reference path takes them (records.full_bodies)."""
        part = with_strings(self.recs, self.recs.records[self.rec.tolist()].select("rec"), ["body"])
        return full_bodies(part, self.recs.continuations)


def take_generic(rec: np.ndarray, codes: np.ndarray, recs: Scan) -> tuple[MessageRows | None, np.ndarray]:
    """The generic records among `rec` (record numbers, in log order; `codes`: their family codes)
    kept unframed for the C builder, and which of `rec` they are; (None, none): the reference way
    from the start (the table is not compiled, or the records carry their text columns already)."""
    if BUCKET not in compiled_buckets() or not isinstance(recs, Scanned) or recs.heads is None:
        return None, np.zeros(len(rec), dtype=bool)
    generic = codes == FAMILY_CODE[GENERIC]
    if not generic.any():
        return None, generic
    return MessageRows(rec[generic].astype(np.int64), recs), generic


def build(raw: Mapping[str, Sequence[Unframed]], recs: Records | None, framed: Collection[str] = ()) -> Built:
    """The messages table of one chunk from its unframed generic records (the reference's frame when
    the C code does not take them; `framed`: unused, the bucket has no other rows)."""
    out = Built()
    parts = [p for p in raw.get(BUCKET, ()) if isinstance(p, MessageRows)]
    if not parts:
        return out
    got = messages(parts[0], recs) if len(parts) == 1 and recs is not None else None
    if got is None:
        frames = [f for f in (p.frame() for p in parts) if f is not None]
        out.frames[BUCKET] = [pl.concat(frames, how="diagonal_relaxed") if len(frames) > 1 else frames[0]]
    else:
        out.tables["messages"] = got
    return out


def text_spans(rows: MessageRows) -> tuple[Bytes, np.ndarray] | None:
    """(the block, int32 (start, end) per record of its untrimmed text); None: the records lie in two
    blocks, or a record's lines are not one span of the block."""
    scan = rows.recs
    assert isinstance(scan, Scanned) and scan.heads is not None
    rec = rows.rec
    piece = scan.records["_piece"].to_numpy()[rec]
    if not len(rec) or (piece != piece[0]).any():
        return None
    data = scan.blocks[int(piece[0])]
    head = scan.heads[rec]
    spans = np.ascontiguousarray(head[:, [_BODY_START, _BODY_END]], dtype=np.int32)
    if (spans[:, 0] < 0).any():
        return None
    cont = scan.continuations
    c_rec = cont["rec"].to_numpy()
    mine = np.zeros(scan.records.height, dtype=bool)
    mine[rec] = True
    take = np.flatnonzero(mine[c_rec])
    if not take.size:
        return data, spans
    c_rec, c_piece = c_rec[take], cont["_piece"].to_numpy()[take]
    c_s, c_e = cont["_s"].to_numpy()[take].astype(np.int64), cont["_e"].to_numpy()[take].astype(np.int64)
    at = np.searchsorted(rec, c_rec)  # the message each continuation line belongs to
    first = np.r_[True, c_rec[1:] != c_rec[:-1]]
    last = np.r_[c_rec[1:] != c_rec[:-1], True]
    before = np.where(first, head[at, _LINE_END], np.r_[0, c_e[:-1]])  # where the line before it ends
    raw = np.frombuffer(data, dtype=np.uint8)
    newline = (before >= 0) & (before < len(raw)) & (c_s == before + 1)
    newline[newline] = raw[before[newline]] == ord("\n")
    whole = head[at[first], _BODY_END] == head[at[first], _LINE_END]
    if (c_piece != piece[0]).any() or not newline.all() or not whole.all():
        return None
    spans[at[last], 1] = c_e[last]
    return data, spans


def messages(rows: MessageRows, recs: Records) -> pa.Table | None:
    """The messages table of one chunk, typed in C (`_scan.trim`, `_scan.typed`); None: the reference way."""
    got = text_spans(rows)
    if got is None:
        return None
    data, spans = got
    trimmed = _scan.trim(data, spans)
    if trimmed is None:
        return None
    scan = rows.recs
    assert isinstance(scan, Scanned) and scan.heads is not None
    rec = rows.rec
    head = scan.heads[rec]
    names = list(_HEADER)
    columns = [head[:, [_HEADER[n], _HEADER[n] + 1]] for n in names]
    typed = typed_spans(data, [*columns, np.frombuffer(trimmed, dtype=np.int32).reshape(-1, 2)], [pl.String] * 6)
    if typed is None:
        return None
    tids = scan.records["tid"]
    tid = (numeric(pa.uint32(), np.ascontiguousarray(tids.to_numpy()[rec], np.uint32)) if not tids.null_count()
           else tids.gather(pl.Series(rec)).to_arrow())  # by index in numpy: a gather is a query
    return table_of("messages", {**dict(zip([*names, "text"], typed)), "tid": tid, **where_columns(recs, rec)})


def blank_lines(recs: Scan, at: np.ndarray) -> np.ndarray | None:
    """Which continuation lines `at` (rows of `recs.continuations`) are blank, read from their spans
    (`_scan.trim`); None: the reference's strip_chars decides (no spans, a non-ASCII edge)."""
    cont = recs.continuations
    if UNEXPECTED not in compiled_buckets() or "_s" not in cont.columns or not recs.blocks:
        return None
    piece = cont["_piece"].to_numpy()[at]
    spans = np.ascontiguousarray(np.stack([cont["_s"].to_numpy()[at], cont["_e"].to_numpy()[at]], axis=1),
                                 dtype=np.int32)
    blank = np.zeros(len(at), dtype=bool)
    for p in np.unique(piece).tolist():
        mine = np.flatnonzero(piece == p)
        trimmed = _scan.trim(recs.blocks[p], np.ascontiguousarray(spans[mine]))
        if trimmed is None:
            return None
        got = np.frombuffer(trimmed, dtype=np.int32).reshape(-1, 2)
        blank[mine] = got[:, 0] == got[:, 1]
    return blank
