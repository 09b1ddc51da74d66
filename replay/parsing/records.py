"""Split log bytes into lines, recognise record headers, stitch continuation lines to records.

Two paths here produce the same frames: the polars one (numpy line split + polars string kernels;
engine "polars", and "fast" where the compiled scanner of replay/parsing/scan.py was not built) and lark
(the grammar's `record_header` rule, line by line; the reference, used by the tests).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import polars as pl
import pyarrow as pa

from replay.parsing.chunks import Bytes, Piece
from replay.parsing.header import HEADER_FIELDS, HEADER_RE
from replay.parsing.tables import LEFT, series_from_arrow

TS_FORMAT = "%d %b %Y %H:%M:%S,%3f"


@dataclass(frozen=True)
class Lines:
    """Every input line: file index, 1-based line number, text (newline removed). `built`: the
    frame, or what builds it on its first read (the compiled scan's chunks, where nearly every
    chunk reads only how many lines it has: `count`; -1, the frame's height)."""

    built: pl.DataFrame | Callable[[], pl.DataFrame]  # file: u16, line: u32, text: str
    bad_utf8_lines: int
    count: int = -1

    @cached_property
    def frame(self) -> pl.DataFrame:
        """The lines as a frame (file, line, text, and the scanner's spans where it read them)."""
        return self.built if isinstance(self.built, pl.DataFrame) else self.built()

    @property
    def height(self) -> int:
        """How many lines."""
        return self.count if self.count >= 0 else self.frame.height


@dataclass(frozen=True)
class Records:
    """Header lines as records and the continuation lines stitched to them."""

    records: pl.DataFrame  # rec, file, line, level, component, cls, jid, tid, method, body, ts, ts_text
    continuations: pl.DataFrame  # rec, file, line, text
    orphans: pl.DataFrame  # file, line, text: continuation lines before any header
    blocks: tuple[Bytes, ...] = ()  # the compiled scanner's: the bytes `_piece`/`_bs`/`_be` point into


def repair_utf8(data: Bytes) -> tuple[Bytes, int]:
    """(the bytes with invalid UTF-8 replaced by U+FFFD, how many lines had some); never fatal."""
    if not data or np.frombuffer(data, dtype=np.uint8).max() < 0x80:
        return data, 0
    text = data.decode("utf-8", errors="replace")
    return text.encode("utf-8"), sum(1 for ln in text.split("\n") if "\ufffd" in ln)


def parse_ts(text: pl.Expr) -> pl.Expr:
    """The header's timestamp text as a datetime (null when it is no real date)."""
    return text.str.to_datetime(TS_FORMAT, time_unit="ms", strict=False)


def split_lines(pieces: list[Piece]) -> Lines:
    """All lines of the pieces, in order; invalid UTF-8 is replaced (and counted), never fatal."""
    frames = []
    bad = 0
    for piece in pieces:
        data, bad_lines = repair_utf8(piece.data)
        bad += bad_lines
        frames.append(_lines_of(piece.file, piece.first_line, data))
    frame = pl.concat(frames) if frames else _lines_of(0, 1, b"")
    return Lines(frame, bad)


def _lines_of(idx: int, first_line: int, data: Bytes) -> pl.DataFrame:
    # Zero-copy: one Arrow string array over the bytes, one value per line (newline kept, then
    # stripped by polars), instead of a Python list of a million str objects.
    if not data:
        return pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String})
    buf = np.frombuffer(data, dtype=np.uint8)
    starts = np.concatenate(([0], np.flatnonzero(buf == 10) + 1))
    if starts[-1] == len(data):
        starts = starts[:-1]
    offsets = np.append(starts, len(data)).astype(np.int64)
    arr = pa.LargeStringArray.from_buffers(len(starts), pa.py_buffer(offsets.tobytes()), pa.py_buffer(data))
    text = series_from_arrow(arr).cast(pl.String).str.strip_chars_end("\r\n")
    n = len(starts)
    return pl.DataFrame({
        "file": pl.Series(np.full(n, idx, dtype=np.uint16)),
        "line": pl.Series(np.arange(first_line, first_line + n, dtype=np.uint32)),
        "text": text,
    })


def find_records(lines: Lines, engine: str = "fast") -> Records:
    """Recognise headers (by `engine`) and stitch every other line to the record before it."""
    frame = lines.frame
    headers = _lark_headers(frame["text"].to_list()) if engine == "lark" else fast_headers(frame)
    is_header = headers["ts"].is_not_null()
    rec = is_header.cast(pl.Int64).cum_sum() - 1
    full = pl.concat([frame, headers, pl.DataFrame({"rec": rec, "is_header": is_header})], how="horizontal")
    records = full.filter(pl.col("is_header")).select(
        "rec", "file", "line", *HEADER_FIELDS[1:], parse_ts(pl.col("ts")).alias("ts"), pl.col("ts").alias("ts_text"),
    ).with_columns(pl.col("rec").cast(pl.UInt32), pl.col("tid").cast(pl.UInt32, strict=False))
    cont = full.filter(~pl.col("is_header"))
    orphans = cont.filter(pl.col("rec") < 0).select("file", "line", "text")
    continuations = cont.filter(pl.col("rec") >= 0).select(
        pl.col("rec").cast(pl.UInt32), "file", "line", "text"
    )
    return Records(records, continuations, orphans)


