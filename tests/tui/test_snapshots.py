"""Snapshot tests (pytest-textual-snapshot) of the main tabs and the job history, on a fixed terminal.

Deterministic: the app is given an already parsed and audited fixture (no worker racing the
screenshot), the header shows the log's clock rather than the wall clock, and the terminal size
is fixed. Update after an intended change with `pytest tests/tui --snapshot-update` and review
the SVG diff.
"""

from __future__ import annotations

import pytest

from tests.tui.helpers import SIZE, app_for, wait_until
from tui.app import HistoryScreen


def _at(cycle: int, *keys: str):
    async def run_before(pilot) -> None:
        app = pilot.app
        await wait_until(pilot, lambda: app.ready)
        await pilot.press("g", *str(cycle), "enter", *keys)
        await pilot.pause()
        if isinstance(app.screen, HistoryScreen):
            await wait_until(pilot, lambda: app.screen.explained)
        await pilot.pause()
    return run_before


@pytest.mark.parametrize("tab, key", [("jobs", "1"), ("nodes", "2"), ("defrag", "3"), ("log", "4"), ("diff", "5")])
def test_tab(snap_compare, tab, key):
    """Each tab of d_fragmentation's cycle 38 (a needy job, shrinking donors)."""
    assert snap_compare(app_for("d_fragmentation"), terminal_size=SIZE, run_before=_at(38, key))


def test_job_history(snap_compare):
    """The history of d_fragmentation's job 1 (the first row), opened at cycle 38."""
    assert snap_compare(app_for("d_fragmentation"), terminal_size=SIZE, run_before=_at(38, "1", "enter"))


def test_node_failure_nodes(snap_compare):
    """A dead node, marked in the Nodes tab and the timeline (f_node_failure, cycle 45)."""
    assert snap_compare(app_for("f_node_failure"), terminal_size=SIZE, run_before=_at(45, "2"))
