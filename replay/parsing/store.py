"""Write and read the parsed tables as Parquet, byte-identically for the same input."""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from replay.parsing.manifest import check_manifest
from replay.parsing.outdir import atomic_output_dir, submitted
from replay.parsing.sources import InputError
from replay.parsing.tables import SCHEMAS, Dtype, Frame, conform

if TYPE_CHECKING:  # pyarrow loads where a table is written: reading one (polars) does not need it
    import pyarrow as pa
    import pyarrow.parquet as pq

# Every option fixed (pyarrow writes no creation time), so the same rows give the same bytes.
# LZ4_RAW ("lz4" in pyarrow) and dictionaries on string columns only: on i_mega24's tables the
# writer takes 0.38 CPU s where zstd 1 with every column dictionary-encoded took 0.59, for files
# of 7.2 MB in place of 5.6 (docs/benchmarks.md, "Parquet encoding").
WRITE_OPTIONS = {"compression": "lz4", "write_statistics": True, "data_page_version": "1.0"}


def write_options(schema: pa.Schema) -> dict[str, object]:
    """The writer's options for a table of `schema`: WRITE_OPTIONS, a dictionary for each string column."""
    import pyarrow as pa

    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    return {**WRITE_OPTIONS, "use_dictionary": strings}


def _parquet_writer(path: str | Path, schema: pa.Schema) -> pq.ParquetWriter:
    """A Parquet file's writer, with the options above."""
    import pyarrow.parquet as pq

    return pq.ParquetWriter(path, schema, **write_options(schema))


@lru_cache(maxsize=None)
def arrow_schema(name: str) -> pa.Schema:
    """The Arrow schema a table is written in: each column's type as polars exports it."""
    import pyarrow as pa

    types = [_arrow_type(dtype) for dtype in SCHEMAS[name].values()]
    if any(t is None for t in types):  # a type not mapped below: polars' own export (an empty query)
        return conform(pl.DataFrame(), SCHEMAS[name]).to_arrow().schema
    return pa.schema([pa.field(col, t) for col, t in zip(SCHEMAS[name], types)])


def _arrow_type(dtype: Dtype) -> pa.DataType | None:
    """The Arrow type polars' `to_arrow` gives a column of `dtype` (None: not one the tables use).
    Mapped here, not found by exporting an empty frame per table: the 22 queries took about a tenth
    of a small log's parse (tests/unit/test_store_encoding.py holds the two to each other)."""
    import pyarrow as pa

    if isinstance(dtype, pl.List):
        inner = _arrow_type(dtype.inner)
        return None if inner is None else pa.large_list(inner)
    if isinstance(dtype, pl.Datetime):
        return pa.timestamp(dtype.time_unit) if dtype.time_zone is None else None
    plain = {pl.UInt32: pa.uint32, pl.Int64: pa.int64, pl.Float64: pa.float64, pl.Boolean: pa.bool_,
             pl.String: pa.large_string}
    return next((make() for kind, make in plain.items() if dtype == kind), None)


