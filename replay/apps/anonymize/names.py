"""What in a log names the site, read from its parsed tables; and what must not change.

The parse says which token of each record is a host, a user, a job name (the grammar's fields,
grammars/rmlog.lark), so the values to rename are collected from the tables' columns, not guessed
from the text. Tokens of the same kinds that only free text carries (a head node in a message, an
IP or a path in an exception) are recognised by their shape while the lines are rewritten
(replay/apps/anonymize/rewrite.py).

Every other string the tables hold (class and nodepool names, states, kinds, the grammar's own
words) is *protected*: it stays as it is. A site value that is also a protected word (a user
called like a class, a numeric job name) cannot be renamed everywhere without renaming the other
too, so it is kept and reported.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

import polars as pl

from replay.model.machines.liveness import machine_hosts
from replay.parsing.grammar import grammar_text

# (table, column) holding host names (machines as the RM names them) ...
HOST_COLUMNS = (("nodes", "host"), ("placements", "host"), ("evictions", "host"), ("schedule", "host"),
                ("job_events", "host"), ("processes", "host"), ("expansions", "host"), ("occupancy", "host"),
                ("defrag", "host"), ("job_events", "hosts"), ("defrag", "hosts"), ("expansions", "hosts"))
# ... short host names (the first label of a host name) ...
SHORT_COLUMNS = (("nodes", "short_name"), ("nodepools", "nodes"))
USER_COLUMNS = (("jobs", "user"), ("job_caps", "user"), ("defrag", "user"), ("allotments", "user"))
JOB_COLUMNS = (("jobs", "job_name"),)
IP_COLUMNS = (("nodes", "ip"),)
# free text: rewritten token by token, neither collected nor protected
FREE_TEXT = {("counts", "reason"), ("schedule", "reason"), ("defrag", "detail"), ("job_events", "detail"),
             ("nodes", "detail"), ("messages", "text"), ("config", "key"), ("config", "value"),
             ("unparsed", "text"), ("unparsed", "reason"), ("nodepools", "node_file"), ("nodepools", "node_rule"),
             ("classes", "authorized_users"), ("rmcounter", "entity")}

IPV4 = r"\d{1,3}(?:\.\d{1,3}){3}"  # Python's re and Rust's regex (polars) read it alike
NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|NaN|Infinity)")
_COMMENT = re.compile(r'("(?:[^"\\\n]|\\.)*")|//[^\n]*')  # a grammar's comment (a literal kept whole)
_HOST_COUNT = re.compile(r":\d+$")  # countFreeableMachines lists machines as host:free


def sensitive_columns() -> set[tuple[str, str]]:
    """Every (table, column) whose values are site names or free text (the rest is protected)."""
    return {*HOST_COLUMNS, *SHORT_COLUMNS, *USER_COLUMNS, *JOB_COLUMNS, *IP_COLUMNS, *FREE_TEXT}


def _values(tables: Mapping[str, pl.DataFrame], columns: Iterable[tuple[str, str]]) -> list[str]:
    """Distinct non-null strings of the columns (list columns flattened), in first-seen order."""
    out: dict[str, None] = {}
    for table, column in columns:
        series = tables[table][column]
        if series.dtype == pl.List(pl.String):
            series = series.explode()
        out.update(dict.fromkeys(series.drop_nulls().unique(maintain_order=True).to_list()))
    return list(out)


def split_host(host: str) -> tuple[str, str | None]:
    """(first label, domain) of a host name; an IPv4 address or a short name has no domain."""
    if re.fullmatch(IPV4, host) or "." not in host:
        return host, None
    label, _, domain = host.partition(".")
    return label, domain


@dataclass
class Inventory:
    """The site's names in a log, by kind, in first-seen order."""

    hosts: list[str] = field(default_factory=list)  # host names, as the RM writes them
    machines: list[str] = field(default_factory=list)  # the hosts the audit's machines are named by
    ip_of: dict[str, str] = field(default_factory=dict)  # machine -> the IP the audit hashes it with
    short_names: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)
    users: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # node files and other paths the bootstrap names
    protected: set[str] = field(default_factory=set)

    @property
    def domains(self) -> list[str]:
        """The domains of the fully qualified host names."""
        return list(dict.fromkeys(d for h in self.hosts if (d := split_host(h)[1]) is not None))


