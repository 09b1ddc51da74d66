"""Shared fixtures: every bundled log as a parameter, and a per-session parse cache (the helpers they
use are in tests/helpers.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.helpers import LOGS
from tests.oracle.builds import MIRROR as ORACLE_MIRROR

# CI must be reproducible: property tests draw the same examples on every run (a new failing
# example found while developing is kept as an explicit test case).
settings.register_profile("rmreplay", derandomize=True, deadline=None)
settings.load_profile("rmreplay")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """The commands cache their parses: the tests' go to a folder of their own, not the user's."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RMREPLAY_CACHE", str(tmp_path_factory.mktemp("rmreplay-cache")))
        # `rm build RELEASE` reads the mirror the oracle builds from, not one in the private cache
        mp.setenv("RMREPLAY_DUCC_MIRROR", os.environ.get("RMREPLAY_DUCC_MIRROR") or str(ORACLE_MIRROR))
        yield


@pytest.fixture(params=LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def fixture_log(request):
    """(scenario name, log level file name) for every bundled log."""
    return request.param
