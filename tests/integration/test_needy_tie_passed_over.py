"""A needy job left off the list, as the INFO log shows it: the needy pass passes it over
(fixtures/corpus/needy_tie_passed_over, shrunk from seed 10909 scenario 3 of the `nodes` focus on
the real trunk RM).

Managed reservation 4 and service 5 (class fixeda, order 1) were submitted in the same millisecond
(scenario.json). Cycle 6 finds both potentially needy; the needy list, a TreeMap on submission time,
keeps only one of the two. Cycle 7's needy pass gives job 5 a process on np104 (`expandNeedyJobs
Assign:`) and job 4 nothing, although job 4 is still one short when the cycle ends (doEvictions:
counted 1, current 0): had job 4 been on the list it came first (it was not submitted after 5) and
took that process. So job 4 was left off, and the reservation 6 that follows takes np105. At DEBUG
the pass prints its list (`Expand needy fixed. [5 ]`); the INFO log must give rmref the same input.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import polars as pl

from replay.apps.audit import audit, result_frames
from replay.model.needy import needy_left_off, needy_ties
from replay.model.start import cycle_inputs
from replay.model.submission import submission_order
from tests.helpers import parsed, scenario, truth

NAME = "corpus/needy_tie_passed_over"
CYCLE = 7


@lru_cache(maxsize=None)
def _audited(level: str):
    return audit(parsed(NAME, level).tables)


def _truth_added() -> dict[int, Counter]:
    record = next(r for r in truth(NAME) if r["cycle"] == CYCLE)
    return {j["id"]: Counter(s["host"] for s in j["shares"] if s["id"] in set(j["added"])) for j in record["jobs"]
            if j["added"]}


def test_the_info_log_shows_job_4_left_off_as_the_debug_log_lists_it():
    work = scenario(NAME)["work"]
    assert work[3]["type"] == "ap" and work[4]["type"] == "service"
    assert work[3]["submit_ms"] == work[4]["submit_ms"]  # DuccIds 4 and 5: submitted in one millisecond
    info, debug = parsed(NAME, "rm.log").tables, parsed(NAME, "rm-debug.log").tables
    assert "expand_needy" not in set(info["defrag"]["kind"].to_list())  # INFO: no list printed
    assert needy_left_off(info) == needy_left_off(debug) == {CYCLE: {4}}
    assert (4, 5) in needy_ties(info) and submission_order(info)[5] == 4


def test_a_job_that_names_its_machines_proves_nothing():
    """Had job 4 named its machines (trunk's "machine list:"), findShares might have found none of
    them free: passed over, it may still have been on the list (hand-worked)."""
    tables = dict(parsed(NAME, "rm.log").tables)
    events = tables["job_events"]
    row = pl.DataFrame([{**{c: None for c in events.columns}, "job_id": 4, "event": "machine_list",
                         "hosts": ["np105.sim.ducc"]}], schema=events.schema)
    tables["job_events"] = pl.concat([events, row])
    assert needy_left_off(tables) == {}


def test_the_info_input_of_every_cycle_is_the_debug_input():
    info = list(cycle_inputs(parsed(NAME, "rm.log").tables))
    debug = list(cycle_inputs(parsed(NAME, "rm-debug.log").tables))
    assert [i.cycle for i in info] == [d.cycle for d in debug]
    assert next(i for i in info if i.cycle == CYCLE).needy == (5,)
    assert info == debug


def test_cycle_7_places_as_the_rm_did_at_both_levels():
    truth_added = _truth_added()
    assert truth_added == {5: Counter({"np104.sim.ducc": 1}), 6: Counter({"np105.sim.ducc": 1})}
    for level in ("rm.log", "rm-debug.log"):
        result = _audited(level)
        assert result.report()["cycles_agree"] == len(result.cycles)
        placed = result_frames(result)["ref_placements"].to_dicts()
        ours: dict[int, Counter] = {}
        for row in placed:
            if row["cycle"] == CYCLE:
                ours.setdefault(row["job_id"], Counter())[row["host"]] += 1
        assert ours == truth_added, level
