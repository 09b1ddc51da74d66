"""Write and read the parsed tables as Parquet, byte-identically for the same input."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pyarrow.parquet as pq

from replay.tables import SCHEMAS


def write_tables(tables: dict[str, pl.DataFrame], out: str | Path) -> list[Path]:
    """OUT/<table>.parquet for every table; same tables -> same bytes (no timestamps, fixed options)."""
    root = Path(out)
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for name in SCHEMAS:
        path = root / f"{name}.parquet"
        arrow = tables[name].to_arrow()
        # pyarrow writes no creation time; fixing every option keeps the bytes stable
        pq.write_table(arrow, path, compression="zstd", compression_level=3, use_dictionary=True,
                       write_statistics=True, row_group_size=1 << 20, data_page_version="1.0")
        written.append(path)
    return written


def read_tables(out: str | Path) -> dict[str, pl.DataFrame]:
    """The tables of a `rmreplay parse -o OUT` directory."""
    root = Path(out)
    return {name: pl.read_parquet(root / f"{name}.parquet") for name in SCHEMAS if (root / f"{name}.parquet").exists()}
