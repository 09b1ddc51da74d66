"""The real Java RM in the loop (replay.javarm): `rm build`, `simulate --rm java:SRC`, `--vs java:SRC2`.

Ground truth: the bundled log itself (the Java RM of the log's release, given the log's workload,
must hold what the log shows job-cycle by job-cycle), and for `--vs` the log's own record of the
first cycle where a job grew by more than one process (the decision the patch changes). Skips
without a JDK (and its jars) or the upstream mirror; one trunk build (and one patched) per run,
cached in a temporary RMREPLAY_CACHE.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from replay.cli import main
from replay.javarm.build import MODULES, mirror
from replay.javarm.harness import missing_packages
from replay.parsing.sources import InputError
from tests.helpers import log_path, parsed, scenario

SCHEDULER = "uima-ducc-rm/src/main/java/org/apache/uima/ducc/rm/scheduler/RmJob.java"
DOUBLING = "actual_cap = Math.min(potential_cap, currentResources * 2);"
BY_ONE = "actual_cap = Math.min(potential_cap, currentResources + 1);"


def _run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_rm_build_bad_tree_and_no_jdk(tmp_path, capsys, monkeypatch):
    """A directory that is no DUCC tree, and a machine with no javac: one line each, exit 2."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    code, _out, err = _run(capsys, "rm", "build", str(tmp_path))
    assert code == 2 and "not a DUCC source tree" in err and len(err.strip().splitlines()) == 1
    tree = tmp_path / "tree"
    for rel in ("pom.xml", "src/main/resources/default.ducc.properties", "src/main/resources/ducc.classes",
                SCHEDULER.replace("RmJob", "NodepoolScheduler"), *(f"{m}/src/main/java/X.java" for m in MODULES)):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("<version>3.0.0</version>\n" if rel == "pom.xml" else "")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    code, _out, err = _run(capsys, "rm", "build", str(tree))
    assert code == 2 and "openjdk-17-jdk-headless" in err and len(err.strip().splitlines()) == 1


