"""takeFromTheRich on a machine with many equally ranked shares: listed as far as the round looks
(rmref.choices.open_prefixes), and beyond rmref.choices.MAX_STEPS not listed (Unsettled.partial). A
hand-worked example in small of oracle seed 10505 scenario 3, cycle 51 (fixtures/corpus/defrag_many_open)."""

from __future__ import annotations

from dataclasses import replace
from math import comb

from rmref.choices import MAX_OPEN, MAX_STEPS
from rmref.defrag import INVESTMENT, defragment
from rmref.model import CycleInput, Machine, Share
from tests.unit.test_rmref_defrag import POOL, _cycle, _work

COUNTS, PURE = {1: 4, 2: 2, 3: 4}, {1: 2, 2: 8, 3: 2}


def _many_open(investment_ranked: bool, k: int = 4, want: int = 4) -> CycleInput:
    """Users a and c equally wealthy (k quanta each) fill m2; B (user b, order `want`) is short one process.

        m1 (4Q): B           m2 (8Q): A A A A C C C C        (k = 4, want = 4)

    A's processes on m2 have invested 100..130 (ids 1..4), C's 10..40 (ids 5..8): with the
    investments known C's four make the hole; known only as each job's own ranking, any
    interleaving of A's 1, 2, 3, 4 with C's 5, 6, 7, 8 is open: eight shares, more than MAX_OPEN.
    """
    m = (Machine("m1", POOL, want, 15 * want * 1024), Machine("m2", POOL, 2 * k, 30 * k * 1024))
    a = tuple(Share(i, 1, "m2", 1, investment=90 + 10 * i) for i in range(1, k + 1))
    c = tuple(Share(i, 3, "m2", 1, investment=10 * (i - k)) for i in range(k + 1, 2 * k + 1))
    work = (_work(1, "a", 1, a), _work(2, "b", want, (Share(20 * k, 2, "m1", want),)), _work(3, "c", 1, c))
    return replace(_cycle(m, work), investment_ranked=investment_ranked)


def _cleared(d) -> set[tuple[int, int]]:
    return {(a.donor_job, a.share_id) for a in d.actions}


def test_known_investments_settle_the_round():
    d = defragment(_many_open(False), COUNTS, (), (), pure_fair_share=PURE)
    assert _cleared(d) == {(3, 5), (3, 6), (3, 7), (3, 8)}
    assert d.unsettled == ()


def test_eight_open_shares_are_listed_as_far_as_the_round_looks():
    """The round stops after four of the eight: its first four are A's first i and C's first 4 - i
    (each job's ranking kept) in one of 2^4 = 16 interleavings, each an alternative (in the order
    it clears), rmref's own (C's four) first."""
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE)
    [u] = d.unsettled
    assert len(u.shares) > MAX_OPEN and not u.partial and u.reasons == (INVESTMENT,)
    assert len(u.alternatives) == 16 and u.alternatives[0] == ((3, 5), (3, 6), (3, 7), (3, 8))
    assert {frozenset(alt) for alt in u.alternatives} == {
        frozenset([(1, s) for s in range(1, i + 1)] + [(3, s) for s in range(5, 9 - i)]) for i in range(5)}


def test_a_clearing_an_allowed_order_reaches_is_followed():
    """The RM cleared A's first two and C's first two (by each job's ranking): an interleaving the
    input allows, so rmref finds it and takes it."""
    rm = (1, 1), (1, 2), (3, 5), (3, 6)
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE, choose={"m2": tuple(sorted(rm))})
    assert _cleared(d) == set(rm)
    [u] = d.unsettled
    assert not u.partial and set(u.alternatives[u.taken]) == set(rm)


