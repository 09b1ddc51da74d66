"""explain's job-scoped view (replay.apps.explain.scope) reads the log's own start.

The view holds a job's rows and two cycles' (those of the cycle explained), so a fact of the
whole log, whether it starts mid-stream and which removals its first schedule lists from before
it, is read from the log as the audit reads it, never from the rows the view holds.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from replay.apps.explain.scope import Scoped
from replay.model.leaving import removals_before_the_log, starts_midstream
from replay.parsing.cache import open_input
from replay.parsing.store import ParquetTables, all_columns
from tests.helpers import log_path
from tests.midstream import cut


def _on_disk(path: Path) -> ParquetTables:
    tables = open_input([str(path)], columns=all_columns()).tables
    assert isinstance(tables, ParquetTables)
    return tables


def test_a_job_that_starts_late_in_a_whole_log_is_not_explained_as_of_a_mid_stream_log(tmp_path, monkeypatch):
    """h_mega15 starts with the RM: every node of its first cycle arrives in it (the log's lines).
    The view of its last job to start, at its first cycle, held no node arriving and read as a log
    that starts mid-stream (as did 720 of the 723 views of a published job at a published cycle)."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables = _on_disk(log_path("h_mega15"))
    first = tables["cycles"]["cycle"].min()
    arrived = tables["nodes"].filter((pl.col("event") == "arrive") & (pl.col("cycle") == first))
    assert arrived.height and not starts_midstream(tables)
    published = tables["schedule"].drop_nulls(["cycle", "job_id"]).group_by("job_id").agg(pl.col("cycle").min())
    job, cycle = published.sort("cycle", "job_id").row(-1)
    assert cycle > first + 1  # the precondition: the view holds no row of the first cycle
    view = Scoped(tables, job, (cycle - 1, cycle))
    assert not starts_midstream(view)
    assert removals_before_the_log(view).is_empty()


@pytest.mark.parametrize(("level", "kind"), [("rm.log", "between"), ("rm-debug.log", "counter")])
def test_every_view_of_a_mid_stream_log_reads_its_removals_from_before_it(level, kind, tmp_path, monkeypatch):
    """The log of the real RM (oracle seed 11111, trunk) cut after defragmentation took
    n02.sim.ducc.2 from job 1 (tests.integration.test_midstream): every job's view at every cycle
    it is published in reads the log as starting mid-stream, and the cycle's removals from before
    the log as the whole log does."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    name = "corpus/midstream_removal_before_the_log"
    tables = _on_disk(cut(name, level, kind, tmp_path / f"cut-{level}"))
    before = removals_before_the_log(tables)
    assert starts_midstream(tables)
    pairs = tables["schedule"].drop_nulls(["cycle", "job_id"]).select("job_id", "cycle").unique()
    for job, cycle in pairs.sort("job_id", "cycle").iter_rows():
        view = Scoped(tables, job, (cycle - 1, cycle))
        assert starts_midstream(view), (job, cycle)
        assert (removals_before_the_log(view).filter(pl.col("cycle") == cycle).rows()
                == before.filter(pl.col("cycle") == cycle).rows()), (job, cycle)
