"""`rmreplay audit` on every fixture log (INFO and DEBUG): rmref's own decisions equal truth.jsonl.

The audit rebuilds each cycle from the log alone and runs rmref; here its reference decisions
(ref_*.parquet, not the logged ones) are compared with the real scheduler's state per cycle.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import pytest

from replay.apps.audit import audit, result_frames
from rmref.constants import NOT_NEW
from tests.helpers import CORPUS_LOGS, LOGS, parsed, truth
from tests.truth_inputs import defrag_evictions, expected_placements, removals


@lru_cache(maxsize=None)
def _audit(name: str, level: str):
    result = audit(parsed(name, level).tables)
    return result, result_frames(result)


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_every_cycle_agrees_with_the_log(name, level):
    result, _ = _audit(name, level)
    report = result.report()
    assert report["cycles"] == len(truth(name))
    assert report["cycles_agree"] == report["cycles"], result.divergences[:3]
    for kind in result.audited:
        tally = report["decisions"][kind]
        assert tally["agree"] == tally["total"], kind


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_caps_equal_truth(name, level):
    ref = _audit(name, level)[1]["ref_caps"]
    caps = {(r["cycle"], j["id"]): j["job_cap"] for r in truth(name) for j in r["jobs"]}
    assert ref.height > 0 or not caps  # (a log whose only work is refused has no cap to check)
    for cycle, job, actual in ref.select("cycle", "job_id", "actual_cap").iter_rows():
        assert actual == caps[(cycle, job)], (cycle, job)


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_placements_equal_truth(name, level):
    ref = _audit(name, level)[1]["ref_placements"]
    placed: dict[int, Counter] = {}
    for cycle, job, host, order in ref.select("cycle", "job_id", "host", "order").iter_rows():
        placed.setdefault(cycle, Counter())[(job, host, order)] += 1
    for record in truth(name):
        assert placed.get(record["cycle"], Counter()) == expected_placements(record), record["cycle"]


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_evictions_equal_truth(name, level):
    """doEvictions' victims are the shares first listed as removed, less defragmentation's."""
    ref = _audit(name, level)[1]["ref_evictions"]
    evicted: dict[int, set] = {}
    for cycle, job, host, share, reason in ref.drop("epoch").iter_rows():
        if reason in NOT_NEW:  # marked (or purged) again while leaving: no new removal
            continue
        evicted.setdefault(cycle, set()).add((job, host, share))
    before: set = set()
    for record in truth(name):
        now = removals(record)
        assert evicted.get(record["cycle"], set()) == (now - before) - defrag_evictions(record), record["cycle"]
        before = now


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_counts_equal_truth(name, level):
    ref = _audit(name, level)[1]["ref_counts"]
    given = {(r["cycle"], j["id"]): j["nshares_given"] for r in truth(name) for j in r["jobs"]}
    assert ref.height == len(given)  # every published job is counted, a deferral as 0
    for cycle, job, _order, shares in ref.drop("epoch").iter_rows():
        assert shares == given[(cycle, job)], (cycle, job)


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def _by_machine(actions: list[tuple]) -> list[tuple]:
    """Actions as (needy job, host, the donors' shares there): the machines in the order they were
    cleared, the shares of one machine as a set. Which of a machine's shares goes first follows
    the processes' investment, which no log prints (only its order within one job's Existing list)."""
    out: list[tuple] = []
    for needy, donor, host, share in actions:
        if out and out[-1][:2] == (needy, host):
            out[-1][2].add((donor, share))
        else:
            out.append((needy, host, {(donor, share)}))
    return out


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_defrag_equals_truth(name, level):
    """Every defragmentation action truth records, machine by machine in order, and nothing else."""
    ref = _audit(name, level)[1]["ref_defrag"]
    ours: dict[int, list] = {}
    for cycle, needy, donor, host, share in ref.drop("unsettled", "epoch").iter_rows():
        ours.setdefault(cycle, []).append((needy, donor, host, share))
    for record in truth(name):
        expected = [(a["needy_job"], a["donor_job"], a["host"], a["share"] if a["action"] == "evict" else 0)
                    for a in record["defrag"]["actions"]]
        assert _by_machine(ours.get(record["cycle"], [])) == _by_machine(expected), record["cycle"]


@pytest.mark.parametrize(("name", "level"), LOGS + CORPUS_LOGS)
def test_reference_schedule_equals_truth(name, level):
    """rmref's chained phases publish what the RM published: each job's Additions (hosts) and
    the shares it newly lists as Removals."""
    ref = _audit(name, level)[1]["ref_schedule"]
    ours: dict[int, tuple[Counter, set]] = {}
    for cycle, job, kind, host, share in ref.drop("epoch").iter_rows():
        added, removed = ours.setdefault(cycle, (Counter(), set()))
        if kind == "addition":
            added[(job, host)] += 1
        else:
            removed.add((job, host, share))
    before: set = set()
    for record in truth(name):
        added = Counter((j["id"], s["host"]) for j in record["jobs"] for s in j["shares"] if s["id"] in set(j["added"]))
        now = removals(record)
        assert ours.get(record["cycle"], (Counter(), set())) == (added, now - before), record["cycle"]
        before = now


def test_the_tally_order_of_i_mega24_is_a_verified_choice():
    """i_mega24 cycle 1473: jobs of different classes compete for one free order-37 slot; which
    is tallied first decides who is needy, and the INFO log does not show that order. The RM's
    verdict is one of those rmref reaches by the orders the log allows: verified, every cycle agrees."""
    result = audit(parsed("i_mega24").tables, cycles=range(1471, 1476))
    assert not result.divergences and result.cycles == [1471, 1472, 1473, 1474, 1475]
    rows = [(v.cycle, v.job_id, v.decision, v.step) for v in result.verified]
    assert (1473, 36, "defrag", "detectFragmentation") in rows
    assert {c for c, *_ in rows} == {1473}
