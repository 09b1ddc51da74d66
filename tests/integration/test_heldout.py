"""Held-out scenarios of a corpus nothing was developed against (every tenth of seed 47, run
through the real RM by tests/oracle), audited end to end: rmref agrees with the log and with
truth.jsonl in every cycle (a choice the RM made by an order no log shows counts as agreeing only
when the audit verified it is one of the choices rmref found equal)."""

from __future__ import annotations

import pytest

from tests.helpers import FIXTURES
from tests.oracle.check import check_run

HELDOUT = sorted(p for p in (FIXTURES / "heldout").iterdir() if (p / "truth.jsonl.gz").exists())


@pytest.mark.slow
@pytest.mark.parametrize("run", HELDOUT, ids=[p.name for p in HELDOUT])
def test_rmref_decides_as_the_real_rm(run):
    result = check_run(run, ("info",))["info"]
    assert result.error is None, result.error
    assert result.cycles > 0 and result.skipped == 0
    failures = result.failures
    assert not failures, [f"cycle {f.cycle} {f.kind} ({f.source}) job {f.job}: {f.text}" for f in failures[:5]]
    assert result.cycles_agree_log == result.cycles_agree_truth == result.cycles


def test_the_sample_is_there():
    """Every tenth scenario of the 200, less those the real RM itself threw on."""
    assert len(HELDOUT) >= 18
