"""The tables as `explain` reads them: one job's rows and a cycle's, read from disk with the rest skipped.

The story of job J at cycle C reads the job's rows of every cycle (its life, the cycles it is
published in) and the rows of cycle C and the one before it (the removals a cycle lists for the
first time), nothing else but the `cycles` table and the bootstrap. With rmref's side re-entered
from the stored audit (replay.apps.stored), nothing needs the whole log: each table is read with
that filter, and only the row groups it can hold are decoded, so the story costs a fraction of
the log in time and memory. Every query explain runs filters to those rows itself, so it gives
what it gives on the whole tables.
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from replay.parsing.store import ParquetTables

WHOLE = ("cycles", "config", "classes", "nodepools", "unparsed")  # small, or read whole


class Scoped(ParquetTables):
    """`tables` as far as the story of `job` at `cycles` reads them (see the module docstring)."""

    def __init__(self, tables: ParquetTables, job: int, cycles: Collection[int]) -> None:
        super().__init__(tables.root, tables.columns)
        self.held = tables.held
        self.job = job
        self.cycles = sorted(cycles)
        self.read: dict[str, pl.DataFrame] = {}  # each table's rows in scope, read once (they are few)

    def __getitem__(self, name: str) -> pl.DataFrame:
        if name in self.held:
            return self.held[name]
        if name not in self.read:
            self.read[name] = self._scoped(name)
        return self.read[name]

    def _scoped(self, name: str) -> pl.DataFrame:
        columns = self.columns[name]
        if name in WHOLE or "cycle" not in columns:
            return super().__getitem__(name)
        scope = pl.col("cycle").is_in(self.cycles)
        if "job_id" in columns:
            scope = scope | (pl.col("job_id") == self.job)
        return pl.scan_parquet(self.root / f"{name}.parquet").select(columns).filter(scope).collect()
