"""rm.log files -> typed tables: read, split records, route to families, parse, assemble.

`engine="fast"` splits lines and headers and matches the high-volume families with the compiled
scanner (replay.parsing.scan, replay.parsing.templates), the other families with vectorised regexes
(replay.parsing.fast) and the rest with lark; `engine="polars"` does without the scanner (also what
"fast" falls back to when it was not built); `engine="lark"` parses every header and every body
with the grammar.
All three must give identical tables (tests/integration/test_engines.py).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Protocol

import numpy as np
import polars as pl

from replay.parsing.chunks import Chunk, stream_chunks
from replay.parsing.records import Records, find_records, split_lines
from replay.parsing.compiled import COMPILED
from replay.parsing.scanned import first_last_stamps, header_strings, scan_records, with_strings
from replay.parsing.columns import to_polars
from replay.parsing.limits import DEFAULT_CHUNK_BYTES
from replay.parsing.logdir import Inputs, find_inputs
from replay.parsing.unparsed import damaged_records, orphans, unexpected_continuations, unparsed_table
from replay.parsing.unparsed_typed import unexpected_lines, unexpected_table
from replay.parsing.sources import Source, unpacked_size
from replay.progress import OnProgress, Progress, quiet
from replay.parsing.assemble import Carry, ChunkCarry, assemble_chunk, assemble_final, compact, stitch
from replay.parsing.tables import SCHEMAS, Frame
from replay.parsing.routing import family_counts, named, route
from replay.parsing.family_rows import parse_families
from replay.parsing.outdir import submitted



@dataclass(frozen=True)
class Summary:
    """What a parse saw: sizes, record counts per family, unparsed lines, cycles and time span."""

    files: list[str]
    bytes: int
    lines: int
    records: int
    continuation_lines: int
    orphan_lines: int
    families: dict[str, int]
    unparsed: int
    bad_utf8_lines: int
    cycles: int
    first_ts: str | None
    last_ts: str | None
    note: str | None = None  # what the folders given held besides the RM's log (replay.parsing.logdir)


@dataclass(frozen=True)
class ParseResult:
    """The tables (name -> polars DataFrame) and the summary of one parse; with `keep_lines`, every
    input line too (file, text, line), for a viewer that shows the raw log beside the tables."""

    tables: Mapping[str, pl.DataFrame]
    summary: Summary
    lines: pl.DataFrame | None = None


class Sink(Protocol):
    """Where per-chunk tables go: kept in memory (parse) or appended to Parquet files (the CLI)."""

    def add(self, tables: Mapping[str, Frame]) -> None: ...


class MemorySink:
    """Collects every chunk's tables and concatenates them per table (`columns`: keep only these
    tables, and of each only these columns, in their schema's order; None keeps everything)."""

    def __init__(self, columns: Mapping[str, Sequence[str]] | None = None) -> None:
        keep = {name: tuple(columns[name]) if columns is not None else tuple(SCHEMAS[name])
                for name in SCHEMAS if columns is None or name in columns}
        self.columns = {name: [c for c in SCHEMAS[name] if c in cols] for name, cols in keep.items()}
        self.parts: dict[str, list[pl.DataFrame]] = {name: [] for name in self.columns}

    def add(self, tables: Mapping[str, Frame]) -> None:
        """Keep one chunk's tables (their text copied out, so the chunk's bytes can go)."""
        for name, df in tables.items():
            if name in self.parts:
                self.parts[name].append(compact(df.select(self.columns[name])) if isinstance(df, pl.DataFrame)
                                        else to_polars(df.select(self.columns[name])))

    def tables(self) -> dict[str, pl.DataFrame]:
        """Every table kept, in log order."""
        return {name: pl.concat(parts) if parts else pl.DataFrame(schema={c: SCHEMAS[name][c] for c in cols})
                for (name, parts), cols in zip(self.parts.items(), self.columns.values())}


def parse(paths: list[str] | str, engine: str = "fast", progress: OnProgress | None = None,
          chunk_bytes: int | None = None, keep_lines: bool = False, workers: int = 1,
          columns: Mapping[str, Sequence[str]] | None = None) -> ParseResult:
    """Parse rm.log files (rolled sets, directories, .gz) into typed tables (polars DataFrames);
    `keep_lines`: also every input line, as read (it costs the input's size in memory); `workers`:
    chunks parsed at once (the same tables); `columns`: keep only these tables and columns."""
    sink = MemorySink(columns)
    kept: list[pl.DataFrame] = []
    summary = run(paths, sink, engine=engine, progress=progress, chunk_bytes=chunk_bytes,
                  lines_to=kept.append if keep_lines else None, workers=workers)
    return ParseResult(sink.tables(), summary, named_lines(kept, summary.files) if keep_lines else None)


