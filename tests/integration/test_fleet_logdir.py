"""`fleet` on a copy of a `$DUCC_HOME/logs` folder: the RM's stream is read once, other daemons'
logs are left out as `skipped` with the reason (not failed), and a healthy RM's folder exits 0.

Ground truth: the folder's rm.log is the bundled a_tiny log, whose `rmreplay parse` gives the
cycles the manifest must count; rm-debug.log is the same run at DEBUG (the same stream).
"""

from __future__ import annotations

import gzip
import io
import shutil

import polars as pl

from replay.apps.fleet.dataset import read_manifest
from replay.apps.fleet.streams import split_streams
from replay.cli import main
from tests.helpers import log_path, parsed

OR_LINE = "01 Jan 2015 00:00:0{} INFO OR.OrchestratorComponent - N/A T[1] start  state change\n"


def _logs(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(log_path("a_tiny", "rm.log"), logs / "rm.log")
    with gzip.open(log_path("a_tiny", "rm-debug.log"), "rb") as src, open(logs / "rm-debug.log", "wb") as dst:
        shutil.copyfileobj(src, dst)
    (logs / "or.log").write_text("".join(OR_LINE.format(i) for i in range(5)))
    (logs / "sm.log").write_text(OR_LINE.format(1).replace("OR.Orchestrator", "SM.ServiceManager"))
    return logs


def test_other_daemons_and_the_debug_twin_are_skipped(tmp_path):
    streams, skipped = split_streams(f"c1={_logs(tmp_path)}")
    assert [s.name for s in streams] == ["rm.log"]
    why = {s.name: s.reason for s in skipped}
    assert set(why) == {"rm-debug.log", "or.log", "sm.log"}
    assert "Orchestrator" in why["or.log"] and "Service Manager" in why["sm.log"]
    assert why["rm-debug.log"].startswith("the same RM stream as rm.log")


def test_fleet_on_a_logs_folder_exits_0(tmp_path, capsys):
    logs = _logs(tmp_path)
    rc = main(["fleet", f"c1={logs}", "-o", str(tmp_path / "ds"), "--workers", "1"])
    capsys.readouterr()
    assert rc == 0
    manifest = read_manifest(tmp_path / "ds")
    rows = {r["stream"]: r for r in manifest.iter_rows(named=True)}
    assert rows["rm.log"]["status"] == "ok" and rows["rm.log"]["files"] == ["rm.log"]
    assert rows["rm.log"]["cycles"] == parsed("a_tiny").tables["cycles"].height
    assert {n: r["status"] for n, r in rows.items() if n != "rm.log"} == dict.fromkeys(
        ("rm-debug.log", "or.log", "sm.log"), "skipped")
    assert all(r["note"] for n, r in rows.items() if n != "rm.log")
    assert manifest.filter(pl.col("status") == "failed").is_empty()


def test_config_gives_a_cluster_its_bootstrap(tmp_path, capsys):
    """A mid-stream stream is audited with its cluster's --config, as `rmreplay audit --config` does."""
    from replay import parse
    from replay.apps.audit import audit
    from replay.model.resources import read_resources
    from tests.midstream import classes_only, cut

    logs = tmp_path / "logs"
    logs.mkdir()
    cut("g_reservations_services", "rm.log", "counter", logs / "rm.log")
    config = classes_only("g_reservations_services", tmp_path / "config")
    tables = dict(parse([logs / "rm.log"]).tables)
    tables.update(read_resources(config))
    expected = audit(tables).report()
    assert main(["fleet", f"c1={logs}", "-o", str(tmp_path / "ds"), "--workers", "1", "--audit",
                 "--config", f"c1={config}"]) == 0
    row = read_manifest(tmp_path / "ds").row(0, named=True)
    assert row["audited"]
    assert (row["audit_cycles"], row["cycles_agree"]) == (expected["cycles_audited"], expected["cycles_agree"])
    assert main(["fleet", f"c1={logs}", "-o", str(tmp_path / "ds2"), "--config", f"c2={config}"]) == 2
    assert "no cluster 'c2'" in capsys.readouterr().err


def test_progress_takes_the_keys_distributed_adds():
    """The installed `distributed` adds its own keys (`worker`) to a task's events: the bar still moves."""
    from rich.console import Console

    from replay.apps.fleet.progress import FleetProgress

    bars = FleetProgress(Console(file=io.StringIO()), 1)
    bars.event((0.0, {"key": "c1/rm.log", "start": 100, "worker": "tcp://127.0.0.1:1"}))
    bars.event((0.1, {"key": "c1/rm.log", "stage": "parsing", "done": 40, "total": 100, "worker": "tcp://127.0.0.1:1"}))
    task = bars.streams["c1/rm.log"]
    assert next(t for t in bars.bars.tasks if t.id == task).completed == 40
