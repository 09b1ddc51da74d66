"""A host tie no log settles (fixtures/ties/): findShares meets two equally free machines of one
table bucket in the order the RM walked one job's processes, a HashMap keyed by random share ids.

`walk_order` and `walk_order_seed1` are one shrunk scenario (seed 13 scenario 111) run by the real
RM with two seeds of its random ids and nothing else changed. The log gives rmref the same input
for the tie's cycle both times, yet the RM put the process on a different machine each time: the
choice rests on the ids alone. rmref's What Of must return both machines as a tie (its set of
equal choices); the audit must verify the RM's pick is in that set, count it as agreeing, follow
it (rmref then agrees with truth.jsonl everywhere) and exit 0. A pick outside the set, made by
editing the log, stays a divergence.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from functools import lru_cache

import pytest

from replay.apps.audit import audit, result_frames
from replay.apps.explain import explain_job, render, story_json
from replay.cli import main
from replay.model.logged import logged_decisions
from replay.model.start import cycle_inputs
from rmref.choices import HostTie, host_choice
from rmref.whatof import what_of_choices
from tests.helpers import audit_edited, FIXTURES, log_path, parsed, truth
from tests.oracle.check import check_run
from tests.oracle.diff import status

RUNS = ("ties/walk_order", "ties/walk_order_seed1")
LEVELS = ("rm.log", "rm-debug.log")
CYCLE, JOB = 48, 7  # the tie: job 7's one new process, on n09 or n11
RM_PICK = "n09.sim.ducc"  # walk_order's RM pick (its connectShare line)


@lru_cache(maxsize=None)
def _audit(name: str, level: str):
    result = audit(parsed(name, level).tables)
    return result, result_frames(result)


def _truth_added(name: str) -> dict[tuple[int, int], Counter]:
    """(cycle, job) -> the hosts of the job's Additions in the RM's own state."""
    out: dict[tuple[int, int], Counter] = {}
    for record in truth(name):
        for j in record["jobs"]:
            added = Counter(s["host"] for s in j["shares"] if s["id"] in set(j["added"]))
            if added:
                out[(record["cycle"], j["id"])] = added
    return out


def _ref_added(name: str, level: str) -> dict[tuple[int, int], Counter]:
    out: dict[tuple[int, int], Counter] = {}
    for cycle, job, host, _order, _epoch in _audit(name, level)[1]["ref_placements"].iter_rows():
        out.setdefault((cycle, job), Counter())[host] += 1
    return out


def _input(name: str, level: str):
    return next(cycle_inputs(parsed(name, level).tables, cycles=range(CYCLE, CYCLE + 1)))


def _tie(name: str, level: str) -> HostTie:
    counts = logged_decisions(parsed(name, level).tables).counts[CYCLE]
    [tie] = [t for t in what_of_choices(_input(name, level), counts).ties if t.job_id == JOB]
    return tie


@pytest.mark.parametrize("level", LEVELS)
def test_the_random_ids_alone_decide_the_tie_and_rmref_returns_both_hosts(level):
    """Same input as the log shows it, another machine in the RM's own state; both machines are
    in the tie rmref's What Of returns, with one process among them."""
    assert _input(RUNS[0], level) == _input(RUNS[1], level)
    picks = [_truth_added(name)[(CYCLE, JOB)] for name in RUNS]
    assert picks[0] != picks[1] and sum(picks[0].values()) == sum(picks[1].values()) == 1
    tie = _tie(RUNS[0], level)
    assert set(tie.hosts) == set(picks[0]) | set(picks[1]) and sorted(tie.got) == [0, 1] and tie.ways() == 2
    assert tie.walked_by == 1  # the job whose process walk put the two machines in the table's order


