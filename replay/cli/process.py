"""The `rmreplay` process: allocators set before the libraries load, signals, errors, exit codes."""

from __future__ import annotations

import ctypes
import gc
import os
import signal
import sys
import threading

from replay.cli.registry import holding


def tune_allocators(command: str | None = None) -> None:
    """Allocator settings for a streaming parse, made before polars and pyarrow load: each chunk
    allocates and frees the same few large buffers, and every arena that serves them keeps its
    high-water mark. Measured on i_mega24 (bench/bench_parse.py), together about 65 MB off the peak
    of `rmreplay parse` (315 -> 250 MB), at no measurable cost in time. For a command that holds
    what it built (registry.holding), freed pages also go back to the system at once (i_mega24's
    audit: 311 -> 254 MB peak, for about 0.7 CPU seconds more in its parse)."""
    holds = holding(command)
    # Arrow's jemalloc pool keeps freed chunk buffers for reuse; the C allocator hands them back
    # (about 45 MB)
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    # numpy's OpenBLAS starts a thread per core at import, which spins on a core for a while
    # waiting for work that never comes: no command does floating-point linear algebra (rmref's
    # one matrix product is int64, which numpy does without BLAS). About 4% of a small parse's CPU
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    # polars' jemalloc: one arena for its thread pool and ours, not one per thread; glibc: the
    # Parquet writer thread shares the main arena instead of keeping one of its own (together
    # about 17 MB); jemalloc keeps freed pages for 10 s unless told not to
    jemalloc = "narenas:1,dirty_decay_ms:0,muzzy_decay_ms:0" if holds else "narenas:1"
    os.environ.setdefault("_RJEM_MALLOC_CONF", jemalloc)
    mallopt = getattr(ctypes.CDLL(None), "mallopt", None) if sys.platform.startswith("linux") else None
    if mallopt is not None:
        mallopt(-8, 1)  # M_ARENA_MAX
        if holds:
            # a fixed mmap threshold (glibc raises it after each large free, and then keeps large
            # buffers in its heap) and a low trim threshold: freed buffers leave the process
            mallopt(-3, 256 << 10)  # M_MMAP_THRESHOLD
            mallopt(-1, 1 << 20)  # M_TRIM_THRESHOLD
    if holds:  # the same for the processes it starts (the fleet's workers), read by glibc at their start
        for key, value in (("MALLOC_ARENA_MAX", "1"), ("MALLOC_MMAP_THRESHOLD_", str(256 << 10)),
                           ("MALLOC_TRIM_THRESHOLD_", str(1 << 20))):
            os.environ.setdefault(key, value)


def _terminate(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt  # SIGTERM ends a command the way Ctrl-C does: outputs discarded, one line


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `rmreplay` console script: allocators first, then the command."""
    args = sys.argv[1:] if argv is None else argv
    tune_allocators(next((a for a in args if not a.startswith("-")), None))
    # a Ctrl-C or SIGTERM while the libraries load (a second or so) ends quietly too; signal
    # handlers can only be set on the main thread (a test may call main() from another)
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if on_main else None
    try:
        # the libraries make a few hundred thousand objects as they load, none of them garbage: with
        # the collector off meanwhile, and those objects then frozen out of its sight, its full
        # collections stop walking them (loading took about a tenth longer with it on). Only in the
        # console script's own process: a caller's (tests call main(argv)) keeps its collector as it is
        own = argv is None
        if own:
            gc.disable()
        try:
            from replay.cli.parser import build_parser, run

            # the command named first is the only one built (and imported): the others' modules
            # load polars, rmref and more that this one may not need
            parser = build_parser(args[0] if args else None)
        except KeyboardInterrupt:
            print("rmreplay: interrupted: nothing written", file=sys.stderr)
            return 130
        finally:
            if own:
                gc.freeze()
                gc.enable()
        return run(parser.parse_args(args))
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
