"""A 3.0.0 node rule (a nodepool's `Node Rule`, a regex over host names and IPs), anonymized.

A rule's text may carry the site's host naming (`prod-db-.*`), and once the hosts are renamed it
no longer matches the hosts it matched, so a host no line maps would land in another pool
(replay.model.pools.PoolOf falls back to the rules). So each rule becomes, in every line, the
escaped alternation of the pseudonyms of what it matched: the names and IPs the log's `match by`
lines give, and the log's host names, short names and IPs the rule matches as Python reads it
(what PoolOf reads). A rule that matched nothing becomes `(?!)`, which matches nothing.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import polars as pl

from replay.apps.anonymize.mapping import Pseudonyms
from replay.apps.anonymize.names import Inventory, clashes

MATCHES_NOTHING = "(?!)"
_SPECIAL = re.compile(r"([^A-Za-z0-9_-])")  # a pseudonym's dots: Java and Python read `\.` alike


def _literal(name: str) -> str:
    return _SPECIAL.sub(r"\\\1", name)


def rule_matches(tables: Mapping[str, pl.DataFrame], inv: Inventory) -> dict[str, set[str]]:
    """Each node rule's text -> the names and IPs it matched in the log (see the module doc)."""
    pools = tables["nodepools"]
    if "node_rule" not in pools.columns:
        return {}
    rule_of = dict(pools.filter(pl.col("node_rule").is_not_null()).select("name", "node_rule").iter_rows())
    matched: dict[str, set[str]] = {rule: set() for rule in rule_of.values()}
    logged = tables["nodes"].filter((pl.col("event") == "rule_match") & pl.col("host").is_not_null())
    for name, pool in logged.select("host", "nodepool").iter_rows():
        if pool in rule_of:
            matched[rule_of[pool]].add(name)
    names = {*inv.hosts, *inv.short_names, *inv.ips}
    for rule, found in matched.items():
        try:
            pattern = re.compile(rule)
        except re.error:  # a Java pattern Python does not read: the logged matches only
            continue
        found.update(n for n in names if pattern.fullmatch(n))
    return matched


def rename_rules(p: Pseudonyms, matches: Mapping[str, set[str]], inv: Inventory) -> None:
    """Give every rule its pattern in `p` (kind `rules`); a rule that is also a word the log uses
    otherwise is kept, and said so."""
    for rule, found in sorted(matches.items()):
        if rule in p.words or rule in p.kept:
            continue  # a name spelt out (`n01`): its own pseudonym, or kept with it, stands for the rule
        if clashes(rule, inv.protected):
            p.kept[rule] = "a node rule that is also a word the log uses otherwise (a class, nodepool or keyword)"
            continue
        pseudonyms = sorted({n if n in p.kept else p.words.get(n, n) for n in found})  # as the lines read
        pattern = "|".join(map(_literal, pseudonyms)) if pseudonyms else MATCHES_NOTHING
        p.kinds["rules"][rule] = pattern
        p.words[rule] = pattern
