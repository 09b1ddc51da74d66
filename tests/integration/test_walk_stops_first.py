"""A 2.0.x disable whose walk meets the reservation's process first purges nothing: a shrunk run of the
real 2.0.0 RM (oracle seed 11616 --focus fragmentation, scenario 5; fixtures/releases/2.0.0/README.md),
held to the log and to its truth.jsonl. The hand-worked cycle is in tests/unit/test_rmref_behaviours.py."""

from __future__ import annotations

from replay.apps.audit import audit
from rmref.constants import PURGES, SHRINK
from tests.helpers import parsed, truth

NAME, VARIED_OFF = "releases/2.0.0/walk-stops-first", 39


def test_the_walk_that_met_the_reservation_first_purges_nothing():
    """Cycle 39: n13, holding the JobDriver reservation's process and job 3's one process, was varied
    off. The walk met the reservation's process first ("Not purging Reservation", no `Purge` line, no
    `^P`): job 3 keeps its process, counted 0 it loses it to a shrink, and truth marks it not purged
    but leaving. rmref purged it (every process but the reservation's) and shrank nothing."""
    result = audit(parsed(NAME).tables, trace=(VARIED_OFF,))
    assert not result.divergences
    record = next(r for r in truth(NAME) if r["cycle"] == VARIED_OFF)
    jobs = {j["id"]: j for j in record["jobs"]}
    [share] = jobs[3]["shares"]
    assert (share["purged"], share["pending_remove"]) == (False, True)
    evictions = result.traces[VARIED_OFF].evictions
    assert not [e for e in evictions if e.reason in PURGES]
    assert [(e.job_id, e.host, e.share_id, e.reason) for e in evictions] == [(3, share["host"], share["id"], SHRINK)]