def test_rm_build_without_a_mirror_says_how_to_make_one(tmp_path, capsys, monkeypatch):
    """A release name with no upstream mirror: one line, exit 2, naming the clone that makes one where it looks."""
    monkeypatch.setenv("RMREPLAY_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("RMREPLAY_DUCC_MIRROR")
    if missing_packages():
        pytest.skip("the JDK is checked first")
    code, _out, err = _run(capsys, "rm", "build", "trunk")
    expected = f"git clone --mirror https://github.com/apache/uima-ducc.git {tmp_path / 'cache' / 'uima-ducc.git'}"
    assert code == 2 and expected in err and len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def java_env(tmp_path_factory):
    """A temporary cache holding the trunk build (and its tree), or a skip."""
    if missing_packages():
        pytest.skip(f"no JDK: {', '.join(missing_packages())}")
    try:
        mirror()
    except InputError as exc:
        pytest.skip(str(exc))
    cache = tmp_path_factory.mktemp("javarm-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RMREPLAY_CACHE", str(cache))
        yield cache


@pytest.mark.parametrize(("name", "configuration"), [("a_tiny", "resources directory beside the log"),
                                                      ("f_node_failure", "resources directory beside the log"),
                                                      ("e_initcap_prediction", "resources directory beside the log"),
                                                      ("h_mega15", "resources directory beside the log"),
                                                      ("heldout/seed47-020", "the log's printed configuration"),
                                                      ("heldout/seed47-070", "the log's printed configuration"),
                                                      ("heldout/seed47-190", "the log's printed configuration"),
                                                      ("corpus/needy_tie_survivor", "resources directory"),
                                                      ("corpus/priority_bands", "resources directory"),
                                                      ("corpus/allotment_three_bands", "resources directory"),
                                                      ("corpus/second_toplevel_quantum", "resources directory"),
                                                      pytest.param("i_mega24", "resources directory beside the log",
                                                                   marks=pytest.mark.slow)])
def test_identity_on_a_bundled_log(java_env, tmp_path, capsys, name, configuration):
    """trunk's own RM, given the log's recorded workload, holds what the log shows in every job-cycle
    (a_tiny with its resources directory; a held-out log with the configuration its own lines print;
    e_initcap_prediction: initialization caps and predictions that read the Orchestrator's completed
    counts and means, and shrinks that follow its processes' investments; h_mega15: 32 jobs whose ties
    the RM breaks in the hash order of their DuccIds; i_mega24, 2,500 cycles: a class's map of jobs that
    grows to 32 buckets, the needy map, processes added at once numbered in the log's share-id order;
    seed47-070: a service shrinks one of two tied
    uninitialized shares, in the hash order of their DuccIds; needy_tie_survivor: two jobs submitted in
    the same millisecond, of which the needy list keeps one; priority_bands: jobs of six classes whose
    hash order only defragmentation's maps show; allotment_three_bands: work ends Completed one
    publication later than a 10 s stop delay would make it; seed47-190: work canceled before it ran, which
    the log ends only by the Orchestrator dropping it; second_toplevel_quantum: shares still listed at the
    log's end, 10 s after their removal)."""
    out = tmp_path / "sim"
    code, stdout, _err = _run(capsys, "simulate", str(log_path(name)), "--rm", "java:trunk", "-o", str(out))
    assert code == 0, stdout
    report = json.loads((out / "report.json").read_text())
    ident = report["rm"]["identity_sim"]
    assert ident["shares_match"] == 1.0 and ident["job_cycles"] >= 10
    assert ident["finish_error_p90_pct"] in (None, 0.0)
    run = report["rm"]["runs"][0]
    assert report["rm"]["sides"]["baseline"] == "rmref" and run["release"] == "trunk"
    assert configuration in run["configuration"]
    assert any("work items" in line for line in run["assumed"])  # what the log could not settle is named
    assert "identity (sim vs log): shares 100.0%" in stdout


@pytest.mark.parametrize(("name", "release"), [("corpus/midstream_unnamed_in_a_later_band", "2.1.0"),
                                               ("releases/2.0.0/eligible-order", "2.0.0")])
def test_identity_where_node_ips_decide(java_env, tmp_path, capsys, name, release):
    """The RM of the log's release holds what the log shows in every job-cycle where, before 3.0.0,
    machines alike are met in the hash order of node IPs the log never prints: the harness's nodes take
    IPs under which the log's takeFromTheRich walks come out as printed and What Of places as the log
    (replay.javarm.node_walks; one IP for every node left midstream_unnamed_in_a_later_band at 97.5%,
    cycle 154 clearing another machine for job 6, and eligible-order at 98%)."""
    rm = _simulated_with_java(capsys, tmp_path, name, release)
    assert rm["identity_sim"]["shares_match"] == 1.0 and rm["identity_sim"]["job_cycles"] >= 50
    assert any(line.startswith("node IPs: ") and "takeFromTheRich" in line for line in rm["runs"][0]["assumed"])


@pytest.mark.parametrize("name", ["releases/2.0.0/purged-return", "releases/2.0.0/reservation-kept"])
def test_a_node_that_leaves_and_comes_back_was_there_from_the_start(java_env, tmp_path, capsys, name):
    """A 2.0.0 node there from the log's start, varied off and back (it returns as a new machine: a
    second arrival): the harness's node is there from time 0, off for the window, not first arriving
    at its return (the harness's RM had no machine until then: 0% and 12.5% of job-cycles)."""
    out = tmp_path / "sim"
    code, stdout, _err = _run(capsys, "simulate", str(log_path(name)), "--rm", "java:2.0.0", "-o", str(out))
    assert code == 0, stdout
    run = json.loads((out / "report.json").read_text())["rm"]
    assert run["identity_sim"]["shares_match"] == 1.0 and run["identity_sim"]["job_cycles"] >= 10
    nodes = json.loads((Path(run["runs"][0]["log"]).parent / "scenario.json").read_text())["nodes"]
    back = [n for n in nodes if n.get("varyoff")]
    assert back and all("arrive_ms" not in n for n in back)


def test_identity_where_a_machines_share_walk_decides(java_env, tmp_path, capsys):
    """releases/2.0.0 kept-old-record: the log's connectShare lines print n01's map of shares walking share
    3 (job 2) before share 1 (job 1) from 00:01:20; the harness's shares take hashes that keep that walk
    (replay.javarm.hash_orders.machine_listings), and the 2.0.0 RM holds what the log shows in every
    job-cycle (on seeded share UUIDs it walked `1 2 2` and parted at cycle 52: 99.5%)."""
    out = tmp_path / "sim"
    name = "releases/2.0.0/kept-old-record"
    code, stdout, _err = _run(capsys, "simulate", str(log_path(name)), "--rm", "java:2.0.0", "-o", str(out))
    assert code == 0, stdout
    run = json.loads((out / "report.json").read_text())["rm"]
    assert run["identity_sim"]["shares_match"] == 1.0 and run["identity_sim"]["job_cycles"] >= 190
    log = Path(run["runs"][0]["log"]).read_text()
    assert "00:01:20,000" in log and " 81920 2 1 2 " in log


@pytest.mark.parametrize(("name", "release", "before"), [("corpus/defrag_new_processes_counted", "trunk", 0.75),
                                                         ("corpus/defrag_earlier_round_cleared", "trunk", 0.969),
                                                         ("releases/2.0.0/purge-stops", "2.0.0", 0.988),
                                                         ("releases/2.0.0/many-open-shares", "2.0.0", 0.933)])
def test_identity_where_an_outcome_shows_a_machines_walk(java_env, tmp_path, capsys, name, release, before):
    """Shares that tie in a machine's map walk in the hash order of their DuccIds, and two outcomes show that
    walk where no connectShare line does: defragmentation clears new shares (one user's, uninitialized) in
    the walk, and the cycle's Existing lists show which survived (replay.javarm.cleared); before 2.1.0 a
    node's purge stops at a reservation's share, and the shares marked `^P` are the ones walked before it
    (replay.javarm.purged). With those pairs for the shares' hashes, the RM of the log's release holds what
    the log shows in every job-cycle (without them: `before`; defrag_new_processes_counted's RM cleared
    np102's share 5 of job 10 with 4 and 6 at 00:01:10, defrag_earlier_round_cleared's kept share 10 of
    job 9 at 00:02:20, purge-stops' purged two shares of job 2 on n01 at 00:07:36 where the log's purged
    three). And many-open-shares: n11's missed heartbeats stop at count 3 with no recovery printed (2.0.x
    prints none), so its outage ends at the last miss logged (replay.javarm.scenario.logged_outages);
    taken as never ending, the harness's node died at 00:09:20 where the log's lived on."""
    ident = _simulated_with_java(capsys, tmp_path, name, release)["identity_sim"]
    assert ident["shares_match"] == 1.0 > before and ident["job_cycles"] >= 8


def _simulated_with_java(capsys, tmp_path, name: str, release: str) -> dict:
    """report.json's `rm` of `simulate LOG --rm java:RELEASE` on a bundled log (its resources as --config)."""
    out = tmp_path / "sim"
    config = log_path(name).parent / "resources"
    args = ["--config", str(config)] if config.is_dir() else []
    code, stdout, _err = _run(capsys, "simulate", str(log_path(name)), *args, "--rm", f"java:{release}",
                              "-o", str(out))
    assert code == 0, stdout
    return json.loads((out / "report.json").read_text())["rm"]


def test_identity_where_a_node_rule_places_the_hosts(java_env, tmp_path, capsys):
    """The 3.0.0 RM given the configuration the log prints, a `.regex` pool's rule among it, holds
    what the log shows in every job-cycle (an empty rx.nodes left rxa and rxb in --default--: 33%)."""
    rm = _simulated_with_java(capsys, tmp_path, "releases/3.0.0/pool_rule", "3.0.0")
    assert rm["identity_sim"]["shares_match"] == 1.0 and rm["identity_sim"]["job_cycles"] >= 30
    assert "the log's printed configuration" in rm["runs"][0]["configuration"]


def _first_growth_beyond_one(held: dict[tuple[int, int], int]) -> tuple[int, int]:
    """The log's first (cycle, job) where a job that held processes grew by more than one."""
    found = [(c, j) for (c, j), p in held.items() if 0 < held.get((c - 1, j), 0) and p > held[(c - 1, j)] + 1]
    return min(found)


def test_vs_finds_a_one_line_patch(java_env, tmp_path, capsys):
    """Expand by one process instead of doubling: `--vs` parts at the log's first doubling, `check` fails."""
    from replay.apps.measures import logged_held

    src = java_env / "javarm" / "src-trunk"
    if not src.exists():
        assert main(["rm", "build", "trunk"]) == 0
        capsys.readouterr()
    patched = tmp_path / "patched"
    for rel in ("pom.xml", "src/main/resources", *MODULES):
        dst = patched / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if (src / rel).is_dir() else shutil.copy)(src / rel, dst)
    java = patched / SCHEDULER
    text = java.read_text()
    assert text.count(DOUBLING) == 1
    java.write_text(text.replace(DOUBLING, BY_ONE))
    tables = parsed("a_tiny").tables
    quantum = 4
    held = {(c, j): p for c, j, p in logged_held(tables, quantum, None).select(
        "cycle", "job_id", "processes").iter_rows()}
    cycle, job = _first_growth_beyond_one(held)
    out = tmp_path / "vs"
    code, stdout, _ = _run(capsys, "simulate", str(log_path("a_tiny")), "--rm", "java:trunk", "--vs",
                           f"java:{patched}", "-o", str(out))
    assert code == 0, stdout
    vs = json.loads((out / "report.json").read_text())["rm"]["vs"]
    assert (vs["first_difference"]["cycle"], vs["first_difference"]["job_id"]) == (cycle, job)
    assert vs["first_held_difference"] == [cycle, job]
    html = tmp_path / "r.html"
    assert main(["report", str(log_path("a_tiny")), "--simulation", str(out), "--no-audit", "-o", str(html)]) == 0
    assert f"first at cycle {cycle}, job {job}" in html.read_text()
    junit = tmp_path / "gate.xml"
    code, stdout, _ = _run(capsys, "check", "--simulate", str(log_path("a_tiny")), "--rm", "java:trunk", "--vs",
                           f"java:{patched}", "--junit", str(junit))
    assert code == 1 and f"first at cycle {cycle}, job {job}" in stdout
    failures = ET.parse(junit).getroot().findall(".//failure")
    assert len(failures) == 1 and f"cycle {cycle}, job {job}" in failures[0].get("message", "")


