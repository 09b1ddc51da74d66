"""rmref's cap phase, on inputs rebuilt from the log, gives the cap chain the RM logged and truth."""

from __future__ import annotations

import polars as pl

from replay.inputs import cap_inputs, replay_caps
from tests.conftest import parsed, truth


def test_reference_caps_equal_the_logged_cap_chain(fixture_log):
    tables = parsed(*fixture_log).tables
    ours = replay_caps(cap_inputs(tables))
    logged = tables["job_caps"].select("cycle", "job_id", "base_cap", "potential_cap", "actual_cap")
    both = ours.join(logged, on=["cycle", "job_id"], suffix="_log")
    assert both.height == ours.height > 0
    for col in ("base_cap", "potential_cap", "actual_cap"):
        diff = both.filter(pl.col(col) != pl.col(f"{col}_log"))
        assert diff.height == 0, diff.head()
    # every logged cap of a fair-share job can be rebuilt from the log alone
    fair = tables["jobs"].filter(pl.col("source") == "howMuchFairShare").select("cycle", "job_id").unique()
    fair = fair.join(logged, on=["cycle", "job_id"], how="semi")
    assert fair.join(ours, on=["cycle", "job_id"], how="anti").height == 0


def test_reference_caps_equal_truth(fixture_log):
    name, level = fixture_log
    ours = {(c, j): a for c, j, a in replay_caps(cap_inputs(parsed(name, level).tables))
            .select("cycle", "job_id", "actual_cap").iter_rows()}
    checked = 0
    for cyc in truth(name):
        for job in cyc["jobs"]:
            if (cyc["cycle"], job["id"]) in ours:
                assert ours[(cyc["cycle"], job["id"])] == job["job_cap"], (cyc["cycle"], job["id"])
                checked += 1
    assert checked == len(ours)
