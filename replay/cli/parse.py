"""`rmreplay parse LOG... [-o OUT [--force]]`: the logs' typed tables, and a one-screen summary."""

from __future__ import annotations

import argparse
import time
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from replay.cli.options import add_force, threads
from replay.cli.plain import plain_table, plain_text, plain_width
from replay.cli.registry import Command
from replay.cli.show import LazyConsole, print_input_note, progress_display
from replay.parsing.cache import parse_to
from replay.parsing.groups import GROUPS, family_group
from replay.parsing.limits import DEFAULT_CHUNK_BYTES, DEFAULT_PARSE_THREADS, parse_threads
from replay.parsing.tables import SCHEMAS
from replay.progress import quiet

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from replay.parsing.pipeline import Summary


def summary_rows(s: Summary, seconds: float) -> list[tuple[str, str, str | None, str]]:
    """The summary's rows: (name, value, the value's colour or None, text after the value)."""
    rows: list[tuple[str, str, str | None, str]] = [
        ("files", ", ".join(Path(f).name for f in s.files), None, ""),
        ("input", f"{s.bytes / 1e6:,.1f} MB, {s.lines:,} lines, {s.records:,} records", None, ""),
        ("speed", f"{seconds:.2f} s, {s.bytes / 1e6 / max(seconds, 1e-9):,.1f} MB/s", None, "")]
    groups: dict[str, int] = {}
    for fam, n in s.families.items():
        groups[family_group(fam)] = groups.get(family_group(fam), 0) + n
    for name in [*GROUPS, "other"]:
        if groups.get(name):
            rows.append((f"  {name}", f"{groups[name]:,}", None, ""))
    rows.append(("cycles", f"{s.cycles:,}", None, ""))
    rows.append(("time span", f"{s.first_ts} .. {s.last_ts}", None, ""))
    rows.append(("unparsed lines", f"{s.unparsed:,}", "green" if s.unparsed == 0 else "yellow", ""))
    if s.bad_utf8_lines:
        rows.append(("lines with bad bytes", f"{s.bad_utf8_lines:,}", "yellow", " (replaced by U+FFFD)"))
    return rows


TITLE = "rmreplay parse"


def summary_table(s: Summary, seconds: float) -> Table:
    """One screen: input, records per family group, unparsed lines, cycles, time span."""
    from rich.table import Table

    table = Table(title=TITLE, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for name, value, style, tail in summary_rows(s, seconds):
        table.add_row(name, f"[{style}]{value}[/]{tail}" if style else value + tail)
    return table


def _closing_lines(summary: Summary, out: str | None) -> list[tuple[str, str, str, str | None]]:
    """The lines after the table: (text, its part in bold, the text after it, the line's colour or None)."""
    lines: list[tuple[str, str, str, str | None]] = []
    if out:
        lines.append(("tables written to ", out, f" ({len(SCHEMAS)} Parquet files and manifest.json; every "
                      "command reads this folder in place of the log)", None))
    if summary.unparsed:
        lines.append((f"{summary.unparsed} unparsed line(s): see unparsed.parquet (file, line, reason)", "", "",
                      "yellow"))
    return lines


def _print_summary(console: Console, summary: Summary, seconds: float, out: str | None) -> None:
    """The table, the input note (on stderr) and the closing lines: as plain text where rich would
    print the same characters (replay.cli.plain: stdout no terminal), else through rich."""
    width = plain_width() if isinstance(console, LazyConsole) and not console.made else None
    closing = _closing_lines(summary, out)
    rows = [(name, value + tail) for name, value, _, tail in summary_rows(summary, seconds)]
    table = plain_table(TITLE, rows, width) if width else None
    plain = [before + bold + after for before, bold, after, _ in closing]
    if table is not None and all(plain_text(text) for text in plain):
        # flushed as rich flushes each print: the note on stderr stays between them in a shared file
        print(table, flush=True)
        print_input_note(summary.note)
        for text in plain:
            print(text, flush=True)
        return
    console.print(summary_table(summary, seconds))
    print_input_note(summary.note)
    for before, bold, after, style in closing:
        text = f"{before}[bold]{bold}[/]{after}" if bold else before + after
        console.print(f"[{style}]{text}[/]" if style else text)


def cmd_parse(args: argparse.Namespace, console: Console) -> int:
    """rmreplay parse LOG... [-o OUT [--force]]"""
    from replay.parsing.pipeline import MemorySink, run  # every other command reads tables already parsed

    start = time.perf_counter()
    plain = isinstance(console, LazyConsole) and not console.made and plain_width() is not None
    if isinstance(console, LazyConsole) and not plain:
        console = console.console()  # rich's own objects (the progress bar) take the console itself
    # no terminal: no progress drawn (progress_display would make the console only to find that out)
    with nullcontext(quiet) if plain else progress_display(console, "parsing") as show:
        options = {"engine": args.engine, "progress": show,
                   "chunk_bytes": args.chunk_mb << 20 if args.chunk_mb else None, "workers": args.jobs}
        if args.out:
            summary = parse_to(args.logs, args.out, force=args.force, **options)
        else:
            summary = run(args.logs, MemorySink(), **options)
    seconds = time.perf_counter() - start
    _print_summary(console, summary, seconds, args.out)
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


# the pipeline loads with the libraries: imported after them, its modules cost the collector about
# 30 ms (replay.cli.process); so do the Parquet writer (with -o) and numpy.ma, which polars and
# pyarrow load at the first numpy array they take
COMMAND = Command("parse", "parse rm.log files into Parquet tables", arguments, cmd_parse, plain=True,
                  preload=("replay.parsing.pipeline", "replay.parsing.route_table", "pyarrow.parquet", "numpy.ma"))
