"""rmref's whole How Much phase, on cycles rebuilt from truth, gives the RM's counts, deferrals and counter runs.

Inputs: `tests.truth_inputs.truth_cycles` (state at cycle start, truth's caps, and the allotments
the RM read in `Config`), and, where said, the order the RM counted each class's users in, read
from its INFO log (`replay.model.logged.user_orders`): the RM puts a class's users in a HashMap filled
in the order of its job map, whose keys hash random UUIDs, so users whose names share a bucket
come in an order no input can tell (see `test_user_order_is_the_hashmap_order_up_to_bucket_ties`).

Expected values are the RM's own: truth `nshares_given`, `deferred` and `reason`, and the DEBUG
log's RmCounter blocks (entities, wanted, vector and each entity's result).
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from replay.model.inputs import counter_blocks
from replay.model.logged import user_orders
from rmref.howmuch import HowMuch, how_much
from rmref.javahash import JavaHashMap, spread, string_hash
from tests.helpers import SCENARIOS, parsed
from tests.truth_inputs import TruthCycle, truth_cycles

DEBUG_FIXTURES = [n for n in SCENARIOS if n != "i_mega24"]


def run(tc: TruthCycle, orders: Sequence[Sequence[str]] = ()) -> HowMuch:
    """How Much on the truth cycle (truth's caps, the allotments of its `Config`) given the RM's user orders."""
    return how_much(tc.input, tc.caps, dict(tc.input.config.user_allotments), orders)


def check_counts(name: str, cycles) -> int:
    """Every job's count and deferral equal truth's, in every cycle; returns the jobs checked."""
    checked = 0
    orders = user_orders(parsed(name).tables["rmcounter"])
    for tc in cycles:
        hm = run(tc, orders.get(tc.input.cycle, ()))
        for job in tc.record["jobs"]:
            assert hm.counts[job["id"]] == job["nshares_given"], (tc.input.cycle, job["id"])
            checked += 1
        truth_deferred = {j["id"]: j["reason"] for j in tc.record["jobs"] if j["deferred"]}
        assert hm.deferred == truth_deferred, tc.input.cycle
    return checked


@pytest.mark.parametrize("name", DEBUG_FIXTURES)
def test_counts_and_deferrals_equal_truth(name):
    assert check_counts(name, truth_cycles(name)) > 0


@pytest.mark.slow
def test_counts_equal_truth_on_the_2500_cycle_fixture():
    assert check_counts("i_mega24", truth_cycles("i_mega24")) > 0


def _padded(vector, size: int = 128) -> tuple[int, ...]:
    return tuple(vector) + (0,) * (size - len(vector))


@pytest.mark.parametrize("name", DEBUG_FIXTURES)
def test_counter_runs_equal_the_debug_rmcounter_blocks(name):
    """Class (nodepool tree included), user and job counters: same entities, vectors and results as logged."""
    logged: dict[int, list] = {}
    for block in counter_blocks(parsed(name, "rm-debug.log").tables):
        logged.setdefault(block.cycle, []).append(block)
    compared = 0
    orders = user_orders(parsed(name).tables["rmcounter"])
    for tc in truth_cycles(name):
        runs = list(run(tc, orders.get(tc.input.cycle, ())).runs)
        blocks = logged.get(tc.input.cycle, [])
        assert len(runs) == len(blocks), tc.input.cycle
        for block in blocks:
            names = tuple(e.name for e in block.entities)
            mine = next(r for r in runs if r.descr == block.descr and tuple(e.name for e in r.entities) == names)
            runs.remove(mine)
            where = (tc.input.cycle, block.block, block.descr)
            assert [_padded(e.wanted) for e in mine.entities] == [_padded(e.wanted) for e in block.entities], where
            assert [e.weight for e in mine.entities] == [e.weight for e in block.entities], where
            assert _padded(mine.vmachines) == _padded(block.vmachines), where
            padded_given = {k: _padded(v) for k, v in block.given.items()}
            assert {k: _padded(v) for k, v in mine.given.items()} == padded_given, where
            compared += 1
    assert compared > 0


def _buckets(users: tuple[str, ...]) -> list[int]:
    """Each user's bucket in a fresh java.util.HashMap holding these users."""
    table = JavaHashMap()
    for user in users:
        table.put(user, string_hash(user))
    return [spread(string_hash(user)) & (table.capacity - 1) for user in users]


@pytest.mark.parametrize("name", DEBUG_FIXTURES)
def test_user_order_is_the_hashmap_order_up_to_bucket_ties(name):
    """Without the logged order, users come in java.util.HashMap order; they differ only inside a bucket."""
    orders = user_orders(parsed(name).tables["rmcounter"])
    for tc in truth_cycles(name):
        logged = orders.get(tc.input.cycle, [])
        for order in logged:  # the RM's own order is bucket order
            assert _buckets(order) == sorted(_buckets(order)), (tc.input.cycle, order)
        ours = [tuple(e.name for e in r.entities) for r in run(tc).runs
                if r.descr == "countUserShares"]
        assert sorted(map(sorted, ours)) == sorted(map(sorted, logged)), tc.input.cycle
        for order in ours:
            rm = next(o for o in logged if sorted(o) == sorted(order))
            assert _buckets(order) == _buckets(rm), (tc.input.cycle, order, rm)  # differences are bucket ties


def test_known_bucket_tie_in_h_mega15():
    """h_mega15 cycle 58: Hilaria and Rodrigo share a bucket; the RM counted Hilaria first, and so does the log."""
    tc = truth_cycles("h_mega15")[57]
    assert tc.input.cycle == 58
    logged = user_orders(parsed("h_mega15").tables["rmcounter"])[58]
    assert ("Hilaria", "Rodrigo", "Lucrezia") in logged
    guessed = run(tc)
    told = run(tc, logged)
    three_users = [r for r in guessed.runs if r.descr == "countUserShares" and len(r.entities) == 3]
    assert three_users[0].entities[0].name == "Rodrigo"
    assert guessed.counts == told.counts  # here the tie changed no count
