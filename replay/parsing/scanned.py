"""The compiled scan of a chunk (`replay.parsing._scan`): its lines, its record headers and its records.

`scan_records` gives the frames `records.split_lines` + `records.find_records` give
(tests/integration/test_engines.py, tests/unit/test_scan_records.py) in one pass over the bytes,
without copying any text: every string column is an Arrow string view into the chunk's bytes. The
records frame holds each header's numbers (time, thread id, JID as an integer, METHOD class, read
in C) and spans, and its family (`_fam`, the route prefixes compiled by replay.parsing.prefixes),
but no text: `with_strings` builds a text column for the rows that read it. Lines the scanner is
not sure of (another header layout, non-ASCII text) go through the polars path, so both agree on
them; a chunk with such a header carries every text column from the start.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.chunks import Bytes, Piece
from replay.parsing.families import FAMILY_CODE, GENERIC, ROUTES
from replay.parsing.prefixes import Unsupported, compile_prefix
from replay.parsing.records import HEADER_FIELDS, Lines, Records, fast_headers, parse_ts, repair_utf8
from replay.parsing.tables import FIXED_METHODS, RESERVE_METHODS, Schema, series_from_arrow

try:
    from replay.parsing import _scan
    COMPILED = True
except ImportError:  # pragma: no cover - built by `pip install`; without a compiler, polars does it all
    COMPILED = False
_K_HEADER, _K_MAYBE = 1, 2
FIELD_COLS = {"level": 3, "component": 5, "cls": 7, "jid": 9, "tid": 11, "method": 13, "body": 15}
_TS_NONE = np.iinfo(np.int64).min


def string_views(data: Bytes, starts: np.ndarray, ends: np.ndarray, name: str) -> pl.Series:
    """Zero-copy string column over `data` (one Arrow string view per span; a span the scanner
    marked absent, start -1, is null)."""
    missing = np.flatnonzero(starts < 0) if len(starts) and starts.min() < 0 else ()
    if len(missing):
        starts, ends = np.maximum(starts, 0), np.maximum(ends, 0)
    views = _scan.views(data, np.ascontiguousarray(starts, np.int32), np.ascontiguousarray(ends, np.int32))
    arr = pa.Array.from_buffers(pa.string_view(), len(starts), [None, pa.py_buffer(views), pa.py_buffer(data)])
    col = series_from_arrow(arr).alias(name)
    # nulls by scatter, not by an Arrow validity bitmap: polars exports a foreign string-view column
    # with a bitmap to arrays that still hold `data`, so compact() kept every chunk's bytes alive
    # (+110 MB on i_mega24)
    return col.scatter(missing, None) if len(missing) else col


@lru_cache(maxsize=1)
def _route_table() -> tuple[Any, ...]:
    """ROUTES for `_scan.route`: per (class, METHOD), its compiled prefixes in order (None: some
    prefix is outside the compiled subset, so polars routes that group)."""
    table = []
    for (cls, method), routes in ROUTES.items():
        try:
            progs = tuple((p.code, p.sets, int(p.anchored), FAMILY_CODE[r.family])
                          for r in routes for p in [compile_prefix(r.prefix)])
        except Unsupported:
            progs = None
        table.append((f"{cls}\0{method}".encode(), progs))
    return tuple(table)


def _timestamps(stamps: np.ndarray, odd_text: Callable[[np.ndarray], pl.Series]) -> pl.Series:
    """The scanner's epoch milliseconds; the dates it left alone (leap seconds, no such day) are
    read by polars from their text (`odd_text` of their rows), so every timestamp is the one the
    polars path gives."""
    ts = pl.Series("ts", stamps).cast(pl.Datetime("ms"))
    odd = np.flatnonzero(stamps == _TS_NONE)
    if odd.size:
        ts = ts.scatter(odd, pl.select(parse_ts(pl.lit(odd_text(odd)))).to_series())
    return ts


# the scanner's own METHOD classes (columns.Records.method): counting methods of FIXED_SHARE, of RESERVE
_METHOD_CLASS = np.array([*[1] * len(FIXED_METHODS), *[2] * len(RESERVE_METHODS), 0], dtype=np.uint8)
_METHODS = tuple(m.encode() for m in (*FIXED_METHODS, *RESERVE_METHODS))


def _numbers(data: Bytes, head: np.ndarray, text: Callable[[str, np.ndarray], pl.Series]) -> list[pl.Series]:
    """tid (UInt32), `_job` (the JID as Int64) and `_mc` (the METHOD's class) of canonical headers, read
    by the scanner; a JID or thread id of another shape is cast by polars from its text (`text`)."""
    jid, jst, tid, tst, meth = _scan.numbers(data, head, _METHODS)
    out = []
    for name, field, raw, state, dtype, kind in (("tid", "tid", tid, tst, pl.UInt32, pa.uint32()),
                                                 ("_job", "jid", jid, jst, pl.Int64, pa.int64())):
        how = np.frombuffer(state, dtype=np.uint8)  # 0 null, 1 read, 2 for polars to read
        odd = np.flatnonzero(how == 2)
        # the nulls as an Arrow validity bitmap over the scanner's values: no copy, no scatter
        nulls = int(len(how) - np.count_nonzero(how))
        valid = pa.py_buffer(np.packbits(how != 0, bitorder="little")) if nulls else None
        values = series_from_arrow(pa.Array.from_buffers(kind, len(how), [valid, pa.py_buffer(raw)],
                                                         null_count=nulls)).alias(name)
        if odd.size:
            values = values.scatter(odd, text(field, odd).cast(dtype, strict=False))
        out.append(values)
    out.append(pl.Series("_mc", _METHOD_CLASS[np.frombuffer(meth, dtype=np.int8)]))
    return out


def _piece(piece: Piece) -> tuple[Bytes, pl.DataFrame, pl.DataFrame, np.ndarray, pl.DataFrame, int]:
    """(bytes, lines, canonical headers, their spans, other headers, bad UTF-8 lines) of one piece.
    The canonical headers' frame holds their numbers and spans only: their text columns are built
    where they are read (`with_strings`)."""
    data, bad = repair_utf8(piece.data)
    n, raw_cols, raw_ts = _scan.lines(data)
    cols = np.frombuffer(raw_cols, dtype=np.int32).reshape(n, 17)
    kind = cols[:, 2]
    lines = pl.DataFrame({
        "file": pl.Series(np.full(n, piece.file, dtype=np.uint16)),
        "line": pl.Series(np.arange(piece.first_line, piece.first_line + n, dtype=np.uint32)),
        "text": string_views(data, cols[:, 0], cols[:, 1], "text"),
        "_s": pl.Series(cols[:, 0]), "_e": pl.Series(cols[:, 1]),  # where the line lies, for schedule()
    })
    at = np.flatnonzero(kind == _K_HEADER)
    head = np.ascontiguousarray(cols[at])
    text: Callable[[str, np.ndarray], pl.Series] = lambda name, rows: _field(data, head[rows], name)  # noqa: E731
    canonical = pl.DataFrame([
        pl.Series("_i", at.astype(np.uint32)),
        _timestamps(np.frombuffer(raw_ts, dtype=np.int64)[at], partial(text, "ts_text")),
        *_numbers(data, head, text),
        pl.Series("_bs", head[:, 15]), pl.Series("_be", head[:, 16]),  # where the body lies, for templates
        pl.Series("_fam", np.frombuffer(_scan.route(data, head, _route_table(), FAMILY_CODE[GENERIC]),
                                        dtype=np.int32)),
    ])
    maybe = np.flatnonzero(kind == _K_MAYBE)
    others = pl.DataFrame()
    if maybe.size:
        got = fast_headers(lines[maybe.tolist()]).with_columns(pl.Series("_i", maybe.astype(np.uint32)))
        others = got.filter(pl.col("ts").is_not_null()).rename({"ts": "ts_text"})
    return data, lines, canonical, head, others, bad


def _field(data: Bytes, head: np.ndarray, name: str) -> pl.Series:
    """The header field `name` (or ts_text) of canonical headers, from their spans."""
    if name == "ts_text":
        return string_views(data, head[:, 0], head[:, 0] + 24, name)
    c = FIELD_COLS[name]
    return string_views(data, head[:, c], head[:, c + 1], name)


@dataclass(frozen=True)
class Scanned(Records):
    """The scanner's records: `records` holds no text column of the headers (only numbers and
    spans); `with_strings` builds the columns a reader asks for, from `heads` (per record, the
    scanner's int32 line spans, `replay/parsing/csrc/lines.c`) and `blocks`."""

    heads: np.ndarray | None = None


# the text columns `with_strings` builds (tid is read as a number, as the polars path casts it)
_TEXT_COLUMNS = ("ts_text", *[f for f in FIELD_COLS if f != "tid"])


def with_strings(recs: Records, frame: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """`frame` (rows of `recs.records`, with `rec`) with the header text columns `names` it lacks."""
    todo = [n for n in names if n not in frame.columns]
    if not todo:
        return frame
    return frame.with_columns(header_strings(recs, frame["rec"].to_numpy(), todo))


def header_strings(recs: Records, rec: np.ndarray, names: Sequence[str]) -> list[pl.Series]:
    """The header text columns `names` of the records `rec` (zero-copy views into the blocks)."""
    if not isinstance(recs, Scanned) or recs.heads is None:
        raise ValueError("header_strings: these records have their text columns already")
    head = recs.heads[rec]
    piece = recs.records["_piece"].to_numpy()[rec]
    if not len(rec) or (piece == piece[0]).all():
        data = recs.blocks[int(piece[0])] if len(rec) else b""
        return [_field(data, head, name) for name in names]
    out = []
    for name in names:  # rows in several blocks: one views array over all of them (rare: a chunk across files)
        lo, hi = (0, 0) if name == "ts_text" else (FIELD_COLS[name], FIELD_COLS[name] + 1)
        starts, ends = head[:, lo], head[:, hi] + (24 if name == "ts_text" else 0)
        views = np.zeros((len(rec), 4), dtype=np.int32)
        for p in np.unique(piece).tolist():
            at = np.flatnonzero(piece == p)
            got = np.frombuffer(_scan.views(recs.blocks[p], np.ascontiguousarray(starts[at]),
                                            np.ascontiguousarray(ends[at])), dtype=np.int32).reshape(-1, 4)
            views[at] = got
            views[at[got[:, 0] > 12], 2] = p  # a long value's buffer: its block
        arr = pa.Array.from_buffers(pa.string_view(), len(rec), [None, pa.py_buffer(views),
                                                                 *[pa.py_buffer(b) for b in recs.blocks]])
        out.append(series_from_arrow(arr).alias(name))
    return out


def full_records(recs: Records) -> pl.DataFrame:
    """`recs.records` with every header text column, as the polars path lays them out."""
    frame = with_strings(recs, recs.records, _TEXT_COLUMNS)
    order = ["rec", "file", "line", *[f for f in HEADER_FIELDS if f != "ts"], "ts", "ts_text"]
    return frame.select(*order, *[c for c in frame.columns if c not in order])


def scan_records(pieces: list[Piece]) -> tuple[Lines, Records]:
    """Every line and every record of the pieces (the compiled equivalent of the polars path)."""
    line_frames: list[pl.DataFrame] = []
    record_frames: list[pl.DataFrame] = []
    head_arrays: list[np.ndarray] = []
    blocks: list[Bytes] = []
    bad = offset = 0
    eager = False
    parts = [_piece(piece) for piece in pieces if piece.data]
    # a header only the polars path reads (another layout, non-ASCII): the chunk's records carry their
    # text columns from the start, as polars read them
    eager = any(others.height for *_, others, _ in parts)
    for data, lines, canonical, head, others, bad_lines in parts:
        if eager:
            canonical = canonical.drop("_job", "_mc").with_columns(
                _field(data, head, name) for name in _TEXT_COLUMNS)
        frames = [canonical.with_columns(_piece=pl.lit(len(blocks), pl.UInt16))]
        if others.height:
            frames.append(others.with_columns(parse_ts(pl.col("ts_text")).alias("ts"),
                                              pl.col("tid").cast(pl.UInt32, strict=False)))
        heads = pl.concat(frames, how="diagonal") if len(frames) > 1 else frames[0]
        if len(frames) > 1:
            heads = heads.sort("_i")
        record_frames.append(heads.with_columns(pl.col("_i") + offset))
        head_arrays.append(head)
        blocks.append(data)
        line_frames.append(lines.with_columns(_piece=pl.lit(len(blocks) - 1, pl.UInt16)))
        offset += lines.height
        bad += bad_lines
    if not line_frames:
        empty = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String})
        return Lines(empty, 0), Records(_empty_records(), empty.with_columns(rec=pl.lit(0, pl.UInt32)).select(
            "rec", "file", "line", "text"), empty)
    frame = pl.concat(line_frames)
    heads = pl.concat(record_frames)
    return Lines(frame, bad), _stitch(frame, heads, tuple(blocks), None if eager else np.concatenate(head_arrays))


