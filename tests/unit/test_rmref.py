"""rmref on examples of the RM's rules worked by hand (RmJob, NodePool, NodepoolScheduler), plus properties."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from rmref import UNLIMITED, CapInput, PoolTables, job_caps, job_order, machine_order, n_shares_by_order
from rmref.orders import KB_PER_GB, processes_for_qshares


def test_share_order_rounds_job_memory_up_and_machine_memory_down():
    assert job_order(14, 15) == 1 and job_order(15, 15) == 1 and job_order(16, 15) == 2
    assert machine_order(48 * KB_PER_GB, 15) == 3 and machine_order(44 * KB_PER_GB, 15) == 2


def test_15gb_quantum_example():
    """User guide: with a 15 GB quantum, 20 shares are 20 processes of a 14 GB job, 10 of a 28 GB job."""
    assert processes_for_qshares(20, job_order(14, 15)) == 20
    assert processes_for_qshares(20, job_order(28, 15)) == 10


def test_one_order_5_machine_gives_1_1_1_2_5_shares():
    n = np.array([0, 0, 0, 0, 0, 1])
    assert n_shares_by_order(n).tolist() == [0, 5, 2, 1, 1, 1]


def test_the_seed_table_example():
    got = n_shares_by_order(np.array([0, 2, 0, 1, 4]) + np.array([0, 1, 2, 0, 0]))  # whole + partly used
    assert got.tolist() == [0, 26, 11, 5, 4]


def test_the_seed_table_example_listed():
    from rmref.pool import n_shares_listed

    assert n_shares_listed([0, 3, 2, 1, 4]) == [0, 26, 11, 5, 4]


@given(st.lists(st.integers(0, 50), min_size=2, max_size=90), st.integers(1, 40), st.integers(1, 89))
def test_the_counter_list_tables_equal_the_seed_tables(free, count, order):
    """How Much counts on lists (rmref.apportion): nSharesByOrder and a count-out on a list give
    what the seed's array tables give, for any free-space vector."""
    from rmref.pool import n_shares_listed, remove_shares

    assert n_shares_listed(free) == n_shares_by_order(np.array(free, dtype=np.int64)).tolist()
    order = 1 + order % (len(free) - 1)
    count = min(count, int(n_shares_by_order(np.array(free, dtype=np.int64))[order]))
    listed, array = list(free), np.array(free, dtype=np.int64)
    remove_shares(listed, count, order)
    remove_shares(array, count, order)
    assert listed == array.tolist()


def test_order_3_on_an_order_5_machine_leaves_an_order_2_virtual_machine():
    tables = PoolTables("p", 100, n=[0, 0, 0, 0, 0, 1], v=[0] * 6)
    assert tables.count_out(3, 1) == 1
    assert tables.n == [0] * 6
    assert tables.v == [0, 0, 1, 0, 0, 0]


def caps(**kw):
    base = dict(remaining=100, threads=4, current=0, max_processes=UNLIMITED, initialized=False,
                projected=UNLIMITED, init_cap=1, expand_by_doubling=True, use_prediction=True)
    return job_caps(CapInput(**(base | kw)))


