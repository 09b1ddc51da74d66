"""When each process first reported and first left Initializing, as the RM knew it at a cycle's start."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import polars as pl

from replay.model.logorder import log_order, log_position
from replay.model.published import PublishedShares, published_schedule
from replay.model.settings import INFERRED, Assumption


class ProcessClock:
    """When each process (host, share id) first reported, and first left Initializing."""

    def __init__(self, processes: pl.DataFrame, cycles: pl.DataFrame):
        reports = processes.filter(pl.col("event").is_in(["new", "state"]) & pl.col("cycle").is_not_null())
        running = reports.filter(pl.col("state_to").is_not_null() & (pl.col("state_to") != "Initializing")
                                 & (pl.col("state_from").is_null() | (pl.col("state_from") == "Initializing")))
        self._reported = self._first(reports)
        self._running = self._first(running)
        self._starts: dict[int, int] = dict(cycles.select("cycle", log_position()).iter_rows())

    @staticmethod
    def _first(frame: pl.DataFrame) -> dict[tuple[str, int], tuple[int, int]]:
        rows = frame.sort(log_order("cycle")).unique(["host", "share_id"], keep="first")
        return {(h, s): (c, at) for h, s, c, at in rows.select("host", "share_id", "cycle", log_position()).iter_rows()}

    def reported_in(self, host: str, share_id: int) -> int | None:
        """The cycle a line first shows the process report in (None: no line does)."""
        first = self._reported.get((host, share_id))
        return None if first is None else first[0]

    def state(self, cycle: int, host: str, share_id: int, predates_log: bool = False) -> tuple[bool, bool]:
        """(reported, running) as the RM knew them when the cycle's scheduling pass began.

        A process already there when the log began had reported before the log's first line,
        and was running then unless the log shows it leave Initializing later."""
        start = (cycle, self._starts.get(cycle, 0))
        never = (1 << 62, 0)
        if predates_log:
            left_init = self._running.get((host, share_id))
            return True, left_init is None or left_init < start
        return (self._reported.get((host, share_id), never) < start,
                self._running.get((host, share_id), never) < start)



@dataclass(frozen=True)
class OpenProcesses:
    """Processes there when the log (or its part after a gap) began whose report the log does not
    show: the first schedule prints each one's initialization time, above 0 only once it has
    reported, but 0 either way. They are taken as having reported (ProcessClock.state
    `predates_log`), which orders shrinkBy's victims, until a line shows them report."""

    held: int  # processes there when the log began
    until: dict[tuple[int, str, int], int | None]  # (job, host, share id) -> the cycle a line shows it report
    # processes held across a cycle with unreadable lines, not yet shown to report: (job, host, share
    # id) -> (the cycle after it, the cycle a line shows it report); the lines lost may have said so
    unread: dict[tuple[int, str, int], tuple[int, int | None]] = field(default_factory=dict)

    def unknown(self, cycle: int, job: int, host: str, share_id: int) -> bool:
        """Whether the process's report is still not known when `cycle` begins."""
        key = (job, host, share_id)
        if self.unread_before(cycle, job, host, share_id):
            return True
        return key in self.until and (self.until[key] is None or cycle <= (self.until[key] or 0))

    def unread_before(self, cycle: int, job: int, host: str, share_id: int) -> bool:
        """Whether the process's report is unknown at `cycle` because lines before it are unreadable."""
        key = (job, host, share_id)
        return key in self.unread and self.unread[key][0] <= cycle <= (self.unread[key][1] or 1 << 62)

    def assumed(self) -> tuple[Assumption, ...]:
        """The assumption, as the audit prints it (none when every such process's report is shown)."""
        if not self.until:
            return ()
        named = [f"job {j} {h}.{s}" for j, h, s in self.until]
        return (Assumption(
            "processes there before the log began", f"{len(named)} of {self.held} taken as having reported",
            INFERRED, "the first schedule prints their initialization time as 0, as for a process still initializing, "
            "and no line says they reported (shrinkBy takes a process still initializing first): "
            + ", ".join(named[:6]) + (" ..." if len(named) > 6 else "")),)


def open_processes(tables: Mapping[str, pl.DataFrame], unreadable: Collection[int] = ()) -> OpenProcesses:
    """The processes there when the log began whose report its first cycle does not show, and
    those held across a cycle in `unreadable` (lines there the parser could not read) whose report
    no line before the cycle after it shows."""
    cycles = tables["cycles"]["cycle"].to_list()
    if not cycles:
        return OpenProcesses(0, {})
    published = PublishedShares(published_schedule(tables))
    clock = ProcessClock(tables["processes"], tables["cycles"])
    first = published.first_listed(cycles)
    existing, added, _ = published.shares(first) if first is not None else ([], set(), set())
    held = [(j, h, s, ms) for j, h, s, _mem, ms in existing if (j, s) not in added]
    until = {(j, h, s): clock.reported_in(h, s) for j, h, s, ms in sorted(held, key=lambda r: (r[0], r[1], r[2]))
             if not ms and not clock.state(first or cycles[0], h, s)[0]}
    unread: dict[tuple[int, str, int], tuple[int, int | None]] = {}
    numbers = set(cycles)
    for after in sorted(c + 1 for c in unreadable if c + 1 in numbers):
        existing, added, _ = published.shares(after)
        for j, h, s, _mem, ms in sorted(existing, key=lambda r: (r[0], r[1], r[2])):
            if (j, s) not in added and not ms and not clock.state(after, h, s)[0] and (j, h, s) not in until:
                unread.setdefault((j, h, s), (after, clock.reported_in(h, s)))
    return OpenProcesses(len(held), until, unread)
