"""rm.log files -> typed tables: read, split records, route to families, parse, assemble.

`engine="fast"` splits lines and headers and matches the high-volume families with the compiled
scanner (replay.parsing.scan, replay.parsing.templates), the other families with vectorised regexes
(replay.parsing.fast) and the rest with lark; `engine="polars"` does without the scanner (also what
"fast" falls back to when it was not built); `engine="lark"` parses every header and every body
with the grammar.
All three must give identical tables (tests/integration/test_engines.py).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import lru_cache, partial
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import polars as pl

from replay.parsing import fast
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, GENERIC, MULTILINE, ROUTES, TARGETS
from replay.parsing.chunks import Chunk, stream_chunks
from replay.parsing.records import Records, find_records, full_bodies, split_lines
from replay.parsing.sectioned import FAMILY as SECTIONS
from replay.parsing.sectioned import with_sections
from replay.parsing.scan import (UNDECIDED, fill_rows, occupancy_rows, occupancy_scan, rmcounter_rows,
                                 rmcounter_scan, schedule_rows, schedule_scan, section_rows)
from replay.parsing.scanned import COMPILED, header_strings, scan_records, with_strings
from replay.parsing import columns_text
from replay.parsing.columns import Unframed, compiled_buckets, frames_of, to_polars
from replay.parsing.columns_expansions import merged_rows
from replay.parsing.columns_schedule import BlockRows
from replay.parsing.pools import pool_rows, pool_scan, taken_all
from replay.parsing.limits import DEFAULT_CHUNK_BYTES
from replay.parsing.logdir import Inputs, find_inputs
from replay.parsing.unparsed import damaged_records, orphans, unexpected_continuations, unparsed_table
from replay.parsing.unparsed_typed import unexpected_lines, unexpected_table
from replay.parsing.sources import Source, unpacked_size
from replay.progress import OnProgress, Progress, quiet
from replay.parsing.assemble import Carry, ChunkCarry, assemble_chunk, assemble_final, compact, stitch
from replay.parsing.tables import SCHEMAS, Frame



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


IN_FLIGHT_BYTES = 12 << 20  # with N workers, N chunks parse while one is read: their bytes together


def chunk_bytes_for(workers: int) -> int:
    """The chunk size for `workers` parse threads: DEFAULT_CHUNK_BYTES for one, smaller for more,
    so the chunks in flight hold about as much as one worker's (i_mega24 with 2 workers: 6 MB
    chunks peak at 2.1x the file, 4 MB chunks at 1.85x)."""
    return max(2 << 20, min(DEFAULT_CHUNK_BYTES, (IN_FLIGHT_BYTES // (workers + 1)) >> 20 << 20))


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
    chunk_bytes_for(workers))."""
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

    chunks = stream_chunks(sources, chunk_bytes if chunk_bytes else chunk_bytes_for(workers))
    if workers <= 1:
        for chunk in chunks:
            take(_parse_chunk(chunk, engine, names, keep))
    else:
        # at most `workers` chunks in flight: memory grows by one chunk's working set per worker
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="parse") as pool:
            flight: deque[Future[_Parsed]] = deque()
            for chunk in chunks:
                flight.append(pool.submit(_parse_chunk, chunk, engine, names, keep))
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


