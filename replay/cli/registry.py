"""The commands of `rmreplay`: each is a `Command` its own module declares; this module gathers them.

replay's own commands are listed in BUILT_IN by module name. Other packages add theirs through the
`rmreplay.commands` entry-point group (the TUI does: `tui.command:COMMAND`), so replay never imports
the layers above it and a site can add a command without editing rmreplay.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console

ENTRY_POINTS = "rmreplay.commands"

# replay's commands, in the order `rmreplay --help` lists them
BUILT_IN = ("parse", "audit", "explain", "whatif", "check", "simulate", "report", "anonymize", "fleet", "rm")


@dataclass(frozen=True)
class Command:
    """One sub-command: its name and help, how it adds its arguments, and what runs it."""

    name: str
    help: str
    arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, Console], int]
    # its console is made on first use (replay.cli.show.LazyConsole): it may print plain text, without rich
    plain: bool = False
    # modules it imports as it runs, loaded with the libraries when the command line names it
    # (replay.cli.process: while the collector is off)
    preload: tuple[str, ...] = ()


def built_in() -> list[Command]:
    """replay's own commands (each module's COMMAND)."""
    return [import_module(f"replay.cli.{name}").COMMAND for name in BUILT_IN]


def added() -> list[Command]:
    """The commands other installed packages add through the `rmreplay.commands` entry points."""
    # imported here: it loads email and zipfile, which a built-in command named first may not need
    from importlib.metadata import entry_points

    return [point.load() for point in sorted(entry_points(group=ENTRY_POINTS), key=lambda p: p.name)]


def commands(only: str | None = None) -> Iterator[Command]:
    """Every command: replay's, then the added ones; with `only` a command's name, that one alone
    (its module alone loads: `parse` starts without the other commands' libraries, `tui` without
    polars, which its first screen may not need)."""
    if only in BUILT_IN:
        yield import_module(f"replay.cli.{only}").COMMAND
        return
    from importlib.metadata import entry_points

    named = [p for p in entry_points(group=ENTRY_POINTS) if p.name == only] if only else []
    if len(named) == 1:
        yield named[0].load()
        return
    yield from built_in()
    yield from added()


# commands that stream and let go: every other keeps what it built long after a parse (an audit's
# state, a replay's frames, the fleet's tasks), so its freed memory goes back to the system at once
STREAMING = ("parse", "anonymize")


def holding(name: str | None) -> bool:
    """Whether the command `name` holds what it built (decided before any command module loads polars)."""
    return name is not None and name not in STREAMING
