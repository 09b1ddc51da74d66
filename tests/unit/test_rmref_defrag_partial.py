"""takeFromTheRich on a machine with more equally ranked shares than rmref lists (rmref.choices.MAX_OPEN):
a hand-worked example in small of oracle seed 10505 scenario 3, cycle 51 (fixtures/corpus/defrag_many_open)."""

from __future__ import annotations

from dataclasses import replace

from rmref.choices import MAX_OPEN
from rmref.defrag import INVESTMENT, defragment
from rmref.model import CycleInput, Machine, Share
from tests.unit.test_rmref_defrag import POOL, _cycle, _work

COUNTS, PURE = {1: 4, 2: 2, 3: 4}, {1: 2, 2: 8, 3: 2}


def _many_open(investment_ranked: bool) -> CycleInput:
    """Users a and c equally wealthy (4 quanta each) fill m2; B (user b, order 4) is short one process.

        m1 (4Q): B           m2 (8Q): A A A A C C C C

    A's processes on m2 have invested 100..130 (ids 1..4), C's 10..40 (ids 5..8): with the
    investments known C's four make the hole; known only as each job's own ranking, any
    interleaving of A's 1, 2, 3, 4 with C's 5, 6, 7, 8 is open: eight shares, more than MAX_OPEN.
    """
    m = (Machine("m1", POOL, 4, 60 * 1024), Machine("m2", POOL, 8, 120 * 1024))
    a = tuple(Share(i, 1, "m2", 1, investment=90 + 10 * i) for i in range(1, 5))
    c = tuple(Share(i, 3, "m2", 1, investment=10 * (i - 4)) for i in range(5, 9))
    work = (_work(1, "a", 1, a), _work(2, "b", 4, (Share(20, 2, "m1", 4),)), _work(3, "c", 1, c))
    return replace(_cycle(m, work), investment_ranked=investment_ranked)


def _cleared(d) -> set[tuple[int, int]]:
    return {(a.donor_job, a.share_id) for a in d.actions}


def test_known_investments_settle_the_round():
    d = defragment(_many_open(False), COUNTS, (), (), pure_fair_share=PURE)
    assert _cleared(d) == {(3, 5), (3, 6), (3, 7), (3, 8)}
    assert d.unsettled == ()


def test_too_many_open_shares_list_rmrefs_own_clearing_only():
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE)
    [u] = d.unsettled
    assert len(u.shares) > MAX_OPEN and u.partial and u.reasons == (INVESTMENT,)
    assert u.alternatives == (tuple((a.donor_job, a.share_id) for a in d.actions),)


def test_a_clearing_an_allowed_order_reaches_is_followed():
    """The RM cleared A's first two and C's first two (by each job's ranking): an interleaving the
    input allows, so rmref finds it and takes it. Listed: rmref's own clearing, and one per ranking
    of the RM's donor jobs (A's first, then C's; C's first), the same shares in another order."""
    rm = (1, 1), (1, 2), (3, 5), (3, 6)
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE, choose={"m2": tuple(sorted(rm))})
    assert _cleared(d) == set(rm)
    [u] = d.unsettled
    assert u.partial and set(u.alternatives[u.taken]) == set(rm) and len(u.alternatives) == 3
    assert {u.alternatives[1][0][0], u.alternatives[2][0][0]} == {1, 3}


def test_a_clearing_no_allowed_order_reaches_is_not_followed():
    """A's 3 cannot go before its 1 and 2 (A's own ranking): that clearing is not among the
    alternatives, and rmref keeps its own."""
    own = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE)
    rm = tuple(sorted([(1, 3), (3, 5), (3, 6), (3, 7)]))
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE, choose={"m2": rm})
    assert d.actions == own.actions
    [u] = d.unsettled
    assert all(set(alt) != set(rm) for alt in u.alternatives)
