"""Every command treats a log that starts mid-stream as `audit` does (replay.model.start).

A bundled log (g_reservations_services: a JobDriver reservation, reservations, services, fair-share
jobs) is cut inside a cycle's RmCounter block after a node went idle (tests/midstream.py), with a
--config folder that holds ducc.classes only. Against the real RM's truth.jsonl and the whole
log's audit: whatif, check, explain, simulate, report and the TUI's tables skip the cycles audit
skips, read the settings audit infers (the quantum the whole log states, not DUCC's 15 GB), name
work already running when the log begins as such, and give the JobDriver reservation its user and
class.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import PARTIAL_CYCLE, audit
from replay.apps.explain import explain_job, render
from replay.apps.whatif import whatif
from replay.cli import main
from replay.model.resources import read_resources
from replay.model.start import replay_start
from replay.model.start import bootstrap
from tests.helpers import parsed, truth
from tests.midstream import classes_only, cut

NAME = "g_reservations_services"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The cut log and its classes-only config."""
    out = tmp_path_factory.mktemp("parity")
    cut(NAME, "rm.log", "counter", out / "rm.log")
    classes_only(NAME, out / "config")
    return out


@cache
def _tables(folder: Path) -> dict[str, pl.DataFrame]:
    tables = dict(parse([folder / "rm.log"]).tables)
    assert tables["classes"].is_empty(), "the cut must remove the bootstrap"
    tables.update(read_resources(folder / "config"))
    return tables


@cache
def _audited(folder: Path):
    return audit(_tables(folder))


def _truth_at(folder: Path, cycle: int) -> dict:
    epoch = dict(_tables(folder)["cycles"].select("cycle", "epoch").iter_rows())[cycle]
    return next(r for r in truth(NAME) if r["epoch"] == epoch)


def test_every_command_reads_the_same_start(folder):
    """The quantum and the skipped cycles: one computation, the whole log's quantum, not DUCC's 15 GB."""
    tables = _tables(folder)
    start = replay_start(tables)
    assert start.boot.config.quantum_gb == bootstrap(parsed(NAME).tables).config.quantum_gb == 2
    result = _audited(folder)
    # the cut first cycle is damaged input (replay.model.damage), and every command skips it alike
    assert set(result.skipped) | set(result.damaged) == {c for c in tables["cycles"]["cycle"].to_list()
                                                         if start.skipped(c)} == {1}
    assert PARTIAL_CYCLE in result.damaged[1].text() and PARTIAL_CYCLE in (start.skipped(1) or "")


def test_whatif_and_check_count_the_cycles_audit_counts(folder, capsys):
    result, audited = whatif(_tables(folder)), _audited(folder)
    assert result.cycles == audited.cycles and set(result.skipped) == set(audited.skipped) | set(audited.damaged)
    report = result.report()
    # the settings under 'assumed' are the audit's (the audit adds what its run inferred after)
    settings = {a["setting"]: a["value"] for a in report["assumed"]}
    assert settings == {a["setting"]: a["value"] for a in audited.report()["assumed"] if a["setting"] in settings}
    assert settings["ducc.rm.share.quantum"] == "2"
    # the whole log's audit agrees everywhere: so does rmref unchanged on the cut, in the same cycles
    assert report["baseline_divergent_cycles"] == 0 and audited.report()["cycles_agree"] == len(audited.cycles)
    assert "" not in report["per_user"]
    rc = main(["check", str(folder / "rm.log"), "--config", str(folder / "config"), "--no-cache"])
    out = capsys.readouterr().out
    assert rc == 0
    assert f"0 of {len(audited.cycles)} cycles change" in out
    assert "1 cycle(s) not replayed: input damaged: the log starts inside this cycle" in out


def test_explain_says_work_was_there_before_the_log(folder, tmp_path):
    """A job truth shows holding processes in the cut's first cycle is already there; one submitted
    later (in a log cut earlier, before the last submissions) arrives in the cycle truth first lists it in."""
    tables = _tables(folder)
    running = next(j for j in _truth_at(folder, 1)["jobs"] if j["shares"] and j["type"] == "Job")
    life = explain_job(tables, running["id"]).life
    assert life[0].cycle == 1 and life[0].text.startswith("already there when the log begins")
    assert all("arrives" not in e.text for e in life)
    early = dict(parse([cut(NAME, "rm.log", "counter", tmp_path / "early.log", at=0.15)]).tables)
    early.update(read_resources(folder / "config"))
    epochs = dict(early["cycles"].select("epoch", "cycle").iter_rows())
    before = {j["id"] for j in truth(NAME)[0]["jobs"]} | {
        j["id"] for r in truth(NAME) if r["epoch"] <= min(epochs) for j in r["jobs"]}
    record, job = next((r, j) for r in truth(NAME) if r["epoch"] in epochs for j in r["jobs"] if j["id"] not in before)
    life = explain_job(early, job["id"]).life
    assert life[0].text.startswith("arrives") and life[0].cycle == epochs[record["epoch"]]
    there = next(j for j in truth(NAME) if j["epoch"] == min(epochs))["jobs"][0]
    assert explain_job(early, there["id"]).life[0].text.startswith("already there when the log begins")


