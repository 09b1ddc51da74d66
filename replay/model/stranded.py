"""Processes left on a machine's old record (2.0.x): which published shares are `Share.stranded`.

Before 2.1.0 (behaviour `purge_by_policy`) NodePool.disable took a varied-off machine out of the
pool's tables, keeping the processes it did not purge (the walk stops at the first reservation's)
on that Machine object. When the node next reported after its vary-on, the RM made a new, empty
Machine (`Host added`); the kept processes stay on the old one, which no table holds any more. A
share is stranded when it was published before such an arrival of its host.

A node that died came back otherwise: NodePool.nodeArrives found its Machine among the
unresponsive ones and put that same record back in the tables (`Host reactivated`), with every
process still on it, the purged ones included until the Orchestrator confirmed them gone. A share
is revived when it was published before such a reactivation of its host (`Share.revived`).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
from replay.model.logorder import log_order


class Stranded:
    """Which (job, share id) on a host, in a cycle, sits on the host's old Machine record."""

    def __init__(self, tables: Mapping[str, pl.DataFrame]):
        nodes = tables["nodes"].filter(pl.col("event").is_in(["arrive", "reactivate"]) & pl.col("cycle").is_not_null())
        self._reborn: dict[str, list[int]] = {}  # host -> cycles a new record replaced a disabled one
        self._revived: dict[str, list[int]] = {}  # host -> cycles its disabled record came back
        # the RM reactivates only a record it holds unresponsive, and makes a new one ("Host added")
        # only for a node it holds none of: a node that held processes before either was disabled
        # first, whether its disable is in the log or before it, or in lines lost from it (a node
        # new to the RM held nothing, and no share of it is published before its arrival)
        for host, event, cycle in nodes.sort(log_order()).select("host", "event", "cycle").iter_rows():
            (self._reborn if event == "arrive" else self._revived).setdefault(host, []).append(cycle)
        hosts = list(self._reborn) + list(self._revived)
        placed = tables["schedule"].filter(pl.col("share_id").is_not_null() & pl.col("host").is_in(hosts))
        self._first: dict[tuple[int, int], int] = {
            (job, sid): cycle for job, sid, cycle in placed.group_by("job_id", "share_id").agg(
                pl.col("cycle").min()).iter_rows()}

    def hosts(self) -> list[str]:
        """The hosts that came back as a new record or as their old one (no share elsewhere is either)."""
        return sorted({*self._reborn, *self._revived})

    def __call__(self, job: int, sid: int, host: str, cycle: int) -> bool:
        """Whether the share was published before a new record of its host replaced the old, by `cycle`."""
        return self._before(self._reborn, job, sid, host, cycle)

    def revived(self, job: int, sid: int, host: str, cycle: int) -> bool:
        """Whether the share was published before its host's disabled record came back, by `cycle`."""
        return self._before(self._revived, job, sid, host, cycle)

    def _before(self, returns: Mapping[str, list[int]], job: int, sid: int, host: str, cycle: int) -> bool:
        """Whether the share was first published before one of the host's `returns` up to `cycle`."""
        first = self._first.get((job, sid))
        return first is not None and any(first < r <= cycle for r in returns.get(host, ()))
