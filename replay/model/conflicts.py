"""Where `--config DIR` contradicts what the log states, and whether it belongs to the log at all.

The log states its configuration twice over: at bootstrap (the class and nodepool tables, each
class's weight, priority, policy and nodepool, each pool's quantum and node file), and in every
cycle (the weight each class is apportioned by in the countClassShares counters, the pool each
node is mapped to). A resources folder from another time or another site says otherwise; the RM
scheduled by what it had read, which is what the log shows, so the log's value wins and each
contradiction is named. A folder none of whose classes (or none of whose nodepools) the log ever
names, while none of the log's are in it, is another cluster's: `belongs` says so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

from replay.model.pools import PoolOf
from replay.model.reads import narrow
from rmref.behaviours import Behaviours, for_release
from rmref.releases import LATEST

CONFLICTS = "config_conflicts"  # the table configdir.apply_config leaves beside the log's: where they differ
CLASS_FIELDS = ("weight", "priority", "policy", "nodepool")


@dataclass(frozen=True)
class Conflict:
    """One setting the log and --config give different values for (the log's is used)."""

    setting: str
    log: str
    config: str
    where: str  # the config file and line that says otherwise

    def text(self) -> str:
        """One line."""
        return (f"--config contradicts the log: {self.setting} is {self.log} in the log, {self.config} in "
                f"{self.where}; the log's value is used")

    def row(self) -> dict[str, str]:
        """report.json's `config_conflicts` entry."""
        return {"setting": self.setting, "log": self.log, "config": self.config, "where": self.where}


def _where(row: Mapping[str, object]) -> str:
    line = row.get("line")
    return f"{row.get('file')}:{line}" if line is not None else f"{row.get('file')}"


def _logged_weights(tables: Mapping[str, pl.DataFrame]) -> dict[str, int]:
    """Each class's weight as the RM apportioned by it (countClassShares), the last one logged."""
    if "rmcounter" not in tables:
        return {}
    rows = narrow(tables, "rmcounter", ("descr", "entity", "weight"))
    rows = rows.filter((pl.col("descr") == "countClassShares") & pl.col("weight").is_not_null())
    return dict(rows.unique("entity", keep="last", maintain_order=True).select("entity", "weight").iter_rows())


def _mapped_hosts(tables: Mapping[str, pl.DataFrame]) -> dict[str, tuple[str, str]]:
    """Host (short name) -> the host as the log names it, and the nodepool the RM mapped it to."""
    if "nodes" not in tables:
        return {}
    rows = narrow(tables, "nodes", ("host", "event", "nodepool"))
    rows = rows.filter((pl.col("event") == "map") & pl.col("nodepool").is_not_null())
    return {h.split(".")[0]: (h, p) for h, p in rows.unique("host", keep="last", maintain_order=True)
            .select("host", "nodepool").iter_rows()}


def _mapped_pools(tables: Mapping[str, pl.DataFrame]) -> dict[str, str]:
    """Host (short name) -> the nodepool the RM mapped it to."""
    return {short: pool for short, (_host, pool) in _mapped_hosts(tables).items()}


def _placed_by_config(log: Mapping[str, pl.DataFrame], config: Mapping[str, pl.DataFrame],
                      behaviours: Behaviours) -> Callable[[str], str | None]:
    """Where the release's RM puts a host by `config`'s rules and node files alone (the log's
    mapping left out; the log's IPs kept): a pool the log maps a host to that this gives too is the
    release's own behaviour (3.0.0: the last rule's pool takes a host no rule matches), no conflict."""
    nodes = narrow(log, "nodes", ("host", "event", "nodepool", "ip", "short_name")).filter(
        ~pl.col("event").is_in(("map", "arrive")))
    pools = config["nodepools"]
    top = next(iter(pools.filter(pl.col("parent").is_null())["name"]), "--default--")
    placed = PoolOf({**config, "nodes": nodes.drop("short_name")}, top, behaviours).placed
    # a mapping may name the host by its short name; its heartbeat gives the full one, with its IP
    full = dict(nodes.filter(pl.col("short_name").is_not_null() & pl.col("host").is_not_null())
                .select("short_name", "host").iter_rows())
    return lambda host: placed(full.get(host, host))


def class_names(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """Every class the log names: its bootstrap's, the jobs', the counters'."""
    names = set(tables["classes"]["name"].drop_nulls()) if "classes" in tables else set()
    for table, column in (("jobs", "class"), ("counts", "class")):
        if table in tables:
            names |= set(narrow(tables, table, (column,))[column].drop_nulls())
    return names | set(_logged_weights(tables))


def pool_names(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """Every nodepool the log names: its bootstrap's, the counts', the nodes' mapping."""
    names = set(tables["nodepools"]["name"].drop_nulls()) if "nodepools" in tables else set()
    if "counts" in tables:
        names |= set(narrow(tables, "counts", ("nodepool",))["nodepool"].drop_nulls())
    return names | set(_mapped_pools(tables).values())


def conflicts(log: Mapping[str, pl.DataFrame], config: Mapping[str, pl.DataFrame],
              behaviours: Behaviours | None = None) -> list[Conflict]:
    """Every setting `config` (read_resources' tables) gives otherwise than the log states, under
    the `behaviours` of the release the log is replayed as (None: the latest's)."""
    out: list[Conflict] = []
    stated = {r["name"]: r for r in log["classes"].iter_rows(named=True)} if log["classes"].height else {}
    weights = _logged_weights(log)
    for row in config["classes"].sort("name").iter_rows(named=True):
        name = row["name"]
        mine = stated.get(name)
        for field in CLASS_FIELDS:
            said = mine.get(field) if mine else (weights.get(name) if field == "weight" else None)
            if said is not None and row.get(field) is not None and str(said) != str(row[field]):
                out.append(Conflict(f"class {name} {field}", str(said), str(row[field]), _where(row)))
    pools = {r["name"]: r for r in log["nodepools"].iter_rows(named=True)} if log["nodepools"].height else {}
    if not pools:
        out += quantum_conflicts(log, config)
    mapped = _mapped_hosts(log)
    placed = _placed_by_config(log, config, behaviours or for_release(LATEST.name)) if mapped else None
    for row in config["nodepools"].sort("name").iter_rows(named=True):
        mine = pools.get(row["name"])
        if mine and mine.get("quantum") is not None and row.get("quantum") is not None \
                and mine["quantum"] != row["quantum"]:
            out.append(Conflict(f"nodepool {row['name']} quantum", f"{mine['quantum']} GB", f"{row['quantum']} GB",
                                _where(row)))
        for host in sorted(row.get("nodes") or ()):
            short = host.split(".")[0]
            host, pool = mapped.get(short, (short, row["name"]))
            if pool != row["name"] and placed is not None and placed(host) != pool:
                out.append(Conflict(f"node {short} nodepool", pool, row["name"], _where(row)))
    return out


def _sizes(log: Mapping[str, pl.DataFrame], classes: set[str]) -> list[tuple[str, int, int, bool]]:
    """(what, memory, order, machine) the log prints: each job size of `classes` (order =
    ceil(GB / quantum)) and each machine size (order = floor(GB / quantum), memory in MB)."""
    out = []
    if "jobs" in log:
        jobs = narrow(log, "jobs", ("job_id", "class", "memory_gb", "order")).filter(
            (pl.col("memory_gb") > 0) & (pl.col("order") > 0) & pl.col("class").is_in(list(classes)))
        out += [(f"job {j}", m, o, False) for j, m, o in jobs.unique(["memory_gb", "order"], keep="first",
                                                                      maintain_order=True)
                .select("job_id", "memory_gb", "order").iter_rows()]
    if "nodes" in log:
        nodes = narrow(log, "nodes", ("host", "event", "memory_mb", "share_order")).filter(
            (pl.col("event") == "arrive") & (pl.col("share_order") > 0) & pl.col("memory_mb").is_not_null())
        nodes = nodes.unique(["memory_mb", "share_order"], keep="first", maintain_order=True)
        out += [(f"node {h}", mb, o, True) for h, mb, o in nodes.select("host", "memory_mb", "share_order").iter_rows()]
    return out


def _misfit(sizes: list[tuple[str, int, int, bool]], quantum: int) -> str | None:
    """The first size the log prints that `quantum` does not give its order (None: all fit)."""
    for what, memory, order, machine in sizes:
        fits = memory // 1024 // quantum == order if machine else -(-memory // quantum) == order
        if not fits:
            return f"{what}: {memory // 1024 if machine else memory} GB is order {order}"
    return None


def quantum_conflicts(log: Mapping[str, pl.DataFrame], config: Mapping[str, pl.DataFrame]) -> list[Conflict]:
    """A pool quantum of the config that the log's job and machine sizes do not fit (a log
    without a bootstrap states its quantum only so)."""
    out = []
    for row in config["nodepools"].sort("name").iter_rows(named=True):
        if row.get("quantum") is None:
            continue
        classes = set(config["classes"].filter(pl.col("nodepool") == row["name"])["name"])
        misfit = _misfit(_sizes(log, classes), row["quantum"])
        if misfit:
            out.append(Conflict(f"nodepool {row['name']} quantum", f"not {row['quantum']} GB ({misfit})",
                                f"{row['quantum']} GB", _where(row)))
    return out


def with_log_values(config: Mapping[str, pl.DataFrame], log: Mapping[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """The config's tables with each class weight the log states put in place of the config's,
    and each pool quantum the log contradicts left open (inferred from the log)."""
    weights = _logged_weights(log)
    wrong = {c.setting.split()[1] for c in quantum_conflicts(log, config)}
    pools = config["nodepools"].with_columns(
        pl.when(pl.col("name").is_in(list(wrong))).then(None).otherwise(pl.col("quantum")).alias("quantum"))
    classes = config["classes"]
    if weights and classes.height:
        logged = pl.DataFrame({"name": list(weights), "_w": list(weights.values())},
                              schema={"name": pl.String, "_w": classes.schema["weight"]})
        classes = classes.join(logged, on="name", how="left", maintain_order="left").with_columns(
            pl.coalesce("_w", "weight").alias("weight")).drop("_w")
    return {**config, "classes": classes, "nodepools": pools}


@dataclass(frozen=True)
class Belonging:
    """Whether a config folder is this log's: the names each side has that the other never does."""

    config_classes: set[str]
    log_classes: set[str]
    config_pools: set[str]
    log_pools: set[str]

    def foreign(self) -> str | None:
        """Why the config is another cluster's (None: it shares classes and nodepools with the log)."""
        for what, mine, theirs in (("classes", self.config_classes, self.log_classes),
                                   ("nodepools", self.config_pools, self.log_pools)):
            if mine and theirs and not mine & theirs:
                return (f"none of its {what} ({', '.join(sorted(mine)[:8])}) appears in the log, whose {what} "
                        f"are {', '.join(sorted(theirs)[:8])}")
        return None


def belongs(log: Mapping[str, pl.DataFrame], config: Mapping[str, pl.DataFrame]) -> Belonging:
    """The class and nodepool names of the config and of the log, side by side."""
    return Belonging(set(config["classes"]["name"].drop_nulls()), class_names(log),
                     set(config["nodepools"]["name"].drop_nulls()), pool_names(log))
