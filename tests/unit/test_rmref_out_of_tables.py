"""Before 2.1.0 NodePool.disable took a dead or varied-off machine out of its pool's tables, and a
node back after a vary-off was a new record beside the old one, which kept the processes the
disable did not purge; and findMachines asks setupPreemptions only for what the free machines leave
short. Hand-worked cycles, each worked from the 2.0.0 source (NodePool.rearrangeVirtual, findShares,
countFreeableMachines, findMachines, setupPreemptions); the fixtures of the real 2.0.0 RM are in
tests/integration/test_out_of_tables.py.
"""

from __future__ import annotations

from dataclasses import replace

from rmref.behaviours import for_release
from rmref.clearing import clearing
from rmref.evictions import departed, off_the_record
from rmref.howmuch import how_much
from rmref.model import FIXED_SHARE, RESERVE, ClassDef, Machine, Share
from rmref.whatof import what_of
from tests.unit.test_rmref_counting import FAIR, ROOT, cycle, job
from tests.unit.test_rmref_whatof import NORMAL, A, B, _cycle, _work

FIXED = ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT)
D = Machine("nodeD.sim.ducc", ROOT, 7, 28672, "10.0.0.4")


def _as(release, inp):
    return replace(inp, config=replace(inp.config, behaviours=for_release(release)))


def _hosts(placements):
    return [(p.job_id, p.host) for p in placements]


def test_a_varied_off_machine_out_of_the_tables_hides_no_free_machine():
    """A is varied off holding a fixed-share process, its stale free space 8 (the size of B's
    table). From 2.1.0 A stays in the tables and accounting its process takes B's size off the
    count: findShares skips size 8 and places nothing. In 2.0.0 rearrangeVirtual does not find A
    (allMachines.containsKey is false): nothing is lowered, job 2 goes on B."""
    off = replace(A, online=False, varied_off=True, stale_free=8)
    inp = _cycle((off, B, D), (_work(1, 1, cls="fixed", shares=((1, A.name),)), _work(2, 8)),
                 classes=(NORMAL, FIXED))
    assert _hosts(what_of(_as("2.1.0", inp), {2: 1}, stale_left={A.name: 8})) == []
    assert _hosts(what_of(_as("2.0.0", inp), {2: 1}, stale_left={A.name: 8})) == [(2, B.name)]
    assert how_much(_as("2.0.0", inp), {1: 1, 2: 1}).stale_left == {}  # no stale machine in the tables


def test_a_kept_process_lowers_the_count_of_its_old_records_size():
    """A came back after a vary-off as a new record of 10 quanta, 3 of them taken by job 3's new
    process: 7 free. The JobDriver's process the disable kept is on the old record, whose free space
    was 9 at the disable (`old_free`). What Of's accounting finds A's key in the tables and lowers
    the count of size 9, which has no table ("bad virtual machine list"): the recount then gives
    nSharesByOrder[7] = 1 - 1 = 0, so findShares skips size 7, where A waits, and places nothing
    for job 2. rmref's fallback for an unknown old size, the order less the kept process, is 9
    here too; an old record of size 7 would be a table of its own (the counts move on)."""
    back = replace(A, order=10, memory_mb=40960, old_free=9)
    kept = Share(1, 1, A.name, 1, stranded=True)
    inp = _cycle((back,), (replace(_work(1, 1, cls="fixed"), shares=(kept,)), _work(2, 2),
                           _work(3, 3, shares=((2, A.name),))), classes=(NORMAL, FIXED))
    assert _hosts(what_of(_as("2.0.0", inp), {2: 1, 3: 1})) == []
    # from 2.1.0 no process is stranded (the machine keeps it): A has 6 free and takes job 2
    assert _hosts(what_of(_as("2.1.0", inp), {2: 1, 3: 1})) == [(2, A.name)]


RESERVE_CLASSES = (ClassDef("reserve", RESERVE, 1, 0, ROOT),) + FAIR