def test_init_job_cap_rules():
    assert caps(refused=True).actual == 0
    assert caps(completed=True, current=3).actual == 3
    assert caps().base == 25  # ceil(100 / 4)
    assert caps(remaining=101).base == 26  # rounded up
    assert caps(remaining=4, current=3).base == 3  # never below what the job holds
    assert caps(max_processes=7).base == 7  # never above max processes
    assert (caps().actual, caps().rule) == (1, "initialization_cap")  # not initialized: init cap
    assert caps(init_cap=0).actual == 25  # no init cap configured: the potential
    assert (caps(initialized=True, current=4).actual, caps(initialized=True, current=4).rule) == (8, "doubling")
    assert caps(initialized=True, current=4, expand_by_doubling=False).actual == 25
    assert caps(initialized=True, current=0, init_cap=2).actual == 2
    assert caps(initialized=True, current=0).rule == "restart"
    assert caps(initialized=True, current=0, init_cap=2, remaining=4).actual == 1  # restart, but not above base
    pred = caps(initialized=True, current=5, projected=7)
    assert (pred.potential, pred.actual, pred.rule) == (7, 7, "prediction")  # prediction lowers the potential
    assert caps(initialized=True, current=9, projected=7).potential == 9  # but never below what it holds
    assert caps(initialized=True, current=5, projected=7, use_prediction=False).potential == 25
    assert caps(projected=0).projected == 25  # nothing known: the base
    # found by Hypothesis, and so in the RM: a restart may exceed a predicted potential
    restart = caps(remaining=2, threads=1, max_processes=2, initialized=True, projected=1, init_cap=2)
    assert (restart.potential, restart.actual, restart.rule) == (1, 2, "restart")


@given(st.integers(0, 10_000), st.integers(1, 64), st.integers(0, 500), st.integers(1, UNLIMITED),
       st.booleans(), st.integers(0, UNLIMITED), st.integers(0, 8), st.booleans(), st.booleans())
def test_caps_stay_within_their_bounds(remaining, threads, current, max_p, init, projected, init_cap, dbl, pred):
    c = job_caps(CapInput(remaining, threads, current, max_p, init, projected, init_cap, dbl, pred))
    assert 0 <= c.actual <= max(c.base, current) and c.potential <= max(c.base, current)
    # a restart from 0 processes is bounded by the base cap, not the (predicted) potential
    assert c.actual <= c.potential or c.rule == "restart"
    assert c.base <= max_p
    assert c == job_caps(CapInput(remaining, threads, current, max_p, init, projected, init_cap, dbl, pred))


def test_weighted_counter_worked_example():
    """Classes normal (weight 100) and low (50) want order-2 processes; three free order-3 machines.

    9 quantum shares: normal deserves 6, low 3. At order 2 there are 3 possible processes (one per
    machine): normal's weighted part is ceil(3 * 100/150 * 2) = 4 quanta = 2 processes, low's
    ceil(3 * 50/150 * 2) = 2 quanta = 1 process. The machines keep one quantum each, which
    nobody of order 2 can use, so there is no bonus.
    """
    from rmref import Entity, apportion

    vm = [0, 0, 0, 3]
    got = apportion([Entity("normal", 100, (7, 0, 7, 0)), Entity("low", 50, (4, 0, 4, 0))], vm,
                    pool_shares=n_shares_by_order(np.array(vm)))
    assert got.given == {"normal": (2, 0, 2, 0), "low": (1, 0, 1, 0)}
    assert got.vmachines_left == (0, 3, 0, 0)


def test_counter_over_a_negative_free_space_takes_as_the_rm_does():
    """A table a "bad virtual machine list" left below zero (NodePool.rearrangeVirtual): nshares of
    order 6 is -2 + 1 = -1. apportion_qshares takes min(tgiven / o, nshares - taken) = -1 process,
    and removeSharesByOrder splits nothing for a negative count (doShareSplits needs count > 0).
    The expected award is what the real RM's apportion_qshares (commit fd8cab1df, called on these
    entities) returned; rmref used to split the order-8 space into an order-14 slot and fail.
    """
    from rmref import Entity, apportion

    got = apportion([Entity("e0", 2, (6, 0, 0, 0, 0, 0, 6, 0, 0))], [0, 3, 0, 0, 0, 2, -2, 0, 1])
    assert got.given == {"e0": (-1, 0, 0, 0, 0, 0, -1, 0, 0)}


