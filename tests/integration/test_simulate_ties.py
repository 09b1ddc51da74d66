"""The simulator follows the RM's pick where What Of meets equally free machines (fixtures/ties/).

`walk_order` and `walk_order_seed1` are one scenario run by the real RM with two seeds of its
random ids: the same input, and the RM put job 7's new process on a different machine each time
(docs/verified-choices.md). rmref alone picks one of them both times; the simulation with nothing
changed must hold each process where truth.jsonl says the RM put it, in every cycle, on both
runs (a wrong host there once made a later preemption take another process, and with it other
work items: docs/simulate-fidelity.md).
"""

from __future__ import annotations


import pytest

from tests.helpers import identity_simulation, truth

RUNS = ("ties/walk_order", "ties/walk_order_seed1")


def _truth_hosts(name: str) -> dict[tuple[int, int], list[tuple[int, str]]]:
    """(cycle, job) -> [(share id, host)] the real RM held after the cycle (not being removed)."""
    return {(rec["cycle"], j["id"]): sorted((s["id"], s["host"]) for s in j["shares"] if not s["pending_remove"])
            for rec in truth(name) for j in rec["jobs"] if not j["refused"]}


@pytest.mark.parametrize("name", RUNS)
def test_every_process_is_where_the_rm_put_it(name):
    """Nothing changed: in every cycle each job's processes (share id and host) are truth's."""
    sim = identity_simulation(name)
    ctx = sim.ctx
    expected = _truth_hosts(name)
    for i, cycle in enumerate(ctx.cycles):
        sim.step(i)
        for job_id, job in sim.jobs.items():
            held = sorted((s.share_id, s.host) for s in job.shares.values() if not s.pending_removal)
            assert held == expected.get((cycle, job_id), []), (cycle, job_id)
