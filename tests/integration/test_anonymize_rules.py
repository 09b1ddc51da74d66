"""`rmreplay anonymize` on a 3.0.0 log with a node rule (a nodepool's regex over host names and IPs).

Ground truth: the log itself (its nodepools' rules, the hosts its `match by` lines say a rule
took) and the real RM's truth.jsonl (each host's nodepool). The rule's text names the site's hosts,
so none of it may be left; and once renamed, the rule must still take the pseudonyms of the hosts
it took: PoolOf over the anonymized tables, with the lines that map hosts to pools removed, must
put each pseudonym where truth.jsonl puts its host.
"""

from __future__ import annotations

import gzip
import json
import re

import polars as pl
import pytest

from replay import parse
from replay.apps.anonymize import anonymize
from replay.apps.anonymize.mapping import Pseudonyms
from replay.apps.anonymize.names import Inventory
from replay.apps.anonymize.rules import MATCHES_NOTHING, rename_rules
from replay.model.pools import PoolOf
from rmref.behaviours import for_release
from tests.helpers import FIXTURES
from tests.integration.test_anonymize import _log_lines, _nothing_left

TOP = "--default--"
CASES = [(name, level) for name in ("pool_rule", "pool_rule_forms") for level in ("rm.log.gz", "rm-debug.log.gz")]


def _truth_pools(name: str) -> dict[str, str]:
    """Each host's nodepool, as the real RM reported it (the first cycle of truth.jsonl)."""
    with gzip.open(FIXTURES / "releases" / "3.0.0" / name / "truth.jsonl.gz", "rt") as fh:
        first = json.loads(fh.readline())
    return {n["name"]: n["nodepool"] for n in first["nodes"]}


def _unmapped(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The tables without the lines that map a host to its pool: PoolOf must go by the rules."""
    nodes = tables["nodes"].filter(~pl.col("event").is_in(("map", "arrive")))
    return {**tables, "nodes": nodes}


@pytest.mark.parametrize(("name", "level"), CASES)
def test_a_node_rule_becomes_the_pseudonyms_it_matched(name, level, tmp_path, capsys):
    log = FIXTURES / "releases" / "3.0.0" / name / level
    done = anonymize([str(log)], tmp_path / "out")  # raises unless the output parses to the same tables, renamed
    capsys.readouterr()
    original = parse([log]).tables
    rules = original["nodepools"]["node_rule"].drop_nulls().unique().to_list()
    assert rules
    lines = _log_lines(tmp_path / "out")
    for rule in rules:
        assert not lines.str.contains(rule, literal=True).any(), f"the rule {rule!r} is left in the output"
    _nothing_left(tmp_path / "out", json.loads(done.mapping.read_text()))

    renamed = done.pseudonyms.kinds["hosts"]
    anonymized = _unmapped(parse([tmp_path / "out" / level]).tables)
    # the release's own rules (3.0.0: a host no rule takes goes to the last rule's pool)
    pool_of = PoolOf(anonymized, TOP, for_release("3.0.0"))
    for host, pool in _truth_pools(name).items():
        assert pool_of(renamed[host]) == pool, host
    # the hosts the log says a rule took, taken by the rule itself (not by 3.0.0's fall-through)
    by_rule = PoolOf(anonymized, TOP, for_release("trunk"))
    nodes = original["nodes"]
    host_of_ip = dict(nodes.filter(pl.col("ip").is_not_null() & pl.col("host").is_not_null())
                      .select("ip", "host").iter_rows())
    taken = nodes.filter(pl.col("event") == "rule_match").select("host", "nodepool").unique().iter_rows()
    checked = 0
    for matched, pool in taken:
        host = host_of_ip.get(matched, matched)
        assert by_rule(done.pseudonyms.words[host]) == pool, (matched, pool)
        checked += 1
    assert checked


def test_a_rule_that_matched_nothing_matches_nothing():
    """A rule no host of the log matched (hand-worked): `(?!)`, which no pseudonym matches either;
    one that matched a host and an IP: their pseudonyms, dots escaped, and nothing else."""
    p = Pseudonyms(bytes(32))
    p.words.update({"prod-db-1.site.example": "host-aaaaaa.dom-bbbbbb", "10.1.2.3": "10.255.0.7"})
    rename_rules(p, {"prod-web-.*": set(), "prod-db-.*|10\\.1\\.2\\.3": {"prod-db-1.site.example", "10.1.2.3"}},
                 Inventory())
    assert p.kinds["rules"] == {"prod-web-.*": MATCHES_NOTHING,
                                "prod-db-.*|10\\.1\\.2\\.3": "10\\.255\\.0\\.7|host-aaaaaa\\.dom-bbbbbb"}
    assert all(re.fullmatch(MATCHES_NOTHING, s) is None for s in ("", "host-aaaaaa", "prod-web-1"))
    p.words["n01"] = "host-cccccc"  # a rule that spells one name: that name's pseudonym stands for it
    rename_rules(p, {"n01": {"n01"}}, Inventory(protected={"rx"}))
    assert "n01" not in p.kinds["rules"] and "n01" not in p.kept and p.words["n01"] == "host-cccccc"
    rename_rules(p, {"rx": set()}, Inventory(protected={"rx"}))  # also the name of a nodepool: kept
    assert "rx" in p.kept and "rx" not in p.words
    pattern = re.compile(p.kinds["rules"]["prod-db-.*|10\\.1\\.2\\.3"])
    assert [s for s in ("host-aaaaaa.dom-bbbbbb", "10.255.0.7", "host-aaaaaaxdom-bbbbbb", "10.255.0.70")
            if pattern.fullmatch(s)] == ["host-aaaaaa.dom-bbbbbb", "10.255.0.7"]
