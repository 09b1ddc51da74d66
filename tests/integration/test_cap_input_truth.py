"""A job's remaining work and process limit, as rmref's input reads them, are the real RM's.

The RM keeps both per job and changes them as the Orchestrator reports (jobUpdate's `rem:`,
"Max shares adjusted"); an INFO log describes work that is not fair share only when it arrives.
The same RM run logged at INFO and at DEBUG must give rmref the same values, truth.jsonl's.
"""

from __future__ import annotations

import pytest

from replay.model.start import cycle_inputs
from tests.helpers import parsed, truth

# fixtures where a job completes after its only description (INFO): its work and limit changed since
COMPLETING = ["b_classes", "corpus/allotment_three_bands", "corpus/needy_submission_tie",
              "corpus/needy_tally_order"]


def _mismatches(name: str, level: str) -> list[tuple[int, int, str, int, int]]:
    """(epoch, job, field, rmref's input, truth) wherever the two differ."""
    tables = parsed(name, level).tables
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    jobs = {r["epoch"]: {j["id"]: j for j in r["jobs"]} for r in truth(name)}
    out = []
    for inp in cycle_inputs(tables):
        for work in inp.work:
            job = jobs.get(epochs[inp.cycle], {}).get(work.job_id)
            if job is None or work.work_type == "Reservation":  # the RM counts a reservation's one request
                continue
            cap = work.cap_input
            if cap.remaining != job["remaining"]:
                out.append((epochs[inp.cycle], work.job_id, "remaining", cap.remaining, job["remaining"]))
            if cap.max_processes != job["max_shares"]:  # (unlimited: Integer.MAX_VALUE in both)
                out.append((epochs[inp.cycle], work.job_id, "max_shares", cap.max_processes, job["max_shares"]))
    return out


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("name", COMPLETING)
def test_remaining_work_and_process_limit_are_the_rms(name, level):
    """Every job of every cycle, a job that completed after its last description included: at
    INFO its remaining work was the submission's (50 items where the cycle's own update says 0,
    so explain told of 50 items left) and its process limit the submission's."""
    assert not _mismatches(name, level)
