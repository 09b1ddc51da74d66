"""open_orders.by_pool on hand-worked machines: the sizes a top-level pool's counters count, moved between its pools."""

from __future__ import annotations

from replay.apps.audit.open_orders import OpenOrder, by_pool, trials

ANY = (10, 16, 21)


def test_each_pool_takes_the_smallest_then_the_largest_of_the_sizes_its_top_level_pool_counts():
    # taken: a1, a2 (pool a) 21 and 16, b1, b2 (subpool b) 21 and 10; the tally is 10, 16, 21, 21
    opens = [OpenOrder("a1", 21, ANY, "a", "a"), OpenOrder("a2", 16, ANY, "a", "a"),
             OpenOrder("b1", 21, ANY, "b", "a"), OpenOrder("b2", 10, ANY, "b", "a")]
    got = by_pool(opens)
    # a smallest: a2, a1 (their taken order) get 10, 16; b2, b1 get 21, 21
    assert got[0] == {"a1": 16, "a2": 10, "b2": 21}
    # a largest: a2, a1 get 21, 21; b2, b1 get 10, 16 (b's smallest: the same as a's largest)
    assert got[1] == {"a2": 21, "b1": 16}
    # b smallest is a largest, b largest is a smallest: no trial twice
    assert len(got) == 2


def test_no_trial_gives_a_machine_an_order_it_cannot_have_nor_moves_sizes_between_top_level_pools():
    opens = [OpenOrder("a1", 21, (16, 21), "a", "a"), OpenOrder("b1", 10, (10, 21), "b", "a"),
             OpenOrder("c1", 16, ANY, "c", "c")]
    # a smallest would give a1 10 (not among its orders); a largest changes nothing; c is alone under c
    assert by_pool(opens) == []


def test_the_pool_trials_come_after_the_pairs_and_singles_and_none_is_tried_twice():
    opens = [OpenOrder("a1", 21, ANY, "a", "a"), OpenOrder("b1", 10, ANY, "b", "a")]
    got = trials(opens)
    assert got[0] == {"a1": 10, "b1": 21}  # the pair trading orders (a's smallest, b's largest too)
    assert got[1:] == [{"a1": 10}, {"a1": 16}, {"b1": 16}, {"b1": 21}]  # then each machine alone
    opens = [OpenOrder("a1", 21, ANY, "a", "a"), OpenOrder("a2", 21, ANY, "a", "a"),
             OpenOrder("b1", 10, ANY, "b", "a"), OpenOrder("b2", 10, ANY, "b", "a")]
    assert trials(opens)[-1] == {"a1": 10, "a2": 10, "b1": 21, "b2": 21}  # no pair nor single does this
