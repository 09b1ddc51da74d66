"""What a compiled table builder makes of a chunk (`Built`), and a builder as the registry names it
(`Builder`: the buckets it owns, its build); replay.parsing.builders lists them."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

import polars as pl
import pyarrow as pa

from replay.parsing.columns import Unframed
from replay.parsing.columns_plain import Records
from replay.parsing.tables import Frame


@dataclass
class Built:
    """What a builder made of a chunk's unframed rows: per-cycle tables typed in C (by table), rows
    of the tables that span the log (by bucket, for assemble_final), the buckets it left to the
    reference steps (framed), and the share orders of the placements it built (for stitch)."""

    tables: dict[str, pa.Table] = field(default_factory=dict)
    spanning: dict[str, Frame] = field(default_factory=dict)
    frames: dict[str, list[pl.DataFrame]] = field(default_factory=dict)
    share_orders: pl.DataFrame | None = None


# (its buckets' unframed rows, the chunk's record columns or None, the buckets with rows of the reference paths too)
Build = Callable[[Mapping[str, Sequence[Unframed]], Records | None, Collection[str]], Built]


@dataclass(frozen=True)
class Builder:
    """A compiled table builder: the buckets of the unframed rows it owns, and its build over them."""

    buckets: tuple[str, ...]
    build: Build
