"""A log that starts mid-stream, audited with a --config folder that holds ducc.classes only.

Every bundled log (INFO and DEBUG) is cut inside a cycle's RmCounter block, inside its createState
block and between cycles, after a node that held work has gone idle (tests/midstream.py). The
audit must rebuild what the RM knew from the log alone: the settings ducc.properties would have
given (quantum, thresholds, caps) and the nodes whose arrival rolled away. Against truth.jsonl
(the real scheduler's state per cycle): rmref's decisions equal truth's from the first whole
cycle on in at least 99% of the cycles, and every node's order, stated by the log or inferred,
is truth's.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import cache
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import PARTIAL_CYCLE, audit, result_frames
from replay.apps.explain import explain_job, render
from replay.model.resources import read_resources
from replay.model.settings import GLOBAL_ALLOTMENT, THRESHOLD, USER_ALLOTMENTS
from replay.model.start import bootstrap, machine_inventory, replay_start
from replay.parsing.sources import InputError
from rmref.constants import NOT_NEW
from tests.helpers import FIXTURES, LOGS, count_assembled, parsed, scenario, truth
from tests.midstream import KINDS, classes_only, cut
from tests.truth_inputs import (
    _allotments,
    defrag_evictions,
    expected_placements,
    removals,
)

CASES = [(name, level, kind) for name, level in LOGS for kind in KINDS]


@cache
def _tables(name: str, level: str, kind: str, tmp: Path) -> dict[str, pl.DataFrame]:
    flat = name.replace("/", "-")  # a corpus fixture's name has a folder in it
    tables = parse([cut(name, level, kind, tmp / f"{flat}-{level}-{kind}.log")]).tables
    assert tables["classes"].is_empty(), "the cut must remove the bootstrap"
    tables.update(read_resources(classes_only(name, tmp / f"{flat}-config")))
    return tables


@pytest.fixture(scope="module")
def tmp(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("midstream")


@cache
def _audited(name: str, level: str, kind: str, tmp: Path):
    tables = _tables(name, level, kind, tmp)
    result = audit(tables)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    return tables, result, result_frames(result), epochs


def _audited_with(name: str, tables: dict[str, pl.DataFrame], resource: str, tmp: Path):
    """The cut audited again with one more of the fixture's files (`resource`) beside ducc.classes."""
    config = classes_only(name, tmp / f"{name.replace('/', '-')}-with-{resource}")
    (config / resource).write_text((FIXTURES / name / "resources" / resource).read_text())
    return audit({**tables, **read_resources(config)})


def _by_cycle(frame: pl.DataFrame) -> dict[int, list[tuple]]:
    out: dict[int, list[tuple]] = {}
    for row in frame.drop("epoch", strict=False).iter_rows():
        out.setdefault(row[0], []).append(row[1:])
    return out


def _disagreeing(frames: dict[str, pl.DataFrame], cycles: list[int], epochs: dict[int, int], name: str) -> list:
    """Audited cycles where some rmref decision differs from truth's (cycle, decision kind)."""
    records = {r["epoch"]: r for r in truth(name)}
    before_of = {r["epoch"]: prev for prev, r in zip([None, *truth(name)], truth(name))}
    ref = {k: _by_cycle(frames[f"ref_{k}"].drop("unsettled", strict=False))
           for k in ("caps", "counts", "placements", "evictions", "defrag", "schedule")}
    bad = []
    for cycle in cycles:
        rec = records[epochs[cycle]]
        prev = before_of[epochs[cycle]]
        before = removals(prev) if prev else set()
        caps = {j["id"]: j["job_cap"] for j in rec["jobs"]}
        given = {j["id"]: j["nshares_given"] for j in rec["jobs"]}
        checks = {
            "caps": all(caps.get(job) == actual for job, _b, _p, _q, actual in ref["caps"].get(cycle, [])),
            "counts": sorted((j, n) for j, _o, n in ref["counts"].get(cycle, [])) == sorted(given.items()),
            "placements": Counter(ref["placements"].get(cycle, [])) == expected_placements(rec),
            # a share marked (or purged) again while already leaving is no new removal
            "evictions": {(j, h, s) for j, h, s, r in ref["evictions"].get(cycle, []) if r not in NOT_NEW}
            == (removals(rec) - before) - defrag_evictions(rec),
            "defrag": ref["defrag"].get(cycle, []) == [
                (a["needy_job"], a["donor_job"], a["host"], a["share"] if a["action"] == "evict" else 0)
                for a in rec["defrag"]["actions"]],
        }
        added = Counter((j["id"], s["host"]) for j in rec["jobs"] for s in j["shares"] if s["id"] in set(j["added"]))
        ours_added = Counter((j, h) for j, k, h, _s in ref["schedule"].get(cycle, []) if k == "addition")
        ours_removed = {(j, h, s) for j, k, h, s in ref["schedule"].get(cycle, []) if k == "removal"}
        checks["schedule"] = (ours_added, ours_removed) == (added, removals(rec) - before)
        bad += [(cycle, epochs[cycle], kind) for kind, ok in checks.items() if not ok]
    return bad


@pytest.mark.parametrize(("name", "level", "kind"), CASES)
def test_rmref_equals_truth_from_the_first_whole_cycle(name, level, kind, tmp):
    tables, result, frames, epochs = _audited(name, level, kind, tmp)
    first_whole = tables["cycles"].filter(pl.col("started"))["cycle"].min()
    assert result.cycles and min(result.cycles) == first_whole
    assert set(result.skipped) <= {1}, result.skipped  # at most the cycle the log starts inside
    assert all(why == PARTIAL_CYCLE for why in result.skipped.values())
    bad = _disagreeing(frames, result.cycles, epochs, name)
    bad_cycles = {c for c, _e, _k in bad}
    agree = len(result.cycles) - len(bad_cycles)
    assert agree >= 0.99 * len(result.cycles), (agree, len(result.cycles), bad[:5])
    # a node-dependent decision left out of a cycle counts against it
    for kind_, cycles in result.skipped_kinds.items():
        assert set(cycles) <= set(result.skipped), (kind_, sorted(cycles)[:5])


