"""`rmreplay whatif LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] -o OUT`: open-loop replay with a change."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from replay.cli.inputs import cycles_asked, kept_baseline, open_tables
from replay.cli.lines import assumed_block, baseline_line, partly_line, skipped_line
from replay.cli.options import add_change_options, add_force, add_logs, add_replay_options, change_of
from replay.cli.registry import Command
from replay.cli.show import print_note, progress_display
from replay.parsing.outdir import atomic_output_dir, check_replaceable
from replay.parsing.sources import InputError
from replay.parsing.store import all_columns


def whatif_table(report: dict[str, Any]) -> Table:
    """Preemptions, fairness and shares per user of a what-if: logged, rmref unchanged (the
    baseline) and with the change."""
    from replay.apps.whatif import SIDES

    table = Table(title="rmreplay whatif", show_header=True, box=None, pad_edge=False)
    table.add_column("", style="bold")
    for side in ("logged", "baseline", "what-if"):
        table.add_column(side, justify="right")
    for key, title in (("preemptions", "preemptions (shares)"), ("evictions", "  by doEvictions"),
                       ("defrag_takes", "  by defragmentation")):
        table.add_row(title, *(f"{report[key][s]:,}" for s in SIDES))
    fair = report["fairness"]
    table.add_row("fairness (Jain)", *(f"{fair[s]:.3f}" if fair[s] is not None else "-" for s in SIDES))
    for user, v in report["per_user"].items():
        table.add_row(f"  {user} mean shares", *(f"{v[f'mean_shares_{s}']:,.2f}" for s in SIDES))
    return table


def whatif_summary(report: dict[str, Any], seconds: float) -> str:
    """One line: cycles and jobs changed, speed."""
    n = report["cycles"]
    return (f"{report['cycles_changed']:,} of {n:,} cycles and {report['jobs_changed']:,} job(s) change "
            f"(open loop: each cycle starts from the recorded state); {seconds:.1f} s, "
            f"{n / max(seconds, 1e-9):,.0f} cycles/s")


def cmd_whatif(args: argparse.Namespace, console: Console) -> int:
    """rmreplay whatif LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] -o OUT"""
    from replay.apps.whatif import change_text, whatif, write_whatif

    check_replaceable(Path(args.out), args.force, "whatif", args.logs)
    change = change_of(args)
    loaded = open_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                         rm_release=args.rm_release)
    tables, note = loaded.tables, loaded.note
    cycles = cycles_asked(args.cycles, tables)
    start = time.perf_counter()
    with progress_display(console, "replaying") as show:
        result = whatif(tables, change, cycles=cycles, progress=show,
                        read_audit=lambda s: kept_baseline(loaded, show, s))
    if not result.cycles:
        raise InputError("no published schedule in the replayed range: nothing to replay")
    seconds = time.perf_counter() - start
    report = result.report()
    print_note(console, note)
    for line in assumed_block(result):
        console.print(line, markup=False, highlight=False)
    console.print(whatif_table(report))
    console.print(whatif_summary(report, seconds), highlight=False)
    for left_out in (skipped_line(result.skipped, "replayed"), partly_line(result.partly)):
        if left_out:
            console.print(left_out, highlight=False)
    console.print(baseline_line(report), markup=False, highlight=False)
    for row in result.changes[: args.show]:
        console.print(f"  {change_text(row, result.epochs)}", markup=False, highlight=False)
    if len(result.changes) > args.show:
        console.print(f"  ... {len(result.changes) - args.show:,} more (changes.parquet)")
    with atomic_output_dir(args.out, args.force, command="whatif", inputs=args.logs) as tmp:
        write_whatif(result, tmp)
    console.print(f"written to [bold]{args.out}[/] (report.json, changes.parquet)")
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    """whatif's arguments."""
    add_logs(p)
    add_change_options(p)
    p.add_argument("-o", "--out", required=True, help="directory for report.json and changes.parquet")
    add_force(p)
    p.add_argument("--cycles", metavar="A:B", help="replay only cycles A to B (inclusive; numbers or epochs eN)")
    add_replay_options(p)


COMMAND = Command("whatif", "replay every cycle's recorded inputs with a changed configuration or phase", arguments,
                  cmd_whatif)