def test_explain_of_the_partial_cycle_uses_the_log_settings(folder):
    """Cycle 1 is not audited: explain says so, and still gives every job truth's user, class and order."""
    tables = _tables(folder)
    for job in _truth_at(folder, 1)["jobs"]:
        story = explain_job(tables, job["id"], 1)
        assert (story.user, story.class_name, story.order) == (job["user"], job["class"], job["order"])
        assert story.damaged is not None and PARTIAL_CYCLE in story.damaged
    driver = next(j for j in _truth_at(folder, 1)["jobs"] if j["class"] == "JobDriver")
    text = render(explain_job(tables, driver["id"], 1))
    assert f"user {driver['user']}, class JobDriver" in text and "15 GB quantum" not in text
    assert "input damaged, not audited (the log starts inside this cycle" in text


def test_simulate_takes_work_before_the_log_as_present(folder, tmp_path, capsys):
    rc = main(["simulate", str(folder / "rm.log"), "--config", str(folder / "config"), "-o", str(tmp_path / "s"),
               "--no-cache"])
    out = capsys.readouterr().out
    assert rc == 0
    report = json.loads((tmp_path / "s" / "report.json").read_text())
    there = {j["id"] for j in _truth_at(folder, 1)["jobs"]}
    assert set(report["workload"]["present_from_start"]) == there
    who = {j["id"]: (j["user"], j["class"]) for j in _truth_at(folder, 1)["jobs"]}  # JobDriver: System
    assert {j["job_id"]: (j["user"], j["class"]) for j in report["jobs"] if j["job_id"] in who} == who
    assert f"{len(there)} job(s) already there when the log begins" in out
    assert {a["setting"]: a["value"] for a in report["assumed"]["settings"]}["ducc.rm.share.quantum"] == "2"
    # the work that predates the log ends when the log shows it ending (its duration counts from the start)
    assert report["identity"]["finish_error_median_pct"] == 0.0
    # and the processes it holds, cycle by cycle, are the RM's (as on the whole log: 100%)
    assert report["identity"]["shares_match"] == 1.0


def test_tui_and_report_name_the_work_and_the_skipped_cycle(folder, tmp_path):
    from replay.apps.report import build_report
    from tui.data import jobs_frame

    tables = _tables(folder)
    jobs = jobs_frame(tables, 2).filter(pl.col("cycle") == 1)
    who = {j["id"]: (j["user"], j["class"]) for j in _truth_at(folder, 1)["jobs"]}
    assert {r[0]: (r[1], r[2]) for r in jobs.select("job_id", "user", "class").iter_rows()} == who
    from replay.apps.audit import result_frames
    from tui.data import audit_status

    result = _audited(folder)
    status = audit_status(result_frames(result), tables["cycles"].height, result.damaged)
    assert status.startswith(f"audit: {result.report()['cycles_agree']} of {len(result.cycles)} cycles agree with "
                             "rmref")
    assert "1 not audited, input damaged (cycle 1: the log starts inside this cycle" in status
    html = build_report(tables, audit_result=_audited(folder))
    assert "1 cycle(s) not audited: input damaged" in html and "the log starts inside this cycle" in html
    assert "ducc.rm.share.quantum" in html


def test_simulate_on_a_bigger_cluster_cut_mid_stream(tmp_path):
    """h_mega15 (53 nodes), cut where a node went idle: processes still initializing when the log
    began run from when the log shows them leave Initializing; the baseline holds the RM's
    processes in at least 99% of the job-cycles (100% on the whole log)."""
    from replay.apps.simulate.metrics import measure, report
    from replay.apps.simulate.simulation import simulate

    tables = dict(parse([cut("h_mega15", "rm.log", "counter", tmp_path / "rm.log")]).tables)
    tables.update(read_resources(classes_only("h_mega15", tmp_path / "config")))
    measured = report(measure(tables, simulate(tables)))
    assert measured["identity"]["shares_match"] >= 0.99
    assert measured["identity"]["finish_error_median_pct"] == 0.0
