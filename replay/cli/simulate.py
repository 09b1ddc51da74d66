"""`rmreplay simulate LOG... [--set ...] [--workload FILE] -o OUT`: the recorded workload, closed loop."""

from __future__ import annotations

import argparse
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl
from rich.console import Console
from rich.table import Table

from replay.cli.inputs import load_tables
from replay.cli.lines import assumed_block, ids
from replay.cli.options import (
    add_change_options, add_force, add_java_options, add_logs, add_replay_options, change_of,
)
from replay.cli.registry import Command
from replay.cli.show import print_note, progress_display
from replay.parsing.outdir import atomic_output_dir, check_replaceable
from replay.parsing.store import all_columns

if TYPE_CHECKING:
    from replay.apps.simulate.metrics import Measured
    from replay.apps.simulate.workload import Workload
    from replay.apps.change import Change


def simulate_table(report: dict[str, Any]) -> Table:
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


def simulate_summary(report: dict[str, Any], seconds: float) -> str:
    """The identity figures and the speed, in one line."""
    ident, n = report["identity"], report["cycles"]
    runs = 2 if report["changed"] else 1
    shares = "-" if ident["shares_match"] is None else f"{100 * ident['shares_match']:.1f}%"
    median = "-" if ident["finish_error_median_pct"] is None else f"{ident['finish_error_median_pct']:.2f}%"
    p90 = "-" if ident["finish_error_p90_pct"] is None else f"{ident['finish_error_p90_pct']:.2f}%"
    return (f"identity (baseline vs log): shares {shares} of {ident['job_cycles']:,} job-cycles, completion error "
            f"median {median} p90 {p90} of turnaround over {ident['jobs']} job(s); {n:,} cycles x {runs} run(s) "
            f"in {seconds:.1f} s, {runs * n / max(seconds, 1e-9):,.0f} cycles/s")


def simulate_and_measure(tables: Mapping[str, pl.DataFrame], change: Change, args: argparse.Namespace,
                         console: Console, workload: Workload | None = None) -> Measured:
    """Simulate and measure one log (with a progress line)."""
    from replay.apps.simulate.metrics import measure
    from replay.apps.simulate.simulation import simulate

    with progress_display(console, "simulating") as show:
        sim = simulate(tables, change, workload, workload_from=getattr(args, "workload", None) or "log",
                       progress=show)
        if args.rm or args.vs:  # the real Java RM in the loop (replay.javarm)
            from replay.javarm.simulate import measure_java

            return measure_java(tables, sim, args.rm or "", args.vs, args.logs, args.config, args.java_seed)
        return measure(tables, sim)


def java_lines(report: dict[str, Any]) -> list[str]:
    """What `simulate --rm` adds to the console: the sides, the Java run's identity, where builds part, assumptions."""
    rm = report.get("rm")
    if not rm:
        return []
    ident, sides = rm["identity_sim"], rm["sides"]
    pct = "-" if ident["shares_match"] is None else f"{100 * ident['shares_match']:.1f}%"
    median, p90 = ident["finish_error_median_pct"], ident["finish_error_p90_pct"]
    out = [f"sides: logged = {sides['logged']}, baseline = {sides['baseline']}, sim = {sides['sim']}",
           f"identity (sim vs log): shares {pct} of {ident['job_cycles']:,} job-cycles, completion error median "
           f"{'-' if median is None else f'{median:.2f}%'} p90 {'-' if p90 is None else f'{p90:.2f}%'} over "
           f"{ident['jobs']} job(s)"]
    vs = rm.get("vs")
    if vs:
        first = vs["first_difference"]
        where = f"; first at cycle {first['cycle']}, job {first['job_id']}" if first else ""
        out.append(f"--vs: {vs['job_cycles_differ']:,} job-cycle(s) hold different processes, "
                   f"{vs['schedules_differ']:,} schedule(s) differ{where}")
    mismatched = [r["build"] for r in rm["runs"] if rm.get("log_release") and r["release"] != rm["log_release"]]
    if mismatched:
        out.append(f"note: the log is DUCC {rm['log_release']}, {', '.join(mismatched)} another release: "
                   "identity with the log is not expected")
    out += [f"assumed (Java run): {line}" for line in rm["runs"][0]["assumed"]]
    out.append(f"configuration: {rm['runs'][0]['configuration']}")
    return out


