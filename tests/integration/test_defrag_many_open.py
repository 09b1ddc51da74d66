"""takeFromTheRich with more equally ranked shares than rmref lists (fixtures/corpus/defrag_many_open,
shrunk from oracle seed 10505 scenario 3 on the real trunk RM; every release the same).

Cycle 42: job 3 (order 14) is needy on np102 (24 quanta, full), which holds processes of jobs 1 and 2,
both of user dan, so ShareByWealthSorter goes by investment, which the log shows only as each job's own
ranking: any interleaving of the two rankings is open, far more shares than rmref.choices.MAX_OPEN,
and the round looks at fourteen of them: more prefixes of those orders than rmref.choices.MAX_STEPS.
The RM cleared twelve of job 2's and two of job 1's. rmref lists its own clearing and the one of the
allowed order that puts the RM's shares first (Unsettled.partial), and follows the RM.
"""

from __future__ import annotations

from functools import lru_cache

from replay.apps.audit import audit
from rmref.choices import MAX_OPEN
from tests.helpers import parsed, truth

NAME = "corpus/defrag_many_open"
CYCLE, NEEDY = 42, 3


@lru_cache(maxsize=None)
def _result():
    return audit(parsed(NAME).tables, trace=(CYCLE,))


def _truth_actions() -> list[tuple[int, int, str, int]]:
    record = next(r for r in truth(NAME) if r["cycle"] == CYCLE)
    return [(a["needy_job"], a["donor_job"], a["host"], a["share"]) for a in record["defrag"]["actions"]]


def test_rmref_follows_truths_clearing():
    d = _result().traces[CYCLE].defrag
    mine = [(a.needy_job, a.donor_job, a.host, a.share_id) for a in d.actions]
    assert sorted(mine) == sorted(_truth_actions())
    assert {donor for _n, donor, _h, _s in _truth_actions()} == {1, 2}  # both jobs' rankings interleaved


def test_the_round_is_partial_and_the_rms_choice_verified():
    result = _result()
    assert not result.divergences
    [u] = _result().traces[CYCLE].defrag.unsettled
    assert u.needy_job == NEEDY and u.partial and len(u.shares) > MAX_OPEN
    assert {(v.cycle, v.decision) for v in result.verified} == {(CYCLE, "defrag"), (CYCLE, "schedule")}
