"""rmref's phases chained (each fed rmref's own upstream decisions) reproduce truth on every cycle.

Input per cycle: truth's start state (tests.truth_inputs) with the caps truth reports, and the
hints a log supplies (user counting order, needy-job order, hosts cleared for reservations).
"""

from __future__ import annotations

from collections import Counter

import pytest

from replay.model.logged import logged_decisions
from rmref.cycle import Hints, Phases, schedule
from rmref.memory import Memory
from rmref.caps import Caps
from rmref.constants import NOT_NEW
from tests.helpers import SCENARIOS, parsed
from tests.truth_inputs import defrag_evictions, removals, truth_cycles


def _truth_caps(caps: dict[int, int]):
    """The cap phase replaced by truth's caps (its own agreement is tested elsewhere)."""
    def phase_for(inp):
        by_input = {id(w.cap_input): caps.get(w.job_id, 0) for w in inp.work}
        return lambda cap_input: Caps(0, 0, 0, by_input[id(cap_input)], "truth")
    return phase_for


@pytest.mark.parametrize("name", SCENARIOS)
def test_chained_cycle_equals_truth(name):
    logged = logged_decisions(parsed(name).tables)
    memory, before = Memory(), set()
    for tc in truth_cycles(name):
        inp, rec, c = tc.input, tc.record, tc.input.cycle
        hints = Hints(tuple(logged.user_orders.get(c, ())), tuple(logged.job_order.get(c, ())),
                      logged.share_walk.get(c, {}), memory)
        result = schedule(inp, hints, Phases(caps=_truth_caps(tc.caps)(inp)))
        d = result.decisions
        assert d.counts == {j["id"]: j["nshares_given"] for j in rec["jobs"]}, c
        assert d.deferred == {j["id"]: j["reason"] for j in rec["jobs"] if j["deferred"]}, c
        added = Counter()
        for j in rec["jobs"]:
            added.update((j["id"], s["host"], s["order"]) for s in j["shares"] if s["id"] in set(j["added"]))
        placed = Counter((p.job_id, p.host, p.order) for p in d.placements)
        for a in d.defrag:  # defragmentation hands over or cancels what What Of just placed
            if a.action in ("cancel_pending", "reassign_pending"):
                placed[(a.donor_job, a.host, a.order)] -= 1
            if a.action == "reassign_pending":
                placed[(a.needy_job, a.host, a.order)] += 1
        assert +placed == added, c
        now = removals(rec)
        new = {(e.job_id, e.host, e.share_id) for e in d.evictions if e.reason not in NOT_NEW}
        assert new == (now - before) - defrag_evictions(rec), c
        before = now
        truth_actions = [(a["action"], a["donor_job"], a["needy_job"], a["host"]) for a in rec["defrag"]["actions"]]
        assert [(a.action, a.donor_job, a.needy_job, a.host) for a in d.defrag] == truth_actions, c
        assert set(d.needy) == {j["id"] for j in rec["jobs"] if j["in_needy_list"]}, c
        memory = result.memory  # what the RM keeps for the next cycle, its needy list the truth's
        assert set(memory.needy) == {j["id"] for j in rec["jobs"] if j["in_needy_list"]}, c
