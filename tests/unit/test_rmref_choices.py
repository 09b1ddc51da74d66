"""rmref.choices: the sets of choices an open order allows, hand-worked."""

from __future__ import annotations

from rmref.choices import (
    MAX_OPEN, MAX_STEPS, HostTie, allowed_orders, met_order, open_prefixes, rest, tie_groups, within,
)


def test_open_prefixes_keep_the_settled_pairs():
    """Three items, 0 before 2 settled: 3! = 6 orders less the 3 with 2 before 0, in lexicographic order."""
    assert open_prefixes(3, {(0, 2)}, lambda p: False) == [(0, 1, 2), (0, 2, 1), (1, 0, 2)]
    assert len(open_prefixes(3, set(), lambda p: False) or []) == 6


def test_open_prefixes_stop_where_decided():
    """Decided after the first item: only the first items 0 and 1 are open (2 must follow 0), each
    completed in index order."""
    assert open_prefixes(3, {(0, 2)}, lambda p: len(p) == 1) == [(0, 1, 2), (1, 0, 2)]


def test_open_prefixes_within_the_budget():
    """Ten items, none settled, decided after four: 1 + 10 + 90 + 720 + 5,040 steps, more than
    MAX_STEPS (7! = 5,040): none listed; two chains of five (each item after the one before it
    in its chain), decided after four: 2^4 = 16 prefixes in 31 steps."""
    assert MAX_STEPS == 5040
    assert open_prefixes(10, set(), lambda p: len(p) == 4) is None
    assert len(open_prefixes(10, set(), lambda p: len(p) == 4, budget=10_000) or []) == 5040
    chains = {(x, y) for x in range(10) for y in range(x + 1, 10) if x // 5 == y // 5}
    got = open_prefixes(10, chains, lambda p: len(p) == 4)
    assert got is not None and len(got) == 16
    assert got[0] == tuple(range(10)) and got[-1] == (5, 6, 7, 8, 0, 1, 2, 3, 4, 9)


def test_allowed_orders_per_group_and_without_knowledge():
    """Pool p: jobs 1, 2, 3 with 1 known before 3; pool q: job 4 alone. Without known pairs the
    caller asked for no set."""
    got = allowed_orders({"p": (1, 2, 3), "q": (4,)}, {(1, 3)})
    assert sorted(o["p"] for o in got) == [(1, 2, 3), (1, 3, 2), (2, 1, 3)]
    assert all(o["q"] == (4,) for o in got)
    assert allowed_orders({"p": (1, 2)}, None) == []
    assert allowed_orders({"p": tuple(range(MAX_OPEN + 1))}, set()) == []


def test_ways_counts_distinct_placements():
    """Three tied hosts, one process: 3 ways; two processes on one of three: 3; 1, 1, 0: 3; 2, 1, 0: 6."""
    assert HostTie(1, ("a", "b", "c"), (1, 0, 0), 2).ways() == 3
    assert HostTie(1, ("a", "b", "c"), (1, 1, 0), 2).ways() == 3
    assert HostTie(1, ("a", "b", "c"), (2, 1, 0), 2).ways() == 6


def test_met_order_reorders_only_within_a_group():
    """Hosts a, x, b, c: a, b and c share a key (one bucket, one walk), x does not; preferring c
    then b puts them in the group's positions in that order, a after them."""
    hosts = ["a", "x", "b", "c"]
    groups = tie_groups(hosts, lambda h: None if h == "x" else "k")
    assert groups == [[0, 2, 3]]
    assert met_order(hosts, groups, {"c": 0, "b": 1}) == ["c", "x", "b", "a"]
    assert met_order(hosts, groups, {}) == hosts


def test_clearing_counts_new_processes_one_by_one():
    """Two new processes of job 10 dropped on a machine: a round dropping both and another of job 2
    is not inside a clearing of one of job 10 and one of job 2 (hand-worked, as in
    fixtures/corpus/defrag_new_processes_counted)."""
    rm = ((2, 0), (10, 0))
    assert within([(10, 0), (2, 0)], rm)
    assert not within([(10, 0), (10, 0), (2, 0)], rm)
    assert within([(10, 0), (10, 0)], ((10, 0), (10, 0), (6, 0)))
    # an earlier round of the cycle took one of job 9's: only one of job 9's is left to clear
    assert rest(((6, 0), (9, 0), (9, 0)), [(9, 0)]) == ((6, 0), (9, 0))
    assert not within([(9, 0), (9, 0)], rest(((6, 0), (9, 0), (9, 0)), [(9, 0)]))
