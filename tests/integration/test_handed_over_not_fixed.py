"""A reservation's process that defragmentation handed over is never fixed, on a shrunk run of the
real trunk RM (fixtures/corpus/handed_over_not_fixed, from oracle seed 11919 --focus
fragmentation, scenario 7), held to its truth.jsonl and its log.

Cycle 18: What Of connects share 3 on n11 for fair-share job 3, and defragmentation hands it,
pending, to the needy reservation-class job 4 (truth: `reassign_pending`). clearShare only
reassigns the share: findMachines, which fixes the shares it makes for a reservation, never
made it, so it stays unfixed. Cycle 31: job 4's cap rises to 2; countFreeableMachines finds n11,
which holds only job 4's own process, freeable (Machine.isFreeable reads the fixed bit, not the
job's policy: `Giving n11.sim.ducc because it is freeable`), and the RM counts job 4 two
machines (truth `nshares_given` 2). Taking every reservation's process as fixed counted it one.
"""

from __future__ import annotations

import pytest

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME, HANDED, CYCLE, JOB = "corpus/handed_over_not_fixed", 18, 31, 4


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_machine_holding_a_handed_over_process_is_freeable(level):
    result = audit(parsed(NAME, level).tables, trace=(CYCLE,))
    assert not result.divergences
    [handed] = [r for r in truth(NAME) if r["cycle"] == HANDED]
    assert [(a["action"], a["share"], a["needy_job"]) for a in handed["defrag"]["actions"]] == [
        ("reassign_pending", 3, JOB)]
    trace = result.traces[CYCLE]
    [share] = [s for w in trace.input.work if w.job_id == JOB for s in w.shares]
    assert (share.share_id, share.host, share.handed_over) == (3, "n11.sim.ducc", True)
    [record] = [r for r in truth(NAME) if r["cycle"] == CYCLE]
    [job] = [j for j in record["jobs"] if j["id"] == JOB]
    assert trace.how_much is not None
    assert trace.how_much.counts[JOB] == job["nshares_given"] == 2
    [aside] = [a for a in trace.how_much.set_aside if a.job == JOB]
    assert [m.name for m in aside.machines] == ["n11.sim.ducc"]
