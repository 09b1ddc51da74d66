"""The How Much phase on hand-worked cycles (NodepoolScheduler.howMuchFairShare and its RmCounter rules)."""

from __future__ import annotations


from rmref import UNLIMITED, CapInput
from rmref.behaviours import for_release
from rmref.howmuch import how_much
from rmref.javahash import hashmap_order as java_hashmap_order
from rmref.javahash import string_hash as java_string_hash
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work

ROOT = "--default--"
FAIR = (ClassDef("normal", FAIR_SHARE, 10, 100, ROOT), ClassDef("low", FAIR_SHARE, 10, 50, ROOT))


def job(job_id, user, cls, memory_gb, quantum_gb=15, work_type="Job", shares=()):
    """A job of `memory_gb` (its order is the memory over the quantum, rounded up)."""
    cap = CapInput(remaining=1000, threads=1, current=len(shares), max_processes=UNLIMITED, initialized=True,
                   projected=0, init_cap=0, expand_by_doubling=False, use_prediction=False)
    return Work(job_id, work_type, user, cls, -(-memory_gb // quantum_gb), memory_gb, cap, submit_seq=job_id,
                shares=tuple(shares))


def machines(count, order, pool=ROOT, prefix="n"):
    return tuple(Machine(f"{prefix}{i}", pool, order, order * 15 * 1024) for i in range(count))


def cycle(work, nodes, classes=FAIR, pools=(Nodepool(ROOT, None),), **config):
    return CycleInput(1, Config(**config), tuple(classes), tuple(pools), tuple(nodes), tuple(work))


def big_caps(inp):
    return {w.job_id: 1000 for w in inp.work}


def test_15gb_quantum_20_shares_are_20_processes_of_14gb_or_10_of_28gb():
    """With a 15 GB quantum, 20 shares hold 20 processes of a 14 GB job, 10 of a 28 GB job."""
    nodes = machines(5, 4)  # 5 x 60 GB: 20 quantum shares
    alone14 = cycle([job(1, "ann", "normal", 14)], nodes)
    alone28 = cycle([job(2, "ann", "normal", 28)], nodes)
    assert how_much(alone14, big_caps(alone14)).counts == {1: 20}
    assert how_much(alone28, big_caps(alone28)).counts == {2: 10}


def test_two_jobs_of_one_user_share_its_award_by_quantum_shares():
    """14 GB and 28 GB jobs of one user on 20 shares: 10 shares each, so 10 and 5 processes.

    The class takes its 20 shares as ten order-2 processes (largest order first), the user the
    same; the job counter splits them again: the 28 GB job deserves 10 shares (5 processes), the
    14 GB job the other 10, cut out of the remaining order-2 spaces.
    """
    inp = cycle([job(1, "ann", "normal", 14), job(2, "ann", "normal", 28)], machines(5, 4))
    hm = how_much(inp, big_caps(inp))
    assert hm.counts == {1: 10, 2: 5}
    assert hm.class_given["normal"][:3] == (10, 0, 10)
    assert hm.user_given[("normal", "ann")][:3] == (10, 0, 10)


def test_class_weights_split_the_pool():
    """normal (100) and low (50) on 30 shares: 20 and 10; users within a class share its award."""
    inp = cycle([job(1, "ann", "normal", 15), job(2, "bob", "low", 15), job(3, "cat", "normal", 15)],
                machines(30, 1))
    hm = how_much(inp, big_caps(inp))
    assert hm.class_given["normal"][0] == 20 and hm.class_given["low"][0] == 10
    assert hm.counts == {1: 10, 2: 10, 3: 10}
    assert [r.descr for r in hm.runs] == ["countClassShares", "countUserShares", "countJobShares",
                                          "countJobShares", "countUserShares", "countJobShares"]


def test_a_job_gets_no_more_than_its_cap_and_the_rest_goes_to_others():
    inp = cycle([job(1, "ann", "normal", 15), job(2, "bob", "low", 15)], machines(30, 1))
    hm = how_much(inp, {1: 4, 2: 1000})
    assert hm.counts == {1: 4, 2: 26}


def test_fair_share_processes_count_as_free_but_fixed_ones_do_not():
    held = [Share(i, 1, f"n{i}", 1) for i in range(10)]
    fixed = (ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT),)
    fair_holder = cycle([job(1, "ann", "normal", 15, shares=held), job(2, "bob", "normal", 15)], machines(20, 1))
    assert how_much(fair_holder, big_caps(fair_holder)).counts == {1: 10, 2: 10}
    fixed_holder = cycle([job(1, "ann", "fixed", 15, shares=held), job(2, "bob", "normal", 15)], machines(20, 1),
                         classes=FAIR + fixed)
    hm = how_much(fixed_holder, {1: 10, 2: 1000})
    assert hm.counts == {1: 10, 2: 10}  # the fixed job keeps its 10; fair share counts the other 10
    assert hm.runs[0].vmachines[:2] == (0, 10)


