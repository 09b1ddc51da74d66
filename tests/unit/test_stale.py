"""The one model of an unschedulable machine's free space (replay.model.stale), worked by hand.

NodePool.reset skips an unschedulable machine, so it keeps the free space the last table that
held it left it: its order less what that cycle's schedule had on it."""

from __future__ import annotations

from dataclasses import replace

from replay.model.stale import StaleFree, StaleNote, stale_assumptions
from rmref.model import Machine, Nodepool

POOLS = (Nodepool("--default--", None),)
A = Machine("a", "--default--", 8, 32768)  # 8 quanta of 4 GB
B = Machine("b", "--default--", 8, 32768)
OFF = replace(A, online=False, varied_off=True)


def _model(logged: dict[tuple[int, str], int] | None = None) -> StaleFree:
    return StaleFree(logged or {}, POOLS, 4)


def test_the_last_schedulable_cycle_gives_the_free_space():
    """Cycle 1 schedules 12 GB (3 quanta) and 4 GB (1) on a: 4 free; varied off in cycle 2, it keeps 4."""
    stale = _model()
    stale.fill(1, (A, B), {"a"})
    stale.record((A, B), [("a", 12), ("a", 4), ("b", 32)])
    (a, b) = stale.fill(2, (OFF, B), {"a", "b"})
    assert (a.stale_free, b.stale_free) == (4, None)  # (a schedulable machine has none)
    assert stale.notes == [StaleNote("a", 2, 4)]


def test_a_logged_value_wins_after_the_stretchs_first_cycle():
    """Cycle 2 is the first a is off: the last schedule's 5 free (a printed 1 follows silent moves).
    In cycle 3 the RM has moved it since, and the printed 1 is read; neither is an assumption."""
    stale = _model({(2, "a"): 1, (3, "a"): 1})
    stale.record((A,), [("a", 12)])
    (a,) = stale.fill(2, (OFF,), {"a"})
    assert a.stale_free == 5
    (a,) = stale.fill(3, (OFF,), {"a"})
    assert a.stale_free == 1 and stale.notes == []


def test_a_size_only_what_of_printed_is_handed_on_as_what_ofs():
    """rmref works How Much's size out from it (`rmref.howmuch_state.stale_start`)."""
    stale = StaleFree({}, POOLS, 4, {(3, "a"): 2})
    stale.fill(2, (OFF,), {"a"})
    (a,) = stale.fill(3, (OFF,), {"a"})
    assert (a.stale_free, a.stale_free_whatof) == (None, 2)


def test_unschedulable_since_before_the_log_is_unknown():
    stale = _model()
    (a,) = stale.fill(1, (OFF,), {"a"})
    assert a.stale_free is None
    assert stale.notes == [StaleNote("a", 1, None)]


def test_a_machine_without_work_is_filled_but_not_noted():
    """Its size reads nothing that cycle, so the inference assumes nothing the user must know."""
    stale = _model()
    stale.record((A,), [])
    (a,) = stale.fill(2, (OFF,), set())
    assert a.stale_free == 8 and stale.notes == []


def test_memory_rounds_up_in_the_pools_quantum():
    """A 5 GB process holds 2 quanta of 4 GB: 6 left of 8."""
    stale = _model()
    stale.record((A,), [("a", 5)])
    assert stale.fill(2, (OFF,), set())[0].stale_free == 6


def test_the_assumptions_name_each_machine_and_count_them():
    notes = [StaleNote("a", 2, 4), StaleNote("a", 3, 4), StaleNote("c", 3, None), StaleNote("d", 9, 1)]
    assumed = stale_assumptions(notes, cycles={2, 3})
    assert [a.setting for a in assumed] == ["node a stale free space", "node c stale free space",
                                            "unschedulable nodes' free space"]
    assert assumed[0].value == "free 4 quanta in cycles 2-3"
    assert "unknown" in assumed[1].value and "wholly free" in assumed[1].value
    assert assumed[2].value == "inferred for 1 node(s), unknown for 1 (3 node-cycles)"
    assert {a.source for a in assumed} == {"inferred"}
    assert stale_assumptions(notes, cycles={5}) == ()
