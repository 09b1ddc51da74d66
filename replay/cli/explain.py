"""`rmreplay explain LOG... --job ID [--cycle N|eN] [--json]`: the story of one job."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from replay.cli.inputs import kept_audit, open_tables
from replay.cli.options import add_logs, add_replay_options, whole_number
from replay.cli.registry import Command
from replay.cli.show import print_note
from replay.model.cycleref import parse_ref, resolve
from replay.parsing.sources import InputError
from replay.parsing.store import all_columns


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
    tables = loaded.tables
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
        print_note(console, loaded.note)
        console.print(render(story), markup=False, highlight=False, emoji=False)  # the text as it is
    return 0


def arguments(p: argparse.ArgumentParser) -> None:
    """explain's arguments."""
    add_logs(p)
    p.add_argument("--job", required=True, metavar="ID", help="the job (or service, reservation) id")
    p.add_argument("--cycle", metavar="N", help="one cycle in detail, by number or by the RM's epoch (e118) "
                   "(default: the job's whole life, then its last scheduled cycle)")
    p.add_argument("--json", action="store_true", help="the story as JSON (logged and rmref decisions, where "
                   "they part, the sections)")
    p.add_argument("--config", metavar="DIR", help="DUCC resources directory, when the log's bootstrap rolled away")
    p.add_argument("--force", action="store_true", help="use --config even when it does not belong to the log")
    add_replay_options(p)


COMMAND = Command("explain", "the story of one job: why it got what it got, level by level", arguments,
                  cmd_explain)
