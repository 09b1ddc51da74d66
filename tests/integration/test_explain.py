"""`explain_job` tells each job's story with the facts the real scheduler had (truth.jsonl).

For a handful of cycles per fixture (the ones where processes were added, preempted or taken by
defragmentation, and the last), every job's story must carry truth's count, cap, hosts, class,
user and policy, the shares the cycle added and took, and say them in the rendered text.
"""

from __future__ import annotations

import json

import polars as pl
import pytest

from functools import lru_cache

from replay.apps.audit import AuditResult, audit
from replay.apps.explain import Story, explain_job, render, story_json
from replay.parsing.sources import InputError
from tests.helpers import parsed, truth


@lru_cache(maxsize=None)
def _audited(name: str, level: str) -> AuditResult:
    """The log's audit, once: explain re-runs one cycle of it (what the audit carried into it)."""
    return audit(parsed(name, level).tables, rerunnable=True)

LOGS = [("a_tiny", "rm.log"), ("b_classes", "rm-debug.log"), ("c_nodepools", "rm.log"),
        ("c_nodepools", "rm-debug.log"), ("d_fragmentation", "rm.log"), ("d_fragmentation", "rm-debug.log"),
        ("e_initcap_prediction", "rm.log"), ("f_node_failure", "rm.log"), ("g_reservations_services", "rm.log")]
IDS = [f"{n}/{lv}" for n, lv in LOGS]