def test_java_spec_is_checked(capsys, tmp_path):
    """`--rm` takes java:SRC only: anything else is one line, exit 2."""
    code, _out, err = _run(capsys, "simulate", str(log_path("a_tiny")), "--rm", "trunk", "-o", str(tmp_path / "o"))
    assert code == 2 and "expected java:SRC" in err


def test_harness_ships_with_the_package():
    """The harness's Java and build.sh are package data (pyproject), beside the module that runs them."""
    import replay.javarm.harness as h

    assert h.BUILD_SH.is_file() and any(Path(h.JAVA).rglob("Oracle.java"))
    text = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    assert '"replay.javarm" = ["build.sh", "java/**/*.java"]' in text


def test_set_changes_the_java_configuration():
    """`--set` reaches the Java RM's files: a class attribute replaced where the class states it (the RM
    refuses a duplicate) and added where it inherits it, a property, a user's allotment."""
    from replay.javarm.scenario import Config, with_sets

    classes = ("Class base { policy = FAIR_SHARE; priority = 10; weight = 100; abstract = true }\n"
               "Class normal base { weight = 100; default = true }\nClass high base { weight = 200 }\n")
    got = with_sets(Config({}, classes, {}), (("class.normal.weight", "300"), ("class.high.priority", "5"),
                                              ("ducc.rm.share.quantum", "8"), ("user.bob.max-allotment", "16")))
    assert "Class normal base { weight = 300; default = true }" in got.classes
    assert "Class high base { weight = 200; priority = 5 }" in got.classes
    assert got.classes.count("weight = 100") == 1  # the abstract base is untouched
    assert got.properties == {"ducc.rm.share.quantum": "8"}
    assert got.files["ducc.users"] == "User bob { max-allotment = 16 }\n"
    with pytest.raises(InputError, match="class nosuch"):
        with_sets(Config({}, classes, {}), (("class.nosuch.weight", "1"),))


