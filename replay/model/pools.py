"""Which nodepool a host is in: read by the machines' model and by a job's order (the quantum of
the pool tree its processes run in, where its class is not known)."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap


class PoolOf:
    """Which nodepool a host is in: the node files' lists (by full or short name), else the top pool."""

    def __init__(self, nodepools: pl.DataFrame, top: str):
        self._of: dict[str, str] = {n: r["name"] for r in nodepools.iter_rows(named=True) for n in (r["nodes"] or ())}
        self.top = top
        # a pool may take hosts by a rule (a '.regex' node file, 3.0.0 on) that the RM matches first
        self._ruled = "node_rule" in nodepools.columns and nodepools["node_rule"].drop_nulls().len() > 0

    def __call__(self, host: str) -> str:
        return self.listed(host) or self.top

    def listed(self, host: str) -> str | None:
        """The pool whose node file lists the host (None: no list names it, the top pool takes it)."""
        return self._of.get(host, self._of.get(host.split(".")[0]))

    def placed(self, host: str) -> str | None:
        """The pool the RM puts the host in, where the configuration tells it: the pool whose node
        file lists it, else the first top-level pool (Scheduler's default for a node no node file
        names); None where a pool takes hosts by a rule, which this does not match."""
        return self.listed(host) or (None if self._ruled else self.top)


def pool_of(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> PoolOf:
    """Which nodepool a host is in (the node files' lists, else the top pool)."""
    return PoolOf(tables["nodepools"], next((p.name for p in boot.nodepools if p.parent is None), "--default--"))
