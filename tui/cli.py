"""The `rmreplay` console script: replay's sub-commands plus `rmreplay tui`.

replay must not import tui, so the TUI's sub-command is added here, on top of
`replay.cli.build_parser()`, and every other sub-command is dispatched to replay unchanged.
"""

from __future__ import annotations

import argparse
import ctypes
import os
import signal
import sys
from typing import TYPE_CHECKING
from pathlib import Path


# Commands that hold what they built for long after a parse (the audit's state, the fleet's
# tasks, a replay's or a report's frames; each of them may run and store the audit): their peak
# is the parse's leftovers plus that state, so freed memory goes back at once.
HOLDING = {"audit", "fleet", "explain", "report", "whatif", "check", "simulate", "tui"}


def tune_allocators(command: str | None = None) -> None:
    """Allocator settings for a streaming parse, made before polars and pyarrow load: each chunk
    allocates and frees the same few large buffers, and every arena that serves them keeps its
    high-water mark. Measured on i_mega24 (bench/bench_parse.py), together about 65 MB off the peak
    of `rmreplay parse` (315 -> 250 MB), at no measurable cost in time. For a `command` in HOLDING,
    freed pages also go back to the system at once (i_mega24's audit: 311 -> 254 MB peak, for
    about 0.7 CPU seconds more in its parse)."""
    holding = command in HOLDING
    # Arrow's jemalloc pool keeps freed chunk buffers for reuse; the C allocator hands them back
    # (about 45 MB)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # polars' jemalloc: one arena for its thread pool and ours, not one per thread; glibc: the
    # Parquet writer thread shares the main arena instead of keeping one of its own (together
    # about 17 MB); jemalloc keeps freed pages for 10 s unless told not to
    jemalloc = "narenas:1,dirty_decay_ms:0,muzzy_decay_ms:0" if holding else "narenas:1"
    os.environ.setdefault("_RJEM_MALLOC_CONF", jemalloc)
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None) if sys.platform.startswith("linux") else None
    if mallopt is not None:
        mallopt(-8, 1)  # M_ARENA_MAX
        if holding:
            # a fixed mmap threshold (glibc raises it after each large free, and then keeps large
            # buffers in its heap) and a low trim threshold: freed buffers leave the process
            mallopt(-3, 256 << 10)  # M_MMAP_THRESHOLD
            mallopt(-1, 1 << 20)  # M_TRIM_THRESHOLD
    if holding:  # the same for the processes it starts (the fleet's workers), read by glibc at their start
        for key, value in (("MALLOC_ARENA_MAX", "1"), ("MALLOC_MMAP_THRESHOLD_", str(256 << 10)),
                           ("MALLOC_TRIM_THRESHOLD_", str(1 << 20))):
            os.environ.setdefault(key, value)


if TYPE_CHECKING:  # rich loads with replay, after the Ctrl-C handling is in place
    from rich.console import Console


def cmd_tui(args: argparse.Namespace, console: Console) -> int:
    """rmreplay tui LOG... (or a `rmreplay parse` output directory)"""
    from replay import InputError
    from replay import cli as replay_cli
    from replay.parsing.logdir import find_inputs
    from tui.app import RmReplayApp
    from tui.load import is_parse_dir

    if not is_parse_dir(args.logs[0]):
        find_inputs(args.logs)  # input that cannot be read is a command-line error, before the terminal is taken over
    if args.config and not Path(args.config).is_dir():
        raise InputError(f"--config {args.config}: no such directory (give the DUCC resources folder)")
    if args.rm_release:
        from replay.model.release import resolve
        try:
            resolve(args.rm_release)
        except ValueError as exc:
            raise InputError(f"--rm-release: {exc}") from None
    app = RmReplayApp(args.logs, use_cache=not args.no_cache, config=args.config, rm_release=args.rm_release)
    app.run()
    if app.error:
        replay_cli.print_error(app.error)
        return 2
    return 0


def build_parser() -> argparse.ArgumentParser:
    """replay's parser with the `tui` sub-command added."""
    from replay import cli as replay_cli

    parser = replay_cli.build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))  # noqa: SLF001
    t = sub.add_parser("tui", help="browse a log cycle by cycle in the terminal (Textual)")
    t.add_argument("logs", nargs="+", help="rm.log files, rolled sets (rm.log.N, .gz), directories, "
                   "or a `rmreplay parse -o` output directory")
    t.add_argument("--no-cache", action="store_true",
                   help="parse again even if the cache ($RMREPLAY_CACHE, ~/.cache/rmreplay) has this input")
    t.add_argument("--config", metavar="DIR", help="DUCC resources directory (ducc.properties, ducc.classes) "
                   "for a log whose bootstrap section has rolled away, as for `rmreplay audit`")
    replay_cli.add_release_option(t)
    t.set_defaults(func=cmd_tui)
    return parser


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rmreplay` console script (the allocators are set before polars loads)."""
    args = sys.argv[1:] if argv is None else argv
    tune_allocators(next((a for a in args if not a.startswith("-")), None))
    # a Ctrl-C or SIGTERM while the libraries load (a second or so) ends quietly too; once the
    # command runs, replay.cli.main says what became of its output
    signal.signal(signal.SIGTERM, _terminate)
    try:
        from replay import cli as replay_cli

        parser = build_parser()
    except KeyboardInterrupt:
        print("rmreplay: interrupted: nothing written", file=sys.stderr)
        return 130
    return replay_cli.main(argv, parser)


if __name__ == "__main__":
    sys.exit(main())
