"""The first screen kept (tui.summary): drawn from it, the screen is the one the whole views draw,
its audit's columns are the stored audit's and the logged decisions', it is drawn before polars
loads, and a summary of another input, configuration, release or code, a damaged one, or one whose
audit is gone, is never read."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import polars as pl
import pytest
from rich.text import Text

from replay.cli import main
from replay.model.logged import logged_decisions
from replay.parsing.store import ParquetTables, all_columns
from tests.helpers import log_path
from tests.tui.helpers import wait_until
from tui import summary
from tui.app import RmReplayApp
from tui.widgets.status import CycleHeader

SIZE = (160, 45)


def _parsed(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """A parse directory of the fixture and its audit stored (the cache under tmp_path)."""
    cache, out = tmp_path / "cache", tmp_path / "parsed"
    monkeypatch.setenv("RMREPLAY_CACHE", str(cache))
    assert main(["parse", str(log_path(name)), "-o", str(out)]) == 0
    assert main(["audit", str(out)]) in (0, 1)
    return cache, out


def _audit_folder(cache: Path) -> Path:
    [folder] = [p for p in cache.glob("*/audits/*") if (p / "manifest.json").exists()]
    return folder


def _cell(cell: object) -> object:
    """A drawn cell: its text, style and spans (a string as it is)."""
    return (cell.plain, str(cell.style), [(s.start, s.end, str(s.style)) for s in cell.spans]) \
        if isinstance(cell, Text) else cell


def _screen(app: RmReplayApp) -> dict[str, object]:
    """What the first screen shows: header, timeline, the jobs table's rows and keys, the status line."""
    jobs, timeline = app.query_one("#jobs-table"), app.query_one("#timeline")
    return {"header": str(app.query_one(CycleHeader).render()), "cycle": app.cycle,
            "timeline": [[_cell(c) for c in row] for row in timeline.rows], "cursor": timeline.cursor_row,
            "jobs": [[_cell(c) for c in row] for row in jobs.rows], "keys": list(jobs.row_keys),
            "drawn": [jobs.drawn(i) for i in range(jobs.row_count)], "status": app.status.message}


def _open(out: Path) -> tuple[str | None, dict[str, object], dict[str, object]]:
    """Open the TUI on `out`: what it drew its first screen from, that screen (audit filled), and the
    screen once the whole views are in."""
    seen: dict[str, object] = {}

    async def script() -> None:
        app = RmReplayApp([str(out)])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.first_audited or app.error is not None, timeout=60)
            assert app.error is None
            seen["shown"], seen["first"] = app.shown, _screen(app)
            await wait_until(pilot, lambda: app.audit_done, timeout=60)
            seen["views"] = _screen(app)
            await pilot.press("q")

    asyncio.run(script())
    return seen["shown"], seen["first"], seen["views"]  # type: ignore[return-value]


def _kept(cache: Path) -> list[Path]:
    return sorted(cache.glob("*/tui/*.json"))


def _written(cache: Path) -> list[Path]:
    """The summaries kept, once the thread that writes them is done."""
    for _ in range(500):
        if _kept(cache):
            break
        time.sleep(0.02)
    return _kept(cache)