@pytest.mark.parametrize(("name", "level", "kind"), CASES)
def test_every_node_order_is_truths(name, level, kind, tmp):
    tables = _tables(name, level, kind, tmp)
    inventory = machine_inventory(tables, bootstrap(tables))
    orders = {n["name"]: n["order"] for r in truth(name) for n in r["nodes"]}
    pools = {n["name"]: n["nodepool"] for r in truth(name) for n in r["nodes"]}
    assert inventory.hosts
    assert not inventory.unknown
    for host in inventory.hosts:
        assert (host.order, host.nodepool) == (orders[host.name], pools[host.name]), host


@pytest.mark.parametrize(("name", "level", "kind"), CASES)
def test_inferred_settings_are_the_ones_the_rm_ran_with(name, level, kind, tmp):
    """Each setting read off the log instead of ducc.properties is what the fixture's own
    ducc.properties says (the full log's bootstrap, and the properties for the global allotment);
    a setting the log shows nothing of keeps DUCC's documented default, and says so."""
    boot = bootstrap(_tables(name, level, kind, tmp))
    rm = bootstrap(parsed(name).tables)
    open_class = next(c for c in rm.classes if c.policy == "FAIR_SHARE")
    expected = {
        "ducc.rm.share.quantum": str(rm.config.quantum_gb),
        "ducc.rm.fragmentation.threshold": str(rm.config.fragmentation_threshold),
        "ducc.rm.defragmentation": str(rm.config.defragmentation).lower(),
        "ducc.rm.global_allotment": str(_allotments(name)[0]),
        "ducc.rm.initialization.cap": str(open_class.init_cap),
        "ducc.rm.expand.by.doubling": str(open_class.expand_by_doubling).lower(),
        "ducc.rm.prediction": str(open_class.prediction).lower(),
    }
    assumed = {a.setting: a for a in boot.assumed}
    for setting, value in expected.items():
        a = assumed[setting]
        assert a.source in ("inferred", "default") and a.evidence, a
        if a.source == "inferred":
            assert a.value == value, a


RICH_DONOR = "corpus/midstream_rich_donor_threshold"


@pytest.mark.parametrize("kind", KINDS)
def test_a_debug_cut_reads_the_threshold_off_the_donors(kind, tmp):
    """A DEBUG log of the real RM (oracle seed 11010, shrunk) with a fragmentation threshold of 1,
    cut mid-stream: no detectFragmentation row bounds the threshold from above, but
    doFinalEvictions names a rich donor holding 1 process, so the threshold is 1 (not the
    documented 8, under which no job is rich and takeFromTheRich takes nothing), and rmref equals
    truth in every cycle, its takings included."""
    tables, result, frames, epochs = _audited(RICH_DONOR, "rm-debug.log", kind, tmp)
    rm = bootstrap(parsed(RICH_DONOR, "rm-debug.log").tables)
    threshold = next(a for a in result.assumed if a.setting == THRESHOLD)
    assert (threshold.value, threshold.source) == (str(rm.config.fragmentation_threshold), "inferred"), threshold
    assert not result.divergences, result.divergences[:3]
    assert not _disagreeing(frames, result.cycles, epochs, RICH_DONOR)
    taken = [r for r in truth(RICH_DONOR) if r["epoch"] in set(epochs.values()) and r["defrag"]["actions"]]
    assert len(taken) >= 2  # the cut keeps cycles where the RM took from the rich


@pytest.mark.parametrize("kind", KINDS)
def test_an_info_cut_infers_the_threshold_from_the_rms_takings(kind, tmp):
    """The same run's INFO log, cut mid-stream and audited with ducc.classes only: no line bounds
    the threshold from above (the documented 8 fits every line), but under 8 no job is rich and
    takeFromTheRich takes nothing where the RM took from the rich. Of the values the log allows,
    only the fixture's 1 (ducc.properties) reproduces every cycle's takings: it is inferred, saying
    from which cycles, and rmref equals truth in every cycle, the takings included."""
    tables, result, frames, epochs = _audited(RICH_DONOR, "rm.log", kind, tmp)
    threshold = next(a for a in result.assumed if a.setting == THRESHOLD)
    true = bootstrap(parsed(RICH_DONOR).tables).config.fragmentation_threshold
    assert (threshold.value, threshold.source) == (str(true), "inferred"), threshold
    assert threshold.evidence.startswith(f"fragmentation threshold inferred: {true} (from cycle"), threshold
    assert not result.divergences, result.divergences[:3]
    assert not result.skipped_kinds.get("defrag"), result.skipped_kinds
    took = {c for c in result.cycles if truth_at(RICH_DONOR, epochs[c])["defrag"]["actions"]}
    assert took and all(f"{c}" in threshold.evidence for c in took), (took, threshold)
    assert not _disagreeing(frames, result.cycles, epochs, RICH_DONOR)
    # one fact, one place: explain (and whatif, simulate, the TUI) read the start audit reads
    assert replay_start(tables).boot.config.fragmentation_threshold == true
    job = next(j for j in truth_at(RICH_DONOR, epochs[min(took)])["jobs"])
    assert f"{THRESHOLD} = {true} (inferred)" in render(explain_job(tables, job["id"], min(took)))


