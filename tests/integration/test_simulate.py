"""`rmreplay simulate` on the bundled logs: the recorded workload simulated closed loop.

Identity is checked against each log's own history and against truth.jsonl (the real RM's state
after every published schedule): with nothing changed, every job holds the processes the RM gave
it in every cycle, and every job that completed completes at the same publication. A change is
checked for the direction the fair-share rules give, and every bad input for a one-line error.
"""

from __future__ import annotations

import html
import json
import textwrap
import xml.etree.ElementTree as ET

import duckdb
import pandas as pd
import polars as pl
import pytest

from replay import parse
from replay.apps.simulate.metrics import identity, measure
from replay.apps.simulate.simulation import simulate
from replay.apps.change import Change, parse_sets
from replay.cli import main
from tests.helpers import FIXTURES, LOGS, log_path, parsed, truth
from tests.integration.test_whatif import FIRST_FIT

OUTPUTS = ("report.json", "jobs.parquet", "shares.parquet", "cycles.parquet", "workload.parquet")
REPORT_KEYS = {"cycles", "set", "scheduler", "jobs", "identity", "per_class", "per_user", "preemptions",
               "defrag_takes", "utilisation", "fairness"}
JOB_KEYS = {f"{m}_{s}" for m in ("finish", "turnaround", "wait") for s in ("logged", "baseline", "sim")}


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _truth_held(name: str) -> dict[tuple[int, int], int]:
    """(cycle, job) -> processes the real RM left the job (its shares not being removed)."""
    return {(rec["cycle"], j["id"]): sum(not s["pending_remove"] for s in j["shares"])
            for rec in truth(name) for j in rec["jobs"] if not j["refused"]}


def _truth_completed(name: str) -> dict[int, float]:
    """job -> seconds from the first cycle to the first schedule after which the RM held it completed."""
    records = truth(name)
    first: dict[int, float] = {}
    for rec in records:
        for j in rec["jobs"]:
            if j["completed"] and j["type"] == "Job":
                first.setdefault(j["id"], (rec["t"] - records[0]["t"]) / 1000.0)
    return first


