"""The simulated RM purges, keeps and gets back the processes of a node that dies or is varied off
as the real one did (docs/simulate-fidelity.md#purges-and-returns-of-nodes).

NodePool.disable purges a node's processes and marks a service it purges completed (UIMA-4327), so
the service is not placed again. Before 2.1.0 it also takes the machine out of the tables: its walk
stops at the first reservation's process (the kept ones stay on the old record when the node comes
back as a new, empty machine), and a dead node comes back as its old record, purged processes and
all. The simulator sets the shares' flags rmref reads (`Share.purged`, `.stranded`, `.revived`)
from its own node events and processes. Each log below is the real RM of the release named; with
nothing changed, in every cycle each job must hold the processes (share id and host) truth.jsonl
says, each share still listed must be purged where truth says, and each service completed where
truth says.
"""

from __future__ import annotations

import dataclasses

import pytest

from replay.apps.simulate.simulation import simulate
from tests.helpers import identity_simulation, parsed, truth

LOGS = [
    # 2.0.0: the walk stops at the reservation's process (the log's ^P marks say which went)
    "releases/2.0.0/purge-stops", "releases/2.0.0/kept-out-of-tables", "releases/2.0.0/kept-old-record",
    "releases/2.0.0/walk-stops-first",  # (it met the reservation's first: nothing purged, nothing marked)
    # 2.0.0: the reservation's process stays on the old record, the new one is free (stranded)
    "releases/2.0.0/reservation-kept",
    # 2.0.0: a purged service completed; the dead node back with its purged process on it (revived)
    "releases/2.0.0/dead-reactivated", "releases/2.0.0/varyoff-return",
    "releases/2.0.0/purged-return", "releases/2.0.0/dead-out-of-tables",
    # trunk: a service purged by a vary-off (fair-share class) and by a death is not placed again
    "corpus/varied_off_then_dead", "corpus/purged_service_completed",
]


def _truth(name: str) -> dict[tuple[int, int], dict]:
    """(cycle, job) -> truth's record of the job after the cycle."""
    return {(rec["cycle"], j["id"]): j for rec in truth(name) for j in rec["jobs"] if not j["refused"]}


@pytest.mark.parametrize("name", LOGS)
def test_every_process_is_held_purged_and_completed_as_the_rm_did(name):
    """Nothing changed: each cycle's processes, purge marks and completed services are truth's."""
    sim = identity_simulation(name)
    ctx = sim.ctx
    expected = _truth(name)
    for i, cycle in enumerate(ctx.cycles):
        sim.step(i)
        for job_id, job in sim.jobs.items():
            want = expected.get((cycle, job_id), {"shares": [], "completed": False, "type": ""})
            held = sorted((s.share_id, s.host) for s in job.shares.values() if not s.pending_removal)
            assert held == sorted((s["id"], s["host"]) for s in want["shares"] if not s["pending_remove"]), (
                cycle, job_id)
            purged = {s["id"]: s["purged"] for s in want["shares"]}
            assert {sid: s.purged for sid, s in job.shares.items() if sid in purged} == {
                sid: p for sid, p in purged.items() if sid in job.shares}, (cycle, job_id)
            if want["type"] == "Service":
                assert job.completed == want["completed"], (cycle, job_id)


@pytest.mark.parametrize("name", LOGS)
def test_the_identity_figures_hold(name):
    """report.json's identity: every job-cycle's processes the logged ones."""
    from replay.apps.simulate.metrics import identity, measure

    tables = parsed(name).tables
    assert identity(measure(tables, simulate(tables)))["shares_match"] == 1.0


def test_a_machine_unlike_the_log_s_loses_every_process_but_the_reservation_s():
    """Hand-worked: where the simulated machine does not hold what the log's did (here: no Existing
    list read for the vary-off's cycle), where 2.0.x's walk stopped is unknown; purge-stops' n01
    then loses all four of job 2's processes (the RM kept share 3) and keeps the JobDriver's."""
    name = "releases/2.0.0/purge-stops"
    sim = identity_simulation(name)
    ctx = sim.ctx = dataclasses.replace(sim.ctx, ranks={c: r for c, r in sim.ctx.ranks.items() if c != 41})
    for i in range(ctx.cycles.index(41) + 1):
        sim.step(i)
    assert {sid: s.purged for sid, s in sim.jobs[2].shares.items()} == {2: True, 3: True, 4: True, 5: True}
    assert not sim.jobs[1].shares[1].purged and sim.jobs[2].held() == 0
