"""`rmreplay check LOG...`: the CI gate, on the open-loop what-if or (`--simulate`) the closed-loop simulation."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from rich.console import Console

from replay.cli.inputs import kept_baseline, load_tables, open_tables
from replay.cli.lines import baseline_line, partly_line, skipped_line
from replay.cli.options import add_change_options, add_java_options, add_replay_options, change_of
from replay.cli.registry import Command
from replay.cli.show import print_note, progress_display
from replay.cli.simulate import simulate_and_measure
from replay.parsing.outdir import atomic_output_file, check_replaceable_file
from replay.parsing.sources import InputError
from replay.parsing.store import all_columns

# in the first 4 kB of every JUnit file `check` writes (`check --simulate` too): a file rmreplay wrote
JUNIT_MARKER = b'<testsuites name="rmreplay check'


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """rmreplay check LOG... [--scheduler ...] [--set ...] [--max-changed-cycles N] [--junit FILE]"""
    if args.junit:  # before the work: a refused FILE is known at once
        check_replaceable_file(Path(args.junit), args.force, JUNIT_MARKER)
    if args.simulate:
        return check_simulate(args, console)
    from replay.apps.whatif import change_text, junit_xml, whatif

    change = change_of(args)
    results = []
    for log in args.logs:  # each LOG (a file, or a directory holding a rolled set) is gated on its own
        loaded = open_tables([log], args.config, console, not args.no_cache, all_columns(), force=args.force,
                             rm_release=args.rm_release)
        tables, note = loaded.tables, loaded.note
        start = time.perf_counter()
        with progress_display(console, f"replaying {log}") as show:
            result = whatif(tables, change, progress=show, read_audit=lambda s: kept_baseline(loaded, show, s))
        seconds = time.perf_counter() - start
        results.append((log, result, seconds))
        n = result.cycles_changed
        ok = n <= args.max_changed_cycles
        print_note(console, note)
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {log}: {n:,} of "
                      f"{len(result.cycles):,} cycles change (allowed {args.max_changed_cycles:,}); "
                      f"{len({j for _c, j, *_ in result.changes}):,} job(s)", highlight=False)
        for left_out in (skipped_line(result.skipped, "replayed"), partly_line(result.partly)):
            if left_out:
                console.print(f"  {left_out}", highlight=False)
        console.print(f"  {baseline_line(result.report())}", markup=False, highlight=False)
        for row in result.changes[: args.show]:
            console.print(f"  {change_text(row, result.epochs)}", markup=False, highlight=False)
    if args.junit:
        write_junit(args, console, junit_xml(results, args.max_changed_cycles))
    return 1 if any(r.cycles_changed > args.max_changed_cycles for _, r, _ in results) else 0


def check_simulate(args: argparse.Namespace, console: Console) -> int:
    """rmreplay check --simulate LOG... [--set ...] [--scheduler ...] [--max-turnaround-increase PCT]
    [--max-preemptions N] [--junit FILE]"""
    from replay.apps.simulate.gate import gates, junit_xml
    from replay.apps.simulate.metrics import report as simulation_report

    if args.max_turnaround_increase is None and args.max_preemptions is None and not args.vs:
        raise InputError("check --simulate: give --max-turnaround-increase PCT and/or --max-preemptions N "
                         "(or --rm java:SRC --vs java:SRC2)")
    change = change_of(args)
    results = []
    for log in args.logs:
        tables, _note = load_tables([log], args.config, console, not args.no_cache, all_columns(), force=args.force,
                                    rm_release=args.rm_release)
        start = time.perf_counter()
        measured = simulate_and_measure(tables, change, args, console)
        report = simulation_report(measured)
        checked = gates(report, measured.jobs, args.max_turnaround_increase, args.max_preemptions,
                        args.max_changed_cycles)
        results.append((log, checked, report, time.perf_counter() - start))
        ok = all(g.ok for g in checked)
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {log}", highlight=False)
        for g in checked:
            console.print(f"  {'ok  ' if g.ok else 'FAIL'} {g.message}", markup=False, highlight=False)
    if args.junit:
        write_junit(args, console, junit_xml(results))
    return 1 if any(not g.ok for _, checked, _, _ in results for g in checked) else 0


def write_junit(args: argparse.Namespace, console: Console, xml: str) -> None:
    """The --junit FILE, rewritten every run (only over a file rmreplay wrote, unless --force)."""
    with atomic_output_file(args.junit, args.force, marker=JUNIT_MARKER) as tmp:
        tmp.write_text(xml, encoding="utf-8")
    console.print(f"JUnit XML written to [bold]{args.junit}[/]")


def arguments(p: argparse.ArgumentParser) -> None:
    """check's arguments."""
    p.add_argument("logs", nargs="+", help="logs to check, each on its own (a file, a log folder, or a "
                   "`rmreplay parse -o` directory)")
    add_change_options(p)
    p.add_argument("--max-changed-cycles", type=int, default=0, metavar="N",
                   help="cycles allowed to change per log (default 0)")
    p.add_argument("--junit", metavar="FILE", help="write a JUnit XML report (one testsuite per log); an existing "
                   "FILE is replaced only when rmreplay wrote it (or with --force)")
    p.add_argument("--force", action="store_true", help="replace the --junit FILE even when rmreplay did not "
                   "write it; use --config even when it does not belong to the log")
    p.add_argument("--simulate", action="store_true",
                   help="gate on the closed-loop simulation instead (rmreplay simulate): --max-turnaround-increase "
                        "and/or --max-preemptions")
    p.add_argument("--max-turnaround-increase", type=float, metavar="PCT",
                   help="with --simulate: the mean turnaround of each class may grow by at most PCT percent")
    p.add_argument("--max-preemptions", type=int, metavar="N",
                   help="with --simulate: the change's scheduler may preempt at most N processes")
    add_replay_options(p)
    add_java_options(p)


COMMAND = Command("check", "CI gate: fail when a change alters more cycles than allowed", arguments, cmd_check)