def config_user(key: str) -> str | None:
    """The user of a `user.<name>.<setting>` configuration key (None for other keys)."""
    name = key.removeprefix("user.").rpartition(".")[0] if key.startswith("user.") else ""
    return name or None


def _users_from_config(config: pl.DataFrame, classes: pl.DataFrame) -> list[str]:
    users = [user for k in config["key"].to_list() if (user := config_user(k))]
    for value in config.filter(pl.col("key") == "jd.host")["value"].to_list():
        users += re.findall(r"jd\.host\.user=(\S+)", value or "")
    for listed in classes["authorized_users"].drop_nulls().to_list():
        users += [u for u in re.split(r"[\s,]+", listed) if u]
    return users


def inventory(tables: Mapping[str, pl.DataFrame]) -> Inventory:
    """The names to rename and the words to keep, from a log's tables."""
    inv = Inventory()
    inv.hosts = [_HOST_COUNT.sub("", h) for h in _values(tables, HOST_COLUMNS)]
    inv.hosts = list(dict.fromkeys(inv.hosts))
    inv.machines = machine_hosts(tables["nodes"])
    inv.ips = _values(tables, IP_COLUMNS)
    # a rule's `match by ip` names the node by its IP in the host column: an IP, not a host
    not_hosts = set(inv.ips) - set(inv.machines)
    inv.hosts = [h for h in inv.hosts if h not in not_hosts]
    nodes = tables["nodes"].filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
    inv.ip_of = dict(nodes.select("host", "ip").iter_rows())  # the first, as the audit takes it (machines/liveness.py)
    inv.short_names = _values(tables, SHORT_COLUMNS)
    counter_users = tables["rmcounter"].filter(pl.col("descr") == "countUserShares")["entity"]
    inv.users = list(dict.fromkeys([*_values(tables, USER_COLUMNS), *counter_users.drop_nulls().to_list(),
                                    *_users_from_config(tables["config"], tables["classes"])]))
    inv.jobs = _values(tables, JOB_COLUMNS)
    paths = [v for v in _values(tables, [("config", "value")]) if v.startswith("/")]
    node_files = [f for f in _values(tables, [("nodepools", "node_file")]) if f != "None"]
    inv.files = list(dict.fromkeys([*node_files, *paths]))
    inv.protected = protected_words(tables)
    return inv


@lru_cache(maxsize=1)
def grammar_words() -> frozenset[str]:
    """Every word the grammar spells out (its literals): the log's own vocabulary."""
    # not the comments' quotes: an example there ("10.0.0.2") is no word of the log's
    code = _COMMENT.sub(lambda m: m.group(1) or "", grammar_text())
    return frozenset(w for lit in re.findall(r'"([^"\n]+)"', code) for w in lit.split())


def protected_words(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """The grammar's words and every value of the columns that are neither site names nor free text
    (class and nodepool names, states, kinds, policies, ...)."""
    skip = sensitive_columns()
    columns = [(t, c) for t, frame in tables.items() for c, dtype in frame.schema.items()
               if (t, c) not in skip and c != "file" and dtype in (pl.String, pl.List(pl.String))]
    # rmcounter entities other than users: class names and job ids
    entities = tables["rmcounter"].filter(pl.col("descr") != "countUserShares")["entity"].drop_nulls().to_list()
    return {*grammar_words(), *_values(tables, columns), *entities}


def clashes(value: str, protected: set[str]) -> bool:
    """Whether renaming `value` everywhere would also rename a protected word or a number."""
    return value in protected or NUMBER.fullmatch(value) is not None
