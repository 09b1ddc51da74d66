"""`rmreplay whatif` and `rmreplay check` on the bundled logs.

The identity what-if is checked against the log itself (rmref's chained decisions and the shares
they leave each job must be the logged ones), a raised class weight against the direction the
fair-share rules give, and a developer's phase through the plug-in interface end to end.
"""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import audit
from replay.apps.change import Change, parse_sets
from replay.apps.whatif import CHANGES_SCHEMA, whatif
from replay.cli import main
from replay.model.start import bootstrap
from tests.helpers import LOGS, SCENARIOS, log_path, parsed, truth

FIGURES = ("preemptions", "evictions", "defrag_takes", "fairness")  # each {logged, baseline, whatif}

FIRST_FIT = textwrap.dedent('''
    """A trivial What Of: first fit on machines in name order, in the class's own nodepool."""
    from rmref import Phases, Placement


    def first_fit(inp, counts):
        """Place each job's missing processes on the first machines (by name) with room."""
        free = {m.name: m.order for m in inp.machines if m.online and not m.blacklisted}
        for w in inp.work:
            for s in w.shares:
                if s.host in free:
                    free[s.host] -= s.order
        placed = []
        for w in inp.work:
            pool = next((c.nodepool for c in inp.classes if c.name == w.class_name), None)
            need = counts.get(w.job_id, 0) - sum(1 for s in w.shares if not s.pending_removal)
            for m in sorted(inp.machines, key=lambda m: m.name):
                while need > 0 and m.nodepool == pool and free.get(m.name, 0) >= w.order:
                    free[m.name] -= w.order
                    placed.append(Placement(w.job_id, m.name, w.order))
                    need -= 1
        return tuple(placed)


    PHASES = Phases(what_of=first_fit)
''')


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