def test_too_many_orders_to_walk_list_rmrefs_own_clearing_only():
    """k = 8, want = 15: B needs all of m2 but one quantum, so the round looks at fifteen of its
    sixteen shares: the prefixes of the interleavings of two rankings of eight are more steps than
    MAX_STEPS (those with A's eight and C's first seven alone are C(15, 7) = 6,435). rmref lists
    its own clearing alone (all but A's last, 8); given the RM's (all but C's last, 16), also the
    one an allowed order putting the RM's shares first clears: the RM's."""
    counts, pure = {1: 8, 2: 2, 3: 8}, {1: 4, 2: 30, 3: 4}
    d = defragment(_many_open(True, 8, 15), counts, (), (), pure_fair_share=pure)
    [u] = d.unsettled
    assert u.partial and len(u.shares) == 16 and comb(15, 7) > MAX_STEPS
    assert u.alternatives == (tuple((a.donor_job, a.share_id) for a in d.actions),)
    assert _cleared(d) == set(u.shares) - {(1, 8)}
    rm = tuple(sorted(set(u.shares) - {(3, 16)}))
    d = defragment(_many_open(True, 8, 15), counts, (), (), pure_fair_share=pure, choose={"m2": rm})
    [u] = d.unsettled
    assert u.partial and len(u.alternatives) == 2 and _cleared(d) == set(rm)


def test_a_clearing_no_allowed_order_reaches_is_not_followed():
    """A's 3 cannot go before its 1 and 2 (A's own ranking): that clearing is not among the
    alternatives, and rmref keeps its own."""
    own = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE)
    rm = tuple(sorted([(1, 3), (3, 5), (3, 6), (3, 7)]))
    d = defragment(_many_open(True), COUNTS, (), (), pure_fair_share=PURE, choose={"m2": rm})
    assert d.actions == own.actions
    [u] = d.unsettled
    assert all(set(alt) != set(rm) for alt in u.alternatives)


def _two_rounds() -> CycleInput:
    """Jobs A (order 2) and C (order 1), both user a's, fill m2; B (user b, order 3) is short two.

        m1 (3Q): B           m2 (12Q): A A A A C C C C

    Hand-worked RM: A invested 10, 20, 70, 80 (ids 1..4), C 30, 40, 50, 60 (ids 5..8), so one
    owner's shares go least invested first: round 1 clears A's 1 and 2 (4 quanta), round 2 C's
    5, 6 and 7 (3). Known only as each job's own ranking (rmref's own order: 1, 5, 2, 6, ...), the
    eight shares are more than MAX_OPEN (each round's orders are walked only as far as it looks:
    rmref.choices.open_prefixes).
    """
    m = (Machine("m1", POOL, 3, 45 * 1024), Machine("m2", POOL, 12, 180 * 1024))
    a = tuple(Share(i, 1, "m2", 2, investment=2 * i - 1) for i in range(1, 5))
    c = tuple(Share(i, 3, "m2", 1, investment=2 * (i - 4)) for i in range(5, 9))
    work = (_work(1, "a", 2, a), _work(2, "b", 3, (Share(20, 2, "m1", 3),)), _work(3, "a", 1, c))
    return replace(_cycle(m, work), investment_ranked=True)


def test_a_clearing_over_rounds_is_followed_one_donor_job_at_a_time():
    """The RM's clearing on m2 spans two rounds, A's shares in the first, C's in the second. Its
    shares put first in rmref's own order interleave the jobs (round 1: A's 1 and C's 5), and
    round 2 could then not reach it; with one job's shares first, then the other's, every round
    does (which job's round comes first no log line at INFO tells: the same processes go)."""
    rm = tuple(sorted([(1, 1), (1, 2), (3, 5), (3, 6), (3, 7)]))
    d = defragment(_two_rounds(), {1: 4, 2: 3, 3: 4}, (), (), pure_fair_share={1: 4, 2: 9, 3: 4},
                   choose={"m2": rm})
    assert sorted((a.donor_job, a.share_id) for a in d.actions) == list(rm)
    # each round's clearing is one of its alternatives: the RM's choice is followed, not forced
    assert len(d.unsettled) == 2 and all(u.alternatives[u.taken] for u in d.unsettled)


def test_an_earlier_rounds_clearing_is_passed_over_first():
    """The RM clears A's 1 and 2 in round 1 and A's 3 and 4 in round 2 (A invested least). In round
    2, A's 1 and 2, evicted, are still on m2 and rank before A's 3: an order putting the RM's
    shares first must pass over them before any of C's, or C's 5 comes before A's 3."""
    rm = ((1, 1), (1, 2), (1, 3), (1, 4))
    d = defragment(_two_rounds(), {1: 4, 2: 3, 3: 4}, (), (), pure_fair_share={1: 4, 2: 9, 3: 4},
                   choose={"m2": rm})
    assert sorted((a.donor_job, a.share_id) for a in d.actions) == list(rm)