@pytest.mark.parametrize("name", ["b_classes", "g_reservations_services"])
def test_the_kept_first_screen_is_the_views_and_the_audits(name, tmp_path, monkeypatch):
    """Drawn from its summary, the first screen is cell for cell (text and style) the one the views
    drew, and stays so once the views replace it; rmref's cap and count and the divergences are the
    stored audit's, the cap and count the logged decisions'."""
    cache, out = _parsed(name, tmp_path, monkeypatch)
    folder = _audit_folder(cache)
    tables = ParquetTables(out, all_columns())
    first_cycle = tables["cycles"]["cycle"].min()
    if name == "b_classes":  # (no divergence in these logs) one planted in the stored file: both screens follow it
        div = pl.read_parquet(folder / "output" / "divergences.parquet")
        job = tables["schedule"].row(0, named=True)["job_id"]
        planted = {"cycle": first_cycle, "job_id": job, "decision": "caps", "logged": "1", "reference": "2",
                   "explanation": "planted", "step": "job_caps"}
        div = pl.concat([div, pl.DataFrame([{k: planted.get(k) for k in div.columns}], schema=div.schema)])
        div.write_parquet(folder / "output" / "divergences.parquet")

    assert not _kept(cache)
    shown, views_first, _ = _open(out)
    assert shown == "views"
    assert len(_written(cache)) == 1
    shown, kept_first, kept_views = _open(out)
    assert shown == "summary"
    assert kept_first == views_first
    assert kept_views == views_first  # the views took the summary's place alike

    # the audit's columns, as the summary drew them: the stored audit's and the logged decisions
    stored = {n: pl.read_parquet(folder / "output" / f"{n}.parquet") for n in ("ref_caps", "ref_counts",
                                                                                 "divergences", "skipped")}
    logged = logged_decisions(tables)

    def per_job(frame: pl.DataFrame, column: str) -> dict[int, object]:
        at = frame.filter(pl.col("cycle") == first_cycle).unique(["cycle", "job_id"], keep="last",
                                                                 maintain_order=True)
        return dict(at.select("job_id", column).iter_rows())

    ref_caps, ref_counts = per_job(stored["ref_caps"], "actual_cap"), per_job(stored["ref_counts"], "shares_given")
    divergences = dict(stored["divergences"].filter(pl.col("cycle") == first_cycle)["job_id"].value_counts()
                       .iter_rows())
    shown_jobs = {int(r[0]): r for r in kept_first["drawn"]}  # type: ignore[attr-defined]
    assert set(shown_jobs) == set(tables["schedule"].filter(pl.col("cycle") == first_cycle)["job_id"].to_list())
    assert any(j in ref_caps for j in shown_jobs)

    def value(v: object) -> str:
        return "-" if v is None else str(v)

    for job, r in shown_jobs.items():
        assert r[5] == value(logged.caps.get(first_cycle, {}).get(job)), job
        assert r[6] == value(ref_caps.get(job)), job
        assert r[7] == value(logged.counts.get(first_cycle, {}).get(job)), job
        assert r[8] == value(ref_counts.get(job)), job
        assert r[13] == (str(divergences[job]) if divergences.get(job) else ""), job
    marked = {int(row[0][0].split()[0]) for row in kept_first["timeline"] if row[0][0][-3] == "!"}  # type: ignore
    assert marked == set(stored["divergences"]["cycle"].to_list())
    assert name != "b_classes" or first_cycle in marked
    cycles = tables["cycles"].height - stored["skipped"]["cycle"].n_unique()
    bad = stored["divergences"]["cycle"].n_unique()
    assert f"{cycles - bad:,} of {cycles:,} cycles agree with rmref" in kept_first["status"]  # type: ignore


PROBE = textwrap.dedent("""
    import asyncio, json, sys
    from tui.app import RmReplayApp
    async def main():
        app = RmReplayApp([sys.argv[1]], rm_release=sys.argv[2] if len(sys.argv) > 2 else None)
        async with app.run_test(size=(160, 45)) as pilot:
            while not (app.first_audited or app.error):
                await pilot.pause(0.005)
            seen = {"shown": app.shown, "loaded": [m for m in ("polars", "numpy", "pyarrow") if m in sys.modules]}
            while not (app.audit_done or app.error):
                await pilot.pause(0.01)
            seen["after"] = "polars" in sys.modules
            print(json.dumps(seen))
            await pilot.press("q")
    asyncio.run(main())
""")


