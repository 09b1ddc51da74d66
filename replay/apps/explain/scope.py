"""The tables as `explain` reads them: one job's rows and a cycle's, read from disk with the rest skipped.

The story of job J at cycle C reads the job's rows of every cycle (its life, the cycles it is
published in) and the rows of cycle C and the one before it (the removals a cycle lists for the
first time), nothing else but the `cycles` table and the bootstrap. With rmref's side re-entered
from the stored audit (replay.apps.stored), nothing needs the whole log: each table is read with
that filter, and only the row groups it can hold are decoded, so the story costs a fraction of
the log in time and memory. Every query explain runs filters to those rows itself, so it gives
what it gives on the whole tables; a fact of the whole log (whether it starts mid-stream,
replay.model.leaving) is read with `narrow`, which reads the log's rows, not the view's.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

import polars as pl

from replay.apps.audit import AuditResult, trace_cycle
from replay.apps.explain.build import explain_job
from replay.apps.explain.lookup import chosen_cycle
from replay.apps.explain.story import Story
from replay.parsing.sources import InputError
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


def explain_stored(tables: Mapping[str, pl.DataFrame], job_id: int, cycle: int | None,
                   audited: Callable[[], AuditResult | None]) -> Story:
    """`explain_job` with rmref's side from a stored audit (`audited()`, asked for once the job and
    the cycle are known to be in the log): where the tables are on disk and the audit re-enters
    the cycle, only the job's rows and the cycle's are read (`Scoped`)."""
    view = Scoped(tables, job_id, ()) if isinstance(tables, ParquetTables) else tables
    try:
        chosen = chosen_cycle(view, job_id, cycle)
    except InputError:
        chosen_cycle(tables, job_id, cycle)  # (the whole schedule names the log's jobs)
        raise
    result = audited()
    trace = trace_cycle(tables, result, chosen) if result is not None else None
    if trace is not None and isinstance(tables, ParquetTables):
        assert result is not None
        result.traces[chosen] = trace
        tables = Scoped(tables, job_id, (chosen - 1, chosen))
    return explain_job(tables, job_id, cycle, result)
