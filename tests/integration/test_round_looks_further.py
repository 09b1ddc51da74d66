"""A takeFromTheRich round that, in the RM's order, looks past the share rmref's own order stops at.

fixtures/releases/2.0.0/round-looks-further is the real 2.0.0 RM (oracle seed 11616 --focus
fragmentation, scenario 0, shrunk to 7 pieces of work, 12 nodes, 50 cycles). Cycle 49: job 7
(order 20) is actually needy for one process; n09 (20 quanta) has 18 free and holds job 1's 222
and 221 (order 2) and job 3's 225 and 224 (order 1), both jobs eve's: ShareByWealthSorter ranks
them by investment, which the log shows only as each job's own ranking, so the two rankings may
interleave any way. In rmref's order job 1's 222 comes first and makes room alone; the RM met job
3's 225 and 224 first and cleared them (truth.jsonl's actions, the DEBUG log's `Clearing share`
lines). rmref permuted only the shares open with 222, the one its own order looked at, so 221
stayed second and no order it tried put 225 and 224 together first: a divergence against the log
and truth. Every share of the machine is now in the walk, and the RM's clearing is a verified choice.
"""

from __future__ import annotations

import pytest

from tests.helpers import traced_audit, truth_defrag_actions

NAME = "releases/2.0.0/round-looks-further"
CYCLE, NEEDY = 49, 7
LEVELS = ("rm.log", "rm-debug.log")


@pytest.mark.parametrize("level", LEVELS)
def test_rmref_clears_what_truth_cleared(level):
    result = traced_audit(NAME, level, CYCLE)
    assert not result.divergences
    d = result.traces[CYCLE].defrag
    assert [(a.needy_job, a.donor_job, a.host, a.share_id) for a in d.actions] == truth_defrag_actions(NAME, CYCLE)
    assert truth_defrag_actions(NAME, CYCLE) == [(NEEDY, 3, "n09.sim.ducc", 225), (NEEDY, 3, "n09.sim.ducc", 224)]


@pytest.mark.parametrize("level", LEVELS)
def test_the_rms_clearing_is_one_of_the_rounds_alternatives(level):
    result = traced_audit(NAME, level, CYCLE)
    [u] = result.traces[CYCLE].defrag.unsettled
    assert u.needy_job == NEEDY and u.host == "n09.sim.ducc" and not u.partial
    assert ((3, 225), (3, 224)) in u.alternatives and ((1, 222),) in u.alternatives
    assert {(v.cycle, v.decision) for v in result.verified} >= {(CYCLE, "defrag"), (CYCLE, "schedule")}
