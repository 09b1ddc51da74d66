"""Node liveness: the machines the RM knew and their state (online, dead, varied off, disabled),
advanced one cycle's node events at a time from the nodes there before the log began.

The nodes there before the log began come from the inventory (replay.model.machines.inventory);
arrivals, deaths, recoveries and administrators' vary-offs from the `nodes` table.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from replay.model.bycycle import ByCycle
from replay.model.machines.inventory import STATED, Host, Inventory
from replay.model.pools import PoolOf
from rmref.behaviours import Behaviours
from rmref.constants import DEAD, VARIED_OFF
from rmref.model import Machine

_OFFLINE = {"death", "vary_off", "vary_on"}
_ONLINE = {"arrive", "reactivate", "recover", "recover_node"}
_DISABLE_LINES = ("purge", "not_purged", "completed")  # NodePool.disable's lines after its "Host disabled"
# where a machine's order comes from (`NodeLiveness.order_from`; none: not known, `missing`)
ORDER_LOGGED = "log"  # a line states it (an arrival, a placement, the occupancy table, ...)
ORDER_INFERRED = "inferred"  # solved for from the counters (replay.model.machines.solver)
ORDER_ALIKE = "alike"  # inferred, among alike nodes no line tells apart: one of `NodeLiveness.alike`
ORDER_OPEN = "open"  # inferred, the inferences that fit as well disagreeing: one of `NodeLiveness.alike`


def machine_hosts(nodes: pl.DataFrame) -> list[str]:
    """The host names the rebuilt cycles name machines by: those that arrive or return, and those
    heard from (heartbeats), in first-seen order."""
    rows = nodes.filter(pl.col("event").is_in([*_ONLINE, "heartbeat"]))
    return rows["host"].drop_nulls().unique(maintain_order=True).to_list()


def liveness_events(nodes: pl.DataFrame) -> pl.DataFrame:
    """The `nodes` rows that change a node's liveness, a line of NodePool.disable read as the death
    or vary-off that made it.

    disable prints "Host dead:" only when nodeLeaves calls it (a death: handleDeadNodes' "***Purging
    machine***" line comes first) and "Host offline:" only for doVaryOff. Unread bytes can take
    the death's or vary-off's own line and leave these: the node is down all the same (the
    2.0.x shapes, "dead/offline", say neither)."""
    down = pl.col("down") if "down" in nodes.columns else pl.lit(None, pl.String)
    said = pl.when(down == "Host dead:").then(pl.lit("death")).when(down == "Host offline:").then(pl.lit("vary_off"))
    event = pl.when(pl.col("event").is_in(_DISABLE_LINES)).then(said).otherwise(pl.col("event"))
    return nodes.with_columns(event.alias("event")).filter(pl.col("event").is_in(list(_OFFLINE | _ONLINE)))


class NodeLiveness:
    """Node liveness and inventory, advanced one cycle's events at a time.

    The nodes there before the log began come from the inventory (what the log states about them,
    and what was inferred: replay.model.machines.inventory); a node it cannot size is `missing`.
    """

    def __init__(self, tables: Mapping[str, pl.DataFrame], inventory: Inventory, pool_of: PoolOf,
                 behaviours: Behaviours = Behaviours()):
        nodes = tables["nodes"]
        self._events = ByCycle(liveness_events(nodes))
        ips = nodes.filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
        self._ips = dict(ips.select("host", "ip").iter_rows())
        self._pool = pool_of
        self._known: dict[str, Machine] = {
            h.name: Machine(h.name, h.nodepool, h.order or 0, inventory.memory_mb(h), h.ip,
                            online=not (h.dead or h.varied_off or h.down), varied_off=h.varied_off,
                            memory_stated=h.memory_mb is not None)
            for h in inventory.hosts}  # there before the log began, in the order first heard from
        self.missing: set[str] = set(inventory.unknown)
        # where each machine's order comes from (ORDER_*); a machine with none is `missing`
        self.order_from: dict[str, str] = {h.name: order_from(h) for h in inventory.hosts if h.order is not None}
        # the orders a machine may have where the log does not settle it (ORDER_ALIKE, ORDER_OPEN)
        self.alike: dict[str, tuple[int, ...]] = {h.name: tuple(sorted({*h.alike, *h.rivals}))
                                                  for h in inventory.hosts if h.alike or h.rivals}
        # the alike nodes (ORDER_ALIKE) each shares its orders with, itself among them
        self.alike_with: dict[str, tuple[str, ...]] = {h.name: h.alike_with for h in inventory.hosts
                                                       if h.alike_with and not h.rivals}
        # down before the log began, dead or varied off, until a line tells which (`unsure`): a
        # vary-off purges neither, so it is kept among the dead
        self._dead: set[str] = {h.name for h in inventory.hosts if h.dead or h.down}
        self.unsure: set[str] = {h.name for h in inventory.hosts if h.down}
        # before 2.1.0 a vary-on leaves the machine out of its pool until the node next reports (an
        # arrival: `Host added`); from 2.1.0 on it is schedulable at once (behaviour vary_on_at_once)
        self._back_at_once = behaviours.has("vary_on_at_once")
        self.awaiting: set[str] = set()  # varied on before 2.1.0, not yet reported: in none of the RM's maps

    def advance(self, cycle: int) -> tuple[Machine, ...]:
        """The machines as the cycle's scheduling pass saw them."""
        events = self._events.get(cycle)
        # a disable (and the purge it makes) is news of the cycle it happened in only
        self._known = {h: replace(m, disabled="") if m.disabled else m for h, m in self._known.items()}
        if events is not None:
            for host, event, pool, order, memory in events.select(
                "host", "event", "nodepool", "share_order", "memory_mb"
            ).iter_rows():
                old = self._known.get(host)
                self.unsure.discard(host)  # (a return, a death or a vary-off leaves it one state)
                if event in _ONLINE:
                    varied_off = old.varied_off if old else False  # a dead node returns still varied off
                    self._known[host] = Machine(
                        host, pool or (old.nodepool if old else self._pool(host)),
                        order if order is not None else (old.order if old else 0),
                        memory if memory is not None else (old.memory_mb if old else 0),
                        self._ips.get(host, ""), online=not varied_off, varied_off=varied_off,
                        memory_stated=memory is not None or (old.memory_stated if old else False),
                    )
                    self._dead.discard(host)
                    self.awaiting.discard(host)
                    if order is not None:  # (an arrival states the order)
                        self.missing.discard(host)
                        self.order_from[host] = ORDER_LOGGED
                        self.alike.pop(host, None)
                    elif old is None:  # a return of a node never sized: its order no line gives
                        self.missing.add(host)
                elif old is None:
                    continue
                elif event == "death":  # NodePool.nodeLeaves: disable, every share but reservations
                    self._dead.add(host)
                    self._known[host] = replace(old, online=False, disabled=DEAD)
                    self.awaiting.discard(host)
                else:  # an administrator's vary-off or vary-on
                    off = event == "vary_off"
                    # doVaryOff disables (purges fair-share work) only a machine that was online
                    purges = off and not old.varied_off and host not in self._dead
                    online = not off and host not in self._dead and self._back_at_once
                    self._known[host] = replace(old, varied_off=off, online=online,
                                                disabled=VARIED_OFF if purges else old.disabled)
                    if off or online or host in self._dead:
                        self.awaiting.discard(host)
                    else:
                        self.awaiting.add(host)
        return tuple(self._known.values())  # arrival order: the order the RM's node maps were filled


def order_from(host: Host) -> str:
    """Where a node there before the log began takes its order from (its order known)."""
    if host.source == STATED:
        return ORDER_LOGGED
    if host.rivals:
        return ORDER_OPEN
    return ORDER_ALIKE if host.alike else ORDER_INFERRED
