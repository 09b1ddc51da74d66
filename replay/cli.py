"""The `rmreplay` command line."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
import rich.progress
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, SpinnerColumn, TaskProgressColumn, TextColumn
from rich.table import Table

from replay.model.release import with_option as with_release_option
from rmref.releases import RELEASES
from replay.model.cycleref import label, parse_ref, parse_span, resolve, resolve_span
from replay.parsing.cache import Opened, open_input, parse_to
from replay.parsing.store import all_columns
from replay.parsing.outdir import (
    atomic_output_dir,
    atomic_output_file,
    check_replaceable,
    check_replaceable_file,
    interrupted_line,
)
from replay.parsing.limits import DEFAULT_CHUNK_BYTES, available_cores
from replay.parsing.sources import InputError
from replay.parsing.tables import SCHEMAS
from replay.progress import OnProgress, Progress, quiet

if TYPE_CHECKING:  # the audit (rmref and the scheduler inputs) loads only for the commands that run it
    from replay.apps.anonymize import Anonymized
    from replay.parsing.pipeline import Summary
    from replay.apps.audit import AuditResult
    from replay.apps.stored import Kept, Known, Place
    from replay.model.world import Bootstrap
    from replay.apps.simulate.metrics import Measured
    from replay.apps.simulate.simulation import Simulated
    from replay.apps.simulate.workload import Workload
    from replay.apps.whatif import Change, WhatIfResult

# Families shown in the summary, grouped by what they record, in the order of the RM's cycle
# (bootstrap, nodes, jobs, caps, How Much, What Of, evictions, defragmentation, the published schedule).
GROUPS = {
    "bootstrap": ("np_", "class_", "user_", "property", "init_param", "jd_host"),
    "nodes": ("node_",),
    "jobs and processes": ("ev_", "job_", "proc_", "submit", "jobs_arrive", "recovered", "how_much"),
    "job caps": ("prj_", "init_job_cap"),
    "how much": ("rmc_", "fixed_", "res_", "defer", "allot_", "what_of"),
    "what of": ("connect_", "expansion", "do_expansion", "find_", "freeable_", "needy_"),
    "evictions": ("evict_", "shrink_by", "clear_for", "schedule_removal", "share_removed", "non_preempt"),
    "defragmentation": ("frag_", "rich_", "clear_share"),
    "schedule and cycles": ("schedule_", "loop_", "total_arrivals", "sched_sections"),
    "occupancy and tables": ("occupancy_", "pool_tables"),
    "generic messages": ("message",),
}


def family_group(family: str) -> str:
    """The summary group a family is counted in (GROUPS; "other" when none claims it)."""
    for name, prefixes in GROUPS.items():
        if family.startswith(prefixes):
            return name
    return "other"


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
    from replay.parsing.pipeline import MemorySink, run  # (every other command reads parsed tables)

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


@contextmanager
def progress_display(console: Console, stage: str) -> Iterator[OnProgress]:
    """Show a long step's progress on one line while it runs: its stage, and a bar with the count
    when the total is known. Drawn only on a terminal and cleared when done, so piped output
    holds the results alone."""
    if not console.is_terminal:  # rich would still end each display with a blank line
        yield quiet
        return
    bars = rich.progress.Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  TaskProgressColumn(), console=console, transient=True)
    with bars:
        task = bars.add_task(stage, total=None)

        def show(progress: Progress) -> None:
            bars.update(task, description=progress.text(), total=progress.total, completed=progress.done)

        yield show


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


def stored_place(loaded: Loaded, boot: Bootstrap) -> Place | None:
    """Where the input's audit under `boot` is stored (None: no cache)."""
    from replay.apps.stored import place_of
    from replay.parsing.cache import config_digest

    return place_of(loaded.opened.slot, loaded.opened.root, boot, config_digest(loaded.config), loaded.tables)


def kept_audit(loaded: Loaded, progress: OnProgress | None = None) -> Kept:
    """The audit of every cycle of the input: the one stored in the cache beside its parse, else
    run now and stored there (replay.apps.stored)."""
    from replay.apps.stored import audit_view, stored_audit
    from replay.model.world import bootstrap

    tables = audit_view(loaded.tables)
    boot = bootstrap(tables)
    return stored_audit(tables, boot, stored_place(loaded, boot), progress)


def print_note(console: Console, note: str | None) -> None:
    """The bootstrap note of `load_tables`, if any."""
    if note:
        console.print(note, markup=False, highlight=False)


