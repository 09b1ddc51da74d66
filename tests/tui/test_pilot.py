"""Drive the TUI's keys with Textual's Pilot and check what it shows against the fixtures' ground truth."""

from __future__ import annotations

import asyncio

import polars as pl
import pytest

from tests.helpers import log_path, truth
from tests.tui.helpers import SIZE, app_for, rows, wait_until
from tui.app import ErrorScreen, HelpScreen, HistoryScreen, RmReplayApp


def run(coro):
    """Run one Pilot session (no pytest-asyncio needed)."""
    return asyncio.run(coro)


def drive(app: RmReplayApp, script) -> None:
    """Run the app headless until it has loaded, play `await script(pilot)`, then quit with q."""
    async def go():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready)
            await script(pilot)
            await pilot.press("q")

    run(go())


def truth_at(name: str, cycle: int) -> dict:
    rec = truth(name)[cycle - 1]
    assert rec["cycle"] == cycle
    return rec


def header(app) -> str:
    return str(app.query_one("#header").render())


def jobs_shown(app) -> dict[int, list[str]]:
    return {int(r[0]): r for r in rows(app.query_one("#jobs-table"))}


def test_keys_walk_cycles_and_tables_match_truth():
    """n/p/g move through cycles; the Jobs and Nodes tabs list truth's jobs and hosts with their numbers."""
    name = "d_fragmentation"
    app = app_for(name)

    async def script(pilot):
        total = len(truth(name))
        assert f"Cycle 1/{total}" in header(app)
        await pilot.press("n", "n", "n", "p")
        assert app.cycle == 3 and f"Cycle 3/{total}" in header(app)
        await pilot.press("g", "9", "escape")  # escape: no jump, and n/p are keys again
        assert app.cycle == 3
        await pilot.press("g", "9", "backspace", "2", "enter")
        assert app.cycle == 2 and f"Cycle 2/{total}" in header(app)
        await pilot.press("g", *"38", "enter")
        await pilot.pause()
        assert app.cycle == 38 and f"Cycle 38/{total}" in header(app)
        rec = truth_at(name, 38)
        shown = jobs_shown(app)
        assert set(shown) == {j["id"] for j in rec["jobs"]}
        for j in rec["jobs"]:
            row = shown[j["id"]]
            # job, type, user, class, order, ..., held (existing after the cycle)
            assert row[1:5] == [j["type"], j["user"], j["class"], str(j["order"])]
            assert row[9] == str(len(j["shares"]))
            assert row[10] == (f"+{len(j['added'])}" if j["added"] else "")
            assert row[11] == (f"-{len(j['preempted'])}" if j["preempted"] else "")
        await pilot.press("2")
        await pilot.pause()
        nodes = {r[1]: r for r in rows(app.query_one("#nodes-table"))}
        assert set(nodes) == {n["name"] for n in rec["nodes"]}
        for n in rec["nodes"]:
            assert nodes[n["name"]][2] == str(n["order"])
            assert nodes[n["name"]][5] == str(n["free_qshares"])
            assert nodes[n["name"]][7].startswith(n["status"])
        # a time goes to the last cycle begun at or before it
        await pilot.press("g", *"00:05:15", "enter")
        await pilot.pause()
        assert app.cycle == next(r["cycle"] for r in truth(name) if r["time"].endswith("00:05:10,000"))

    drive(app, script)


def test_timeline_and_table_cursor_keys():
    """The timeline's cursor keys move through cycles; a table's cursor scrolls its rows into view."""
    name = "d_fragmentation"
    app = app_for(name)

    async def script(pilot):
        timeline = app.query_one("#timeline")
        timeline.focus()
        await pilot.press("down", "down")
        await pilot.pause()
        assert app.cycle == 3 and timeline.cursor_row == 2
        await pilot.press("end")
        await pilot.pause()
        assert app.cycle == len(truth(name))
        # the last cycle's row is drawn on screen, with its cycle number
        drawn = ["".join(seg.text for seg in timeline.render_line(y)) for y in range(timeline.size.height)]
        assert any(line.strip().startswith(str(app.cycle)) for line in drawn)
        await pilot.press("home", "1")
        await pilot.pause()
        assert app.cycle == 1
        jobs = app.query_one("#jobs-table")
        first = "".join(seg.text for seg in jobs.render_line(1)).split()
        assert first and first[0] == jobs.drawn(0)[0]

    drive(app, script)


def test_goto_takes_the_rms_epoch():
    """`g e45` goes to the cycle truth gives epoch 45, and the header names both; an epoch that
    published nothing stays put with a warning."""
    name = "d_fragmentation"
    app = app_for(name)
    rec = next(r for r in truth(name) if r["epoch"] == 45)

    async def script(pilot):
        await pilot.press("g", *"e45", "enter")
        await pilot.pause()
        assert app.cycle == rec["cycle"]
        assert f"Cycle {rec['cycle']}/{len(truth(name))} (epoch 45)" in header(app)
        await pilot.press("g", *"e2", "enter")
        await pilot.pause()
        assert app.cycle == rec["cycle"]

    drive(app, script)


def test_node_death_shown_offline_as_truth_says():
    """f_node_failure: the dead node is marked in the Nodes tab and the timeline."""
    name = "f_node_failure"
    app = app_for(name)

    async def script(pilot):
        await pilot.press("g", *"45", "enter", "2")
        await pilot.pause()
        rec = truth_at(name, 45)
        nodes = {r[1]: r for r in rows(app.query_one("#nodes-table"))}
        for n in rec["nodes"]:
            assert nodes[n["name"]][7].split()[0] == n["status"]
        assert any(n["status"] != "online" for n in rec["nodes"])
        death_cycle = app.browse.timeline.filter(pl.col("deaths") > 0)["cycle"].to_list()
        marks = app.query_one("#timeline").drawn(death_cycle[0] - 1)[-1][-3:]
        assert "X" in marks

    drive(app, script)