def _stitch(frame: pl.DataFrame, heads: pl.DataFrame, blocks: tuple[Bytes, ...],
            spans: np.ndarray | None) -> Records:
    """Records from the header rows; every other line goes to the record before it (`spans`: the
    headers' spans, when their text columns are left to `with_strings`)."""
    # rows are taken by index (frame[idx]): no polars query per step, this runs once per chunk
    is_header = np.zeros(frame.height, dtype=bool)
    at = heads["_i"].to_numpy()
    is_header[at] = True
    rec = np.cumsum(is_header, dtype=np.int64) - 1
    records = heads.with_row_index("rec").hstack(frame[["file", "line"]][at])
    fields = [] if spans is not None else [f for f in HEADER_FIELDS if f != "ts"]
    numbers = ["tid", "_job", "_mc"] if spans is not None else []
    records = records[["rec", "file", "line", *fields, *numbers, "ts", *([] if spans is not None else ["ts_text"]),
                       "_piece", "_bs", "_be", "_fam"]]
    others = np.flatnonzero(~is_header)
    orphan = int(np.searchsorted(rec[others], 0))  # the lines before the first header (a log cut mid-record)
    cont = frame[others]
    orphans = cont[:orphan][["file", "line", "text"]]
    continuations = cont[orphan:].hstack([pl.Series("rec", rec[others[orphan:]], dtype=pl.UInt32)])
    return Scanned(records, continuations[["rec", "file", "line", "text", "_piece", "_s", "_e"]], orphans, blocks,
                   spans)


def _empty_records() -> pl.DataFrame:
    schema: Schema = {"rec": pl.UInt32, "file": pl.UInt16, "line": pl.UInt32,
                      **{f: pl.String for f in HEADER_FIELDS if f != "ts"}, "ts": pl.Datetime("ms"),
                      "ts_text": pl.String}
    return pl.DataFrame(schema=schema).with_columns(pl.col("tid").cast(pl.UInt32))