def apply_config(tables: MutableMapping[str, pl.DataFrame], config: str | None, force: bool = False) -> str | None:
    """Check `--config DIR` against the log and fill the bootstrap tables from it when the log has
    none (the log's value wins wherever the two differ: replay.model.conflicts); what was done, in
    words, one line per contradiction. InputError when the config is another cluster's, unless `force`."""
    if not config:
        return None
    from replay.model.conflicts import CONFLICTS, belongs, conflicts, with_log_values
    from replay.model.resources import read_resources

    theirs = read_resources(Path(config))
    foreign = belongs(tables, theirs).foreign()
    if foreign and not force:
        raise InputError(f"--config {config}: this config does not belong to this log: {foreign}; give the "
                         "log's own resources folder, or add --force to use it anyway")
    found = conflicts(tables, theirs)
    tables[CONFLICTS] = pl.DataFrame([c.row() for c in found], schema=dict.fromkeys(
        ("setting", "log", "config", "where"), pl.String))
    lines = [f"--config {config} used although it does not belong to this log (--force): {foreign}"] if foreign else []
    lines += [c.text() for c in found]
    if tables["classes"].is_empty() or tables["nodepools"].is_empty():
        tables.update(with_log_values(theirs, tables))
        return "\n".join([*lines, f"bootstrap: from {config} (the log has none)"])
    return "\n".join([*lines, "bootstrap: from the log (it has one; --config not needed)"])


def audit_table(result: AuditResult, seconds: float) -> Table:
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


def _ids(jobs: Sequence[int]) -> str:
    """At most ten job ids, then '...'."""
    return ", ".join(map(str, jobs[:10])) + (", ..." if len(jobs) > 10 else "")


def assumed_block(result: AuditResult | WhatIfResult | Simulated) -> list[str]:
    """One line per setting the log's bootstrap and --config did not give (defaulted or inferred),
    and one for the machines; report.json has every one with its evidence."""
    lines = [f"  {a.setting} = {a.value} ({a.source})" for a in result.assumed
             if a.source != "config" and not a.setting.startswith("node ")]
    return ["assumed or inferred (the evidence for each: report.json 'assumed'):", *lines] if lines else []


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


def skipped_line(skipped: Mapping[int, str], done: str = "audited") -> str | None:
    """The cycles a command left out as the audit does, and why (None when none)."""
    if not skipped:
        return None
    return f"[yellow]{len(skipped):,} cycle(s) not {done}: {next(iter(skipped.values()))}[/]"


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


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    """rmreplay audit LOG... [--config DIR] [-o OUT] [--cycles A:B]"""
    from replay.apps.audit import audit, write_audit
    from replay.model.reads import audit_columns

    if args.out:  # before the work: a refused OUT is known at once
        check_replaceable(Path(args.out), args.force, "audit", args.logs)
    loaded = open_tables(args.logs, args.config, console, not args.no_cache, audit_columns(), args.force,
                         rm_release=args.rm_release)
    tables, note = loaded.tables, loaded.note
    cycles = cycles_asked(args.cycles, tables)
    start = time.perf_counter()
    read, stored = False, None
    with progress_display(console, "auditing") as show:
        if cycles is None:  # the whole log: the stored audit (a range starts from nothing carried, so runs)
            audited = kept_audit(loaded, show)
            result, read, stored = audited.result, audited.read, audited.stored
        else:
            result = audit(tables, cycles=cycles, progress=show)
    seconds = time.perf_counter() - start
    if not result.cycles:
        raise InputError("nothing to audit: " + nothing_audited(result))
    print_note(console, note)
    for line in assumed_block(result):
        console.print(line, markup=False, highlight=False)
    console.print(audit_table(result, seconds))
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
    for cycle, job, kind, _logged, _ref, why, *_ in result.divergences[: args.show]:
        console.print(f"  cycle {label(cycle, result.epochs.get(cycle))} job {job} {kind}: {why}", markup=False,
                      highlight=False)
    if len(result.divergences) > args.show:
        console.print(f"  ... {len(result.divergences) - args.show:,} more (divergences.parquet with -o)")
    for cycle, job, kind, _logged, _ref, why, *_ in result.verified[: args.show]:
        console.print(f"  cycle {label(cycle, result.epochs.get(cycle))} job {job} {kind}: {why}", markup=False,
                      highlight=False)
    if len(result.verified) > args.show:
        console.print(f"  ... {len(result.verified) - args.show:,} more (verified_choices.parquet with -o)")
    if args.out:
        with atomic_output_dir(args.out, args.force, command="audit", inputs=args.logs) as tmp:
            if stored is not None:  # the files it wrote when it was stored
                stored.write(tmp)
            else:
                write_audit(result, tmp)
        console.print(f"report written to [bold]{args.out}[/] (report.json, ref_*.parquet, divergences.parquet, "
                      "verified_choices.parquet)")
    return 1 if result.divergences else 0