def _reserve_cycle(release, nodes, reservations):
    fair = job(9, "sam", "normal", 15, shares=[Share(100 + i, 9, m.name, 1) for i, m in enumerate(nodes)
                                                if m.name.startswith("b")])
    work = [job(j, "kay", "reserve", 60, work_type="Reservation") for j in reservations] + [fair]
    return cycle(work, nodes, RESERVE_CLASSES, behaviours=for_release(release))


def _cleared(inp, hm, cleared_first=()):
    """The machines the clearing step empties after this How Much (What Of's placements unread)."""
    return clearing(inp, hm.counts, hm.set_aside, (), stale_left=hm.stale_left, cleared_first=cleared_first)


def test_nothing_is_cleared_when_a_free_machine_remains():
    """2.0.0: countFreeableMachines meets busy b first and sets it aside, though f is free. In What
    Of findMachines finds f free (countFreeMachines 1, needed 1), takes it, and never calls
    setupPreemptions: b keeps its process. With no free machine it clears b."""
    nodes = (Machine("b", ROOT, 4, 60 * 1024), Machine("f", ROOT, 4, 60 * 1024))
    inp = _reserve_cycle("2.0.0", nodes, [1])
    hm = how_much(inp, {1: 1, 9: 1000}, given_first=("b",))
    assert hm.counts[1] == 1 and [a.machines for a in hm.set_aside] == [(nodes[0],)] and _cleared(inp, hm) == ()
    alone = _reserve_cycle("2.0.0", nodes[:1], [1])
    busy = how_much(alone, {1: 1, 9: 1000})
    assert busy.counts[1] == 1 and _cleared(alone, busy) == ("b",)


def test_a_reservation_short_of_free_machines_clears_one_set_aside_for_another():
    """2.0.0, f free, b1 and b2 busy: reservation 1's walk sets b1 aside, reservation 2's b2. In
    What Of reservation 1 takes f; reservation 2 finds no free machine and asks setupPreemptions
    for one, which walks the pool's preemptables (b1 and b2, in node-map order) and clears the
    first: one machine cleared, not two (b1 here, met first; the RM's log names it)."""
    nodes = tuple(Machine(n, ROOT, 4, 60 * 1024) for n in ("b1", "b2", "f"))
    inp = _reserve_cycle("2.0.0", nodes, [1, 2])
    hm = how_much(inp, {1: 1, 2: 1, 9: 1000}, given_first=("b1", "b2"), cleared_first=("b1",))
    assert (hm.counts[1], hm.counts[2]) == (1, 1)
    assert _cleared(inp, hm, ("b1",)) == ("b1",)


def test_a_job_short_of_two_machines_clears_both_before_2_2_0_and_one_after():
    """A reservation-class job counted 2 whole machines (order 4), none free: b1 and b2, each with
    one process of order 1, are set aside and setupPreemptions walks them. Before 2.2.0 its order
    stays the request's, so it clears both (fixtures/releases/2.0.0/clears-every-machine-set-aside).
    UIMA-5086 (2.2.0) has it take each evicted share's order as the order to look for, so after
    the first machine it meets only machines of order 1 and clears no second one."""
    nodes = tuple(Machine(n, ROOT, 4, 60 * 1024) for n in ("b1", "b2"))
    fair = job(9, "sam", "normal", 15, shares=[Share(100 + i, 9, m.name, 1) for i, m in enumerate(nodes)])
    for release, cleared in (("2.0.0", 2), ("2.0.1", 2), ("2.1.0", 2), ("2.2.0", 1), ("trunk", 1)):
        inp = cycle([job(1, "kay", "reserve", 60), fair], nodes, RESERVE_CLASSES, behaviours=for_release(release))
        hm = how_much(inp, {1: 2, 9: 1000}, given_first=("b1", "b2"))
        assert hm.counts[1] == 2, release
        emptied = _cleared(inp, hm)
        assert len(emptied) == cleared and set(emptied) <= {"b1", "b2"}, release


