"""rmref.choices: the sets of choices an open order allows, hand-worked."""

from __future__ import annotations

from rmref.choices import MAX_OPEN, HostTie, allowed_orders, linear_orders, met_order, tie_groups


def test_linear_orders_keep_the_settled_pairs():
    """Three items, 0 before 2 settled: 3! = 6 orders less the 3 with 2 before 0."""
    assert sorted(linear_orders(3, {(0, 2)})) == [(0, 1, 2), (0, 2, 1), (1, 0, 2)]
    assert len(list(linear_orders(3, set()))) == 6


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
