"""The node-order search on many machines alike, on a shrunk run of the real 2.2.2 RM
(fixtures/releases/2.2.2/many-alike-machines, from oracle seed 11515 --focus wide, scenario 3),
held to its truth.jsonl and its log.

Cycle 127: one FIXED_SHARE job of order 51 gets 16 processes, one per machine, among the 46
machines of 64 quanta online, all free and alike but for their IPs, which a 2.2.2 log never shows.
Which 16 the RM took is the order of its node map, hashed on name and IP: the audit must find IPs under
which What Of puts every process where the RM did (a verified choice), and follow them. The search
took more runs of What Of than the 300 it was once allowed (`rmref.node_order.ORDER_BUDGET`)."""

from __future__ import annotations

from collections import Counter

import pytest

from replay.apps.audit import audit
from tests.helpers import parsed, truth

NAME, CYCLE, JOB = "releases/2.2.2/many-alike-machines", 127, 1


def _truth_hosts() -> Counter:
    [record] = [r for r in truth(NAME) if r["cycle"] == CYCLE]
    [job] = [j for j in record["jobs"] if j["id"] == JOB]
    hosts = {s["id"]: s["host"] for s in job["shares"]}
    return Counter(hosts[s] for s in job["added"])


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_the_rms_machines_among_many_alike_are_verified_by_node_ips(level):
    result = audit(parsed(NAME, level).tables, trace=(CYCLE,))
    assert not result.divergences
    rows = [v for v in result.verified if v.cycle == CYCLE and v.decision == "placements"]
    assert rows and all("IP" in v.explanation and "agrees" in v.explanation for v in rows)
    placed = Counter(p.host for p in result.traces[CYCLE].placements if p.job_id == JOB)
    assert sum(placed.values()) == 16 and placed == _truth_hosts()
