"""The compiled scan of a chunk (`replay.parsing._scan`): its lines, its record headers and its records.

`scan_records` gives the frames `records.split_lines` + `records.find_records` give
(tests/integration/test_engines.py, tests/unit/test_scan_records.py) in one pass over the bytes,
without copying any text: every string column is an Arrow string view into the chunk's bytes. The
records frame holds each header's numbers (time, thread id, JID as an integer, METHOD class, read
in C) and spans, and its family (`_fam`, the route prefixes compiled by replay.parsing.prefixes),
but no text: `with_strings` builds a text column for the rows that read it. Lines the scanner is
not sure of (another header layout, non-ASCII text) go through the polars path, so both agree on
them; a chunk with such a header carries every text column from the start. Each frame is built
once per chunk from whole-chunk numpy columns (all pieces at once), without a polars query: a
parse makes one per chunk, and with small chunks the queries were most of the scan's fixed cost.
A chunk with no header, timestamp or number left to polars (nearly every chunk) is scanned, its
headers' numbers read, routed and stitched by one compiled call, `_scan.chunk`, with the GIL
released throughout, so two parse threads scan at once; Python only wraps its buffers
(`_whole_chunk`) and reads the lines the scanner was not sure of with the general regex. The piece
by piece path below reads the chunks where that finds a header.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.arrays import numeric
from replay.parsing.chunks import Bytes, Piece
from replay.parsing.compiled import COMPILED
from replay.parsing.families import FAMILY_CODE, GENERIC
from replay.parsing.header import HEADER_FIELDS
from replay.parsing.records import Lines, Records, fast_headers, parse_ts, repair_utf8
from replay.parsing.tables import FIXED_METHODS, RESERVE_METHODS, Schema, series_from_arrow

if COMPILED:
    from replay.parsing import _scan

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
    prefix is outside the compiled subset, so polars routes that group). Compiled once per build of
    the routes and their compiler, then read from disk (replay.parsing.route_table)."""
    from replay.parsing.route_table import route_table

    return route_table()


def _timestamps(stamps: np.ndarray, odd_text: Callable[[np.ndarray], pl.Series]) -> tuple[np.ndarray, np.ndarray]:
    """(epoch milliseconds, validity) of canonical headers: the scanner's; the dates it left alone
    (leap seconds, no such day) are read by polars from their text (`odd_text` of their rows), so
    every timestamp is the one the polars path gives."""
    valid = np.ones(len(stamps), dtype=bool)
    odd = np.flatnonzero(stamps == _TS_NONE)
    if odd.size:
        parsed = pl.select(parse_ts(pl.lit(odd_text(odd)))).to_series()
        stamps = stamps.copy()
        stamps[odd] = parsed.to_physical().fill_null(0).to_numpy()
        valid[odd] = parsed.is_not_null().to_numpy()
    return stamps, valid


# the scanner's own METHOD classes (columns.Records.method): counting methods of FIXED_SHARE, of RESERVE
_METHOD_CLASS = np.array([*[1] * len(FIXED_METHODS), *[2] * len(RESERVE_METHODS), 0], dtype=np.uint8)
_METHODS = tuple(m.encode() for m in (*FIXED_METHODS, *RESERVE_METHODS))


def _numbers(data: Bytes, head: np.ndarray, text: Callable[[str, np.ndarray], pl.Series]) -> list[np.ndarray]:
    """[tid, its validity, `_job` (the JID as an integer), its validity, `_mc` (the METHOD's class)] of
    canonical headers, read by the scanner; a JID or thread id of another shape is cast by polars from
    its text (`text`)."""
    jid, jst, tid, tst, meth = _scan.numbers(data, head, _METHODS)
    out: list[np.ndarray] = []
    for field, raw, state, dtype, np_type in (("tid", tid, tst, pl.UInt32, np.uint32),
                                              ("jid", jid, jst, pl.Int64, np.int64)):
        how = np.frombuffer(state, dtype=np.uint8)  # 0 null, 1 read, 2 for polars to read
        values, valid = np.frombuffer(raw, dtype=np_type), how != 0
        odd = np.flatnonzero(how == 2)
        if odd.size:
            cast = text(field, odd).cast(dtype, strict=False)
            values = values.copy()
            values[odd] = cast.fill_null(0).to_numpy()
            valid[odd] = cast.is_not_null().to_numpy()
        out += [values, valid]
    out.append(_METHOD_CLASS.take(np.frombuffer(meth, dtype=np.int8)))
    return out


