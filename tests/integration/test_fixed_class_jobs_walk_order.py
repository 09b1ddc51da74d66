"""A fixed-share class's jobs walked in its job map's order, which no line lists
(fixtures/corpus/fixed_class_jobs_walk_order: the real trunk RM, shrunk from held-out seed 12323,
focus wide, scenario 5).

Before cycle 102 np114 holds jobs 1 (1 quantum) and 2 (2), np121 job 4 (3), all of class fixeda:
both have 9 of 12 quanta free and share a bucket of the pool's 9-free map (3 of 16, and of its
clone's 4). Which joined that map first is the order accounting walked the class's jobs in: its
job map, keyed by random ids, which howMuchFixed's lines do not show (they list the jobs oldest
first). The RM put new service 6 on np121; rmref, walking 1, 2, 4, took np114. That is one of the
two placements the open order allows: a verified choice, not a divergence.
"""

from __future__ import annotations

import pytest

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME = "corpus/fixed_class_jobs_walk_order"
CYCLE = 102
HOSTS = ("np114.sim.ducc", "np121.sim.ducc")


def test_truth_two_jobs_of_the_class_left_both_machines_alike_and_the_rm_took_np121():
    records = {r["cycle"]: r for r in truth(NAME)}
    before, now = records[CYCLE - 1], records[CYCLE]
    assert {n["name"]: (n["order"], n["free_qshares"]) for n in before["nodes"] if n["name"] in HOSTS} \
        == {h: (12, 9) for h in HOSTS}
    holders = {s["host"]: j["id"] for j in before["jobs"] for s in j["shares"] if s["host"] in HOSTS}
    classes = {j["class"] for j in before["jobs"] if j["id"] in holders.values()}
    assert holders == {"np114.sim.ducc": 2, "np121.sim.ducc": 4} and classes == {"fixeda"}
    added = [(j["id"], s["host"]) for j in now["jobs"] for s in j["shares"] if s["id"] in j["added"]]
    assert added == [(6, "np121.sim.ducc")]


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_the_rms_pick_is_a_verified_choice_of_the_classs_open_order(level):
    result = audit(parsed(NAME, level).tables)
    assert not result.divergences, result.divergences[:2]
    verified = [v for v in result.verified if v.cycle == CYCLE and v.decision == "placements"]
    assert [v.job_id for v in verified] == [6]
    assert "np121.sim.ducc of np114.sim.ducc, np121.sim.ducc" in verified[0].explanation
    assert "class fixeda's jobs" in verified[0].explanation
