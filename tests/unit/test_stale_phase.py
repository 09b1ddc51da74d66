"""How Much hands What Of the free space its accounting left each unschedulable machine
(`HowMuch.stale_left`, What Of's and defragmentation's `stale_left` input), on hand-worked cycles.

The cycle, by hand: A (8 quanta, dead, 8 free left from before) holds one order-1 fixed-share
process; B is wholly free (8) and D (7 quanta) too, so tables of sizes 8 and 7 exist. NodePool.reset
skips A in both phases. How Much's accounting moves A silently 8 -> 7 (the table of 8 exists),
lowering the 8-free count as it goes; What Of's accounting starts at 7 and moves it again to 6,
lowering the 7-free count, so B stays the one 8-free machine an order-8 job is placed on. Started
at 8 instead, What Of would take B's 8-free count to 0: findShares skips size 8 and places nothing
(the RM's "bad virtual machine list" effect, `varied_off_hides_free`).
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from rmref import HowMuch, Phases, how_much, schedule
from rmref.defrag import defragment
from rmref.model import FIXED_SHARE, ClassDef, Machine
from rmref.whatof import unschedulable_free, what_of
from tests.unit.test_rmref_whatof import NORMAL, A, B, _cycle, _work

FIXED = ClassDef("fixed", FIXED_SHARE, 5, 0, "--default--")
D = Machine("nodeD.sim.ducc", "--default--", 7, 28672, "10.0.0.4")
DEAD = replace(A, online=False, stale_free=8)
INP = _cycle((DEAD, B, D), (_work(1, 1, cls="fixed", shares=((1, A.name),)), _work(2, 8)), classes=(NORMAL, FIXED))


def _hosts(placements):
    return [(p.job_id, p.host) for p in placements]


def _no_second_accounting(*_args, **_kwargs):
    raise AssertionError("What Of accounted How Much's work again instead of reading stale_left")


def test_how_muchs_output_is_the_free_space_its_accounting_left():
    assert how_much(INP, {1: 1, 2: 1}).stale_left == {A.name: 7}
    # a cycle with every machine schedulable leaves none
    assert how_much(_cycle((A, B), (_work(2, 1),)), {2: 1}).stale_left == {}


def test_what_of_starts_from_its_input():
    """Handed How Much's 7, What Of places job 2 on B; handed 8 (as if How Much had left A there),
    it hides B; not handed one, it works out How Much's 7 from the input."""
    assert _hosts(what_of(INP, {2: 1}, stale_left={A.name: 7})) == [(2, B.name)]
    assert _hosts(what_of(INP, {2: 1}, stale_left={A.name: 8})) == []
    assert _hosts(what_of(INP, {2: 1})) == [(2, B.name)]
    assert unschedulable_free(INP, {A.name: 7}) == {A.name: 6}  # what defragmentation reads
    assert unschedulable_free(INP, {A.name: 8}) == {A.name: 7}


def test_defragmentation_reads_what_of_accounting_from_the_same_input(monkeypatch):
    """Handed How Much's value, defragmentation gives what it gives working it out, without doing so."""
    worked_out = defragment(INP, {1: 1, 2: 1}, (), (), pure_fair_share={2: 8})
    monkeypatch.setattr("rmref.whatof.stale_after_howmuch", _no_second_accounting)
    assert defragment(INP, {1: 1, 2: 1}, (), (), pure_fair_share={2: 8}, stale_left={A.name: 7}) == worked_out


def test_the_cycle_hands_how_muchs_output_to_what_of(monkeypatch):
    """rmref.schedule passes `HowMuch.stale_left` to What Of (and defragmentation), which then
    accounts nothing of How Much's again."""
    seen = []

    def spy(inp, counts, *, prefer=None, stale_left=None):
        seen.append(stale_left)
        return what_of(inp, counts, prefer, stale_left)

    own = schedule(INP, phases=Phases(what_of=spy))
    assert own.how_much.stale_left == {A.name: 7} and seen == [{A.name: 7}]
    monkeypatch.setattr("rmref.whatof.stale_after_howmuch", _no_second_accounting)
    assert schedule(INP).decisions == own.decisions


def test_a_swapped_how_much_that_leaves_it_out_has_what_of_work_it_out():
    """A How Much whose result has no `stale_left` (None): What Of is handed nothing and works it
    out from the input as rmref's How Much leaves it, so the placements stay rmref's."""
    seen = []

    def spy(inp, counts, *, prefer=None, stale_left=None):
        seen.append(stale_left)
        return what_of(inp, counts, prefer, stale_left)

    def counts_only(*args, **kwargs):
        return HowMuch(how_much(*args, **kwargs).counts)

    own = schedule(INP)
    swapped = schedule(INP, phases=Phases(how_much=counts_only, what_of=spy))
    assert seen == [None] and swapped.decisions.placements == own.decisions.placements


@pytest.mark.parametrize("machines", [(A, B), (replace(A, online=False), B)])
def test_a_what_of_without_the_input_runs_where_no_machine_has_a_stale_size(machines):
    """Passed only where some machine has one (as `prefer`): a What Of of the older shape still
    runs on a cycle whose unschedulable machines have no known size."""
    def older(inp, counts):
        return what_of(inp, counts)

    inp = _cycle(machines, (_work(2, 1),))
    assert schedule(inp, phases=Phases(what_of=older)).decisions == schedule(inp).decisions