def cmd_explain(args: argparse.Namespace, console: Console) -> int:
    """rmreplay explain LOG... --job ID [--cycle N|eN] [--config DIR] [--json]"""
    from replay.apps.explain import render, story_json
    from replay.apps.explain.scope import explain_stored

    job = whole_number(args.job, "--job", "a job id")
    ref = parse_ref(args.cycle) if args.cycle else None
    # with --json, stdout is the JSON alone: what the loading says goes to stderr
    # every table read from disk on use (where the parse is on disk): the story reads few of its rows
    loaded = open_tables(args.logs, args.config, Console(stderr=True) if args.json else console, not args.no_cache,
                         all_columns(), force=args.force, rm_release=args.rm_release)
    tables, note = loaded.tables, loaded.note
    cycle = resolve(ref, tables["cycles"]) if ref else None
    on_disk = loaded.opened.slot is not None and loaded.opened.root is not None
    try:
        # rmref's side from the stored audit (run and stored first when it is not): no replay
        story = explain_stored(tables, job, cycle, lambda: kept_audit(loaded).result if on_disk else None)
    except InputError as exc:  # the job or cycle asked for is not in the log: name the flags
        flags = f"--job {job}" + ("" if cycle is None else f" --cycle {args.cycle}")
        raise InputError(f"{flags}: {exc}") from None
    if args.json:
        sys.stdout.write(story_json(story) + "\n")
    else:
        print_note(console, note)
        console.print(render(story), markup=False, highlight=False)
    return 0


def whole_number(text: str, flag: str, what: str) -> int:
    """A flag's value as a whole number; InputError naming the flag otherwise."""
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected {what}, a whole number (e.g. {flag} 12)") from None


def _change(args: argparse.Namespace):
    """The --set and --scheduler options as a what-if Change."""
    from replay.apps.whatif import Change, load_scheduler, parse_sets

    phases = load_scheduler(args.scheduler) if args.scheduler else None
    return Change(parse_sets(args.set or ()), **({"phases": phases} if phases else {}), scheduler=args.scheduler)


def whatif_table(report: dict) -> Table:
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


def baseline_line(report: dict) -> str:
    """What the changes are counted against: rmref unchanged, and where it already differs from the log."""
    n, cycles, decisions = report["baseline_divergent_cycles"], report["cycles"], report["unreproduced"]
    if not n:
        return f"rmref unchanged reproduces every logged decision ({decisions:,} unreproduced)"
    return (f"rmref unchanged already differs from the log in {n:,} of {cycles:,} cycles ({decisions:,} "
            f"decision{'s' if decisions != 1 else ''} unreproduced; `rmreplay audit` shows why); changes are "
            "counted against it")


def whatif_summary(report: dict, seconds: float) -> str:
    """One line: cycles and jobs changed, speed."""
    n = report["cycles"]
    return (f"{report['cycles_changed']:,} of {n:,} cycles and {report['jobs_changed']:,} job(s) change "
            f"(open loop: each cycle starts from the recorded state); {seconds:.1f} s, "
            f"{n / max(seconds, 1e-9):,.0f} cycles/s")


def partly_line(partly: Mapping[int, str]) -> str | None:
    """The cycles a what-if compared only the decisions that do not read the machines in, and why."""
    if not partly:
        return None
    from replay.model.start import NODE_FREE

    return (f"[yellow]{len(partly):,} cycle(s) compared for {', '.join(NODE_FREE)} only: "
            f"{next(iter(partly.values()))}[/]")


def cmd_whatif(args: argparse.Namespace, console: Console) -> int:
    """rmreplay whatif LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] -o OUT"""
    from replay.apps.whatif import change_text, whatif, write_whatif

    check_replaceable(Path(args.out), args.force, "whatif", args.logs)
    change = _change(args)
    tables, note = load_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                               rm_release=args.rm_release)
    cycles = cycles_asked(args.cycles, tables)
    start = time.perf_counter()
    with progress_display(console, "replaying") as show:
        result = whatif(tables, change, cycles=cycles, progress=show)
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


# in the first 4 kB of every JUnit file `check` writes (`check --simulate` too): a file rmreplay wrote
JUNIT_MARKER = b'<testsuites name="rmreplay check'


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """rmreplay check LOG... [--scheduler ...] [--set ...] [--max-changed-cycles N] [--junit FILE]"""
    if args.junit:  # before the work: a refused FILE is known at once
        check_replaceable_file(Path(args.junit), args.force, JUNIT_MARKER)
    if args.simulate:
        return cmd_check_simulate(args, console)
    from replay.apps.whatif import change_text, junit_xml, whatif

    change = _change(args)
    results = []
    for log in args.logs:  # each LOG (a file, or a directory holding a rolled set) is gated on its own
        tables, note = load_tables([log], args.config, console, not args.no_cache, all_columns(), force=args.force,
                                   rm_release=args.rm_release)
        start = time.perf_counter()
        with progress_display(console, f"replaying {log}") as show:
            result = whatif(tables, change, progress=show)
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
        with atomic_output_file(args.junit, args.force, marker=JUNIT_MARKER) as tmp:  # rewritten every run
            tmp.write_text(junit_xml(results, args.max_changed_cycles), encoding="utf-8")
        console.print(f"JUnit XML written to [bold]{args.junit}[/]")
    return 1 if any(r.cycles_changed > args.max_changed_cycles for _, r, _ in results) else 0