def test_the_printed_configuration_writes_a_rule_pools_regex_file():
    """A pool whose node file is a `.regex` (3.0.0 on) is written as one, with the rule the log prints:
    the files the real RM read (the run's scenario, releases/3.0.0/pool_rule), not an empty `.nodes`
    that would leave rxa and rxb in --default--."""
    from replay.javarm.scenario import config_from_log

    run = "releases/3.0.0/pool_rule"
    read = scenario(run)["files"]  # rx.regex: rx.*, np2.nodes: n03.sim.ducc
    got = config_from_log(parsed(run).tables)
    assert {name: got.files[name] for name in ("rx.regex", "np2.nodes")} == read
    assert "rx.nodes" not in got.files
    assert re.search(r"Nodepool rx \{[^}]*nodefile = rx\.regex", got.classes)


def test_submissions_follow_the_log_ids():
    """DuccIds are given in submission order: a later-numbered job's printed date pulls an earlier one's
    upper bound back before it; times at 0 are spread forward (hand-worked)."""
    from replay.javarm.scenario import _in_id_order

    assert _in_id_order([50000, 4118, 9998]) == [4117, 4118, 9998]
    assert _in_id_order([0, 0, 0, 20000]) == [0, 1, 2, 20000]


def test_scenario_items_are_simulates_item_model():
    """The harness's Orchestrator reads simulate's item model (one model): the fitted hand-out times, the
    log's means in completion order, exact on simulate's item clock; an edited item_ms scales both
    (hand-worked: a profile of mean 200 ms, item_ms 400 doubles every time)."""
    from replay.apps.simulate.workload import WorkSpec
    from replay.javarm.scenario import _work

    spec = WorkSpec(7, "Job", "u", "normal", 4, 2, None, 0.0, 10.0, 5.0, 10.0, 20.487, 10, 3, 200.0,
                    item_times=(0.001, 150.25, 250.0), item_profile=((2, 100.0), (2, 300.0)))
    entry = _work(spec, 60000)
    assert entry["items"] == 10 and entry["items_done"] == 3
    assert entry["handout_ms"] == [0.001, 150.25, 250.0]  # not rounded: the fit ties slots finely
    assert entry["report_ms"] == [[2, 100.0], [2, 300.0]]
    assert (entry["item_start_ms"], entry["item_init_ms"], entry["item_mean_ms"]) == (5000.0, 20.487 * 1000.0, 200.0)
    edited = _work(dataclasses.replace(spec, item_ms=400.0), 60000)
    assert edited["handout_ms"] == [0.002, 300.5, 500.0] and edited["report_ms"] == [[2, 200.0], [2, 600.0]]
    assert edited["item_mean_ms"] == 400.0

