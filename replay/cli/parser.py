"""`rmreplay`'s argument parser, built from the registry, and the dispatch of one command."""

from __future__ import annotations

import argparse
from importlib import import_module
from typing import TYPE_CHECKING, cast

from replay.cli.registry import commands
from replay._version import __version__
from replay.cli.show import LazyConsole, print_error, stdout_console
from replay.parsing.outdir import interrupted_line
from replay.parsing.sources import InputError

if TYPE_CHECKING:
    from rich.console import Console


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of `rmreplay`: one sub-command per registered command (`only`: that
    built-in command alone, when the command line names it)."""
    parser = argparse.ArgumentParser(prog="rmreplay", description="Replay and audit DUCC Resource Manager logs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in commands(only):
        p = sub.add_parser(command.name, help=command.help)
        command.arguments(p)
        p.set_defaults(func=command.run, plain=command.plain)
        if only == command.name:
            for module in command.preload:
                import_module(module)
    return parser


def run(args: argparse.Namespace) -> int:
    """Run the parsed command: 0 or its own code; 2 with one line on bad input; 130 when interrupted."""
    try:
        console = cast("Console", LazyConsole()) if getattr(args, "plain", False) else stdout_console()
        return int(args.func(args, console))
    except InputError as exc:
        print_error(exc)
        return 2
    except KeyboardInterrupt:
        print_error(interrupted_line(getattr(args, "out", None), directory=args.command != "report"))
        return 130