def test_divergence_keys_diff_tab_and_filter():
    """d/D visit the cycles with divergences; the Diff tab lists them; / filters rows by user; escape clears."""
    name = "a_tiny"
    planted = pl.DataFrame({"cycle": [5, 12], "job_id": [2, 1], "decision": ["counts", "caps"],
                            "logged": ["1", "4"], "reference": ["2", "3"],
                            "explanation": ["planted for the test", "planted too"],
                            "step": ["users", "caps"], "detail": ["planted", "planted"]})

    async def go():
        app = app_for(name, divergences=planted)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready and app.audit_done)
            await pilot.press("d")
            assert app.cycle == 5
            await pilot.press("d")
            assert app.cycle == 12
            await pilot.press("d")  # none later: stays
            assert app.cycle == 12
            await pilot.press("D")
            assert app.cycle == 5
            assert "!" in app.query_one("#timeline").drawn(4)[-1][-3:]
            assert jobs_shown(app)[2][13] == "1"  # the div column of job 2
            await pilot.press("5")
            await pilot.pause()
            diff = rows(app.query_one("#diff-table"))
            assert diff == [["2", "counts", "1", "2", "planted for the test"]]
            await pilot.press("1", "slash", *"bob")
            await pilot.pause()
            users = {j["id"]: j["user"] for j in truth_at(name, 5)["jobs"]}
            assert set(jobs_shown(app)) == {j for j, u in users.items() if u == "bob"}
            await pilot.press("escape")
            await pilot.pause()
            assert set(jobs_shown(app)) == set(users)
            await pilot.press("q")

    run(go())


def test_enter_opens_history_escape_returns_help_and_palette():
    """enter on a job: its history (held per cycle as truth has it, and the explanation); escape; ?; ctrl+p."""
    name = "a_tiny"
    app = app_for(name)

    async def script(pilot):
        await pilot.press("g", *"6", "enter")
        await pilot.pause()
        table = app.query_one("#jobs-table")
        job = int(table.drawn(table.cursor_row)[0])
        await pilot.press("enter")
        await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen) and app.screen.explained)
        screen = app.screen
        held = [len(next(j for j in r["jobs"] if j["id"] == job)["shares"]) for r in truth(name)
                if any(j["id"] == job for j in r["jobs"])]
        assert list(screen.query_one("#history-spark").data) == held
        text = str(screen.query_one("#explain-text").render())
        assert f"Job {job}" in text and "Cycle 6" in text
        await pilot.press("escape")
        assert not isinstance(app.screen, HistoryScreen)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.press("ctrl+p")
        await pilot.pause()
        assert type(app.screen).__name__ == "CommandPalette"
        await pilot.press(*"Next cycle")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.cycle == 7

    drive(app, script)


def test_loads_through_worker_and_cache(tmp_path, monkeypatch):
    """The real path: parse + audit in workers with a progress bar, then the cache makes the second open instant."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path))

    async def open_once() -> RmReplayApp:
        app = RmReplayApp([str(log_path("a_tiny"))])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready and app.audit_done, timeout=60)
            assert "Cycle 1/20" in header(app)
            assert "20 of 20 cycles agree" in str(app.query_one("#status-text").render())
            await pilot.press("q")
        return app

    first = run(open_once())
    assert not first.loaded.from_cache
    slots = [p for p in tmp_path.iterdir() if p.is_dir()]
    assert len(slots) == 1 and (slots[0] / "tables" / "manifest.json").exists()
    assert (slots[0] / "lines.parquet").exists()
    assert [(m / "manifest.json").exists() for m in (slots[0] / "audits").iterdir()] == [True]  # stored, whole
    second = run(open_once())
    assert second.loaded.from_cache and second.loaded.audit is not None


def _error_shown(app) -> bool:
    # the screen is current before its widgets are mounted: wait for the reason itself, or a
    # loaded machine fails the query below (seen twice in full runs, not reproduced alone)
    return isinstance(app.screen, ErrorScreen) and bool(app.screen.query("#error-reason"))


@pytest.mark.parametrize("content, reason", [
    (b"", "empty input"),
    (b"hello\nthis is not a log\n", "not an rm.log"),
    (bytes(range(256)) * 40, "not an rm.log"),
    (None, "no such file"),
])
def test_bad_input_shows_error_screen(tmp_path, monkeypatch, content, reason):
    """Garbage, empty or missing input: an error screen with the reason, no traceback."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "rm.log"
    if content is not None:
        path.write_bytes(content)

    async def go():
        app = RmReplayApp([str(path)])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: _error_shown(app))
            assert reason in str(app.screen.query_one("#error-reason").render())
            await pilot.press("q")
        assert app.error and reason in app.error

    run(go())


def test_log_without_schedule_is_an_error(tmp_path, monkeypatch):
    """A real rm.log cut before its first published schedule has nothing to browse: said so."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    path = tmp_path / "rm.log"
    path.write_text("".join(log_path("a_tiny").read_text().splitlines(keepends=True)[:100]))

    async def go():
        app = RmReplayApp([str(path)])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: _error_shown(app))
            assert "no published schedule" in str(app.screen.query_one("#error-reason").render())

    run(go())
