"""The parse's sizing, readable without loading the parse (the command line's defaults and help)."""

from __future__ import annotations

import os

# i_mega24 (bench/bench_parse.py --chunk-mb): 8 MB about as fast, 10% more memory. The same on any
# number of threads: the Parquet row groups follow the chunks, so the files are the same bytes.
DEFAULT_CHUNK_BYTES = 6 << 20
# Each parse thread holds a chunk's working set; a third adds memory, not speed (the Python between
# the compiled calls holds the GIL: docs/benchmarks.md, "Where the parse stands").
DEFAULT_PARSE_THREADS = 2


def parse_threads() -> int:
    """The parse's threads when none are asked for: DEFAULT_PARSE_THREADS, or fewer cores."""
    return min(available_cores(), DEFAULT_PARSE_THREADS)


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1
