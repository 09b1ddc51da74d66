"""rmref's What Of places every new process on the host the RM chose, on every fixture cycle.

Input: each cycle's start state rebuilt from truth (tests.truth_inputs) and truth's How Much count
per job. Expected: the (job, host, order) of the shares truth lists as `added`, corrected for what
the same cycle's defragmentation did afterwards to shares What Of had just placed: a
`cancel_pending` share was taken back (so it never reaches `added`), a `reassign_pending` share
was handed from its donor to the needy job (so `added` lists it under the needy job).

Three facts the shared truth input does not carry yet are supplied here (see `_input`):
- the needy list a cycle starts with is every job with `in_needy_list` after the previous cycle
  (the RM keeps a job there even when the needy count is 0, so `defrag.needy` misses some);
- a managed reservation (`ap`) is not a service: its service id is 0, which makes fixed-share
  placement avoid machines already running other id-0 work (g_reservations_services cycle 3);
- the order in which the RM's class job tables list the jobs (HashMaps keyed by random UUIDs) is
  the order of the cycle's "Scheduling job ..." lines; it decides which of two machines sharing a
  hash bucket comes first (h_mega15 cycle 38).
Nodes are put in the order they arrived, as the RM's node map was filled.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from functools import lru_cache

import polars as pl
import pytest

from rmref.whatof import what_of
from tests.conftest import SCENARIOS, parsed
from tests.truth_inputs import truth_cycles


@lru_cache(maxsize=None)
def _arrival(name: str) -> dict[str, int]:
    hosts = parsed(name).tables["nodes"].filter(pl.col("event") == "arrive").sort("line")["host"]
    return {h: i for i, h in enumerate(dict.fromkeys(hosts.to_list()))}


@lru_cache(maxsize=None)
def _job_table_order(name: str) -> dict[int, dict[int, int]]:
    """cycle -> job -> position in the cycle's "Scheduling job ..." lines (the class job-table order)."""
    out: dict[int, dict[int, int]] = {}
    counts = parsed(name).tables["counts"].filter(pl.col("job_id").is_not_null()).sort("line")
    for cycle, job in counts.select("cycle", "job_id").iter_rows():
        out.setdefault(cycle, {}).setdefault(job, len(out[cycle]))
    return out


def _input(name, tc, prev_record):
    inp = tc.input
    needy = tuple(j["id"] for j in prev_record["jobs"] if j["in_needy_list"]) if prev_record else ()
    managed = {j["id"] for j in tc.record["jobs"] if j.get("ap")}
    pos = _job_table_order(name).get(inp.cycle, {})
    arrival = _arrival(name)
    work = tuple(dataclasses.replace(w, work_type="ManagedReservation") if w.job_id in managed else w
                 for w in inp.work)
    return dataclasses.replace(
        inp, needy=needy,
        work=tuple(sorted(work, key=lambda w: (pos.get(w.job_id, len(pos)), w.job_id))),
        machines=tuple(sorted(inp.machines, key=lambda m: arrival.get(m.name, len(arrival)))),
    )


def _expected(record) -> Counter:
    out = Counter()
    for j in record["jobs"]:
        added = set(j["added"])
        out.update((j["id"], s["host"], s["order"]) for s in j["shares"] if s["id"] in added)
    for a in record["defrag"]["actions"]:
        if a["action"] == "cancel_pending":  # placed for the donor, then taken back
            out[(a["donor_job"], a["host"], a["order"])] += 1
        elif a["action"] == "reassign_pending":  # placed for the donor, then handed to the needy job
            out[(a["donor_job"], a["host"], a["order"])] += 1
            out[(a["needy_job"], a["host"], a["order"])] -= 1
    return +out


@pytest.mark.parametrize("name", SCENARIOS)
def test_placements_match_truth_on_every_cycle(name):
    cycles = truth_cycles(name)
    placed = 0
    for prev, tc in zip((None, *cycles), cycles):
        inp = _input(name, tc, prev.record if prev else None)
        counts = {j["id"]: j["nshares_given"] for j in tc.record["jobs"]}
        got = Counter((p.job_id, p.host, p.order) for p in what_of(inp, counts))
        expected = _expected(tc.record)
        assert got == expected, (tc.record["cycle"], dict(got - expected), dict(expected - got))
        placed += sum(expected.values())
    assert placed > 0


def test_needy_jobs_with_zero_need_still_expand_first():
    """g cycle 42: job 19 is in the needy list (needy count 0), so its fixed share is placed by
    expandNeedyJobs with stacking; the normal fixed-share pass would refuse the stacked machine."""
    cycles = truth_cycles("g_reservations_services")
    prev, tc = cycles[40], cycles[41]
    assert tc.record["cycle"] == 42 and not prev.record["defrag"]["needy"]
    counts = {j["id"]: j["nshares_given"] for j in tc.record["jobs"]}
    with_list = what_of(_input("g_reservations_services", tc, prev.record), counts)
    without = what_of(dataclasses.replace(_input("g_reservations_services", tc, prev.record), needy=()), counts)
    assert Counter((p.job_id, p.host) for p in with_list) == Counter({(19, "gnode01.sim.ducc"): 1})
    assert not without
