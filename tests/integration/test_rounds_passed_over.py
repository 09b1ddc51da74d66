"""takeFromTheRich's later round passes over the processes an earlier round cleared, on a shrunk run
of the real 2.0.0 RM (fixtures/releases/2.0.0/rounds-passed-over, from oracle seed 11919 --focus
fragmentation, scenario 4), held to its truth.jsonl and its log.

Cycle 45: needy job 15 (order 3) wants two processes; on np1a03 user cat's jobs 10 (order 2) and
12 and 14 (order 1, one process each) are the donors, their investments known only as each job's
own ranking, more shares than rmref.choices.MAX_OPEN. The RM clears job 10's 93 and 92 in round 1
and its 91 and 90 in round 2 (truth's four `evict` actions). In round 2 the two cleared in round 1,
evicted, still rank first on the machine; the order rmref tries to put the RM's shares first took
job 14's process 89 before them, so job 10's 90 came too late: rmref cleared 93, 92, 91 and 89.
"""

from __future__ import annotations

import pytest

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME, CYCLE, HOST = "releases/2.0.0/rounds-passed-over", 45, "np1a03.sim.ducc"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_later_round_passes_over_what_an_earlier_one_cleared(level):
    result = audit(parsed(NAME, level).tables, trace=(CYCLE,))
    assert not result.divergences
    [record] = [r for r in truth(NAME) if r["cycle"] == CYCLE]
    rm = sorted((a["donor_job"], a["share"]) for a in record["defrag"]["actions"] if a["host"] == HOST)
    assert rm == [(10, 90), (10, 91), (10, 92), (10, 93)]
    trace = result.traces[CYCLE]
    assert trace.chained is not None
    taken = sorted((a.donor_job, a.share_id) for a in trace.chained.decisions.defrag if a.host == HOST)
    assert taken == rm
