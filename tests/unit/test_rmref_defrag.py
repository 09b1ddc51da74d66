"""Defragmentation on hand-worked examples (NodepoolScheduler.detectFragmentation, takeFromTheRich, clearShare)."""

from __future__ import annotations

from dataclasses import replace

from rmref.caps import CapInput
from rmref.defrag import INVESTMENT, MEMORY, SHARE_MAP, TakeFromTheRich, Unsettled, defragment
from rmref.model import (
    FAIR_SHARE, ClassDef, Config, CycleInput, DefragAction, Machine, Nodepool, Placement, Share, Work,
)

POOL = "--default--"
NORMAL = ClassDef("normal", FAIR_SHARE, priority=10, weight=100, nodepool=POOL)


def _work(job_id: int, user: str, order: int, shares: tuple[Share, ...]) -> Work:
    cap = CapInput(remaining=100, threads=1, current=len(shares), max_processes=100, initialized=True,
                   projected=0, init_cap=0, expand_by_doubling=False, use_prediction=False)
    return Work(job_id, "Job", user, "normal", order, order * 15, cap, submit_seq=job_id, shares=shares)


def _cycle(machines: tuple[Machine, ...], work: tuple[Work, ...], threshold: int = 2) -> CycleInput:
    return CycleInput(1, Config(fragmentation_threshold=threshold), (NORMAL,), (Nodepool(POOL, None),),
                      machines, work)


def seed_example() -> CycleInput:
    """A fragmented layout on three 3-quantum machines.

    Job A (user a, order 1) holds 5 processes, job B (user b, order 2) holds 1. How Much counted A 5
    and B 2 (9 quanta for 9 quanta), but A's processes sit one each in the holes B needs:
        m1: B B A        m2: A A .        m3: A A .      (m3 has a little more memory)
    """
    m = (Machine("m1", POOL, 3, 45 * 1024), Machine("m2", POOL, 3, 45 * 1024), Machine("m3", POOL, 3, 46 * 1024))
    a = (Share(1, 1, "m1", 1, investment=300), Share(2, 1, "m2", 1, investment=300),
         Share(3, 1, "m2", 1, investment=300), Share(4, 1, "m3", 1, investment=100),
         Share(5, 1, "m3", 1, investment=50))
    b = (Share(6, 2, "m1", 2, investment=300),)
    return _cycle(m, (_work(1, "a", 1, a), _work(2, "b", 2, b)))


COUNTS = {1: 5, 2: 2}
PURE = {1: 4, 2: 4}  # pure fair share: 9 quanta / 2 users, halved down


def test_seed_example_hand_worked():
    """B is short one process and no 2-quantum hole exists; A gives up its least-invested process on m3.

    detectFragmentation: B holds 1 < threshold 2 and < pure share 4, counted 2: potentially needy 1.
    Free space: m2 and m3 have one quantum each, so no order-2 process fits: ACTUALLY NEEDY, 1.
    doFinalEvictions: A holds 5 >= threshold, is initialized and not needy, same priority: rich.
    User a's wealth is 5. takeFromTheRich: m1 can free only 1 quantum (0 free + A's 1); m2 and m3
    can free 3 (1 free + A's two): eligible. Same wealth, so the larger machine, m3, goes first.
    Its A shares by least investment: share 5 (50). 1 free + 1 = 2 quanta: room for B. Evict share 5.
    """
    d = defragment(seed_example(), COUNTS, (), (), pure_fair_share=PURE)
    assert d.needy == {2: 1}
    assert d.take_from_the_rich == (TakeFromTheRich(2, 1, 1),)
    assert d.actions == (DefragAction("evict", 2, 1, "m3", 5, 1),)
    assert d.carried == (2,)
    assert d.wealth == {"a": 4}  # 5 quanta, less the one cleared


def test_no_defrag_when_the_free_space_fits():
    """If A already gave back a process on m2 (being removed), a 2-quantum hole is coming: nobody is needy."""
    inp = seed_example()
    a = next(w for w in inp.work if w.job_id == 1)
    shares = tuple(replace(s, pending_removal=True) if s.share_id == 3 else s for s in a.shares)
    inp = replace(inp, work=(replace(a, shares=shares), inp.work[1]))
    d = defragment(inp, {1: 4, 2: 2}, (), (), pure_fair_share=PURE)
    assert (d.needy, d.actions) == ({}, ())
    assert d.carried == (2,)  # still potentially needy: What Of serves it first next cycle


