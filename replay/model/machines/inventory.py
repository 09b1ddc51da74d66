"""The machines the RM knew before the log began: what the log states, and what it only implies.

A log that starts mid-stream never shows the nodes' arrival. What the log states about a node it
did not see arrive, exactly:
* `connectShare` lines (a process placed on it): its order and memory;
* the occupancy table (DEBUG `queryMachines`): its order and memory;
* black- and whitelisting lines: its order ("shares left N / ORDER");
* reservations' `countFreeableMachines` search lists: `host:order`;
* rearrangeVirtual's "bad virtual machine list" (an unschedulable node): its order (`r_order`);
* its nodepool: the log's mapping of the host, else the node rules and node files (replay.model.pools).
What it does not state is solved for from the counters the RM printed (replay.model.machines.solver).
The memory of a node whose memory no line shows is taken as order x quantum, its least, and said
so; the machine carries the fact (`Machine.memory_stated`), for an order by memory that rests on it is open.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl

from replay.model.pools import PoolOf
from replay.model.settings import CONFIG, INFERRED, Assumption
from replay.model.logorder import log_order
from rmref.javahash import node_map_order

STATED, UNKNOWN = "log", "unknown"
ONLINE_EVENTS = ("arrive", "reactivate", "recover_node")  # a node (re)joining the RM's tables
RETURNS = ("reactivate", "recover_node")  # a node the RM had declared dead comes back
# the lines that show a node go down or come back (NodePool.disable's own lines among them)
_UP_OR_DOWN = (*ONLINE_EVENTS, "recover", "death", "disable", "purge", "not_purged", "completed", "vary_off",
               "vary_on")


@dataclass(frozen=True)
class Host:
    """A node there before the log began, as far as the log tells (order None: not known)."""

    name: str
    nodepool: str
    order: int | None
    memory_mb: int | None
    ip: str
    source: str  # log / inferred / unknown
    evidence: str
    dead: bool = False  # declared dead before the log began: the log first shows it come back
    varied_off: bool = False  # varied off before the log began: the log first shows it varied on
    # down before the log began, dead or varied off: the log does not tell which (`down_before_log`)
    down: bool = False
    # inferred among nodes alike in every counter, which of them has which order no line telling:
    # the orders they share between them (empty: its order is its own, stated or inferred)
    alike: tuple[int, ...] = ()
    alike_with: tuple[str, ...] = ()  # those nodes, itself among them (with `alike`)
    # inferred, yet the inferences that fit the log as well give it other orders: all of them
    rivals: tuple[int, ...] = ()


@dataclass(frozen=True)
class Inventory:
    """The nodes there before the log began (in the order first heard from), and what was inferred."""

    hosts: tuple[Host, ...]
    quantum_gb: int
    unsettled: dict[int, str] = field(default_factory=dict)  # cycle -> why its counters do not fit
    assumed: tuple[Assumption, ...] = ()

    @property
    def unknown(self) -> tuple[str, ...]:
        """Hosts whose order the log neither states nor implies."""
        return tuple(h.name for h in self.hosts if h.order is None)

    @property
    def arrival_open(self) -> tuple[str, ...]:
        """Nodes whose arrival order, which the log does not show, decides the order the RM's node
        maps meet them (taken in the order first heard from; `arrival_order` says so)."""
        return arrival_open(self.hosts)

    def memory_mb(self, host: Host) -> int:
        """The host's memory: as logged, else order x quantum (0 where the order is not known either:
        `Host.memory_mb` None and `unknown` say so)."""
        if host.memory_mb is not None:
            return host.memory_mb
        return (host.order or 0) * self.quantum_gb * 1024


def _stated(tables: Mapping[str, pl.DataFrame]) -> dict[str, tuple[int, int | None, str]]:
    """host -> (order, memory MB or None, where the log states it), the first statement of each."""
    where = pl.format("{} line {}", "file", "line")
    sized = pl.concat([
        tables["nodes"].filter(pl.col("event").is_in(ONLINE_EVENTS) & pl.col("share_order").is_not_null()).select(
            "host", pl.col("share_order").alias("order"), "memory_mb", pl.format("nodeArrives, {}", where).alias("at")),
        tables["placements"].select("host", pl.col("m_order").alias("order"), "memory_mb",
                                    pl.format("connectShare, {}", where).alias("at")),
        tables["occupancy"].select("host", "order", "memory_mb", pl.format("occupancy table, {}", where).alias("at")),
        tables["processes"].filter(pl.col("share_order").is_not_null()).select(
            "host", pl.col("share_order").alias("order"), pl.lit(None, pl.Int64).alias("memory_mb"),
            pl.format("{}, {}", "event", where).alias("at")),
        tables["expansions"].filter(pl.col("kind") == "freeable_order").select(
            pl.col("hosts").alias("item"), pl.format("countFreeableMachines, {}", where).alias("at"))
        .explode("item").select(
            pl.col("item").str.extract(r"^(.*):\d+$").alias("host"),
            pl.col("item").str.extract(r":(\d+)$").cast(pl.Int64).alias("order"),
            pl.lit(None, pl.Int64).alias("memory_mb"), "at"),
        # rearrangeVirtual's "bad virtual machine list ... r_order N": an unschedulable node's order
        tables["nodes"].filter((pl.col("event") == "bad_virtual") & pl.col("share_order").is_not_null()).select(
            "host", pl.col("share_order").alias("order"), pl.lit(None, pl.Int64).alias("memory_mb"),
            pl.format("bad virtual machine list, {}", where).alias("at")),
    ]).drop_nulls(["host", "order"])
    # a line with memory wins over one without (memory is shown where the order is)
    sized = (sized.sort(pl.col("memory_mb").is_null(), maintain_order=True)
             .unique("host", keep="first", maintain_order=True))
    return {h: (o, m, at) for h, o, m, at in sized.iter_rows()}


def prelog_hosts(tables: Mapping[str, pl.DataFrame]) -> list[str]:
    """Hosts there before the log began, in the order first heard from: heard from (heartbeats,
    missed heartbeats, ...), holding work or listed (the occupancy table, countFreeableMachines)
    in a cycle before the one they first arrive in, or coming back from the dead without having
    arrived. (A node new to the RM is heard from, mapped
    and added in one go, within one cycle.)"""
    nodes = tables["nodes"].filter(pl.col("cycle").is_not_null() & pl.col("host").is_not_null())
    arrival = dict(nodes.filter(pl.col("event") == "arrive").group_by("host").agg(
        pl.col("cycle").min()).iter_rows())
    listed = pl.col("host").is_not_null() & pl.col("cycle").is_not_null()
    mentions = pl.concat([
        # ('map' lines belong to an arrival, and name the host by its short name too; a rule's match
        # belongs to the report line before it, and names the host by whichever of its full name,
        # short name and IP the rule matched)
        nodes.filter(~pl.col("event").is_in((*ONLINE_EVENTS, "map", "rule_match")))
        .select("host", "cycle", "file", "line"),
        tables["schedule"].filter(listed).select("host", "cycle", "file", "line"),
    ]).sort(log_order("cycle"), maintain_order=True)
    # the occupancy table and countFreeableMachines list every machine in the RM's tables, those
    # it cannot schedule on too (the counters tell which: replay.model.machines.solver); they come
    # after the machines heard from, as no line tells when they arrived
    freeable = tables["expansions"].filter(pl.col("cycle").is_not_null())
    lists = pl.concat([
        tables["occupancy"].filter(listed).select("host", "cycle", "file", "line"),
        freeable.filter(listed).select("host", "cycle", "file", "line"),
        freeable.filter(pl.col("kind") == "freeable_order")
        .select(pl.col("hosts").alias("item"), "cycle", "file", "line").explode("item")
        .select(pl.col("item").str.extract(r"^(.*):\d+$").alias("host"), "cycle", "file", "line")
        .filter(pl.col("host").is_not_null()),
    ]).sort(log_order("cycle"), maintain_order=True)
    first = mentions.unique("host", keep="first", maintain_order=True)
    first_listed = lists.unique("host", keep="first", maintain_order=True)
    before = {h for h, c in pl.concat([first, first_listed]).sort(log_order("cycle")).unique("host", keep="first")
              .select("host", "cycle").iter_rows() if c < arrival.get(h, c + 1)}
    before |= dead_before_log(tables)
    heard = nodes.filter(pl.col("event") == "heartbeat")["host"].unique(maintain_order=True).to_list()
    return [h for h in dict.fromkeys(heard + first["host"].to_list() + first_listed["host"].to_list())
            if h in before]


def dead_before_log(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """Hosts whose first (re)joining the log shows is a return from the dead, with no death before
    it: the RM knew them, dead, when the log began (a node the log shows die and come back was
    alive at its start)."""
    moves = tables["nodes"].filter(pl.col("event").is_in((*ONLINE_EVENTS, "death")) & pl.col("host").is_not_null())
    first = moves.unique("host", keep="first", maintain_order=True)
    return set(first.filter(pl.col("event").is_in(RETURNS))["host"].to_list())


def disabled_before_log(tables: Mapping[str, pl.DataFrame]) -> dict[str, str]:
    """Hosts first shown holding a process the published schedule marks purged (`^P`), before any
    line shows them go down or come back: NodePool.disable purged it (nothing else does), on a death
    or a vary-off the log (or its part after a gap) does not show, and the node has not come back
    since, unless a process is placed on it before any such line. Host -> the process
    (`host.share_id`)."""
    def rows(frame: pl.DataFrame, purged: pl.Expr, share: pl.Expr) -> pl.DataFrame:
        return frame.filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null()).select(
            "host", "cycle", "file", "line", purged.alias("purged"), share.cast(pl.Int64).alias("share_id"))
    none = pl.lit(None, pl.Int64)
    moves = rows(tables["nodes"].filter(pl.col("event").is_in(_UP_OR_DOWN)), pl.lit(False), none)
    placed = rows(tables["placements"], pl.lit(False), none) if "placements" in tables else moves.clear()
    held = rows(tables["schedule"].filter(pl.col("share_id").is_not_null() & pl.col("purged").fill_null(False)),
                pl.lit(True), pl.col("share_id"))
    first = (pl.concat([moves, placed, held])
             .sort(log_order("cycle", after=("purged",)), descending=[False, False, True], maintain_order=True)
             .unique("host", keep="first", maintain_order=True))
    return {h: f"{h}.{sid}" for h, sid in first.filter("purged").select("host", "share_id").iter_rows()}


UNSCHEDULABLE = "is offline or unresponsive or blacklisted"  # countFreeableMachines' bypass, NodePool.isSchedulable


def down_before_log(tables: Mapping[str, pl.DataFrame]) -> dict[str, str]:
    """Hosts the log shows unschedulable before any line shows them go down, come back or take a
    process: countFreeableMachines passes them over as "offline or unresponsive or blacklisted", or
    rearrangeVirtual finds no table of their free size ("bad virtual machine list": NodePool.reset
    skips a machine it cannot schedule on, which keeps a stale size). Neither tells dead from varied
    off (nor blacklisted, which the occupancy table, when printed, and the blacklisting lines tell):
    down when the log began, which way no line tells until the node returns, reports, or is varied
    on or off. Host -> where the log says so."""
    def rows(frame: pl.DataFrame, down: bool) -> pl.DataFrame:
        return frame.filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null()).select(
            "host", "cycle", "file", "line", pl.lit(down).alias("down"),
            pl.format("{} line {}", "file", "line").alias("at"))
    expansions = tables["expansions"]
    where = ("host", "cycle", "line", "file")
    bypassed = pl.concat([
        expansions.filter((pl.col("kind") == "freeable_bypass") & (pl.col("because") == UNSCHEDULABLE)).select(where),
        tables["nodes"].filter(pl.col("event") == "bad_virtual").select(where),
    ])
    if bypassed.is_empty():
        return {}
    # a blacklisted machine is passed over alike, and is online: the occupancy table tells it apart,
    # and Machine.blacklist's lines (processes left on it) name it from the cycle it is blacklisted in
    occupancy = tables["occupancy"]
    blacklisted = occupancy.filter(pl.col("blacklisted").fill_null(False)).select("cycle", "host").unique()
    bypassed = bypassed.join(blacklisted, on=["cycle", "host"], how="anti")
    listed = (tables["processes"].filter((pl.col("event") == "blacklist") & (pl.col("count").fill_null(0) > 0))
              .group_by("host").agg(pl.col("cycle").min().alias("_black")))
    bypassed = (bypassed.join(listed, on="host", how="left")
                .filter(pl.col("_black").is_null() | (pl.col("cycle") < pl.col("_black"))).drop("_black"))
    moves = tables["nodes"].filter(pl.col("event").is_in(_UP_OR_DOWN))
    placed = tables["placements"] if "placements" in tables else moves.clear()
    first = (pl.concat([rows(moves, False), rows(placed, False), rows(bypassed, True)])
             .sort(log_order("cycle"), maintain_order=True).unique("host", keep="first", maintain_order=True))
    return dict(first.filter("down").select("host", "at").iter_rows())


def reporting_while_down(tables: Mapping[str, pl.DataFrame], down: Mapping[str, str]) -> dict[str, str]:
    """Of the hosts `down` (down_before_log), those whose agent the log shows report before any line
    shows them go down or come back: a heartbeat's line (Scheduler.findNodepoolByRule, 3.0.0 on),
    not the one a missed heartbeat's bookkeeping prints before "Missed heartbeat count". A node the
    RM holds dead is reactivated by its first report ("Host reactivated"), so one that reports and
    stays down is held offline: varied off. Host -> where the log shows it report."""
    if not down:
        return {}
    nodes = tables["nodes"].filter(pl.col("host").is_in(list(down)) & pl.col("cycle").is_not_null())
    missed = nodes.filter(pl.col("event") == "missed_recorded").select("host", "file", (pl.col("line") - 1)
                                                                         .alias("line"))
    beats = (nodes.filter(pl.col("event") == "heartbeat").join(missed, on=["host", "file", "line"], how="anti")
             .select("host", "cycle", "file", "line", pl.lit(True).alias("beat"),
                     pl.format("{} line {}", "file", "line").alias("at")))
    moves = nodes.filter(pl.col("event").is_in(_UP_OR_DOWN)).select(
        "host", "cycle", "file", "line", pl.lit(False).alias("beat"), pl.lit(None, pl.String).alias("at"))
    first = (pl.concat([moves, beats]).sort(log_order("cycle"), maintain_order=True)
             .unique("host", keep="first", maintain_order=True))
    return dict(first.filter("beat").select("host", "at").iter_rows())


def varied_off_before_log(tables: Mapping[str, pl.DataFrame]) -> set[str]:
    """Hosts whose first vary-off or vary-on the log shows is a vary-on: the RM marks online only a
    machine it holds offline ("VaryOn: ... Machine marked online"; "Already online" otherwise), so
    it held them varied off when the log began (or the part of it after a gap)."""
    varies = tables["nodes"].filter(pl.col("event").is_in(("vary_off", "vary_on")) & pl.col("host").is_not_null())
    first = varies.unique("host", keep="first", maintain_order=True)
    return set(first.filter(pl.col("event") == "vary_on")["host"].to_list())


def stated_inventory(tables: Mapping[str, pl.DataFrame], pool_of: PoolOf, quantum_gb: int) -> Inventory:
    """The nodes there before the log began, with what the log states about each (no inference)."""
    nodes = tables["nodes"]
    ips = dict(nodes.filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
               .select("host", "ip").iter_rows())
    stated = _stated(tables)
    off = varied_off_before_log(tables)
    purged = {h: sid for h, sid in disabled_before_log(tables).items() if h not in off}
    dead = dead_before_log(tables) | set(purged)
    down = {h: at for h, at in down_before_log(tables).items() if h not in off and h not in dead}
    reporting = reporting_while_down(tables, down)  # alive, yet down: varied off
    off |= set(reporting)
    down = {h: at for h, at in down.items() if h not in reporting}
    hosts = []
    for name in prelog_hosts(tables):
        if name in stated:
            order, memory, at = stated[name]
            hosts.append(Host(name, pool_of(name), order, memory, ips.get(name, ""), STATED, at, name in dead,
                              name in off, name in down))
        else:
            hosts.append(Host(name, pool_of(name), None, None, ips.get(name, ""), UNKNOWN,
                              "no line states its order", name in dead, name in off, name in down))
    names = {h.name for h in hosts}
    sized = (Assumption("nodes", f"{len(hosts)} there before the log began, all sized by the log", CONFIG,
                        "connectShare, occupancy, black/whitelisting and countFreeableMachines lines"),)
    return Inventory(tuple(hosts), quantum_gb, {}, memory_assumptions(hosts, quantum_gb)
                     + (sized if hosts and all(h.order is not None for h in hosts) else ()) + arrival_order(hosts)
                     + down_assumptions({h: sid for h, sid in purged.items() if h in names})
                     + unsure_assumptions({h: at for h, at in down.items() if h in names}, tables["occupancy"])
                     + reporting_assumptions({h: at for h, at in reporting.items() if h in names})
                     + pool_of.assumed(h.name for h in hosts))


def reporting_assumptions(reporting: Mapping[str, str]) -> tuple[Assumption, ...]:
    """The nodes taken as varied off when the log began because they report while down."""
    if not reporting:
        return ()
    return (Assumption("nodes varied off before the log began, reporting", ", ".join(sorted(reporting)), INFERRED,
                       "countFreeableMachines passes them over as \"offline or unresponsive or blacklisted\", yet "
                       "their agents report (the RM would reactivate a dead node on its report): held offline; "
                       + ", ".join(f"{h} reports at {at}" for h, at in sorted(reporting.items()))),)


def unsure_assumptions(down: Mapping[str, str], occupancy: pl.DataFrame) -> tuple[Assumption, ...]:
    """What the audit takes of the nodes down when the log began that no line tells dead or varied off."""
    if not down:
        return ()
    listed = set(occupancy["host"].to_list())
    blacklisting = ("the occupancy table shows them not blacklisted" if listed >= set(down) else
                    "taken as not blacklisted: no blacklisting line names them (the RM blacklists a node only "
                    "for work of a class it does not know, on recovery)")
    return (Assumption("nodes down before the log began, dead or varied off", f"{len(down)} node(s) offline or "
                       "unresponsive: which, no line tells", INFERRED,
                       "countFreeableMachines passes over them as \"offline or unresponsive or blacklisted\", or "
                       "rearrangeVirtual finds them in no table (\"bad virtual machine list\": unschedulable), before "
                       f"any line shows them go down or come back ({blacklisting}); the RM schedules on neither, "
                       "so capacity and decisions are the same either way: "
                       + ", ".join(f"{h} ({at})" for h, at in sorted(down.items()))),)


def down_assumptions(purged: Mapping[str, str]) -> tuple[Assumption, ...]:
    """What the audit takes of the nodes down when the log began, known only by a purged process."""
    if not purged:
        return ()
    return (Assumption("nodes down before the log began", f"{len(purged)} node(s) taken as dead", INFERRED,
                       "the first schedule that lists them marks their process purged (^P), and no line before it "
                       "shows their death or vary-off (taken as a death: they come back by an arrival or a "
                       "reactivation): " + ", ".join(sorted(purged.values()))),)


def arrival_order(hosts: Sequence[Host]) -> tuple[Assumption, ...]:
    """The order nodes there before the log began arrived in, where it decides the order the RM's
    node maps meet them: nodes whose hashes (on name and IP) fall in one bucket are met in the order
    they were put in, which is not in the log; they are taken in the order first heard from."""
    names = arrival_open(hosts)
    if not names:
        return ()
    return (Assumption("nodes' arrival order", f"{len(names)} node(s) in the order first heard from", INFERRED,
                       "their node hashes share a bucket of the RM's node map, which meets such nodes in the order "
                       "they arrived, before the log began: " + ", ".join(names[:6])
                       + (" ..." if len(names) > 6 else "")),)


def arrival_open(hosts: Sequence[Host]) -> tuple[str, ...]:
    """The nodes there before the log began whose arrival order decides the order the RM's node
    maps meet them (`arrival_order`), in the order first heard from."""
    open_: list[str] = []
    for pool in dict.fromkeys(h.nodepool for h in hosts):
        nodes = [(h.name, h.ip) for h in hosts if h.nodepool == pool and h.ip]
        ahead, behind = node_map_order(nodes), node_map_order(nodes[::-1])
        rank = {n: i for i, n in enumerate(behind)}
        open_ += [a for a, b in zip(ahead, ahead[1:]) if rank[a] > rank[b]]  # (a pair each, its first)
        open_ += [b for a, b in zip(ahead, ahead[1:]) if rank[a] > rank[b]]
    return tuple(dict.fromkeys(open_))


def memory_assumptions(hosts: Iterable[Host], quantum_gb: int) -> tuple[Assumption, ...]:
    """The memory of each node whose order is known but whose memory no line shows (order x quantum)."""
    guessed = [(h.name, h.order) for h in hosts if h.order is not None and h.memory_mb is None]
    out = [Assumption(f"node {name} memory", f"{order * quantum_gb * 1024} MB", INFERRED,
                      f"order {order} x quantum {quantum_gb} GB; no line shows its memory") for name, order in guessed]
    if guessed:
        out.append(Assumption("nodes' memory", f"{len(guessed)} node(s): order x quantum", INFERRED,
                              "no line shows their memory (connectShare, the occupancy table and nodeArrives do)"))
    return tuple(out)