def simulate_table(report: dict) -> Table:
    """Logged, baseline and simulated side by side: takings, utilisation, fairness, turnaround per class."""
    table = Table(title="rmreplay simulate", show_header=True, box=None, pad_edge=False)
    table.add_column("", style="bold")
    for name in ("logged", "baseline", "sim"):
        table.add_column(name, justify="right")

    def cell(v: object) -> str:
        return "-" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:,.3f}"

    for key in ("preemptions", "defrag_takes", "utilisation", "fairness"):
        table.add_row(key.replace("_", " "), *(cell(report[key][s]) for s in ("logged", "baseline", "sim")))
    for cls, v in report["per_class"].items():
        turnaround = (cell(v[f"mean_turnaround_{s}"]) for s in ("logged", "baseline", "sim"))
        table.add_row(f"  {cls} mean turnaround s", *turnaround)
    return table


def simulate_summary(report: dict, seconds: float) -> str:
    """The identity figures and the speed, in one line."""
    ident, n = report["identity"], report["cycles"]
    runs = 2 if report["changed"] else 1
    shares = "-" if ident["shares_match"] is None else f"{100 * ident['shares_match']:.1f}%"
    median = "-" if ident["finish_error_median_pct"] is None else f"{ident['finish_error_median_pct']:.2f}%"
    p90 = "-" if ident["finish_error_p90_pct"] is None else f"{ident['finish_error_p90_pct']:.2f}%"
    return (f"identity (baseline vs log): shares {shares} of {ident['job_cycles']:,} job-cycles, completion error "
            f"median {median} p90 {p90} of turnaround over {ident['jobs']} job(s); {n:,} cycles x {runs} run(s) "
            f"in {seconds:.1f} s, {runs * n / max(seconds, 1e-9):,.0f} cycles/s")


def _simulate(tables: Mapping[str, pl.DataFrame], change: Change, args: argparse.Namespace, console: Console,
              workload: Workload | None = None) -> Measured:
    """Simulate and measure one log (with a progress line)."""
    from replay.apps.simulate.metrics import measure
    from replay.apps.simulate.simulation import simulate

    with progress_display(console, "simulating") as show:
        sim = simulate(tables, change, workload, workload_from=getattr(args, "workload", None) or "log",
                       progress=show)
        return measure(tables, sim)


def cmd_simulate(args: argparse.Namespace, console: Console) -> int:
    """rmreplay simulate LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] [--workload FILE] -o OUT"""
    from replay.apps.simulate.metrics import write_simulation
    from replay.apps.simulate.workload import read_workload

    check_replaceable(Path(args.out), args.force, "simulate", args.logs)
    change = _change(args)
    workload = read_workload(args.workload) if args.workload else None
    tables, note = load_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                               rm_release=args.rm_release)
    start = time.perf_counter()
    measured = _simulate(tables, change, args, console, workload)
    seconds = time.perf_counter() - start
    with atomic_output_dir(args.out, args.force, command="simulate", inputs=args.logs) as tmp:
        report = write_simulation(measured, tmp)
    print_note(console, note)
    console.print(simulate_table(report))
    console.print(simulate_summary(report, seconds), highlight=False)
    for line in assumed_block(measured.sim):
        console.print(line, markup=False, highlight=False)
    present = report["workload"]["present_from_start"]
    if present:
        console.print(f"[yellow]{len(present)} job(s) already there when the log begins ({_ids(present)}): their "
                      "submission is not in the log; taken as present from the start (workload.parquet, note)[/]",
                      highlight=False)
    projected = report["workload"]["projected"]
    if projected:
        console.print(f"[yellow]{len(projected)} job(s) run past the log's end ({', '.join(map(str, projected[:10]))}"
                      f"{', ...' if len(projected) > 10 else ''}): their remaining work is projected at the rate "
                      "observed (workload.parquet, note)[/]", highlight=False)
    console.print(f"written to [bold]{args.out}[/] (report.json, jobs.parquet, shares.parquet, cycles.parquet, "
                  "workload.parquet)")
    return 0


