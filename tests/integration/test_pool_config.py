"""Configuration given with --config that leaves a pool's hosts or a user's allotment open, against
the real RM (truth.jsonl of the oracle runs in fixtures/cuts, README there).

rule_taken (3.0.0): pool rx takes hosts by a node rule (rx.regex: `rx.*`), np2's node file lists
n03, n04 is listed nowhere. The 3.0.0 RM puts all four hosts in rx: a host no rule matches goes to
the last rule's pool (UIMA-6097 fixed it after 3.0.0); the log maps each host at each heartbeat.

ip_listed (3.0.0): np2's node file lists n03 by its IP address (10.0.0.3); the RM resolves it, and the
log shows each node's IP (3.0.0 on).

users_unread: ducc.properties names ducc.users (ann: max-allotment 12 GB), the folder lacks it.
The RM deferred ann's second fixed-share job (8 GB, her first holds 8 GB): her allotment is not
the global 64 GB. Without the registry, which users have allotments of their own is not known,
and her allotment lines give hers.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import replace
from pathlib import Path

import polars as pl
import pytest

from replay import parse
from replay.apps.audit import audit
from replay.apps.simulate.simulation import simulate
from replay.parsing.sources import InputError
from replay.model.bootstrap import read_bootstrap, registry_unread
from replay.model.pools import POOLS_OPEN, pool_of
from replay.model.configdir import apply_config
from replay.model.conflicts import CONFLICTS
from replay.model.release import choose, with_option
from replay.model.resources import read_resources
from replay.model.start import bootstrap
from rmref.behaviours import for_release
from tests.helpers import FIXTURES

USERS = FIXTURES / "cuts" / "users_unread"
RULE = FIXTURES / "cuts" / "rule_taken"
IP = FIXTURES / "cuts" / "ip_listed"


def _cut(folder: Path, level: str = "rm.log"):
    tables = dict(parse([folder / f"{level}.gz"]).tables)
    tables.update(read_resources(folder / "resources"))
    with gzip.open(folder / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    return tables, records


def test_a_user_registry_the_config_lacks_leaves_the_users_allotments_open():
    tables, records = _cut(USERS)
    boot = read_bootstrap(tables)
    assert boot.users_open
    # the scenario's ducc.users, which the folder lacks: ann 12 GB (the global one is 64)
    assert boot.config.user_allotments == (("ann", 12),)
    assert boot.config.global_allotment == 64
    counted = _counts_agree_with_truth(tables, records)
    assert all(n == 0 for (_c, j), n in counted.items() if j == 4)  # deferred for ann's allotment


def _folder(tmp_path: Path, users: str | None, registry: str = "ducc.users") -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "ducc.classes").write_text((USERS / "resources" / "ducc.classes").read_text())
    (tmp_path / "np2.nodes").write_text((USERS / "resources" / "np2.nodes").read_text())
    (tmp_path / "ducc.properties").write_text(f"ducc.rm.user.registry = {registry}\n")
    if users is not None:
        (tmp_path / registry).write_text(users)
    return tmp_path


def test_a_registry_read_even_empty_says_the_users_have_none_of_their_own(tmp_path):
    assert not registry_unread(read_resources(_folder(tmp_path, "")))
    assert registry_unread(read_resources(_folder(tmp_path / "b", None)))
    assert registry_unread(read_resources(_folder(tmp_path / "c", None, "other.users")))


def test_a_folder_without_ducc_properties_is_open_already_and_gives_no_registry_row(tmp_path):
    folder = _folder(tmp_path, None)
    (folder / "ducc.properties").unlink()
    assert not registry_unread(read_resources(folder))


def _truth_pools(records: dict[int, dict]) -> dict[str, str]:
    first = records[min(records)]
    return {n["name"]: n["nodepool"] for n in first["nodes"]}


def _counts_agree_with_truth(tables, records) -> dict[tuple[int, int], int]:
    result = audit(tables)
    assert not result.divergences, result.divergences[:2]
    assert not result.skipped_kinds.get("counts"), result.skipped_kinds.get("counts")
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    counted = {(c, j): n for c, j, _o, n in result.ref["counts"]}
    given = {(c, j["id"]): j["nshares_given"] for c in result.cycles for j in records[epochs[c]]["jobs"]}
    assert counted and all(given[k] == n for k, n in counted.items())
    return counted


def test_the_hosts_a_node_rule_takes_are_in_its_pool_as_the_RM_put_them():
    tables, records = _cut(RULE)
    of = pool_of(tables, bootstrap(tables))
    truth = _truth_pools(records)
    assert set(truth.values()) == {"rx"}  # n03 (listed in np2) and n04 (listed nowhere) too
    assert {h: of(h) for h in truth} == truth
    assert {h: of.placed(h) for h in truth} == truth
    # rmref's machines sit in the pools the RM's counters count: every count audited, as truth
    _counts_agree_with_truth(tables, records)


def test_a_debug_log_reads_every_rule_the_rm_tried_and_no_cycle_is_damaged():
    # DEBUG (3.0.0 on): findNodepoolByRule logs each rule a host's full name, short name and IP
    # miss; n03 and n04 miss rx.* at each of their heartbeats (the cut's 3 rounds)
    tables, records = _cut(RULE, "rm-debug.log")
    assert tables["unparsed"].is_empty()
    misses = tables["nodes"].filter(pl.col("event") == "rule_miss")
    assert misses["host"].null_count() == misses.height  # a short name or an IP is no machine's name
    assert sorted(set(misses["detail"])) == [f"{kind}:  rx.* {name}" for kind, name in (
        ("ip", "10.0.0.3"), ("ip", "10.0.0.4"), ("name", "n03"), ("name", "n03.sim.ducc"), ("name", "n04"),
        ("name", "n04.sim.ducc"))]
    assert misses.height == 18
    assert not audit(tables).damaged
    assert {h: pool_of(tables, bootstrap(tables))(h) for h in _truth_pools(records)} == _truth_pools(records)
    _counts_agree_with_truth(tables, records)


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_rule_matching_a_short_name_or_an_ip_is_read_and_every_count_audited(level):
    # releases/3.0.0/pool_rule_forms: rx.regex `10\.0\.0\.2|rxa` matches rxb by its IP and rxa by its
    # short name only; the rule text was lexed as the integer 10 (the line unread, the cycle damaged),
    # and the name matched was taken for a machine there before the log (counts audited for caps only)
    run = FIXTURES / "releases" / "3.0.0" / "pool_rule_forms"
    tables = dict(parse([run / f"{level}.gz"]).tables)
    with gzip.open(run / "truth.jsonl.gz", "rt") as fh:
        records = {r["epoch"]: r for r in map(json.loads, fh)}
    assert tables["unparsed"].is_empty()
    matched = tables["nodes"].filter(pl.col("event") == "rule_match")
    assert set(matched["host"]) == {"rxa", "10.0.0.2"} and set(matched["nodepool"]) == {"rx"}
    assert not audit(tables).damaged
    counted = _counts_agree_with_truth(tables, records)
    assert len({c for c, _j in counted}) == len(records)


def test_without_the_logs_mapping_the_rule_places_hosts_by_the_release_replayed():
    tables, records = _cut(RULE)
    tables["nodes"] = tables["nodes"].filter(pl.col("event") != "map")
    boot = bootstrap(tables)
    three = replace(boot, config=replace(boot.config, behaviours=for_release("3.0.0")))
    truth = _truth_pools(records)
    assert {h: pool_of(tables, three)(h) for h in truth} == truth
    # trunk's RM (the same scenario, tests/oracle/scenarios/pool_rule.json): a host no rule
    # matches falls back to its node file's pool, else the first top-level pool
    trunk = replace(boot, config=replace(boot.config, behaviours=for_release("trunk")))
    assert {h: pool_of(tables, trunk)(h) for h in truth} == {
        "rxa.sim.ducc": "rx", "rxb.sim.ducc": "rx", "n03.sim.ducc": "np2", "n04.sim.ducc": "--default--"}


def test_a_cut_log_where_a_rule_takes_an_unmatched_host_is_inferred_3_0_0():
    # the cut has no banner; n03 and n04 are added by rule with no `match by` line: only 3.0.0 does it
    tables, _records = _cut(RULE)
    got = choose(tables)
    assert (got.release.name, got.source) == ("3.0.0", "inferred")
    assert "no rule matched" in got.evidence
    # trunk (the same scenario, tests/oracle/scenarios/pool_rule.json) adds no host by rule without
    # a match: the log without n03's and n04's add lines reads as 3.0.0 to trunk, replayed as trunk
    text = pl.col("text").fill_null("")
    tables["messages"] = tables["messages"].filter(~text.str.contains(r"^node:n0[34] rx add by rule"))
    assert choose(tables).release.name == "trunk"


def test_a_host_the_3_0_0_rule_takes_from_its_node_file_is_no_contradiction_of_the_config():
    # truth: the 3.0.0 RM put n03, which np2.nodes lists, in rx (no rule matches it: the last
    # rule's pool takes it), as the log maps it; only under trunk does the config say otherwise
    tables = dict(parse([RULE / "rm.log.gz"]).tables)
    assert _truth_pools(_cut(RULE)[1])["n03.sim.ducc"] == "rx"
    apply_config(tables, str(RULE / "resources"))
    assert tables[CONFLICTS].is_empty()
    trunk = dict(parse([RULE / "rm.log.gz"]).tables)
    with_option(trunk, "trunk")
    apply_config(trunk, str(RULE / "resources"))
    assert trunk[CONFLICTS].rows() == [("node n03 nodepool", "rx", "np2", "ducc.classes:3")]


def test_a_host_a_node_file_lists_by_ip_is_in_that_pool():
    tables, records = _cut(IP)
    of = pool_of(tables, bootstrap(tables))
    truth = _truth_pools(records)
    assert truth["n03.sim.ducc"] == "np2"
    assert {h: of(h) for h in truth} == truth
    assert {h: of.placed(h) for h in truth} == truth
    _counts_agree_with_truth(tables, records)


def test_a_host_an_ip_listing_may_name_is_an_open_pool_where_the_log_shows_no_ip():
    # a release before 3.0.0 logs no node IP: which host 10.0.0.3 is, the log does not tell
    tables, _records = _cut(IP)
    tables["nodes"] = tables["nodes"].with_columns(pl.lit(None, pl.String).alias("ip"))
    of = pool_of(tables, bootstrap(tables))
    assert of("n03.sim.ducc") == "--default--"
    assert of.placed("n03.sim.ducc") is None
    (said,) = of.assumed(["n01.sim.ducc", "n03.sim.ducc"])
    assert said.setting == POOLS_OPEN and "10.0.0.3" in said.evidence


def test_simulate_on_the_rule_cut_holds_what_the_rm_held_each_cycle():
    # ben's innp2 job waits for np2, which has no host, from before the cut: the Orchestrator
    # publishes no change of it, so no jobUpdate line gives its 400 items; the RM's job rows do.
    # Taken as empty, it would want nothing and its class's share would go to normal (cat), whom a
    # defragmentation take would feed from ann: the RM took nothing (truth)
    tables, records = _cut(RULE)
    sim = simulate(tables)
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    held = {(epoch[c], j): n for c, j, n in sim.baseline.held}
    expected = {(e, j["id"]): sum(not s["pending_remove"] for s in j["shares"])
                for e, r in records.items() if e >= min(epoch.values()) for j in r["jobs"]}
    assert len(expected) == 21 and held == expected
    (ben,) = [w for w in sim.workload.work if w.job_id == 2]
    truth_ben = next(j for j in records[min(epoch.values())]["jobs"] if j["id"] == 2)
    assert (ben.items, ben.items_done) == (truth_ben["nquestions"], truth_ben["nquestions"] - truth_ben["remaining"])
    assert "as the RM's job table shows it" in ben.note


def test_simulate_names_the_work_whose_class_a_cut_never_names():
    # alike_orders: job 12 (truth: class rsva) is deferred for cat's allotment in every cycle of
    # the cut, so no line of the job table names its class; its counting lines' policy narrows it
    # (tests/integration/test_simulate_cuts.py). Without them (edited away), nothing does: simulate
    # says which job, not an empty class name
    folder = FIXTURES / "cuts" / "alike_orders"
    tables, records = _cut(folder)
    assert next(j for r in records.values() for j in r["jobs"] if j["id"] == 12)["class"] == "rsva"
    tables = dict(tables, counts=tables["counts"].filter(pl.col("job_id") != 12))
    with pytest.raises(InputError, match=r"never names the class of job\(s\) 12;"):
        simulate(tables)