def test_the_threshold_inference_and_the_audit_assemble_each_cycle_once(tmp, monkeypatch):
    """The inference reads every cycle's input before the first is audited: the audit takes over
    the inputs it assembled (replay.model.held_inputs), rather than assembling the log a second
    time, and still infers the fixture's threshold and equals truth in every cycle."""
    tables = _tables(RICH_DONOR, "rm.log", "between", tmp)
    assembled = count_assembled(monkeypatch)
    result = audit(tables)
    threshold = next(a for a in result.assumed if a.setting == THRESHOLD)
    assert threshold.source == "inferred" and threshold.value == "1", threshold  # the fixture's ducc.properties
    assert sorted(assembled) == sorted(tables["cycles"]["cycle"].to_list()), Counter(assembled).most_common(3)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    assert not result.divergences and not _disagreeing(result_frames(result), result.cycles, epochs, RICH_DONOR)


@pytest.mark.parametrize("kind", KINDS)
def test_an_info_cut_leaves_defragmentation_on_an_unpinned_threshold_out(kind, tmp):
    """The same INFO cut, with the threshold left open (as where the log's defragmentation does not
    pin it: replay.model.threshold), the documented 8 assumed: a threshold the log allows
    reproduces the RM's takings, so those cycles' defragmentation and chained schedule are left
    out, naming the setting, never an RM divergence; every other cycle equals truth, and with the
    fixture's ducc.properties every cycle is audited and equals truth."""
    tables, _result, _frames, epochs = _audited(RICH_DONOR, "rm.log", kind, tmp)
    open_boot = replace(bootstrap(tables), threshold_settled=True)  # the inference not run
    result = audit(tables, open_boot)
    threshold = next(a for a in result.assumed if a.setting == THRESHOLD)
    assert threshold.value == "8" and bootstrap(parsed(RICH_DONOR).tables).config.fragmentation_threshold == 1
    assert not result.divergences, result.divergences[:3]
    open_ = {c: why for c, why in result.skipped_kinds.get("defrag", {}).items() if THRESHOLD in why}
    took = {c for c in result.cycles if truth_at(RICH_DONOR, epochs[c])["defrag"]["actions"]}
    assert took and took <= set(open_) <= set(result.skipped_kinds["schedule"]), (took, open_)
    assert not _disagreeing(result_frames(result), [c for c in result.cycles if c not in open_], epochs, RICH_DONOR)
    again = _audited_with(RICH_DONOR, tables, "ducc.properties", tmp)
    assert not again.divergences and not again.skipped_kinds.get("defrag"), again.skipped_kinds
    assert not _disagreeing(result_frames(again), again.cycles, epochs, RICH_DONOR)


def truth_at(name: str, epoch: int) -> dict:
    """truth.jsonl's record of one epoch."""
    return next(r for r in truth(name) if r["epoch"] == epoch)


UNPRINTED = "corpus/midstream_unprinted_threads"


@pytest.mark.parametrize("kind", KINDS)
def test_work_before_the_log_takes_the_threads_its_base_caps_allow(kind, tmp):
    """An INFO log of the real RM (oracle seed 11313, shrunk) cut after a fixed-share job of 8
    threads per process was submitted: the log never prints its threads, but the Orchestrator's
    updates give its remaining work and the RM logs its base cap, ceil(remaining / threads), each
    cycle. With the threads those allow (one thread took the remaining work for the base cap),
    every cap equals truth's, and rmref equals truth in every cycle."""
    tables, result, frames, epochs = _audited(UNPRINTED, "rm.log", kind, tmp)
    submitted = set(tables["jobs"].filter(pl.col("source") == "submit")["job_id"].to_list())
    capped = set(tables["job_caps"]["job_id"].drop_nulls().to_list())
    fixed = {j["id"] for r in truth(UNPRINTED) for j in r["jobs"] if j["policy"] == "FIXED_SHARE"}
    assert (capped - submitted) & fixed  # the precondition: fixed-share work the log never prints
    assert not result.divergences, result.divergences[:3]
    assert not _disagreeing(frames, result.cycles, epochs, UNPRINTED)


ALLOTTED = "corpus/midstream_user_allotment_unknown"


def test_a_users_own_allotment_the_log_never_shows_is_no_divergence(tmp):
    """An INFO log of the real RM (oracle seed 11313, shrunk) whose ducc.users gives user dan an
    allotment of 8 GB and ben one of 64 (the global one unset), cut mid-stream and audited with
    ducc.classes only: dan's deferrals are the log's only allotment lines, so 8 GB reads as the
    global allotment, and the RM grants ben's 44 GB reservation, which that would defer. The
    cycle's counts and chained schedule are left out, saying why, never a divergence; with the
    fixture's ducc.users beside ducc.classes they are audited and equal truth's."""
    tables, result, frames, epochs = _audited(ALLOTTED, "rm.log", "between", tmp)
    assert not result.divergences, result.divergences[:3]
    open_ = {c: why for c, why in result.skipped_kinds.get("counts", {}).items() if "ducc.users" in why}
    assert open_ and set(open_) <= set(result.skipped_kinds["schedule"]), result.skipped_kinds
    assert not _disagreeing(frames, [c for c in result.cycles if c not in open_], epochs, ALLOTTED)
    # with ducc.users the same cycles are audited and agree with truth
    again = _audited_with(ALLOTTED, tables, "ducc.users", tmp)
    assert not again.divergences and not again.skipped_kinds.get("counts"), again.skipped_kinds
    assert not _disagreeing(result_frames(again), again.cycles, epochs, ALLOTTED)
    # a log with its bootstrap, and no user of its own allotment, knows there is none
    assert bootstrap(_tables(ALLOTTED, "rm.log", "between", tmp)).users_open
    assert not bootstrap(parsed("a_tiny").tables).users_open