@dataclass(frozen=True)
class _Piece:
    """One piece as the scanner read it: its bytes (UTF-8 repaired), how many lines had bad UTF-8,
    per line the scanner's int32 spans (`cols`, `replay/parsing/csrc/lines.c`), its canonical
    headers' rows (`at`) and spans (`head`), and the headers only polars reads (`others`, or None)."""

    data: Bytes
    bad: int
    cols: np.ndarray
    at: np.ndarray
    head: np.ndarray
    stamps: np.ndarray
    others: pl.DataFrame | None


def _piece(piece: Piece) -> _Piece:
    """The scanner's reading of one piece (no frame: `scan_records` builds one per chunk)."""
    data, bad = piece.data, 0
    n, raw_cols, raw_ts = _scan.lines(data)
    cols = np.frombuffer(raw_cols, dtype=np.int32).reshape(n, 17)
    maybe = np.flatnonzero(cols[:, 2] == _K_MAYBE)
    if maybe.size:  # a non-ASCII line among them (the scanner flags those): invalid UTF-8 is replaced
        data, bad = repair_utf8(data)
        if bad:  # the text changed: scan what the tables will read
            n, raw_cols, raw_ts = _scan.lines(data)
            cols = np.frombuffer(raw_cols, dtype=np.int32).reshape(n, 17)
            maybe = np.flatnonzero(cols[:, 2] == _K_MAYBE)
        else:  # valid UTF-8 comes back as it was: keep the reader's bytes, not a copy of them
            data = piece.data
    at = np.flatnonzero(cols[:, 2] == _K_HEADER)
    others = None
    if maybe.size:  # rare: the general regex of the polars path reads these lines
        text = string_views(data, cols[maybe, 0], cols[maybe, 1], "text")
        got = fast_headers(pl.DataFrame([text])).with_columns(pl.Series("_i", maybe.astype(np.uint32)))
        others = got.filter(pl.col("ts").is_not_null()).rename({"ts": "ts_text"})
    return _Piece(data, bad, cols, at, cols.take(at, axis=0), np.frombuffer(raw_ts, dtype=np.int64).take(at),
                  others if others is not None and others.height else None)


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
    scanner's int32 line spans, `replay/parsing/csrc/lines.c`) and `blocks`; `pieces`: per record,
    its block (the `_piece` column as numpy); `stamped`: the rows of `continuations` that begin with
    a date (records.STAMPED), as `_scan.chunk` found them (None: not known); `counts`: the records
    per family code + 2 as `_scan.chunk` routed them (first those it left to polars, then those of
    no family; None: not counted)."""

    heads: np.ndarray | None = None
    pieces: np.ndarray | None = None
    stamped: np.ndarray | None = None
    counts: np.ndarray | None = None


# the text columns `with_strings` builds (tid is read as a number, as the polars path casts it)
_TEXT_COLUMNS = ("ts_text", *[f for f in FIELD_COLS if f != "tid"])


def with_strings(recs: Records, frame: pl.DataFrame, names: Sequence[str]) -> pl.DataFrame:
    """`frame` (rows of `recs.records`, with `rec`) with the header text columns `names` it lacks."""
    todo = [n for n in names if n not in frame.columns]
    if not todo:
        return frame
    return frame.hstack(header_strings(recs, frame["rec"].to_numpy(), todo))  # new columns: no query


def header_strings(recs: Records, rec: np.ndarray, names: Sequence[str]) -> list[pl.Series]:
    """The header text columns `names` of the records `rec` (zero-copy views into the blocks)."""
    if not isinstance(recs, Scanned) or recs.heads is None:
        raise ValueError("header_strings: these records have their text columns already")
    head = recs.heads.take(rec, axis=0)
    piece = (recs.pieces if recs.pieces is not None else recs.records["_piece"].to_numpy())[rec]
    if not len(rec) or (piece == piece[0]).all():
        data = recs.blocks[int(piece[0])] if len(rec) else b""
        return [_field(data, head, name) for name in names]
    out = []
    for name in names:  # rows in several blocks: one views array over all of them (rare: a chunk across files)
        lo, hi = (0, 0) if name == "ts_text" else (FIELD_COLS[name], FIELD_COLS[name] + 1)
        starts, ends = head[:, lo], head[:, hi] + (24 if name == "ts_text" else 0)
        out.append(_text_column(name, _views(recs.blocks, piece, starts, ends), recs.blocks))
    return out


def _views(blocks: Sequence[Bytes], piece: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Arrow string views (n x 4 int32) of the spans (`starts`, `ends`) of rows in the blocks
    `piece`: a long value's buffer index is its block's (`_text_column` hands every block over)."""
    if len(blocks) == 1:
        return np.frombuffer(_scan.views(blocks[0], np.ascontiguousarray(starts, np.int32),
                                         np.ascontiguousarray(ends, np.int32)), dtype=np.int32).reshape(-1, 4)
    views = np.zeros((len(piece), 4), dtype=np.int32)
    for p in np.unique(piece).tolist():
        at = np.flatnonzero(piece == p)
        got = np.frombuffer(_scan.views(blocks[p], np.ascontiguousarray(starts[at], np.int32),
                                        np.ascontiguousarray(ends[at], np.int32)), dtype=np.int32).reshape(-1, 4)
        views[at] = got
        views[at[got[:, 0] > 12], 2] = p
    return views


