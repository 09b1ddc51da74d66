"""A fleet dataset on disk: hive-partitioned Parquet tables and the manifest of its streams.

    DATASET/manifest.parquet                                    one row per stream (MANIFEST)
    DATASET/<table>/cluster=<cluster>/stream=<stream>/part-0.parquet

Each part file is exactly what `rmreplay parse -o` (or, for `ref_*` and `divergences`,
`rmreplay audit -o`) writes for that stream; DuckDB (`hive_partitioning = true`) and polars
(`hive_partitioning=True`) add `cluster` and `stream` from the path. A stream's files are
replaced whole when it is parsed again, so a retried or repeated task leaves one copy.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any
from urllib.parse import quote

import polars as pl

from replay.apps.audit import DIVERGENCE_SCHEMA, REF_SCHEMAS
from replay.parsing.store import write_table
from replay.parsing.tables import SCHEMAS, Schema

MANIFEST = "manifest.parquet"
STAGING = "_staging"  # a task's work in progress (same filesystem: its files move in by rename)
AUDIT_TABLES = (*(f"ref_{k}" for k in REF_SCHEMAS), "divergences")
Row = dict[str, Any]  # a manifest row: one stream, column -> value

MANIFEST_SCHEMA: Schema = {
    "cluster": pl.String, "stream": pl.String, "files": pl.List(pl.String), "hash": pl.String,
    "bytes": pl.Int64, "lines": pl.Int64, "unparsed": pl.Int64, "cycles": pl.Int64,
    "first_ts": pl.Datetime("ms"), "last_ts": pl.Datetime("ms"), "status": pl.String, "error": pl.String,
    "audited": pl.Boolean, "audit_cycles": pl.Int64, "cycles_agree": pl.Int64, "divergences": pl.Int64,
    "note": pl.String,  # a rolled set left out (status skipped: another daemon's log, a DEBUG twin), and why
}


def part_path(dataset: Path, table: str, cluster: str, stream: str) -> Path:
    """Where one stream's rows of one table live."""
    return dataset / table / f"cluster={cluster}" / f"stream={quote(stream, safe='')}" / "part-0.parquet"


def publish(dataset: Path, cluster: str, stream: str, tables_dir: Path, audit_dir: Path | None) -> None:
    """Move a stream's finished files into the dataset, replacing what it had there (each by
    rename, within one filesystem); with no `audit_dir`, the stream's old audit files go."""
    moves = [(tables_dir / f"{name}.parquet", name) for name in SCHEMAS]
    moves += [(audit_dir / f"{name}.parquet", name) for name in AUDIT_TABLES] if audit_dir else []
    for src, name in moves:
        dest = part_path(dataset, name, cluster, stream)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(src, dest)
    if audit_dir is None:
        for name in AUDIT_TABLES:
            part_path(dataset, name, cluster, stream).unlink(missing_ok=True)


def manifest_row(values: Row) -> Row:
    """A row with every manifest column (absent -> None)."""
    return {name: values.get(name) for name in MANIFEST_SCHEMA}


def read_manifest(dataset: Path) -> pl.DataFrame:
    """The manifest (empty, with its schema, for a new dataset)."""
    path = dataset / MANIFEST
    if not path.exists():
        return pl.DataFrame(schema=MANIFEST_SCHEMA)
    frame = pl.read_parquet(path)  # a manifest older than a column has it empty
    return frame.with_columns(pl.lit(None, t).alias(n) for n, t in MANIFEST_SCHEMA.items() if n not in frame.columns)


def write_manifest(dataset: Path, rows: dict[tuple[str, str], Row]) -> None:
    """The manifest, one row per (cluster, stream), sorted (written whole, then renamed in)."""
    frame = pl.DataFrame([rows[k] for k in sorted(rows)], schema=MANIFEST_SCHEMA, orient="row") if rows else \
        pl.DataFrame(schema=MANIFEST_SCHEMA)
    write_table(frame, dataset / MANIFEST)


def staging(dataset: Path) -> Path:
    """The folder tasks work in (inside the dataset, so their files move in by rename)."""
    path = dataset / STAGING
    path.mkdir(parents=True, exist_ok=True)
    return path


def clear_staging(dataset: Path) -> None:
    """Remove what tasks of a run that died left behind."""
    shutil.rmtree(dataset / STAGING, ignore_errors=True)


def is_dataset(path: str | Path) -> bool:
    """Whether `path` is a fleet dataset (a folder with a manifest)."""
    return (Path(path) / MANIFEST).is_file()


def scan_table(dataset: str | Path, table: str) -> pl.LazyFrame:
    """One table across the whole dataset, with `cluster` and `stream` (from the paths)."""
    root = Path(dataset) / table
    known = {**SCHEMAS, **{f"ref_{k}": v for k, v in REF_SCHEMAS.items()}, "divergences": DIVERGENCE_SCHEMA}
    schema = {**known.get(table, {}), "cluster": pl.String, "stream": pl.String}
    if not any(root.glob("cluster=*/stream=*/*.parquet")):
        return pl.LazyFrame(schema=schema)
    return pl.scan_parquet(root / "**" / "*.parquet", hive_partitioning=True,
                           hive_schema={"cluster": pl.String, "stream": pl.String})
