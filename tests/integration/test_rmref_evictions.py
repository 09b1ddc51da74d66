"""Logged shrinkBy victims follow rmref's eviction order as far as an INFO log can show it.

The log does not show a process's investment (work-item time), so only the first two rules are
checked: initializing processes go first, and among them the least initialization time first.
"""

from __future__ import annotations

import polars as pl
import pytest

from rmref import HeldShare, investment_key
from tests.helpers import SCENARIOS, parsed


def _held_before(tables, cycle: int, job: int) -> list[HeldShare]:
    """The job's shares after the previous cycle, minus those already being removed."""
    sched = tables["schedule"].filter((pl.col("cycle") == cycle - 1) & (pl.col("job_id") == job))
    leaving = set(sched.filter(pl.col("kind") == "removal")["share_id"].to_list())
    running = tables["processes"].filter((pl.col("state_to") == "Running") & (pl.col("cycle") < cycle))
    initialized = set(running.select("host", "share_id").iter_rows())
    return [HeldShare(sid, host, (host, sid) in initialized, init_ms, investment=0, host_memory_mb=0)
            for host, sid, init_ms in sched.filter(pl.col("kind") == "existing")
            .select("host", "share_id", "init_ms").iter_rows() if sid not in leaving]


@pytest.mark.parametrize("name", SCENARIOS)
def test_shrink_victims_come_first_in_investment_order(name):
    tables = parsed(name).tables
    shrinks = tables["evictions"].filter(pl.col("reason") == "shrink")
    for (cycle, job), victims in shrinks.group_by("cycle", "job_id"):
        held = _held_before(tables, cycle, job)
        lost = set(victims["share_id"].to_list())
        assert lost <= {s.share_id for s in held}, (cycle, job)
        visible = lambda s: investment_key(s)[:2] if not s.initialized else (1, 0)  # noqa: E731
        if any(s.share_id not in lost for s in held):
            worst_lost = max(visible(s) for s in held if s.share_id in lost)
            best_kept = min(visible(s) for s in held if s.share_id not in lost)
            assert worst_lost <= best_kept, (cycle, job)