def _text_column(name: str, views: np.ndarray, blocks: Sequence[Bytes], valid: np.ndarray | None = None) -> pl.Series:
    """A string column of `views` (`_views`) over the blocks, without copying their text (`valid`:
    which rows are not null; only for blocks that live as long as the process: polars keeps a foreign
    string-view column with nulls holding its blocks, see `string_views`)."""
    nulls = 0 if valid is None else int(len(valid) - np.count_nonzero(valid))
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls and valid is not None else None
    arr = pa.Array.from_buffers(pa.string_view(), len(views), [bitmap, pa.py_buffer(np.ascontiguousarray(views)),
                                                               *[pa.py_buffer(b) for b in blocks]], null_count=nulls)
    return series_from_arrow(arr).alias(name)


def _column(name: str, kind: pa.DataType, values: np.ndarray, valid: np.ndarray | None = None) -> pl.Series:
    """A numeric column over `values` (nulls where not `valid`, as an Arrow validity bitmap: no copy, no scatter)."""
    return series_from_arrow(numeric(kind, values, valid)).alias(name)


def word_column(name: str, at: np.ndarray, words: Sequence[str | None]) -> pl.Series:
    """The string column `words[at]` (a None word: null), as Arrow string views over the few
    words' bytes: no string is copied per row (a polars gather copies each)."""
    views, present, data = _word_views(tuple(words))
    absent = not present.all()
    valid = present.take(at) if absent else None
    return _text_column(name, views.take(at, axis=0), [data], valid)


@lru_cache(maxsize=64)
def _word_views(words: tuple[str | None, ...]) -> tuple[np.ndarray, np.ndarray, bytes]:
    """(one Arrow string view per word, which words are not None, the long words' bytes)."""
    views, data = bytearray(), bytearray()
    for word in words:
        raw = (word or "").encode()
        views += len(raw).to_bytes(4, "little")
        if len(raw) <= 12:  # inline
            views += raw.ljust(12, b"\0")
        else:  # a prefix, buffer 0, the offset
            views += raw[:4] + bytes(4) + len(data).to_bytes(4, "little")
            data += raw
    present = np.array([w is not None for w in words], dtype=bool)
    return np.frombuffer(bytes(views), dtype=np.int32).reshape(-1, 4), present, bytes(data) or b"\0"


