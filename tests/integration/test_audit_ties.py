"""A host tie no log settles (fixtures/ties/): findShares meets two equally free machines of one
table bucket in the order the RM walked one job's processes, a HashMap keyed by random share ids.

`walk_order` and `walk_order_seed1` are one shrunk scenario (seed 13 scenario 111) run by the real
RM with two seeds of its random ids and nothing else changed. The log gives rmref the same input
for the tie's cycle both times, yet the RM put the process on a different machine each time: the
choice rests on the ids alone. The audit must agree with truth.jsonl everywhere else and, where it
does not, say that the log lacks the input; the RM's pick must be rmref's with the two machines it
names swapped.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import pytest

from replay.apps.audit import LACKS_INPUT, audit, result_frames
from replay.apps.causes import placement_cause
from replay.model.world import cycle_inputs
from rmref.whatof import walk_decided_tie
from tests.helpers import parsed, truth

RUNS = ("ties/walk_order", "ties/walk_order_seed1")
LEVELS = ("rm.log", "rm-debug.log")
CYCLE, JOB = 48, 7  # the tie: job 7's one new process, on n09 or n11


@lru_cache(maxsize=None)
def _audit(name: str, level: str):
    result = audit(parsed(name, level).tables)
    return result, result_frames(result)


def _truth_added(name: str) -> dict[tuple[int, int], Counter]:
    """(cycle, job) -> the hosts of the job's Additions in the RM's own state."""
    out: dict[tuple[int, int], Counter] = {}
    for record in truth(name):
        for j in record["jobs"]:
            added = Counter(s["host"] for s in j["shares"] if s["id"] in set(j["added"]))
            if added:
                out[(record["cycle"], j["id"])] = added
    return out


def _ref_added(name: str, level: str) -> dict[tuple[int, int], Counter]:
    out: dict[tuple[int, int], Counter] = {}
    for cycle, job, host, _order, _epoch in _audit(name, level)[1]["ref_placements"].iter_rows():
        out.setdefault((cycle, job), Counter())[host] += 1
    return out


def _input(name: str, level: str):
    return next(cycle_inputs(parsed(name, level).tables, cycles=range(CYCLE, CYCLE + 1)))


@pytest.mark.parametrize("level", LEVELS)
def test_the_random_ids_alone_decide_the_tie(level):
    """Same input as the log shows it, another machine in the RM's own state."""
    assert _input(RUNS[0], level) == _input(RUNS[1], level)
    picks = [_truth_added(name)[(CYCLE, JOB)] for name in RUNS]
    assert picks[0] != picks[1] and sum(picks[0].values()) == sum(picks[1].values()) == 1
    (a,), (b,) = picks
    assert walk_decided_tie(_input(RUNS[0], level), a, b) is not None


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("level", LEVELS)
def test_rmref_agrees_with_truth_but_for_the_named_tie(name, level):
    result, _ = _audit(name, level)
    expected, ours = _truth_added(name), _ref_added(name, level)
    parted = {key for key in expected.keys() | ours.keys() if expected.get(key) != ours.get(key)}
    assert parted <= {(CYCLE, JOB)}
    # the placement, and its echo in the chained schedule
    assert {(c, j, kind) for c, j, kind, *_ in result.divergences} <= {(CYCLE, JOB, "placements"),
                                                                      (CYCLE, JOB, "schedule")}
    if parted:  # the RM took the other machine of the pair the audit names
        (rm_host,), (our_host,) = expected[(CYCLE, JOB)], ours[(CYCLE, JOB)]
        [why] = [d[5] for d in result.divergences if d[2] == "placements"]
        assert why.endswith(LACKS_INPUT), why
        assert f"{rm_host} and {our_host} began the cycle with the same free space" in why
    else:
        assert not result.divergences


def test_a_swap_of_several_processes_is_named_and_anything_else_is_not():
    """Hand-worked on the tie's input: when findShares stacks, meeting the two machines in the
    other order swaps how many processes each gets (seed 13 scenario 111: 2 and 1 against 1 and 2)."""
    inp = _input(RUNS[0], "rm.log")
    a, b = "n09.sim.ducc", "n11.sim.ducc"
    rm, ref = [(a, 1), (a, 1), (b, 1)], [(a, 1), (b, 1), (b, 1)]
    assert placement_cause(inp, JOB, rm, ref).detail.endswith(LACKS_INPUT)
    assert not placement_cause(inp, JOB, [(a, 1), (a, 1)], [(b, 1)]).detail.endswith(LACKS_INPUT)
    assert not placement_cause(inp, JOB, [(a, 1), (a, 1), (a, 1)], ref).detail.endswith(LACKS_INPUT)
