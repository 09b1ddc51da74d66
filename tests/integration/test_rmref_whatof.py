"""rmref's What Of places every new process on the host the RM chose, on every fixture cycle.

Input: each cycle's start state rebuilt from truth (`tests.truth_inputs.truth_cycles`, which also
carries what only the log has: node arrival order, the class job-table order, the needy list, and
managed reservations typed as such) and truth's How Much count per job. Expected: the
(job, host, order) of the shares truth lists as `added`, with what the same cycle's
defragmentation did afterwards to shares What Of had just placed undone
(`tests.truth_inputs.expected_placements`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest

from rmref.whatof import what_of
from tests.helpers import SCENARIOS
from tests.truth_inputs import TruthCycle, expected_placements, truth_cycles


def placed(tc: TruthCycle, **changes) -> Counter:
    """rmref's placements, (job, host, order) with multiplicity, for truth's counts (input fields replaced by
    `changes`)."""
    counts = {j["id"]: j["nshares_given"] for j in tc.record["jobs"]}
    return Counter((p.job_id, p.host, p.order) for p in what_of(replace(tc.input, **changes), counts))


@pytest.mark.parametrize("name", SCENARIOS)
def test_placements_match_truth_on_every_cycle(name):
    total = 0
    for tc in truth_cycles(name):
        got, expected = placed(tc), expected_placements(tc.record)
        assert got == expected, (tc.record["cycle"], dict(got - expected), dict(expected - got))
        total += sum(expected.values())
    assert total > 0


def test_needy_jobs_with_zero_need_still_expand_first():
    """g cycle 42: job 19 is in the needy list (needy count 0), so its fixed share is placed by
    expandNeedyJobs with stacking; the normal fixed-share pass would refuse the stacked machine."""
    cycles = truth_cycles("g_reservations_services")
    prev, tc = cycles[40], cycles[41]
    assert tc.record["cycle"] == 42 and not prev.record["defrag"]["needy"] and 19 in tc.input.needy
    assert placed(tc) == Counter({(19, "gnode01.sim.ducc", 4): 1})
    assert not placed(tc, needy=())


def test_managed_reservations_and_job_table_order_matter():
    """The other log-only inputs decide a placement too. A managed reservation (`ap`) is not a
    service: its service id is 0, so fixed-share placement avoids machines already running other
    id-0 work (g cycle 3). The class job-table order decides which of two machines sharing a hash
    bucket comes first (h_mega15 cycle 38)."""
    g = truth_cycles("g_reservations_services")[2]
    typed = {j["id"]: j["type"] for j in g.record["jobs"]}
    assert g.input.cycle == 3 and placed(g) == expected_placements(g.record)
    assert placed(g, work=tuple(replace(w, work_type=typed[w.job_id]) for w in g.input.work)) != placed(g)
    h = truth_cycles("h_mega15")[37]
    assert h.input.cycle == 38 and placed(h) == expected_placements(h.record)
    assert placed(h, work=tuple(sorted(h.input.work, key=lambda w: w.job_id))) != placed(h)
