"""2.0.x machine tables and reservation clearing, on shrunk runs of the real 2.0.0 RM (oracle seeds
10707, 9808 and 11313; fixtures/releases/2.0.0/, README there), held to their truth.jsonl: the RM's own
state after each published schedule (counts, pure fair shares, needy verdicts, preempted shares).
The hand-worked cycles are in tests/unit/test_rmref_out_of_tables.py."""

from __future__ import annotations

from functools import lru_cache

import pytest

from replay.apps.audit import audit
from replay.apps.change import Change
from replay.apps.whatif import whatif
from rmref import Phases
from rmref.constants import PURGE
from tests.helpers import parsed, truth

OUT_OF_TABLES, VARIED_OFF = "releases/2.0.0/kept-out-of-tables", 52
CLEARING, CLEARED, NOT_CLEARED = "releases/2.0.0/free-before-clearing", 36, 37
OLD_RECORD, BACK = "releases/2.0.0/kept-old-record", 97
OTHERS, SHORT = "releases/2.0.0/clears-another-set-aside", 69
EVERY, BOTH = "releases/2.0.0/clears-every-machine-set-aside", 22


@lru_cache(maxsize=None)
def _audit(name: str, cycles: tuple[int, ...]):
    return audit(parsed(name).tables, trace=cycles)


def _record(name: str, cycle: int) -> dict:
    return next(r for r in truth(name) if r["cycle"] == cycle)


def test_a_varied_off_machine_is_out_of_the_tables():
    """Cycle 52: n01 was varied off at this instant, holding the JobDriver's process and twelve of
    job 3's, ten of them purged. How Much divides no free space of n01 (out of the tables), the
    pure fair share leaves it out (truth: job 3's is 1, where n01's 80 quanta would give 5), and
    job 3, still holding its two unpurged processes, is not needy."""
    result = _audit(OUT_OF_TABLES, (VARIED_OFF,))
    assert not result.divergences
    record = _record(OUT_OF_TABLES, VARIED_OFF)
    [n01] = [n for n in record["nodes"] if n["name"] == "n01.sim.ducc"]
    assert n01["status"] == "offline"
    trace = result.traces[VARIED_OFF]
    jobs = {j["id"]: j for j in record["jobs"]}
    assert trace.how_much.counts == {j: jobs[j]["nshares_given"] for j in trace.how_much.counts}
    assert trace.how_much.pure_fair_share[3] == jobs[3]["pure_fair_share"] == 1
    assert sum(1 for s in jobs[3]["shares"] if not s["purged"]) == 2
    assert 3 not in trace.defrag.needy and not jobs[3]["needy"]
    kept = {e.share_id for e in trace.evictions if e.job_id == 3 and e.reason == PURGE}
    assert kept == {s["id"] for s in jobs[3]["shares"] if s["purged"]}


def _taken(trace) -> set[tuple[int, int]]:
    """What rmref's chained run takes: shrinks, clearings and purges, and defragmentation's evictions."""
    d = trace.chained.decisions
    return {(e.job_id, e.share_id) for e in d.evictions} | {
        (a.donor_job, a.share_id) for a in d.defrag if a.action == "evict"}


@pytest.mark.parametrize(("cycle", "cleared"), [(CLEARED, ("n13.sim.ducc",)), (NOT_CLEARED, ())])
def test_setup_preemptions_clears_only_what_free_machines_leave_short(cycle, cleared):
    """Cycle 36: the fair-share pass takes every free machine before reservation 5's findMachines,
    which clears n13, the machine set aside for it. Cycle 37: n13 is set aside again, but a free
    machine is left when findMachines comes, and nothing is cleared: job 1 loses to its shrink
    exactly what truth says (15 processes), no more."""
    result = _audit(CLEARING, (CLEARED, NOT_CLEARED))
    assert not result.divergences
    trace = result.traces[cycle]
    assert trace.chained.cleared == cleared
    record = _record(CLEARING, cycle)
    assert _taken(trace) == {(j["id"], s) for j in record["jobs"] for s in j["preempted"]}


def test_a_reservation_short_of_free_machines_clears_the_one_set_aside_for_another():
    """Cycle 69: reservations 7 and 8 set np203 and np202 aside; 7 takes free np201, and 8, short,
    has setupPreemptions walk every machine set aside in the pool: it clears np203, and job 6 loses
    its 32 processes there, as truth says; np202 keeps job 5's but what its shrink takes."""
    result = _audit(OTHERS, (SHORT,))
    assert not result.divergences
    trace = result.traces[SHORT]
    assert trace.chained.cleared == ("np203.sim.ducc",)
    record = _record(OTHERS, SHORT)
    assert _taken(trace) == {(j["id"], s) for j in record["jobs"] for s in j["preempted"]}


def test_a_whatif_with_a_clearing_step_that_empties_nothing():
    """Cycle 68: setupPreemptions empties np203 for a reservation, taking shares of job 5 there;
    rmref unchanged takes what the RM logged. A clearing step swapped for one that empties nothing
    reaches the replay: job 5 then loses other shares to its shrink, the what-if's only change."""
    result = whatif(parsed(OTHERS).tables, Change(phases=Phases(clearing=lambda *args, **kwargs: ())))
    [(cycle, job, kind, logged, baseline, changed)] = result.changes
    assert (cycle, job, kind) == (68, 5, "evictions") and logged == baseline and changed != logged


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_job_short_of_two_machines_clears_both_set_aside(level):
    """Cycle 22 (oracle seed 11313): reservation-class job 2 is counted two whole machines, none
    free; n07 and n08, each running two of job 1's order-1 processes, are set aside and 2.0.0's
    setupPreemptions clears both (its order stays the request's; from 2.2.0 it would look for
    order 1 after the first and clear one). Job 1 loses all four, as truth and the log say."""
    result = audit(parsed(EVERY, level).tables, trace=(BOTH,))
    assert not result.divergences
    trace = result.traces[BOTH]
    assert sorted(trace.chained.cleared) == ["n07.sim.ducc", "n08.sim.ducc"]
    record = _record(EVERY, BOTH)
    preempted = {(j["id"], s) for j in record["jobs"] for s in j["preempted"]}
    assert len(preempted) == 4
    assert _taken(trace) == preempted


def test_the_old_record_keeps_the_free_space_it_had_at_the_disable():
    """Cycle 97: n01 is back as a new record; the processes the vary-off kept are on the old one,
    whose free space is 6 of 80 quanta, as the disable left it (the RM: "bad virtual machine list
    ... v_order 6"). How Much and What Of account them there; the counts and job 2's three new
    processes on n01 are truth's."""
    result = _audit(OLD_RECORD, (BACK,))
    assert not result.divergences
    trace = result.traces[BACK]
    [n01] = [m for m in trace.input.machines if m.name == "n01.sim.ducc"]
    assert n01.online and n01.old_free == 6
    record = _record(OLD_RECORD, BACK)
    jobs = {j["id"]: j for j in record["jobs"]}
    assert trace.how_much.counts == {j: jobs[j]["nshares_given"] for j in trace.how_much.counts}
    hosts = {s["id"]: s["host"] for s in jobs[2]["shares"]}
    assert sorted(p.host for p in trace.placements if p.job_id == 2) == sorted(hosts[s] for s in jobs[2]["added"])