def cmd_check_simulate(args: argparse.Namespace, console: Console) -> int:
    """rmreplay check --simulate LOG... [--set ...] [--scheduler ...] [--max-turnaround-increase PCT]
    [--max-preemptions N] [--junit FILE]"""
    from replay.apps.simulate.gate import gates, junit_xml
    from replay.apps.simulate.metrics import report as simulation_report

    if args.max_turnaround_increase is None and args.max_preemptions is None:
        raise InputError("check --simulate: give --max-turnaround-increase PCT and/or --max-preemptions N")
    change = _change(args)
    results = []
    for log in args.logs:
        tables, _note = load_tables([log], args.config, console, not args.no_cache, all_columns(), force=args.force,
                                    rm_release=args.rm_release)
        start = time.perf_counter()
        measured = _simulate(tables, change, args, console)
        report = simulation_report(measured)
        checked = gates(report, measured.jobs, args.max_turnaround_increase, args.max_preemptions)
        results.append((log, checked, report, time.perf_counter() - start))
        ok = all(g.ok for g in checked)
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {log}", highlight=False)
        for g in checked:
            console.print(f"  {'ok  ' if g.ok else 'FAIL'} {g.message}", markup=False, highlight=False)
    if args.junit:
        with atomic_output_file(args.junit, args.force, marker=JUNIT_MARKER) as tmp:  # rewritten every run
            tmp.write_text(junit_xml(results), encoding="utf-8")
        console.print(f"JUnit XML written to [bold]{args.junit}[/]")
    return 1 if any(not g.ok for _, checked, _, _ in results for g in checked) else 0


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """rmreplay report LOG... -o report.html [--no-audit]"""
    from replay.apps.fleet.dataset import is_dataset
    from replay.apps.report import GENERATOR, build_report

    check_replaceable_file(Path(args.out), args.force, GENERATOR.encode())
    if len(args.logs) == 1 and is_dataset(args.logs[0]):  # a fleet's dataset: the report of the whole fleet
        from replay.apps.fleet.report import build_fleet_report

        html = build_fleet_report(args.logs[0], args.title or f"rmreplay fleet report: {Path(args.logs[0]).name}")
        return _write_report(Path(args.out), html, args.force, console)
    # read from disk on use where the parse is on disk: the report holds one table's columns at a time
    loaded = open_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                         rm_release=args.rm_release)
    tables, note = loaded.tables, loaded.note
    print_note(console, note)
    audited, known = None, None
    if not args.no_audit:
        with progress_display(console, "auditing") as show:
            try:
                stored = kept_audit(loaded, show)
                audited, known = stored.result, stored.stored.known() if stored.stored is not None else None
            except InputError as exc:  # no bootstrap: the rest of the report still stands
                console.print(f"[yellow]audit skipped: {exc}[/]")
    else:
        known = _stored_known(loaded)
    sections = []
    if args.simulation:
        from replay.apps.simulate.report import simulation_section

        sections.append(simulation_section(args.simulation))
    title = args.title or f"rmreplay report: {', '.join(Path(p).name for p in args.logs)}"
    html = build_report(tables, title, audited, sections=sections, stored=known)
    return _write_report(Path(args.out), html, args.force, console)


def _stored_known(loaded: Loaded) -> Known | None:
    """The machines and takings of the input's stored audit, when one is stored (none is run)."""
    from replay.apps.stored import audit_view, load
    from replay.model.world import bootstrap

    try:
        stored = load(stored_place(loaded, bootstrap(audit_view(loaded.tables))))
    except InputError:  # no bootstrap: the report says so itself
        return None
    return stored.known() if stored is not None else None


def _write_report(out: Path, html: str, force: bool, console: Console) -> int:
    from replay.apps.report import GENERATOR

    with atomic_output_file(out, force, marker=GENERATOR.encode()) as tmp:
        tmp.write_text(html)
    console.print(f"report written to [bold]{out}[/] ({out.stat().st_size / 1e3:,.0f} kB, self-contained)")
    return 0


def anonymize_rows(done: Anonymized) -> list[tuple[str, str]]:
    """Files, lines (understood or not, rewritten or passed through), names renamed and kept, the key."""
    lines, p = done.lines, done.pseudonyms
    rows = [("files", f"{', '.join(lines.files)} (same names, gzipped where the input was)"),
            ("lines", f"{lines.lines:,}"),
            ("  in records the parser reads", f"{lines.understood:,} ({lines.understood_rewritten:,} rewritten)"),
            ("  others, with a name in them", f"{lines.rewritten:,} rewritten token by token"),
            ("  others, without one", f"{lines.passed_through:,} passed through")]
    shown = {"hosts": "host names", "short_names": "short host names", "domains": "domains", "ips": "IPs",
             "users": "users", "jobs": "job names", "files": "paths"}
    rows.append(("renamed", ", ".join(f"{len(p.kinds[k]):,} {label}" for k, label in shown.items() if p.kinds[k])))
    if p.kept:
        rows.append(("kept as they are", "; ".join(f"{name!r}: {why}" for name, why in p.kept.items())))
    if p.loose:
        rows.append(("HashMap order not kept", "; ".join(f"{name!r}: {why}" for name, why in p.loose.items())))
    hosts, users = p.bits.values()
    rows.append(("HashMap order", f"kept in maps of up to {2 ** hosts:,} hosts and {2 ** users:,} users "
                 f"(the pseudonyms share {hosts} and {users} bits of the names' hashes)"))
    rows += [("key", done.key_note), ("mapping", f"{done.mapping} (not in the folder to send)"),
             ("checked", "the anonymized log parses to the same tables, names renamed")]
    return rows