@pytest.mark.parametrize("name, level", LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def test_identity_changes_nothing_and_reproduces_the_log(name, level):
    """No change: no cycle changes, and not by construction: rmref's chained decisions equal every
    logged one (unreproduced 0), and the shares they leave each user, the preemptions they make,
    equal what the RM published."""
    tables = parsed(name, level).tables
    rep = whatif(tables).report()
    assert rep["cycles"] == tables["cycles"].height
    assert (rep["cycles_changed"], rep["jobs_changed"], rep["unreproduced"]) == (0, 0, 0)
    for user, v in rep["per_user"].items():
        assert v["mean_shares_whatif"] == v["mean_shares_logged"], user
    assert rep["preemptions"]["whatif"] == rep["preemptions"]["logged"]
    assert rep["fairness"]["whatif"] == rep["fairness"]["logged"]
    assert sum(v["mean_shares_logged"] for v in rep["per_user"].values()) > 0


# (the last two: defragmentation's ties on the nodes' hashes, settled by the order the log printed)
@pytest.mark.parametrize("name", ["b_classes", "c_nodepools", "g_reservations_services",
                                  "releases/2.0.0/eligible-order", "releases/2.0.0/free-before-clearing"])
def test_setting_the_values_the_log_has_changes_nothing(name):
    """--set with the log's own quantum, threshold and class weights goes through the change path
    (orders recomputed from memory, class attributes copied into cap inputs) and changes nothing."""
    boot = bootstrap(parsed(name).tables)
    sets = [f"ducc.rm.share.quantum={boot.config.quantum_gb}",
            f"ducc.rm.fragmentation.threshold={boot.config.fragmentation_threshold}"]
    sets += [f"class.{c.name}.weight={c.weight}" for c in boot.classes]
    sets += [f"class.{c.name}.initialization-cap={c.init_cap}" for c in boot.classes]
    change = Change(parse_sets(sets))
    assert not change.identity
    rep = whatif(parsed(name).tables, change).report()
    assert (rep["cycles_changed"], rep["unreproduced"]) == (0, 0)


def test_raising_a_class_weight_raises_its_users_shares():
    """b_classes: ben is the only user of class low (weight 50). At weight 400 (urgent's), the
    weighted fair share gives low eight times its share of the pool: ben's mean rises, the
    users of the classes that lose weight relatively (high, urgent) lose."""
    tables = parsed("b_classes").tables
    users_of_low = set(tables["jobs"].filter(pl.col("class") == "low")["user"].unique())
    assert users_of_low == {"ben"}
    result = whatif(tables, Change(parse_sets(["class.low.weight=400"])))
    rep = result.report()
    ben = rep["per_user"]["ben"]
    assert ben["mean_shares_whatif"] > ben["mean_shares_logged"]
    for user in ("dan", "eve"):  # classes high and urgent
        assert rep["per_user"][user]["mean_shares_whatif"] < rep["per_user"][user]["mean_shares_logged"]
    assert rep["cycles_changed"] > 0 and rep["decisions_changed"]["counts"] > 0
    # the How Much count of ben's jobs never goes down
    counts = [r for r in result.changes if r[2] == "counts"]
    ben_jobs = set(tables["jobs"].filter(pl.col("user") == "ben")["job_id"])
    assert all(json.loads(w or "0") >= json.loads(lv or "0") for c, j, _, lv, _b, w in counts if j in ben_jobs)


def test_a_weight_cut_lowers_the_class_and_the_cli_writes_the_contract(tmp_path, capsys):
    out = tmp_path / "out"
    code, text = _run(capsys, "whatif", str(log_path("b_classes")), "--set", "class.urgent.weight=1", "-o", str(out))
    assert code == 0 and "cycles" in text
    rep = json.loads((out / "report.json").read_text())
    for key in ("cycles", "cycles_changed", "jobs_changed", "baseline_divergent_cycles", "unreproduced", "per_user",
                "preemptions", "evictions", "defrag_takes", "fairness"):
        assert key in rep
    for figure in FIGURES:
        assert set(rep[figure]) == {"logged", "baseline", "whatif"}
    assert all(set(v) == {"mean_shares_logged", "mean_shares_baseline", "mean_shares_whatif"}
               for v in rep["per_user"].values())
    eve = rep["per_user"]["eve"]  # urgent's only user
    assert eve["mean_shares_whatif"] < eve["mean_shares_logged"]
    changes = pl.read_parquet(out / "changes.parquet")
    assert changes.schema == pl.Schema(CHANGES_SCHEMA)
    assert changes["cycle"].n_unique() == rep["cycles_changed"] > 0
    assert changes["job_id"].n_unique() == rep["jobs_changed"]
    first = (out / "changes.parquet").read_bytes(), (out / "report.json").read_bytes()
    _run(capsys, "whatif", str(log_path("b_classes")), "--set", "class.urgent.weight=1", "-o", str(out))
    assert ((out / "changes.parquet").read_bytes(), (out / "report.json").read_bytes()) == first


@pytest.mark.parametrize("name", ["c_nodepools", "d_fragmentation"])
def test_a_developers_what_of_through_the_plug_in_interface(tmp_path, capsys, name):
    """First fit instead of the RM's HashMap walk: How Much and the caps cannot change (they run
    before What Of), placements do, and every what-if placement is first fit's."""
    plugin = tmp_path / "first_fit.py"
    plugin.write_text(FIRST_FIT)
    out = tmp_path / "out"
    code, _ = _run(capsys, "whatif", str(log_path(name)), "--scheduler", f"{plugin}:PHASES", "-o", str(out))
    assert code == 0
    rep = json.loads((out / "report.json").read_text())
    assert rep["scheduler"] == f"{plugin}:PHASES"
    assert rep["decisions_changed"]["caps"] == rep["decisions_changed"]["counts"] == 0
    assert rep["decisions_changed"]["placements"] > 0
    hosts = set(parsed(name).tables["nodes"]["host"].drop_nulls())
    changes = pl.read_parquet(out / "changes.parquet")
    for row in changes.filter(pl.col("decision") == "placements").iter_rows(named=True):
        placed = json.loads(row["whatif"] or "[]")
        assert {h for h, _ in placed} <= hosts
        assert [h for h, _ in placed] == sorted(h for h, _ in placed)  # machines taken in name order


def test_scheduler_as_a_module_and_as_a_dict(tmp_path, capsys, monkeypatch):
    (tmp_path / "my_sched.py").write_text(FIRST_FIT + "\nBY_NAME = {'what_of': first_fit}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    reports = []
    for spec in ("my_sched:PHASES", "my_sched:BY_NAME"):
        out = tmp_path / spec.replace(":", "_")
        assert _run(capsys, "whatif", str(log_path("a_tiny")), "--scheduler", spec, "-o", str(out))[0] == 0
        reports.append(json.loads((out / "report.json").read_text()))
    assert reports[0]["cycles_changed"] == reports[1]["cycles_changed"] > 0


@pytest.mark.parametrize("args, needle", [
    (["--set", "ducc.rm.no.such=1"], "not a setting"),
    (["--set", "class.nosuch.weight=3"], "no class"),
    (["--set", "class.normal.colour=3"], "unknown class attribute"),
    (["--set", "class.normal.weight=heavy"], "weight=heavy"),
    (["--set", "novalue"], "KEY=VALUE"),
    (["--scheduler", "no_such_module_x:P"], "cannot import"),
    (["--scheduler", "rmref:job_caps"], "expected an rmref.Phases"),
])
def test_bad_changes_are_one_line_usage_errors(tmp_path, capsys, args, needle):
    code = main(["whatif", str(log_path("a_tiny")), *args, "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1


def test_check_gate_and_junit(tmp_path, capsys):
    """Identity passes with 0 allowed; a weight change fails unless enough cycles are allowed;
    the JUnit file has one testsuite per log."""
    logs = [str(log_path("a_tiny")), str(log_path("b_classes"))]
    junit = tmp_path / "junit.xml"
    code, text = _run(capsys, "check", *logs, "--junit", str(junit))
    assert code == 0 and text.count("PASS") == 2
    root = ET.parse(junit).getroot()
    assert [s.get("name") for s in root.iter("testsuite")] == logs
    assert root.get("failures") == "0"

    change = ["--set", "class.low.weight=400"]
    code, text = _run(capsys, "check", logs[1], *change, "--junit", str(junit))
    assert code == 1 and "FAIL" in text
    failure = ET.parse(junit).getroot().find("testsuite/testcase/failure")
    assert failure is not None and "cycles change" in failure.get("message")
    changed = whatif(parsed("b_classes").tables, Change(parse_sets(change[1:]))).cycles_changed
    assert _run(capsys, "check", logs[1], *change, "--max-changed-cycles", str(changed))[0] == 0
    assert _run(capsys, "check", logs[1], *change, "--max-changed-cycles", str(changed - 1))[0] == 1


def _figures(rep: dict, side: str) -> dict:
    """Every figure of a what-if report for one side (logged, baseline, whatif)."""
    out = {figure: rep[figure][side] for figure in FIGURES}
    out.update({user: v[f"mean_shares_{side}"] for user, v in rep["per_user"].items()})
    return out


@pytest.mark.parametrize("name, level", LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def test_no_change_reports_the_baseline_on_every_figure(name, level):
    """Without --set the what-if is rmref unchanged: baseline and what-if agree on every figure,
    and so they do when a change that changes nothing (the log's own quantum) takes the change
    path (each cycle scheduled twice, each side tallied from its own run)."""
    tables = parsed(name, level).tables
    rep = whatif(tables).report()
    assert _figures(rep, "whatif") == _figures(rep, "baseline")
    assert rep["cycles_changed"] == 0 and rep["baseline_divergent_cycles"] == rep["unreproduced"] == 0
    same = Change(parse_sets([f"ducc.rm.share.quantum={bootstrap(tables).config.quantum_gb}"]))
    assert not same.identity
    rep = whatif(tables, same).report()
    assert _figures(rep, "whatif") == _figures(rep, "baseline")
    assert rep["cycles_changed"] == 0


@pytest.mark.parametrize("name, level", LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def test_preemptions_are_the_shares_the_rm_took_once_each(name, level):
    """truth.jsonl lists every share the RM preempted (a share pending removal is listed again in
    each cycle until the Orchestrator confirms it); those on live hosts are the scheduler's own
    preemptions (the others went with a dead node). Logged and baseline count each share once."""
    taken = set()
    for cyc in truth(name):
        online = {n["name"] for n in cyc["nodes"] if n["online"]}
        for job in cyc["jobs"]:
            hosts = {s["id"]: s["host"] for s in job["shares"]}
            taken |= {(job["id"], sid) for sid in job["preempted"] if hosts.get(sid) in online}
    rep = whatif(parsed(name, level).tables).report()
    assert rep["preemptions"]["logged"] == rep["preemptions"]["baseline"] == len(taken)
    assert rep["evictions"]["logged"] + rep["defrag_takes"]["logged"] == len(taken)


def test_the_fixtures_take_shares_both_ways():
    """The test above covers both figures: several fixtures have shares taken by doEvictions and
    by defragmentation."""
    reports = [whatif(parsed(name).tables).report() for name in SCENARIOS]
    assert sum(r["evictions"]["logged"] > 0 and r["defrag_takes"]["logged"] > 0 for r in reports) >= 3


def _tampered(tmp_path):
    """a_tiny with one logged decision the rules cannot give: bob's actual cap 7 in cycle 2."""
    lines = log_path("a_tiny").read_text().splitlines(keepends=True)
    target = next(i for i, line in enumerate(lines) if "initJobCap  bob O 3 Base cap: 100" in line)
    lines[target] = lines[target].replace("actual cap 1", "actual cap 7")
    log = tmp_path / "rm.log"
    log.write_text("".join(lines))
    return log


def test_the_baselines_own_divergences_are_printed_and_counted_against(tmp_path, capsys):
    """rmref unchanged differs from a tampered log in one cycle (the audit's count too): whatif
    and check say so even when no cycle changes; the change is counted against the baseline."""
    log = _tampered(tmp_path)
    assert not audit(parsed("a_tiny").tables).divergences
    tampered = parse([log]).tables
    audited = {d.cycle for d in audit(tampered).divergences}
    assert len(audited) == 1 and whatif(tampered).unreproduced_cycles == audited
    sentence = "rmref unchanged already differs from the log in 1 of 20 cycles (1 decision unreproduced"
    code, text = _run(capsys, "whatif", str(log), "-o", str(tmp_path / "out"))
    rep = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 0 and (rep["baseline_divergent_cycles"], rep["unreproduced"], rep["cycles_changed"]) == (1, 1, 0)
    assert sentence in text and "changes are counted against it" in text
    junit = tmp_path / "junit.xml"
    code, text = _run(capsys, "check", str(log), "--junit", str(junit))
    assert code == 0 and "PASS" in text and sentence in text
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert (props["baseline_divergent_cycles"], props["unreproduced"]) == ("1", "1")


def test_the_console_shows_decisions_in_words(tmp_path, capsys):
    """Each changed decision printed is the changes.parquet row in words: no JSON, no None."""
    out = tmp_path / "out"
    code, text = _run(capsys, "whatif", str(log_path("b_classes")), "--set", "class.low.weight=400", "-o", str(out),
                      "--show", "1000")
    assert code == 0
    from replay.apps.whatif import change_text

    frame = pl.read_parquet(out / "changes.parquet")
    rows = frame.drop("epoch").rows()
    epoch_of = dict(frame.select("cycle", "epoch").iter_rows())
    printed = [line.strip() for line in text.splitlines() if line.startswith("  cycle ")]
    assert printed == [change_text(r, epoch_of) for r in rows] and len(printed) > 100
    assert {r[2] for r in rows} >= {"counts", "placements", "evictions", "needy"}
    assert "None" not in text and "[[" not in text and '["' not in text
    assert "rmref unchanged reproduces every logged decision (0 unreproduced)" in text


def test_check_junit_refuses_a_file_it_did_not_write(tmp_path, capsys):
    """`check --junit FILE` protects FILE as `report -o` does: an unrelated file is refused (exit 2,
    left as it was) before any work, replaced with --force; a JUnit file check wrote is rewritten."""
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    log = str(log_path("a_tiny"))
    code, text = _run(capsys, "check", log, "--junit", str(notes))
    assert code == 2 and notes.read_text() == "my notes\n"
    assert _run(capsys, "check", log, "--junit", str(notes), "--force")[0] == 0
    assert ET.parse(notes).getroot().get("name") == "rmreplay check"
    assert _run(capsys, "check", log, "--junit", str(notes))[0] == 0  # now rmreplay's: rewritten
