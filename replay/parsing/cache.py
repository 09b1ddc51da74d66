"""One parse, reused: every command reads the tables of a log it has parsed before from a cache.

The cache lives in `$RMREPLAY_CACHE` (default `~/.cache/rmreplay`; logs are often read-only, and
the bundled fixtures are, so nothing is written next to them), one slot per input:
`<key>/tables/` (a parse directory, its manifest written last), `<key>/lines.parquet` (the raw
lines, for the TUI's Log tab) and `<key>/audits/` (the stored audits, replay.apps.stored). The key
hashes the input's content (each file's name and bytes) and the source of the code that produces
the tables and the audit (grammars, replay, rmref), so an edited log or scheduler never serves a
stale answer. Hashing a 137 MB log takes about half a second, so each file's digest is also kept
by its path, size, modification time and inode (`digests.json`), as git's index does, and only a
file that changed is hashed again.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import polars as pl

from replay.parsing.logdir import Inputs, find_inputs
from replay.parsing.digest import cache_root, content_digest, stat_key
from replay.parsing.keys import slot_of
from replay.parsing.leftovers import remove_left, temp_name
from replay.parsing.manifest import (build_manifest, content_of, input_record_of, parse_dir_manifest, write_manifest)
from replay.parsing.outdir import atomic_output_dir, submitted
from replay.parsing.readable import input_names, read_manifest_quietly, results_manifest, results_slot
from replay.parsing.sources import InputError, Source
from replay.parsing.store import ParquetSink, ParquetTables, columns_record, read_tables, require_columns
from replay.parsing.tables import Frame
from replay.progress import OnProgress, Progress, quiet

if TYPE_CHECKING:
    from replay.parsing.pipeline import Summary

# the parse pipeline (lark, pyarrow.compute) is imported where a parse runs: a command that reads
# its tables from the cache or a parse directory does not load it

@dataclass(frozen=True)
class Opened:
    """A command's input as tables: from a parse directory, the cache, or a parse just made."""

    name: str  # what to call it: the files, or the parse directory
    tables: MutableMapping[str, pl.DataFrame]  # a dict, or ParquetTables read on use (`columns`)
    lines: pl.DataFrame | None  # every raw line (file, text, line) when asked for and known
    slot: Path | None  # the cache slot (None: not cached)
    from_cache: bool
    note: str | None  # what the folders given held besides the RM's log
    root: Path | None = None  # the tables' folder on disk (a parse directory, the slot's tables; None: in memory only)


def open_input(paths: Sequence[str | Path], use_cache: bool = True, progress: OnProgress | None = None,
               keep_lines: bool = False, columns: Mapping[str, Sequence[str]] | None = None) -> Opened:
    """The tables of `paths`: a `rmreplay parse -o` directory, or logs (files and log folders) read
    from the cache or parsed (and cached); `keep_lines` also gives every raw line. With `columns`,
    only those tables' columns: read from disk on each use when the parse is on disk (a parse
    directory, the cache), so a long log's tables are never all in memory."""
    say = progress or quiet
    if not paths:
        raise InputError("no input: name rm.log files, a log folder or a `rmreplay parse -o` directory")
    manifest = parse_dir_manifest(paths[0])
    if manifest is not None:
        if len(paths) > 1:
            raise InputError(f"{paths[0]} is a parse directory: give it alone, not with other input")
        say(Progress(f"reading the tables of {paths[0]}"))
        if columns:
            require_columns(paths[0], manifest)
        tables = ParquetTables(paths[0], columns) if columns else read_tables(paths[0])
        content = content_of(manifest)
        slot = slot_of(content) if content and use_cache else None
        return Opened(Path(paths[0]).name, tables, None, slot, False, None, Path(paths[0]))
    made = results_manifest(paths[0])
    if made is not None:
        return _open_results_input(paths, made, use_cache, say, keep_lines, columns)
    inputs = find_inputs(list(paths))
    name = _name(inputs.sources)
    if use_cache:
        say(Progress("hashing the input"))  # once per file: then its digest is memoised
    content = content_digest(inputs.sources) if use_cache else None
    slot = slot_of(content) if content else None
    if slot is not None and read_manifest_quietly(slot / "tables"):
        say(Progress("reading the cached parse"))
        tables = ParquetTables(slot / "tables", columns) if columns else read_tables(slot / "tables")
        lines = _cached_lines(slot, inputs, say) if keep_lines else None
        return Opened(name, tables, lines, slot, True, inputs.note(), slot / "tables")
    return _parse_and_cache(inputs, name, content, use_cache, say, keep_lines, columns)