def test_a_machine_where_nothing_is_evicted_leaves_the_order_the_request_s():
    """As above, with s beside b1 and b2 (order 2, free): How Much counts job 9 two processes on
    s, what it holds, so neither of its processes is preemptable (Share.isPreemptable: its job
    holds more than its count). setupPreemptions clears b1 and b2 and evicts nothing on either: the
    order variable is reassigned only for a share evicted, so it stays 4 and on every release both
    machines are cleared (fixtures/corpus/clearing_nothing_evicted: np2a03 then np2a04)."""
    nodes = tuple(Machine(n, ROOT, 4, 60 * 1024) for n in ("b1", "b2")) + (Machine("s", ROOT, 2, 30 * 1024),)
    fair = job(9, "sam", "normal", 15, shares=[Share(100 + i, 9, m.name, 1) for i, m in enumerate(nodes[:2])])
    for release in ("2.0.0", "2.1.0", "2.2.0", "trunk"):
        inp = cycle([job(1, "kay", "reserve", 60), fair], nodes, RESERVE_CLASSES, behaviours=for_release(release))
        hm = how_much(inp, {1: 2, 9: 1000}, given_first=("b1", "b2"))
        assert (hm.counts[1], hm.counts[9]) == (2, 2), release
        assert sorted(_cleared(inp, hm)) == ["b1", "b2"], release


def test_a_free_machine_the_passes_before_take_is_no_longer_free():
    """As above, but the fair-share class comes first (priority 0, before the reservation's 1):
    How Much counts job 9 into f's free quanta, What Of's fair pass places them there, and
    findMachines then finds no free machine (`Setup preemptions. Have 0 free machines`) and clears
    b, the machine set aside (fixtures/releases/2.0.0/free-before-clearing)."""
    nodes = (Machine("b", ROOT, 4, 60 * 1024), Machine("f", ROOT, 4, 60 * 1024))
    first = (ClassDef("reserve", RESERVE, 1, 0, ROOT), ClassDef("normal", FAIR[0].policy, 0, 100, ROOT))
    fair = job(9, "sam", "normal", 15, shares=[Share(100, 9, "b", 1)])
    inp = cycle([job(1, "kay", "reserve", 60, work_type="Reservation"), fair], nodes, first,
                behaviours=for_release("2.0.0"))
    hm = how_much(inp, {1: 1, 9: 1000}, given_first=("b",))
    assert hm.counts[1] == 1 and hm.counts[9] > 1
    assert _cleared(inp, hm) == ("b",)


def test_which_processes_are_off_their_machines_record():
    """rmref.evictions.off_the_record, worked case by case from NodePool.disable and nodeArrives in
    2.0.0 (docs/releases.md, purge_by_policy): a process a vary-off purged is not on the new,
    empty record its node comes back as; one a death purged is still on the same record the node
    comes back as (`Host reactivated`: revived) until the Orchestrator confirms it gone; one the
    disable kept (a reservation's) stays on the old record (stranded), off the new one, revived
    or not. A process nothing purged or kept is on its record; from 2.1.0 every one is."""
    cases = {  # (purged, revived, stranded) -> off its record in 2.0.0
        (False, False, False): False,  # never disabled, or a machine never away
        (True, False, False): True,    # purged by a vary-off, the node back as a new record
        (True, True, False): False,    # purged by a death, the node back as its old record
        (False, True, False): False,   # on a machine that died and came back as the same record
        (False, False, True): True,    # kept on the old record, the node back as a new one
        # an old record a new one replaced holds none of its processes' space, whatever else
        # befell them (a reactivation earlier, a purge the Orchestrator has not confirmed)
        (True, False, True): True,
        (False, True, True): True,
        (True, True, True): True,
    }
    for (purged, revived, stranded), off in cases.items():
        assert off_the_record(purged, revived, stranded, by_policy=False) is off, (purged, revived, stranded)
        assert off_the_record(purged, revived, stranded, by_policy=True) is False, (purged, revived, stranded)
    old, new = _as("2.0.0", _cycle((A,), ())), _as("2.1.0", _cycle((A,), ()))
    for (purged, revived, stranded), off in cases.items():
        share = Share(1, 1, A.name, 1, purged=purged, revived=revived, stranded=stranded)
        assert departed(share, old) is off and departed(share, new) is False
