"""takeFromTheRich on a 2.2.2 log: each round meets machines of equal owner wealth and memory in
another open order (fixtures/corpus/defrag_rehashed_ties, shrunk from held-out seed 10202
scenario 1 on the real RM of 2.2.2).

Cycle 29: the needy job takes two processes' room from job 1. The RM's first round clears share 10
on np1a03 (rmref's pick too); its second round clears share 8 on np1a04, which ties with np1a03
again. The first round meets the ties in the pool's node map, a later one in a HashMap of
Machine.hashCode the eligible machines are put back through, both hashed on IPs the log never
shows: the second round's pick is open on its own. rmref's own run takes share 9 on np1a03 again;
following the RM, it must not keep np1a03 first once the RM's clearing there is done.
"""

from __future__ import annotations

from functools import lru_cache

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME = "corpus/defrag_rehashed_ties"
CYCLE, DONOR = 29, 1


@lru_cache(maxsize=None)
def _result():
    return audit(parsed(NAME).tables, trace=(CYCLE,))


def _truth_evicted_by_defrag() -> set[tuple[str, int]]:
    """The donor's shares truth marks evicted at the cycle on the machines defragmentation cleared."""
    record = next(r for r in truth(NAME) if r["cycle"] == CYCLE)
    job = next(j for j in record["jobs"] if j["id"] == DONOR)
    return {(s["host"], s["id"]) for s in job["shares"] if s["evicted"] and s["host"].startswith("np1a")}


def test_the_rms_clearing_is_a_verified_choice():
    result = _result()
    assert not result.divergences
    rows = [v for v in result.verified if v.decision == "defrag"]
    assert [(v.cycle, v.job_id) for v in rows] == [(CYCLE, DONOR)]
    assert "np1a04.sim.ducc" in rows[0].explanation and rows[0].logged != rows[0].reference


def test_following_the_rm_evicts_what_truth_evicts():
    d = _result().traces[CYCLE].defrag
    taken = {(a.host, a.share_id) for a in d.actions if a.action == "evict" and a.donor_job == DONOR}
    assert taken == _truth_evicted_by_defrag() == {("np1a03.sim.ducc", 10), ("np1a04.sim.ducc", 8)}
