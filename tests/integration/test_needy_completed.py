"""A job that completes while on the needy list is no tie (fixtures/releases/2.2.2/needy-completed:
oracle seed 10303 scenario 6 on the real 2.2.2 RM, shrunk to 9 pieces of work, 8 nodes and 75
cycles; trunk logs the same).

Cycle C finds jobs A and B potentially needy (both order 3, submitted apart: scenario.json), and the
RM puts both on its needy list (truth: `in_needy_list`). Before cycle C+1 the Orchestrator publishes
A Completing, which marks it complete; the RM prints no cap for it (initJobCap skips a completed
job), and the needy pass drops it from the list without printing it, so C+1's DEBUG "Expand needy"
lines name B only. Read as a job left off the list, A was taken to tie with B (the TreeMap keeps
one of two jobs that tie), and B took A's place in submission order: at cycle 74 the RM served job
4, submitted between the two, before B, and the DEBUG audit placed B first.
"""

from __future__ import annotations

from replay.model.needy import needy_left_off, needy_ties
from replay.model.start import cycle_inputs
from replay.model.submission import submission_order
from tests.helpers import FIXTURES, parsed, scenario, truth
from tests.oracle.check import check_level

NAME = "releases/2.2.2/needy-completed"
A, B = 2, 6  # the job that completes on the list, the job left on it
C = 5  # the cycle that finds both potentially needy


def _job(cycle: int, job: int) -> dict:
    record = next(r for r in truth(NAME) if r["cycle"] == cycle)
    return next(j for j in record["jobs"] if j["id"] == job)


def test_truth_job_a_leaves_the_list_by_completing_not_by_a_tie():
    submitted = sorted(w["submit_ms"] for w in scenario(NAME)["work"])
    assert submitted[A - 1] != submitted[B - 1]  # DuccIds follow submission: A and B cannot tie
    assert _job(C, A)["in_needy_list"] and _job(C, B)["in_needy_list"]
    assert _job(C, A)["order"] == _job(C, B)["order"]
    assert _job(C + 1, A)["completed"] and not _job(C + 1, A)["in_needy_list"]
    assert _job(C + 1, B)["in_needy_list"]


def test_the_debug_log_shows_no_job_left_off_and_no_tie():
    info, debug = parsed(NAME, "rm.log").tables, parsed(NAME, "rm-debug.log").tables
    assert C + 1 not in needy_left_off(debug) and C + 1 not in needy_left_off(info)
    for tables in (info, debug):
        assert not any(A in pair or B in pair for pair in needy_ties(tables))
        assert B not in submission_order(tables)


def test_the_info_and_debug_logs_give_each_job_the_same_place_in_submission_order():
    info = list(cycle_inputs(parsed(NAME, "rm.log").tables))
    debug = list(cycle_inputs(parsed(NAME, "rm-debug.log").tables))
    assert [i.cycle for i in info] == [d.cycle for d in debug]
    for i, d in zip(info, debug):
        assert i.needy == d.needy, i.cycle
        assert {w.job_id: w.submit_seq for w in i.work} == {w.job_id: w.submit_seq for w in d.work}, i.cycle


def test_rmref_decides_as_the_real_rm_at_both_levels():
    """The oracle's own check: audit against the log, rmref against truth.jsonl, every cycle."""
    records = truth(NAME)
    for level in ("info", "debug"):
        res = check_level(FIXTURES / NAME, level, records)
        assert res.error is None and res.cycles == len(records), level
        assert not res.failures, (level, res.failures[:3])
        assert res.cycles_agree_log == res.cycles_agree_truth == res.cycles, level
