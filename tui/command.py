"""`rmreplay tui LOG...`: the TUI as one more command, added through the `rmreplay.commands` entry point."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from replay.cli.options import add_release_option
from replay.cli.registry import Command

if TYPE_CHECKING:  # Textual loads only when the TUI runs
    from rich.console import Console


def cmd_tui(args: argparse.Namespace, console: Console) -> int:
    """rmreplay tui LOG... (or a `rmreplay parse` output directory)"""
    from replay import InputError
    from replay.cli.show import print_error
    from replay.parsing.readable import check_readable  # not the cache's module: it loads polars
    from tui.app import RmReplayApp

    # input that cannot be read is a command-line error, before the terminal is taken over
    check_readable(args.logs, use_cache=not args.no_cache)
    if args.config and not Path(args.config).is_dir():
        raise InputError(f"--config {args.config}: no such directory (give the DUCC resources folder)")
    if args.rm_release:
        from replay.model.release_names import resolve
        try:
            resolve(args.rm_release)
        except ValueError as exc:
            raise InputError(f"--rm-release: {exc}") from None
    app = RmReplayApp(args.logs, use_cache=not args.no_cache, config=args.config, rm_release=args.rm_release)
    app.run()
    if app.error:
        print_error(app.error)
        return 2
    return 0


def arguments(t: argparse.ArgumentParser) -> None:
    """tui's arguments."""
    t.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz), directories, "
                   "a `rmreplay parse -o` output directory, or an `audit -o` one (its log's cached parse)")
    t.add_argument("--no-cache", action="store_true",
                   help="parse again even if the cache ($RMREPLAY_CACHE, ~/.cache/rmreplay) has this input")
    t.add_argument("--config", metavar="DIR", help="DUCC resources directory (ducc.properties, ducc.classes) "
                   "for a log whose bootstrap section has rolled away, as for `rmreplay audit`")
    add_release_option(t)


COMMAND = Command("tui", "browse a log cycle by cycle in the terminal (Textual)", arguments, cmd_tui)
