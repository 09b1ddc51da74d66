"""Every command reads the log once: the inputs the threshold inference assembles are the replay's
(`explain`, `whatif`, `check`, and the stored audit a first `whatif` runs), and the removals taken
as decided before a mid-stream log began and the RM's logged decisions are read once per replay
start (replay.model.held_inputs.ReadOnce), whoever reads them after.

The log: an INFO cut of the real RM's log whose defragmentation the inference reads the threshold
off (oracle seed 11313, shrunk), given its ducc.classes alone, so the threshold is open; the nodes
there before the cut are inferred from the counters. Each figure is held to ground truth: the
threshold inferred is the fixture's ducc.properties', and rmref unchanged reproduces every logged
decision (the audit of this cut equals truth.jsonl in every cycle: tests/integration/test_midstream.py).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest

import replay.apps.explain.facts as explain_facts
import replay.apps.report as report_module
import replay.model.held_inputs as held_inputs
import replay.model.orders as orders_module
import replay.model.machines.solver as solver
import tui.data as tui_data
from replay import parse
from replay.apps.audit import audit
from replay.apps.change import Change
from replay.apps.report import build_report
from replay.apps.explain import explain_job
from replay.apps.simulate import simulation
from replay.apps.simulate.simulation import simulate
from replay.apps.whatif import whatif
from replay.cli import main
from replay.model import assembly, leaving, logged, start
from replay.model.resources import read_resources
from replay.model.settings import THRESHOLD
from replay.model.start import bootstrap
from tests.helpers import count_assembled, parsed, truth
from tests.midstream import classes_only, cut
from tui.data import build

RICH_DONOR = "corpus/midstream_rich_donor_threshold"
CHANGE = (("class.fair5a.weight", "800"),)


@pytest.fixture(scope="module")
def cut_log(tmp_path_factory) -> tuple[Path, Path]:
    """The cut log and its --config folder (ducc.classes and the node files only)."""
    tmp = tmp_path_factory.mktemp("read_once")
    return cut(RICH_DONOR, "rm.log", "between", tmp / "cut.log"), classes_only(RICH_DONOR, tmp / "config")


def _tables(cut_log: tuple[Path, Path]) -> dict[str, pl.DataFrame]:
    log, config = cut_log
    tables = parse([log]).tables
    tables.update(read_resources(config))
    return tables


def _true_threshold() -> int:
    """The threshold the RM ran with: the fixture's ducc.properties."""
    return bootstrap(parsed(RICH_DONOR).tables).config.fragmentation_threshold


def _once_each(assembled: list[int], tables: dict[str, pl.DataFrame]) -> None:
    assert sorted(assembled) == sorted(tables["cycles"]["cycle"].to_list()), Counter(assembled).most_common(3)


def test_explain_audits_on_the_inputs_the_threshold_inference_assembled(cut_log, monkeypatch):
    """`explain` without a stored audit audits the log up to the cycle it details: it takes over
    the inputs the threshold inference assembled for that, rather than assembling them again,
    and tells the threshold inferred, and the RM's decisions of the cycle reproduced."""
    tables = _tables(cut_log)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    took = min(c for c in tables["cycles"]["cycle"].to_list()
               if c in epochs and any(r["epoch"] == epochs[c] and r["defrag"]["actions"] for r in truth(RICH_DONOR)))
    job = tables["schedule"].filter(pl.col("cycle") == took)["job_id"].drop_nulls().min()
    assembled = count_assembled(monkeypatch)
    story = explain_job(tables, job, took)
    _once_each(assembled, tables)
    threshold = next(a for a in story.assumed if a.setting == THRESHOLD)
    assert (threshold.value, threshold.source) == (str(_true_threshold()), "inferred"), threshold
    assert story.rmref is not None and story.rmref == story.logged and not story.causes, story.causes


def test_whatif_audits_on_the_inputs_the_threshold_inference_assembled(cut_log, monkeypatch):
    """A what-if without a stored audit audits the log (rmref unchanged, its baseline) on the
    inputs the threshold inference assembled; that baseline reproduces every logged decision."""
    tables = _tables(cut_log)
    assembled = count_assembled(monkeypatch)
    result = whatif(tables, Change(CHANGE))
    _once_each(assembled, tables)
    assert result.cycles and result.unreproduced == 0, result.unreproduced_cycles
    threshold = next(a for a in result.assumed if a.setting == THRESHOLD)
    assert threshold.value == str(_true_threshold()), threshold


