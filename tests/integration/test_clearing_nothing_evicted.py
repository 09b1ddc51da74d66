"""setupPreemptions on a machine where it evicts nothing, on a shrunk run of the real trunk RM
(fixtures/corpus/clearing_nothing_evicted, from oracle seed 11515 --focus wide, scenario 6),
held to its truth.jsonl (the RM's preempted shares after the published schedule) and its log.

Cycle 69: reservation-class job 3 is counted 4 machines of np2a (order 3), holds 2 and finds none
free, so findMachines asks setupPreemptions for 2. countFreeableMachines set np2a03 and np2a04
aside. np2a03 holds job 1's one process, and job 1 is counted 1: the process is not preemptable
(`Found non-preemptable share 1 ... j.NShares 1 j.NSharesGiven 1`), nothing is evicted, and the
order variable keeps the request's 3, so np2a04 is cleared too (job 2's process 3). Job 2, counted
1 of 3, then loses one more to its shrink (process 5). Taking np2a03's process's order as the
order to look for (as for an evicted one) skipped np2a04 and shrank job 2 by two instead.
The hand-worked cycle is in tests/unit/test_rmref_out_of_tables.py."""

from __future__ import annotations

import pytest

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME, CYCLE = "corpus/clearing_nothing_evicted", 69


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_machine_where_nothing_is_evicted_leaves_the_next_one_to_be_cleared(level):
    result = audit(parsed(NAME, level).tables, trace=(CYCLE,))
    assert not result.divergences
    trace = result.traces[CYCLE]
    assert list(trace.chained.cleared) == ["np2a03.sim.ducc", "np2a04.sim.ducc"]
    [record] = [r for r in truth(NAME) if r["cycle"] == CYCLE]
    preempted = {(j["id"], s) for j in record["jobs"] for s in j["preempted"]}
    assert preempted == {(2, 3), (2, 5)}
    d = trace.chained.decisions
    taken = {(e.job_id, e.share_id) for e in d.evictions} | {
        (a.donor_job, a.share_id) for a in d.defrag if a.action == "evict"}
    assert taken == preempted
