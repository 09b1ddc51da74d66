"""A 2.2.2 log never shows a node's IP (fixtures/releases/2.2.2_node_ip/, the real RM of 2.2.2).

One job of 3 processes, two free machines alike in pool np2. The RM's node maps are hashed on
name and IP, so which machine findShares meets first depends on the IPs: with the scenario's
real IPs rmref's hash model picks the RM's machine (truth.jsonl); with none, as the log gives
them, it picks the other. The audit must read the release from the banner and verify the RM's
choice (some IPs reproduce it); read as a release that logs IPs (3.0.0 on), it stays a divergence.
"""

from __future__ import annotations

import gzip
from collections import Counter
from dataclasses import replace
from functools import lru_cache

import pytest

from replay import parse
from replay.apps.audit import audit
from replay.model.start import bootstrap, cycle_inputs
from rmref.behaviours import Behaviours, for_release
from rmref.whatof import what_of
from tests.helpers import log_path, parsed, scenario, truth

NAME = "releases/2.2.2_node_ip"
CYCLE, JOB = 1, 1


def _truth_hosts() -> Counter:
    record = next(r for r in truth(NAME) if r["cycle"] == CYCLE)
    job = next(j for j in record["jobs"] if j["id"] == JOB)
    return Counter(s["host"] for s in job["shares"] if s["id"] in set(job["added"]))


def _input():
    return next(cycle_inputs(parsed(NAME).tables, cycles=range(CYCLE, CYCLE + 1)))


def test_the_banner_names_the_release():
    assert bootstrap(parsed(NAME).tables).config.behaviours == for_release("2.2.2")


def test_with_the_real_ips_rmref_picks_the_rms_machine_and_without_them_the_other():
    inp = _input()
    assert all(m.ip == "" for m in inp.machines)  # the 2.2.2 log has none
    ips = {n["name"]: n["ip"] for n in scenario(NAME)["nodes"]}
    counts = {JOB: sum(_truth_hosts().values())}
    with_ips = replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines))
    assert Counter(p.host for p in what_of(with_ips, counts) if p.job_id == JOB) == _truth_hosts()
    assert Counter(p.host for p in what_of(inp, counts) if p.job_id == JOB) != _truth_hosts()


@pytest.fixture(scope="module")
def tables(tmp_path_factory):
    """banner -> the fixture's tables, its banner naming that release (the same log otherwise)."""
    raw = gzip.decompress(log_path(NAME).read_bytes()).decode()
    assert "DUCC Version            :  2.2.2" in raw

    @lru_cache(maxsize=None)
    def read(banner: str) -> dict:
        path = tmp_path_factory.mktemp("release_node_ip") / "rm.log"
        path.write_text(raw.replace("DUCC Version            :  2.2.2", f"DUCC Version            :  {banner}"))
        return parse([path]).tables
    return read


def _placements(tables: dict) -> list:
    return [d for d in audit(tables).divergences if d.decision == "placements"]


def test_an_unknown_release_is_audited_as_the_latest(tables):
    assert bootstrap(tables("9.9.9")).config.behaviours == Behaviours()


def test_the_audit_verifies_the_choice_by_node_ips(tables):
    result = audit(tables("2.2.2"), trace=(CYCLE,))
    assert not [d for d in result.divergences if d.decision == "placements"]
    rows = [v for v in result.verified if v.decision == "placements"]
    assert rows and all(r.cycle == CYCLE and "IP" in r.explanation and "agrees" in r.explanation for r in rows)
    # the cycle follows the RM's choice: rmref's placements are truth's
    assert Counter(p.host for p in result.traces[CYCLE].placements if p.job_id == JOB) == _truth_hosts()


def test_a_release_that_logs_ips_does_not_verify_it(tables):
    result = audit(tables("3.0.0"))
    assert _placements(tables("3.0.0"))
    assert not [v for v in result.verified if "IP" in v.explanation]