def test_threshold_and_pure_share_exempt_a_job():
    """B holding as many as the threshold (or its pure fair share) is not needy, whatever it was counted."""
    assert defragment(replace(seed_example(), config=Config(fragmentation_threshold=1)), COUNTS, (), (),
                      pure_fair_share=PURE).carried == ()
    assert defragment(seed_example(), COUNTS, (), (), pure_fair_share={1: 4, 2: 1}).carried == ()


def test_defragmentation_off():
    """ducc.rm.defragmentation = false: the phase does nothing."""
    inp = replace(seed_example(), config=Config(fragmentation_threshold=2, defragmentation=False))
    assert defragment(inp, COUNTS, (), (), pure_fair_share=PURE).needy == {}


def test_a_new_process_of_the_right_size_is_handed_over():
    """clearShare on a process placed this cycle: same size, reassigned to the needy job (not evicted).

    C (user c, order 2) runs on m2 and m3 and was just placed on m1; B (order 2) got nothing.
    C holds 3 >= threshold 2: rich, wealth 6. All three machines could be cleared; m1 is the
    largest, so C's new process there goes to B. Room for one: given 1.
    """
    m = (Machine("m1", POOL, 2, 31 * 1024), Machine("m2", POOL, 2, 30 * 1024), Machine("m3", POOL, 2, 30 * 1024))
    c = (Share(1, 3, "m2", 2), Share(2, 3, "m3", 2))
    inp = _cycle(m, (_work(2, "b", 2, ()), _work(3, "c", 2, c)))
    d = defragment(inp, {2: 1, 3: 3}, (Placement(3, "m1", 2),), (), pure_fair_share={2: 2, 3: 2})
    assert d.needy == {2: 1}
    assert d.actions == (DefragAction("reassign_pending", 2, 3, "m1", 0, 2),)
    assert d.take_from_the_rich == (TakeFromTheRich(2, 1, 1),)


def test_a_new_process_of_another_size_is_dropped():
    """clearShare on a process placed this cycle of another size: the placement is cancelled.

    Same as the seed example, but A's process on m3 with the least investment is a new one: it
    sorts first (not initialized) and is dropped rather than evicted.
    """
    inp = seed_example()
    a = next(w for w in inp.work if w.job_id == 1)
    inp = replace(inp, work=(replace(a, shares=tuple(s for s in a.shares if s.share_id != 5)), inp.work[1]))
    d = defragment(inp, COUNTS, (Placement(1, "m3", 1),), (), pure_fair_share=PURE)
    assert d.actions == (DefragAction("cancel_pending", 2, 1, "m3", 0, 1),)


def _equal_owners(investment_ranked: bool, c_elsewhere: int = 0) -> CycleInput:
    """Users a and c equally wealthy (2 quanta each) share m2; B (user b, order 2) is short one process.

        m1 (3Q): B B A      m2 (3Q): A C C      m3 (1Q): C only when `c_elsewhere` (c is then richer)

    A's process on m2 has invested 100, C's 50 and 70. Only m2 can make a 2-quantum hole.
    """
    m = (Machine("m1", POOL, 3, 45 * 1024), Machine("m2", POOL, 3, 45 * 1024), Machine("m3", POOL, 1, 15 * 1024))
    a = (Share(1, 1, "m1", 1, investment=100), Share(2, 1, "m2", 1, investment=100))
    c = (Share(3, 3, "m2", 1, investment=50), Share(4, 3, "m2", 1, investment=70))
    c += tuple(Share(5, 3, "m3", 1, investment=10) for _ in range(c_elsewhere))
    b = (Share(10, 2, "m1", 2),)
    work = (_work(1, "a", 1, a), _work(2, "b", 2, b), _work(3, "c", 1, c))
    return replace(_cycle(m, work), investment_ranked=investment_ranked)


def test_equally_wealthy_owners_go_by_investment():
    """ShareByWealthSorter: owners a and c both hold 2 quanta, so m2's processes go by least
    investment across both jobs: C's 3 (50) and 4 (70) make the hole; A's (100) stays."""
    d = defragment(_equal_owners(False), {1: 2, 2: 2, 3: 2}, (), (), pure_fair_share={1: 2, 2: 4, 3: 2})
    assert d.actions == (DefragAction("evict", 2, 3, "m2", 3, 1), DefragAction("evict", 2, 3, "m2", 4, 1))
    assert d.unsettled == ()


