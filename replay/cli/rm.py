"""`rmreplay rm build SRC...`: the real Java RM of a DUCC source tree, built with rmreplay's harness."""

from __future__ import annotations

import argparse

from rich.console import Console

from replay.cli.registry import Command
from rmref.releases import RELEASES


def cmd_rm_build(args: argparse.Namespace, console: Console) -> int:
    """Build each SRC (or find its build in the cache) and say where it is."""
    from replay.javarm.build import build

    for spec in args.sources:
        done = build(spec)
        how = f"built in {done.seconds:.1f} s" if done.built else "already built (cache)"
        console.print(f"{done.source}: DUCC {done.version} (release {done.release.name}), tree "
                      f"{done.digest[:12]}: {how}: {done.dir}", markup=False, highlight=False)
        if done.note:
            console.print(f"  {done.note}", markup=False, highlight=False)
    return 0


def arguments(rm: argparse.ArgumentParser) -> None:
    """rm's sub-commands: `build SRC...`."""
    rm_sub = rm.add_subparsers(dest="rm_command", required=True)
    b = rm_sub.add_parser("build", help="build a DUCC source tree's RM (with rmreplay's harness) into the cache")
    b.add_argument("sources", nargs="+", metavar="SRC",
                   help="a DUCC source tree (a release's, or a working copy with a patch), or a release name ("
                        + ", ".join(r.name for r in RELEASES) + ") taken from the upstream git mirror "
                        "($RMREPLAY_DUCC_MIRROR, else uima-ducc.git in the cache)")
    b.set_defaults(func=cmd_rm_build)


COMMAND = Command("rm", "the real Java RM of a DUCC source tree, for `simulate --rm java:SRC`", arguments,
                  cmd_rm_build)