def filled(column: pl.Series, dtype: type[np.generic]) -> tuple[np.ndarray, np.ndarray]:
    """(values, which are not null) of a numeric column, its nulls as 0, read from its Arrow
    buffers (`fill_null(0).to_numpy()` and `is_not_null()` without two polars kernels)."""
    arr = column.to_arrow()
    n, off = len(arr), arr.offset
    values = np.frombuffer(arr.buffers()[1], dtype=dtype, count=n + off)[off:]
    if not arr.null_count:
        return values, np.ones(n, dtype=bool)
    bits = np.frombuffer(arr.buffers()[0], dtype=np.uint8)
    present = np.unpackbits(bits, bitorder="little", count=n + off)[off:].astype(bool)
    return np.where(present, values, 0).astype(dtype, copy=False), present


def first_last_stamps(recs: Records) -> tuple[str | None, str | None]:
    """The timestamp text of the first and of the last record (None: no record)."""
    n = recs.records.height
    if not n:
        return None, None
    if isinstance(recs, Scanned) and recs.heads is not None and recs.pieces is not None:
        # a canonical header is ASCII (lines.c): its first 24 bytes are the timestamp
        starts = [int(recs.heads[r, 0]) for r in (0, n - 1)]
        first, last = (bytes(recs.blocks[int(recs.pieces[r])][s:s + 24]).decode() for r, s in zip((0, n - 1), starts))
        return first, last
    stamps = recs.records["ts_text"]
    return stamps[0], stamps[n - 1]


def full_records(recs: Records) -> pl.DataFrame:
    """`recs.records` with every header text column, as the polars path lays them out."""
    frame = with_strings(recs, recs.records, _TEXT_COLUMNS)
    order = ["rec", "file", "line", *[f for f in HEADER_FIELDS if f != "ts"], "ts", "ts_text"]
    return frame.select(*order, *[c for c in frame.columns if c not in order])


@dataclass(frozen=True)
class _Chunk:
    """The chunk's lines as whole-chunk numpy columns (every piece's, in order), and its blocks."""

    blocks: tuple[Bytes, ...]
    parts: list[_Piece]
    start: np.ndarray  # per piece, its first line's row
    file: np.ndarray
    line: np.ndarray
    piece: np.ndarray
    starts: np.ndarray  # per line, where it starts and ends in its block
    ends: np.ndarray
    views: np.ndarray

    def text(self, name: str, rows: np.ndarray | None = None) -> pl.Series:
        """The text of the lines `rows` (all: None)."""
        return _text_column(name, self.views if rows is None else self.views.take(rows, axis=0), self.blocks)


def _lines(pieces: list[Piece], parts: list[_Piece]) -> _Chunk:
    sizes = np.array([len(p.cols) for p in parts], dtype=np.int64)
    start = np.concatenate(([0], np.cumsum(sizes)[:-1]))
    piece = np.repeat(np.arange(len(parts), dtype=np.uint16), sizes)
    starts, ends = (np.concatenate([p.cols[:, c] for p in parts]) if len(parts) > 1
                    else np.ascontiguousarray(parts[0].cols[:, c]) for c in (0, 1))
    blocks = tuple(p.data for p in parts)
    return _Chunk(blocks, parts, start, np.repeat(np.array([p.file for p in pieces], dtype=np.uint16), sizes),
                  np.concatenate([np.arange(p.first_line, p.first_line + len(part.cols), dtype=np.uint32)
                                  for p, part in zip(pieces, parts)]),
                  piece, starts, ends, _views(blocks, piece, starts, ends))


