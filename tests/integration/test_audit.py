"""`rmreplay audit`: the report contract, exit status, cycle ranges, missing bootstrap, determinism."""

from __future__ import annotations

import json

import polars as pl
import pytest

from replay.apps.audit import DIVERGENCE_SCHEMA, REF_SCHEMAS
from replay.cli import main
from tests.helpers import FIXTURES, log_path

SAMPLE = log_path("a_tiny")


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_report_contract(tmp_path, capsys):
    code, out, _ = _run(capsys, "audit", str(SAMPLE), "-o", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["cycles"] == 20  # a_tiny publishes 20 schedules
    assert set(report["decisions"]) == {"caps", "counts", "placements", "evictions", "defrag", "schedule"}
    for tally in report["decisions"].values():
        assert set(tally) == {"agree", "total"} and 0 <= tally["agree"] <= tally["total"]
    assert code == (0 if report["cycles_agree"] == report["cycles"] else 1)
    for kind, schema in REF_SCHEMAS.items():
        assert pl.read_parquet(tmp_path / f"ref_{kind}.parquet").schema == pl.Schema(schema)
    assert pl.read_parquet(tmp_path / "divergences.parquet").schema == pl.Schema(DIVERGENCE_SCHEMA)
    assert "20 of 20 cycles agree" in out or code == 1


def test_a_tampered_decision_is_a_divergence_with_its_explanation(tmp_path, capsys):
    """The RM 'logs' cap 7 where the rules give 1: exit 1, and the row says which rule bound the job."""
    lines = SAMPLE.read_text().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if "initJobCap  bob O 3 Base cap: 100" in line)
    lines[target] = lines[target].replace("actual cap 1", "actual cap 7")
    log = tmp_path / "rm.log"
    log.write_text("".join(lines))
    code, out, _ = _run(capsys, "audit", str(log), "-o", str(tmp_path / "out"))
    assert code == 1
    div = pl.read_parquet(tmp_path / "out" / "divergences.parquet").filter(pl.col("decision") == "caps")
    assert div.height == 1
    row = div.row(0, named=True)
    assert (row["job_id"], row["logged"], row["reference"]) == (2, "7", "1")
    assert "initialization_cap" in row["explanation"] and "cycle" in out


def test_cycle_range(tmp_path, capsys):
    _run(capsys, "audit", str(SAMPLE), "--cycles", "5:7", "-o", str(tmp_path))
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["cycles"] == 3
    assert set(pl.read_parquet(tmp_path / "ref_caps.parquet")["cycle"].unique()) <= {5, 6, 7}


@pytest.mark.parametrize("bad", ["0:3", "5:2", "x"])
def test_bad_cycle_range_is_a_usage_error(capsys, bad):
    code, _, err = _run(capsys, "audit", str(SAMPLE), "--cycles", bad)
    assert code == 2 and "--cycles" in err and len(err.strip().splitlines()) == 1


def _without_bootstrap(tmp_path):
    lines = SAMPLE.read_text().splitlines(keepends=True)
    start = next(i for i, line in enumerate(lines) if "Entering scheduling loop" in line)
    log = tmp_path / "rm.log"
    log.write_text("".join(lines[start:]))
    return log


def test_missing_bootstrap_says_what_is_missing_and_what_to_do(tmp_path, capsys):
    code, _, err = _run(capsys, "audit", str(_without_bootstrap(tmp_path)))
    assert code == 2
    assert "bootstrap" in err and "--config" in err and len(err.strip().splitlines()) == 1


def test_config_dir_replaces_a_rotated_bootstrap(tmp_path, capsys):
    pytest.importorskip("replay.model.resources")
    log = _without_bootstrap(tmp_path)
    code, out, _ = _run(capsys, "audit", str(log), "--config", str(FIXTURES / "a_tiny" / "resources"),
                        "-o", str(tmp_path / "out"))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cycles"] == 20 and report["decisions"]["caps"]["total"] > 0
    assert code in (0, 1) and "bootstrap: from" in out


def test_audit_output_is_byte_identical_across_runs(tmp_path, capsys):
    for run in ("a", "b"):
        _run(capsys, "audit", str(log_path("c_nodepools")), "-o", str(tmp_path / run))
    for f in sorted((tmp_path / "a").iterdir()):
        assert f.read_bytes() == (tmp_path / "b" / f.name).read_bytes(), f.name


def _from_cycle(level: str, loop: int, tmp_path):
    """h_mega15 cut at its `loop`-th scheduling loop: a production log whose start rolled away."""
    import gzip

    with gzip.open(log_path("h_mega15", level), "rt") as fh:
        lines = fh.readlines()
    start = [i for i, line in enumerate(lines) if "Entering scheduling loop" in line][loop - 1]
    log = tmp_path / f"{level}.cut"
    log.write_text("".join(lines[start:]))
    return log


def test_a_debug_log_that_starts_mid_run_audits_with_config(tmp_path, capsys):
    """The occupancy table gives every node's size; processes already running predate the log."""
    log = _from_cycle("rm-debug.log", 60, tmp_path)
    code, out, _ = _run(capsys, "audit", str(log), "--config", str(FIXTURES / "h_mega15" / "resources"),
                        "-o", str(tmp_path / "out"))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["cycles"] == 69  # the published schedules after the cut
    assert (code, report["cycles_agree"]) == (0, report["cycles"])


def test_an_info_log_that_starts_mid_run_infers_the_nodes_it_never_sizes(tmp_path, capsys):
    """Cut at loop 80, the INFO log never sizes 15 nodes: they are solved for from the counters,
    listed in report.json with their evidence, and every cycle is audited (truth.jsonl checks the
    orders and the decisions: tests/integration/test_midstream.py)."""
    log = _from_cycle("rm.log", 80, tmp_path)
    code, out, _ = _run(capsys, "audit", str(log), "--config", str(FIXTURES / "h_mega15" / "resources"),
                        "-o", str(tmp_path / "out"))
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert (code, report["cycles"], report["cycles_agree"]) == (0, 49, 49)
    inferred = [a for a in report["assumed"] if a["setting"].startswith("node ") and a["value"].startswith("order ")]
    assert len(inferred) == 15 and all("RmCounter vmachines" in a["evidence"] for a in inferred)
    assert "15 inferred" in out
