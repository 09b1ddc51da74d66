"""The other arrival orders the audit tries for machines whose order it assumed (replay.apps.verify),
worked by hand: only the named machines move, within their pool, in the places they hold."""

from __future__ import annotations

from itertools import permutations

from rmref.model import Config, CycleInput, Machine

from replay.apps import verify
from replay.apps.verify import ARRIVAL_ORDERS, _arrival_orders


def _input(*machines: tuple[str, str]) -> CycleInput:
    return CycleInput(1, Config(), (), (), tuple(Machine(n, pool, 4, 4096) for n, pool in machines), ())


def test_only_the_named_machines_of_one_pool_move_in_the_places_they_hold():
    inp = _input(("a", "P"), ("b", "P"), ("c", "P"), ("d", "Q"))
    assert _arrival_orders(inp, {"a", "c", "d"}) == [("c", "b", "a", "d")]  # d is alone in Q


def test_two_pools_give_every_pair_of_orders_but_the_assumed_one():
    inp = _input(("a", "P"), ("x", "Q"), ("b", "P"), ("y", "Q"))
    assert _arrival_orders(inp, {"a", "b", "x", "y"}) == [
        ("a", "y", "b", "x"), ("b", "x", "a", "y"), ("b", "y", "a", "x")]


def test_the_orders_tried_are_capped():
    inp = _input(*((n, "P") for n in "abcdef"))  # 720 orders
    orders = _arrival_orders(inp, set("abcdef"))
    assert len(orders) == ARRIVAL_ORDERS - 1 and len(set(orders)) == len(orders)
    assert tuple("abcdef") not in orders


def test_the_orders_are_drawn_one_at_a_time(monkeypatch):
    # itertools.product draws every order of every pool before it gives the first combination: a
    # pool of 46 machines whose order a gap left open (i_mega24 with a span removed) has 46! orders,
    # and the audit's memory ran out. The orders of a pool are drawn only as far as they are tried
    drawn = []

    def counted(slots):
        for order in permutations(slots):
            drawn.append(order)
            yield order
    monkeypatch.setattr(verify, "permutations", counted)
    inp = _input(*((f"n{i:02d}", "P") for i in range(8)), ("x", "Q"), ("y", "Q"))  # 8! x 2! orders
    orders = _arrival_orders(inp, {m.name for m in inp.machines})
    assert len(orders) == ARRIVAL_ORDERS - 1
    assert len([d for d in drawn if len(d) == 8]) <= ARRIVAL_ORDERS  # of P's 40,320
