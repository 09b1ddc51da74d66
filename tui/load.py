"""Open the TUI's input: rm.log files (parsed, then cached by content hash) or a `rmreplay parse` directory.

The cache lives in `$RMREPLAY_CACHE` (default `~/.cache/rmreplay`), one directory per input:
`<key>/tables/*.parquet` (the parse), `<key>/lines.parquet` (the raw lines, for the Log tab) and
`<key>/audit/*.parquet` (rmref's decisions and the divergences). The key hashes the bytes of every
input file and the source of the code that produced them (replay and rmref), so editing the log or
the scheduler model never serves a stale answer. Logs are often read-only (and fixtures are), so
the cache is not written next to them.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import struct
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from replay import InputError, parse, read_tables, write_tables
from replay.parsing.manifest import MANIFEST
from replay.parsing.sources import discover

AUDIT_FRAMES = ("ref_caps", "ref_counts", "ref_placements", "ref_evictions", "ref_defrag", "divergences")
Progress = Callable[[float, str], None]  # (fraction done 0..1, what is happening)


@dataclass
class Loaded:
    """A parsed input: its tables, raw lines (None for a parse directory), audit frames if known."""

    name: str
    tables: dict[str, pl.DataFrame]
    lines: pl.DataFrame | None
    audit: dict[str, pl.DataFrame] | None
    cache: Path | None
    from_cache: bool = False


def cache_root() -> Path:
    """Where parses are cached."""
    return Path(os.environ.get("RMREPLAY_CACHE") or Path.home() / ".cache" / "rmreplay")


_SOURCE_SUFFIXES = (".py", ".c", ".h", ".lark")


def source_files() -> list[tuple[str, Path]]:
    """(name, path) of every source file the tables come from: Python (subpackages too), the
    scanner's C, the grammar."""
    import grammars
    import replay
    import rmref

    files = []
    for pkg in (grammars, replay, rmref):
        root = Path(pkg.__file__).parent
        files += [(f"{root.name}/{p.relative_to(root).as_posix()}", p)
                  for p in sorted(root.rglob("*")) if p.suffix in _SOURCE_SUFFIXES]
    return files


def _code_fingerprint() -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for name, path in source_files():
        h.update(name.encode())
        h.update(path.read_bytes())
    return h.digest()


def input_key(paths: list[str]) -> str:
    """Hash of the input files' bytes and of the parsing and scheduling code."""
    h = hashlib.blake2b(digest_size=20)
    h.update(_code_fingerprint())
    for src in discover(paths):
        h.update(src.name.encode())
        with open(src.path, "rb") as fh:
            while block := fh.read(1 << 22):
                h.update(block)
    return h.hexdigest()


def is_parse_dir(path: str | Path) -> bool:
    """Is this a `rmreplay parse -o` output directory (complete or not: reading it checks its manifest)?"""
    p = Path(path)
    return p.is_dir() and ((p / MANIFEST).exists() or (p / "cycles.parquet").exists())


def _input_bytes(paths: list[str]) -> int:
    """Bytes the parser will read (a gzip member records its uncompressed size, modulo 4 GiB)."""
    total = 0
    for src in discover(paths):
        size = src.path.stat().st_size
        if src.path.suffix == ".gz" and size >= 4:
            with open(src.path, "rb") as fh:
                fh.seek(-4, 2)
                isize = struct.unpack("<I", fh.read(4))[0]
            total += isize if isize >= size else size * 8  # wrapped past 4 GiB: guess a typical ratio
        else:
            total += size
    return max(total, 1)


_DONE = re.compile(r"parsing: ([\d,]+) MB done")


def check(tables: dict[str, pl.DataFrame], name: str) -> None:
    """Raise InputError when there is nothing to browse."""
    if tables.get("cycles") is None or tables["cycles"].is_empty():
        unparsed = tables.get("unparsed")
        extra = f" ({unparsed.height:,} unparsed lines)" if unparsed is not None and unparsed.height else ""
        raise InputError(f"{name}: no published schedule (no `createState  Schedule sent` record){extra}: "
                         "nothing to browse; is this the Resource Manager's rm.log?")


def load(paths: list[str], progress: Progress | None = None, use_cache: bool = True) -> Loaded:
    """Parse the input (or read it from the cache or a parse directory); raise InputError with the reason."""
    say = progress or (lambda _f, _m: None)
    if not paths:
        raise InputError("no input: name rm.log files or a `rmreplay parse` output directory")
    if len(paths) == 1 and is_parse_dir(paths[0]):
        root = Path(paths[0])
        say(0.5, f"reading {root}")
        tables = read_tables(root)
        check(tables, str(root))
        have = all((root / f"{n}.parquet").exists() for n in AUDIT_FRAMES)
        audit = {n: pl.read_parquet(root / f"{n}.parquet") for n in AUDIT_FRAMES} if have else None
        return Loaded(root.name, tables, None, audit, None)
    sources = discover(paths)
    name = ", ".join(s.name for s in sources) if len(sources) <= 2 else f"{sources[0].name} (+{len(sources) - 1})"
    key = input_key(paths) if use_cache else None
    slot = cache_root() / key if key else None
    if slot is not None and (slot / "complete").exists():
        say(0.5, "reading the cached parse")
        tables = read_tables(slot / "tables")
        lines = pl.read_parquet(slot / "lines.parquet")
        audit_dir = slot / "audit"
        audit = ({n: pl.read_parquet(audit_dir / f"{n}.parquet") for n in AUDIT_FRAMES}
                 if (audit_dir / "complete").exists() else None)
        return Loaded(name, tables, lines, audit, slot, from_cache=True)
    total = _input_bytes(paths)

    def on_parse(msg: str) -> None:
        m = _DONE.search(msg)
        done = int(m.group(1).replace(",", "")) * 1e6 / total if m else 0.95
        say(min(done, 0.95) * 0.9, msg)

    # the parse hands over the lines it read, for the Log tab: the log is not read (or gunzipped) twice
    result = parse(paths, progress=on_parse, keep_lines=True)
    tables, lines = result.tables, result.lines
    check(tables, name)
    if slot is not None:
        say(0.96, "caching the parse")
        try:
            tmp = slot.with_name(slot.name + ".tmp")
            shutil.rmtree(tmp, ignore_errors=True)
            write_tables(tables, tmp / "tables")
            lines.write_parquet(tmp / "lines.parquet", compression="zstd")
            (tmp / "complete").write_text("ok\n")
            shutil.rmtree(slot, ignore_errors=True)
            tmp.rename(slot)
        except OSError:
            slot = None  # a read-only home: browse without a cache
    say(1.0, "parsed")
    return Loaded(name, tables, lines, None, slot)


def save_audit(slot: Path | None, frames: dict[str, pl.DataFrame]) -> None:
    """Keep the audit's frames beside the cached parse."""
    if slot is None:
        return
    out = slot / "audit"
    try:
        out.mkdir(parents=True, exist_ok=True)
        for n in AUDIT_FRAMES:
            frames[n].write_parquet(out / f"{n}.parquet", compression="zstd")
        (out / "complete").write_text("ok\n")
    except OSError:
        pass


def run_audit(tables: dict[str, pl.DataFrame], progress: Progress | None = None) -> dict[str, pl.DataFrame]:
    """rmref on every cycle; its decisions and the divergences as frames."""
    from replay.apps.audit import audit, result_frames

    say = progress or (lambda _f, _m: None)
    result = audit(tables, progress=lambda i, n: say(i / max(n, 1), f"auditing cycle {i:,} of {n:,}"))
    say(1.0, "audited")
    return result_frames(result)
