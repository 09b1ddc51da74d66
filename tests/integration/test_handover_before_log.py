"""A process defragmentation handed over before a mid-stream log began: the audit names it assumed.

corpus/handed_over_not_fixed: in epoch 23 takeFromTheRich hands job 3's pending process
n11.sim.ducc.3 to the needy job 4 (class rsva, RESERVE), which never gets the fixed bit (truth.jsonl's
defrag actions: reassign_pending). A cut later has no line of it: the process reads as connected
for job 4 itself, so fixed. The audit lists it, with every other process of work that is not fair
share held when the log began, as taken not handed over; no RM divergence results.
"""

from __future__ import annotations

import pytest

from replay import parse
from replay.apps.audit import audit
from replay.model.handover import HANDOVER
from replay.model.resources import read_resources
from tests.helpers import parsed, truth
from tests.midstream import KINDS, classes_only, cut

NAME = "corpus/handed_over_not_fixed"


def _handed_before(first_epoch: int) -> list[str]:
    """truth's handovers before the epoch, as the audit names a process (job host.share)."""
    return [f"job {a['needy_job']} {a['host']}.{a['share']}" for r in truth(NAME) if r["epoch"] < first_epoch
            for a in r["defrag"]["actions"] if a["action"] == "reassign_pending"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_cut_after_a_handover_names_the_process_taken_as_not_handed_over(tmp_path, kind):
    """Cut two thirds in (DEBUG: the schedule sections give job 4's class), the audit's `assumed`
    names truth's handed-over process among those taken as fixed, and finds no RM divergence."""
    tables = {**parse([cut(NAME, "rm-debug.log", kind, tmp_path / "cut.log", at=0.6)]).tables,
              **read_resources(classes_only(NAME, tmp_path / "config"))}
    result = audit(tables)
    handed = _handed_before(tables["cycles"]["epoch"].min())
    assert handed == ["job 4 n11.sim.ducc.3"]
    (said,) = [a for a in result.assumed if a.setting == HANDOVER]
    assert said.source == "inferred" and set(handed) <= set(said.value.split(", "))
    assert result.divergences == []


def test_a_log_from_the_rms_start_assumes_no_handover():
    """The whole log shows the handover (its placement line): nothing is assumed about it."""
    result = audit(parsed(NAME, "rm-debug.log").tables)
    assert [a for a in result.assumed if a.setting == HANDOVER] == []
