"""`rmreplay fleet SOURCES... -o DATASET [--workers N | --scheduler ADDRESS] [--audit]`: many clusters on Dask."""

from __future__ import annotations

import argparse

from rich.console import Console

from replay.cli.options import threads
from replay.cli.registry import Command


def cmd_fleet(args: argparse.Namespace, console: Console) -> int:
    """rmreplay fleet SOURCES... -o DATASET (the work is replay.apps.fleet's; Dask loads only here)."""
    from replay.apps.fleet.command import cmd_fleet as fleet

    return fleet(args, console)


def arguments(p: argparse.ArgumentParser) -> None:
    """fleet's arguments."""
    p.add_argument("sources", nargs="+", metavar="SOURCE",
                   help="one cluster's log directory or archive (.tar, .tar.gz, .tgz, .zip), as NAME=PATH or PATH "
                        "(named after itself); every rolled set in it is a stream")
    p.add_argument("-o", "--out", required=True, metavar="DATASET",
                   help="the dataset folder: DATASET/<table>/cluster=<name>/stream=<stream>/ and manifest.parquet")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--workers", type=threads, metavar="N",
                       help="start a local Dask cluster of N worker processes (default: one per core)")
    where.add_argument("--scheduler", metavar="ADDRESS",
                       help="use a running Dask scheduler (tcp://host:8786; `dask scheduler`, `dask worker`)")
    p.add_argument("--audit", action="store_true", help="also audit each stream (ref_* and divergences tables)")
    p.add_argument("--config", action="append", metavar="NAME=DIR",
                   help="the DUCC resources directory of cluster NAME, for its streams whose bootstrap section "
                        "rolled away (with --audit); repeatable")
    p.add_argument("--retry-failed", action="store_true",
                   help="run streams the manifest records as failed again (otherwise an unchanged stream is skipped)")


COMMAND = Command("fleet", "many clusters' logs parsed (and audited) on Dask into one Parquet dataset", arguments,
                  cmd_fleet)
