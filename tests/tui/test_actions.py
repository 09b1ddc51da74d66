"""The one action registry (tui/actions.py) against what the user sees: the README's key table, the
App's and the Jobs table's bindings, the footer, the help screen and the command palette."""

from __future__ import annotations

import asyncio
import io
from pathlib import Path

from rich.console import Console
from textual.app import App

from tests.tui.helpers import SIZE, app_for, wait_until
from tui.actions import ACTIONS, APP, FOOTER, HELP, JOBS_TABLE, PALETTE, TEXTUAL, help_rows, readme_table
from tui.app import HelpScreen, RmReplayApp
from tui.widgets.tables import JobsTable

README = Path(__file__).resolve().parents[2] / "README.md"


def _readme_key_table() -> list[str]:
    lines = README.read_text().splitlines()
    start = lines.index("| key | does |")
    end = next(i for i in range(start, len(lines)) if not lines[i].startswith("|"))
    return lines[start:end]


def test_readme_key_table_is_the_registrys():
    assert _readme_key_table() == readme_table()


def test_every_key_is_bound_where_the_registry_says():
    """The App binds its keys, the Jobs table enter, Textual ctrl+p; each runs an action that exists."""
    bound = {(b.key, b.action, b.description, b.show) for b in RmReplayApp.BINDINGS}
    want = {(a.key, a.action, a.label, FOOTER in a.shown) for a in ACTIONS if a.scope == APP}
    assert bound == want
    assert {(b.key, b.action) for b in JobsTable.BINDINGS} == {(a.key, a.action) for a in ACTIONS
                                                                if a.scope == JOBS_TABLE}
    for a in ACTIONS:
        owner = {APP: RmReplayApp, JOBS_TABLE: JobsTable, TEXTUAL: App}[a.scope]
        assert callable(getattr(owner, f"action_{a.action.split('(')[0]}", None)), a
    assert len({(a.scope, a.key) for a in ACTIONS}) == len(ACTIONS)  # no key bound twice


def test_help_footer_and_palette_show_the_registry():
    """The help screen lists every HELP key, the footer every FOOTER label, the palette every PALETTE title."""
    app = app_for("a_tiny")

    async def go():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready)
            footer = {b.description for _node, b, _enabled, _tooltip in app.active_bindings.values() if b.show}
            assert footer == {a.label for a in ACTIONS if FOOTER in a.shown and a.scope in (APP, JOBS_TABLE)}
            titles = {c.title for c in app.get_system_commands(app.screen)}
            assert {a.title for a in ACTIONS if PALETTE in a.shown} <= titles
            assert {f"Open job {j}" for j in app.browse.jobs.at(app.cycle)["job_id"].to_list()} <= titles
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            console = Console(width=400, file=io.StringIO())
            console.print(app.screen.query_one("Static").content)
            text = " ".join(console.file.getvalue().split())
            for key, what in help_rows():
                assert " ".join(what.split()) in text and key in text, key

    asyncio.run(go())


def test_every_action_is_documented():
    assert all(a.description and a.label and (PALETTE not in a.shown or a.title) for a in ACTIONS)
    assert {a.scope for a in ACTIONS if HELP not in a.shown} == set()  # the help lists every key
