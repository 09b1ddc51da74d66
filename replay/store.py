"""Write and read the parsed tables as Parquet, byte-identically for the same input."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from replay.tables import SCHEMAS, conform

# Every option fixed (pyarrow writes no creation time), so the same rows give the same bytes.
WRITE_OPTIONS = {"compression": "zstd", "compression_level": 1, "use_dictionary": True,
                 "write_statistics": True, "data_page_version": "1.0"}


def _arrow_schema(name: str) -> pa.Schema:
    return conform(pl.DataFrame(), SCHEMAS[name]).to_arrow().schema


class ParquetSink:
    """Appends each chunk's tables to OUT/<table>.parquet as row groups (memory stays bounded)."""

    def __init__(self, out: str | Path) -> None:
        self.root = Path(out)
        self.root.mkdir(parents=True, exist_ok=True)
        self.writers: dict[str, pq.ParquetWriter] = {}

    def add(self, tables: dict[str, pl.DataFrame]) -> None:
        """Write one chunk's rows."""
        for name, df in tables.items():
            if df.height == 0:
                continue
            if name not in self.writers:
                self.writers[name] = pq.ParquetWriter(self.root / f"{name}.parquet", _arrow_schema(name), **WRITE_OPTIONS)
            self.writers[name].write_table(df.to_arrow().cast(_arrow_schema(name)))

    def close(self) -> list[Path]:
        """Finish every file; a table with no rows is written empty (with its schema)."""
        for name in SCHEMAS:
            if name in self.writers:
                self.writers[name].close()
            else:
                pq.write_table(_arrow_schema(name).empty_table(), self.root / f"{name}.parquet", **WRITE_OPTIONS)
        return [self.root / f"{name}.parquet" for name in SCHEMAS]


def write_tables(tables: dict[str, pl.DataFrame], out: str | Path) -> list[Path]:
    """OUT/<table>.parquet for every table of a `replay.parse` result."""
    sink = ParquetSink(out)
    sink.add(tables)
    return sink.close()


def read_tables(out: str | Path) -> dict[str, pl.DataFrame]:
    """The tables of a `rmreplay parse -o OUT` directory."""
    root = Path(out)
    return {name: pl.read_parquet(root / f"{name}.parquet") for name in SCHEMAS if (root / f"{name}.parquet").exists()}
