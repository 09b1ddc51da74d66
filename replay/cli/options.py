"""Options several commands share: the logs, --force, --no-cache, --rm-release, --set and --scheduler."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from replay.parsing.sources import InputError

if TYPE_CHECKING:
    from replay.apps.change import Change

LOGS_HELP = ("rm.log files, rolled sets (rm.log.N, .gz), a DUCC log folder (its rm.log* only), an archive of one "
             "(.tar, .tar.gz, .tgz, .zip) or a `rmreplay parse -o` directory")


def add_logs(p: argparse.ArgumentParser, extra: str = "") -> None:
    """The LOG... arguments of a command that reads tables."""
    p.add_argument("logs", nargs="+", help=LOGS_HELP + extra)


def add_force(p: argparse.ArgumentParser) -> None:
    """--force: replace an OUT rmreplay did not write; use a --config that is not the log's."""
    p.add_argument("--force", action="store_true",
                   help="replace OUT even when rmreplay did not write it (or another command did); use --config "
                        "even when it does not belong to the log")


def add_config(p: argparse.ArgumentParser) -> None:
    """--config DIR: the DUCC resources folder, for a log whose bootstrap rolled away."""
    p.add_argument("--config", metavar="DIR", help="DUCC resources directory (ducc.properties, ducc.classes) "
                   "for a log whose bootstrap section has rolled away")


class _ReleaseHelp(str):
    """--rm-release's help, the releases listed when the help is printed: a command that starts
    without rmref (`parse`, the TUI's first screen from its summary) does not load it (numpy with
    it, a tenth of a second) to build its parser. (argparse expands a help with `%`.)"""

    def __mod__(self, params: object) -> str:
        from rmref.releases import RELEASES

        return (f"replay as this DUCC release ({', '.join(r.name for r in RELEASES)}; a version not among them "
                "is replayed as the nearest earlier one); default: the log's banner `DUCC Version`, else "
                "inferred from its messages")


def add_release_option(p: argparse.ArgumentParser) -> None:
    """`--rm-release R`: the DUCC release to replay the log as (default: the log's banner, else inferred)."""
    p.add_argument("--rm-release", metavar="R", help=_ReleaseHelp("replay as this DUCC release"))


def add_replay_options(p: argparse.ArgumentParser) -> None:
    """--rm-release and --no-cache, which every command that replays cycles takes."""
    add_release_option(p)
    p.add_argument("--no-cache", action="store_true", help="parse the logs again even if the cache "
                   "($RMREPLAY_CACHE, default ~/.cache/rmreplay) has them (a LOG may also be a "
                   "`rmreplay parse -o` directory)")


def add_change_options(p: argparse.ArgumentParser) -> None:
    """--set, --scheduler, --config and --show: the change a what-if, check or simulation makes."""
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


def add_java_options(p: argparse.ArgumentParser) -> None:
    """`--rm java:SRC`, `--vs java:SRC2` and `--java-seed N` of `simulate` and `check --simulate`."""
    p.add_argument("--rm", metavar="java:SRC", help="run the workload through the real Java RM of SRC (a DUCC "
                   "source tree or a release name; built into the cache as `rmreplay rm build` does) beside rmref")
    p.add_argument("--vs", metavar="java:SRC2", help="with --rm: compare a second build against the first, job by "
                   "job on the same workload (the report's baseline is --rm, its sim --vs)")
    p.add_argument("--java-seed", type=int, default=1, metavar="N",
                   help="seed of the Java RM's DuccId UUIDs (their hash order breaks the RM's ties; an INFO log "
                        "does not show them; default 1)")


def change_of(args: argparse.Namespace) -> Change:
    """The --set and --scheduler options as a what-if Change."""
    from replay.apps.change import Change, load_scheduler, parse_sets

    phases = load_scheduler(args.scheduler) if args.scheduler else None
    return Change(parse_sets(args.set or ()), **({"phases": phases} if phases else {}), scheduler=args.scheduler)


def whole_number(text: str, flag: str, what: str) -> int:
    """A flag's value as a whole number; InputError naming the flag otherwise."""
    try:
        return int(text)
    except ValueError:
        raise InputError(f"{flag} {text!r}: expected {what}, a whole number (e.g. {flag} 12)") from None


def threads(text: str) -> int:
    """--jobs, --workers: a whole number of threads or processes, 1 to 256."""
    if not text.isdigit() or not 1 <= int(text) <= 256:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number of threads from 1 to 256")
    return int(text)
