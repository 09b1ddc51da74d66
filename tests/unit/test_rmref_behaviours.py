"""Release behaviours: the catalogue, and each modelled behaviour on a hand-built cycle where the
releases decide differently.

The expected placements are hand-worked from each release's RM source (uima-ducc-rm at the
release's tag): NodepoolScheduler.whatOfFixedShare and NodePool.findShares / rearrangeVirtual.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from rmref import CapInput, job_caps
from rmref.behaviours import CHANGES, Behaviours, for_release
from rmref.constants import DEAD, VARIED_OFF
from rmref.defrag import NODE_IP, defragment
from rmref.evictions import purged_shares
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work
from rmref.releases import RELEASES
from rmref.node_ips import ips_reproducing, unlogged_node_order
from rmref.whatof import what_of

A = Machine("nodeA.sim.ducc", "--default--", 8, 32768)
B = Machine("nodeB.sim.ducc", "--default--", 8, 32768)
NORMAL = ClassDef("normal", FAIR_SHARE, 10, 100, "--default--")
FIXED = ClassDef("fixed", FIXED_SHARE, 5, 100, "--default--")
RSV = ClassDef("reserve", RESERVE, 1, 100, "--default--")
POOLS = (Nodepool("--default--", None),)
_CAP = CapInput(remaining=100, threads=1, current=0, max_processes=100, initialized=True, projected=0,
                init_cap=0, expand_by_doubling=False, use_prediction=False, completed=False, refused=False)


def _work(job_id: int, order: int, cls: str, work_type: str = "Job", shares: tuple[str, ...] = ()) -> Work:
    return Work(job_id, work_type, "u", cls, order, order * 4, _CAP, submit_seq=job_id,
                shares=tuple(Share(job_id * 10 + i, job_id, h, order) for i, h in enumerate(shares)))


def _cycle(release: str, machines: tuple[Machine, ...], work: tuple[Work, ...]) -> CycleInput:
    cfg = Config(quantum_gb=4, behaviours=for_release(release))
    return CycleInput(1, cfg, (NORMAL, FIXED, RSV), POOLS, machines, work)


def _hosts(inp: CycleInput, counts: dict[int, int]) -> list[str]:
    return [p.host for p in what_of(inp, counts)]


# ---- the catalogue --------------------------------------------------------------------------------

def test_every_change_names_a_known_release_and_an_upstream_issue():
    names = [r.name for r in RELEASES]
    flags = [c.flag for c in CHANGES]
    assert len(flags) == len(set(flags))
    for c in CHANGES:
        assert c.since in names and c.since != names[0], c
        assert re.fullmatch(r"UIMA-\d+", c.upstream), c
        assert c.what
    # oldest first, so the table in docs/releases.md reads in time order
    assert [names.index(c.since) for c in CHANGES] == sorted(names.index(c.since) for c in CHANGES)


def test_a_flag_holds_from_its_release_on():
    assert not for_release("2.0.0").has("service_horizontal_stacking")
    assert for_release("2.1.0").has("service_horizontal_stacking")
    assert not for_release("2.2.2").has("node_ip_logged")
    assert for_release("3.0.0").has("node_ip_logged") and for_release("trunk").has("node_ip_logged")
    assert for_release("3.0.1-SNAPSHOT") == Behaviours() == for_release("trunk")  # the banner names trunk
    with pytest.raises(KeyError):
        Behaviours().has("no_such_behaviour")


# ---- service_horizontal_stacking (UIMA-4712) ----------------------------------------------------------

def test_a_service_instance_spreads_from_2_1_0_and_stacks_before():
    """A service holds a process on A and wants one more; A and B have room. 2.1.0's
    whatOfFixedShare asks findShares without vertical stacking first, which skips A (it runs the
    service); 2.0.0's single findShares walks the free-space tables from the smallest that fits,
    and A (6 quanta free) comes before B (8)."""
    svc = _work(1, 2, "fixed", "Service", shares=(A.name,))
    assert _hosts(_cycle("2.1.0", (A, B), (svc,)), {1: 2}) == [B.name]
    assert _hosts(_cycle("2.0.0", (A, B), (svc,)), {1: 2}) == [A.name]


def test_a_second_service_process_stacks_when_no_other_machine_has_room_on_every_release():
    """Horizontal first, then vertical when the horizontal pass found nothing (2.1.0); the
    horizontal pass only refuses a machine that already runs the service, so a fresh service
    still gets both processes on the one machine."""
    svc = _work(1, 2, "fixed", "Service")
    for release in ("2.0.0", "2.2.2", "trunk"):
        assert _hosts(_cycle(release, (A,), (svc,)), {1: 2}) == [A.name, A.name]


# ---- subpools_for_fair_share_only (UIMA-4712) ----------------------------------------------------------

def test_fixed_share_work_takes_a_subpools_room_before_2_1_0_only():
    """A fixed-share job of order 2 in --default--, whose one machine A is full (a reservation holds
    it); the subpool np2 has B free. NodePool.findShares of 2.0.0 goes on to the children
    (getChildrenAscending) whenever it still needs processes, so the job lands on B; from 2.1.0
    (UIMA-4712) only fair-share work goes down to the subpools, and the job waits."""
    b = replace(B, nodepool="np2")
    pools = (Nodepool("--default--", None), Nodepool("np2", "--default--"))
    rsv = _work(2, 8, "reserve", "Reservation", shares=(A.name,))
    job = _work(1, 2, "fixed")
    for release, hosts in (("2.0.0", [b.name]), ("2.0.1", [b.name]), ("2.1.0", []), ("trunk", [])):
        inp = replace(_cycle(release, (A, b), (rsv, job)), nodepools=pools)
        assert _hosts(inp, {1: 1, 2: 1}) == hosts, release


# ---- purge_by_policy (UIMA-4742) ------------------------------------------------------------------------

@pytest.mark.parametrize("how", [VARIED_OFF, DEAD])
def test_a_varied_off_machine_loses_its_services_before_2_1_0_only(how):
    """Machine A runs a service (FIXED_SHARE), a fair-share job and a reservation when NodePool.disable
    runs on it. 2.0.0's disable purges every share but a reservation's, for a vary-off as for a death;
    from 2.1.0 (UIMA-4742) a vary-off purges only fair-share work (Scheduler.varyoff), a death
    everything but reservations. (2.0.0 also stops at the first reservation share its HashMap walk
    meets: an order the log does not show, left out here by walking the reservation last, so the
    schedule marks both other processes ^P.)"""
    a = replace(A, disabled=how)
    work = (_work(1, 1, "fixed", "Service", shares=(A.name,)), _work(2, 1, "normal", shares=(A.name,)),
            _work(3, 1, "reserve", "Reservation", shares=(A.name,)))
    work = tuple(replace(w, shares=tuple(replace(s, purged=True) for s in w.shares)) if w.job_id < 3 else w
                 for w in work)
    for release in ("2.0.0", "2.1.0", "trunk"):
        purged = sorted(w.job_id for w, _ in purged_shares(_cycle(release, (a,), work)))
        assert purged == ([2] if how == VARIED_OFF and release != "2.0.0" else [1, 2]), release


def test_2_0_0_takes_the_purge_the_schedule_marks_where_the_walk_stopped_at_a_reservation():
    """Job 2 runs two processes on A beside a reservation when A is varied off. 2.0.0's disable walks
    A's processes in a HashMap on random ids and stops at the reservation's: it purged only the one
    the schedule marks ^P (seed 9606 scenario 9: three of four, `Purge Job` three times), so the
    job keeps the other. A walk that met the reservation's process first purged nothing, and the
    schedule marks nothing there (seed 11616 scenario 5 on 2.0.0: "Not purging Reservation" right
    after "Looking for shares to clear", no `Purge` line, and the jobs keep their processes on n13)."""
    a = replace(A, disabled=VARIED_OFF)
    job = _work(2, 1, "normal", shares=(A.name, A.name))
    marked = replace(job, shares=(replace(job.shares[0], purged=True), job.shares[1]))
    rsv = _work(3, 1, "reserve", "Reservation", shares=(A.name,))
    took = sorted(s.share_id for _, s in purged_shares(_cycle("2.0.0", (a,), (marked, rsv))))
    assert took == [20]
    assert purged_shares(_cycle("2.0.0", (a,), (job, rsv))) == []
    assert len(purged_shares(_cycle("2.0.0", (a,), (job,)))) == 2  # (no reservation there: the walk takes all)
    assert len(purged_shares(_cycle("2.1.0", (a,), (marked, rsv)))) == 2  # (a vary-off: all fair-share work)


def test_a_machine_back_from_a_disable_is_empty_before_2_1_0_only():
    """A was varied off and on again; the service process the vary-off purged (^P in the schedule)
    is still listed, waiting for the Orchestrator. 2.0.0's disable took A out of the pool's tables
    and nodeArrives put a new, empty Machine in: a job of order 8 fits on it. From 2.1.0 A stays in
    the tables with the purged process on it (order 2): 6 quanta free, the job does not fit."""
    svc = Work(1, "Service", "u", "fixed", 2, 8, _CAP, submit_seq=1,
               shares=(Share(10, 1, A.name, 2, pending_removal=True, purged=True),))
    big = _work(2, 8, "fixed")
    for release, hosts in (("2.0.0", [A.name]), ("2.1.0", []), ("trunk", [])):
        assert _hosts(_cycle(release, (A,), (svc, big)), {1: 0, 2: 1}) == hosts, release  # (svc: completed)


# ---- free_space_clamped (UIMA-4913) -----------------------------------------------------------------

def test_a_reservation_smaller_than_its_machine_fills_it_from_2_1_0():
    """A reservation of order 4 holds machine A of order 8 (as when reserve_overage let it take a
    larger machine): rearrangeVirtual of 2.1.0 counts A as full, so a fair-share job finds no room;
    2.0.0 leaves A 4 quanta free and findShares puts the job's process there."""
    rsv = _work(1, 4, "reserve", "Reservation", shares=(A.name,))
    job = _work(2, 4, "normal")
    assert _hosts(_cycle("2.1.0", (A,), (rsv, job)), {1: 1, 2: 1}) == []
    assert _hosts(_cycle("2.0.0", (A,), (rsv, job)), {1: 1, 2: 1}) == [A.name]


