"""The threads and process limit of work that predates a mid-stream log, read off its base caps.

Hand-worked from the real 2.0.0 RM's log of oracle seed 12121 (fragmentation), scenario 0: job 26,
fixed share, 2 threads, at most 32 processes, submitted before the log's cut. initJobCap's base cap
is min(limit, ceil(remaining / threads)) (the job never holds more processes than that), so it
prints 32 while the work is 589 to 193 items, and 25 at 49 (ceil(49 / 2)).
"""

from __future__ import annotations

import polars as pl

from replay.model.inputs import PREDATES_LOG, _highest_base, _threads_of_unprinted

# (remaining work the Orchestrator reported, base cap initJobCap printed), cycle by cycle
LOGGED = [(589, 32), (557, 32), (519, 32), (421, 32), (193, 32), (49, 25)]


def _read() -> pl.DataFrame:
    rows = pl.DataFrame({"job_id": [26] * len(LOGGED), "source": [PREDATES_LOG] * len(LOGGED),
                         "remaining_in_force": [r for r, _b in LOGGED], "base_cap": [b for _r, b in LOGGED],
                         "threads": [None] * len(LOGGED)}, schema_overrides={"threads": pl.Int64})
    return rows.select(_threads_of_unprinted().alias("threads"), _highest_base().alias("limit"))


def test_a_base_cap_at_the_process_limit_does_not_pin_the_threads():
    """Cycles whose base cap is the job's limit (32) say only that the work needs at least 32
    processes; the cycle at 25 pins the threads to 2 (ceil(49 / 2) = 25, ceil(49 / 3) = 17).
    Read as ceil(remaining / threads) everywhere, no thread count fits every cycle, and each
    cycle's own (19 at 589) gives base caps the RM never printed (31 at 557)."""
    read = _read()
    assert read["threads"].to_list() == [2] * len(LOGGED)
    assert read["limit"].to_list() == [32] * len(LOGGED)


def test_the_base_caps_read_back_are_the_logged_ones():
    """With the threads and limit read, the RM's rule gives every logged base cap back."""
    read = _read()
    for (remaining, base), threads, limit in zip(LOGGED, read["threads"], read["limit"], strict=True):
        assert min(limit, -(-remaining // threads)) == base