SHOWN = "corpus/midstream_user_allotment_shown"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_each_users_allotment_lines_give_its_own(level, kind, tmp):
    """A 2.0.0 log of the real RM (oracle seed 12121, scenario 4) whose ducc.users gives
    cat 8 GB and gus 200 GB, the global allotment unset, cut mid-stream and audited with
    ducc.classes only: cat's lines print 8 GB and dan's unlimited. Checked against 8 GB (once
    read as the global allotment, the last line's), dan's fixed-share job 11 got 1 process at
    epoch 53 where the RM granted 2 (an RM divergence). Each user's count is checked against its
    own lines' allotment, `assumed` names it, and every audited cycle equals truth."""
    tables, result, frames, epochs = _audited(SHOWN, level, kind, tmp)
    assert not result.divergences, result.divergences[:3]
    users = next(a for a in result.assumed if a.setting == USER_ALLOTMENTS)
    assert users.source == "inferred" and users.value == "cat 8 GB", users
    assert 53 in {epochs[c] for c in result.cycles if c not in result.skipped_kinds.get("counts", {})}
    assert not _disagreeing(frames, result.cycles, epochs, SHOWN)


@pytest.mark.parametrize("kind", KINDS)
def test_where_users_lines_disagree_the_global_allotment_is_not_the_last_lines(kind, tmp):
    """The same cut log: its allotment lines disagree (cat's 8 GB, dan's unlimited), so one at
    least is a user's own. The last line's, cat's 8 GB, was read as the global allotment, which
    the users with no line (ann, ben, gus) were checked against; the RM's configuration (the
    fixture's ducc.properties, ducc.users) leaves it unset. Of the values as many users' lines
    show, the larger is taken, the users it is taken for are named, and every user allotment read
    off the lines is the configuration's."""
    tables = _tables(SHOWN, "rm.log", kind, tmp)
    real = bootstrap({**tables, **read_resources(FIXTURES / SHOWN / "resources")}).config
    boot = bootstrap(tables)
    assert boot.config.global_allotment == real.global_allotment
    assert set(boot.config.user_allotments) <= set(real.user_allotments), boot.config.user_allotments
    said = next(a for a in boot.assumed if a.setting == GLOBAL_ALLOTMENT).evidence
    assert "8 GB (cat); unlimited (dan)" in said and "(System, ann, ben, gus) against unlimited" in said, said


DISAGREE = "corpus/midstream_allotment_lines_disagree"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_users_with_no_allotment_line_are_not_checked_against_another_users_own(level, kind, tmp):
    """A 2.0.0 log of the real RM (oracle seed 12020, scenario 3) whose ducc.users gives dan 16 GB,
    ben 100 GB and eve 200 GB, the global allotment unset, cut mid-stream and audited with
    ducc.classes only: dan's lines print 16 GB, fay's unlimited, and the last line is dan's. Read
    as the global allotment, 16 GB was what the users with no line (ann, cat, eve, gus, lou) were
    checked against, and six cycles from epoch 50 to 64 were left unaudited, their RmCounter
    vmachines taken as the stated nodes' failing. The allotment read is the RM's
    configuration's, each user allotment read off the lines is too, and every cycle is audited
    whole and equals truth."""
    tables, result, frames, epochs = _audited(DISAGREE, level, kind, tmp)
    assert not result.divergences, result.divergences[:3]
    real = bootstrap({**tables, **read_resources(FIXTURES / DISAGREE / "resources")}).config
    boot = bootstrap(tables)
    assert boot.config.global_allotment == real.global_allotment
    assert set(boot.config.user_allotments) <= set(real.user_allotments), boot.config.user_allotments
    assert {50, 64} <= {epochs[c] for c in result.cycles}
    assert not result.skipped and not result.skipped_kinds, {k: len(v) for k, v in result.skipped_kinds.items()}
    assert not _disagreeing(frames, result.cycles, epochs, DISAGREE)


LEAVING = "corpus/midstream_removal_before_the_log"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_removal_decided_before_the_log_is_leaving_as_it_starts(level, kind, tmp):
    """A log of the real RM (oracle seed 11111, trunk) cut after defragmentation took n02.sim.ducc.2
    from job 1: the RM lists it for removal in every schedule until the process is gone, so the
    first whole cycle's schedule lists it, though no line of that cycle decides it (no eviction
    line, no job found needy; truth: no action in it). It was leaving as the cycle began: How Much
    does not count it, and job 1 gets a new process on n01 where it had 19 counted and 19 listed.
    No cycle is a divergence, and every cycle, the first whole one included, is truth's."""
    tables, result, frames, epochs = _audited(LEAVING, level, kind, tmp)
    first = min([*result.cycles, *result.skipped])
    listed = tables["schedule"].filter((pl.col("kind") == "removal") & (pl.col("cycle") == first))
    assert ("n02.sim.ducc", 2) in set(listed.select("host", "share_id").iter_rows())  # the precondition
    assert not [a for r in truth(LEAVING) if r["epoch"] == epochs[first] for a in r["defrag"]["actions"]]
    assert not result.divergences, result.divergences[:3]
    assert first in result.cycles and not result.skipped
    assert not _disagreeing(frames, result.cycles, epochs, LEAVING)


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_removal_taken_as_decided_before_the_log_is_said_by_every_command(level, kind, tmp):
    """Taking a listed removal as decided before the log began is an inference, so the audit's
    assumptions name it, with its processes and cycle, exactly where truth shows the removal was
    decided before the log's first line: the record before the log's first cycle lists it already
    (the cuts between cycles and inside the schedule: defragmentation took n02.sim.ducc.2 in the
    cycle before). The cut inside the RmCounter block keeps that cycle's own eviction in the log:
    nothing is taken, and nothing said. The audit's block and explain read the one assumption, and
    explain's list of what the cycle took shows those processes as leaving, not taken by it."""
    from replay.apps.explain import explain_job
    from replay.cli.lines import assumed_block

    tables, result, _frames, epochs = _audited(LEAVING, level, kind, tmp)
    records = truth(LEAVING)
    at = {r["epoch"]: i for i, r in enumerate(records)}
    listed = tables["schedule"].filter(pl.col("cycle").is_not_null())["cycle"].min()
    before_log = records[at[epochs[min(epochs)]] - 1]
    decided_before = removals(before_log) & removals(records[at[epochs[listed]]])
    assert bool(decided_before) == (kind != "counter")  # the precondition: where each cut falls
    said = [a for a in result.assumed if a.setting == "processes leaving as the log began"]
    if not decided_before:
        assert not said
        return
    value = f"cycle {listed} (epoch {epochs[listed]}): " + ", ".join(f"job {j} {h}.{s}"
                                                                     for j, h, s in sorted(decided_before))
    assert [a.value for a in said] == [value] and said[0].source == "inferred"
    assert f"  processes leaving as the log began = {value} (inferred)" in assumed_block(result)
    story = explain_job(tables, 1, listed)
    assert said[0] in story.assumed
    # explain reads the removals the audit reads: the cycle did not take them, they were leaving
    assert {(story.job_id, t.host, t.share_id) for t in story.taken if t.reason == "leaving"} == {
        r for r in decided_before if r[0] == story.job_id}
    assert not [t for t in story.taken if (story.job_id, t.host, t.share_id) in decided_before
                and t.reason != "leaving"]


