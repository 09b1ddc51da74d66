"""The parse's sizing, readable without loading the parse (the command line's defaults and help)."""

from __future__ import annotations

import os

# Measured on i_mega24 and the DEBUG log, -j 1 and -j 2 (docs/benchmarks.md, "The per-chunk cost and
# the chunk size"): 16 MB chunks take about a tenth less CPU but peak above twice the log; 10 MB
# already does on the DEBUG log with two threads; 8 MB saves no CPU the runs resolve, for up to 20 MB
# more. The same on any number of threads: the Parquet row groups follow the chunks, so the files
# are the same bytes.
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
