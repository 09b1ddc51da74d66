"""Open the TUI's input: logs (through replay's parse cache) or a `rmreplay parse` directory, with the audit.

The parse and its cache are replay's (`replay.parsing.cache`: every command shares them); the TUI
adds the raw lines (its Log tab) and keeps the audit's frames in the same cache slot, one folder
per `--config` (the audit of a log without its bootstrap depends on the folder given).
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from replay import InputError
from replay.cli import apply_config
from replay.model.release import with_option
from replay.parsing.cache import config_digest, keep_frames, open_input, read_frames
from replay.parsing.manifest import parse_dir_manifest
from replay.progress import OnProgress

if TYPE_CHECKING:
    from replay.model.world import Bootstrap

AUDIT_FRAMES = ("ref_caps", "ref_counts", "ref_placements", "ref_evictions", "ref_defrag", "divergences", "skipped")


@dataclass
class Loaded:
    """A parsed input: its tables, raw lines (None for a parse directory), audit frames if known."""

    name: str
    tables: Mapping[str, pl.DataFrame]
    lines: pl.DataFrame | None
    audit: dict[str, pl.DataFrame] | None
    cache: Path | None  # where the audit's frames are kept (None: not kept)
    from_cache: bool = False
    note: str | None = None  # what the folders given held besides the RM's log


def settle_heap() -> None:
    """Move the loaded log's objects out of the garbage collector's sight.

    A big log leaves millions of long-lived objects; every full (generation 2) collection walked
    them all, 30-50 ms in the middle of a key press, several times per hundred cycle switches.
    Frozen, they are no longer walked (they live as long as the app anyway)."""
    gc.collect()
    gc.freeze()


def is_parse_dir(path: str | Path) -> bool:
    """Is this a `rmreplay parse -o` output directory? (InputError: one left incomplete)"""
    return parse_dir_manifest(path) is not None


def check(tables: Mapping[str, pl.DataFrame], name: str) -> None:
    """Raise InputError when there is nothing to browse."""
    if tables.get("cycles") is None or tables["cycles"].is_empty():
        unparsed = tables.get("unparsed")
        extra = f" ({unparsed.height:,} unparsed lines)" if unparsed is not None and unparsed.height else ""
        raise InputError(f"{name}: no published schedule (no `createState  Schedule sent` record){extra}: "
                         "nothing to browse; is this the Resource Manager's rm.log?")


def load(paths: list[str], progress: OnProgress | None = None, use_cache: bool = True,
         config: str | None = None, rm_release: str | None = None) -> Loaded:
    """Parse the input (or read it from the cache or a parse directory), fill the bootstrap from
    `config` when the log has none; raise InputError with the reason."""
    if not paths:
        raise InputError("no input: name rm.log files or a `rmreplay parse` output directory")
    parse_dir = is_parse_dir(paths[0])
    # the parse hands over the lines it read, for the Log tab: the log is not read (or gunzipped) twice
    opened = open_input(paths, use_cache=use_cache, progress=progress, keep_lines=not parse_dir)
    check(opened.tables, opened.name)
    apply_config(opened.tables, config)
    with_option(opened.tables, rm_release)
    audit = _audit_beside(Path(paths[0])) if parse_dir and not rm_release else None
    slot = opened.slot / _audit_folder(config, rm_release) if opened.slot is not None else None
    if audit is None and slot is not None:
        audit = read_frames(slot)
    return Loaded(opened.name, opened.tables, opened.lines, audit, slot, opened.from_cache, opened.note)


def _audit_beside(root: Path) -> dict[str, pl.DataFrame] | None:
    """An audit written into the parse directory itself (`rmreplay audit DIR -o DIR`)."""
    if all((root / f"{n}.parquet").exists() for n in AUDIT_FRAMES):
        return {n: pl.read_parquet(root / f"{n}.parquet") for n in AUDIT_FRAMES}
    return None


def _audit_folder(config: str | None, rm_release: str | None = None) -> str:
    """The slot's folder for the audit of this `--config` (its files' digest) and `--rm-release`, or of none."""
    digest = config_digest(config)
    name = f"audit-{digest}" if digest else "audit"
    return f"{name}-release-{rm_release}" if rm_release else name


def save_audit(slot: Path | None, frames: dict[str, pl.DataFrame]) -> None:
    """Keep the audit's frames beside the cached parse."""
    if slot is not None:
        keep_frames(slot, {n: frames[n] for n in AUDIT_FRAMES})


def run_audit(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
              progress: OnProgress | None = None) -> dict[str, pl.DataFrame]:
    """rmref on every cycle (with `boot`, the configuration already rebuilt); its decisions and the
    divergences as frames."""
    from replay.apps.audit import audit, result_frames

    return result_frames(audit(tables, boot, progress=progress))