# ---- node_ip_logged (UIMA-5742) ---------------------------------------------------------------------

def test_hosts_swapped_among_like_machines_rest_on_the_ip_only_where_the_log_has_none():
    """Two free machines alike: which one findShares meets first is the node map's hash order,
    whose key holds the IP. 2.2.2 never logs IPs; 3.0.0 logs them (findNodepoolByRule)."""
    job = _work(1, 2, "normal")
    old, new = _cycle("2.2.2", (A, B), (job,)), _cycle("3.0.0", (A, B), (job,))
    assert unlogged_node_order(old, {1: [A.name]}, {1: [B.name]}, 1)
    assert not unlogged_node_order(new, {1: [A.name]}, {1: [B.name]}, 1)
    assert not unlogged_node_order(old, {1: [A.name]}, {1: [A.name]}, 1)  # no difference to excuse


def test_unlike_machines_or_known_ips_are_not_excused():
    job = _work(1, 2, "normal")
    small = replace(B, order=4, memory_mb=16384)
    assert not unlogged_node_order(_cycle("2.2.2", (A, small), (job,)), {1: [A.name]}, {1: [small.name]}, 1)
    busy = _work(2, 2, "normal", shares=(B.name,))  # B starts the cycle with less free space
    assert not unlogged_node_order(_cycle("2.2.2", (A, B), (job, busy)), {1: [A.name]}, {1: [B.name]}, 1)
    with_ips = (replace(A, ip="10.0.0.1"), replace(B, ip="10.0.0.2"))
    assert not unlogged_node_order(_cycle("2.2.2", with_ips, (job,)), {1: [A.name]}, {1: [B.name]}, 1)
    # one process each way: the counts per machine must match up to relabelling
    assert not unlogged_node_order(_cycle("2.2.2", (A, B), (job,)), {1: [A.name, A.name]}, {1: [A.name, B.name]}, 1)


