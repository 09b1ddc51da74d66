"""takeFromTheRich rounds among more equally ranked shares than a whole-order listing can hold.

fixtures/releases/2.0.0/many-open-shares is the real 2.0.0 RM (oracle seed 11616 --focus
fragmentation, scenario 0, shrunk to 10 pieces of work, 12 nodes, 62 cycles). Cycle 61: job 9
(order 3) is actually needy for two processes; n12 (24 quanta, none free) holds ten processes of
jobs 2 (order 2) and 4 (order 1), both eve's, whose investment order the log shows only as each
job's own ranking, so the two rankings may interleave any way. The RM's two rounds there (truth's
actions; the DEBUG log's `Clearing share` lines) clear job 2's 199 and 198, then job 4's 216 and
job 2's 128. rmref listed no order of more than rmref.choices.MAX_OPEN shares but its own and one
putting the RM's shares first, and cleared job 2's four: a divergence against the log and truth.
Each round stops after two or three shares, so the orders are walked only that far
(rmref.choices.open_prefixes): a handful of choices per round, the RM's among them, verified.
"""

from __future__ import annotations

import pytest

from rmref.choices import MAX_OPEN
from tests.helpers import traced_audit, truth_defrag_actions

NAME = "releases/2.0.0/many-open-shares"
CYCLE, NEEDY, HOST = 61, 9, "n12.sim.ducc"
LEVELS = ("rm.log", "rm-debug.log")


@pytest.mark.parametrize("level", LEVELS)
def test_each_round_clears_what_truths_round_cleared(level):
    result = traced_audit(NAME, level, CYCLE)
    assert not result.divergences
    mine = [(a.needy_job, a.donor_job, a.host, a.share_id) for a in result.traces[CYCLE].defrag.actions]
    expected = truth_defrag_actions(NAME, CYCLE)
    assert [(n, j, s) for n, j, _h, s in expected] == [(NEEDY, 2, 199), (NEEDY, 2, 198), (NEEDY, 4, 216),
                                                      (NEEDY, 2, 128)]
    # two rounds on n12, two shares each (truth lists them round by round)
    assert set(mine[:2]) == set(expected[:2]) and set(mine[2:]) == set(expected[2:])


@pytest.mark.parametrize("level", LEVELS)
def test_the_rounds_are_listed_and_the_rms_choice_verified(level):
    result = traced_audit(NAME, level, CYCLE)
    rounds = result.traces[CYCLE].defrag.unsettled
    assert [u.host for u in rounds] == [HOST, HOST]
    assert all(len(u.shares) > MAX_OPEN and not u.partial for u in rounds)
    assert {(v.cycle, v.decision) for v in result.verified} >= {(CYCLE, "defrag"), (CYCLE, "schedule")}