AGAIN = "corpus/midstream_leaving_picked_again"


@pytest.mark.parametrize("kind", ["schedule", "between"])
def test_a_process_already_leaving_that_shrink_picks_again_is_not_the_cycles(kind, tmp):
    """A DEBUG log of the real RM (oracle seed 12121, fragmentation, trunk) cut as job 6's
    np102.sim.ducc.19, which shrinkBy took in the cycle before (truth: listed for removal there),
    is still leaving. The first whole cycle's findShares counts job 6 at 1 of the 2 processes its
    schedule lists, and shrinkBy names np102.sim.ducc.19 again: an eviction line, yet not the
    cycle's decision. Read as the cycle's, job 6 would count 2, its cap 4 where truth's is 2, and
    lose both processes where the RM removed one. It is taken as leaving as the log began, and
    said so; no divergence, and every cycle is truth's but for what the audit leaves out, saying why
    (cycle 7: whether processes there before the log had reported)."""
    tables, result, frames, epochs = _audited(AGAIN, "rm-debug.log", kind, tmp)
    first = min([*result.cycles, *result.skipped])
    records = {r["epoch"]: r for r in truth(AGAIN)}
    leaving = (6, "np102.sim.ducc", 19)
    assert leaving in removals(records[epochs[first] - 1]) and leaving in removals(records[epochs[first]])
    assert {j["id"]: j["job_cap"] for j in records[epochs[first]]["jobs"]}[6] == 2
    assert not result.divergences, result.divergences[:3]
    assert first in result.cycles and not result.skipped
    bad = _disagreeing(frames, result.cycles, epochs, AGAIN)
    assert not [(c, k) for c, _e, k in bad if c not in result.skipped_kinds.get(k, {})], bad
    said = [a.value for a in result.assumed if a.setting == "processes leaving as the log began"]
    assert len(said) == 1 and "job 6 np102.sim.ducc.19" in said[0], said


STALE = "corpus/midstream_stale_before_the_log"


def _varied_off_read(name: str, kind: str, tmp: Path) -> None:
    """The log cut at 95%, audited with ducc.classes only: the nodes truth has offline in the cut's
    cycles are taken as varied off before the log began, and said so, and rmref equals truth in
    every cycle, none left out."""
    path = cut(name, "rm-debug.log", kind, tmp / f"{name.replace('/', '-')}-{kind}-late.log", at=0.95)
    tables = parse([path]).tables
    tables.update(read_resources(classes_only(name, tmp / f"{name.replace('/', '-')}-late-config")))
    result = audit(tables)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    records = {r["epoch"]: r for r in truth(name)}
    off = {n["name"] for c in result.cycles for n in records[epochs[c]]["nodes"] if not n["online"]}
    said = [a for a in result.assumed if a.setting == "nodes varied off before the log began"]
    assert off and [a.value for a in said] == [", ".join(sorted(off))], said
    assert not result.divergences, result.divergences[:3]
    assert result.cycles and not result.skipped_kinds, result.skipped_kinds
    assert not _disagreeing(result_frames(result), result.cycles, epochs, name)


@pytest.mark.parametrize("kind", KINDS)
def test_a_machine_varied_off_before_the_log_is_read_off_the_counters(kind, tmp):
    """A DEBUG log of the real RM (oracle seed 11010, shrunk) cut late, after node n02 was varied
    off: the occupancy table sizes it, idle, and no line of the cut says it is off, but the RM
    counts only schedulable machines and no counter of the cut counts it. It is varied off, as
    truth.jsonl has it (before, as a schedulable machine, it did not fit the counters, and every
    cycle was audited for caps only)."""
    _varied_off_read(STALE, kind, tmp)


VARIED_OFF = "corpus/midstream_varied_off_idle"


@pytest.mark.parametrize("kind", KINDS)
def test_an_idle_machine_no_later_band_counts_was_varied_off(kind, tmp):
    """A DEBUG log of the 3.0.0 RM (oracle seed 11212 scenario 3, shrunk) cut late, after n06 was
    varied off idle: the occupancy table lists it like any idle machine, and the first band's
    counters (pool np1) do not cover it, but the next band's (--default--) leave it out. It is
    varied off, as truth.jsonl has it (before, counted free, rmref gave that band's job a process
    on it that the RM did not: RM divergences in counts and the schedule)."""
    _varied_off_read(VARIED_OFF, kind, tmp)