def _chosen(name: str, n: int = 4) -> list[tuple[dict, dict]]:
    """(record, previous record) for up to n eventful cycles, spread over the run, and the last."""
    recs = truth(name)
    eventful = [i for i, r in enumerate(recs)
                if r["defrag"]["actions"] or any(j["added"] or j["preempted"] for j in r["jobs"])]
    step = max(1, len(eventful) // n)
    picks = sorted(set(eventful[::step][:n]) | {len(recs) - 1})
    return [(recs[i], recs[i - 1] if i else {"jobs": []}) for i in picks]


def _new_preempted(job: dict, prev: dict) -> list[int]:
    """Removals first listed by this schedule (a removal stays listed until the process is gone)."""
    before = next((set(j["preempted"]) for j in prev["jobs"] if j["id"] == job["id"]), set())
    return sorted(set(job["preempted"]) - before)


def _check(story: Story, job: dict, prev: dict, record: dict) -> None:
    where = (record["cycle"], job["id"])
    assert (story.user, story.class_name, story.policy) == (job["user"], job["class"], job["policy"]), where
    assert story.count == job["nshares_given"], where
    assert story.actual_cap == job["job_cap"], where
    assert story.caps is not None and story.caps.actual == job["job_cap"], where
    assert list(story.hosts) == sorted(s["host"] for s in job["shares"]), where
    assert sorted(p.share_id for p in story.placed if not p.cancelled) == sorted(job["added"]), where
    assert sorted(t.share_id for t in story.taken) == _new_preempted(job, prev), where
    donated = {(a["host"], a["share"], a["needy_job"]) for a in record["defrag"]["actions"]
               if a["donor_job"] == job["id"] and a["action"] == "evict"}
    assert {(t.host, t.share_id, t.needy_job) for t in story.taken if t.reason == "defrag"} == donated, where
    me = story.jobs.of(str(job["id"])) if story.jobs else None
    if me is not None:  # the job's own line of its countJobShares block (logged, or recomputed)
        assert me.given[0] == job["nshares_given"], where


@pytest.mark.parametrize("name,level", LOGS, ids=IDS)
def test_story_facts_equal_truth(name, level):
    tables = parsed(name, level).tables
    checked = 0
    for record, prev in _chosen(name):
        for job in record["jobs"]:
            _check(explain_job(tables, job["id"], record["cycle"], _audited(name, level)), job, prev, record)
            checked += 1
    assert checked


@pytest.mark.parametrize("name", ["corpus/reserve_job_machines", "unsettled/tally_order",
                                  "corpus/reservation_clears_one_size", "releases/2.0.0/varyoff-return"])
def test_the_count_told_is_the_one_the_audit_reads(name):
    """How Much's count as explain tells it is truth's, for a reservation too (its grant line does not
    say how many machines: findMachines' count does) and for a job the cycle logs no number for."""
    tables = parsed(name, "rm.log").tables
    told = [(r["cycle"], j["id"], j["nshares_given"]) for r in truth(name) for j in r["jobs"]
            if j["policy"] == "RESERVE" or j["nshares_given"] == 0]
    assert told
    for cycle, job, given in told[:12]:
        assert explain_job(tables, job, cycle, _audited(name, "rm.log")).count == given, (cycle, job)


@pytest.mark.parametrize("name", ["corpus/defrag_earlier_round_cleared", "corpus/defrag_later_round_decides",
                                  "corpus/priority_bands", "releases/2.0.0/eligible-order"])
def test_an_info_log_tells_which_needy_job_each_share_went_to(name):
    """At INFO no line names the needy job a share was taken for: explain tells truth's, every
    cycle and donor, where the needy jobs' searches alone would point at the wrong one."""
    tables = parsed(name, "rm.log").tables
    actions = [(r["cycle"], a) for r in truth(name) for a in r["defrag"]["actions"] if a["action"] == "evict"]
    assert actions
    for cycle, donor in sorted({(c, a["donor_job"]) for c, a in actions}):
        story = explain_job(tables, donor, cycle, _audited(name, "rm.log"))
        assert sorted((t.host, t.share_id, t.needy_job) for t in story.taken if t.reason == "defrag") == sorted(
            (a["host"], a["share"], a["needy_job"]) for c, a in actions if c == cycle and a["donor_job"] == donor)


@pytest.mark.parametrize("name", ["releases/trunk/gen12-004", "corpus/purged_service_completed"])
def test_a_completed_jobs_missing_cap_is_told_as_its_completion(name):
    """Truth's completed jobs: explain says the cap is missing because the job completed."""
    tables = parsed(name, "rm.log").tables
    done = [(r["cycle"], j["id"]) for r in truth(name) for j in r["jobs"] if j["completed"]]
    assert done
    for cycle, job in done[:6]:
        story = explain_job(tables, job, cycle, _audited(name, "rm.log"))
        cap = next(s for s in story.sections if s.title == "2. Cap")
        assert "the job is completed in this cycle" in cap.lines[0], (cycle, job)


@pytest.mark.parametrize("name,level", LOGS[:4], ids=IDS[:4])
def test_rendered_story_says_the_facts(name, level):
    tables = parsed(name, level).tables
    for record, _ in _chosen(name, 2):
        for job in record["jobs"]:
            story = explain_job(tables, job["id"], record["cycle"], _audited(name, level))
            text = render(story)
            assert f"user {job['user']}" in text and f"class {job['class']}" in text and job["policy"] in text
            assert f"How Much gave it {job['nshares_given']} (cap {job['job_cap']})" in text
            assert all(s["host"] in text for s in job["shares"])
            assert all(f"{p.host}.{p.share_id}" in text for p in story.placed)
            assert all(f"{t.host}.{t.share_id}" in text for t in story.taken)
            for number in range(1, 9):  # every level of the cycle's detail is there
                assert f"\n{number}. " in text


@pytest.mark.parametrize("name", ["a_tiny", "d_fragmentation", "g_reservations_services"])
def test_life_follows_truth(name):
    """Without a cycle: arrival, every change of the processes held, the end; then the last cycle."""
    tables = parsed(name).tables
    held: dict[int, dict[int, int]] = {}
    for record in truth(name):
        for job in record["jobs"]:
            held.setdefault(job["id"], {})[record["cycle"]] = len(job["shares"])
    for job_id, by_cycle in sorted(held.items())[:6]:
        story = explain_job(tables, job_id, result=_audited(name, "rm.log"))
        cycles = sorted(by_cycle)
        assert story.cycle == cycles[-1] and (story.first_cycle, story.last_cycle) == (cycles[0], cycles[-1])
        assert story.life[0].cycle == cycles[0] and "arrives" in story.life[0].text
        for event in story.life:
            assert event.processes == by_cycle[event.cycle], (job_id, event)
        changes = {c for prev, c in zip(cycles, cycles[1:]) if by_cycle[c] != by_cycle[prev]}
        assert changes <= {e.cycle for e in story.life}, job_id
        assert "Life" in render(story)


def test_unknown_job_names_the_jobs_there_are():
    tables = parsed("a_tiny").tables
    with pytest.raises(InputError, match=r"job 999 is not in the log: its jobs are 1-"):
        explain_job(tables, 999)


def test_cycle_out_of_range():
    tables = parsed("a_tiny").tables
    last = len(truth("a_tiny"))
    with pytest.raises(InputError, match=rf"cycle {last + 1} is out of range: the log has cycles 1-{last}"):
        explain_job(tables, 1, last + 1)


def test_cycle_before_the_job_arrived():
    tables = parsed("d_fragmentation").tables
    first = next(r["cycle"] for r in truth("d_fragmentation") if any(j["id"] == 3 for j in r["jobs"]))
    with pytest.raises(InputError, match=rf"job 3 is not in cycle 1: it is published in cycles {first}-"):
        explain_job(tables, 3, 1)


def test_a_dead_nodes_processes_are_told_as_purged():
    """f_node_failure: a node dies; its processes are removed as purged, not preempted."""
    name = "f_node_failure"
    tables = parsed(name).tables
    seen = 0
    recs = truth(name)
    for prev, record in zip(recs, recs[1:]):
        for job in record["jobs"]:
            purged = {s["id"] for s in job["shares"] if s["purged"]} & set(_new_preempted(job, prev))
            if purged:
                story = explain_job(tables, job["id"], record["cycle"], _audited(name, "rm.log"))
                assert {t.share_id for t in story.taken if t.reason == "node_purge"} == purged
                assert "purged: its node died" in render(story)
                seen += 1
    assert seen


@pytest.mark.parametrize("name,level", LOGS, ids=IDS)
def test_explain_json_is_the_audits_run(name, level):
    """explain's rmref side is the audit's own run (ref_*), its logged side the audit's reading of the log."""
    from replay.apps.audit import result_frames
    from replay.model.logged import logged_decisions

    tables = parsed(name, level).tables
    result = _audited(name, level)
    frames = result_frames(result)
    logged = logged_decisions(tables)
    for record, _ in _chosen(name, 2):
        c = record["cycle"]
        for job in record["jobs"]:
            data = json.loads(story_json(explain_job(tables, job["id"], c, result)))
            j = job["id"]
            ref_caps = frames["ref_caps"].filter((pl.col("cycle") == c) & (pl.col("job_id") == j))["actual_cap"]
            ref_counts = frames["ref_counts"].filter((pl.col("cycle") == c) & (pl.col("job_id") == j))["shares_given"]
            placed = sorted(frames["ref_placements"].filter((pl.col("cycle") == c) & (pl.col("job_id") == j))
                            .select("host", "order").rows())
            assert data["rmref"]["cap"] == (ref_caps[0] if len(ref_caps) else None), (c, j)
            assert data["rmref"]["count"] == (ref_counts[0] if len(ref_counts) else None), (c, j)
            assert [tuple(p) for p in data["rmref"]["placed"]] == placed, (c, j)
            assert data["logged"]["cap"] == logged.caps.get(c, {}).get(j), (c, j)
            assert data["logged"]["count"] == logged.counts.get(c, {}).get(j), (c, j)
            assert [tuple(p) for p in data["logged"]["placed"]] == logged.placements.get(c, {}).get(j, []), (c, j)