def test_investments_known_only_as_ranks_leave_the_choice_unsettled():
    """The same cycle as a log gives it: investments are each job's own ranking, so whether A's
    process or C's goes first is not known; rmref still decides, and says the choice is unsettled."""
    d = defragment(_equal_owners(True), {1: 2, 2: 2, 3: 2}, (), (), pure_fair_share={1: 2, 2: 4, 3: 2})
    assert len(d.actions) == 2
    [u] = d.unsettled
    assert (u.needy_job, u.host, u.shares, u.reasons, u.action) == (2, "m2", ((1, 2), (3, 3), (3, 4)), (INVESTMENT,), 0)
    # the whole set of choices: C's 3 before its 4 (C's own ranking), A's 2 anywhere among them;
    # two quanta make the hole, so the round clears the first two of the order
    assert set(u.alternatives) == {((3, 3), (3, 4)), ((3, 3), (1, 2)), ((1, 2), (3, 3))}
    assert u.alternatives[u.taken] == tuple((a.donor_job, a.share_id) for a in d.actions)


def test_the_rms_clearing_is_followed_when_it_is_one_of_the_alternatives():
    """Told the RM cleared A's 2 and C's 3 on m2 (one of the three choices), rmref clears those;
    told a clearing outside the set (C's 4 alone with A's 2: C's 3 would go before its 4), it keeps its own."""
    inp, counts, pure = _equal_owners(True), {1: 2, 2: 2, 3: 2}, {1: 2, 2: 4, 3: 2}
    d = defragment(inp, counts, (), (), pure_fair_share=pure, choose={"m2": frozenset({(1, 2), (3, 3)})})
    assert {(a.donor_job, a.share_id) for a in d.actions} == {(1, 2), (3, 3)}
    own = defragment(inp, counts, (), (), pure_fair_share=pure)
    d = defragment(inp, counts, (), (), pure_fair_share=pure, choose={"m2": frozenset({(1, 2), (3, 4)})})
    assert d.actions == own.actions


def test_a_richer_owner_settles_the_order():
    """c holds a third quantum on m3: its processes go first whatever the investments; within one
    job the ranking is known, so nothing is unsettled."""
    d = defragment(_equal_owners(True, c_elsewhere=1), {1: 2, 2: 2, 3: 3}, (), (),
                   pure_fair_share={1: 2, 2: 4, 3: 2})
    assert d.actions == (DefragAction("evict", 2, 3, "m2", 3, 1), DefragAction("evict", 2, 3, "m2", 4, 1))
    assert d.unsettled == ()


def test_new_processes_of_equal_owners_tie_in_the_share_map():
    """Two processes placed this cycle have no initialization time: compareInvestment calls them
    equal and the RM's sort keeps its share HashMap order (random share ids): unsettled. Two new
    processes of one job are interchangeable (no ids yet): settled."""
    m = (Machine("m1", POOL, 1, 15 * 1024), Machine("m2", POOL, 2, 30 * 1024), Machine("m3", POOL, 1, 15 * 1024))
    work = (_work(1, "a", 1, (Share(1, 1, "m1", 1),)), _work(2, "b", 2, ()), _work(3, "c", 1, (Share(5, 3, "m3", 1),)))
    inp = _cycle(m, work)
    both = (Placement(1, "m2", 1), Placement(3, "m2", 1))
    d = defragment(inp, {1: 2, 2: 1, 3: 2}, both, (), pure_fair_share={1: 2, 2: 2, 3: 2})
    assert [(a.action, a.donor_job) for a in d.actions] == [("cancel_pending", 1), ("cancel_pending", 3)]
    both_orders = (((1, 0), (3, 0)), ((3, 0), (1, 0)))
    assert d.unsettled == (Unsettled(2, "m2", ((1, 0), (3, 0)), (SHARE_MAP,), 0, both_orders, 0),)
    one_job = (Placement(1, "m2", 1), Placement(1, "m2", 1))
    d = defragment(inp, {1: 3, 2: 1, 3: 1}, one_job, (), pure_fair_share={1: 2, 2: 2, 3: 2})
    assert [(a.action, a.donor_job) for a in d.actions] == [("cancel_pending", 1), ("cancel_pending", 1)]
    assert d.unsettled == ()