OWN_DOUBLING = "corpus/midstream_class_sets_its_doubling"


def _own_doubling_settled(tables: dict[str, pl.DataFrame]) -> None:
    """fair17a's initialization cap is the ducc.rm.* one inferred from every open class's caps,
    and it is the RM's (the fixture's ducc.properties, as the full log's bootstrap prints it)."""
    rm = bootstrap(parsed(OWN_DOUBLING).tables)
    boot = bootstrap(tables)
    assert [c.init_cap for c in boot.classes if c.name == "fair17a"] == [
        c.init_cap for c in rm.classes if c.name == "fair17a"] == [4]
    said = {a.setting: a for a in boot.assumed}
    assert (said["ducc.rm.initialization.cap"].value, said["ducc.rm.initialization.cap"].source) == ("4", "inferred")
    assert not [s for s in said if s.startswith("class ")], said


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_class_setting_its_own_doubling_takes_the_shared_initialization_cap(level, kind, tmp):
    """A log of the 3.0.0 RM (oracle seed 11313 scenario 0, shrunk) whose ducc.properties sets
    ducc.rm.initialization.cap = 4 and whose class fair17a sets its own doubling and nothing else,
    cut mid-stream and audited with ducc.classes only. A stanza that sets some cap settings takes
    the others from ducc.rm.*, as the classes that set none do, so one initialization cap is
    inferred from all their caps. Settled alone, as a log's class block cut short is, fair17a's
    was the documented 1, and its job, pushed out of every process and restarting from the
    initialization cap, diverged in every cycle. Every decision is truth's."""
    tables, result, frames, epochs = _audited(OWN_DOUBLING, level, kind, tmp)
    _own_doubling_settled(tables)
    assert not result.divergences, result.divergences[:3]
    assert not _disagreeing(frames, result.cycles, epochs, OWN_DOUBLING)


def test_a_user_registry_without_ducc_properties_leaves_the_cap_settings_open(tmp):
    """ducc.users beside ducc.classes is no ducc.properties: the cap settings are still inferred
    together (its rows are a user registry's, not the ducc.rm.* settings)."""
    tables = dict(_tables(OWN_DOUBLING, "rm-debug.log", "between", tmp))
    config = classes_only(OWN_DOUBLING, tmp / "own-doubling-with-users")
    (config / "ducc.users").write_text((FIXTURES / OWN_DOUBLING / "resources" / "ducc.users").read_text())
    tables.update(read_resources(config))
    assert not tables["config"].filter(pl.col("file") == "ducc.users").is_empty()  # the precondition
    _own_doubling_settled(tables)


UNNAMED = "corpus/midstream_unnamed_in_a_later_band"


@pytest.mark.parametrize("kind", KINDS)
def test_machines_only_the_occupancy_table_lists_were_there_before_the_log(kind, tmp):
    """An INFO log of the 2.1.0 RM (oracle seed 11111 scenario 0, shrunk) cut after a node went
    idle: n01 and n03, idle in --default--, have their arrival cut away, and only the occupancy
    table lists them (the 2.1.0 RM prints it at INFO). The first band counts pool np1 only; the
    next band's counters count the two. Not taken as there, rmref's How Much divided less free
    space (RM divergences in counts and the schedule; unshrunk, takeFromTheRich took nothing where
    the RM took), and then the cycles were audited for caps only. Listed, they are there before the
    log, sized by the table: every cycle is audited whole and every decision is truth's (with the
    quantum the published schedule pins: the job and machine sizes alone left 14 to 15, and 14
    put job 6's processes at order 2, a placement divergence)."""
    tables, result, frames, epochs = _audited(UNNAMED, "rm.log", kind, tmp)
    records = {r["epoch"]: r for r in truth(UNNAMED)}
    counted = {n["name"] for c in result.cycles for n in records[epochs[c]]["nodes"]}
    named = {h.name: h for h in machine_inventory(tables, bootstrap(tables)).hosts}
    listed = set(tables["occupancy"]["host"]) - set(tables["schedule"]["host"].drop_nulls())
    assert {"n01.sim.ducc", "n03.sim.ducc"} <= listed  # the precondition: only the table names them
    # the quantum, read off the schedule's memory per process (quantum x order), is the RM's
    rm_quantum = bootstrap(parsed(UNNAMED).tables).config.quantum_gb
    assert bootstrap(tables).config.quantum_gb == rm_quantum == 15
    assert counted <= set(named)
    assert all(named[n["name"]].order == n["order"] for c in result.cycles for n in records[epochs[c]]["nodes"])
    assert not result.divergences, result.divergences[:3]
    assert result.cycles and not result.skipped_kinds, result.skipped_kinds
    assert not _disagreeing(frames, result.cycles, epochs, UNNAMED)


UNDER_A_QUANTUM = "corpus/midstream_machine_under_a_quantum"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_machine_under_a_quantum_is_counted_at_order_0(level, kind, tmp):
    """A log of the 3.0.0 RM (the fixture corpus/midstream_class_sets_its_doubling with an 8 GB
    node, n10, added: the quantum is 10 GB) cut after a node went idle, audited with
    ducc.classes only. The RM counts every schedulable machine at its order, n10 at 0, so every
    vmachines line has a 1 at order 0; the check of the counters left it out, and every clean
    cycle was audited for caps only (DEBUG, where the occupancy table sizes n10), or n10, unsized
    at INFO, was inferred as order 4 and no cycle fitted. n10 is order 0, as truth.jsonl has it
    (inferred at INFO, and said so), every cycle is audited whole and every decision is truth's."""
    tables, result, frames, epochs = _audited(UNDER_A_QUANTUM, level, kind, tmp)
    records = {r["epoch"]: r for r in truth(UNDER_A_QUANTUM)}
    orders = {n["name"]: n["order"] for c in result.cycles for n in records[epochs[c]]["nodes"]}
    assert orders["n10.sim.ducc"] == 0  # the precondition: a machine smaller than a quantum
    hosts = {h.name: h for h in machine_inventory(tables, bootstrap(tables)).hosts}
    assert hosts["n10.sim.ducc"].order == 0
    said = {a.setting: a.value for a in result.assumed}
    assert (said.get("node n10.sim.ducc") == "order 0, nodepool --default--") == (level == "rm.log")
    assert not result.divergences, result.divergences[:3]
    assert result.cycles and not result.skipped_kinds, result.skipped_kinds
    assert not _disagreeing(frames, result.cycles, epochs, UNDER_A_QUANTUM)


