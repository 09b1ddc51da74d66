"""Shared fixtures: every bundled log as a parameter, and a per-session parse cache (the helpers they
use are in tests/helpers.py)."""

from __future__ import annotations

import os

import pytest
from hypothesis import settings

from tests.helpers import LOGS

# CI must be reproducible: property tests draw the same examples on every run (a new failing
# example found while developing is kept as an explicit test case).
settings.register_profile("rmreplay", derandomize=True, deadline=None)
settings.load_profile("rmreplay")


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory):
    """The commands cache their parses: the tests' go to a folder of their own, not the user's."""
    before = os.environ.get("RMREPLAY_CACHE")
    os.environ["RMREPLAY_CACHE"] = str(tmp_path_factory.mktemp("rmreplay-cache"))
    yield
    if before is None:
        os.environ.pop("RMREPLAY_CACHE", None)
    else:
        os.environ["RMREPLAY_CACHE"] = before


@pytest.fixture(params=LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def fixture_log(request):
    """(scenario name, log level file name) for every bundled log."""
    return request.param
