"""Which nodepool a host is in: read by the machines' model and by a job's order (the quantum of
the pool tree its processes run in, where its class is not known)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.reads import narrow
from replay.model.resources.frames import LISTED_NODES
from replay.model.settings import INFERRED, Assumption
from rmref.behaviours import Behaviours

POOLS_OPEN = "nodepool of hosts the log does not map"  # the setting `PoolOf.assumed` names
IP_ADDRESS = re.compile(r"\d{1,3}(?:\.\d{1,3}){3}")  # a node file may list a host by its IPv4 address


class PoolOf:
    """Which nodepool a host is in, as the RM's getNodepoolByName puts it: the pool the log maps
    the host to, else the first node rule it matches (by full name, short name or IP), else the
    node file that lists it (by full or short name, else by IP), else the first top-level pool."""

    def __init__(self, tables: Mapping[str, pl.DataFrame], top: str, behaviours: Behaviours):
        pools = tables["nodepools"]
        self.top = top
        self._of: dict[str, str] = {n: r["name"] for r in pools.iter_rows(named=True) for n in (r["nodes"] or ())}
        if LISTED_NODES in tables:  # --config's node files, IPs among the names
            self._of.update(tables[LISTED_NODES].select("host", "nodepool").iter_rows())
        nodes = narrow(tables, "nodes", ("host", "event", "nodepool", "ip")) if "nodes" in tables else None
        # updateNodepoolsByNode: the node files' names at start, then each host a rule (or the
        # default pool) takes; and each arrival's pool ("Nodepool: P Host added"): the last is the RM's
        maps = (nodes.filter(pl.col("event").is_in(("map", "arrive")) & pl.col("host").is_not_null()
                             & pl.col("nodepool").is_not_null()) if nodes is not None else None)
        self._mapped: dict[str, str] = dict(maps.select("host", "nodepool").iter_rows()) if maps is not None else {}
        self._ips: dict[str, str] = ({} if nodes is None else dict(
            nodes.filter(pl.col("ip").is_not_null() & pl.col("host").is_not_null())
            .unique("host", keep="first", maintain_order=True).select("host", "ip").iter_rows()))
        # the RM tries the rules in the order it reads the pools (the table's: top-level pools in
        # file order, each followed by its subpools), the first rule of a text winning
        rules = pools.filter(pl.col("node_rule").is_not_null()) if "node_rule" in pools.columns else pools.clear()
        self._rules: list[tuple[re.Pattern[str] | None, str]] = []
        self._rule_texts: list[str] = []
        for text, pool in dict(rules.select("node_rule", "name").iter_rows()).items():
            self._rule_texts.append(text)
            try:
                self._rules.append((re.compile(text), pool))
            except re.error:  # a Java pattern Python does not read: which hosts it takes is open
                self._rules.append((None, pool))
        # 3.0.0 (UIMA-5742): a host no rule matches goes to the last rule's pool (fixed by UIMA-6097)
        self._last_rule_takes_all = (behaviours.has("nodepool_regex_rules")
                                     and not behaviours.has("regex_rule_fallthrough_fixed"))
        # listed IP addresses no host's logged IP (3.0.0 on) is: whose they are the log does not tell
        known_ips = set(self._ips.values())
        self._unplaced_ips = {n for n in (*self._of, *self._mapped) if IP_ADDRESS.fullmatch(n) and n not in known_ips}

    def __call__(self, host: str) -> str:
        return self._resolve(host)[0]

    def listed(self, host: str) -> str | None:
        """The pool whose node file lists the host, by name or by its IP (None: none does)."""
        ip = self._ips.get(host)
        return self._of.get(host, self._of.get(host.split(".")[0], self._of.get(ip) if ip else None))

    def placed(self, host: str) -> str | None:
        """The pool the RM puts the host in, where the log or the configuration tells it (None:
        a rule Python cannot read, or a rule or a listed IP address that may take the host by an
        IP the log does not give)."""
        pool, sure = self._resolve(host)
        return pool if sure else None

    def assumed(self, hosts: Iterable[str]) -> tuple[Assumption, ...]:
        """The pool taken for each of `hosts` the log and the configuration leave open (`placed`)."""
        open_ = [h for h in hosts if self.placed(h) is None]
        if not open_:
            return ()
        unread = [text for text, (rule, _pool) in zip(self._rule_texts, self._rules) if rule is None]
        why = (f"a node rule ({unread[0]}) is no pattern Python reads" if unread else
               "a node rule may match their IP address, which the log does not show (it does from 3.0.0 on)"
               if self._rules else
               f"a node file lists {', '.join(sorted(self._unplaced_ips)[:3])} by IP address, which the log "
               "ties to no host (it shows nodes' IPs from 3.0.0 on)")
        return (Assumption(POOLS_OPEN, ", ".join(f"{h} {self(h)}" for h in open_),
                           INFERRED, f"no line maps them to a pool, and {why}: taken by name, else as the "
                           "first top-level pool's"),)

    def _resolve(self, host: str) -> tuple[str, bool]:
        """The host's pool, and whether the log or the configuration settles it."""
        short = host.split(".")[0]
        mapped = self._mapped.get(host, self._mapped.get(short))
        if mapped is not None:
            return mapped, True
        ip = self._ips.get(host)
        sure = True
        for rule, pool in self._rules:
            if rule is None:
                sure = False
            elif any(rule.fullmatch(n) for n in (host, short, ip) if n):
                return pool, sure
            elif ip is None:
                sure = False  # the rule may match the host's IP
        if self._rules and self._last_rule_takes_all:
            return self._rules[-1][1], sure
        listed = self.listed(host) or (self._mapped.get(ip) if ip else None)
        if listed is not None:
            return listed, sure
        return self.top, sure and (ip is not None or not self._unplaced_ips)


def pool_of(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> PoolOf:
    """Which nodepool a host is in (PoolOf), by the rules of the release `boot` replays."""
    return PoolOf(tables, next((p.name for p in boot.nodepools if p.parent is None), "--default--"),
                  boot.config.behaviours)