def _parse_chunk(chunk: Chunk, engine: str, names: list[str], keep_lines: bool) -> _Parsed:
    """One chunk's tables, on its own (no state from other chunks: chunks parse in parallel)."""
    if engine == "fast" and COMPILED:
        lines, recs = scan_records(chunk.pieces)
    else:
        lines = split_lines(chunk.pieces)
        recs = find_records(lines, "lark" if engine == "lark" else "fast")
    records = _route(recs.records, recs)
    damaged = damaged_records(chunk, lines, records, recs)
    trusted = records.filter(~pl.col("rec").is_in(damaged["rec"].implode())) if damaged.height else records
    buckets, unparsed, raw = _parse_families(trusted, recs, engine)
    unparsed.append(damaged)
    unparsed.append(orphans(recs))
    hit, read = unexpected_lines(trusted, recs)
    typed = not lines.bad_utf8_lines and read and hit.size and not any(p.height for p in unparsed)
    # the lines inside single-line records the chunk's only unparsed lines: built from their spans
    unparsed_frame = unexpected_table(trusted, recs, hit, names, chunk.last) if typed else None
    if unparsed_frame is None:
        unparsed.append(_unexpected(trusted, recs, hit, read))
        unparsed_frame = unparsed_table(unparsed, lines.frame, records, recs.continuations, names, chunk.last)
    # the scanner's records carry no header text: the tables build the columns they read, for their rows
    strings = partial(header_strings, recs) if "ts_text" not in records.columns else None
    tables, carry = assemble_chunk(buckets, records, names, unparsed_frame, chunk.last, raw, strings)
    counts = np.bincount(records["_code"].to_numpy() + 1, minlength=len(FAMILY_NAMES) + 1)
    families = {str(FAMILY_NAMES[c - 1]) if c else "None": int(n) for c, n in enumerate(counts.tolist()) if n}
    stamps = with_strings(recs, records[[0, records.height - 1]], ["ts_text"])["ts_text"] if records.height else None
    return _Parsed(
        tables=tables, carry=carry, lines=lines.frame.select("file", "line", "text") if keep_lines else None,
        bytes=chunk.size, line_count=lines.frame.height, records=records.height,
        continuation_lines=recs.continuations.height, orphan_lines=recs.orphans.height,
        unparsed=len(unparsed_frame), bad_utf8_lines=lines.bad_utf8_lines, families=families,
        first_ts=stamps[0] if stamps is not None else None,
        last_ts=stamps[-1] if stamps is not None else None,
    )


def _unexpected(records: pl.DataFrame, recs: Records, hit: np.ndarray, read: bool) -> pl.DataFrame:
    """unexpected_continuations of the continuation lines `hit` of single-line records only (most chunks
    have none: the frame of every continuation line is not joined); `read`: the blank ones are out already."""
    cont = recs.continuations[hit] if hit.size else recs.continuations.clear()
    if hit.size and not read:  # blank lines are no news (unexpected_continuations skips them too)
        cont = cont.filter(pl.col("text").str.strip_chars() != "")
    if not cont.height:
        return _NOTHING_UNEXPECTED
    part = records.filter(pl.col("rec").is_in(cont["rec"].implode()))
    return unexpected_continuations(with_strings(recs, part, ["cls", "method"]), cont)


_NOTHING_UNEXPECTED = pl.DataFrame(schema={"file": pl.UInt16, "line": pl.UInt32, "text": pl.String,
                                           "reason": pl.String})


def _route(records: pl.DataFrame, recs: Records | None = None) -> pl.DataFrame:
    """Add `family` (grammar rule, GENERIC, or null = known method, unknown body) and its code `_code`.

    The compiled scanner routes most records itself (`_fam`); the rest go through `_route_polars`
    (the text columns it reads built for them only, from `recs`)."""
    if "_fam" in records.columns:
        codes = records["_fam"].fill_null(UNDECIDED).to_numpy().copy()
        todo = np.flatnonzero(codes == UNDECIDED)
    else:
        codes = np.full(records.height, -1, dtype=np.int32)
        todo = np.arange(records.height)
    if todo.size:
        part = records[todo.tolist()] if todo.size < records.height else records
        codes[todo] = _route_polars(part if recs is None else with_strings(recs, part, ["cls", "method", "body"]))
    family = pl.Series("family", FAMILY_NAMES).gather(pl.Series(codes).replace(-1, None))
    return records.with_columns(family, pl.Series("_code", codes, dtype=pl.Int32))