def test_a_subpool_class_keeps_its_subpool_award_and_the_parent_count_still_spends_for_it():
    """Pool big (one 60 GB machine) under the root (two 15 GB machines).

    normal-big (in big) wants 6 and gets the 4 shares of big. At the root the two classes compete
    for all 6 shares: 3 each, but normal-big keeps its earlier award (the RM ignores the second
    one), so normal ends with 3 while a share stays uncounted: the RM's own accounting.
    """
    classes = (ClassDef("normal", FAIR_SHARE, 10, 100, ROOT), ClassDef("normal-big", FAIR_SHARE, 10, 100, "big"))
    pools = (Nodepool(ROOT, None), Nodepool("big", ROOT))
    nodes = machines(2, 1) + machines(1, 4, pool="big", prefix="b")
    inp = cycle([job(1, "ann", "normal", 15), job(2, "bob", "normal-big", 15)], nodes, classes, pools)
    hm = how_much(inp, {1: 10, 2: 6})
    assert [(r.descr, r.scope) for r in hm.runs[:2]] == [("countClassShares", "big"), ("countClassShares", ROOT)]
    assert hm.runs[0].given["normal-big"][:2] == (4, 4)
    assert hm.counts == {1: 3, 2: 4}


def test_reservation_over_the_users_allotment_is_deferred():
    """g_reservations_services: a 64 GB reservation of kay against a 48 GB global allotment."""
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT),)
    nodes = tuple(Machine(f"r{i}", ROOT, 32, 64 * 1024) for i in range(2))
    inp = cycle([job(2, "kay", "reserve", 64, quantum_gb=2, work_type="Reservation")], nodes, reserve,
                quantum_gb=2, global_allotment=48)
    hm = how_much(inp, {2: 1})
    assert hm.counts == {2: 0}
    assert hm.deferred == {2: "Deferred because allotment of 48GB is exceeded by user kay"}
    assert how_much(inp, {2: 1}, user_limits={"kay": 100}).counts == {2: 1}  # a registry override lifts it


def test_reservation_needs_a_machine_of_its_exact_size_that_is_free_or_freeable():
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT), ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT))
    nodes = (Machine("r1", ROOT, 4, 60 * 1024),)
    wrong_size = cycle([job(1, "kay", "reserve", 30, work_type="Reservation")], nodes, reserve)
    assert how_much(wrong_size, {1: 1}).deferred == {
        1: "Deferred because there are no hosts of the correct size in class reserve"}
    service = job(2, "sam", "fixed", 15, work_type="Service", shares=[Share(1, 2, "r1", 1)])
    pinned = cycle([job(1, "kay", "reserve", 60, work_type="Reservation"), service], nodes, reserve)
    assert how_much(pinned, {1: 1, 2: 1}).deferred == {1: "Deferred because resources are exhausted."}
    fair = job(2, "sam", "normal", 15, shares=[Share(1, 2, "r1", 1)])
    freeable = cycle([job(1, "kay", "reserve", 60, work_type="Reservation"), fair], nodes, reserve + FAIR)
    hm = how_much(freeable, {1: 1, 2: 5})
    assert hm.counts == {1: 1, 2: 0}  # the machine is set aside for the reservation: fair share counts nothing