def test_the_kept_first_screen_loads_no_polars(tmp_path, monkeypatch):
    """The first screen drawn from its summary imports neither polars, numpy nor pyarrow; they load after.
    `rmreplay tui DIR` reaches the app without them too."""
    cache, out = _parsed("a_tiny", tmp_path, monkeypatch)
    path = summary.summary_path([str(out)], True, None, None)
    assert path is not None and not path.exists()

    def probe(*release: str) -> dict[str, object]:
        done = subprocess.run([sys.executable, "-c", PROBE, str(out), *release], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    assert probe()["shown"] == "views"
    assert path.exists()
    seen = probe()
    assert seen == {"shown": "summary", "loaded": [], "after": True}
    # the command line too: `rmreplay tui DIR` checks its input before the app runs (on the console
    # script's path: collector off while the command loads), and that check reads no table
    # (with --rm-release too, its first screen kept: the name is checked against rmref's release list alone)
    assert probe("3.0.0")["shown"] == "views"
    assert probe("3.0.0") == {"shown": "summary", "loaded": [], "after": True}
    for release in ([], ["--rm-release", "3.0.0"]):
        done = subprocess.run([sys.executable, "-c", COMMAND_LINE, "tui", str(out), *release], capture_output=True,
                              text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert json.loads(done.stdout.strip().splitlines()[-1]) == {"ran": True, "loaded": []}, release


# `rmreplay tui ...` up to the app's run (which it records instead of running): what had loaded by then
COMMAND_LINE = textwrap.dedent("""
    import json, sys
    import tui.app
    def run(self, *args, **kwargs):
        rmref = [m for m in sys.modules if m.split(".")[0] == "rmref" and m not in ("rmref", "rmref.releases")]
        print(json.dumps({"ran": True, "loaded": [m for m in ("polars", "numpy", "pyarrow") if m in sys.modules]
                                                 + (["rmref"] if rmref else [])}))
    tui.app.RmReplayApp.run = run
    sys.argv = ["rmreplay", *sys.argv[1:]]
    from replay.cli.process import main
    sys.exit(main())
""")


def test_a_summary_is_read_only_under_its_own_key(tmp_path, monkeypatch):
    """Another --config, --rm-release, tables, code or TUI: another file; a damaged file, another
    format, a file renamed to another key, one whose audit is gone: not read (today's path)."""
    cache, out = _parsed("a_tiny", tmp_path, monkeypatch)
    _open(out)
    path = summary.summary_path([str(out)], True, None, None)
    assert path is not None and _written(cache) == [path]
    first = summary.read(path)
    assert first is not None
    config = tmp_path / "conf"
    config.mkdir()
    (config / "ducc.properties").write_text("ducc.rm.share.quantum=15\n")
    copy = tmp_path / "copy"  # the same tables under another name: the header names it
    shutil.copytree(out, copy)
    others = {summary.summary_path([str(out)], True, str(config), None),
              summary.summary_path([str(out)], True, None, "2.2.2"),
              summary.summary_path([str(copy)], True, None, None)}
    for name in ("tui_fingerprint", "code_fingerprint", "rmreplay_version", "_polars_version"):
        with monkeypatch.context() as m:
            m.setattr(summary, name, lambda: "edited")
            others.add(summary.summary_path([str(out)], True, None, None))
    assert len(others) == 7 and path not in others and None not in others
    assert summary.summary_path([str(out)], False, None, None) is None  # --no-cache
    assert summary.summary_path([str(log_path("a_tiny"))], True, None, None) is None  # logs: no summary

    text = path.read_text()
    path.write_text(text[: len(text) // 2])  # damaged
    assert summary.read(path) is None
    path.write_text(text.replace(summary.FORMAT, "rmreplay-tui-first/0"))
    assert summary.read(path) is None
    renamed = path.with_name("0" * 40 + ".json")
    renamed.write_text(text)
    assert summary.read(renamed) is None
    path.write_text(text)
    assert summary.read(path) == first
    (_audit_folder(cache) / "manifest.json").unlink()  # the audit it shows is no longer stored whole
    assert summary.read(path) is None

    shown, _, _ = _open(out)  # today's path (the audit run and stored again)
    assert shown == "views"


def test_a_kept_first_screen_is_written_whole(tmp_path):
    """Written to a hidden sibling and renamed: no half-written file under the key, none left over."""
    folder = tmp_path / "slot" / "tui"
    path = folder / ("a" * 40 + ".json")
    first = summary.FirstScreen("x", 1, 2, 7, "-", ["     1", "     2"], ["job_id"], [[3]], "audit: ok", "k")
    folder.mkdir(parents=True)
    dead = folder / ".tmp-999999999-0123456789ab.json"  # a writer killed between writing and renaming
    live = folder / f".tmp-{os.getppid()}-0123456789ab.json"  # one still writing
    dead.write_text("{")
    live.write_text("{")
    summary.write(path, first)
    assert sorted(p.name for p in folder.iterdir()) == sorted([path.name, live.name])
    live.unlink()
    assert json.loads(path.read_text())["key"] == path.stem
    assert summary.read(path) is None  # (its audit, "k", is not stored)
    blocked = tmp_path / "file"
    blocked.write_text("")
    summary.write(blocked / "tui" / path.name, first)  # a cache that cannot be written: no error, nothing written
    assert blocked.read_text() == ""


def test_keys_before_the_views_are_in_say_so(tmp_path, monkeypatch):
    """On a first screen drawn from its summary, before the views are in, `n`, `g` and enter on a
    job do nothing but say the log is still opening."""
    cache, out = _parsed("a_tiny", tmp_path, monkeypatch)
    _open(out)
    assert _written(cache)
    monkeypatch.setattr(RmReplayApp, "_open_views", lambda self: None)  # the views never come
    seen: dict[str, object] = {}

    async def script() -> None:
        app = RmReplayApp([str(out)])
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(pilot, lambda: app.first_audited)
            cycle = app.cycle
            for key in ("n", "g", "enter"):
                await pilot.press(key)
            await pilot.pause(0.05)
            seen["shown"], seen["moved"] = app.shown, app.cycle != cycle
            seen["said"] = [n.message for n in app._notifications]
            seen["asking"] = app.status.goto is not None
            await pilot.press("q")

    asyncio.run(script())
    assert seen["shown"] == "summary" and not seen["moved"] and not seen["asking"]
    assert seen["said"] == ["the log's cycles are still opening: a moment"] * 3