def _open_results_input(paths: Sequence[str | Path], manifest: Mapping[str, Any], use_cache: bool, say: OnProgress,
                        keep_lines: bool, columns: Mapping[str, Sequence[str]] | None) -> Opened:
    """The tables of the log a results folder was made from, read from the parse cache (its manifest
    names the input by digest, the cache's key)."""
    named = input_names(manifest)
    slot = results_slot(paths, manifest, use_cache)
    say(Progress(f"reading the cached parse of {named}, the input of {paths[0]}"))
    tables = ParquetTables(slot / "tables", columns) if columns else read_tables(slot / "tables")
    lines = pl.read_parquet(slot / "lines.parquet") if keep_lines and (slot / "lines.parquet").exists() else None
    return Opened(named, tables, lines, slot, True, None, slot / "tables")


def _name(sources: list[Source]) -> str:
    return ", ".join(s.name for s in sources) if len(sources) <= 2 else f"{sources[0].name} (+{len(sources) - 1})"


def _cached_lines(slot: Path, inputs: Inputs, say: OnProgress) -> pl.DataFrame:
    """The slot's raw lines; read from the logs (and kept) when a command without them cached the parse."""
    path = slot / "lines.parquet"
    if path.exists():
        return pl.read_parquet(path)
    from replay.parsing.pipeline import read_lines

    say(Progress("reading the raw lines"))
    lines = read_lines(inputs.sources)
    try:
        remove_left(slot, ".tmp-")
        tmp = slot / temp_name(".tmp-", "-lines.parquet")
        lines.write_parquet(tmp, compression="zstd")
        tmp.replace(path)
    except OSError:
        pass
    return lines


class _Tee:
    """The parse's sink: every chunk's tables appended to the cache slot's Parquet files (on the
    writer thread, beside the parse) while the cache can be written, and kept in memory too unless
    `on_disk_only` (a caller that reads `columns` on use from the slot never needs the copy)."""

    def __init__(self, out: Path | None, columns: Mapping[str, Sequence[str]] | None = None,
                 on_disk_only: bool = False) -> None:
        self.disk: ParquetSink | None = None
        if out is not None:
            try:
                self.disk = ParquetSink(out)
            except OSError:
                self.disk = None
        from replay.parsing.pipeline import MemorySink

        self.memory = MemorySink(columns) if self.disk is None or not on_disk_only else None

    def add(self, tables: Mapping[str, Frame]) -> None:
        """One chunk's tables."""
        if self.memory is not None:
            self.memory.add(tables)
        if self.disk is not None:
            try:
                self.disk.add(tables)
            except OSError:
                self.disk = None  # a full disk or a read-only home: carry on without the cache

    def close(self) -> bool:
        """Finish the Parquet files; whether they are whole."""
        if self.disk is None:
            return False
        try:
            self.disk.close()
            return True
        except OSError:
            return False


