"""Open the TUI's input: logs (through replay's parse cache) or a `rmreplay parse` directory, with the audit.

The parse and its cache are replay's (`replay.parsing.cache`: every command shares them); the TUI
adds the raw lines (its Log tab). The audit is the one every command reads, stored beside the
parse (`replay.apps.stored`, keyed by the configuration and `--config`): when it is there the
audit's columns are filled as the first screen shows, else the TUI runs it and stores it.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl

from replay import InputError
from replay.model.release import with_option
from replay.parsing.cache import open_input
from replay.parsing.keys import config_digest
from replay.parsing.manifest import parse_dir_manifest
from replay.parsing.store import all_columns
from replay.progress import OnProgress
from tui.summary import AUDIT_FRAMES, beside

if TYPE_CHECKING:
    from replay.apps.audit import AuditResult
    from replay.apps.stored import Place, Stored
    from replay.model.bootstrap import Bootstrap
    from replay.model.damage import Damage



@dataclass
class Loaded:
    """A parsed input: its tables, raw lines (None for a parse directory), audit frames if known."""

    name: str
    tables: Mapping[str, pl.DataFrame]
    lines: pl.DataFrame | None
    audit: dict[str, pl.DataFrame] | None
    place: Place | None  # where the audit is stored (None: not stored, e.g. --no-cache)
    from_cache: bool = False
    note: str | None = None  # what the folders given held besides the RM's log
    result: AuditResult | None = None  # the stored audit (its cycles re-entered for the job screen's story)
    stored: Stored | None = None  # where it is stored, with the machines of every cycle
    boot: Bootstrap | None = None  # the log's configuration, as rebuilt to find the stored audit
    shows_stored: bool = False  # the audit's frames are the stored audit's (not one written beside the parse)

    def nodes(self) -> pl.DataFrame | None:
        """Every cycle's machines as the stored audit keeps them (None: not stored)."""
        return self.stored.nodes() if self.stored is not None else None

    def audited(self) -> AuditResult | None:
        """The audit's result: run here, or the stored one (read on first use: the first screen's
        columns are the stored frames, its status line the result's damaged cycles, and the job
        screen's story re-enters its cycles)."""
        if self.result is None and self.stored is not None:
            self.result = self.stored.result
        return self.result

    def damage(self) -> dict[int, Damage]:
        """Cycle -> why its input is damaged: the audit's own (the cycles it did not audit, which
        `rmreplay audit` names), read with its result, which is small beside the scan of the
        tables' RmCounter blocks (replay.model.damage) that finds them where no result is at hand."""
        result = self.result if self.result is not None else self.audited() if self.shows_stored else None
        if result is not None:
            return result.damaged
        from replay.model.damage import damaged_cycles

        return damaged_cycles(self.tables)


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
    # the tables read from disk on use where the parse is on disk: the views hold what they built
    opened = open_input(paths, use_cache=use_cache, progress=progress, keep_lines=not parse_dir,
                        columns=all_columns())
    check(opened.tables, opened.name)
    with_option(opened.tables, rm_release)  # before --config: its contradictions are the release's
    if config:
        from replay.model.configdir import apply_config

        apply_config(opened.tables, config)
    # an audit written into a parse directory is the log's own release's
    audit = _audit_beside(Path(paths[0])) if parse_dir and not rm_release else None
    boot = _boot(opened.tables)
    place = _place(opened.tables, opened.slot, opened.root, config, boot)
    stored, shows_stored = None, False
    if place is not None:
        from replay.apps.stored import load as load_stored

        stored = load_stored(place, whole=False)
        if audit is None and stored is not None:
            audit, shows_stored = stored.frames(), True
    return Loaded(opened.name, opened.tables, opened.lines, audit, place, opened.from_cache, opened.note,
                  None, stored, boot, shows_stored)


def _boot(tables: Mapping[str, pl.DataFrame]) -> Bootstrap | None:
    """The log's configuration (None: the log has no bootstrap, and no --config gave one)."""
    from replay.model.start import bootstrap

    try:
        return bootstrap(tables)
    except InputError:
        return None


def _place(tables: Mapping[str, pl.DataFrame], slot: Path | None, root: Path | None,
           config: str | None, boot: Bootstrap | None) -> Place | None:
    """Where the input's audit is stored (None: not stored; a log without its bootstrap has none)."""
    if slot is None or root is None or boot is None:
        return None
    from replay.apps.stored import place_of

    return place_of(slot, root, boot, config_digest(config), tables)


def _audit_beside(root: Path) -> dict[str, pl.DataFrame] | None:
    """An audit written into the parse directory itself (`rmreplay audit DIR -o DIR`)."""
    if beside(root):
        return {n: pl.read_parquet(root / f"{n}.parquet") for n in AUDIT_FRAMES}
    return None


def run_audit(loaded: Loaded, boot: Bootstrap | None = None,
              progress: OnProgress | None = None) -> tuple[dict[str, pl.DataFrame], AuditResult]:
    """rmref on every cycle (with `boot`, the configuration already rebuilt), stored beside the
    parse where it can be; its decisions and the divergences as frames, and the result."""
    from replay.apps.audit import result_frames
    from replay.apps.stored import audit_view, stored_audit
    from replay.model.start import bootstrap

    tables = audit_view(loaded.tables)
    result = stored_audit(tables, boot or bootstrap(tables), loaded.place, progress).result
    return result_frames(result), result