def _as_schema(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """`table` in `schema`'s types; cast only where they differ (Table.cast loads pyarrow.compute,
    0.07 s, and the assembled tables come in their schema's types already)."""
    return table if table.schema.equals(schema) else table.cast(schema)


class ParquetSink:
    """Appends each chunk's tables to OUT/<table>.parquet as row groups (memory stays bounded).

    The compression and writing run on one background thread (pyarrow releases the GIL there),
    so they overlap the parsing of the next chunk on the second core; one thread keeps the row
    groups in order, so the bytes are the same as a sequential write."""

    def __init__(self, out: str | Path) -> None:
        self.root = Path(out)
        self.root.mkdir(parents=True, exist_ok=True)
        self.writers: dict[str, pq.ParquetWriter] = {}
        self.rows = dict.fromkeys(SCHEMAS, 0)  # each table's rows so far (the manifest's counts)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="parquet")
        self._pending: Future[None] | None = None

    def add(self, tables: Mapping[str, Frame]) -> None:
        """Queue one chunk's rows (the previous chunk's must be written first: bounded memory); a
        table the compiled scanner built (a pyarrow Table, in its schema's types) goes as it is."""
        batch = {name: _as_schema(df.to_arrow(), arrow_schema(name)) if isinstance(df, pl.DataFrame) else df
                 for name, df in tables.items() if (df.height if isinstance(df, pl.DataFrame) else df.num_rows)}
        for name, table in batch.items():
            self.rows[name] = self.rows.get(name, 0) + table.num_rows
        self._wait()
        self._pending = submitted(self._pool, self._write, batch)

    def _write(self, batch: dict[str, pa.Table]) -> None:
        # the largest first, each let go once written: the next chunk is parsed meanwhile, and its
        # peak memory meets what is left of this batch (each file's bytes do not depend on the order)
        for name in sorted(batch, key=lambda n: -batch[n].nbytes):
            table = batch.pop(name)
            if name not in self.writers:
                path = self.root / f"{name}.parquet"
                self.writers[name] = _parquet_writer(path, arrow_schema(name))
            self.writers[name].write_table(table)
            del table

    def _wait(self) -> None:
        if self._pending is not None:
            self._pending.result()  # re-raises a write error here, in the caller's thread
            self._pending = None

    def abort(self) -> None:
        """Stop after an error or an interrupt: let the write under way finish, close every file
        (the caller discards the directory), raise nothing."""
        # the error that stopped the parse is the one to report, not what it left half done here
        with suppress(Exception):
            self._wait()
        self._pool.shutdown()
        for writer in self.writers.values():
            with suppress(Exception):
                writer.close()

    def close(self) -> list[Path]:
        """Finish every file; a table with no rows is written empty (with its schema)."""
        self._wait()
        self._pool.shutdown()
        for name in SCHEMAS:
            if name in self.writers:
                self.writers[name].close()
            else:
                # a writer closed with no rows (pq.write_table would import pandas: a quarter second)
                _parquet_writer(self.root / f"{name}.parquet", arrow_schema(name)).close()
        return [self.root / f"{name}.parquet" for name in SCHEMAS]


def write_tables(tables: Mapping[str, pl.DataFrame], out: str | Path, inputs: Iterable[str | Path] = (),
                 force: bool = False) -> list[Path]:
    """OUT/<table>.parquet for every table of a `replay.parse` result, and OUT/manifest.json
    (`inputs`: the logs they came from), written whole or not at all (replay/parsing/outdir.py)."""
    with atomic_output_dir(out, force, command="parse", inputs=inputs, extra=columns_record()) as tmp:
        sink = ParquetSink(tmp)
        sink.add(tables)
        sink.close()
    return [Path(out) / f"{name}.parquet" for name in SCHEMAS]


def write_table(frame: pl.DataFrame, path: str | Path) -> Path:
    """One frame as a Parquet file, with the options above (the same rows give the same bytes);
    written beside `path` and renamed in, so a reader never sees half a file."""
    path = Path(path)
    part = path.with_name(f".{path.name}.part")
    table = frame.to_arrow()
    with _parquet_writer(part, table.schema) as writer:  # (pq.write_table imports pandas)
        writer.write_table(table)
    os.replace(part, path)
    return path


COLUMNS = "columns"  # the manifest's record of each table's columns, as the parse wrote them


def columns_record() -> dict[str, dict[str, list[str]]]:
    """What a parse directory's manifest records of its tables' columns (every table is written
    in its schema: ParquetSink), so a reader checks them without opening the files."""
    return {COLUMNS: {name: list(schema) for name, schema in SCHEMAS.items()}}


def require_columns(out: str | Path, manifest: Mapping[str, Any]) -> None:
    """InputError when a `rmreplay parse -o OUT` directory, written by another version, lacks a
    table or a column this version reads: from the manifest's record of the columns, or, in a
    directory of a version that wrote none, from each table's footer."""
    root = Path(out)
    missing = [name for name in SCHEMAS if name not in manifest["tables"]]
    if missing:
        raise InputError(f"{root}: written by rmreplay {manifest.get('rmreplay')}, without the "
                         f"{', '.join(missing)} table(s) this version reads; parse the log again")
    recorded = manifest.get(COLUMNS)
    if isinstance(recorded, dict):
        have = {name: set(recorded.get(name) or ()) for name in SCHEMAS}
    else:  # 22 footers read: about 10 ms on a small log's directory, more on a cold disk
        have = {name: set(pl.read_parquet_schema(root / f"{name}.parquet")) for name in SCHEMAS}
    lacking = [f"{name}.{col}" for name, schema in SCHEMAS.items() for col in schema if col not in have[name]]
    if lacking:
        raise InputError(f"{root}: written by rmreplay {manifest.get('rmreplay')}, without the "
                         f"{', '.join(lacking)} column(s) this version reads; parse the log again")


def read_tables(out: str | Path) -> dict[str, pl.DataFrame]:
    """The tables of a `rmreplay parse -o OUT` directory; InputError when its manifest is missing
    (an interrupted or foreign directory) or a table is not the one rmreplay wrote."""
    root = Path(out)
    manifest = check_manifest(root, "parse")
    require_columns(root, manifest)
    tables = {name: pl.read_parquet(root / f"{name}.parquet") for name in SCHEMAS}
    for name, frame in tables.items():
        if manifest["tables"].get(name) != frame.height:
            raise InputError(f"{root}: {name}.parquet has {frame.height:,} rows, the manifest "
                             f"{manifest['tables'].get(name)}; parse the log again")
    return tables


def all_columns() -> dict[str, tuple[str, ...]]:
    """Every column of every table: as `columns` of `ParquetTables` (and `open_input`), each table
    read from disk on use, so a command holds the tables it is using, not the whole log."""
    return {name: tuple(schema) for name, schema in SCHEMAS.items()}


class ParquetTables(MutableMapping[str, pl.DataFrame]):
    """The tables of a `rmreplay parse -o OUT` directory, read from disk on every access (only
    `columns[name]` of each), so only what a caller is using is in memory: the audit of a long
    log holds its derived state, not every table. Tables set (a --config bootstrap) are kept in
    memory in place of the files'."""

    def __init__(self, out: str | Path, columns: Mapping[str, Sequence[str]]) -> None:
        self.root = Path(out)
        self.columns = {name: list(cols) for name, cols in columns.items()}
        self.held: dict[str, pl.DataFrame] = {}

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name in self.held:
            return self.held[name]
        if name not in self.columns:
            raise KeyError(name)
        return pl.read_parquet(self.root / f"{name}.parquet", columns=self.columns[name])

    def __iter__(self) -> Iterator[str]:
        return iter(dict.fromkeys([*self.columns, *self.held]))

    def __contains__(self, name: object) -> bool:
        # (Mapping's would read the table to find out)
        return name in self.held or name in self.columns

    def __len__(self) -> int:
        return len(set(self.columns) | set(self.held))

    def __setitem__(self, name: str, frame: pl.DataFrame) -> None:
        self.held[name] = frame

    def __delitem__(self, name: str) -> None:
        if name not in self:
            raise KeyError(name)
        self.held.pop(name, None)
        self.columns.pop(name, None)

    def narrow(self, name: str, columns: Sequence[str]) -> pl.DataFrame:
        """Only `columns` of a table (a wide table is never whole in memory for a narrow use)."""
        if name in self.held:
            return self.held[name].select(columns)
        return pl.read_parquet(self.root / f"{name}.parquet", columns=list(columns))

    def where(self, name: str, keep: pl.Expr) -> pl.DataFrame:
        """The rows of a table `keep` is true of, in their order, filtered as they are read from disk."""
        if name in self.held:
            return self.held[name].filter(keep)
        return pl.scan_parquet(self.root / f"{name}.parquet").select(self.columns[name]).filter(keep).collect()

    def cycle_rows(self, name: str, cycle: int) -> pl.DataFrame:
        """One cycle's rows of a table, in their order, read from disk (the row groups'
        statistics skip the rest)."""
        if name in self.held:
            return self.held[name].filter(pl.col("cycle") == cycle)
        return (pl.scan_parquet(self.root / f"{name}.parquet").select(self.columns[name])
                .filter(pl.col("cycle") == cycle).collect())
