"""Shared helpers of the TUI tests: fixture inputs opened without the cache, and waiting for the app."""

from __future__ import annotations

import asyncio
from functools import lru_cache

import polars as pl

from replay import parse
from replay.apps.audit import audit, result_frames
from tests.helpers import log_path, parsed
from tui.app import RmReplayApp
from tui.load import Loaded

SIZE = (150, 40)  # a fixed terminal: snapshots and row counts must not depend on the runner's


@lru_cache(maxsize=None)
def audit_frames(name: str, level: str = "rm.log") -> dict[str, pl.DataFrame]:
    """rmref's audit of a fixture (cached for the session)."""
    return result_frames(audit(parsed(name, level).tables))


def loaded(name: str, level: str = "rm.log", divergences: pl.DataFrame | None = None) -> Loaded:
    """A fixture opened as the app would open it, audit included (optionally with extra divergences)."""
    path = log_path(name, level)
    frames = dict(audit_frames(name, level))
    if divergences is not None:
        frames["divergences"] = pl.concat([frames["divergences"], divergences], how="diagonal_relaxed").cast(
            frames["divergences"].schema)
    return Loaded(path.name, parsed(name, level).tables, _lines(name, level), frames, None)


@lru_cache(maxsize=None)
def _lines(name: str, level: str) -> pl.DataFrame:
    return parse([log_path(name, level)], keep_lines=True).lines


def app_for(name: str, level: str = "rm.log", **kw) -> RmReplayApp:
    """The app on a fixture, already parsed and audited (nothing left running in the background)."""
    return RmReplayApp(loaded=loaded(name, level, kw.pop("divergences", None)), **kw)


async def wait_until(pilot, done, timeout: float = 30.0) -> None:
    """Let the app run until `done()` holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not done():
        if loop.time() > end:
            raise TimeoutError("the app did not get there in time")
        await pilot.pause(0.02)


def rows(table) -> list[list[str]]:
    """A table's rows as drawn on screen (each cell's text cut to its column), whether scrolled into view or not."""
    return [table.drawn(i) for i in range(table.row_count)]
