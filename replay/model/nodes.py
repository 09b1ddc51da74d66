"""Per cycle, every machine the RM knew and what its published processes used: the one node view.

Liveness, pool and size come from the world model (`replay.model.start.node_liveness`: arrivals,
deaths, recoveries and vary-offs, the nodes there before the log began as the log states or
implies them); the quanta in use from the cycle's published Existing shares. The report's
capacity and utilisation and the TUI's Nodes tab read this frame, so they tell one story.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.logged import in_cycles
from replay.model.machines.inventory import Inventory
from replay.model.machines.liveness import (
    ORDER_ALIKE, ORDER_INFERRED, ORDER_LOGGED, ORDER_OPEN, NodeLiveness, order_from,
)
from replay.model.orders import with_quanta
from replay.model.start import bootstrap, node_liveness
from replay.model.reads import narrow
from replay.model.stranded import Stranded
from replay.parsing.tables import LEFT
from rmref.evictions import off_the_record
from rmref.model import Machine

ONLINE, UNRESPONSIVE, OFFLINE = "online", "unresponsive", "offline"  # truth.jsonl's node statuses
# before 2.1.0 a varied-on machine is in none of the RM's maps until its node next reports (vary_on_at_once)
AWAITING = "varied on, awaiting report"
DOWN_UNSURE = "offline or unresponsive"  # down since before the log began; no line tells which
# `order`: None where no line gives it nor the counters imply it, and for alike nodes some of which
# are down (`split_alike`); `order_from` says where it comes from (replay.model.machines.liveness
# ORDER_*), `order_shown` how every view draws it (order_shown)
NODE_SCHEMA = {"cycle": pl.UInt32, "host": pl.String, "nodepool": pl.String, "order": pl.Int64,
               "order_from": pl.String, "order_shown": pl.String, "memory_mb": pl.Int64, "online": pl.Boolean,
               "status": pl.String, "used": pl.Int64, "jobs": pl.String}


def order_shown(order: int | None, order_from: str | None, alike: tuple[int, ...] = ()) -> str:
    """A machine's order as every view draws it: "4" stated, "4?" inferred, "4|5?" one of `alike`
    (the orders alike nodes share, which of them has which no line tells, or those the inferences
    that fit as well give it), "?" not known."""
    if order_from in (ORDER_ALIKE, ORDER_OPEN):
        return "|".join(map(str, alike)) + "?"
    if order is None or order_from is None:
        return "?"
    return f"{order}?" if order_from == ORDER_INFERRED else str(order)


def drawn_orders(inventory: Inventory) -> dict[str, tuple[int, str]]:
    """host -> (the order the replay's machines take, `order_shown`'s drawing) of each node there
    before the log began whose order no line states: what a text naming such a node's order prints."""
    out = {}
    for h in inventory.hosts:
        source = order_from(h) if h.order is not None else None
        if source != ORDER_LOGGED:
            known = None if source == ORDER_OPEN else h.order
            out[h.name] = (h.order or 0, order_shown(known, source, tuple(sorted({*h.alike, *h.rivals}))))
    return out


def split_alike(machines: Iterable[Machine], now: NodeLiveness) -> set[str]:
    """The alike nodes (ORDER_ALIKE) of a group some of which are online and some not, or no
    longer alike (a line has since sized them): which of the orders they share the online ones
    have no line tells, so neither does their part of the capacity (nor the others' part)."""
    online = {m.name for m in machines if m.online}
    return {host for host, fellows in now.alike_with.items() if host in now.alike
            and any(f in online for f in fellows) and not all(f in online and f in now.alike for f in fellows)}


def status(machine: Machine, awaiting: bool = False, unsure: bool = False) -> str:
    """online, offline (an administrator varied it off) or unresponsive (declared dead); before 2.1.0,
    varied on and not yet reported (`awaiting`: NodeLiveness.awaiting, AWAITING); `unsure`: down since
    before the log began, and no line tells which of the two (DOWN_UNSURE)."""
    if machine.online:
        return ONLINE
    if awaiting:
        return AWAITING
    if unsure and not machine.varied_off:
        return DOWN_UNSURE
    return OFFLINE if machine.varied_off else UNRESPONSIVE


