"""Held-out scenarios of a corpus nothing was developed against (every tenth of seed 47, run
through the real RM by tests/oracle), audited end to end: rmref agrees with the log and with
truth.jsonl in every cycle, except where the audit names an input the log does not carry."""

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
    settled = [f for f in result.failures if not f.lacks_input]
    assert not settled, [f"cycle {f.cycle} {f.kind} ({f.source}) job {f.job}: {f.text}" for f in settled[:5]]


def test_the_sample_is_there():
    """Every tenth scenario of the 200, less those the real RM itself threw on."""
    assert len(HELDOUT) >= 18
