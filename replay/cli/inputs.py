"""A command's input: the logs' tables (parse directory, cache or a fresh parse), `--config`, `--cycles`,
and the stored audit of them."""

from __future__ import annotations

import pickle
from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import polars as pl
from rich.console import Console

from replay.cli.show import print_input_note, progress_display
from replay.model.configdir import apply_config
from replay.model.cycleref import parse_span, resolve_span
from replay.model.release import with_option as with_release_option
from replay.parsing.cache import Opened, open_input
from replay.parsing.sources import InputError
from replay.progress import OnProgress

if TYPE_CHECKING:  # the audit (rmref and the scheduler inputs) loads only for the commands that run it
    from replay.apps.baseline import Audited
    from replay.apps.stored import Kept, Place
    from replay.model.bootstrap import Bootstrap
    from replay.model.start import ReplayStart


@dataclass(frozen=True)
class Loaded:
    """A command's input: its tables, the note on its bootstrap, and where it was opened from."""

    tables: MutableMapping[str, pl.DataFrame]
    note: str | None  # where the bootstrap came from, for the command to print with its results
    opened: Opened
    config: str | None  # the --config folder


def open_tables(logs: list[str], config: str | None, console: Console, use_cache: bool = True,
                columns: Mapping[str, Sequence[str]] | None = None, force: bool = False,
                rm_release: str | None = None) -> Loaded:
    """The logs' tables (a parse directory's, the cache's, or parsed and cached; with `columns`,
    only those, read from disk on use where the parse is on disk); fill a bootstrap that rotated
    away from `--config DIR`."""
    with progress_display(console, "parsing") as show:
        opened = open_input(logs, use_cache=use_cache, progress=show, columns=columns)
    print_input_note(opened.note)
    tables = opened.tables
    with_release_option(tables, rm_release)  # `--rm-release R`: replay.model.release reads it
    return Loaded(tables, apply_config(tables, config, force), opened, config)


def load_tables(logs: list[str], config: str | None, console: Console, use_cache: bool = True,
                columns: Mapping[str, Sequence[str]] | None = None, force: bool = False,
                rm_release: str | None = None
                ) -> tuple[MutableMapping[str, pl.DataFrame], str | None]:
    """`open_tables`' tables and bootstrap note (printed by the command with its results, so an
    error is all a failing command prints)."""
    loaded = open_tables(logs, config, console, use_cache, columns, force, rm_release)
    return loaded.tables, loaded.note


def require_cycles(cycles: range | None, text: str | None, tables: Mapping[str, pl.DataFrame]) -> None:
    """InputError when `--cycles` holds none of the log's published cycles."""
    cycle = pl.col("cycle")
    first, last = tables["cycles"].select(cycle.min().alias("first"), cycle.max().alias("last")).row(0)
    if cycles is None or first is None:  # a log with no cycle at all: the command says so
        return
    if cycles.start > last or cycles.stop <= first:
        raise InputError(f"--cycles {text!r}: the log has cycles {first:,} to {last:,}; "
                         "give A:B, A:, :B or N within them")


def cycles_asked(text: str | None, tables: Mapping[str, pl.DataFrame]) -> range | None:
    """The cycles `--cycles` names (numbers or epochs), checked against the log's."""
    cycles = resolve_span(parse_span(text), tables["cycles"]) if text else None
    require_cycles(cycles, text, tables)
    return cycles


def stored_place(loaded: Loaded, boot: Bootstrap) -> Place | None:
    """Where the input's audit under `boot` is stored (None: no cache)."""
    from replay.apps.stored import place_of
    from replay.parsing.keys import config_digest

    return place_of(loaded.opened.slot, loaded.opened.root, boot, config_digest(loaded.config), loaded.tables)


def kept_audit(loaded: Loaded, progress: OnProgress | None = None) -> Kept:
    """The audit of every cycle of the input: the one stored in the cache beside its parse, else
    run now and stored there (replay.apps.stored)."""
    from replay.apps.stored import audit_view, stored_audit
    from replay.model.start import bootstrap

    tables = audit_view(loaded.tables)
    boot = bootstrap(tables)
    return stored_audit(tables, boot, stored_place(loaded, boot), progress)


def kept_baseline(loaded: Loaded, progress: OnProgress | None = None,
                  start: ReplayStart | None = None) -> Audited | None:
    """rmref unchanged on every cycle, as the stored audit keeps it (the audit run now from `start`,
    the what-if's own, and stored when it is not there: `kept_audit`), for `whatif` and `check`;
    None without a cache, or when it could not be stored (the what-if then audits in memory,
    `replay.apps.stored.audited_now`)."""
    from replay.apps.stored import audit_view, stored_audit
    from replay.model.start import bootstrap

    tables = audit_view(loaded.tables)
    boot = start.boot_read if start is not None and start.boot_read is not None else bootstrap(tables)
    place = stored_place(loaded, boot)
    if place is None:
        return None
    kept = stored_audit(tables, boot, place, progress, start)
    if kept.stored is None:
        return None
    try:
        return kept.stored.audited()
    except (OSError, ValueError, EOFError, pickle.UnpicklingError, AttributeError, TypeError):
        return None
