"""The status line of a damaged log's first screen: the cycles not audited because their input is
damaged are those `rmreplay audit` stored and names (report.json's `damaged`), read with the stored
audit's result instead of scanning the tables again, and the line is the one the log's own damage
scan gives (replay.model.damage: what the screen drew from before)."""

from __future__ import annotations

import asyncio
import json

import polars as pl

from replay.cli import main
from replay.model import damage
from replay.parsing.store import ParquetTables, all_columns
from tests import damaged
from tests.tui.helpers import wait_until
from tui.app import RmReplayApp
from tui.data import audit_status


def test_damaged_cycles_on_the_status_line_are_the_stored_audits(tmp_path, monkeypatch):
    """Garbage lines in h_mega15: the status line names as many damaged cycles as the stored
    audit's report, its first one, and reads no table to find them."""
    cache, out = tmp_path / "cache", tmp_path / "parsed"
    monkeypatch.setenv("RMREPLAY_CACHE", str(cache))
    log, _ = damaged.garbage(tmp_path / "garbage.log")
    assert main(["parse", str(log), "-o", str(out)]) == 0
    assert main(["audit", str(out)]) in (0, 1)
    [folder] = [p for p in cache.glob("*/audits/*") if (p / "manifest.json").exists()]
    report = json.loads((folder / "output" / "report.json").read_text())["damaged"]
    assert report["cycles"] > 0
    frames = {n: pl.read_parquet(folder / "output" / f"{n}.parquet") for n in ("divergences", "skipped")}
    # no cycle left out wholly but the damaged ones, which the status line names (cycles audited in
    # part, where a report the unread lines may hold decides shrinkBy, count as audited there)
    assert frames["skipped"].filter(pl.col("decisions") == "all").is_empty()
    scan = damage.damaged_cycles
    scans: list[int] = []
    monkeypatch.setattr(damage, "damaged_cycles", lambda tables: scans.append(1) or scan(tables))
    seen: dict[str, object] = {}

    async def script() -> None:
        app = RmReplayApp([str(out)])
        async with app.run_test(size=(160, 45)) as pilot:
            await wait_until(pilot, lambda: app.audit_done or app.error is not None, timeout=60)
            assert app.error is None and app.browse is not None and app.browse.boot is not None
            seen.update(status=app.status.message, total=app.browse.total, release=app.browse.boot.release)
            await pilot.press("q")

    asyncio.run(script())
    assert not scans  # the stored audit's damaged cycles, not the tables scanned again
    first = report["first_lines"][0]
    status = str(seen["status"])
    assert f"; {report['cycles']:,} not audited, input damaged (cycle {first['cycle']}: " in status
    assert f"({first['file']}:{first['line']})" in status
    whole = scan(ParquetTables(out, all_columns()))
    assert len(whole) == report["cycles"]
    assert status == audit_status(frames, int(str(seen["total"])), whole, seen["release"])  # type: ignore[arg-type]
