"""The first screen from a parse directory whose audit is stored: what it shows is the stored audit's
decisions and the log's, read as `rmreplay audit` stored them and as the audit reads the log."""

from __future__ import annotations

import asyncio

import polars as pl
import pytest

from replay.cli import main
from replay.model.logged import logged_decisions
from replay.parsing.store import ParquetTables, all_columns
from tests.helpers import log_path
from tests.tui.helpers import rows, wait_until
from tui.app import RmReplayApp
from tui.views import Deferred

SIZE = (160, 45)


def _stored(cache) -> dict[str, pl.DataFrame]:
    """The audit's frames as `rmreplay audit` stored them beside the parse."""
    [folder] = [p for p in cache.glob("*/audits/*") if (p / "manifest.json").exists()]
    return {name: pl.read_parquet(folder / "output" / f"{name}.parquet")
            for name in ("ref_caps", "ref_counts", "divergences", "skipped")}


def _value(v: object) -> str:
    return "-" if v is None else str(v)


@pytest.mark.parametrize("name", ["b_classes", "g_reservations_services"])
def test_first_screen_shows_the_stored_audit(name, tmp_path, monkeypatch):
    """The jobs of the first cycle (cap and count as logged, rmref's beside them, divergences), the
    timeline's divergence marks and the status line, as the first screen draws them, before the
    whole views are built, with the audit read from where `rmreplay audit` stored it (never run)."""
    cache, out = tmp_path / "cache", tmp_path / "parsed"
    monkeypatch.setenv("RMREPLAY_CACHE", str(cache))
    assert main(["parse", str(log_path(name)), "-o", str(out)]) == 0
    assert main(["audit", str(out)]) in (0, 1)
    tables = ParquetTables(out, all_columns())
    if name == "b_classes":  # (no divergence in these logs) one more in the stored file: the screen follows it
        [folder] = [p for p in cache.glob("*/audits/*") if (p / "manifest.json").exists()]
        div = pl.read_parquet(folder / "output" / "divergences.parquet")
        first = tables["schedule"].row(0, named=True)
        planted = {"cycle": first["cycle"], "job_id": first["job_id"], "decision": "caps", "logged": "1",
                   "reference": "2", "explanation": "planted", "step": "job_caps"}
        div = pl.concat([div, pl.DataFrame([{k: planted.get(k) for k in div.columns}], schema=div.schema)])
        div.write_parquet(folder / "output" / "divergences.parquet")
    stored = _stored(cache)
    logged = logged_decisions(tables)

    def no_audit(*_a, **_k):
        raise AssertionError("the TUI ran the audit: it is stored")

    monkeypatch.setattr("tui.widgets.status.run_audit", no_audit)
    seen: dict[str, object] = {}

    async def script() -> None:
        app = RmReplayApp([str(out)])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.ready or app.error is not None, timeout=60)
            assert app.error is None and app.browse is not None and app.browse.audited
            seen["deferred"] = isinstance(app.browse.jobs, Deferred)
            seen["cycle"] = app.cycle
            seen["jobs"] = rows(app.query_one("#jobs-table"))
            seen["timeline"] = [row[0].plain for row in app.query_one("#timeline").rows]
            await wait_until(pilot, lambda: app.audit_done)
            seen["status"] = str(app.query_one("#status-text").render())
            await pilot.press("q")

    asyncio.run(script())
    assert seen["deferred"]  # the first screen's rows, not the whole views'
    c = seen["cycle"]
    assert c == tables["cycles"]["cycle"].min()

    def per_job(frame: pl.DataFrame, column: str) -> dict[int, object]:
        at = frame.filter(pl.col("cycle") == c).unique(["cycle", "job_id"], keep="last", maintain_order=True)
        return dict(at.select("job_id", column).iter_rows())

    ref_caps, ref_counts = per_job(stored["ref_caps"], "actual_cap"), per_job(stored["ref_counts"], "shares_given")
    divergences = stored["divergences"].filter(pl.col("cycle") == c)["job_id"].value_counts()
    shown = {int(r[0]): r for r in seen["jobs"]}
    assert set(shown) == set(tables["schedule"].filter(pl.col("cycle") == c)["job_id"].to_list())
    assert any(j in ref_caps for j in shown) and any(logged.caps.get(c, {}).get(j) is not None for j in shown)
    for job, r in shown.items():
        # cap, rmref's cap, count, rmref's count, divergences
        assert r[5] == _value(logged.caps.get(c, {}).get(job)), job
        assert r[6] == _value(ref_caps.get(job)), job
        assert r[7] == _value(logged.counts.get(c, {}).get(job)), job
        assert r[8] == _value(ref_counts.get(job)), job
        n = dict(divergences.iter_rows()).get(job)
        assert r[13] == (str(n) if n else ""), job
    marked = {int(line.split()[0]) for line in seen["timeline"] if line[-3] == "!"}  # (marks: ! N X)
    assert len(seen["timeline"]) == tables["cycles"].height
    assert marked == set(stored["divergences"]["cycle"].to_list())
    assert name != "b_classes" or c in marked
    cycles = tables["cycles"].height - stored["skipped"]["cycle"].n_unique()
    bad = stored["divergences"]["cycle"].n_unique()
    assert f"{cycles - bad:,} of {cycles:,} cycles agree with rmref" in seen["status"]