def test_fixed_share_services_take_one_process_each_until_the_pool_is_full():
    fixed = (ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT),)
    nodes = machines(1, 2) + (Machine("big", ROOT, 4, 60 * 1024),)
    services = [job(i, "sam", "fixed", 30, work_type="Service") for i in range(1, 5)]
    hm = how_much(cycle(services, nodes, fixed), {i: 1 for i in range(1, 5)})
    assert hm.counts == {1: 1, 2: 1, 3: 1, 4: 0}  # 2 + 4 free quanta hold three 30 GB processes
    # countFixable counts machines of exactly the job's order: there is one, so "insufficient"
    assert hm.deferred == {4: "Deferred  because insufficient resources are availble."}
    huge = cycle([job(1, "sam", "fixed", 90, work_type="Service")], nodes, fixed)
    assert how_much(huge, {1: 1}).deferred == {
        1: "Deferred because no hosts in class fixed have sufficient memory to accomodate the request."}


def test_fixed_share_job_is_bounded_by_the_allotment():
    fixed = (ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT),)
    inp = cycle([job(1, "fay", "fixed", 15)], machines(10, 1), fixed, global_allotment=60)
    assert how_much(inp, {1: 8}).counts == {1: 4}  # 60 GB over 15 GB processes
    held = [Share(i, 1, f"n{i}", 1) for i in range(4)]
    full = cycle([job(1, "fay", "fixed", 15, shares=held), job(2, "fay", "fixed", 15)], machines(10, 1), fixed,
                 global_allotment=60)
    hm = how_much(full, {1: 8, 2: 8})
    assert hm.counts == {1: 4, 2: 0}
    assert hm.deferred == {2: "Deferred because allotment of 60GB is exceeded."}


def test_java_hashes():
    assert java_string_hash("") == 0 and java_string_hash("a") == 97
    assert java_string_hash("Hilaria") % 2 ** 32 == java_string_hash("Hilaria")
    assert java_string_hash("hello") == 99162322  # "hello".hashCode()
    # Hilaria and Rodrigo share bucket 9 of 16: they keep the order they were put in
    assert java_hashmap_order(["Rodrigo", "Lucrezia", "Hilaria"]) == ["Rodrigo", "Hilaria", "Lucrezia"]
    assert java_hashmap_order(["Hilaria", "Rodrigo", "Lucrezia"]) == ["Hilaria", "Rodrigo", "Lucrezia"]


def test_before_2_1_0_the_reservation_walk_may_set_aside_a_busy_machine_though_a_free_one_is_there():
    """countFreeableMachines, 2.0.0: the machines of the size in node-map order (a sort on size only),
    each given if free, or set aside to be emptied if it holds only fair-share work, which takes a
    whole free machine off the pool's count (nMachinesByOrder[order]--) though this one is busy.
    From 2.1.0 (UIMA-4912) free machines sort first. The walk is the order the log shows
    (`Giving H because it is free|freeable`), followed where the node-map order is open."""
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT),)
    nodes = (Machine("b", ROOT, 4, 60 * 1024), Machine("f", ROOT, 4, 60 * 1024))
    fair = job(2, "sam", "normal", 15, shares=[Share(1, 2, "b", 1)])
    work = [job(1, "kay", "reserve", 60, work_type="Reservation"), fair]

    def fair_count(release, met_first):
        inp = cycle(work, nodes, reserve + FAIR, behaviours=for_release(release))
        return how_much(inp, {1: 1, 2: 1000}, given_first=met_first).counts

    assert fair_count("2.0.0", ("b",)) == {1: 1, 2: 4}  # b set aside: one whole machine left to count
    assert fair_count("2.0.0", ("f",)) == {1: 1, 2: 8}  # f given free: nothing set aside
    assert fair_count("2.1.0", ("b",)) == {1: 1, 2: 8}  # free first whatever the map's order