@pytest.mark.parametrize("name, level", LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def test_identity_reproduces_the_recorded_history(name, level):
    """Nothing changed: each job holds in each cycle what truth says the RM gave it, each job
    truth saw complete completes at the same publication, and report.json's identity figures
    (median <= 2%, p90 <= 10% of the logged turnaround, shares >= 95% of job-cycles) hold."""
    tables = parsed(name, level).tables
    sim = simulate(tables)
    assert sim.sim is sim.baseline
    held = {(c, j): p for c, j, p in sim.baseline.held}
    expected = _truth_held(name)
    assert {k: held.get(k, 0) for k in expected} == expected
    completed = _truth_completed(name)
    assert {j: sim.baseline.finish.get(j) for j in completed} == completed
    ident = identity(measure(tables, sim))
    assert ident["shares_match"] >= 0.95
    if completed:  # a log whose jobs complete: the acceptance figures
        assert ident["jobs"] >= len(completed)
        assert ident["finish_error_median_pct"] <= 2.0 and ident["finish_error_p90_pct"] <= 10.0


def test_processes_added_at_once_start_in_the_order_the_rm_numbered_them():
    """corpus/midstream_unnamed_in_a_later_band (2.1.0): at 482 s the RM gives job 4 six processes at once
    (share ids 18 to 24), on hosts rmref's What Of meets in another order (node IPs the log never prints;
    the loop takes the log's ids). The item times are fitted to the processes in share-id order (the RM
    numbers shares as it creates them, and of two slots free at once the older process takes the next
    item): started in What Of's order instead, job 4's last items ran past the 660 s publication, and jobs
    1, 4 and 5 each completed one publication late. Ground truth: truth.jsonl's holdings and completions."""
    name = "corpus/midstream_unnamed_in_a_later_band"
    sim = simulate(parsed(name).tables)
    completed = _truth_completed(name)
    assert {1, 4, 5} <= completed.keys()
    assert {j: sim.baseline.finish.get(j) for j in completed} == completed
    held = {(c, j): p for c, j, p in sim.baseline.held}
    expected = _truth_held(name)
    assert {k: held.get(k, 0) for k in expected} == expected


def test_a_purge_before_the_caps_and_the_printed_eligible_order():
    """releases/2.0.0/eligible-order (2.0.0): at cycle 6 NodePool.disable purges job 6's three processes on
    np109 before the caps, and getPrjCap projects from the 97 left (`NTh 388 ... return 97`); read from all
    100, job 6 kept 98 and job 2 got 6 where the RM gave it 7. At cycle 7 takeFromTheRich meets n38, n05
    and n20 (alike but for their IPs) in the order its `Eligible machines:` line prints, which the closed
    loop follows where it holds what the log's RM held, as the audit does: job 10 takes share 8 on n38 and
    job 9 job 2's two processes on n05 (before, job 2 kept 5 where the RM left it 4). Ground truth:
    truth.jsonl's holdings, cycle by cycle."""
    name = "releases/2.0.0/eligible-order"
    sim = simulate(parsed(name).tables)
    held = {(c, j): p for c, j, p in sim.baseline.held}
    expected = _truth_held(name)
    assert (expected[(6, 6)], expected[(6, 2)], expected[(7, 2)]) == (97, 7, 4)
    assert {k: held.get(k, 0) for k in expected} == expected


def test_work_still_initializing_at_the_log_s_end_stays_capped_to_the_end():
    """releases/2.0.0/free-before-clearing: job 2 was still initializing at the last cycle, capped at
    2 processes; simulated with an initialization of exactly the 92 s last shown, it was running
    there and expanded to 4, moving job 1's and job 3's holdings too. Every cycle as truth.jsonl."""
    name = "releases/2.0.0/free-before-clearing"
    sim = simulate(parsed(name).tables)
    held = {(c, j): p for c, j, p in sim.baseline.held}
    expected = _truth_held(name)
    assert expected[(38, 2)] == 2 and held.get((38, 2)) == 2
    assert {k: held.get(k, 0) for k in expected} == expected


# the real RM of each release on one workload (fixtures/releases): a release's own rules hold
RELEASE_LOGS = [f"releases/{r}/{n}" for r in ("2.0.0", "2.0.1", "2.2.2", "3.0.0") for n in ("a_tiny", "gen12-004")]


@pytest.mark.parametrize("name", RELEASE_LOGS)
def test_identity_holds_under_the_release_that_wrote_the_log(name):
    """Before 2.1.0 a job with no work-item time yet is not capped as initializing (rmref.behaviours
    init_wait_without_item_time): the simulated RM expands it as the log's did, cycle by cycle."""
    tables = parsed(name).tables
    sim = simulate(tables)
    held = {(c, j): p for c, j, p in sim.baseline.held}
    expected = _truth_held(name)
    assert {k: held.get(k, 0) for k in expected} == expected
    completed = _truth_completed(name)
    assert {j: sim.baseline.finish.get(j) for j in completed} == completed


@pytest.mark.slow
def test_i_mega24_identity_and_a_low_class_weight_raised():
    """The 2,500-cycle mega log: the baseline reproduces it (completions and shares, against truth
    too); raising class low's weight (50 -> 400) lowers low's mean turnaround and raises normal's,
    with the logged history beside both."""
    tables = parsed("i_mega24").tables
    sim = simulate(tables, Change(parse_sets(["class.low.weight=400"])))
    m = measure(tables, sim)
    ident = identity(m)
    assert ident["jobs"] >= 150 and ident["finish_error_median_pct"] <= 2.0 and ident["finish_error_p90_pct"] <= 10.0
    assert ident["shares_match"] >= 0.95
    completed = _truth_completed("i_mega24")
    assert sum(sim.baseline.finish.get(j) == t for j, t in completed.items()) >= 0.95 * len(completed)
    low, normal = (next(v for k, v in _classes(m).items() if k == c) for c in ("low", "normal"))
    assert low["mean_turnaround_sim"] < low["mean_turnaround_baseline"] == low["mean_turnaround_logged"]
    assert normal["mean_turnaround_sim"] > normal["mean_turnaround_baseline"]


def _classes(m) -> dict:
    from replay.apps.simulate.metrics import report

    return report(m)["per_class"]


def test_the_cli_writes_the_contract_and_writes_it_the_same_way_twice(tmp_path, capsys):
    out = tmp_path / "out"
    code, text, _ = _run(capsys, "simulate", str(log_path("e_initcap_prediction")), "-o", str(out))
    assert code == 0 and "identity" in text
    rep = json.loads((out / "report.json").read_text())
    assert REPORT_KEYS <= set(rep) and rep["set"] == {} and rep["scheduler"] is None
    assert all(JOB_KEYS | {"job_id", "user", "class", "submit"} <= set(j) for j in rep["jobs"])
    assert set(rep["identity"]) >= {"jobs", "finish_error_median_pct", "finish_error_p90_pct", "shares_match"}
    for key in ("preemptions", "defrag_takes", "utilisation", "fairness"):
        assert set(rep[key]) == {"logged", "baseline", "sim"}
        assert rep[key]["logged"] == rep[key]["baseline"] == rep[key]["sim"]  # identity: no change
    for cls in rep["per_class"].values():
        means = {f"mean_{m}_{s}" for m in ("turnaround", "wait", "shares") for s in ("logged", "baseline", "sim")}
        assert means <= set(cls)
    first = {f: (out / f).read_bytes() for f in OUTPUTS}
    assert _run(capsys, "simulate", str(log_path("e_initcap_prediction")), "-o", str(out))[0] == 0
    assert {f: (out / f).read_bytes() for f in OUTPUTS} == first
    # the tables load in polars, duckdb and pandas, and say what report.json says
    jobs = pl.read_parquet(out / "jobs.parquet")
    assert jobs["job_id"].to_list() == [j["job_id"] for j in rep["jobs"]]
    n = duckdb.connect().execute(f"select count(distinct cycle) from '{out}/shares.parquet'").fetchall()[0][0]
    assert n <= rep["cycles"] == len(truth("e_initcap_prediction"))
    shares = pd.read_parquet(out / "shares.parquet")
    assert (shares["processes_logged"] == shares["processes_baseline"]).all()


def test_a_cut_log_projects_the_remaining_work_at_the_observed_rate_and_says_so(tmp_path, capsys):
    """a_tiny stops while its three jobs run: each is simulated with its remaining items at the
    mean item time the Orchestrator last reported, and the output says so."""
    out = tmp_path / "out"
    code, text, _ = _run(capsys, "simulate", str(log_path("a_tiny")), "-o", str(out))
    assert code == 0 and "run past the log's end" in " ".join(text.split())
    rep = json.loads((out / "report.json").read_text())
    assert rep["workload"]["projected"] == [1, 2, 3] and rep["identity"]["jobs"] == 0
    assert all(j["finish_baseline"] is None for j in rep["jobs"])
    tables = parsed("a_tiny").tables
    last = (tables["job_events"].filter((pl.col("event") == "update") & (pl.col("mean") > 0)).sort("line")
            .group_by("job_id").agg(pl.col("mean").last(), pl.col("total").last(), pl.col("completed").last()))
    work = pl.read_parquet(out / "workload.parquet").filter(pl.col("kind") == "work")
    for job, mean, total, done in last.iter_rows():
        row = work.filter(pl.col("job_id") == job).row(0, named=True)
        assert row["item_ms"] == mean and row["items"] == total
        assert f"{total - done} item(s) left, projected at {mean:.0f} ms" in row["note"]


def test_a_quantum_change_and_a_phase_plug_in_run_end_to_end(tmp_path, capsys):
    """The quantum doubled (every order recomputed) and a first-fit What Of: both simulate, change
    what the jobs hold, and leave the baseline reproducing the log."""
    quantum = parsed("c_nodepools").tables["nodepools"]["quantum"].drop_nulls()[0]
    plugin = tmp_path / "first_fit.py"
    plugin.write_text(FIRST_FIT)
    for name, args in (("c_nodepools", ["--set", f"ducc.rm.share.quantum={2 * quantum}"]),
                       ("d_fragmentation", ["--scheduler", f"{plugin}:PHASES"])):
        out = tmp_path / name
        code, _, _ = _run(capsys, "simulate", str(log_path(name)), *args, "-o", str(out))
        assert code == 0
        rep = json.loads((out / "report.json").read_text())
        assert rep["changed"] and rep["identity"]["shares_match"] == 1.0
        shares = pl.read_parquet(out / "shares.parquet")
        assert (shares["processes_sim"] != shares["processes_baseline"]).any()


def test_an_edited_workload_is_simulated_instead_of_the_log_s(tmp_path, capsys):
    """workload.parquet back in as --workload gives the same simulation; with a job's submission
    moved 200 s later, that job finishes later."""
    log, out = str(log_path("e_initcap_prediction")), tmp_path / "out"
    assert _run(capsys, "simulate", log, "-o", str(out))[0] == 0
    first = json.loads((out / "report.json").read_text())
    again = tmp_path / "again"
    assert _run(capsys, "simulate", log, "--workload", str(out / "workload.parquet"), "-o", str(again))[0] == 0
    second = json.loads((again / "report.json").read_text())
    assert second["workload"].pop("from") == str(out / "workload.parquet")
    first["workload"].pop("from")
    assert second == first
    edited = tmp_path / "edited.parquet"
    pl.read_parquet(out / "workload.parquet").with_columns(
        pl.when(pl.col("job_id") == 4).then(pl.col("time") + 200).otherwise(pl.col("time")).alias("time")
    ).write_parquet(edited)
    moved = tmp_path / "moved"
    assert _run(capsys, "simulate", log, "--workload", str(edited), "-o", str(moved))[0] == 0
    job = next(j for j in json.loads((moved / "report.json").read_text())["jobs"] if j["job_id"] == 4)
    before = next(j for j in first["jobs"] if j["job_id"] == 4)
    assert job["finish_baseline"] > before["finish_baseline"]


RAISES = textwrap.dedent('''
    from rmref import Phases
    def broken(inp, counts):
        raise ZeroDivisionError("no room")
    PHASES = Phases(what_of=broken)
''')
GREEDY = textwrap.dedent('''
    from rmref import Phases, Placement
    def everywhere(inp, counts):
        """Ten processes of every job on the first machine, whatever it holds."""
        first = sorted(m.name for m in inp.machines)[0]
        return tuple(Placement(w.job_id, first, w.order) for w in inp.work for _ in range(10))
    PHASES = Phases(what_of=everywhere)
''')


@pytest.mark.parametrize("args, needle", [
    (["--set", "ducc.rm.no.such=1"], "not a setting"),
    (["--workload", "MISSING_COLUMNS"], "missing column(s) item_ms"),
    (["--workload", "NO_FILE"], "no such file"),
    (["--scheduler", "RAISES"], "cycle 1: the --scheduler what_of phase"),
    (["--scheduler", "GREEDY"], "cycle 1: the scheduler over-allocates machine"),
])
def test_bad_input_is_a_one_line_error(tmp_path, capsys, args, needle):
    log = str(log_path("a_tiny"))
    if "MISSING_COLUMNS" in args:
        assert _run(capsys, "simulate", log, "-o", str(tmp_path / "w"))[0] == 0
        broken = tmp_path / "broken.parquet"
        pl.read_parquet(tmp_path / "w" / "workload.parquet").drop("item_ms").write_parquet(broken)
        args = ["--workload", str(broken)]
    elif "NO_FILE" in args:
        args = ["--workload", str(tmp_path / "none.parquet")]
    elif args[0] == "--scheduler":
        plugin = tmp_path / "plugin.py"
        plugin.write_text(RAISES if args[1] == "RAISES" else GREEDY)
        args = ["--scheduler", f"{plugin}:PHASES"]
    code, _, err = _run(capsys, "simulate", log, *args, "-o", str(tmp_path / "out"))
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err


def test_the_greedy_plug_in_is_stopped_naming_the_machine(tmp_path, capsys):
    plugin = tmp_path / "greedy.py"
    plugin.write_text(GREEDY)
    first = min(set(parsed("a_tiny").tables["nodes"]["host"].drop_nulls()))
    _, _, err = _run(capsys, "simulate", str(log_path("a_tiny")), "--scheduler", f"{plugin}:PHASES", "-o",
                     str(tmp_path / "out"))
    assert f"machine {first}" in err


def test_check_simulate_gates_and_junit(tmp_path, capsys):
    """e_initcap_prediction: class high's weight cut to 1 makes its one job wait (its turnaround
    grows 170 -> 200 s) and preempts less; the gates see both."""
    log, junit = str(log_path("e_initcap_prediction")), tmp_path / "junit.xml"
    change = ["--set", "class.high.weight=1"]
    assert _run(capsys, "check", "--simulate", log, *change)[0] == 2  # no threshold given
    code, text, _ = _run(capsys, "check", "--simulate", log, *change, "--max-turnaround-increase", "10",
                         "--max-preemptions", "100", "--junit", str(junit))
    assert code == 1 and "FAIL" in text and "+17.6%" in text
    root = ET.parse(junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["class high turnaround increase <= 10%"].find("failure") is not None
    assert cases["class normal turnaround increase <= 10%"].find("failure") is None
    assert cases["preemptions <= 100"].find("failure") is None
    assert root.get("failures") == "1" and [s.get("name") for s in root.iter("testsuite")] == [log]
    assert _run(capsys, "check", "--simulate", log, *change, "--max-turnaround-increase", "20")[0] == 0
    assert _run(capsys, "check", "--simulate", log, *change, "--max-preemptions", "5")[0] == 1


def test_report_adds_the_simulation_section(tmp_path, capsys):
    log, out = str(log_path("b_classes")), tmp_path / "sim"
    assert _run(capsys, "simulate", log, "--set", "class.low.weight=400", "-o", str(out))[0] == 0
    html_path = tmp_path / "report.html"
    assert _run(capsys, "report", log, "--no-audit", "--simulation", str(out), "-o", str(html_path))[0] == 0
    html = html_path.read_text()
    for plot in ("plot-sim-users-logged", "plot-sim-users-sim", "plot-sim-preemptions"):
        assert f'id="{plot}"' in html
    assert 'id="simulation"' in html and "<script" not in html and "src=" not in html
    code, _, err = _run(capsys, "report", log, "--no-audit", "--simulation", str(tmp_path), "-o", str(html_path))
    assert code == 2 and "not a `rmreplay simulate -o` directory" in err


ALLOTTED = "corpus/midstream_user_allotment_unknown"


def test_a_cut_log_names_the_user_allotment_it_takes_as_the_global_one(tmp_path, capsys):
    """corpus/midstream_user_allotment_unknown (oracle seed 11313, shrunk) cut mid-stream and simulated with
    ducc.classes only: dan's deferrals are the log's only allotment lines (8 GB, read as the global one),
    and no line shows user ben's. The real RM granted ben's 44 GB reservation (job 2; truth.jsonl: it holds
    a process), as its ducc.users sets no allotment for ben and ducc.properties no global one; the
    simulation defers it against 8 GB. report.json's 'assumed' and the console name ben's allotment as
    taken, as the audit skips that count for it; with the fixture's ducc.users read, none is named."""
    from tests.midstream import classes_only, cut

    assert max(held for (_c, job), held in _truth_held(ALLOTTED).items() if job == 2) >= 1
    real = (FIXTURES / ALLOTTED / "resources" / "ducc.users").read_text()
    assert "ben" not in real
    log = cut(ALLOTTED, "rm.log", "between", tmp_path / "cut.log")
    config = classes_only(ALLOTTED, tmp_path / "config")
    code, text, _ = _run(capsys, "simulate", str(log), "--config", str(config), "-o", str(tmp_path / "out"))
    assert code == 0
    said = [a for a in json.loads((tmp_path / "out" / "report.json").read_text())["assumed"]["settings"]
            if "allotment" in a["setting"] and a["setting"].startswith("user ")]
    assert [(a["setting"], a["value"]) for a in said] == [("user ben's allotment", "8 GB (the global one)")], said
    assert "job 2" in said[0]["evidence"] and "ducc.users" in said[0]["evidence"]
    assert "user ben's allotment = 8 GB (the global one)" in text
    # with ducc.users beside ducc.classes, nothing about the users' allotments is taken
    (config / "ducc.users").write_text(real)
    code, text, _ = _run(capsys, "simulate", str(log), "--config", str(config), "-o", str(tmp_path / "given"))
    assert code == 0 and "user ben's allotment" not in text
    assert "user ben" not in (tmp_path / "given" / "report.json").read_text()


@pytest.mark.parametrize("name, config", [("corpus/midstream_rich_donor_threshold", None),
                                          ("cuts/leaving_or_cleared", "resources")])
def test_the_html_report_says_which_projected_rates_were_assumed(tmp_path, capsys, name, config):
    """The report's simulation section said every job run past the log's end was projected "at the rate
    observed". A job whose jobUpdate lines (the log) show no item completed has no observed rate: its
    item time is assumed (corpus/midstream_rich_donor_threshold: none of the log's jobs completed one;
    the leaving_or_cleared cut: the median of the jobs that did), and the section names those jobs."""
    log = FIXTURES / name / "rm.log.gz"
    args = ["--config", str(FIXTURES / name / config)] if config else []
    out, page = tmp_path / "sim", tmp_path / "report.html"
    assert _run(capsys, "simulate", str(log), *args, "-o", str(out))[0] == 0
    assert _run(capsys, "report", str(log), *args, "--no-audit", "--simulation", str(out), "-o", str(page))[0] == 0
    text = html.unescape(page.read_text())
    projected = json.loads((out / "report.json").read_text())["workload"]["projected"]
    events = parse([log]).tables["job_events"]
    done = set(events.filter(pl.col("completed") > 0)["job_id"].to_list())
    unseen = [j for j in projected if j not in done]
    assert unseen and "the rate observed" not in text
    if len(unseen) == len(projected):
        assert "projected at an item time assumed (no job of the log completed one)" in text
    else:
        assert (f"or, for {len(unseen)} of them that completed no item in the log (job(s) "
                f"{', '.join(map(str, unseen))}), an item time assumed (the median of the log's jobs)") in text
