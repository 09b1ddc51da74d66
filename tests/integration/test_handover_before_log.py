"""A process defragmentation handed over before a mid-stream log began: the audit says so.

corpus/handed_over_not_fixed: in epoch 23 takeFromTheRich hands job 3's pending process
n11.sim.ducc.3 to the needy job 4 (class rsva, RESERVE), which never gets the fixed bit (truth.jsonl's
defrag actions: reassign_pending). A cut later has no line of it: the process reads as connected
for job 4 itself, so fixed. The audit lists it, with every other process of work that is not fair
share held when the log began, as taken not handed over. In epochs 36 and 37 job 4 reserves a
second machine, which the RmCounter vmachines show set aside: with every such process fixed no
machines reproduce them, with n11.sim.ducc.3 handed over they do, and with job 2's n12.sim.ducc.2
handed over instead too. The log does not say which: those cycles are not replayed, and their
verdict names both (it named the machines before). No RM divergence results.
"""

from __future__ import annotations

import pytest

from replay import parse
from replay.apps.audit import audit
from replay.model.handover import HANDED, HANDOVER, ONE_OF
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
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    why = ONE_OF.format(which="job 2 n12.sim.ducc.2, job 4 n11.sim.ducc.3")
    for kind_skipped in result.skipped_kinds.values():
        assert {epoch[c]: w for c, w in kind_skipped.items()} == {36: why, 37: why}


def test_a_log_from_the_rms_start_assumes_no_handover():
    """The whole log shows the handover (its placement line): nothing is assumed about it."""
    result = audit(parsed(NAME, "rm-debug.log").tables)
    assert [a for a in result.assumed if a.setting == HANDOVER] == []


def test_a_handover_the_counters_show_alone_is_inferred_and_replayed(tmp_path, monkeypatch):
    """Where only truth's handed-over process settles those cycles (here job 2's is made not to,
    the machines solved as with none handed over), the start infers the handover and says why,
    and every cycle then replays whole, agreeing with the RM's logged decisions."""
    import replay.model.start as start_module

    solved = start_module.machine_inventory

    def solve(tables, boot, handed_before=frozenset(), once=None):
        return solved(tables, boot, frozenset() if (2, 2) in handed_before else handed_before, once)

    monkeypatch.setattr(start_module, "machine_inventory", solve)
    tables = {**parse([cut(NAME, "rm-debug.log", "between", tmp_path / "cut.log", at=0.6)]).tables,
              **read_resources(classes_only(NAME, tmp_path / "config"))}
    result = audit(tables)
    (handed,) = _handed_before(tables["cycles"]["epoch"].min())
    job, process = handed.split(" ")[1], handed.split(" ")[2]
    inferred = {a.setting: a for a in result.assumed}[f"job {job}'s process {process}"]
    assert inferred.value == HANDED and "cycle(s) 11 (epoch 36), 12 (epoch 37)" in inferred.evidence
    assert {a.value for a in result.assumed if a.setting == HANDOVER} == {"job 2 n12.sim.ducc.2"}
    assert not any(result.skipped_kinds.values()) and not result.skipped and result.divergences == []