def test_before_2_1_0_a_purged_process_does_not_keep_a_reservation_off_its_machine():
    """2.0.0 NodePool.disable took the machine out of the tables and the node came back as a new,
    empty Machine: the purged service process still listed (^P) is on the old one, so
    countFreeableMachines finds the machine free (seed 10202 scenario 9, cycle 289). From 2.1.0 the
    machine keeps its processes and a service's cannot be evicted."""
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT), ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT))
    service = job(2, "sam", "fixed", 15, work_type="Service", shares=[Share(1, 2, "r1", 1, purged=True)])
    work = [job(1, "kay", "reserve", 60, work_type="Reservation"), service]
    nodes = (Machine("r1", ROOT, 4, 60 * 1024),)
    old = how_much(cycle(work, nodes, reserve, behaviours=for_release("2.0.0")), {1: 1, 2: 1})
    new = how_much(cycle(work, nodes, reserve, behaviours=for_release("2.1.0")), {1: 1, 2: 1})
    assert (old.counts[1], old.deferred) == (1, {})
    assert (new.counts[1], new.deferred) == (0, {1: "Deferred because resources are exhausted."})


def test_before_2_1_0_a_dead_node_reactivated_keeps_its_purged_processes():
    """2.0.0: a node that died comes back as its old Machine record (`Host reactivated`), which
    still holds the processes the death purged until the Orchestrator confirms them gone: the
    purged service process (^P) takes its space, and the reservation finds no free machine, as when
    the machine had never left (seed 10404 scenario 1, `Host reactivated n02 ... 8 4 4`). A purged
    process on a node that came back new (a vary-off's `Host added`) does not (the test above)."""
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT), ClassDef("fixed", FIXED_SHARE, 5, 0, ROOT))
    nodes = (Machine("r1", ROOT, 4, 60 * 1024),)

    def counts(revived):
        service = job(2, "sam", "fixed", 15, work_type="Service",
                      shares=[Share(1, 2, "r1", 1, purged=True, revived=revived)])
        work = [job(1, "kay", "reserve", 60, work_type="Reservation"), service]
        return how_much(cycle(work, nodes, reserve, behaviours=for_release("2.0.0")), {1: 1, 2: 1}).counts[1]

    assert counts(revived=True) == 0
    assert counts(revived=False) == 1


def test_before_2_1_0_a_reservation_kept_by_a_disable_stays_on_the_old_record_of_its_machine():
    """2.0.0: a varied-off machine's reservation is not purged and stays on the Machine that left
    the tables; the node comes back as a new, empty Machine of the same key. rearrangeVirtual then
    finds the key in the tables but works on the old record, whose free space the reservation had
    taken to 0: it lowers vMachinesByOrder[0] and stops ("bad virtual machine list ... v_order 0"),
    so the new machine stays free (seed 9606 scenario 8: `vmachines = -1 2 0 0 0`)."""
    reserve = (ClassDef("reserve", RESERVE, 1, 0, ROOT),)
    nodes = (Machine("n01", ROOT, 1, 15 * 1024), Machine("n03", ROOT, 1, 15 * 1024))
    kept = job(1, "ben", "reserve", 15, work_type="Reservation", shares=[Share(2, 1, "n01", 1, stranded=True)])
    work = [kept, job(2, "eve", "normal", 15)]

    def run(release):
        return how_much(cycle(work, nodes, reserve + FAIR, behaviours=for_release(release)), {1: 1, 2: 1000})

    old, new = run("2.0.0"), run("2.1.0")
    assert old.counts[2] == 2 and old.runs[0].vmachines[:2] == (-1, 2)
    assert new.counts[2] == 1  # from 2.1.0 the machine kept its record, and the reservation fills it
