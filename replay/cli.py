"""The `rmreplay` command line."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import polars as pl
from rich.console import Console
from rich.table import Table

from replay.parsing.pipeline import DEFAULT_CHUNK_BYTES, MemorySink, Summary, available_cores, parse, run
from replay.parsing.sources import InputError
from replay.parsing.store import ParquetSink, ParquetTables
from replay.parsing.tables import SCHEMAS

if TYPE_CHECKING:  # the audit (rmref and the scheduler inputs) loads only for the commands that run it
    from replay.apps.audit import AuditResult

# Families shown in the summary, grouped the way the catalog groups them.
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
    """rmreplay parse LOG... [-o OUT]"""
    start = time.perf_counter()
    sink = ParquetSink(args.out) if args.out else MemorySink()
    with console.status("parsing", spinner="dots") as status:
        summary = run(args.logs, sink, engine=args.engine, progress=lambda msg: status.update(msg),
                      chunk_bytes=args.chunk_mb << 20 if args.chunk_mb else None, workers=args.jobs)
        if isinstance(sink, ParquetSink):
            sink.close()
    console.print(summary_table(summary, time.perf_counter() - start))
    if args.out:
        console.print(f"tables written to [bold]{args.out}[/] ({len(SCHEMAS)} Parquet files)")
    if summary.unparsed:
        console.print(f"[yellow]{summary.unparsed} unparsed line(s): see unparsed.parquet (file, line, reason)[/]")
    return 0


def parse_cycles(text: str | None) -> range | None:
    """`A:B` (inclusive, either end optional) or `N` as a range of cycle numbers."""
    if not text:
        return None
    lo, sep, hi = text.partition(":")
    try:
        first = int(lo) if lo else 1
        last = int(hi) if hi else (first if not sep else 2**31)
    except ValueError:
        raise InputError(f"--cycles {text!r}: expected A:B, A:, :B or N (cycle numbers)") from None
    if first < 1 or last < first:
        raise InputError(f"--cycles {text!r}: cycles count from 1 and A must not exceed B")
    return range(first, last + 1)


def load_tables(logs: list[str], config: str | None, console: Console, spill: Path | None = None,
                columns: dict[str, tuple[str, ...]] | None = None) -> Mapping[str, pl.DataFrame]:
    """Parse the logs; fill a bootstrap that rotated away from `--config DIR`. With `spill`, the
    tables stream to Parquet there and are read back on use (only `columns`), so a long log's
    tables are not all in memory at once."""
    with console.status("parsing", spinner="dots") as status:
        if spill is None:
            tables = parse(logs, progress=lambda msg: status.update(msg)).tables
        else:
            sink = ParquetSink(spill)
            run(logs, sink, progress=lambda msg: status.update(msg))
            sink.close()
            tables = ParquetTables(spill, columns or SCHEMAS)
    if config:
        from replay.model.resources import read_resources

        if tables["classes"].is_empty() or tables["nodepools"].is_empty():
            tables.update(read_resources(Path(config)))
            console.print(f"bootstrap: from {config} (the log has none)")
        else:
            console.print("bootstrap: from the log (it has one; --config not needed)")
    return tables


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


def audit_line(result: AuditResult, seconds: float) -> str:
    """The one-line verdict under the table."""
    n, ok = len(result.cycles), result.report()["cycles_agree"]
    style = "green" if ok == n else "yellow"
    return f"[{style}]{ok:,} of {n:,} cycles agree[/] ({seconds:.1f} s, {n / max(seconds, 1e-9):,.0f} cycles/s)"


def cmd_audit(args: argparse.Namespace, console: Console) -> int:
    """rmreplay audit LOG... [--config DIR] [-o OUT] [--cycles A:B]"""
    from replay.apps.audit import audit, write_audit
    from replay.model.reads import audit_columns

    cycles = parse_cycles(args.cycles)
    with tempfile.TemporaryDirectory(prefix="rmreplay-audit-") as spill:
        tables = load_tables(args.logs, args.config, console, Path(spill), audit_columns())
        start = time.perf_counter()
        with console.status("auditing", spinner="dots") as status:
            result = audit(tables, cycles=cycles,
                           progress=lambda i, n: status.update(f"auditing cycle {i:,} of {n:,}"))
    seconds = time.perf_counter() - start
    console.print(audit_table(result, seconds))
    console.print(audit_line(result, seconds))
    if result.skipped:
        console.print(f"[yellow]{len(result.skipped):,} cycle(s) not audited: "
                      f"{next(iter(result.skipped.values()))}[/]", highlight=False)
    if not result.cycles:
        raise InputError("nothing to audit: " + (next(iter(result.skipped.values())) if result.skipped else
                         "no published schedule in the audited range (check --cycles, or that the log has "
                         "`createState  Schedule sent` records)"))
    for cycle, job, kind, _logged, _ref, why in result.divergences[: args.show]:
        console.print(f"  cycle {cycle} job {job} {kind}: {why}", markup=False, highlight=False)
    if len(result.divergences) > args.show:
        console.print(f"  ... {len(result.divergences) - args.show:,} more (divergences.parquet with -o)")
    if args.out:
        write_audit(result, Path(args.out))
        console.print(f"report written to [bold]{args.out}[/] (report.json, ref_*.parquet, divergences.parquet)")
    return 1 if result.divergences else 0


def cmd_explain(args: argparse.Namespace, console: Console) -> int:
    """rmreplay explain LOG... --job ID [--cycle N] [--config DIR]"""
    from replay.apps.explain import explain_job, render

    tables = load_tables(args.logs, args.config, console)
    console.print(render(explain_job(tables, args.job, args.cycle)), markup=False, highlight=False)
    return 0


def _change(args: argparse.Namespace):
    """The --set and --scheduler options as a what-if Change."""
    from replay.apps.whatif import Change, load_scheduler, parse_sets

    phases = load_scheduler(args.scheduler) if args.scheduler else None
    return Change(parse_sets(args.set or ()), **({"phases": phases} if phases else {}), scheduler=args.scheduler)


def whatif_table(report: dict) -> Table:
    """Changed cycles and decisions, fairness and preemptions of a what-if."""
    table = Table(title="rmreplay whatif", show_header=True, box=None, pad_edge=False)
    table.add_column("", style="bold")
    table.add_column("logged", justify="right")
    table.add_column("what-if", justify="right")
    table.add_row("preemptions", f"{report['preemptions']['logged']:,}", f"{report['preemptions']['whatif']:,}")
    fair = report["fairness"]
    table.add_row("fairness (Jain)", *(f"{fair[k]:.3f}" if fair[k] is not None else "-" for k in ("logged", "whatif")))
    for user, v in report["per_user"].items():
        table.add_row(f"  {user} mean shares", f"{v['mean_shares_logged']:,.2f}", f"{v['mean_shares_whatif']:,.2f}")
    return table


def whatif_summary(report: dict, seconds: float) -> str:
    """One line: cycles and jobs changed, speed."""
    n = report["cycles"]
    return (f"{report['cycles_changed']:,} of {n:,} cycles and {report['jobs_changed']:,} job(s) change "
            f"(open loop: each cycle starts from the recorded state); {seconds:.1f} s, "
            f"{n / max(seconds, 1e-9):,.0f} cycles/s")


def cmd_whatif(args: argparse.Namespace, console: Console) -> int:
    """rmreplay whatif LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] -o OUT"""
    from replay.apps.whatif import whatif, write_whatif

    change = _change(args)
    cycles = parse_cycles(args.cycles)
    tables = load_tables(args.logs, args.config, console)
    start = time.perf_counter()
    with console.status("replaying", spinner="dots") as status:
        result = whatif(tables, change, cycles=cycles,
                        progress=lambda i, n: status.update(f"replaying cycle {i:,} of {n:,}"))
    if not result.cycles:
        raise InputError("no published schedule in the replayed range: nothing to replay")
    seconds = time.perf_counter() - start
    console.print(whatif_table(result.report()))
    console.print(whatif_summary(result.report(), seconds), highlight=False)
    for cycle, job, kind, logged, new in result.changes[: args.show]:
        console.print(f"  cycle {cycle} job {job} {kind}: logged {logged} -> what-if {new}", markup=False,
                      highlight=False)
    if len(result.changes) > args.show:
        console.print(f"  ... {len(result.changes) - args.show:,} more (changes.parquet)")
    write_whatif(result, Path(args.out))
    console.print(f"written to [bold]{args.out}[/] (report.json, changes.parquet)")
    return 0


def cmd_check(args: argparse.Namespace, console: Console) -> int:
    """rmreplay check LOG... [--scheduler ...] [--set ...] [--max-changed-cycles N] [--junit FILE]"""
    from replay.apps.whatif import junit_xml, whatif

    change = _change(args)
    results = []
    for log in args.logs:  # each LOG (a file, or a directory holding a rolled set) is gated on its own
        tables = load_tables([log], args.config, console)
        start = time.perf_counter()
        with console.status(f"replaying {log}", spinner="dots"):
            result = whatif(tables, change)
        seconds = time.perf_counter() - start
        results.append((log, result, seconds))
        n = result.cycles_changed
        ok = n <= args.max_changed_cycles
        console.print(f"[{'green' if ok else 'red'}]{'PASS' if ok else 'FAIL'}[/] {log}: {n:,} of "
                      f"{len(result.cycles):,} cycles change (allowed {args.max_changed_cycles:,}); "
                      f"{len({j for _c, j, *_ in result.changes}):,} job(s)", highlight=False)
        for cycle, job, kind, logged, new in result.changes[: args.show]:
            console.print(f"  cycle {cycle} job {job} {kind}: logged {logged} -> what-if {new}", markup=False,
                          highlight=False)
    if args.junit:
        Path(args.junit).parent.mkdir(parents=True, exist_ok=True)
        Path(args.junit).write_text(junit_xml(results, args.max_changed_cycles))
        console.print(f"JUnit XML written to [bold]{args.junit}[/]")
    return 1 if any(r.cycles_changed > args.max_changed_cycles for _, r, _ in results) else 0


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """rmreplay report LOG... -o report.html [--no-audit]"""
    from replay.apps.audit import audit
    from replay.apps.fleet.dataset import is_dataset
    from replay.apps.report import build_report

    if len(args.logs) == 1 and is_dataset(args.logs[0]):  # a fleet's dataset: the report of the whole fleet
        from replay.apps.fleet.report import build_fleet_report

        html = build_fleet_report(args.logs[0], args.title or f"rmreplay fleet report: {Path(args.logs[0]).name}")
        return _write_report(Path(args.out), html, console)
    tables = load_tables(args.logs, args.config, console)
    audited = None
    if not args.no_audit:
        with console.status("auditing", spinner="dots") as status:
            try:
                audited = audit(tables, progress=lambda i, n: status.update(f"auditing cycle {i:,} of {n:,}"))
            except InputError as exc:  # no bootstrap: the rest of the report still stands
                console.print(f"[yellow]audit skipped: {exc}[/]")
    title = args.title or f"rmreplay report: {', '.join(Path(p).name for p in args.logs)}"
    return _write_report(Path(args.out), build_report(tables, title, audited), console)


def _write_report(out: Path, html: str, console: Console) -> int:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    console.print(f"report written to [bold]{out}[/] ({out.stat().st_size / 1e3:,.0f} kB, self-contained)")
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


def _chunk_mb(text: str) -> int:
    """--chunk-mb: a whole number of megabytes, 1 to 1024."""
    if not text.isdigit() or not 1 <= int(text) <= 1024:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of megabytes from 1 to 1024")
    return int(text)


def _jobs(text: str) -> int:
    """--jobs: a whole number of parse threads, 1 to 256."""
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of threads from 1 to 256")
    return int(text)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of `rmreplay`."""
    parser = argparse.ArgumentParser(prog="rmreplay", description="Replay and audit DUCC Resource Manager logs.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("parse", help="parse rm.log files into Parquet tables")
    p.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or directories")
    p.add_argument("-o", "--out", help="directory for the <table>.parquet files")
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
    a.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or directories")
    a.add_argument("--config", metavar="DIR", help="DUCC resources directory (ducc.properties, ducc.classes) "
                   "for a log whose bootstrap section has rolled away")
    a.add_argument("-o", "--out", help="directory for report.json, ref_*.parquet and divergences.parquet")
    a.add_argument("--cycles", metavar="A:B", help="audit only cycles A to B (inclusive; A:, :B and N work too)")
    a.add_argument("--show", type=int, default=10, metavar="N", help="divergences to print (default 10)")
    a.set_defaults(func=cmd_audit)

    e = sub.add_parser("explain", help="the story of one job: why it got what it got, level by level")
    e.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or directories")
    e.add_argument("--job", type=int, required=True, metavar="ID", help="the job (or service, reservation) id")
    e.add_argument("--cycle", type=int, metavar="N", help="one cycle in detail (default: the job's whole life, "
                   "then its last scheduled cycle)")
    e.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    e.set_defaults(func=cmd_explain)

    w = sub.add_parser("whatif", help="replay every cycle's recorded inputs with a changed configuration or phase")
    w.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or directories")
    _add_change_options(w)
    w.add_argument("-o", "--out", required=True, help="directory for report.json and changes.parquet")
    w.add_argument("--cycles", metavar="A:B", help="replay only cycles A to B (inclusive)")
    w.set_defaults(func=cmd_whatif)

    c = sub.add_parser("check", help="CI gate: fail when a change alters more cycles than allowed")
    c.add_argument("logs", nargs="+", help="logs to check, each on its own (a file, or a directory of a rolled set)")
    _add_change_options(c)
    c.add_argument("--max-changed-cycles", type=int, default=0, metavar="N",
                   help="cycles allowed to change per log (default 0)")
    c.add_argument("--junit", metavar="FILE", help="write a JUnit XML report (one testsuite per log)")
    c.set_defaults(func=cmd_check)

    r = sub.add_parser("report", help="one self-contained HTML report of a log (inline SVG plots)")
    r.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz) or directories; or a "
                   "`rmreplay fleet` dataset (the report of the whole fleet)")
    r.add_argument("-o", "--out", required=True, help="the HTML file to write")
    r.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    r.add_argument("--no-audit", action="store_true", help="leave out the audit's divergences (faster)")
    r.add_argument("--title", help="the report's title")
    r.set_defaults(func=cmd_report)

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
    f.add_argument("--retry-failed", action="store_true",
                   help="run streams the manifest records as failed again (otherwise an unchanged stream is skipped)")
    f.set_defaults(func=cmd_fleet)
    return parser


def print_error(message: object) -> None:
    """One red line on stderr, `rmreplay: ...`."""
    Console(stderr=True).print(f"rmreplay: {message}", style="red", markup=False, highlight=False, soft_wrap=True)


def main(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> int:
    """Entry point of the `rmreplay` sub-commands (`parser`: build_parser() or one extending it)."""
    args = (parser or build_parser()).parse_args(argv)
    try:
        return args.func(args, Console(stderr=False))
    except InputError as exc:
        print_error(exc)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
