"""A job's order where the log never prints it: the TUI marks it assumed (or unknown), as the one
computation every view reads (replay.model.orders.work_orders) says, never a plain number.

corpus/defrag_new_processes_counted cut two thirds in, inside an RmCounter block, opens with one
cycle whose schedule lists fixed-share job 6 (60 GB) and reservation 9 (42 GB) with no process
(no line of the cut names their class or prints their order, and no host tells their pool: each
order is its memory over the global quantum, an assumption) and fixed-share job 5 (24 GB) on
n02, which no node file lists: the RM puts it in the first top-level pool, --default--, so job 5's
order is its memory over that pool's quantum. Ground truth: truth.jsonl's jobs (their order), and
the orders the log prints.
"""

from __future__ import annotations

import asyncio

import polars as pl

from replay import parse
from replay.apps.audit import audit, result_frames
from replay.model.orders import ORDER_ASSUMED, ORDER_LOGGED, ORDER_POOL
from replay.model.resources import read_resources
from tests.helpers import truth
from tests.midstream import classes_only, cut
from tests.tui.helpers import SIZE, rows, wait_until
from tui.app import HistoryScreen, RmReplayApp
from tui.data import build
from tui.load import Loaded

NAME = "corpus/defrag_new_processes_counted"


def _tables(tmp_path) -> dict[str, pl.DataFrame]:
    tables = parse([cut(NAME, "rm.log", "counter", tmp_path / "cut.log", at=2 / 3)]).tables
    return {**tables, **read_resources(classes_only(NAME, tmp_path / "config"))}


def test_an_order_no_line_prints_is_marked_assumed(tmp_path):
    tables = _tables(tmp_path)
    jobs = build(NAME, tables).jobs.frame
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    want = {(r["epoch"], j["id"]): j["order"] for r in truth(NAME) for j in r["jobs"]}
    for cycle, job, order, source, shown in jobs.select("cycle", "job_id", "order", "order_from",
                                                        "order_shown").iter_rows():
        assert order == want[(epoch[cycle], job)], (cycle, job)  # (the global quantum is its pool's here)
        assert shown == (f"{order}?" if source == ORDER_ASSUMED else str(order)), (cycle, job)
    sources = dict(jobs.select("job_id", "order_from").iter_rows())
    assert sources[6] == sources[9] == ORDER_ASSUMED and sources[5] == ORDER_POOL
    assert ORDER_LOGGED in sources.values()


def test_the_jobs_tab_and_the_job_screen_say_the_order_is_assumed(tmp_path):
    tables = _tables(tmp_path)
    app = RmReplayApp(loaded=Loaded("cut.log", tables, None, result_frames(audit(tables)), None))

    async def go():
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready)
            table = app.query_one("#jobs-table")
            shown = {int(r[0]): r for r in rows(table)}
            assert shown[6][4] == "10?" and shown[5][4] == "4"  # job, type, user, class, order
            table.move_cursor(row=next(i for i in range(table.row_count) if int(table.drawn(i)[0]) == 6))
            await pilot.press("enter")
            await wait_until(pilot, lambda: isinstance(app.screen, HistoryScreen))
            assert "order 10?" in str(app.screen.query_one("#header").render())
            assert "assumed" in str(app.screen.query_one("#order-note").render())
            await pilot.press("escape", "q")

    asyncio.run(go())