def test_a_first_whatif_stores_the_audit_it_runs_on_its_own_start(cut_log, tmp_path, monkeypatch, capsys):
    """`rmreplay whatif` with a cache and no audit stored yet runs the audit, and stores it, from
    the what-if's own replay start, on the inputs its threshold inference assembled; the next
    what-if reads it (the inference alone assembles the inputs then); `check` alike. The outputs
    are the same as those of a what-if audited in memory (`--no-cache`), and reproduce the log."""
    log, config = cut_log
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    tables = _tables(cut_log)
    sets = [a for key, value in CHANGE for a in ("--set", f"{key}={value}")]
    outputs = []
    for run, options in enumerate((["--no-cache"], [], [])):
        assembled = count_assembled(monkeypatch)
        out = tmp_path / f"out{run}"
        assert main(["whatif", str(log), "--config", str(config), *sets, "-o", str(out), *options]) == 0
        assert "Traceback" not in capsys.readouterr().err
        _once_each(assembled, tables)
        outputs.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
        monkeypatch.undo()
        monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    assert outputs[0] == outputs[1] == outputs[2]
    assert len(list((tmp_path / "cache").glob("*/audits/*/manifest.json"))) == 1
    assembled = count_assembled(monkeypatch)
    assert main(["check", str(log), "--config", str(config), *sets, "--no-cache"]) in (0, 1)
    _once_each(assembled, tables)
    assert json.loads((out / "report.json").read_text())["unreproduced"] == 0


def _counted(monkeypatch, name: str, modules) -> list[str]:
    """Every call of `name` (a function several modules import) from now on, by the module calling it."""
    calls: list[str] = []
    for module in modules:
        original = getattr(module, name, None)
        if original is None:  # (a module that reads it no more)
            continue

        def counted(*args, _original=original, _module=module.__name__, **kwargs):
            calls.append(_module)
            return _original(*args, **kwargs)
        monkeypatch.setattr(module, name, counted)
    return calls


def test_a_replay_start_reads_the_removals_before_the_log_and_the_logged_decisions_once(cut_log, monkeypatch):
    """The audit of the cut (its settings given): the removals taken as decided before the log
    began are read once, and so are the RM's logged decisions, though the machines' inference,
    the threshold's and the audit all read them; the audit still equals the log."""
    tables = _tables(cut_log)
    boot = bootstrap(tables)
    removals = _counted(monkeypatch, "removals_before_the_log", (held_inputs, assembly, logged, leaving))
    decisions = _counted(monkeypatch, "logged_decisions", (held_inputs, solver, start))
    result = audit(tables, boot)
    assert removals == ["replay.model.held_inputs"], removals
    assert decisions == ["replay.model.held_inputs"], decisions
    assert result.cycles and not result.divergences, result.divergences[:3]


def test_simulate_reads_the_logged_decisions_the_start_read(cut_log, monkeypatch):
    """`simulate` follows the RM's logged orders: it reads the logged decisions the replay start
    read for the machines' and the threshold's inference, not a second time, and they are the log's."""
    tables = _tables(cut_log)
    decisions = _counted(monkeypatch, "logged_decisions", (held_inputs, solver, start, simulation))
    sim = simulate(tables)
    assert decisions == ["replay.model.held_inputs"], decisions
    read = logged.logged_decisions(tables)
    assert sim.context.logged is not None and sim.context.logged.counts and sim.context.logged.counts == read.counts
    assert sim.context.logged.job_order == read.job_order and sim.context.logged.placements == read.placements


def _true_orders() -> dict[int, int]:
    """Every job's order, as the real RM held it (truth.jsonl)."""
    return {job["id"]: job["order"] for state in truth(RICH_DONOR) for job in state["jobs"]}


def test_the_work_orders_are_found_once_per_command(cut_log, tmp_path, monkeypatch, capsys):
    """Every job's order (replay.model.orders.work_orders) is found once a command: a first
    `whatif` and the audit it stores (with the machines' quanta) read the replay start's, and so
    does `explain` without a stored audit; the report and the TUI's views, which make no start,
    find them once for the machines and the shares. The orders they show are the real RM's (truth.jsonl)."""
    log, config = cut_log
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    finders = (start, orders_module, report_module, tui_data, explain_facts)
    calls = _counted(monkeypatch, "work_orders", finders)
    sets = [a for key, value in CHANGE for a in ("--set", f"{key}={value}")]
    assert main(["whatif", str(log), "--config", str(config), *sets, "-o", str(tmp_path / "whatif")]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert calls == ["replay.model.start"], calls
    tables = _tables(cut_log)
    calls.clear()
    build_report(tables)
    assert calls == ["replay.apps.report"], calls
    calls.clear()
    browse = build("cut", tables)
    assert calls == ["tui.data"], calls
    shown = browse.jobs.frame.select("job_id", "order").unique().rows()
    assert dict(shown) == _true_orders()
    calls.clear()
    job = min(_true_orders())
    story = explain_job(tables, job, int(tables["schedule"].filter(pl.col("job_id") == job)["cycle"].max()))
    assert calls == ["replay.model.start"], calls
    assert story.order == _true_orders()[job], story.order
