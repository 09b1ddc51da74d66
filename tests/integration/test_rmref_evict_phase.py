"""The eviction phase on every fixture cycle: rmref's evictions equal the RM's new removals.

Inputs are truth's cycle-start state (`tests.truth_inputs.truth_cycles`) with the How Much count
per job taken from truth (`nshares_given`). truth has no per-process eviction data; the shared
input carries it as the log rebuild (replay/model/assembly.py) sees it: a process is initialized once it
has reported (these Orchestrators send an initialization window from the first report on), and
the investment of a running process is its position in the cycle's published `Existing` list,
which JobManagerConverter sorts with the very comparator shrinkBy uses
(RmJob.ShareByInvestmentSorter); a process still initializing has invested nothing (0), so ties
among those are left to rmref's own rules (larger host, then newest share), which
test_published_share_lists_are_in_investment_order checks on every list.
Hosts cleared for a reservation are the log's `Clearing <host> from preemptable list` lines.

Expected evictions of cycle N are truth's Removals of N that were not Removals of N-1 (a removal
is listed until the Orchestrator confirms it), less the defragmentation phase's own evictions.
"""

from __future__ import annotations

from functools import lru_cache

import polars as pl
import pytest

from replay.model.clock import ProcessClock
from rmref.constants import NOT_NEW, PURGES, SHRINK
from rmref.evictions import HeldShare, evictions, investment_key
from tests.helpers import SCENARIOS, parsed, truth
from tests.truth_inputs import TruthCycle, defrag_evictions, removals, truth_cycles


@lru_cache(maxsize=None)
def _cleared(name: str) -> dict[int, tuple[str, ...]]:
    """Per cycle, the hosts How Much cleared for a reservation (the same as `replay.model.logged`'s
    `Logged.cleared`, without building every other logged decision of the log)."""
    rows = parsed(name).tables["evictions"].filter(pl.col("reason") == "clear_for_reservation")
    out: dict[int, tuple[str, ...]] = {}
    for cycle, host in rows.select("cycle", "host").iter_rows():
        out[cycle] = (*out.get(cycle, ()), host)
    return out


def _evicted(name: str, tc: TruthCycle):
    """rmref's evictions for the cycle, given truth's counts."""
    counts = {j["id"]: j["nshares_given"] for j in tc.record["jobs"]}
    return evictions(tc.input, counts, _cleared(name).get(tc.input.cycle, ()))


def compare(name: str):
    """Per cycle: (cycle, defrag acted, expected, got) for every cycle."""
    out = []
    cycles = truth_cycles(name)
    for prev, tc in zip((None, *cycles), cycles):
        rec = tc.record
        new = removals(rec) - (removals(prev.record) if prev else set())
        # a share marked or purged again while leaving is no new removal
        got = {(e.job_id, e.host, e.share_id) for e in _evicted(name, tc) if e.reason not in NOT_NEW}
        out.append((tc.input.cycle, bool(rec["defrag"]["actions"]), new - defrag_evictions(rec), got))
    return out


# Cycles rmref cannot reproduce, with the cause (none left: the list stays for future fixtures).
KNOWN: dict[tuple[str, int], str] = {}


@pytest.mark.parametrize("name", SCENARIOS)
def test_evictions_equal_truth_new_removals(name):
    """Every cycle's evictions (purge, reservation clearing, shrink) are truth's new Removals."""
    rows = compare(name)
    assert any(expected for _, _, expected, _ in rows)  # every fixture takes something away
    for cycle, _, expected, got in rows:
        if (name, cycle) in KNOWN:
            assert expected != got, f"{name} cycle {cycle} now agrees: drop it from KNOWN"
            continue
        assert got == expected, (cycle, sorted(expected - got), sorted(got - expected))


@pytest.mark.parametrize("name", SCENARIOS)
def test_shrinks_and_purges_equal_the_logged_lines(name):
    """The INFO log's `shrinkBy Removing share` lines and `Host dead: ... purge` lines, cycle by cycle."""
    logged = parsed(name).tables["evictions"]
    for tc in truth_cycles(name):
        c = tc.input.cycle
        if (name, c) in KNOWN:
            continue
        ours = _evicted(name, tc)
        rows = logged.filter(pl.col("cycle") == c)
        shrunk = set(rows.filter(pl.col("reason") == "shrink").select("job_id", "host", "share_id").iter_rows())
        assert {(e.job_id, e.host, e.share_id) for e in ours if e.reason == SHRINK} == shrunk, c
        purged = sorted(rows.filter(pl.col("reason") == "node_purge").select("job_id", "host").iter_rows())
        assert sorted((e.job_id, e.host) for e in ours if e.reason in PURGES) == purged, c


@pytest.mark.parametrize("name", SCENARIOS)
def test_published_share_lists_are_in_investment_order(name):
    """Every `Existing` list the RM publishes (sorted by shrinkBy's comparator) agrees with rmref's
    order on what the log shows: processes still initializing (investment 0) come before running
    ones, and among them the larger host first, then the newest share. Processes the Orchestrator
    has not reported yet (printed `^0`) are left out: the RM orders those by its hash maps."""
    tables = parsed(name).tables
    clock = ProcessClock(tables["processes"], tables["cycles"])  # what the shared input's shares come from
    memory = {n["name"]: n["memory_kb"] // 1024 for rec in truth(name) for n in rec["nodes"]}
    listed = tables["schedule"].filter(pl.col("kind") == "existing").select("cycle", "job_id", "share_id", "host")
    published: dict[tuple[int, int], list[tuple[int, str]]] = {}  # (cycle, job) -> its list, in printed order
    for cycle, job, sid, host in listed.iter_rows():
        published.setdefault((cycle, job), []).append((sid, host))
    checked = 0
    for (cycle, job), entries in published.items():
        states = [(sid, host, *clock.state(cycle, host, sid)) for sid, host in entries]
        running = [r for _, _, reported, r in states if reported]
        assert running == sorted(running), (cycle, job)  # initializing ones first
        initializing = [HeldShare(sid, host, True, 0, 0, memory[host])
                        for sid, host, reported, r in states if reported and not r]
        assert initializing == sorted(initializing, key=investment_key), (cycle, job)
        checked += len(initializing) > 1
    assert checked


def agreement(name: str) -> dict[str, tuple[int, int]]:
    """Cycles matching exactly / total, apart for cycles where defragmentation acted."""
    rows = compare(name)
    out = {}
    for label, sel in (("plain", False), ("defrag", True)):
        part = [r for r in rows if r[1] == sel]
        out[label] = (sum(e == g for _, _, e, g in part), len(part))
    return out


if __name__ == "__main__":
    for n in SCENARIOS:
        print(n, agreement(n))
        for c, d, e, g in compare(n):
            if e != g:
                print("   ", c, "defrag" if d else "", "missing", sorted(e - g), "extra", sorted(g - e))