def scan_records(pieces: list[Piece]) -> tuple[Lines, Records]:
    """Every line and every record of the pieces (the compiled equivalent of the polars path): each
    column built once for the whole chunk, from the scanner's arrays, without a polars query."""
    pieces = [piece for piece in pieces if piece.data]
    if not pieces:
        empty = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String})
        return Lines(empty, 0), Records(_empty_records(), empty.with_columns(rec=pl.lit(0, pl.UInt32)).select(
            "rec", "file", "line", "text"), empty)
    whole = _whole_chunk(pieces)
    if whole is not None:
        return whole
    parts = [_piece(piece) for piece in pieces]
    chunk = _lines(pieces, parts)
    lines = pl.DataFrame([
        _column("file", pa.uint16(), chunk.file), _column("line", pa.uint32(), chunk.line), chunk.text("text"),
        _column("_s", pa.int32(), chunk.starts), _column("_e", pa.int32(), chunk.ends),  # for schedule()
        _column("_piece", pa.uint16(), chunk.piece),
    ])
    bad = sum(p.bad for p in parts)
    # a header only the polars path reads (another layout, non-ASCII): the chunk's records carry their
    # text columns from the start, as polars read them
    if any(p.others is not None for p in parts):
        records = _eager_records(chunk)
        return Lines(lines, bad), _stitch(chunk, records, records["_i"].to_numpy(), None, None)
    at = np.concatenate([p.at + s for p, s in zip(parts, chunk.start.tolist())])
    numbers = _header_numbers(chunk.parts)
    pieces_at = chunk.piece.take(at)
    records = pl.DataFrame([
        _column("rec", pa.uint32(), np.arange(len(at), dtype=np.uint32)),
        _column("file", pa.uint16(), chunk.file.take(at)), _column("line", pa.uint32(), chunk.line.take(at)),
        *[numbers[c] for c in ("tid", "_job", "_mc", "ts")], _column("_piece", pa.uint16(), pieces_at),
        *[numbers[c] for c in ("_bs", "_be", "_fam")],
    ])
    heads = np.concatenate([p.head for p in parts]) if len(parts) > 1 else parts[0].head
    return Lines(lines, bad), _stitch(chunk, records, at, heads, pieces_at)


# `_METHOD_CLASS` as `_scan.chunk` reads it: the class per METHOD index (none of them: 0, in C)
_CLASSES = _METHOD_CLASS[:-1].tobytes()


def _whole_chunk(pieces: list[Piece]) -> tuple[Lines, Records] | None:
    """`scan_records` of the pieces by one compiled call, `_scan.chunk`, which scans, reads the
    headers' numbers, routes and stitches with the GIL released throughout (two parse threads scan
    at once); None when a header, timestamp or number is one polars reads, or a line has invalid
    UTF-8 (the piece by piece path)."""
    blocks = tuple(p.data for p in pieces)
    got = _scan.chunk(blocks, tuple(p.file for p in pieces), tuple(p.first_line for p in pieces), _METHODS,
                      _CLASSES, _route_table(), FAMILY_CODE[GENERIC])
    if got is None:
        return None
    n, r, c, o = got["n"], got["r"], got["c"], got["o"]
    maybe = np.frombuffer(got["maybe"], dtype=np.int32)
    if maybe.size and not _no_header_among(blocks, got, n, maybe):
        return None
    col = partial(_buffer_column, got)
    text: Callable[[int, str], pl.Series] = lambda rows, key: _text_column(  # noqa: E731
        "text", np.frombuffer(got[key], dtype=np.int32).reshape(rows, 4), blocks)
    kept = {key: got[key] for key in ("l_file", "l_line", "l_views", "l_s", "l_e", "l_piece")}
    line_col = partial(_buffer_column, kept)
    # the lines' frame, built when read (a damaged or unparsed line, --keep-lines): most chunks never do
    lines: Callable[[], pl.DataFrame] = lambda: pl.DataFrame([  # noqa: E731
        line_col("file", pa.uint16(), n, "l_file"), line_col("line", pa.uint32(), n, "l_line"),
        _text_column("text", np.frombuffer(kept["l_views"], dtype=np.int32).reshape(n, 4), blocks),
        line_col("_s", pa.int32(), n, "l_s"), line_col("_e", pa.int32(), n, "l_e"),
        line_col("_piece", pa.uint16(), n, "l_piece")])
    records = pl.DataFrame([
        _column("rec", pa.uint32(), np.arange(r, dtype=np.uint32)),
        col("file", pa.uint16(), r, "r_file"), col("line", pa.uint32(), r, "r_line"),
        col("tid", pa.uint32(), r, "tid", "tid_ok", got["tid_nulls"]),
        col("_job", pa.int64(), r, "job", "job_ok", got["job_nulls"]), col("_mc", pa.uint8(), r, "mc"),
        col("ts", pa.timestamp("ms"), r, "ts"), col("_piece", pa.uint16(), r, "r_piece"),
        col("_bs", pa.int32(), r, "bs"), col("_be", pa.int32(), r, "be"), col("_fam", pa.int32(), r, "fam"),
    ])
    continuations = pl.DataFrame([
        col("rec", pa.uint32(), c, "c_rec"), col("file", pa.uint16(), c, "c_file"),
        col("line", pa.uint32(), c, "c_line"), text(c, "c_views"), col("_piece", pa.uint16(), c, "c_piece"),
        col("_s", pa.int32(), c, "c_s"), col("_e", pa.int32(), c, "c_e"),
    ])
    orphans = pl.DataFrame([col("file", pa.uint16(), o, "o_file"), col("line", pa.uint32(), o, "o_line"),
                            text(o, "o_views")]) if o else _NO_ORPHANS  # every chunk but a log's first: none
    heads = np.frombuffer(got["heads"], dtype=np.int32).reshape(r, 17)
    return Lines(lines, 0, n), Scanned(records, continuations, orphans, blocks, heads,
                                    np.frombuffer(got["r_piece"], dtype=np.uint16),
                                    np.frombuffer(got["c_stamped"], dtype=np.int32),
                                    np.frombuffer(got["fam_counts"], dtype=np.int64))