@pytest.mark.parametrize("name", RUNS)
@pytest.mark.parametrize("level", LEVELS)
def test_the_rms_pick_is_verified_and_followed(name, level):
    """Every cycle agrees; rmref's placements (following the RM's pick) are truth's everywhere;
    where rmref's own pick was the other machine, the placement and its echo in the chained
    schedule are verified choices that name the tie."""
    result, _ = _audit(name, level)
    report = result.report()
    assert not result.divergences and report["cycles_agree"] == report["cycles"]
    assert _ref_added(name, level) == _truth_added(name)
    tie = _tie(name, level)
    own = {h for h, n in zip(tie.hosts, tie.got) if n}
    rm = set(_truth_added(name)[(CYCLE, JOB)])
    expected = {(CYCLE, JOB, "placements"), (CYCLE, JOB, "schedule")} if own != rm else set()
    assert {(v.cycle, v.job_id, v.decision) for v in result.verified} == expected
    assert report["verified_choices"]["placements"] == report["verified_choices"]["schedule"] == len(expected) // 2
    for v in result.verified:
        assert v.detail.startswith("agrees") and "the RM chose 1 of 2 equally free hosts" in v.detail, v.explanation


def test_the_audit_exits_0_on_the_healthy_log(tmp_path, capsys):
    code = main(["audit", str(log_path(RUNS[0])), "-o", str(tmp_path / "out")])
    out = capsys.readouterr().out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert code == 0 and report["verified_choices"]["placements"] == 1
    assert "free choices verified" in out and "agrees: the RM chose 1 of 2 equally free hosts" in out


def test_a_pick_outside_the_tie_is_a_divergence(tmp_path, capsys):
    """The same log with job 7's process 'placed' on a machine that was not tied: exit 1, and the
    placement is a divergence, not a verified choice."""
    tie = _tie(RUNS[0], "rm.log")
    other = next(m.name for m in _input(RUNS[0], "rm.log").machines if m.name not in tie.hosts)
    with gzip.open(log_path(RUNS[0]), "rt") as fh:
        lines = fh.read().splitlines(keepends=True)
    hits = [i for i, line in enumerate(lines) if f"share {RM_PICK}.14" in line]
    assert len(hits) == 2  # connectShare and findShares
    for i in hits:
        lines[i] = lines[i].replace(RM_PICK, other)
    code, report, div = audit_edited(tmp_path, lines)
    capsys.readouterr()
    assert code == 1 and report["cycles_agree"] < report["cycles"]
    assert (CYCLE, JOB, "placements") in set(div.select("cycle", "job_id", "decision").iter_rows())
    assert report["verified_choices"]["placements"] == 0


def test_host_choice_by_hand():
    """Hand-worked: a, b tied for job 7, rmref gave a 2 and b 1 (findShares stacked). The RM's
    1 and 2 is the other order; 3 on a, or a process on c, is no order of the tie."""
    tie = HostTie(7, ("a", "b"), (2, 1), 1)
    ours = {"a": 2, "b": 1}
    assert host_choice([tie], 7, {"a": 1, "b": 2}, ours) == (tie,)
    assert host_choice([tie], 7, {"a": 3}, ours) is None
    assert host_choice([tie], 7, {"a": 1, "b": 1, "c": 1}, ours) is None
    assert host_choice([tie], 8, {"a": 1, "b": 2}, ours) is None  # another job's tie says nothing
    assert host_choice([tie], 7, ours, ours) is None  # nothing to verify: rmref's own pick


def test_the_oracle_harness_calls_the_scenario_ok():
    """tests/oracle: the walk_order run (audit against its log and rmref against truth.jsonl) has
    no failure and one verified placement, so diff.py's status is "ok"."""
    res = check_run(FIXTURES / RUNS[0], ("info",))["info"]
    assert res.error is None and not res.failures and res.verified["placements"] == 1
    assert res.cycles_agree_log == res.cycles_agree_truth == res.cycles
    entry = {"error": res.error, "failures_total": len(res.failures)}
    assert status({"oracle_ok": True, "levels": {"info": entry}}) == "ok"
    assert status({"oracle_ok": True, "levels": {"info": {**entry, "failures_total": 1}}}) == "fail"


def test_explain_tells_the_verified_choice():
    """`explain` of job 7 in the tie's cycle says, where its new process went, that the RM's pick
    agrees as one of the equally free hosts (and the JSON carries it)."""
    story = explain_job(parsed(RUNS[0]).tables, JOB, CYCLE)
    assert [(v.decision, v.step) for v in story.verified] == [("placements", "findShares"), ("schedule", "schedule")]
    text = render(story)
    assert "findShares agrees: the RM chose 1 of 2 equally free hosts" in text
    assert "equally free hosts" in story_json(story)
