"""Rows grouped by cycle without a frame per cycle (a long log has thousands of cycles)."""

from __future__ import annotations

import numpy as np
import polars as pl


class ByCycle:
    """Rows grouped by cycle, each cycle's rows in their order, without a frame per cycle: one
    frame sorted by cycle and each cycle's place in it (a cycle's rows are a zero-copy slice).
    Rows after the last published schedule have no cycle and are dropped."""

    def __init__(self, frame: pl.DataFrame):
        self._frame = frame.filter(pl.col("cycle").is_not_null()).sort("cycle", maintain_order=True)
        cycles = self._frame["cycle"].cast(pl.Int64).to_numpy()
        starts = np.flatnonzero(np.diff(cycles, prepend=-1) != 0)
        ends = np.append(starts[1:], len(cycles))
        self._at = {int(cycles[a]): (int(a), int(b - a)) for a, b in zip(starts, ends)}

    def get(self, cycle: int) -> pl.DataFrame | None:
        """The cycle's rows (None: it has none)."""
        at = self._at.get(cycle)
        return None if at is None else self._frame.slice(*at)