def test_counter_truncates_a_negative_share_as_java_does():
    """Java's int division truncates towards zero: over the negative order-3 table the second
    entity's ceil(-2 * 1/4 * 3) / 3 is -1 / 3 = 0 processes (Python's floor would make it -1),
    and a negative take is no progress, so no further pass runs. The expected awards are what the
    real RM's apportion_qshares (commit fd8cab1df) returned on this input.
    """
    from rmref import Entity, apportion

    got = apportion([Entity("e0", 3, (12, 8, 0, 4)), Entity("e1", 1, (16, 8, 0, 8))], [0, 0, 2, -2])
    assert got.given == {"e0": (-4, -2, 0, -2), "e1": (0, 0, 0, 0)}


@given(st.lists(st.tuples(st.integers(1, 5), st.integers(0, 12), st.integers(1, 3)), min_size=1, max_size=5),
       st.lists(st.integers(0, 4), min_size=5, max_size=5))
def test_counter_never_gives_more_than_wanted_or_available(wants, machines):
    from rmref import Entity, apportion

    vm = [0, *machines]  # orders 0..5
    entities = []
    for i, (order, n, weight) in enumerate(wants):
        wanted = [0] * 6
        wanted[order], wanted[0] = n, n
        entities.append(Entity(f"e{i}", weight, tuple(wanted), order=order))
    got = apportion(entities, vm)
    quanta = sum(o * m for o, m in enumerate(vm))
    assert sum(o * g[o] for g in got.given.values() for o in range(1, 6)) <= quanta
    for e in entities:
        assert all(got.given[e.name][o] <= e.wanted[o] for o in range(6))
    assert got == apportion(entities, vm)


def test_shrink_by_investment_order():
    """RmJob.shrinkBy (ShareByInvestmentSorter): uninitialized first (least init time first), then least investment,
    then the larger host, then the newest share."""
    from rmref import HeldShare, shrink_by

    a = HeldShare(1, "big", True, 9000, investment=500, host_memory_mb=96_000)
    b = HeldShare(2, "small", True, 9000, investment=100, host_memory_mb=32_000)
    c = HeldShare(3, "small", False, 4000, investment=0, host_memory_mb=32_000)
    d = HeldShare(4, "small", False, 1000, investment=0, host_memory_mb=32_000)
    e = HeldShare(5, "big", True, 9000, investment=100, host_memory_mb=96_000)
    f = HeldShare(6, "big", True, 9000, investment=100, host_memory_mb=96_000)
    order = [s.share_id for s in shrink_by([a, b, c, d, e, f], 6)]
    assert order == [4, 3, 6, 5, 2, 1]
    assert [s.share_id for s in shrink_by([a, b, c], 1)] == [3]
    assert shrink_by([a], 5) == [a] and shrink_by([a, b], 0) == []


def test_shrink_by_ties_keep_the_share_map_order():
    """Two processes neither initialized with the same initialization time are equal to the RM's
    comparator (RmJob.compareInvestment returns 0), so its stable sort keeps the job's share map
    order: `map_rank` where known (the order the log prints them in), not the share ids; with no
    rank known, the newest share first. A different initialization time still decides first."""
    from rmref import HeldShare, shrink_by

    old = HeldShare(51, "n03", False, 0, investment=0, host_memory_mb=30_720, map_rank=1)
    new = HeldShare(67, "n03", False, 0, investment=0, host_memory_mb=30_720, map_rank=2)
    later = HeldShare(52, "n03", False, 0, investment=0, host_memory_mb=30_720, map_rank=3)
    assert [s.share_id for s in shrink_by([new, later, old], 1)] == [51]
    assert [s.share_id for s in shrink_by([new, later, old], 3)] == [51, 67, 52]
    unranked = [HeldShare(s.share_id, s.host, False, 0, 0, s.host_memory_mb) for s in (old, new, later)]
    assert [s.share_id for s in shrink_by(unranked, 3)] == [67, 52, 51]
    slower = HeldShare(51, "n03", False, 2000, investment=0, host_memory_mb=30_720, map_rank=1)
    assert [s.share_id for s in shrink_by([slower, new], 1)] == [67]
