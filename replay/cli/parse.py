"""`rmreplay parse LOG... [-o OUT [--force]]`: the logs' typed tables, and a one-screen summary."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.table import Table

from replay.cli.options import add_force, threads
from replay.cli.registry import Command
from replay.cli.show import print_input_note, progress_display
from replay.parsing.cache import parse_to
from replay.parsing.groups import GROUPS, family_group
from replay.parsing.limits import DEFAULT_CHUNK_BYTES, DEFAULT_PARSE_THREADS, parse_threads
from replay.parsing.tables import SCHEMAS

if TYPE_CHECKING:
    from replay.parsing.pipeline import Summary


def summary_table(s: Summary, seconds: float) -> Table:
    """One screen: input, records per family group, unparsed lines, cycles, time span."""
    table = Table(title="rmreplay parse", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row("files", ", ".join(Path(f).name for f in s.files))
    table.add_row("input", f"{s.bytes / 1e6:,.1f} MB, {s.lines:,} lines, {s.records:,} records")
    table.add_row("speed", f"{seconds:.2f} s, {s.bytes / 1e6 / max(seconds, 1e-9):,.1f} MB/s")
    groups: dict[str, int] = {}
    for fam, n in s.families.items():
        groups[family_group(fam)] = groups.get(family_group(fam), 0) + n
    for name in [*GROUPS, "other"]:
        if groups.get(name):
            table.add_row(f"  {name}", f"{groups[name]:,}")
    table.add_row("cycles", f"{s.cycles:,}")
    table.add_row("time span", f"{s.first_ts} .. {s.last_ts}")
    style = "green" if s.unparsed == 0 else "yellow"
    table.add_row("unparsed lines", f"[{style}]{s.unparsed:,}[/]")
    if s.bad_utf8_lines:
        table.add_row("lines with bad bytes", f"[yellow]{s.bad_utf8_lines:,}[/] (replaced by U+FFFD)")
    return table


def cmd_parse(args: argparse.Namespace, console: Console) -> int:
    """rmreplay parse LOG... [-o OUT [--force]]"""
    from replay.parsing.pipeline import MemorySink, run  # every other command reads tables already parsed

    start = time.perf_counter()
    with progress_display(console, "parsing") as show:
        options = {"engine": args.engine, "progress": show,
                   "chunk_bytes": args.chunk_mb << 20 if args.chunk_mb else None, "workers": args.jobs}
        if args.out:
            summary = parse_to(args.logs, args.out, force=args.force, **options)
        else:
            summary = run(args.logs, MemorySink(), **options)
    console.print(summary_table(summary, time.perf_counter() - start))
    print_input_note(summary.note)
    if args.out:
        console.print(f"tables written to [bold]{args.out}[/] ({len(SCHEMAS)} Parquet files and manifest.json; every "
                      "command reads this folder in place of the log)")
    if summary.unparsed:
        console.print(f"[yellow]{summary.unparsed} unparsed line(s): see unparsed.parquet (file, line, reason)[/]")
    return 0


def chunk_mb(text: str) -> int:
    """--chunk-mb: a whole number of megabytes, 1 to 1024."""
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of megabytes from 1 to 1024")
    return int(text)


def arguments(p: argparse.ArgumentParser) -> None:
    """parse's arguments."""
    p.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz), a DUCC log folder "
                   "(its rm.log* only) or an archive of one (.tar, .tar.gz, .tgz, .zip)")
    p.add_argument("-o", "--out", help="directory for the <table>.parquet files")
    add_force(p)
    p.add_argument("--engine", choices=["fast", "polars", "lark"], default="fast",
                   help="fast (compiled scanner, default), polars (pure Python, vectorised) or lark "
                        "(the grammar for everything; slowest); all three give the same tables")
    p.add_argument("--chunk-mb", type=chunk_mb, metavar="MB",
                   help=f"input parsed per step (default {DEFAULT_CHUNK_BYTES >> 20}); larger is faster and "
                        "takes more memory (bench/bench_parse.py); the same rows, in row groups of another size")
    p.add_argument("-j", "--jobs", type=threads, default=parse_threads(), metavar="N",
                   help=f"chunks parsed at once, on threads (default {parse_threads()} here: "
                        f"{DEFAULT_PARSE_THREADS}, or the cores this process may use if fewer; each "
                        "holds a chunk in memory); the files are the same bytes on any number")


COMMAND = Command("parse", "parse rm.log files into Parquet tables", arguments, cmd_parse)