def _route_polars(records: pl.DataFrame) -> np.ndarray:
    """Family codes by vectorised regexes: each (class, METHOD) group tries its routes in order on
    the bodies no earlier route took (first match wins), a literal prefix by `starts_with`."""
    codes = np.full(records.height, -1, dtype=np.int32)
    body = records["body"]
    groups = records.select("cls", "method", pl.int_range(pl.len(), dtype=pl.UInt32).alias("_i")).group_by(
        "cls", "method").agg("_i")
    for cls, method, at in groups.iter_rows():
        routes = ROUTES.get((cls, method))
        at = np.asarray(at, dtype=np.int64)
        if routes is None:
            codes[at] = FAMILY_CODE[GENERIC]
            continue
        texts = body.gather(at)
        for route in routes:
            hit = _prefix_match(texts, route.prefix).fill_null(False).to_numpy()
            codes[at[hit]] = FAMILY_CODE[route.family]
            at, texts = at[~hit], texts.filter(pl.Series(~hit))
            if not at.size:
                break
    return codes


# every family whose rows make the rmcounter table (the scanner may assemble them all itself)
_RMCOUNTER_FAMILIES = [f for f, targets in TARGETS.items() if any(t.table == "_rmcounter_lines" for t in targets)]
_REGEX_SYNTAX = set("\\.^$*+?()[]{}|")


def _prefix_match(texts: pl.Series, prefix: str) -> pl.Series:
    if prefix == "":
        return pl.Series(np.ones(texts.len(), dtype=bool))
    if prefix == "^$":
        return texts == ""
    if prefix.startswith("^") and not _REGEX_SYNTAX.intersection(prefix[1:]):
        return texts.str.starts_with(prefix[1:])
    return texts.str.contains(prefix)


def _parse_families(
    records: pl.DataFrame, recs: Records, engine: str
) -> tuple[dict[str, list[pl.DataFrame]], list[pl.DataFrame], dict[str, list[Unframed]]]:
    """Every family's rows, by bucket; the records none could read; and the rows of the compiled
    tables' buckets unframed (replay.parsing.columns), when the scanner took all of them."""
    buckets: dict[str, list[pl.DataFrame]] = {}
    raw: dict[str, list[Unframed]] = {}
    own: dict[str, list[Unframed]] = {}  # the compiled readers' rows the assembly types in C (columns_schedule)
    unparsed: list[pl.DataFrame] = []
    unknown = records.filter(pl.col("family").is_null())
    if unknown.height:
        unparsed.append(with_strings(recs, unknown, ["cls", "method"]).select(
            "rec", reason=pl.concat_str(pl.lit("known message "), "cls", pl.lit("."), "method",
                                        pl.lit(" with a body of no known shape"))))
    assembled: frozenset[str] = frozenset()
    if engine == "fast" and recs.blocks:
        rmc = records.filter(pl.col("family").is_in(_RMCOUNTER_FAMILIES))
        if "_rmcounter_rows" in compiled_buckets():
            got = rmcounter_scan(rmc, recs.blocks)
            if got is not None:
                own["_rmcounter_rows"] = [BlockRows("_rmcounter_rows", got[0], got[1], rmc["rec"])]
                assembled = frozenset(_RMCOUNTER_FAMILIES)
        elif (ready := rmcounter_rows(rmc, recs.blocks)) is not None:
            buckets["_rmcounter_rows"] = [ready]
            assembled = frozenset(_RMCOUNTER_FAMILIES)
        # every single-line family with templates, in one pass; what they leave goes on below
        filled, taken, fill_raw = fill_rows(records, recs.blocks, skip=assembled, raw=compiled_buckets())
        raw = {**{b: list[Unframed](rows) for b, rows in fill_raw.items()}, **own}
        for table, rows in filled.items():
            buckets.setdefault(table, []).append(rows)
        whole = records  # before the filter: the positions fill_rows' rows are in
        if taken.any():
            records = records.filter(pl.Series(~taken))
    # the family paths read only these: partitioning fewer columns copies less
    slim = [c for c in ("rec", "family", "body", "_piece", "_bs", "_be") if c in records.columns or c == "body"]
    parts: dict[str, pl.DataFrame] = {}
    # the bodies of the records still to read (the scanner's records carry none: built for these only)
    rest = records.filter(pl.col("family").is_not_null() & ~pl.col("family").is_in(list(assembled)))
    kept, rest = columns_text.take_generic(rest, recs)  # the messages table typed in C: no body, no frame
    if kept is not None:
        raw.setdefault(columns_text.BUCKET, []).append(kept)
    for (family,), part in with_strings(recs, rest, ["body"]).select(slim).partition_by(
        "family", as_dict=True, maintain_order=True
    ).items():
        if family == GENERIC:
            buckets.setdefault("messages", []).append(full_bodies(part, recs.continuations))
        elif family not in assembled:
            parts[family] = part
    if "jobs" in raw and SECTIONS in parts:  # the DEBUG schedule's rows join the jobs typed in C
        joined = with_sections(raw["jobs"], parts[SECTIONS], recs.continuations, recs.blocks)
        if joined is not None:
            raw["jobs"] = [joined]
            del parts[SECTIONS]
    if engine == "fast" and recs.blocks:
        _take_unframed(parts, recs, raw, whole)
    for family, (rows, failed) in _family_rows(parts, recs, engine).items():
        if failed.height:  # (rec, reason): the grammar's own error message
            unparsed.append(failed)
        for target in TARGETS.get(family, []):
            consts = {**target.consts, "_family": family}
            buckets.setdefault(target.table, []).append(rows.hstack([
                pl.Series(k, [v], dtype=pl.String).new_from_index(0, rows.height) for k, v in consts.items()]))
    for bucket in [b for b in raw if b in buckets]:
        # some of the bucket's rows came from the regex or lark paths: the reference assembly takes
        # them all (the scanner's first, as `fill_rows` would have put them)
        buckets[bucket].insert(0, frames_of(raw.pop(bucket)))
    return buckets, unparsed, raw