# The date of a log4j time stamp at the start of a line that is not a header: no continuation line
# of a real record begins so (stack traces, tables and schedules do not), so it is a record cut
# short or two lines run together (a lost span of the log, interleaved writers; the cut may fall
# inside the stamp's time). ASCII classes, as `unparsed_typed.stamped` reads the same bytes.
STAMPED = r"^[0-9][0-9] [A-Z][a-z][a-z] [0-9][0-9][0-9][0-9] "


# The layout log4j writes (single blanks, %5p level at column 25): split with find/slice, which
# is several times faster than regex captures; anything else that still is a header (other
# padding) takes the general regex.
_CANONICAL = (
    r"^\d\d [A-Z][a-z][a-z] \d\d\d\d \d\d:\d\d:\d\d,\d\d\d (TRACE|DEBUG| INFO| WARN|ERROR|FATAL) "
    r"\S*\.[^\s.]+ - \S+ +T\[\d*\] \S"
)


def fast_headers(frame: pl.DataFrame) -> pl.DataFrame:
    """The header fields of each line of `frame` (all null on lines that are not headers)."""
    c = pl.col
    ok = frame["text"].str.contains(_CANONICAL)
    # staged columns: each slice is computed once (inline expressions would be recomputed)
    fields = (
        frame.lazy().with_row_index("_i").filter(ok)
        .with_columns(c("text").str.slice(31).alias("_r"))
        .with_columns(c("_r").str.find(" - ", literal=True).alias("_p1"),
                      c("_r").str.find(" T[", literal=True).alias("_p2"))
        .with_columns(
            c("_r").str.slice(0, c("_p1")).alias("_logger"),
            c("_r").str.slice(c("_p1") + 3, c("_p2") - c("_p1") - 3).str.strip_chars_end().alias("jid"),
            c("_r").str.slice(c("_p2") + 3).alias("_a"),
        )
        .with_columns(c("_a").str.find("] ", literal=True).alias("_p3"),
                      c("_logger").str.split(".").list.last().alias("cls"))
        .with_columns(c("_a").str.slice(0, c("_p3")).alias("tid"), c("_a").str.slice(c("_p3") + 2).alias("_t"))
        .with_columns(c("_t").str.find(" ", literal=True).alias("_p4"))
        .select(
            "_i",
            c("text").str.slice(0, 24).alias("ts"),
            c("text").str.slice(25, 5).str.strip_chars_start().alias("level"),
            c("_logger").str.slice(0, c("_logger").str.len_chars() - c("cls").str.len_chars() - 1).alias("component"),
            "cls", "jid", "tid",
            pl.when(c("_p4").is_null()).then(c("_t")).otherwise(c("_t").str.slice(0, c("_p4"))).alias("method"),
            pl.when(c("_p4").is_null()).then(pl.lit("")).otherwise(c("_t").str.slice(c("_p4")).str.strip_chars()).alias("body"),
        )
    )
    out = pl.LazyFrame({"_i": pl.int_range(0, frame.height, dtype=pl.UInt32, eager=True)}).join(
        fields, on="_i", **LEFT).drop("_i").collect()
    # rare: header lines with another layout (extra padding); parsed by the general regex
    odd = (~ok) & frame["text"].str.contains(r"^\d\d [A-Z][a-z][a-z] \d\d\d\d ")
    if odd.any():
        slow = frame.select(pl.col("text").str.extract_groups(HEADER_RE)).unnest("text")
        slow.columns = HEADER_FIELDS
        slow = slow.with_columns(pl.col("body").str.strip_chars())
        out = out.select([pl.when(ok).then(out[c]).otherwise(slow[c]).alias(c) for c in HEADER_FIELDS])
    return out


def _lark_headers(texts: list[str]) -> pl.DataFrame:
    from replay.parsing import grammar  # here: lark loads only for what the grammar alone reads

    cols: dict[str, list[str | None]] = {f: [] for f in HEADER_FIELDS}
    for text in texts:
        fields = grammar.parse_header(text) if text[:1].isdigit() else None
        for f in HEADER_FIELDS:
            cols[f].append(fields[f] if fields else None)
    return pl.DataFrame(cols, schema={f: pl.String for f in HEADER_FIELDS})


def full_bodies(records: pl.DataFrame, continuations: pl.DataFrame) -> pl.DataFrame:
    """rec -> the whole body text (first line, then continuation lines), trimmed."""
    extra = continuations.join(records.select("rec"), on="rec", how="semi").group_by(
        "rec", maintain_order=True
    ).agg(pl.col("text").str.join("\n").alias("more"))
    return records.select("rec", "body").join(extra, on="rec", **LEFT).select(
        "rec",
        pl.when(pl.col("more").is_null()).then(pl.col("body"))
        .otherwise(pl.concat_str(pl.col("body"), pl.lit("\n"), pl.col("more")))
        .str.strip_chars().alias("text"),
    )
