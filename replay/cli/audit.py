"""`rmreplay audit LOG... [--config DIR] [-o OUT] [--cycles A:B]`: every cycle re-run with rmref and diffed."""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from replay.cli.inputs import cycles_asked, kept_audit, open_tables
from replay.cli.lines import assumed_block, skipped_line
from replay.cli.options import add_config, add_force, add_logs, add_replay_options
from replay.cli.registry import Command
from replay.cli.show import print_note, progress_display
from replay.model.cycleref import label
from replay.parsing.outdir import atomic_output_dir, check_replaceable
from replay.parsing.sources import InputError

if TYPE_CHECKING:
    from replay.apps.audit import AuditResult, Finding


def audit_table(result: AuditResult) -> Table:
    """Cycles audited and agreeing, then agreement per decision kind."""
    report = result.report()
    table = Table(title="rmreplay audit", show_header=True, box=None, pad_edge=False)
    table.add_column("decision", style="bold")
    for name in ("agree", "divergent", "total"):
        table.add_column(name, justify="right")
    for kind in result.audited:
        agree, total = report["decisions"][kind]["agree"], report["decisions"][kind]["total"]
        style = "green" if agree == total else "yellow"
        table.add_row(kind, f"[{style}]{agree:,}[/]", f"{total - agree:,}", f"{total:,}")
    return table


def audit_line(result: AuditResult, seconds: float, read: bool = False) -> str:
    """The one-line verdict under the table (`read`: from the stored audit, not run now)."""
    n, ok = len(result.cycles), result.report()["cycles_agree"]
    style = "green" if ok == n else "yellow"
    free = len(result.verified)
    verified = (f", {free:,} of the RM's free choices verified (one of the choices rmref found equal)"
                if free else "")
    how = (f"the stored audit, read in {seconds:.1f} s" if read
           else f"{seconds:.1f} s, {n / max(seconds, 1e-9):,.0f} cycles/s")
    return f"[{style}]{ok:,} of {n:,} cycles agree[/]{verified} ({how})"


def nothing_audited(result: AuditResult) -> str:
    """Why an audit audited no cycle."""
    if result.damaged and not result.skipped:
        first = next(iter(result.damaged.values()))
        return (f"the input of every cycle in range is damaged ({len(result.damaged):,}; cycle "
                f"{label(first.cycle, first.epoch)}: {first.text()})")
    if result.skipped:
        return next(iter(result.skipped.values()))
    return ("no published schedule in the audited range (check --cycles, or that the log has "
            "`createState  Schedule sent` records)")


def damage_lines(result: AuditResult, shown: int = 5) -> list[str]:
    """The cycles not audited because their input is damaged: how many, then the first few and why."""
    if not result.damaged:
        return []
    lines = [f"[yellow]{len(result.damaged):,} cycle(s) not audited: input damaged (report.json 'damaged')[/]"]
    lines += [f"  cycle {label(c, d.epoch)}: {escape(d.text())}" for c, d in list(result.damaged.items())[:shown]]
    if len(result.damaged) > shown:
        lines.append(f"  ... {len(result.damaged) - shown:,} more")
    return lines


def print_rows(console: Console, result: AuditResult, rows: Sequence[Finding], shown: int, file: str) -> None:
    """The first `shown` divergences (or verified choices), one line each, then how many more."""
    for f in rows[:shown]:
        console.print(f"  cycle {label(f.cycle, result.epochs.get(f.cycle))} job {f.job_id} {f.decision}: "
                      f"{f.explanation}", markup=False, highlight=False)
    if len(rows) > shown:
        console.print(f"  ... {len(rows) - shown:,} more ({file} with -o)")


def print_audit(console: Console, result: AuditResult, seconds: float, read: bool, shown: int) -> None:
    """The audit's table, verdict, the cycles left out, and the first divergences and verified choices."""
    for line in assumed_block(result):
        console.print(line, markup=False, highlight=False)
    console.print(audit_table(result))
    console.print(audit_line(result, seconds, read))
    for line in damage_lines(result):
        console.print(line, highlight=False)
    if result.skipped:
        console.print(skipped_line(result.skipped), highlight=False)
    partly = {c: why for kinds in result.skipped_kinds.values() for c, why in kinds.items() if c not in result.skipped}
    if partly:
        kept = [k for k in result.audited if not any(c in result.skipped_kinds.get(k, {}) for c in partly)]
        console.print(f"[yellow]{len(partly):,} cycle(s) audited for {', '.join(kept) or 'nothing'} only: "
                      f"{next(iter(partly.values()))}[/]", highlight=False)
    print_rows(console, result, result.divergences, shown, "divergences.parquet")
    print_rows(console, result, result.verified, shown, "verified_choices.parquet")


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    """rmreplay audit LOG... [--config DIR] [-o OUT] [--cycles A:B]"""
    from replay.apps.audit import audit, write_audit
    from replay.model.reads import audit_columns

    if args.out:  # before the work: a refused OUT is known at once
        check_replaceable(Path(args.out), args.force, "audit", args.logs)
    loaded = open_tables(args.logs, args.config, console, not args.no_cache, audit_columns(), args.force,
                         rm_release=args.rm_release)
    cycles = cycles_asked(args.cycles, loaded.tables)
    start = time.perf_counter()
    read, stored = False, None
    with progress_display(console, "auditing") as show:
        if cycles is None:  # the whole log: the stored audit (a range starts from nothing carried, so runs)
            audited = kept_audit(loaded, show)
            result, read, stored = audited.result, audited.read, audited.stored
        else:
            result = audit(loaded.tables, cycles=cycles, progress=show)
    seconds = time.perf_counter() - start
    if not result.cycles:
        raise InputError("nothing to audit: " + nothing_audited(result))
    print_note(console, loaded.note)
    print_audit(console, result, seconds, read, args.show)
    if args.out:
        with atomic_output_dir(args.out, args.force, command="audit", inputs=args.logs) as tmp:
            if stored is not None:  # the files it wrote when it was stored
                stored.write(tmp)
            else:
                write_audit(result, tmp)
        console.print(f"report written to [bold]{args.out}[/] (report.json, ref_*.parquet, divergences.parquet, "
                      "verified_choices.parquet)")
    return 1 if result.divergences else 0


def arguments(p: argparse.ArgumentParser) -> None:
    """audit's arguments."""
    add_logs(p)
    add_config(p)
    p.add_argument("-o", "--out", help="directory for report.json, ref_*.parquet, divergences.parquet and "
                   "verified_choices.parquet")
    add_force(p)
    p.add_argument("--cycles", metavar="A:B", help="audit only cycles A to B (inclusive; A:, :B and N work too; "
                   "each a cycle number, or the RM's epoch as eN: e118:e240)")
    p.add_argument("--show", type=int, default=10, metavar="N", help="divergences to print (default 10)")
    add_replay_options(p)


COMMAND = Command("audit", "re-run every scheduling cycle with rmref and diff it against the log", arguments,
                  cmd_audit)