NO_COUNTER = "corpus/midstream_pool_no_counter_covers"


@pytest.mark.parametrize("kind", KINDS)
def test_machines_no_counter_covers_are_not_sized_by_maxorder(kind, tmp):
    """An INFO log of the 2.2.2 RM (oracle seed 11212 scenario 3, unshrunk) cut at 95%: the first
    band counts pool np1 only, and no line sizes --default--'s ten machines (order 9), whose
    processes held 8 quanta at most. Only orders some counter shows were candidates, and 12, the
    one left above that floor and within the RM's maxorder, was taken as evidence: with the
    quantum read right (10; 9 put job 6's processes at order 3, which left them unknown) every
    machine was inferred, those ten as order 12, and How Much divided free space the RM did not
    (RM divergences in counts). They stay unknown, their cycles audited for caps only, saying
    so; every order inferred is truth's, and every cap is."""
    path = cut(NO_COUNTER, "rm.log", kind, tmp / f"no-counter-{kind}.log", at=0.95)
    tables = parse([path]).tables
    tables.update(read_resources(classes_only(NO_COUNTER, tmp / "no-counter-config")))
    result = audit(tables)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    records = {r["epoch"]: r for r in truth(NO_COUNTER)}
    orders = {n["name"]: n["order"] for c in result.cycles for n in records[epochs[c]]["nodes"]}
    hosts = machine_inventory(tables, bootstrap(tables)).hosts
    assert all(h.order == orders[h.name] for h in hosts if h.order is not None)
    unknown = {h.name for h in hosts if h.order is None}
    assert unknown and all(orders[n] == 9 for n in unknown)
    assert not result.divergences, result.divergences[:3]
    counts = result.skipped_kinds.get("counts", {})
    assert set(counts) == set(result.cycles) and all("could not be inferred" in w for w in counts.values())
    caps = {(c, j): a for c, j, _b, _p, _q, a in result_frames(result)["ref_caps"].drop("epoch", strict=False)
            .iter_rows()}
    assert caps and all(a == next(j["job_cap"] for j in records[epochs[c]]["jobs"] if j["id"] == job)
                        for (c, job), a in caps.items())


NEEDY_FIRST = "corpus/midstream_needy_pass_first"


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("kind", KINDS)
def test_the_first_cycles_needy_pass_is_read_off_its_expansions(kind, level, tmp):
    """A log of the real RM (oracle seed 11010, shrunk) cut late: the needy list the first whole
    cycle carries comes from a cycle before the log, and its needy pass shows it (a job expanded
    before the normal pass), though findShares prints its subpool line ("Doing expansions in this
    order") inside that pass, as the normal pass does; at DEBUG a "counted" line comes before it,
    at INFO nothing does, but the normal pass starts at a top-level pool. rmref serves that job
    first, as the RM did, and equals truth in every cycle."""
    path = cut(NEEDY_FIRST, level, kind, tmp / f"needy-{kind}-{level}.log", at=0.95)
    tables = parse([path]).tables
    tables.update(read_resources(classes_only(NEEDY_FIRST, tmp / "needy-config")))
    result = audit(tables)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    assert not result.divergences, result.divergences[:3]
    # (at INFO no line bounds the threshold: the RM's takings pin it, see above)
    assert not result.skipped_kinds.get("defrag"), result.skipped_kinds
    assert not _disagreeing(result_frames(result), result.cycles, epochs, NEEDY_FIRST)
    records = {r["epoch"]: r for r in truth(NEEDY_FIRST)}
    assert any(j["added"] for c in result.cycles for j in records[epochs[c]]["jobs"])  # it places new work


LATE = [name for name, level in LOGS if level == "rm.log"]


@cache
def _late(name: str, tmp: Path):
    path = cut(name, "rm.log", "between", tmp / f"{name}-late.log", at=2 / 3)
    tables = parse([path]).tables
    tables.update(read_resources(classes_only(name, tmp / f"{name}-config")))
    return tables, audit(tables), machine_inventory(tables, bootstrap(tables))


@pytest.mark.parametrize("name", LATE)
def test_late_cuts_leave_nodes_the_log_never_sizes(name, tmp):
    """Cut two thirds of the way in, an INFO log never sizes many of its nodes (no placement,
    black/whitelisting or reservation search names them again): each one's order is inferred and
    is truth's, and rmref still equals truth from the first whole cycle on."""
    tables, result, inventory = _late(name, tmp)
    orders = {n["name"]: n["order"] for r in truth(name) for n in r["nodes"]}
    assert not inventory.unknown and all(h.order == orders[h.name] for h in inventory.hosts)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    bad = {c for c, _e, _k in _disagreeing(result_frames(result), result.cycles, epochs, name)}
    assert len(result.cycles) - len(bad) >= 0.99 * len(result.cycles), sorted(bad)[:5]