def _take_unframed(parts: dict[str, pl.DataFrame], recs: Records, raw: dict[str, list[Unframed]],
                   whole: pl.DataFrame) -> None:
    """The createState, occupancy and doExpansion records the compiled readers read whole, kept
    unframed in `raw` for their tables typed in C (replay.parsing.columns_schedule, columns_expansions)
    and taken out of `parts` (`whole`: the chunk's records, as `fill_rows` numbers them)."""
    compiled = compiled_buckets()
    if "do_expansion" in parts and "expansions" in compiled:
        merged = merged_rows(parts["do_expansion"], recs.blocks, raw.get("expansions"), whole)
        if merged is not None:
            raw["expansions"] = [merged]
            del parts["do_expansion"]
    if "schedule_state" in parts and "_schedule_lines" in compiled:
        got = schedule_scan(parts["schedule_state"], recs.continuations, recs.blocks)
        if got is not None and not got[0][4]:  # the scanner refused no record
            raw["_schedule_lines"] = [BlockRows("_schedule_lines", *got)]
            del parts["schedule_state"]
    if "pool_tables" in parts and "pool_tables" in compiled:  # replay.parsing.columns_small
        pools = pool_scan(parts["pool_tables"], recs.continuations, recs.blocks)
        if pools is not None and taken_all(parts["pool_tables"], pools):
            raw["pool_tables"] = [pools]
            del parts["pool_tables"]
    if "occupancy_table" in parts and "_occupancy_lines" in compiled:
        part = parts["occupancy_table"]
        got = occupancy_scan(part, recs.continuations, recs.blocks)
        if got is not None and part["rec"].is_in(np.frombuffer(got[0][0], dtype=np.int32)).all():  # rows for all
            raw.setdefault("_occupancy_lines", []).append(BlockRows("_occupancy_lines", *got))
            del parts["occupancy_table"]


