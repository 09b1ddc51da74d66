"""rmref's cap phase, on inputs rebuilt from the log, gives the cap chain the RM logged and truth."""

from __future__ import annotations

import polars as pl

from replay.apps.audit import audit, result_frames
from tests.helpers import parsed, truth


def _reference_caps(tables) -> pl.DataFrame:
    return result_frames(audit(tables))["ref_caps"]


def test_reference_caps_equal_the_logged_cap_chain(fixture_log):
    tables = parsed(*fixture_log).tables
    ours = _reference_caps(tables)
    logged = tables["job_caps"].filter(pl.col("cycle").is_not_null()).select(
        "cycle", "job_id", "base_cap", "potential_cap", "actual_cap")
    both = ours.join(logged, on=["cycle", "job_id"], suffix="_log")
    # every logged cap is rebuilt: fair share from the cycle's own job row, other work from its last one
    assert both.height == ours.height == logged.height > 0
    for col in ("base_cap", "potential_cap", "actual_cap"):
        diff = both.filter(pl.col(col) != pl.col(f"{col}_log"))
        assert diff.height == 0, diff.head()


def test_reference_caps_equal_truth(fixture_log):
    name, level = fixture_log
    ours = {(c, j): a for c, j, a in _reference_caps(parsed(name, level).tables)
            .select("cycle", "job_id", "actual_cap").iter_rows()}
    checked = 0
    for cyc in truth(name):
        for job in cyc["jobs"]:
            if (cyc["cycle"], job["id"]) in ours:
                assert ours[(cyc["cycle"], job["id"])] == job["job_cap"], (cyc["cycle"], job["id"])
                checked += 1
    assert checked == len(ours)