def anonymize_table(done: Anonymized, out: str) -> Table:
    """The summary as a table (on a terminal)."""
    table = Table(title="rmreplay anonymize", show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for name, value in anonymize_rows(done):
        table.add_row(f"[yellow]{name}[/]" if name in ("kept as they are", "HashMap order not kept") else name,
                      value)
    return table


def cmd_anonymize(args: argparse.Namespace, console: Console) -> int:
    """rmreplay anonymize LOG... -o OUT [--key FILE] [--mapping FILE] [--force]"""
    from replay.apps.anonymize import anonymize, mapping_path

    check_replaceable(Path(args.out), args.force, "anonymize", args.logs)
    mapping_path(args.out, args.key, args.mapping)  # before the work: a mapping inside OUT is refused at once
    with progress_display(console, "anonymizing") as show:
        done = anonymize(args.logs, args.out, args.key, args.force, progress=show, mapping_file=args.mapping)
    if console.is_terminal:
        console.print(anonymize_table(done, args.out))
    else:  # piped: one whole line per row, never wrapped to a table's columns
        for name, value in anonymize_rows(done):
            console.print(f"{name.strip()}: {value}", markup=False, highlight=False)
    console.print(f"written to [bold]{args.out}[/]: send the log files; keep [bold]{done.mapping}[/] at your "
                  "site (it turns the pseudonyms back into your names)", highlight=False)
    return 0


def cmd_fleet(args: argparse.Namespace, console: Console) -> int:
    """rmreplay fleet SOURCES... -o DATASET [--workers N | --scheduler ADDRESS] [--audit]"""
    from replay.apps.fleet.command import cmd_fleet as fleet

    return fleet(args, console)


def _add_change_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--set", action="append", metavar="KEY=VALUE",
                   help="change a setting: ducc.rm.share.quantum, ducc.rm.fragmentation.threshold, "
                        "ducc.rm.defragmentation, ducc.rm.global_allotment, class.<name>.<attribute> "
                        "(weight, priority, policy, nodepool, initialization-cap, expand-by-doubling, "
                        "use-prediction, prediction-fudge, cap, max-allotment), user.<name>.max-allotment; repeatable")
    p.add_argument("--scheduler", metavar="MODULE:OBJECT",
                   help="replace rmref phases: OBJECT is an rmref.Phases or a dict {phase name: function} "
                        "(MODULE may be a path/to/file.py)")
    p.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    p.add_argument("--show", type=int, default=10, metavar="N", help="changed decisions to print (default 10)")


def _add_force(p: argparse.ArgumentParser) -> None:
    p.add_argument("--force", action="store_true",
                   help="replace OUT even when rmreplay did not write it (or another command did); use --config "
                        "even when it does not belong to the log")


def _chunk_mb(text: str) -> int:
    """--chunk-mb: a whole number of megabytes, 1 to 1024."""
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of megabytes from 1 to 1024")
    return int(text)


LOGS_HELP = ("rm.log files, rolled sets (rm.log.N, .gz), a DUCC log folder (its rm.log* only), an archive of one "
             "(.tar, .tar.gz, .tgz, .zip) or a `rmreplay parse -o` directory")


def _jobs(text: str) -> int:
    """--jobs: a whole number of parse threads, 1 to 256."""
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of threads from 1 to 256")
    return int(text)


