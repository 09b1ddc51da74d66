"""A decision that rests on a node order a mid-stream log leaves open is no RM divergence (truth.jsonl).

fixtures/cuts/open_order_defrag: an INFO log of the real 3.0.0 RM (oracle seed 12121, focus
fragmentation, scenario 7) cut between two cycles, 95% of the cycles in, audited with its
ducc.classes only. The counters leave eight nodes of order 11 or 32 (alike, or inferences that
fit as well); the one taken gives n11 order 32, where truth has 11 (and n03, taken as 11, 32).
Needy job 31 wants a process of order 31: on n11 as order 32 rmref's takeFromTheRich takes ten
of job 21's processes, where the RM took nothing. The RM is not at fault: the log does not give
n11's order.
"""

from __future__ import annotations

import gzip
import json

from replay import parse
from replay.apps.audit import audit
from replay.model.resources import read_resources
from tests.helpers import FIXTURES

CUT = FIXTURES / "cuts" / "open_order_defrag"


def _audited():
    tables = dict(parse([CUT / "rm.log.gz"]).tables)
    tables.update(read_resources(CUT / "resources"))
    with gzip.open(CUT / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    return audit(tables), records, epochs


def test_a_takeFromTheRich_on_an_open_order_is_left_out_not_a_divergence():
    result, records, epochs = _audited()
    orders = {n["name"]: n["order"] for n in records[epochs[result.cycles[0]]]["nodes"]}
    assert (orders["n11.sim.ducc"], orders["n03.sim.ducc"]) == (11, 32)  # what the log leaves open
    taken = {a.setting: a.value for a in result.assumed}
    assert taken["node n11.sim.ducc"].startswith("order 32 taken of 11 or 32")
    assert not result.divergences, result.divergences[:2]
    # truth: the RM's defragmentation took nothing in any of these cycles
    assert all(not records[epochs[c]]["defrag"]["actions"] for c in result.cycles)
    for kind in ("defrag", "schedule"):
        left_out = result.skipped_kinds.get(kind, {})
        assert set(left_out) == set(result.cycles), kind
        assert all("n11.sim.ducc (taken as order 32, of 11 or 32)" in why for why in left_out.values())
    # what did not diverge stays audited, and agrees with truth
    assert not result.skipped_kinds.get("counts")
    counted = {(c, j): n for c, j, _o, n in result.ref["counts"]}
    given = {(c, j["id"]): j["nshares_given"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert counted and all(given[k] == n for k, n in counted.items())


LEFT = FIXTURES / "cuts" / "leaving_or_cleared"


def _audited_left(level: str):
    tables = dict(parse([LEFT / f"{level}.gz"]).tables)
    tables.update(read_resources(LEFT / "resources"))
    with gzip.open(LEFT / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    return audit(tables), records, epochs


def _leaving_at(records: dict, epoch: int) -> set[tuple[int, int]]:
    """(job, share) truth lists as preempted in the record before `epoch` and still held at it."""
    before, now = records[epoch - 1], records[epoch]
    held = {(j["id"], s["id"]) for j in now["jobs"] for s in j["shares"]}
    return {(j["id"], s) for j in before["jobs"] for s in j["preempted"]} & held


def test_a_removal_from_before_the_log_on_a_machine_the_cycle_clears_is_counted_out_at_debug():
    """fixtures/cuts/leaving_or_cleared (the real 2.1.0 RM, oracle seed 12121 focus fragmentation,
    scenario 3, cut between cycles after a node went idle): the first cycle's schedule lists jobs 5
    and 6's processes on np102 for removal, and a reservation clears np102 in it; truth: job 5's
    12 and job 6's 19 were preempted the cycle before, job 6's 11 is the clearing's. findShares'
    counts (DEBUG) leave 12 and 19 out: they are leaving as the log began, and the cycle agrees
    (rmref had counted them, capping jobs 5 and 6 at 6 and 4 where the RM's caps are 4 and 2)."""
    result, records, epochs = _audited_left("rm-debug.log")
    first = min(epochs.values())
    leaving = next(a.value for a in result.assumed if a.setting == "processes leaving as the log began")
    assert {(5, 12), (6, 19)} == _leaving_at(records, first)
    assert leaving.endswith("job 5 np102.sim.ducc.12, job 6 np102.sim.ducc.19")
    assert not result.divergences, result.divergences[:2]
    assert epochs[result.cycles[0]] == first and not result.skipped
    caps = {(c, j): a for c, j, _b, _p, _q, a in result.ref["caps"]}
    want = {(c, j["id"]): j["job_cap"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert caps[(result.cycles[0], 5)] == 4 and caps[(result.cycles[0], 6)] == 2
    assert all(want[k] == cap for k, cap in caps.items())


def test_at_info_which_removals_the_clearing_took_is_not_a_divergence():
    """The same cut at INFO, which prints no findShares count and no process the clearing takes:
    whether 11, 12 and 19 were leaving or taken by the clearing no line says, so the first cycle
    is not audited (and says why), not an RM divergence on jobs 5 and 6's caps."""
    result, records, epochs = _audited_left("rm.log")
    first = min(c for c, e in epochs.items() if e == 40)
    assert {(5, 12), (6, 19)} == _leaving_at(records, 40)
    assert not result.divergences, result.divergences[:2]
    why = result.skipped[first]
    assert "job 5 np102.sim.ducc.12" in why and "clearing of np102.sim.ducc" in why
    assert len(result.cycles) == len(epochs) - 1


POOLS = FIXTURES / "cuts" / "open_order_pools"


def test_a_deferral_for_want_of_a_big_machine_on_sizes_the_counters_leave_to_either_pool_is_no_divergence():
    """fixtures/cuts/open_order_pools: an INFO log of the real trunk RM (oracle seed 12222, focus
    reserve, scenario 2) cut inside an RmCounter block after a node went idle, then ended at
    00:27:10, audited with its ducc.classes and np1.nodes. Only --default--'s counters are printed,
    and they count np1's machines with its own: which pool holds the four order-21 nodes they show
    no counter tells, and the inference puts them in np1 (truth: n01, n04, n05, n06 of --default--).
    Job 15, a 56 GB (order 19) request of fixed-share class fixeda in np1, is deferred by the RM
    (`no machines big enough`: truth gives it nothing, np1's largest node is order 18); on the
    orders taken rmref granted it one, on np1's order-21 nodes. The RM is not at fault: with np1's
    open nodes given the smallest of the sizes the counters count, rmref defers it too."""
    tables = dict(parse([POOLS / "rm.log.gz"]).tables)
    tables.update(read_resources(POOLS / "resources"))
    with gzip.open(POOLS / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    result = audit(tables)
    audited = [epochs[c] for c in result.cycles]
    # truth: job 15 asks for order 19, np1 has no node that big, the RM gave it nothing
    job15 = [j for e in audited for j in records[e]["jobs"] if j["id"] == 15]
    assert job15 and {(j["class"], j["nshares_given"]) for j in job15} == {("fixeda", 0)}
    assert all(n["order"] < 19 for e in audited for n in records[e]["nodes"] if n["nodepool"] == "np1")
    assert {n["name"] for n in records[audited[0]]["nodes"] if n["order"] == 21} >= {
        "n01.sim.ducc", "n04.sim.ducc", "n05.sim.ducc", "n06.sim.ducc"}
    taken = {a.setting: a.value for a in result.assumed}
    assert sum(taken[f"node np10{k}.sim.ducc"].startswith("order 21 taken") for k in (1, 3, 5, 6)) >= 3
    assert not result.divergences, result.divergences[:2]
    left_out = result.skipped_kinds.get("counts", {})
    open_ = {epochs[c] for c, why in left_out.items() if "rest on orders the log leaves open" in why}
    assert open_ == {158, 159, 162}  # the cycles the RM counted job 15 in (deferring it)
    # what is audited agrees with truth: every count rmref gave, and job 15's nothing elsewhere
    counted = {(c, j): n for c, j, _o, n in result.ref["counts"]}
    given = {(c, j["id"]): j["nshares_given"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert counted and all(given[k] == n for k, n in counted.items())
