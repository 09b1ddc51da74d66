"""`rmreplay report LOG... -o report.html [--no-audit]`: one self-contained HTML report (or a fleet's)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console

from replay.cli.inputs import Loaded, kept_audit, open_tables, stored_place
from replay.cli.options import add_force, add_logs, add_replay_options
from replay.cli.registry import Command
from replay.cli.show import print_note, progress_display
from replay.parsing.outdir import atomic_output_file, check_replaceable_file
from replay.parsing.sources import InputError
from replay.parsing.store import all_columns

if TYPE_CHECKING:
    from replay.apps.stored import Known


def cmd_report(args: argparse.Namespace, console: Console) -> int:
    """rmreplay report LOG... -o report.html [--no-audit]"""
    from replay.apps.fleet.dataset import is_dataset
    from replay.apps.report import GENERATOR, build_report

    check_replaceable_file(Path(args.out), args.force, GENERATOR.encode())
    if len(args.logs) == 1 and is_dataset(args.logs[0]):  # a fleet's dataset: the report of the whole fleet
        from replay.apps.fleet.report import build_fleet_report

        html = build_fleet_report(args.logs[0], args.title or f"rmreplay fleet report: {Path(args.logs[0]).name}")
        return write_report(Path(args.out), html, args.force, console)
    # read from disk on use where the parse is on disk: the report holds one table's columns at a time
    loaded = open_tables(args.logs, args.config, console, not args.no_cache, all_columns(), force=args.force,
                         rm_release=args.rm_release)
    print_note(console, loaded.note)
    audited, known = None, None
    if not args.no_audit:
        with progress_display(console, "auditing") as show:
            try:
                stored = kept_audit(loaded, show)
                audited, known = stored.result, stored.stored.known() if stored.stored is not None else None
            except InputError as exc:  # no bootstrap: the rest of the report still stands
                console.print(f"[yellow]audit skipped: {exc}[/]")
    else:
        known = stored_known(loaded)
    sections = []
    if args.simulation:
        from replay.apps.simulate.report import simulation_section

        sections.append(simulation_section(args.simulation))
    title = args.title or f"rmreplay report: {', '.join(Path(p).name for p in args.logs)}"
    html = build_report(loaded.tables, title, audited, sections=sections, stored=known)
    return write_report(Path(args.out), html, args.force, console)


def stored_known(loaded: Loaded) -> Known | None:
    """The machines and takings of the input's stored audit, when one is stored (none is run)."""
    from replay.apps.stored import audit_view, load
    from replay.model.start import bootstrap

    try:
        stored = load(stored_place(loaded, bootstrap(audit_view(loaded.tables))))
    except InputError:  # no bootstrap: the report says so itself
        return None
    return stored.known() if stored is not None else None


def write_report(out: Path, html: str, force: bool, console: Console) -> int:
    """The HTML file, written whole or not at all."""
    from replay.apps.report import GENERATOR

    with atomic_output_file(out, force, marker=GENERATOR.encode()) as tmp:
        tmp.write_text(html)
    console.print(f"report written to [bold]{out}[/] ({out.stat().st_size / 1e3:,.0f} kB, self-contained)")
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    """report's arguments."""
    add_logs(p, "; or a `rmreplay fleet` dataset (the report of the whole fleet)")
    p.add_argument("-o", "--out", required=True, help="the HTML file to write")
    add_force(p)
    p.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    p.add_argument("--no-audit", action="store_true", help="leave out the audit's divergences (faster)")
    p.add_argument("--title", help="the report's title")
    p.add_argument("--simulation", metavar="OUT", help="add the section of a `rmreplay simulate -o OUT` run "
                   "(logged against simulated)")
    add_replay_options(p)


COMMAND = Command("report", "one self-contained HTML report of a log (inline SVG plots)", arguments, cmd_report)