def node_cycles(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
                inventory: Inventory | None = None, orders: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per (cycle, machine the RM knew when the cycle began), in the RM's node order:
    pool, order, memory, liveness, and the quanta and jobs of the processes the cycle's published
    schedule lists on it (`used`, `jobs`; processes being removed included), each in its job's order
    (`orders`: replay.model.orders.work_orders, found here when the caller has not).

    Raises InputError when the log has no bootstrap (and no --config filled it in)."""
    boot = boot or bootstrap(tables)
    now = node_liveness(tables, boot, inventory)
    cols: dict[str, list[Any]] = {name: [] for name in NODE_SCHEMA if name not in ("used", "jobs")}
    for cycle in tables["cycles"]["cycle"].to_list():
        machines = now.advance(cycle)
        split = split_alike(machines, now)
        for m in machines:
            said = status(m, awaiting=m.name in now.awaiting, unsure=m.name in now.unsure)
            # (a machine never sized is rmref's order 0 and memory 0: not a fact to show)
            source = None if m.name in now.missing else now.order_from.get(m.name, ORDER_LOGGED)
            # (an open order's quanta are not known; alike nodes' sum is, whichever has which,
            # unless some of them are online and some not: then no part of it is)
            order = None if source in (None, ORDER_OPEN) or m.name in split else m.order
            memory = m.memory_mb if order is not None else None
            shown = order_shown(order, source, now.alike.get(m.name, ()))
            for name, value in zip(cols, (cycle, m.name, m.nodepool, order, source, shown, memory, m.online, said)):
                cols[name].append(value)
    frame = pl.DataFrame(cols, schema={k: NODE_SCHEMA[k] for k in cols})
    schedule = narrow(tables, "schedule", ("cycle", "kind", "host", "job_id", "share_id", "memory_gb", "purged"))
    existing = in_cycles(schedule).filter((pl.col("kind") == "existing") & pl.col("host").is_not_null())
    if not boot.config.behaviours.has("purge_by_policy"):  # (from 2.1.0 every process is on its record)
        online = frame.filter(pl.col("online")).select("cycle", "host")
        existing = _on_the_record(existing, tables, online)
    existing = with_quanta(existing, tables, boot.config.quantum_gb, boot, orders)
    used = existing.group_by("cycle", "host").agg(
        pl.col("quanta").sum().cast(pl.Int64).alias("used"),
        pl.col("job_id").unique().sort().cast(pl.String).str.join(" ").alias("jobs"))
    return (frame.join(used.cast({"cycle": pl.UInt32}), on=["cycle", "host"], **LEFT)
            .with_columns(pl.col("used").fill_null(0), pl.col("jobs").fill_null(""))
            .select(list(NODE_SCHEMA)))


def _on_the_record(existing: pl.DataFrame, tables: Mapping[str, pl.DataFrame], online: pl.DataFrame) -> pl.DataFrame:
    """The Existing rows whose process takes space on the machine record a release before 2.1.0
    holds, on a machine back online (`online`: the (cycle, host) pairs online):
    rmref.evictions.off_the_record, the rule the audit's input reads (`departed`), on the flags
    replay.model.stranded reads as it does."""
    stranded = Stranded(tables)
    maybe = (existing.filter(pl.col("host").is_in(stranded.hosts()) | pl.col("purged").fill_null(False))
             .join(online.cast({"cycle": existing.schema["cycle"]}), on=["cycle", "host"], how="semi"))
    if maybe.is_empty():
        return existing
    rows = maybe.select("cycle", "job_id", "host", "share_id", "purged").iter_rows()
    gone = [(c, j, h, s) for c, j, h, s, purged in rows if s is not None and off_the_record(
        bool(purged), stranded.revived(j, s, h, c), stranded(j, s, h, c), by_policy=False)]
    if not gone:
        return existing
    drop = pl.DataFrame(gone, schema={"cycle": existing.schema["cycle"], "job_id": pl.Int64, "host": pl.String,
                                      "share_id": existing.schema["share_id"]}, orient="row")
    return existing.join(drop, on=["cycle", "job_id", "host", "share_id"], how="anti")


def cycle_capacity(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
                   inventory: Inventory | None = None) -> dict[int, int]:
    """Per cycle, the quanta of the machines online: `capacity_and_use(node_cycles(...))`'s
    capacity, without every cycle's rows (a log of many cycles and machines holds them by the
    million, the peak of a simulation's measures)."""
    boot = boot or bootstrap(tables)
    now = node_liveness(tables, boot, inventory)
    capacity: dict[int, int] = {}
    for cycle in tables["cycles"]["cycle"].to_list():
        machines = now.advance(cycle)
        if machines:  # (a cycle without machines has no row in node_cycles)
            capacity[cycle] = capacity.get(cycle, 0) + online_capacity(machines)
    return capacity


def online_capacity(machines: Iterable[Machine]) -> int:
    """The quanta of the machines that are online: a cycle's capacity (as `capacity_and_use` counts it)."""
    return sum(m.order for m in machines if m.online)


def capacity_and_use(nodes: pl.DataFrame) -> pl.DataFrame:
    """Per cycle: the online machines' quanta (`capacity`: None while an online machine's order is
    not known) and the quanta their processes use (`in_use`; a machine that is not online holds no
    capacity, and its processes are being purged)."""
    online = pl.col("online")
    unknown = pl.col("order").filter(online).is_null().any()
    return nodes.group_by("cycle").agg(
        pl.when(unknown).then(None).otherwise(pl.col("order").filter(online).sum()).alias("capacity"),
        pl.col("used").filter(online).sum().alias("in_use"),
    ).sort("cycle")
