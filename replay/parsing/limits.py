"""The parse's sizing, readable without loading the parse (the command line's defaults and help)."""

from __future__ import annotations

import os

# Measured on i_mega24 and the DEBUG log, -j 1 and -j 2 (docs/benchmarks.md, "A chunk's working set
# and the chunk size"): 8 MB peaks at about 1.8 times the log with two threads (1.9x in the highest
# run, the DEBUG log's), since a parsed chunk no longer waits in memory for the next; 10 MB passes
# 1.9x, 12 MB twice the log. The same on any number of threads: the Parquet row groups follow the
# chunks, so the files are the same bytes.
DEFAULT_CHUNK_BYTES = 8 << 20
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
