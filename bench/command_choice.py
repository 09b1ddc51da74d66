"""The job, the cycle and the change the benches and the identity check run `explain`, `whatif` and
`simulate` with on a log, chosen alike by each so their figures and digests speak of the same runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl


@dataclass(frozen=True)
class Choice:
    """`explain --job job --cycle cycle`, and `whatif`/`simulate` with `change` (--set arguments)."""

    job: int
    cycle: int
    change: tuple[str, ...]


def choose(tables: Mapping[str, pl.DataFrame]) -> Choice:
    """The job with the most published rows, at the middle of its cycles; the change doubles the
    weight of the first fair-share class (a log of none turns defragmentation off instead)."""
    from replay.model.start import bootstrap

    rows = tables["schedule"].filter(pl.col("job_id").is_not_null() & pl.col("cycle").is_not_null())
    job = rows.group_by("job_id").len().sort(["len", "job_id"], descending=[True, False])["job_id"][0]
    cycles = sorted(set(rows.filter(pl.col("job_id") == job)["cycle"].to_list()))
    fair = next((c for c in bootstrap(tables).classes if c.policy == "FAIR_SHARE"), None)
    setting = f"class.{fair.name}.weight={2 * fair.weight}" if fair else "ducc.rm.defragmentation=false"
    return Choice(job, cycles[len(cycles) // 2], ("--set", setting))