def add_release_option(p: argparse.ArgumentParser) -> None:
    """`--rm-release R`: the DUCC release to replay the log as (default: the log's banner, else inferred)."""
    p.add_argument("--rm-release", metavar="R", help="replay as this DUCC release (" +
                   ", ".join(r.name for r in RELEASES) + "; a version not among them is replayed as the nearest "
                   "earlier one); default: the log's banner `DUCC Version`, else inferred from its messages")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `rmreplay`."""
    parser = argparse.ArgumentParser(prog="rmreplay", description="Replay and audit DUCC Resource Manager logs.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="parse rm.log files into Parquet tables")
    p.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz), a DUCC log folder "
                   "(its rm.log* only) or an archive of one (.tar, .tar.gz, .tgz, .zip)")
    p.add_argument("-o", "--out", help="directory for the <table>.parquet files")
    _add_force(p)
    p.add_argument("--engine", choices=["fast", "polars", "lark"], default="fast",
                   help="fast (compiled scanner, default), polars (pure Python, vectorised) or lark "
                        "(the grammar for everything; slowest); all three give the same tables")
    p.add_argument("--chunk-mb", type=_chunk_mb, metavar="MB",
                   help=f"input parsed per step (default {DEFAULT_CHUNK_BYTES >> 20} with one --jobs, less with more, "
                        "so the chunks in flight hold about as much); larger is faster and "
                        "takes more memory (bench/bench_parse.py); the tables are the same")
    p.add_argument("-j", "--jobs", type=_jobs, default=available_cores(), metavar="N",
                   help=f"chunks parsed at once, on threads (default: the cores this process may use, "
                        f"{available_cores()} here); the tables are the same")
    p.set_defaults(func=cmd_parse)

    a = sub.add_parser("audit", help="re-run every scheduling cycle with rmref and diff it against the log")
    a.add_argument("logs", nargs="+", help=LOGS_HELP)
    a.add_argument("--config", metavar="DIR", help="DUCC resources directory (ducc.properties, ducc.classes) "
                   "for a log whose bootstrap section has rolled away")
    a.add_argument("-o", "--out", help="directory for report.json, ref_*.parquet, divergences.parquet and "
                   "verified_choices.parquet")
    _add_force(a)
    a.add_argument("--cycles", metavar="A:B", help="audit only cycles A to B (inclusive; A:, :B and N work too; "
                   "each a cycle number, or the RM's epoch as eN: e118:e240)")
    a.add_argument("--show", type=int, default=10, metavar="N", help="divergences to print (default 10)")
    a.set_defaults(func=cmd_audit)

    e = sub.add_parser("explain", help="the story of one job: why it got what it got, level by level")
    e.add_argument("logs", nargs="+", help=LOGS_HELP)
    e.add_argument("--job", required=True, metavar="ID", help="the job (or service, reservation) id")
    e.add_argument("--cycle", metavar="N", help="one cycle in detail, by number or by the RM's epoch (e118) "
                   "(default: the job's whole life, then its last scheduled cycle)")
    e.add_argument("--json", action="store_true", help="the story as JSON (logged and rmref decisions, where "
                   "they part, the sections)")
    e.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    e.add_argument("--force", action="store_true", help="use --config even when it does not belong to the log")
    e.set_defaults(func=cmd_explain)

    w = sub.add_parser("whatif", help="replay every cycle's recorded inputs with a changed configuration or phase")
    w.add_argument("logs", nargs="+", help=LOGS_HELP)
    _add_change_options(w)
    w.add_argument("-o", "--out", required=True, help="directory for report.json and changes.parquet")
    _add_force(w)
    w.add_argument("--cycles", metavar="A:B", help="replay only cycles A to B (inclusive; numbers or epochs eN)")
    w.set_defaults(func=cmd_whatif)

    c = sub.add_parser("check", help="CI gate: fail when a change alters more cycles than allowed")
    c.add_argument("logs", nargs="+", help="logs to check, each on its own (a file, a log folder, or a "
                   "`rmreplay parse -o` directory)")
    _add_change_options(c)
    c.add_argument("--max-changed-cycles", type=int, default=0, metavar="N",
                   help="cycles allowed to change per log (default 0)")
    c.add_argument("--junit", metavar="FILE", help="write a JUnit XML report (one testsuite per log); an existing "
                   "FILE is replaced only when rmreplay wrote it (or with --force)")
    c.add_argument("--force", action="store_true", help="replace the --junit FILE even when rmreplay did not "
                   "write it; use --config even when it does not belong to the log")
    c.add_argument("--simulate", action="store_true",
                   help="gate on the closed-loop simulation instead (rmreplay simulate): --max-turnaround-increase "
                        "and/or --max-preemptions")
    c.add_argument("--max-turnaround-increase", type=float, metavar="PCT",
                   help="with --simulate: the mean turnaround of each class may grow by at most PCT percent")
    c.add_argument("--max-preemptions", type=int, metavar="N",
                   help="with --simulate: the change's scheduler may preempt at most N processes")
    c.set_defaults(func=cmd_check)

    s = sub.add_parser("simulate", help="simulate the recorded workload closed loop, unchanged and with a change")
    s.add_argument("logs", nargs="+", help=LOGS_HELP)
    _add_change_options(s)
    s.add_argument("--workload", metavar="FILE", help="simulate this workload (a workload.parquet, edited) "
                   "instead of the one the log records")
    s.add_argument("-o", "--out", required=True, help="directory for report.json, jobs.parquet, shares.parquet, "
                   "cycles.parquet and workload.parquet")
    _add_force(s)
    s.set_defaults(func=cmd_simulate)

    r = sub.add_parser("report", help="one self-contained HTML report of a log (inline SVG plots)")
    r.add_argument("logs", nargs="+", help=LOGS_HELP + "; or a `rmreplay fleet` dataset (the report of the "
                   "whole fleet)")
    r.add_argument("-o", "--out", required=True, help="the HTML file to write")
    _add_force(r)
    r.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    r.add_argument("--no-audit", action="store_true", help="leave out the audit's divergences (faster)")
    r.add_argument("--title", help="the report's title")
    r.add_argument("--simulation", metavar="OUT", help="add the section of a `rmreplay simulate -o OUT` run "
                   "(logged against simulated)")
    r.set_defaults(func=cmd_report)
    for command in (a, e, w, c, s, r):
        add_release_option(command)
        command.add_argument("--no-cache", action="store_true", help="parse the logs again even if the cache "
                             "($RMREPLAY_CACHE, default ~/.cache/rmreplay) has them (a LOG may also be a "
                             "`rmreplay parse -o` directory)")

    n = sub.add_parser("anonymize", help="the same logs with host, user, job names, IPs and paths replaced by "
                       "pseudonyms (audits the same)")
    n.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or a DUCC log folder (its "
                   "rm.log* only): the log's own lines are rewritten, so not a `rmreplay parse -o` directory")
    n.add_argument("-o", "--out", required=True, help="directory for the anonymized files (the folder to send)")
    n.add_argument("--mapping", metavar="FILE", help="where to write the mapping (pseudonym -> name; keep it at "
                   "your site): default <OUT>.mapping.json beside the key, or beside OUT without --key; never "
                   "inside OUT")
    n.add_argument("--key", metavar="FILE", help="the site's key: read, or created there when absent, so that "
                   "later logs get the same pseudonyms (default: a new key for this run only)")
    _add_force(n)
    n.set_defaults(func=cmd_anonymize)

    f = sub.add_parser("fleet", help="many clusters' logs parsed (and audited) on Dask into one Parquet dataset")
    f.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="one cluster's log directory or archive (.tar, .tar.gz, .tgz, .zip), as NAME=PATH or PATH "
                        "(named after itself); every rolled set in it is a stream")
    f.add_argument("-o", "--out", required=True, metavar="DATASET",
                   help="the dataset folder: DATASET/<table>/cluster=<name>/stream=<stream>/ and manifest.parquet")
    where = f.add_mutually_exclusive_group()
    where.add_argument("--workers", type=_jobs, metavar="N",
                       help="start a local Dask cluster of N worker processes (default: one per core)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="use a running Dask scheduler (tcp://host:8786; `dask scheduler`, `dask worker`)")
    f.add_argument("--audit", action="store_true", help="also audit each stream (ref_* and divergences tables)")
    f.add_argument("--config", action="append", metavar="NAME=DIR",
                   help="the DUCC resources directory of cluster NAME, for its streams whose bootstrap section "
                        "rolled away (with --audit); repeatable")
    f.add_argument("--retry-failed", action="store_true",
                   help="run streams the manifest records as failed again (otherwise an unchanged stream is skipped)")
    f.set_defaults(func=cmd_fleet)
    return parser


def print_input_note(note: str | None) -> None:
    """What the log folders given held besides the RM's log: one line on stderr."""
    if note:
        Console(stderr=True).print(f"rmreplay: {note}", markup=False, highlight=False, soft_wrap=True)


def version() -> str:
    """rmreplay's installed version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("rmreplay")
    except PackageNotFoundError:
        return "(not installed: run from a source tree)"


def stdout_console() -> Console:
    """The console commands print to: word-wrapped on a terminal; piped or redirected, every line
    as long as it is (a file or a pipe gets whole sentences, not 80-column pieces)."""
    console = Console()
    console.soft_wrap = not console.is_terminal
    return console


def print_error(message: object) -> None:
    """One red line on stderr, `rmreplay: ...`."""
    Console(stderr=True).print(f"rmreplay: {message}", style="red", markup=False, highlight=False, soft_wrap=True)


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends a command the way Ctrl-C does: outputs discarded, one line


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Entry point of the `rmreplay` sub-commands (`parser`: build_parser() or one extending it)."""
    args = (parser or build_parser()).parse_args(argv)
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        return args.func(args, stdout_console())
    except InputError as exc:
        print_error(exc)
        return 2
    except KeyboardInterrupt:
        print_error(interrupted_line(getattr(args, "out", None), directory=args.command != "report"))
        return 130
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
