"""The simulated workload's per-job values, first and last in log order, on a rolled set: hand-worked.

Job 7 is described in rm.log.1 (lines 800 and 900) and again in the newer rm.log (line 10, a
short file after the roll). Its latest process limit and work count are rm.log's, though the
line numbers there are the smallest.
"""

from __future__ import annotations

import polars as pl

from replay.apps.simulate.reconstruct import _items, _max_processes
from replay.parsing.tables import SCHEMAS, conform

ROWS = [("rm.log.1", 800), ("rm.log.1", 900), ("rm.log", 10)]  # log order


def _table(name: str, **columns: list[object]) -> pl.DataFrame:
    files, lines = zip(*ROWS)
    return conform(pl.DataFrame({"job_id": [7] * len(ROWS), "file": files, "line": lines, **columns}), SCHEMAS[name])


def test_the_process_limit_is_the_last_adjusted():
    """The limit adjusted ("Max shares adjusted") to 2 in rm.log.1, then to 6 in rm.log: 6 is in force."""
    events = _table("job_events", event=["other", "max_shares", "max_shares"], max_processes=[None, 2, 6])
    jobs = _table("jobs", max_processes=[4, None, None])
    assert _max_processes({"job_events": events, "jobs": jobs}) == {7: 6}


def test_the_rms_work_count_runs_from_the_first_row_to_the_last():
    """No jobUpdate line: the RM's rows give 10 questions, 10 remaining in rm.log.1, then 4 in rm.log."""
    events = _table("job_events").clear()
    jobs = _table("jobs", nquest=[10, 10, 10], remaining=[10, 10, 4])
    row = _items({"job_events": events, "jobs": jobs}).row(0, named=True)
    assert (row["items"], row["items_done"], row["done_logged"], row["from_rm"]) == (10, 0, 6, True)