def test_machines_made_alike_by_an_earlier_job_of_the_cycle_are_excused():
    """A starts with 8 free, B with 6 (it runs job 2's process of order 2); a job placed before
    job 1 in the cycle took 2 on A, so at job 1's turn both have 6 free and the hash order decides."""
    job, busy = _work(1, 2, "normal"), _work(2, 2, "normal", shares=(B.name,))
    inp = _cycle("2.2.2", (A, B), (job, busy))
    assert not unlogged_node_order(inp, {1: [A.name]}, {1: [B.name]}, 1)
    assert unlogged_node_order(inp, {1: [A.name]}, {1: [B.name]}, 1, earlier=[(A.name, 2)])


def test_a_whole_cycle_relabelled_among_like_machines_is_excused_job_by_job():
    """Jobs 1 and 2 each take one process; the RM put job 1 on A and job 2 on B, rmref the other way
    round. A and B began the cycle alike, so the RM's cycle is rmref's with A and B swapped, although
    at job 2's turn (after job 1) they were no longer alike."""
    j1, j2 = _work(1, 2, "normal"), _work(2, 8, "normal")
    inp = _cycle("2.2.2", (A, B), (j1, j2))
    theirs, ours = {1: [A.name], 2: [B.name]}, {1: [B.name], 2: [A.name]}
    assert unlogged_node_order(inp, theirs, ours, 2, earlier=[(A.name, 2)])
    assert not unlogged_node_order(inp, {1: [A.name], 2: [B.name]}, {1: [A.name], 2: [A.name]}, 2,
                                   earlier=[(A.name, 2)])


