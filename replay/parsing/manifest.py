"""OUT/manifest.json: what an rmreplay output directory holds, written last, checked by readers.

A directory rmreplay wrote (`parse -o`, `audit -o`, `whatif -o`, `anonymize -o`, ...) ends with
one `manifest.json`, written after every other file and before the directory is renamed into
place (replay/parsing/outdir.py). Its format (version 1; keys sorted, two-space indent, so the
same output gives the same bytes):

    {
      "format": "rmreplay-output/1",
      "rmreplay": "0.1.0",                  # the version that wrote it
      "command": "parse",                   # the command (or API call) that wrote it
      "input": {                            # the input files as read (oldest first)
        "sha256": "<hex>",                  #   over the files' names and sha256s, in order: the
                                            #   content digest that keys the parse cache
        "files": [{"name": "rm.log", "bytes": 241796, "sha256": "<hex of the raw file>"}]
      },                                    # (null when the writer had no input files)
      "tables": {"cycles": 20, ...},        # rows of every <name>.parquet
      "files": {"cycles.parquet": {"bytes": 5123, "sha256": "<hex>"}, ...},  # every other file too
      "columns": {"cycles": ["cycle", "epoch", ...], ...}   # a parse output: each table's columns
    }

Writers may add keys of their own (`extra`); readers ignore keys they do not know. A reader
checks that the manifest is there, of a known format, written by the expected command, and that
every file it lists is there with its size (`check_manifest`); row counts are checked where the
tables are read (`read_tables`), the columns a reader needs from `columns` (`store.require_columns`;
a parse output of a version that recorded none: from each table's footer). A `parse` output is a
*parse directory*: every command reads it in place of the log (`parse_dir_manifest`), and the
cache keeps its parses as parse directories too.
The record of a command's input paths is `replay.parsing.logdir.input_record`, which reads them as
every command does.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from replay._version import __version__
from replay.parsing.digest import combine, file_digest, file_digests
from replay.parsing.sources import InputError, Source

MANIFEST = "manifest.json"
FORMAT = "rmreplay-output/1"


def rmreplay_version() -> str:
    """rmreplay's version: written in every manifest and part of every stored audit's key."""
    return __version__


def input_record_of(sources: list[Source]) -> dict[str, Any]:
    """The manifest's `input` for files already found (their digests memoised by stat)."""
    parts = file_digests(sources)
    files = [{"name": name, "bytes": s.path.stat().st_size, "sha256": digest}
             for s, (name, digest) in zip(sources, parts)]
    return {"sha256": combine(parts), "files": files}


def content_of(manifest: Mapping[str, object]) -> str | None:
    """The digest of the input a manifest names (the parse cache's key); None when it names none."""
    record = manifest.get("input")
    return record.get("sha256") if isinstance(record, dict) else None


def _parquet_rows(path: Path) -> int:
    import polars as pl

    # polars reads the count from the footer; pyarrow, which every command but `parse` does
    # without, would add about 30 MB to the peak of a command that holds its tables (simulate)
    return int(pl.scan_parquet(path).select(pl.len()).collect().item())


def build_manifest(root: Path, command: str, record: dict[str, Any] | None = None,
                   extra: Mapping[str, object] | None = None, rows: Mapping[str, int] | None = None) -> dict[str, Any]:
    """The manifest of the files under `root` (every file but the manifest itself); `record` the
    input's (`replay.parsing.logdir.input_record`); `rows`: the tables' row counts as their writer
    counted them (`store.ParquetSink.rows`; a table not in it is counted from its file's footer)."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST)
    listed = {p.relative_to(root).as_posix(): {"bytes": p.stat().st_size, "sha256": file_digest(p)} for p in files}
    named = {p.relative_to(root).as_posix().removesuffix(".parquet"): p for p in files if p.suffix == ".parquet"}
    known = rows or {}
    tables = {name: known[name] if name in known else _parquet_rows(p) for name, p in named.items()}
    return {"format": FORMAT, "rmreplay": rmreplay_version(), "command": command,
            "input": record, "tables": tables, "files": listed, **(extra or {})}


def write_manifest(root: Path, manifest: Mapping[str, object]) -> Path:
    """ROOT/manifest.json (sorted keys: the same manifest gives the same bytes)."""
    path = root / MANIFEST
    path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def read_manifest(root: str | Path) -> dict[str, Any] | None:
    """ROOT/manifest.json as a dict; None when there is none, or it is not rmreplay's."""
    path = Path(root) / MANIFEST
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("format") == FORMAT else None


def check_manifest(root: str | Path, command: str) -> dict[str, Any]:
    """The manifest of a complete output of `command`; InputError (one line, what to do) otherwise."""
    root = Path(root)
    manifest = read_manifest(root)
    redo = f"run `rmreplay {command} ... -o {root}` again"
    if manifest is None:
        raise InputError(f"{root}: not a complete rmreplay {command} output (no {MANIFEST}: the run was "
                         f"interrupted, or an older rmreplay or another program wrote it); {redo}")
    if manifest.get("command") != command:
        raise InputError(f"{root}: holds a `rmreplay {manifest.get('command')}` output, not a {command} output")
    for name, info in (manifest.get("files") or {}).items():
        path = root / name
        if not path.is_file() or path.stat().st_size != info.get("bytes"):
            raise InputError(f"{root}: {name} is missing or changed since rmreplay wrote it "
                             f"(the manifest lists {info.get('bytes')} bytes); {redo}")
    return manifest


def parse_dir_manifest(folder: str | Path) -> dict[str, Any] | None:
    """The manifest of a parse directory (`rmreplay parse -o`); None when `folder` is none, and an
    InputError when it holds tables without a whole manifest (an interrupted or older parse)."""
    root = Path(folder)
    if not root.is_dir():
        return None
    if not (root / MANIFEST).exists():
        if (root / "cycles.parquet").exists():
            raise InputError(f"{root}: Parquet tables without a {MANIFEST}: the parse was interrupted, or written by "
                             "an older rmreplay; parse the log again (rmreplay parse LOG -o DIR)")
        return None
    manifest = read_manifest(root)
    if manifest is None or manifest.get("command") != "parse":
        return None
    return check_manifest(root, "parse")
