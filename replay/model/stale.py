"""The free space an unschedulable machine keeps in the RM's tables (`Machine.stale_free`).

NodePool.reset skips a machine that cannot be scheduled on (dead, varied off, blacklisted), so it
keeps the free space ("v_order") of the last table that held it, and What Of and How Much account
the work left there from that size. One model, two sources, in this order:

1. **Logged.** The RM prints the size when it accounts for work there: "bad virtual machine list
   ... v_order V" when it has no table of size V, or rearrangeVirtual's WARN "found a share of size
   N on a machine with only V free slots" when a share does not fit. The cycle's first such line
   shows the size as the cycle began (`nodes` events `bad_virtual`, `virtual_fill`).
2. **Inferred.** Otherwise (a table of size V exists and the share fits: the RM prints nothing) it
   is the free space the last cycle in which the machine was schedulable left it: its order less
   the shares that cycle's schedule lists on it. Each inference is reported as an assumption.

A machine unschedulable since before the log began, with nothing logged, has no known size
(`None`: rmref takes it as wholly free) and is reported too. Not modelled: a later cycle that
accounts work there without a line moves the size further.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import polars as pl

from replay.model.settings import INFERRED, Assumption
from rmref import job_order
from rmref.model import Machine, Nodepool
from rmref.trees import tree_quantum

@dataclass(frozen=True)
class StaleNote:
    """One machine whose stale free space the log did not state in a cycle where work sits on it."""

    host: str
    cycle: int
    free: int | None  # inferred quanta, or None when nothing is known (taken as wholly free)


def stale_free(tables: Mapping[str, pl.DataFrame], nodepools: tuple[Nodepool, ...], quantum_gb: int) -> StaleFree:
    """The model over a parsed log, with its logged values."""
    return StaleFree(logged_stale_free(tables["nodes"]), nodepools, quantum_gb)


def logged_stale_free(nodes: pl.DataFrame) -> dict[tuple[int, str], int]:
    """(cycle, host) -> the stale free size the cycle's first line about it printed."""
    stale = (nodes.filter(pl.col("event").is_in(["bad_virtual", "virtual_fill"]) & pl.col("cycle").is_not_null())
             .unique(["cycle", "host"], keep="first", maintain_order=True))
    return {(c, h): v for c, h, v in stale.select("cycle", "host", "count").iter_rows()}


class StaleFree:
    """Fills `stale_free` on each cycle's machines: logged first, then inferred (see the module)."""

    def __init__(self, logged: Mapping[tuple[int, str], int], nodepools: tuple[Nodepool, ...], quantum_gb: int):
        self._logged = logged
        self._quantum = {p.name: tree_quantum(nodepools, p.name, quantum_gb) for p in nodepools}
        self._default = quantum_gb
        self._last: dict[str, int] = {}  # host -> free space its last schedulable cycle left
        self.notes: list[StaleNote] = []  # every cycle and machine with work the value was not logged for

    def fill(self, cycle: int, state: tuple[Machine, ...], occupied: Collection[str]) -> tuple[Machine, ...]:
        """The cycle's machines with their stale free space (`occupied`: hosts holding work)."""
        out = []
        for m in state:
            if m.online and not m.blacklisted:
                out.append(m)
                continue
            logged = self._logged.get((cycle, m.name))
            free = logged if logged is not None else self._last.get(m.name)
            if logged is None and m.name in occupied:  # (only work there reads the size)
                self.notes.append(StaleNote(m.name, cycle, free))
            out.append(m if free is None else replace(m, stale_free=free))
        return tuple(out)

    def record(self, state: tuple[Machine, ...], shares: Iterable[tuple[str, int]]) -> None:
        """After the cycle: what its schedule (each share's host and memory in GB) left free on
        each schedulable machine, for the cycles after it."""
        pool = {m.name: m.nodepool for m in state}
        used: dict[str, int] = {}
        for host, memory_gb in shares:
            used[host] = used.get(host, 0) + job_order(memory_gb, self._quantum.get(pool.get(host, ""), self._default))
        for m in state:
            if m.online and not m.blacklisted:
                self._last[m.name] = max(0, m.order - used.get(m.name, 0))


def stale_assumptions(notes: Sequence[StaleNote], cycles: Collection[int] | None = None) -> tuple[Assumption, ...]:
    """One assumption per machine whose stale free space was inferred or unknown (in `cycles`,
    default all), and a summary."""
    if cycles is not None:
        notes = [n for n in notes if n.cycle in cycles]
    if not notes:
        return ()
    by_host: dict[str, list[StaleNote]] = {}
    for n in notes:
        by_host.setdefault(n.host, []).append(n)
    out = []
    for host, mine in by_host.items():
        span = f"cycles {mine[0].cycle}-{mine[-1].cycle}" if len(mine) > 1 else f"cycle {mine[0].cycle}"
        known = [n for n in mine if n.free is not None]
        value = (f"free {known[-1].free} quanta in {span}" if len(known) == len(mine)
                 else f"free space unknown in {len(mine) - len(known)} of its cycles ({span}): taken as wholly free")
        out.append(Assumption(
            f"node {host} stale free space", value, INFERRED,
            "unschedulable while holding work, and no 'bad virtual machine list' or 'found a share of size' "
            "line states its free space: taken from the last schedule in which it was schedulable"))
    unknown = sum(1 for mine in by_host.values() if any(n.free is None for n in mine))
    out.append(Assumption(
        "unschedulable nodes' free space",
        f"inferred for {len(by_host) - unknown} node(s), unknown for {unknown} ({len(notes)} node-cycles)",
        INFERRED, "the RM prints an unschedulable node's free space only when no table of that size exists or a "
                  "share does not fit; otherwise the last schedule that had the node schedulable gives it "
                  "(report.json lists each node)"))
    return tuple(out)
