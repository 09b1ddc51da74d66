"""The Parquet encoding of the parsed tables: writer CPU and file sizes, option by option.

    python bench/bench_encoding.py PARSE_DIR [--runs N] [--json OUT]

PARSE_DIR is a `rmreplay parse -o` directory (of i_mega24, say). Its 22 tables are read back,
row group by row group, and written again with each candidate encoding: compression (zstd 1,
LZ4_RAW, snappy, none) and dictionaries (every column, string columns only, none), as the parse
writes them (one row group per chunk) and as one row group per table (`whole`: the writer would
hold a table's every row until the end). Each figure is the median CPU seconds of `--runs`
(default 3) and the total size of the 22 files. The parse's own choice is replay.parsing.store.write_options.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

COMPRESSIONS = {"zstd 1": {"compression": "zstd", "compression_level": 1}, "lz4_raw": {"compression": "lz4"},
                "snappy": {"compression": "snappy"}, "none": {"compression": "none"}}
DICTIONARIES = ("all", "strings", "none")


def _read(root: Path) -> dict[str, tuple[pa.Schema, list[pa.Table]]]:
    tables = {}
    for path in sorted(root.glob("*.parquet")):
        pf = pq.ParquetFile(path)
        tables[path.name] = (pf.schema_arrow, [pf.read_row_group(i) for i in range(pf.num_row_groups)])
    return tables


def _options(schema: pa.Schema, compression: str, dictionary: str) -> dict[str, object]:
    strings = [f.name for f in schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
    use = {"all": True, "strings": strings, "none": False}[dictionary]
    return {**COMPRESSIONS[compression], "use_dictionary": use, "write_statistics": True, "data_page_version": "1.0"}


def _write(tables: dict[str, tuple[pa.Schema, list[pa.Table]]], out: Path, compression: str, dictionary: str,
           whole: bool) -> tuple[float, int]:
    """(CPU seconds, bytes) of writing every table once."""
    start = time.process_time()
    for name, (schema, groups) in tables.items():
        with pq.ParquetWriter(out / name, schema, **_options(schema, compression, dictionary)) as writer:
            for group in ([pa.concat_tables(groups)] if whole and groups else groups):
                writer.write_table(group)
    cpu = time.process_time() - start
    return cpu, sum((out / name).stat().st_size for name in tables)


def main() -> int:
    """Print (and optionally save) writer CPU and sizes per encoding."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("parsed", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tables = _read(args.parsed)
    got = []
    with tempfile.TemporaryDirectory() as tmp:
        for whole in (False, True):
            for compression in COMPRESSIONS:
                for dictionary in DICTIONARIES:
                    runs = [_write(tables, Path(tmp), compression, dictionary, whole) for _ in range(args.runs)]
                    row = {"compression": compression, "dictionary": dictionary,
                           "row_groups": "one per table" if whole else "one per chunk",
                           "cpu_s": statistics.median(r[0] for r in runs), "mb": runs[-1][1] / 1e6}
                    got.append(row)
                    print(f"{row['row_groups']:14s} {compression:8s} dict {dictionary:8s} "
                          f"{row['cpu_s']:.3f} CPU s  {row['mb']:7.2f} MB", flush=True)
    if args.json:
        args.json.write_text(json.dumps(got, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