def _parse_and_cache(inputs: Inputs, name: str, content: str | None, use_cache: bool, say: OnProgress,
                     keep_lines: bool, columns: Mapping[str, Sequence[str]] | None = None) -> Opened:
    """Parse the input; with the cache, write its slot on the way. With `columns` the tables are
    then read on use from the slot, as a cached run's are, so the parse holds no copy of them."""
    from replay.parsing.limits import parse_threads
    from replay.parsing.pipeline import named_lines, run

    tmp = None
    if use_cache and content:
        remove_left(cache_root(), "tmp-")  # slots half written by a process that was killed
        tmp = cache_root() / temp_name("tmp-")
    before = [stat_key(s.path) for s in inputs.sources]
    sink = _Tee(tmp / "tables" if tmp else None, columns, on_disk_only=bool(columns))
    kept: list[pl.DataFrame] = []
    try:
        summary = run(inputs, sink, progress=say, workers=parse_threads(),
                      lines_to=kept.append if keep_lines else None)
    except BaseException:
        _remove(tmp)
        raise
    whole = sink.close()
    lines = named_lines(kept, summary.files) if keep_lines else None
    slot = None
    unchanged = before == [stat_key(s.path) for s in inputs.sources]  # a live log grew: do not key it
    if tmp is not None and whole and content and unchanged:
        slot = _keep(tmp, content, inputs, lines, sink.disk.rows if sink.disk is not None else None)
    tables: MutableMapping[str, pl.DataFrame]
    if sink.memory is not None:
        tables = sink.memory.tables()
    elif slot is not None and columns:
        tables = ParquetTables(slot / "tables", columns)
    elif whole and tmp is not None and columns:  # a live log that grew while read: its tables, not kept as its parse
        tables = dict(ParquetTables(tmp / "tables", columns))
    else:  # the disk failed part-way with no copy in memory: the same parse again, into memory
        _remove(tmp)
        return _parse_and_cache(inputs, name, content, False, say, keep_lines, columns)
    _remove(tmp)
    return Opened(name, tables, lines, slot, False, inputs.note(), slot / "tables" if slot is not None else None)


_T = TypeVar("_T")


@contextmanager
def _beside(fn: Callable[[list[Source]], _T], sources: list[Source], wanted: bool) -> Iterator[Future[_T] | None]:
    """Run fn(sources) on a thread while the body runs (hashlib lets go of the GIL)."""
    if not wanted:
        yield None
        return
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="digest") as pool:
        yield submitted(pool, fn, sources)


def _keep(tmp: Path, content: str, inputs: Inputs, lines: pl.DataFrame | None,
          rows: Mapping[str, int] | None = None) -> Path | None:
    """Finish the temporary slot (manifest last, `rows` the tables' row counts as written) and move
    it into place; None when it cannot be written."""
    slot = slot_of(content)
    try:
        if lines is not None:
            lines.write_parquet(tmp / "lines.parquet", compression="zstd")
        write_manifest(tmp / "tables", build_manifest(tmp / "tables", "parse", input_record_of(inputs.sources),
                                                      columns_record(), rows=rows))
        shutil.rmtree(slot, ignore_errors=True)
        tmp.rename(slot)
        return slot
    except OSError:
        return None


def _remove(tmp: Path | None) -> None:
    if tmp is not None:
        shutil.rmtree(tmp, ignore_errors=True)


def parse_to(paths: Sequence[str | Path], out: str | Path, engine: str = "fast", progress: OnProgress | None = None,
             chunk_bytes: int | None = None, force: bool = False, workers: int = 1) -> Summary:
    """`rmreplay parse -o OUT`: the tables as OUT/<table>.parquet, then OUT/manifest.json, written whole or
    not at all (replay.parsing.outdir); the input's digests are computed beside the parse."""
    from replay.parsing.pipeline import run

    inputs = find_inputs(list(paths))
    with atomic_output_dir(out, force, command="parse", inputs=paths) as tmp, \
            _beside(input_record_of, inputs.sources, True) as record:
        sink = ParquetSink(tmp)
        try:
            summary = run(inputs, sink, engine=engine, progress=progress, chunk_bytes=chunk_bytes, workers=workers)
        except BaseException:
            sink.abort()  # its writer thread stops before the directory is discarded
            raise
        sink.close()
        assert record is not None
        input_record = record.result()
        write_manifest(tmp, build_manifest(tmp, "parse", input_record, columns_record(), rows=sink.rows))
    return summary
