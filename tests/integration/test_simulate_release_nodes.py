"""simulate under another DUCC release brings a varied-on machine back by that release's rules.

docs/releases.md, `vary_on_at_once` (2.1.0, UIMA-4742): from 2.1.0 a vary-on makes the machine
schedulable at once; before, it stays out of its pool's tables until its node next reports (`Host
added`). fixtures/releases/2.0.0/varyon-report is the real 2.0.0 RM: n01 is varied off in cycle 7
and on in cycle 23, and never reports again, so the 2.0.0 RM never schedules on it again.
"""

from __future__ import annotations

from replay.apps.change import Change
from replay.apps.simulate.simulation import simulate
from tests.helpers import parsed, truth

NAME = "releases/2.0.0/varyon-report"


def _capacity(run) -> dict[int, int]:
    return {cycle: capacity for cycle, _used, capacity in run.used}


def test_a_varied_on_machine_returns_at_once_under_a_later_release():
    tables = parsed(NAME).tables
    back = 23
    sim = simulate(tables, Change(sets=(("release", "trunk"),)))
    logged, trunk = _capacity(sim.baseline), _capacity(sim.sim)
    by_cycle = {r["cycle"]: r for r in truth(NAME)}
    n01 = next(n["order"] for r in truth(NAME) for n in r["nodes"] if n["name"] == "n01.sim.ducc")
    for cycle in logged:
        # the unchanged simulation keeps the 2.0.0 RM's machines: n01 out from its vary-off on
        assert logged[cycle] == sum(n["order"] for n in by_cycle[cycle]["nodes"] if n["online"]), cycle
        # as trunk, n01 is back in the cycle of its vary-on
        assert trunk[cycle] == logged[cycle] + (n01 if cycle >= back else 0), cycle
    assert any(cycle >= back for cycle in logged)