# shared: nothing mutates a frame
_NO_ORPHANS = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String})


def _no_header_among(blocks: tuple[Bytes, ...], got: dict[str, Any], n: int, maybe: np.ndarray) -> bool:
    """Whether the lines `maybe` (rows the scanner was not sure of, `_scan.chunk` took them for
    continuation lines) are that, as the piece by piece path reads them: valid UTF-8 (else their
    text is repaired and counted) and no header to the general regex of the polars path."""
    pieces = np.frombuffer(got["l_piece"], dtype=np.uint16)[maybe]
    if not all(_valid_utf8(blocks[p]) for p in np.unique(pieces).tolist()):
        return False
    views = np.frombuffer(got["l_views"], dtype=np.int32).reshape(n, 4).take(maybe, axis=0)
    return bool(fast_headers(pl.DataFrame([_text_column("text", views, blocks)]))["ts"].is_null().all())


def _valid_utf8(data: Bytes) -> bool:
    """Whether `repair_utf8` leaves `data` as it is and counts no line: valid UTF-8 holding no U+FFFD
    (a strict decode, without the repair's line by line count)."""
    try:
        str(data, "utf-8")
    except UnicodeDecodeError:
        return False
    return b"\xef\xbf\xbd" not in data


def _buffer_column(got: dict[str, Any], name: str, kind: pa.DataType, n: int, key: str, valid: str | None = None,
                   nulls: int = 0) -> pl.Series:
    """The column `name` over `_scan.chunk`'s buffer `key` (`valid`: its validity bitmap's key; None there: no null)."""
    bitmap = got[valid] if valid is not None else None
    arr = pa.Array.from_buffers(kind, n, [None if bitmap is None else pa.py_buffer(bitmap), pa.py_buffer(got[key])],
                                null_count=nulls if bitmap is not None else 0)
    return series_from_arrow(arr).alias(name)


def _header_numbers(parts: list[_Piece]) -> dict[str, pl.Series]:
    """tid, `_job`, `_mc`, ts, `_bs`, `_be` and `_fam` of the canonical headers of the pieces."""
    got = []
    for part in parts:
        data, head = part.data, part.head
        text: Callable[[str, np.ndarray], pl.Series] = lambda name, rows: _field(data, head[rows], name)  # noqa: E731
        fam = np.frombuffer(_scan.route(data, head, _route_table(), FAMILY_CODE[GENERIC]), dtype=np.int32)
        got.append([*_numbers(data, head, text), *_timestamps(part.stamps, partial(text, "ts_text")), fam])
    cols = [np.concatenate(c) for c in zip(*got)] if len(got) > 1 else got[0]
    tid, tid_ok, job, job_ok, mc, ts, ts_ok, fam = cols
    heads = np.concatenate([p.head[:, 15:17] for p in parts])
    series = [_column("tid", pa.uint32(), tid, tid_ok), _column("_job", pa.int64(), job, job_ok),
              _column("_mc", pa.uint8(), mc), _column("ts", pa.timestamp("ms"), ts, ts_ok),
              # where the body lies, for the templates
              _column("_bs", pa.int32(), heads[:, 0]), _column("_be", pa.int32(), heads[:, 1]),
              _column("_fam", pa.int32(), fam)]
    return {c.name: c for c in series}