def named_lines(frames: list[pl.DataFrame], files: list[str]) -> pl.DataFrame:
    """(file, text, line) of every chunk's lines, the file by its name."""
    names = pl.Series([Path(f).name for f in files], dtype=pl.String)
    if not frames:
        return pl.DataFrame(schema={"file": pl.String, "text": pl.String, "line": pl.UInt32})
    return pl.concat(frames).select(pl.lit(names).gather(pl.col("file")).alias("file"), "text", "line")


def read_lines(sources: list[Source], chunk_bytes: int = DEFAULT_CHUNK_BYTES) -> pl.DataFrame:
    """Every line of the input (file, text, line) as `parse(keep_lines=True)` gives them, without parsing."""
    frames = [split_lines(chunk.pieces).frame.select("file", "line", "text")
              for chunk in stream_chunks(sources, chunk_bytes)]
    return named_lines(frames, [str(s.path) for s in sources])
@dataclass(frozen=True)
class _Parsed:
    """One chunk parsed on its own (`_parse_chunk`): its tables and what it hands on, its lines
    (when asked for) and what it adds to the summary."""

    tables: Mapping[str, Frame]
    carry: ChunkCarry
    lines: pl.DataFrame | None
    bytes: int
    line_count: int
    records: int
    continuation_lines: int
    orphan_lines: int
    unparsed: int
    bad_utf8_lines: int
    families: dict[str, int]
    first_ts: str | None
    last_ts: str | None


@dataclass
class _Totals:
    """The summary so far, and the state the chunks hand on in log order."""

    bytes: int = 0
    lines: int = 0
    records: int = 0
    continuation_lines: int = 0
    orphan_lines: int = 0
    unparsed: int = 0
    bad_utf8_lines: int = 0
    families: dict[str, int] = field(default_factory=dict)
    first_ts: str | None = None
    last_ts: str | None = None
    carry: Carry = field(default_factory=Carry)

    def add(self, part: _Parsed) -> dict[str, Frame]:
        """Count the next chunk in and return its tables in the log's frame (`stitch`)."""
        self.bytes += part.bytes
        self.lines += part.line_count
        self.records += part.records
        self.continuation_lines += part.continuation_lines
        self.orphan_lines += part.orphan_lines
        self.unparsed += part.unparsed
        self.bad_utf8_lines += part.bad_utf8_lines
        for fam, n in part.families.items():
            self.families[fam] = self.families.get(fam, 0) + n
        self.first_ts = self.first_ts or part.first_ts
        self.last_ts = part.last_ts or self.last_ts
        return stitch(part.tables, part.carry, self.carry)


def run(paths: list[str] | str | Inputs, sink: Sink, engine: str = "fast", progress: OnProgress | None = None,
        chunk_bytes: int | None = None, lines_to: Callable[[pl.DataFrame], None] | None = None,
        workers: int = 1) -> Summary:
    """Parse the input (paths, or the files `find_inputs` chose) chunk by chunk into `sink`; return
    the summary (`lines_to`: also called with each chunk's lines: file index, line, text;
    `progress`: the bytes read after each chunk, of about the total unpacked). `workers` > 1 parses
    that many chunks at once on threads (the scanner, polars and pyarrow release the GIL); the sink
    gets the same tables in the same order as from one worker. `chunk_bytes`: the input parsed per step (None:
    DEFAULT_CHUNK_BYTES, whatever `workers`: the Parquet row groups follow the chunks, so the files are
    the same bytes on every thread count)."""
    say = progress or quiet
    if isinstance(paths, (str, Path)):
        paths = [paths]
    inputs = paths if isinstance(paths, Inputs) else find_inputs(list(paths))
    sources = inputs.sources
    names = [s.name for s in sources]
    totals = _Totals()
    keep = lines_to is not None
    expected = sum(unpacked_size(s.path) for s in sources)
    say(Progress("parsing", 0, expected, "bytes"))

    def take(part: _Parsed) -> None:
        tables = totals.add(part)
        if lines_to is not None and part.lines is not None:
            lines_to(part.lines)
        sink.add(tables)
        say(Progress("parsing", totals.bytes, max(expected, totals.bytes), "bytes"))

    chunks = stream_chunks(sources, chunk_bytes or DEFAULT_CHUNK_BYTES)
    if workers <= 1:
        for chunk in chunks:
            parsed = _parse_chunk(chunk, engine, names, keep)
            # neither is held while the next chunk is read and parsed (the peak of the whole parse)
            del chunk
            take(parsed)
            del parsed
    else:
        # at most `workers` chunks in flight: memory grows by one chunk's working set per worker
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="parse") as pool:
            flight: deque[Future[_Parsed]] = deque()
            for chunk in chunks:
                flight.append(submitted(pool, _parse_chunk, chunk, engine, names, keep))
                del chunk
                if len(flight) >= workers:
                    take(flight.popleft().result())
            while flight:
                take(flight.popleft().result())
    say(Progress("parsing", totals.bytes, totals.bytes, "bytes"))  # the estimate gives way to what was read
    say(Progress("assembling cycles and configuration"))
    final = assemble_final(totals.carry)
    sink.add(final)
    return Summary(
        files=[str(s.path) for s in sources], bytes=totals.bytes, lines=totals.lines, records=totals.records,
        continuation_lines=totals.continuation_lines, orphan_lines=totals.orphan_lines,
        families=dict(sorted(totals.families.items())), unparsed=totals.unparsed,
        bad_utf8_lines=totals.bad_utf8_lines, cycles=final["cycles"].height,
        first_ts=totals.first_ts, last_ts=totals.last_ts, note=inputs.note(),
    )