def print_workload_notes(console: Console, report: dict[str, Any], workload: Workload | None = None) -> None:
    """The jobs whose submission or end the log does not hold, and what the simulation took for them
    (`workload`: the one simulated, whose notes say which rates were assumed)."""
    from replay.apps.simulate.reconstruct import OPEN_ORDER, projected_rates
    from replay.apps.simulate.unnamed import UNNAMED
    present = report["workload"]["present_from_start"]
    if present:
        console.print(f"[yellow]{len(present)} job(s) already there when the log begins ({ids(present)}): their "
                      "submission is not in the log; taken as present from the start (workload.parquet, note)[/]",
                      highlight=False)
    projected = report["workload"]["projected"]
    if projected:
        notes = {job: "" for job in projected} | {w.job_id: w.note for w in (workload.work if workload else ())
                                                  if w.job_id in set(projected)}
        rate = projected_rates(notes)
        console.print(f"[yellow]{len(projected)} job(s) run past the log's end ({ids(projected)}): their remaining "
                      f"work is projected at {rate} (workload.parquet, note)[/]", highlight=False)
    if workload is None:
        return
    unnamed = [w.job_id for w in workload.work if UNNAMED in w.note]
    if unnamed:
        console.print(f"[yellow]{len(unnamed)} job(s) whose class no line of the job table names ({ids(unnamed)}): "
                      "read from other lines or assumed (workload.parquet, note)[/]", highlight=False)
    leaving = [f"job {s.job_id} {s.host}.{s.share_id}" for s in workload.shares if s.leaving]
    if leaving:
        console.print(f"[yellow]{len(leaving)} process(es) taken as leaving as the log began ({', '.join(leaving[:6])}"
                      f"{', ...' if len(leaving) > 6 else ''}): removed the cycle before its first (workload.parquet, "
                      "the jobs' notes)[/]", highlight=False)
    open_nodes = sorted({n.host for n in workload.nodes if OPEN_ORDER in n.note})
    if open_nodes:
        console.print(f"[yellow]{len(open_nodes)} node(s) whose order the log leaves open ({', '.join(open_nodes[:6])}"
                      f"{', ...' if len(open_nodes) > 6 else ''}): simulated at the order taken (report.json "
                      "'assumed'); where a decision rests on it the simulation may part from the log "
                      "(workload.parquet, note)[/]", highlight=False)


def cmd_simulate(args: argparse.Namespace, console: Console) -> int:
    """rmreplay simulate LOG... [--set KEY=VALUE]... [--scheduler MODULE:OBJECT] [--workload FILE] -o OUT"""
    from replay.apps.simulate.metrics import write_simulation
    from replay.apps.simulate.workload import read_workload

    check_replaceable(Path(args.out), args.force, "simulate", args.logs)
    change = change_of(args)
    workload = read_workload(args.workload) if args.workload else None
    tables, note = load_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                               rm_release=args.rm_release)
    start = time.perf_counter()
    measured = simulate_and_measure(tables, change, args, console, workload)
    seconds = time.perf_counter() - start
    with atomic_output_dir(args.out, args.force, command="simulate", inputs=args.logs) as tmp:
        report = write_simulation(measured, tmp)
    print_note(console, note)
    console.print(simulate_table(report))
    console.print(simulate_summary(report, seconds), highlight=False)
    for line in java_lines(report) + assumed_block(measured.sim):
        console.print(line, markup=False, highlight=False)
    print_workload_notes(console, report, measured.sim.workload)
    console.print(f"written to [bold]{args.out}[/] (report.json, jobs.parquet, shares.parquet, cycles.parquet, "
                  "workload.parquet)")
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    """simulate's arguments."""
    add_logs(p)
    add_change_options(p)
    p.add_argument("--workload", metavar="FILE", help="simulate this workload (a workload.parquet, edited) "
                   "instead of the one the log records")
    p.add_argument("-o", "--out", required=True, help="directory for report.json, jobs.parquet, shares.parquet, "
                   "cycles.parquet and workload.parquet")
    add_force(p)
    add_replay_options(p)
    add_java_options(p)


COMMAND = Command("simulate", "simulate the recorded workload closed loop, unchanged and with a change", arguments,
                  cmd_simulate)