def test_some_ips_reproduce_either_choice_among_like_machines_and_none_an_impossible_one():
    """ips_reproducing: What Of with the IPs it finds puts the process where the RM did."""
    job = _work(1, 2, "normal")
    inp = _cycle("2.2.2", (A, B), (job,))
    for host in (A.name, B.name):
        ips = ips_reproducing(inp, {1: 1}, {1: [host]})
        assert ips is not None
        with_ips = replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines))
        assert _hosts(with_ips, {1: 1}) == [host]
    assert ips_reproducing(inp, {1: 1}, {1: [A.name, A.name, A.name, A.name, A.name]}) is None  # only 1 counted
    assert ips_reproducing(_cycle("3.0.0", (A, B), (job,)), {1: 1}, {1: [A.name]}) is None  # its log has IPs


def test_take_from_the_rich_among_machines_of_equal_wealth_and_memory_rests_on_the_ips():
    """defrag's seed example (tests/unit/test_rmref_defrag.py) with m3 as large as m2: both can make
    B's 2-quantum hole, their owner is the same, so EligibleMachineSorter ties them and the RM meets
    them in Machine.hashCode order, a hash of name and IP. A 2.2.2 log has no IP: unsettled; a 3.0.0
    log names each node's IP as it arrives."""
    m = (Machine("m1", "--default--", 3, 45 * 1024, "10.0.0.1"), Machine("m2", "--default--", 3, 45 * 1024, "10.0.0.2"),
         Machine("m3", "--default--", 3, 45 * 1024, "10.0.0.3"))
    a = (Share(1, 1, "m1", 1, investment=300), Share(2, 1, "m2", 1, investment=300),
         Share(3, 1, "m2", 1, investment=300), Share(4, 1, "m3", 1, investment=100),
         Share(5, 1, "m3", 1, investment=50))
    b = (Share(6, 2, "m1", 2, investment=300),)
    work = (replace(_work(1, 1, "normal"), user="a", shares=a), replace(_work(2, 2, "normal"), user="b", shares=b))
    for release, unsettled in (("2.2.2", True), ("3.0.0", False)):
        inp = replace(_cycle(release, m, work), config=Config(fragmentation_threshold=2,
                                                              behaviours=for_release(release)))
        d = defragment(inp, {1: 5, 2: 2}, (), (), pure_fair_share={1: 4, 2: 4})
        assert len(d.actions) == 1 and d.actions[0].host in ("m2", "m3")
        assert [u.reasons for u in d.unsettled] == ([(NODE_IP,)] if unsettled else [])


# RmJob.initJobCap and getPrjCap at uima-ducc-2.0.0 and uima-ducc-2.1.0, worked by hand for a job of
# 100 one-thread work items holding 2 processes, in a class with initialization cap 1 and doubling:
# base cap = min(max 100, max(ceil(100 / 1), 2)) = 100. The Orchestrator has cleared init_wait (a
# process initialized), but no work item has finished yet (time_per_item NaN): getPrjCap cannot
# predict and returns Integer.MAX_VALUE, so potential = base = 100.
# * 2.0.0: init_wait is false, so initJobCap doubles: actual = min(potential 100, 2 * 2) = 4.
# * 2.1.0 (UIMA-4882): getPrjCap sets init_wait = init_wait || time_per_item is NaN or 0, so
#   initJobCap holds the job to its initialization cap: actual = min(100, 1) = 1.
_WAITING_FOR_ITEM_TIME = replace(_CAP, current=2, projected=2147483647, init_cap=1, expand_by_doubling=True,
                                 item_time=False)


@pytest.mark.parametrize(("release", "actual", "rule"), [
    ("2.0.0", 4, "doubling"), ("2.0.1", 4, "doubling"), ("2.1.0", 1, "initialization_cap"),
    ("trunk", 1, "initialization_cap")])
def test_an_initialized_job_without_item_time_doubles_before_2_1_0_and_waits_after(release, actual, rule):
    caps = job_caps(replace(_WAITING_FOR_ITEM_TIME, behaviours=for_release(release)))
    assert (caps.base, caps.projected, caps.potential, caps.actual, caps.rule) == (100, 2147483647, 100, actual, rule)


@pytest.mark.parametrize("release", ["2.0.0", "trunk"])
def test_a_job_with_item_time_or_still_initializing_is_capped_alike_on_every_release(release):
    timed = job_caps(replace(_WAITING_FOR_ITEM_TIME, item_time=True, behaviours=for_release(release)))
    assert (timed.actual, timed.rule) == (4, "doubling")
    init = job_caps(replace(_WAITING_FOR_ITEM_TIME, initialized=False, behaviours=for_release(release)))
    assert (init.actual, init.rule) == (1, "initialization_cap")