def test_the_late_cuts_exercise_the_inference(tmp):
    """Most of the late cuts' nodes are solved for, not stated (d_fragmentation's cut never
    sizes any of its 8): the tests above check inferred orders, not only stated ones."""
    inferred = {name: sum(h.source == "inferred" for h in _late(name, tmp)[2].hosts) for name in LATE}
    assert inferred["d_fragmentation"] == 8 and sum(inferred.values()) >= 25, inferred


def test_without_the_node_files_it_says_which_to_copy(tmp):
    """c_nodepools' classes name node files: without them the nodepools cannot be rebuilt."""
    folder = classes_only("c_nodepools", tmp / "no-node-files", node_files=False)
    with pytest.raises(InputError, match=r"node file 'big.nodes' \(nodepool big\) is missing"):
        read_resources(folder)


def test_a_cycle_the_inference_cannot_settle_is_audited_for_caps_only(tmp_path):
    """h_mega15 from its 80th loop (15 nodes the log never sizes), with one cycle's counter
    showing a machine that is not there: the nodes are still inferred from the other cycles; that
    cycle's node-dependent decisions are left out, its caps audited, and the report says why."""
    text = _loop_onwards("h_mega15", 80)
    vectors = [i for i, line in enumerate(text) if "countClassShares vmachines =" in line]
    head, numbers = text[vectors[10]].split("vmachines =")
    values = numbers.split()
    values[47] = str(int(values[47]) + 1)  # one more free order-47 machine than the cluster has
    text[vectors[10]] = f"{head}vmachines =  {'  '.join(values)}\n"
    log = tmp_path / "rm.log"
    log.write_text("".join(text))
    tables = parse([log]).tables
    tables.update(read_resources(classes_only("h_mega15", tmp_path / "config")))
    tampered = 1 + sum("createState  Schedule sent" in line for line in text[:vectors[10]])
    result = audit(tables)
    report = result.report()
    assert set(result.skipped) == set()  # the log starts at a loop's first line
    for kind in ("counts", "placements", "evictions", "defrag", "schedule"):
        assert result.skipped_kinds[kind] == {tampered: "the inferred nodes do not reproduce this cycle's "
                                                        "RmCounter vmachines"}, kind
        assert report["coverage"][kind]["cycles_skipped"] == 1
    assert "caps" not in result.skipped_kinds and tampered in result.cycles
    assert report["coverage"]["caps"]["cycles_audited"] == report["cycles"] == 49
    orders = {n["name"]: n["order"] for r in truth("h_mega15") for n in r["nodes"]}
    inventory = machine_inventory(tables, bootstrap(tables))
    assert all(h.order == orders[h.name] for h in inventory.hosts)


def _loop_onwards(name: str, loop: int) -> list[str]:
    from tests.midstream import _lines

    lines = _lines(name, "rm.log")
    start = [i for i, line in enumerate(lines) if "Entering scheduling loop" in line][loop - 1]
    return lines[start:]


@pytest.mark.slow
def test_i_mega24_cut_near_its_end(tmp):
    """The 137 MB log's last 5% (111 cycles): 22 of its 53 nodes are never sized; each inferred
    order is truth's and rmref equals truth in every cycle (bench/bench_midstream.py times it)."""
    from tests.midstream import _lines

    lines = _lines("i_mega24", "rm.log")
    path = tmp / "i_mega24-tail.log"
    path.write_text("".join(lines[int(len(lines) * 0.95):]))
    del lines
    tables = parse([path]).tables
    tables.update(read_resources(classes_only("i_mega24", tmp / "i_mega24-config")))
    result = audit(tables)
    inventory = machine_inventory(tables, bootstrap(tables))
    orders = {n["name"]: n["order"] for r in truth("i_mega24") for n in r["nodes"]}
    assert sum(h.source == "inferred" for h in inventory.hosts) == 22
    assert not inventory.unknown and all(h.order == orders[h.name] for h in inventory.hosts)
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    assert not _disagreeing(result_frames(result), result.cycles, epochs, "i_mega24")
    assert len(result.cycles) == 111


NO_LINE_NAMES = "releases/2.2.2/gen12-004"  # the real 2.2.2 RM


def test_machines_no_line_names_leave_only_the_caps_to_audit(tmp):
    """2.2.2's INFO log names a node on no line once it has arrived while it stays idle (heartbeat
    lines print from 3.0.0 on): cut in the cycle a node went idle, the RmCounter blocks count
    machines no line names, which the replay cannot rebuild. Every cycle is audited for the caps
    alone (they do not read the machines), the rest left out with the reason, the assumption
    `nodes (unnamed)` says so, and the caps audited are truth.jsonl's."""
    tables = parse([cut(NO_LINE_NAMES, "rm.log", "between", tmp / "unnamed-cut.log")]).tables
    config = tmp / "unnamed-config"
    config.mkdir(exist_ok=True)
    (config / "ducc.classes").write_text(scenario(NO_LINE_NAMES)["classes"])
    result = audit({**tables, **read_resources(config)})
    note = {a.setting: a for a in result.assumed}["nodes (unnamed)"]
    assert "no line names" in note.value and "caps" in note.evidence
    assert result.cycles and not result.skipped
    for kind in ("counts", "placements", "evictions", "defrag", "schedule"):
        assert set(result.skipped_kinds.get(kind, {})) == set(result.cycles), kind
    assert "caps" not in result.skipped_kinds or not result.skipped_kinds["caps"]
    job_caps = {r["epoch"]: {j["id"]: j["job_cap"] for j in r["jobs"]} for r in truth(NO_LINE_NAMES)}
    ref = [(c, j, actual) for c, j, _b, _p, _q, actual in result.ref["caps"]]
    assert {c for c, _j, _a in ref} == set(result.cycles)
    assert [(c, j) for c, j, actual in ref if job_caps[result.epochs[c]][j] != actual] == []