def test_a_pool_without_nodes_walks_its_subpools_machines_in_the_put_all_order():
    """Seed 29 scenario 159 in small: the needy job's pool has no nodes, its subpool two equal ones.

    getAllMachines(top) = a clone of top's empty node map, then putAll(getAllMachines(sub)): the
    putAll sizes the table for 2 entries (4 buckets), where nodeA's hash falls in bucket 3 and
    nodeB's in 0 (the JVM facts of test_rmref_whatof), so the map lists B, A. Both machines are
    equally rich and large, so the eligible-machine TreeMap puts each newcomer first: A, B.
    A goes first and gives up one of job 1's processes (the RM: np1a02 in the scenario).
    """
    a = Machine("nodeA.sim.ducc", "sub", 4, 16384, "10.0.0.1")
    b = Machine("nodeB.sim.ducc", "sub", 4, 16384, "10.0.0.2")
    sub = replace(NORMAL, name="in-sub", nodepool="sub")
    top = replace(NORMAL, name="in-top", nodepool="top")
    held = tuple(Share(i, 1, m.name, 1, investment=100 * i) for i, m in enumerate((a,) * 4 + (b,) * 4, start=1))
    rich = replace(_work(1, "u", 1, held), class_name="in-sub")
    needy = replace(_work(2, "v", 1, ()), class_name="in-top")
    inp = CycleInput(1, Config(fragmentation_threshold=2), (sub, top), (Nodepool("top", None), Nodepool("sub", "top")),
                     (a, b), (rich, needy))
    d = defragment(inp, {1: 8, 2: 1}, (), (), pure_fair_share={1: 4, 2: 4})
    assert d.needy == {2: 1}
    assert [(x.host, x.share_id) for x in d.actions] == [("nodeA.sim.ducc", 1)]


def _alike_example() -> CycleInput:
    """seed_example with m2 and m3 alike (the same memory, A's processes on both): EligibleMachineSorter
    ties them, and the RM meets them in the node map's order. A's least-invested process: share 3
    on m2 (200), share 5 on m3 (50)."""
    inp = seed_example()
    machines = tuple(replace(m, memory_mb=45 * 1024) for m in inp.machines)
    a, b = inp.work
    shares = tuple(replace(s, investment=200) if s.share_id == 3 else s for s in a.shares)
    return replace(inp, machines=machines, work=(replace(a, shares=shares), b))


def test_the_first_round_meets_alike_machines_in_the_order_the_log_printed():
    """takeFromTheRich prints its first round's order (`Eligible machines:`); B's one call lists
    m2 and m3 (m1 cannot make room). Printed m2 first, the round clears on m2 (share 3); m3 first,
    on m3 (share 5); the tie is then no open choice."""
    for printed, evicted in ((("m2", "m3"), ("m2", 3)), (("m3", "m2"), ("m3", 5))):
        d = defragment(_alike_example(), COUNTS, (), (), pure_fair_share=PURE, searched={2: (printed,)})
        assert [(a.host, a.share_id) for a in d.actions] == [evicted]
        assert not d.unsettled


def test_a_printed_order_leaves_machines_rmref_ranks_apart_and_a_list_missing_one_alone():
    """m3 has more memory in seed_example: it goes first whatever the line says. A list that lacks
    an eligible machine is not this call's: rmref keeps its own order."""
    d = defragment(seed_example(), COUNTS, (), (), pure_fair_share=PURE, searched={2: (("m2", "m3"),)})
    assert [(a.host, a.share_id) for a in d.actions] == [("m3", 5)]
    own = defragment(_alike_example(), COUNTS, (), (), pure_fair_share=PURE)
    short = defragment(_alike_example(), COUNTS, (), (), pure_fair_share=PURE, searched={2: (("m2",),)})
    assert short.actions == own.actions and own.unsettled


def test_a_printed_order_settles_a_machine_whose_memory_the_log_does_not_state():
    """m3 has more memory than m2 in seed_example, but where no line states m2's (taken as order x
    quantum, the least it can be) m2 may have as much: their order is open (MEMORY) and rmref meets
    m3 first; B's call printed m2 first, which is the RM's order, and the round clears on m2."""
    inp = seed_example()
    m1, m2, m3 = inp.machines
    inp = replace(inp, machines=(m1, replace(m2, memory_stated=False), m3))
    own = defragment(inp, COUNTS, (), (), pure_fair_share=PURE)
    assert [a.host for a in own.actions] == ["m3"] and [u.reasons for u in own.unsettled] == [(MEMORY,)]
    d = defragment(inp, COUNTS, (), (), pure_fair_share=PURE, searched={2: (("m2", "m3"),)})
    assert [a.host for a in d.actions] == ["m2"] and not d.unsettled
