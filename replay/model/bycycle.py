"""Rows grouped by cycle without a frame per cycle (a long log has thousands of cycles)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import polars as pl

from replay.parsing.store import ParquetTables


class ByCycle:
    """Rows grouped by cycle, each cycle's rows in their order, without a frame per cycle: one
    frame sorted by cycle and each cycle's place in it (a cycle's rows are a zero-copy slice).
    Rows after the last published schedule have no cycle and are dropped."""

    def __init__(self, frame: pl.DataFrame):
        cycle = frame["cycle"]
        # a table in log order is sorted already: then no copy of it is made
        self._frame = frame if cycle.null_count() == 0 and cycle.is_sorted() else (
            frame.filter(pl.col("cycle").is_not_null()).sort("cycle", maintain_order=True))
        cycles = self._frame["cycle"].cast(pl.Int64).to_numpy()
        starts = np.flatnonzero(np.diff(cycles, prepend=-1) != 0)
        ends = np.append(starts[1:], len(cycles))
        self._at = {int(cycles[a]): (int(a), int(b - a)) for a, b in zip(starts, ends)}

    def get(self, cycle: int) -> pl.DataFrame | None:
        """The cycle's rows (None: it has none)."""
        at = self._at.get(cycle)
        return None if at is None else self._frame.slice(*at)


class CycleRows:
    """A table's rows of one cycle at a time, in their order: read from disk on each call where
    the tables are on disk (the audit asks for few cycles' RmCounter rows), else a slice of the
    table in memory (ByCycle)."""

    def __init__(self, tables: Mapping[str, pl.DataFrame], name: str) -> None:
        self._disk = tables if isinstance(tables, ParquetTables) and name not in tables.held else None
        self._name = name
        self._memory = None if self._disk is not None else ByCycle(tables[name])

    def get(self, cycle: int) -> pl.DataFrame | None:
        """The cycle's rows (None: it has none)."""
        if self._memory is not None:
            return self._memory.get(cycle)
        rows = self._disk.cycle_rows(self._name, cycle) if self._disk is not None else None
        return rows if rows is not None and rows.height else None
