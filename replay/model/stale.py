"""The free space an unschedulable machine keeps in the RM's tables (`Machine.stale_free`).

NodePool.reset skips a machine that cannot be scheduled on (dead, varied off, blacklisted), so it
keeps the free space ("v_order") of the last table that held it, and How Much and then What Of
account the work left there from that size, each moving it silently wherever a table of its size
exists (no reset in between: rmref's What Of starts where How Much's accounting left it,
`HowMuch.stale_left`). One
model, in this order:

1. **The stretch's first cycle: inferred.** The free space the last cycle in which the machine
   was schedulable left it: its order less the shares that cycle's schedule lists on it. This is
   exact, and a line the RM prints that cycle can show less (it comes after the silent moves of
   the work accounted before it). Reported as an assumption where no line was printed.
2. **Later cycles: logged.** The RM prints the size when it accounts for work there: "bad virtual
   machine list ... v_order V" when it has no table of size V, or rearrangeVirtual's WARN "found
   a share of size N on a machine with only V free slots" when a share does not fit (`nodes`
   events `bad_virtual`, `virtual_fill`). The cycle's first line within How Much gives the size;
   a first line printed after How Much (by What Of's accounting) gives What Of's
   (`Machine.stale_free_whatof`), from which rmref works out How Much's
   (`rmref.howmuch_state.stale_start`).
3. **Otherwise inferred** as in 1, and reported (the RM has moved it since: not modelled).

A machine unschedulable since before the log began, with nothing logged, has no known size
(`None`: rmref takes it as wholly free) and is reported too.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

import polars as pl

from replay.model.logorder import log_order, log_position
from replay.model.reads import narrow
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
    howmuch, whatof = logged_stale_free(tables)
    return StaleFree(howmuch, nodepools, quantum_gb, whatof)


def logged_stale_free(tables: Mapping[str, pl.DataFrame]) -> tuple[dict[tuple[int, str], int],
                                                                     dict[tuple[int, str], int]]:
    """(cycle, host) -> the stale free size the cycle's first line about it printed: within How
    Much, and after it (What Of's accounting)."""
    printed = narrow(tables, "nodes", ("cycle", "host", "event", "count", "file", "line")).filter(
        pl.col("event").is_in(["bad_virtual", "virtual_fill"]) & pl.col("cycle").is_not_null())
    if printed.is_empty():  # (most logs: How Much's lines are not read at all)
        return {}, {}
    lines = (printed.join(_howmuch_end(tables, printed["cycle"].unique()), on="cycle", how="left")
             .with_columns(whatof=log_position() > pl.col("end_at"))
             .with_columns(pl.col("whatof").fill_null(False))
             .unique(["cycle", "host", "whatof"], keep="first", maintain_order=True))
    out: tuple[dict[tuple[int, str], int], dict[tuple[int, str], int]] = ({}, {})
    for c, h, v, whatof in lines.select("cycle", "host", "count", "whatof").iter_rows():
        out[int(whatof)][(c, h)] = v
    return out


def _howmuch_end(tables: Mapping[str, pl.DataFrame], cycles: pl.Series) -> pl.DataFrame:
    """Per cycle of `cycles`, the log position (`end_at`) of How Much's last line (its counters and
    counting messages), wherever a roll cut the cycle; only the file and line are read (the
    counters' vectors are most of a log's tables)."""
    counted = [narrow(tables, "rmcounter", ("cycle", "file", "line")),
               narrow(tables, "counts", ("cycle", "kind", "file", "line")).filter(pl.col("kind") != "given")
               .select("cycle", "file", "line")]
    return (pl.concat([c.with_columns(pl.col("line").cast(pl.UInt32)) for c in counted])
            .filter(pl.col("cycle").is_in(cycles.implode()))
            .sort(log_order("cycle")).group_by("cycle", maintain_order=True).last()
            .select("cycle", log_position().alias("end_at")))


class StaleFree:
    """Fills `stale_free` on each cycle's machines: logged first, then inferred (see the module)."""

    def __init__(self, logged: Mapping[tuple[int, str], int], nodepools: tuple[Nodepool, ...], quantum_gb: int,
                 logged_whatof: Mapping[tuple[int, str], int] | None = None):
        self._logged = logged
        self._logged_whatof = logged_whatof or {}
        self._quantum = {p.name: tree_quantum(nodepools, p.name, quantum_gb) for p in nodepools}
        self._default = quantum_gb
        self._last: dict[str, int] = {}  # host -> free space its last schedulable cycle left
        self._down: set[str] = set()  # hosts unschedulable in the cycle before
        self._old: dict[str, int] = {}  # host -> the free space its last disabled record kept
        self.notes: list[StaleNote] = []  # every cycle and machine with work the value was not logged for

    def fill(self, cycle: int, state: tuple[Machine, ...], occupied: Collection[str]) -> tuple[Machine, ...]:
        """The cycle's machines with their stale free space (`occupied`: hosts holding work)."""
        out, down = [], set()
        for m in state:
            key = (cycle, m.name)
            if m.online and not m.blacklisted:
                out.append(self._old_record(m, key))
                continue
            down.add(m.name)
            if m.name not in self._down and m.name in self._last:
                self._old[m.name] = self._last[m.name]
            said = key in self._logged or key in self._logged_whatof
            if m.name in occupied and not said:  # (only work there reads the size)
                self.notes.append(StaleNote(m.name, cycle, self._last.get(m.name)))
            if m.name not in self._down and m.name in self._last:
                # the stretch's first cycle: exactly what the last schedule left (a line the RM
                # prints comes after the silent moves of the work accounted there before it)
                out.append(replace(m, stale_free=self._last[m.name]))
            elif key in self._logged:
                out.append(replace(m, stale_free=self._logged[key]))
            elif key in self._logged_whatof:  # rmref works How Much's size out from What Of's
                out.append(replace(m, stale_free_whatof=self._logged_whatof[key]))
            else:
                free = self._last.get(m.name)
                out.append(m if free is None else replace(m, stale_free=free))
        self._down = down
        return tuple(out)

    def _old_record(self, m: Machine, key: tuple[int, str]) -> Machine:
        """A schedulable machine with the free space of its old record (`Machine.old_free`), where
        it was ever unschedulable: the cycle's line about it when printed (only the old record,
        which holds the processes a 2.0.x disable kept, is accounted out of a table), else the last
        value known."""
        if key in self._logged:
            self._old[m.name] = self._logged[key]
        free = self._old.get(m.name)
        return m if free is None else replace(m, old_free=free)

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