# One chunk assembled at a time: a chunk's memory peaks while its tables are assembled (its rows,
# records and new tables all held), and that step is mostly Python, which holds the GIL anyway; two
# threads assembling at once met their peaks (docs/benchmarks.md, "The per-chunk cost and the chunk size")
_ASSEMBLING = threading.Lock()


def _parse_chunk(chunk: Chunk, engine: str, names: list[str], keep_lines: bool) -> _Parsed:
    """One chunk's tables, on its own (no state from other chunks: chunks parse in parallel)."""
    if engine == "fast" and COMPILED:
        lines, recs = scan_records(chunk.pieces)
    else:
        lines = split_lines(chunk.pieces)
        recs = find_records(lines, "lark" if engine == "lark" else "fast")
    records = route(recs.records, recs, names=False)  # the family names: for the few rows that read them
    damaged = damaged_records(chunk, lines, records, recs)
    trusted = records.filter(~pl.col("rec").is_in(damaged["rec"].implode())) if damaged.height else records
    buckets, unparsed, raw = parse_families(trusted, recs, engine)
    unparsed.append(damaged)
    unparsed.append(orphans(recs))
    hit, read = unexpected_lines(trusted, recs)
    typed = not lines.bad_utf8_lines and read and hit.size and not any(p.height for p in unparsed)
    # the lines inside single-line records the chunk's only unparsed lines: built from their spans
    unparsed_frame = unexpected_table(trusted, recs, hit, names, chunk.last) if typed else None
    if unparsed_frame is None:
        unparsed.append(_unexpected(trusted, recs, hit, read))
        unparsed_frame = unparsed_table(unparsed, lines.frame, records, recs.continuations, names, chunk.last)
    families = family_counts(records, recs)
    first_ts, last_ts = first_last_stamps(recs)
    kept = lines.frame.select("file", "line", "text") if keep_lines else None
    line_count, bad_utf8_lines = lines.height, lines.bad_utf8_lines
    # what the assembly does not read goes before it: the chunk's memory peaks there
    del lines, unparsed, damaged, trusted, hit
    # the scanner's records carry no header text: the tables build the columns they read, for their rows
    strings = partial(header_strings, recs) if "ts_text" not in records.columns else None
    with _ASSEMBLING:
        tables, carry = assemble_chunk(buckets, records, names, unparsed_frame, chunk.last, raw, strings)
    return _Parsed(
        tables=tables, carry=carry, lines=kept, bytes=chunk.size, line_count=line_count, records=records.height,
        continuation_lines=recs.continuations.height, orphan_lines=recs.orphans.height,
        unparsed=len(unparsed_frame), bad_utf8_lines=bad_utf8_lines, families=families,
        first_ts=first_ts, last_ts=last_ts,
    )


def _unexpected(records: pl.DataFrame, recs: Records, hit: np.ndarray, read: bool) -> pl.DataFrame:
    """unexpected_continuations of the continuation lines `hit` of single-line records only (most chunks
    have none: the frame of every continuation line is not joined); `read`: the blank ones are out already."""
    cont = recs.continuations[hit] if hit.size else recs.continuations.clear()
    if hit.size and not read:  # blank lines are no news (unexpected_continuations skips them too)
        cont = cont.filter(pl.col("text").str.strip_chars() != "")
    if not cont.height:
        return _NOTHING_UNEXPECTED
    part = named(records.filter(pl.col("rec").is_in(cont["rec"].implode())))
    return unexpected_continuations(with_strings(recs, part, ["cls", "method"]), cont)


_NOTHING_UNEXPECTED = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String,
                                           "reason": pl.String})
