"""Every line a chunk did not parse, and why: damaged records (NUL bytes, bad bytes), lines before the
first record, lines inside a single-line record, rejected records with all their lines."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import polars as pl

from replay.parsing.assemble import file_names, record_cycles
from replay.parsing.chunks import Chunk
from replay.parsing.records import STAMPED, Lines, Records
from replay.parsing.tables import LEFT

from replay.parsing.families import MULTILINE


NUL_BYTES = "NUL bytes in the line (a run of zeros, as a disk that filled leaves): the record is damaged"
BAD_BYTES = "a run of bad bytes in the line (not UTF-8; shown as U+FFFD): the record is damaged"
# two or more bytes in a row that are not UTF-8: damage (a lone one is a name in a legacy
# encoding, Latin-1 "é", that every cycle may print: it is read, U+FFFD in its place, and counted)
BAD_RUN = "\ufffd\ufffd"


_NO_DAMAGE = pl.DataFrame(schema={"rec": pl.UInt32, "reason": pl.String})  # shared: nothing mutates a frame


def damaged_records(chunk: Chunk, lines: Lines, records: pl.DataFrame, recs: Records) -> pl.DataFrame:
    """(rec, reason) of every record with a NUL byte or a run of invalid UTF-8 in one of its
    lines: its fields cannot be trusted, so it is reported unparsed (with its lines), never read."""
    empty = _NO_DAMAGE
    if not lines.bad_utf8_lines and not any(b"\0" in p.data for p in chunk.pieces):
        return empty
    frame = lines.frame
    text = pl.col("text")
    bad = frame.filter(text.str.contains("\x00", literal=True) | text.str.contains(BAD_RUN, literal=True)).select(
        "file", "line", reason=pl.when(text.str.contains("\x00", literal=True)).then(pl.lit(NUL_BYTES))
        .otherwise(pl.lit(BAD_BYTES)))
    if not bad.height:
        return empty
    where = pl.concat([records.select("rec", "file", "line"), recs.continuations.select("rec", "file", "line")])
    found = bad.join(where.cast({"file": pl.UInt16, "line": pl.UInt32}), on=["file", "line"], **LEFT)
    return found.filter(pl.col("rec").is_not_null()).unique("rec", keep="first", maintain_order=True).select(
        pl.col("rec").cast(pl.UInt32), "reason")


def line_cycles(rows: pl.DataFrame, records: pl.DataFrame, last: bool) -> pl.Series:
    """The chunk-relative cycle of each (file, line) of `rows` (in log order): that of the record
    the line is part of or follows (`replay.parsing.assemble.record_cycles`); none for a line before
    the log's first record (part of one that began before the log) or after its last schedule."""
    # (file, line) as one number: the records' are increasing (log order), so each line's record is
    # the last one at or before it
    key: Callable[[pl.DataFrame], np.ndarray] = lambda df: (  # noqa: E731
        df["file"].to_numpy().astype(np.int64) << 32) + df["line"].to_numpy().astype(np.int64)
    at = np.searchsorted(key(records), key(rows), side="right") - 1
    cycle = np.zeros(len(at), dtype=np.uint32)
    # a record no family reads (a known message of an unknown shape) is a line of its cycle all the same
    cycle[at >= 0] = record_cycles(records["_code"].to_numpy(), last, unread=True)[at[at >= 0]]
    return pl.Series("cycle", cycle, dtype=pl.UInt32).scatter(np.flatnonzero(cycle == 0), None)


_NO_ORPHANS = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String, "reason": pl.String})


def orphans(recs: Records) -> pl.DataFrame:
    """The lines before the log's first record header (the log starts inside a record)."""
    if not recs.orphans.height:  # every chunk but a log's first: no polars query for nothing
        return _NO_ORPHANS
    return recs.orphans.filter(pl.col("text").str.strip_chars() != "").select(
        "file", "line", "text",
        reason=pl.lit("continuation line before the first record header (the log starts mid-record)"),
    )


def unexpected_continuations(records: pl.DataFrame, cont: pl.DataFrame) -> pl.DataFrame:
    """The lines inside a single-line record (output interleaved or wrapped), and the lines inside
    any record that begin with a date (records.STAMPED: a record cut short)."""
    single_line = ~pl.col("family").is_in(list(MULTILINE)) | pl.col("family").is_null()
    owners = records.select("rec", "family", "cls", "method", single_line.alias("_single"))
    return cont.filter(pl.col("text").str.strip_chars() != "").join(owners, on="rec", maintain_order="left").filter(
        pl.col("_single") | pl.col("text").str.contains(STAMPED)).select(
        "file", "line", "text",
        reason=pl.concat_str(pl.lit("unexpected line inside a "), "cls", pl.lit("."), "method",
                             pl.lit(" record (interleaved or wrapped output)")),
    )


_LINE_SCHEMA = pl.Schema({"file": pl.UInt16, "line": pl.UInt32, "text": pl.String, "reason": pl.String})
_NOTHING_UNPARSED = pl.DataFrame(schema={"file": pl.String, **{c: _LINE_SCHEMA[c] for c in ("line", "text", "reason")},
                                         "cycle": pl.UInt32})


def unparsed_table(parts: list[pl.DataFrame], lines: pl.DataFrame, records: pl.DataFrame,
                   cont: pl.DataFrame, names: list[str], last: bool) -> pl.DataFrame:
    """file/line/text/reason/cycle rows; a rejected record is reported with every one of its lines."""
    if not any(p.height for p in parts):  # most chunks: nothing unparsed
        return _NOTHING_UNPARSED
    schema = _LINE_SCHEMA
    frames = [p.select("file", "line", "text", "reason").cast(schema) for p in parts if "line" in p.columns]
    failed = [p for p in parts if "line" not in p.columns]
    if failed:
        where = pl.concat(failed).join(records.select("rec", "file", "line"), on="rec", **LEFT)
        frames.append(where.join(lines, on=["file", "line"], **LEFT).select(*schema).cast(schema))
        inner = cont.join(where.select("rec", pl.col("line").alias("at")), on="rec", maintain_order="left").select(
            "file", "line", "text",
            reason=pl.concat_str(pl.lit("inside the unparsed record at line "), pl.col("at").cast(pl.String)),
        )
        frames.append(inner.cast(schema))
    out = pl.concat(frames) if frames else pl.DataFrame(schema=schema)
    # one row per line: a stray line after a rejected record keeps its first (more precise) reason
    out = out.sort("file", "line", maintain_order=True).unique(["file", "line"], keep="first", maintain_order=True)
    out = out.with_columns(line_cycles(out, records, last)) if out.height else out.with_columns(
        pl.lit(None, pl.UInt32).alias("cycle"))
    return out.join(file_names(names), on="file", **LEFT).select(
        pl.col("fname").alias("file"), "line", "text", "reason", "cycle")