def _family_rows(parts: dict[str, pl.DataFrame], recs: Records,
                 engine: str) -> dict[str, tuple[pl.DataFrame, pl.DataFrame]]:
    """(rows, failures) per family. Each path takes what it can and hands the rest on: the
    compiled createState reader to the polars regexes (every family's in one call) and handlers,
    those to the grammar, which decides (its failures carry the grammar's own error message)."""
    cont = recs.continuations
    found: dict[str, list[pl.DataFrame]] = {family: [] for family in parts}
    todo: dict[str, pl.DataFrame | None] = dict(parts)  # None: every record of the family has its rows

    def take(family: str, rows: pl.DataFrame, failed: pl.DataFrame) -> None:
        found[family].append(rows)
        left = todo[family]
        todo[family] = None if left is None or not failed.height else left.join(failed.select("rec"), on="rec",
                                                                                 how="semi")

    if recs.blocks and "schedule_state" in parts:
        take("schedule_state", *schedule_rows(parts["schedule_state"], cont, recs.blocks))
    if recs.blocks and "occupancy_table" in parts:
        take("occupancy_table", *occupancy_rows(parts["occupancy_table"], cont, recs.blocks))
    if recs.blocks and "sched_sections" in parts:
        take("sched_sections", *section_rows(parts["sched_sections"], cont, recs.blocks))
    if recs.blocks and "pool_tables" in parts:
        take("pool_tables", *pool_rows(parts["pool_tables"], cont, recs.blocks))
    if engine != "lark":
        batch = {f: p for f, p in todo.items() if p is not None and f in fast.REGEXES}
        for family, (rows, failed) in fast.regex_rows(batch).items():
            take(family, rows, failed)
        for family, part in list(todo.items()):
            if part is not None and family in fast.HANDLERS:
                take(family, *fast.fast_rows(family, part, cont))
    out = {}
    for family, got in found.items():
        failed = pl.DataFrame(schema={"rec": pl.UInt32, "reason": pl.String})
        left = todo[family]
        if left is not None:
            more, failed = _lark_rows(family, left, cont)
            got.append(more)
        out[family] = (got[0] if len(got) == 1 else
                       pl.concat(got, how="diagonal_relaxed").sort("rec", maintain_order=True), failed)
    return out


_CACHED_BODY = 1024  # longer bodies (whole tables) rarely repeat, and would hold much memory


@lru_cache(maxsize=4096)
def _cached_body(family: str, text: str) -> tuple[dict[str, Any], ...] | str:
    # the same short body parses to the same rows: the bootstrap a restarted RM prints again,
    # the per-cycle lines only the grammar reads
    from replay.parsing import grammar

    got = grammar.parse_body(family, text)
    return got if isinstance(got, str) else tuple(got)


def _body_rows(family: str, text: str) -> Sequence[dict[str, Any]] | str:
    """grammar.parse_body, remembered for short bodies (its rows are only read: callers copy them)."""
    if len(text) <= _CACHED_BODY:
        return _cached_body(family, text)
    # lark and the grammar load here, on the first record only the grammar reads (0.1 s of start-up)
    from replay.parsing import grammar

    return grammar.parse_body(family, text)


def _lark_rows(family: str, part: pl.DataFrame, cont: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    texts = full_bodies(part, cont) if family in MULTILINE else part.select("rec", text="body")
    rows: list[dict[str, Any]] = []
    bad_rec: list[int] = []
    bad_reason: list[str] = []
    for rec, text in texts.iter_rows():
        got = _body_rows(family, text or "")
        if isinstance(got, str):
            bad_rec.append(rec)
            bad_reason.append(got)
            continue
        rows.extend({"rec": rec, **row} for row in got)
    if rows:
        frame = pl.from_dicts(rows, infer_schema_length=None)
    else:
        frame = pl.DataFrame({"rec": []}, schema={"rec": pl.UInt32})
    failed = pl.DataFrame({"rec": bad_rec, "reason": bad_reason}, schema={"rec": pl.UInt32, "reason": pl.String})
    return frame.with_columns(pl.col("rec").cast(pl.UInt32)), failed
