"""The clearing step (setupPreemptions) is a phase of its own: `rmref.schedule` hands it How Much's
set-aside machines and What Of's placements, and the evictions what it returns. Hand-worked
cycles: a 60 GB reservation and machines of 60 GB, b holding one fair-share process (share 100 of
job 9), f free (as in tests/unit/test_rmref_out_of_tables.py, worked from the 2.0.0 source)."""

from __future__ import annotations

from collections import Counter

from replay.apps.baseline import Choices, run_following
from rmref import Hints, Phases, SetAside, clearing, how_much, schedule
from rmref.constants import RESERVATION
from rmref.evictions import evictions
from rmref.model import Machine
from rmref.whatof import what_of
from tests.unit.test_rmref_counting import ROOT
from tests.unit.test_rmref_out_of_tables import _reserve_cycle

B, F = Machine("b", ROOT, 4, 60 * 1024), Machine("f", ROOT, 4, 60 * 1024)


def _reservation_clearings(run):
    return [(e.job_id, e.share_id, e.host) for e in run.decisions.evictions if e.reason == RESERVATION]


def by_placements(inp, counts, set_aside, placements, /, **_):
    """A developer's clearing: each reservation's shortfall is what it was given less what What Of
    placed for it, taken from the machines set aside for it."""
    placed = Counter(p.job_id for p in placements)
    return tuple(m.name for a in set_aside for m in a.machines[:max(0, a.wanted - placed[a.job])])


def test_schedule_empties_what_the_clearing_phase_returns():
    """b alone: countFreeableMachines gives b to reservation 1 and sets it aside (pool, order 4,
    one machine wanted); What Of finds no free machine, so rmref's clearing empties b and the
    evictions take share 100. A clearing that empties nothing leaves job 9's process there; the
    spy sees How Much's record and What Of's (empty) placements."""
    inp = _reserve_cycle("2.0.0", (B,), [1])
    own = schedule(inp)
    assert own.cleared == ("b",) and _reservation_clearings(own) == [(9, 100, "b")]
    seen = []

    def spy(inp, counts, set_aside, placements, /, **kwargs):
        seen.append((tuple(set_aside), tuple(placements), counts[1]))
        return ()

    run = schedule(inp, phases=Phases(clearing=spy))
    assert seen == [((SetAside(ROOT, 4, (B,), 1, 1),), (), 1)]
    assert run.cleared == () and _reservation_clearings(run) == []


def test_a_swapped_what_of_reaches_the_clearing_phase():
    """b and f, 2.0.0, the walk meeting b first: b is set aside though f is free. rmref's What Of
    places reservation 1 on f, so nothing is cleared. A What Of that places no reservation leaves
    it one short: a clearing that reads the placements empties b, and the evictions are handed b
    (job 9, counted 4, holds less than its count: the RM's clearing takes nothing from it); rmref's
    own clearing counts the free machines with rmref's What Of walk, which finds f, and empties
    nothing (rmref.clearing)."""
    inp = _reserve_cycle("2.0.0", (B, F), [1])
    hints = Hints(given_first=("b",))
    own = schedule(inp, hints)
    assert own.how_much.set_aside == (SetAside(ROOT, 4, (B,), 1, 1),)
    assert [(p.job_id, p.host) for p in own.decisions.placements if p.job_id == 1] == [(1, "f")]
    assert own.cleared == () and schedule(inp, hints, Phases(clearing=by_placements)).cleared == ()

    def no_reservation(inp, counts, *, prefer=None, stale_left=None):
        return tuple(p for p in what_of(inp, counts, prefer, stale_left) if p.job_id != 1)

    handed = []

    def spy(inp, counts, clear_hosts=(), share_walk=None, /):
        handed.append(tuple(clear_hosts))
        return evictions(inp, counts, clear_hosts, share_walk)

    swapped = schedule(inp, hints, Phases(what_of=no_reservation, clearing=by_placements, evictions=spy))
    assert swapped.cleared == ("b",) and handed == [("b",)] and swapped.how_much.counts[9] == 4
    assert schedule(inp, hints, Phases(what_of=no_reservation)).cleared == ()


def test_a_developers_clearing_is_handed_no_rm_pick_while_rmrefs_how_much_still_follows_it():
    """`run_following` hands a developer's phase none of the RM's free choices; the RM's cleared
    machine (b1, of b1 and b2 set aside, f free: tests/unit/test_rmref_out_of_tables.py) also
    orders rmref's How Much's walk, which keeps it when only the clearing is the developer's."""
    nodes = tuple(Machine(n, ROOT, 4, 60 * 1024) for n in ("b1", "b2", "f"))
    inp = _reserve_cycle("2.0.0", nodes, [1, 2])
    seen: dict[str, list] = {"how_much": [], "clearing": []}

    def counting(*args, **kwargs):
        seen["how_much"].append(kwargs.get("cleared_first"))
        return how_much(*args, **kwargs)

    def theirs(inp, counts, set_aside, placements, /, *, stale_left=None, cleared_first=()):
        seen["clearing"].append(tuple(cleared_first))
        return clearing(inp, counts, set_aside, placements, stale_left=stale_left)

    phases = Phases(how_much=counting, clearing=theirs)
    choices = Choices(cleared=("b1",), given=("b1", "b2"))
    run, _ = run_following(inp, Hints(), choices, phases, frozenset({"clearing"}))
    # unhinted, rmref's clearing inside theirs meets b2 first (the node map's order, which is open)
    assert seen == {"how_much": [("b1",)], "clearing": [()]} and run.cleared == ("b2",)
    seen = {"how_much": [], "clearing": []}
    run_following(inp, Hints(), choices, phases)
    assert seen == {"how_much": [("b1",)], "clearing": [("b1",)]}
