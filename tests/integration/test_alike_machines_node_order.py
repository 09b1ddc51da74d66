"""What Of on a 2.2.2 log among machines alike but for their unlogged IPs
(fixtures/corpus/alike_machines_node_order, shrunk from held-out seed 10202 scenario 5 on the real
RM of 2.2.2).

Cycle 1: eight machines of 20 quanta, all free, one pool. The reservation (job 3) takes the first
machine of findMachines' node map, n07; the fair-share job 1 (11 quanta) the first of the pool's
map of machines with 20 free, n13, and job 2 (3 quanta) stacks on n13, the only machine with 9
free. Both orders come from the nodes' hashes on name and IP, which a 2.2.2 log never shows; with
no IP rmref meets n08 and n10 first. The scenario's real IPs make rmref reproduce the RM; a climb
over random IPs (the search before the order search) found none in 900 runs. The order search
(rmref.node_order) finds an order, hence IPs, under which What Of places all three processes where
the RM did: the cycle is a verified choice, and every decision agrees with the log and truth.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from functools import lru_cache

from replay.apps.audit import audit
from replay.model.start import cycle_inputs
from rmref.whatof import what_of
from tests.helpers import parsed, scenario, truth

NAME = "corpus/alike_machines_node_order"
CYCLE = 1


@lru_cache(maxsize=None)
def _result():
    return audit(parsed(NAME).tables, trace=(CYCLE,))


def _truth_added() -> dict[int, Counter]:
    record = next(r for r in truth(NAME) if r["cycle"] == CYCLE)
    return {j["id"]: Counter(s["host"] for s in j["shares"] if s["id"] in set(j["added"])) for j in record["jobs"]
            if j["added"]}


def _input():
    return next(cycle_inputs(parsed(NAME).tables, cycles=range(CYCLE, CYCLE + 1)))


def _placed(inp, counts) -> dict[int, Counter]:
    out: dict[int, Counter] = {}
    for p in what_of(inp, counts):
        out.setdefault(p.job_id, Counter())[p.host] += 1
    return out


def test_the_real_ips_reproduce_the_rm_and_no_ips_do_not():
    inp, truth_added = _input(), _truth_added()
    counts = {j: sum(c.values()) for j, c in truth_added.items()}
    assert truth_added == {3: Counter({"n07.sim.ducc": 1}), 1: Counter({"n13.sim.ducc": 1}),
                           2: Counter({"n13.sim.ducc": 1})}
    assert all(m.ip == "" for m in inp.machines)
    ips = {n["name"]: n["ip"] for n in scenario(NAME)["nodes"]}
    assert _placed(replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines)), counts) \
        == truth_added
    assert _placed(inp, counts) != truth_added


def test_the_placements_are_verified_by_node_ips_and_every_decision_agrees():
    result = _result()
    assert not result.divergences
    rows = [v for v in result.verified if v.decision == "placements"]
    assert sorted(v.job_id for v in rows) == [1, 2, 3] and all(v.cycle == CYCLE for v in rows)
    assert all("IP" in v.explanation and "agrees: the RM meets machines alike" in v.explanation for v in rows)
    placed = _result().traces[CYCLE].placements
    assert _truth_added() == {j: Counter(p.host for p in placed if p.job_id == j) for j in (1, 2, 3)}


def test_each_verified_placement_names_the_method_that_placed_it():
    """The scenario submits two jobs, then a reservation (job 3, class rsvb: policy RESERVE), which
    findMachines places; jobs 1 and 2 are fair-share jobs, placed by findShares."""
    assert [(w["type"], w["class"]) for w in scenario(NAME)["work"]] == [
        ("job", "fair18b"), ("job", "fair18a"), ("reservation", "rsvb")]
    rows = {v.job_id: v for v in _result().verified if v.decision == "placements"}
    assert {j: v.step for j, v in rows.items()} == {1: "findShares", 2: "findShares", 3: "findMachines"}
    assert rows[3].explanation.startswith("findMachines, job 3: agrees:")