def _eager_records(chunk: _Chunk) -> pl.DataFrame:
    """Header rows (`_i`: the line's row) with every text column, for a chunk with a header only
    the polars path reads (rare: polars queries per piece)."""
    frames = []
    for p, (part, start) in enumerate(zip(chunk.parts, chunk.start.tolist())):
        numbers = _header_numbers([part])
        frames.append(pl.DataFrame([
            pl.Series("_i", (part.at + start).astype(np.uint32)),
            *[numbers[c] for c in ("ts", "tid", "_bs", "_be", "_fam")],
            *[_field(part.data, part.head, name) for name in _TEXT_COLUMNS],
        ]).with_columns(_piece=pl.lit(p, pl.UInt16)))
        if part.others is not None:
            frames.append(part.others.with_columns(pl.col("_i") + start, parse_ts(pl.col("ts_text")).alias("ts"),
                                                   pl.col("tid").cast(pl.UInt32, strict=False)))
    return pl.concat(frames, how="diagonal").sort("_i")


def _stitch(chunk: _Chunk, heads: pl.DataFrame, at: np.ndarray, spans: np.ndarray | None,
            pieces: np.ndarray | None) -> Records:
    """Records from the header rows `heads` (lines `at`); every other line goes to the record before
    it (`spans`, `pieces`: the headers' spans and blocks, when their text columns are left to
    `with_strings`)."""
    if spans is None:  # the text columns are there: the polars path's layout
        fields = [f for f in HEADER_FIELDS if f != "ts"]
        heads = pl.DataFrame([_column("rec", pa.uint32(), np.arange(len(at), dtype=np.uint32)),
                              _column("file", pa.uint16(), chunk.file.take(at)),
                              _column("line", pa.uint32(), chunk.line.take(at)),
                              *[heads[c] for c in (*fields, "ts", "ts_text", "_piece", "_bs", "_be", "_fam")]])
    other = np.ones(len(chunk.file), dtype=bool)
    other[at] = False
    others = np.flatnonzero(other)
    rec = np.searchsorted(at, others) - 1  # the header before each line (-1: none)
    orphan = int(np.searchsorted(rec, 0))  # the lines before the first header (a log cut mid-record)
    lost, cont = others[:orphan], others[orphan:]
    orphans = pl.DataFrame([_column("file", pa.uint16(), chunk.file.take(lost)),
                            _column("line", pa.uint32(), chunk.line.take(lost)), chunk.text("text", lost)])
    continuations = pl.DataFrame([
        _column("rec", pa.uint32(), rec[orphan:].astype(np.uint32)),
        _column("file", pa.uint16(), chunk.file.take(cont)), _column("line", pa.uint32(), chunk.line.take(cont)),
        chunk.text("text", cont), _column("_piece", pa.uint16(), chunk.piece.take(cont)),
        _column("_s", pa.int32(), chunk.starts.take(cont)), _column("_e", pa.int32(), chunk.ends.take(cont)),
    ])
    return Scanned(heads, continuations, orphans, chunk.blocks, spans, pieces)


def _empty_records() -> pl.DataFrame:
    schema: Schema = {"rec": pl.UInt32, "file": pl.UInt16, "line": pl.UInt32,
                      **{f: pl.String for f in HEADER_FIELDS if f != "ts"}, "ts": pl.Datetime("ms"),
                      "ts_text": pl.String}
    return pl.DataFrame(schema=schema).with_columns(pl.col("tid").cast(pl.UInt32))
