"""Naming a cycle: by its number in the log read (`12`) or by the RM's scheduling epoch (`e118`).

A cycle's number counts the published schedules of the log read, from 1, so it changes when the
log starts elsewhere (a rolled or cut log); its epoch is the RM's own counter, printed with every
scheduling loop (`-------- 118 ------- Entering scheduling loop`, the `epoch` column of the
`cycles` table), the same in every copy of the log. Epochs are not consecutive (a loop that
publishes nothing still counts) and restart from 0 when the RM does, so an epoch that names no
published cycle, or several, is said so. Every output that names a cycle names its epoch beside
it, and `--cycles`, `--cycle` and the TUI's `g` take either form.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from replay.parsing.sources import InputError
from replay.parsing.tables import Schema

EPOCH = "e"  # the prefix of an epoch: e118
SYNTAX = "a cycle number (12) or an RM epoch (e118)"


@dataclass(frozen=True)
class CycleRef:
    """A cycle as the user named it: its number in the log, or the RM's epoch."""

    value: int
    epoch: bool = False

    def __str__(self) -> str:
        return f"{EPOCH}{self.value}" if self.epoch else str(self.value)


@dataclass(frozen=True)
class CycleSpan:
    """`A:B` (inclusive; either end may be left open) or one cycle."""

    first: CycleRef | None
    last: CycleRef | None
    exact: bool = False  # one cycle (N): an epoch must name a published cycle


def parse_ref(text: str, what: str = "--cycle") -> CycleRef:
    """`12` or `e118` (InputError otherwise)."""
    raw = text.strip()
    is_epoch = raw[:1].lower() == EPOCH
    digits = raw[1:] if is_epoch else raw
    if not digits.isdigit():
        raise InputError(f"{what} {text!r}: expected {SYNTAX}")
    ref = CycleRef(int(digits), is_epoch)
    if not ref.epoch and ref.value < 1:
        raise InputError(f"{what} {text!r}: cycles count from 1")
    return ref


def parse_span(text: str, what: str = "--cycles") -> CycleSpan:
    """`A:B`, `A:`, `:B` or `N`, each end a cycle number or an epoch (InputError otherwise)."""
    lo, sep, hi = text.partition(":")
    try:
        if not sep:
            one = parse_ref(lo, what)
            return CycleSpan(one, one, exact=True)
        first = parse_ref(lo, what) if lo.strip() else None
        last = parse_ref(hi, what) if hi.strip() else None
    except InputError:  # name the whole flag, not the end that is wrong
        raise InputError(f"{what} {text!r}: expected A:B, A:, :B or N, each {SYNTAX}") from None
    if first is not None and last is not None and first.epoch == last.epoch and last.value < first.value:
        raise InputError(f"{what} {text!r}: A must not exceed B")
    return CycleSpan(first, last)


def epochs(cycles: pl.DataFrame) -> dict[int, int | None]:
    """Cycle number -> its epoch (None when the log does not show it), from the `cycles` table."""
    return dict(cycles.select("cycle", "epoch").iter_rows())


def resolve(ref: CycleRef, cycles: pl.DataFrame, what: str = "--cycle", near: str | None = None) -> int:
    """The cycle number a reference names. A number is itself; an epoch must name exactly one
    published cycle, unless `near` is "after" or "before": then an epoch that published nothing
    stands for the next (or the last) cycle that did, where epochs only grow (one RM run)."""
    if not ref.epoch:
        return ref.value
    known = cycles.filter(pl.col("epoch").is_not_null()).sort("cycle")
    hits = known.filter(pl.col("epoch") == ref.value)["cycle"].to_list()
    if len(hits) == 1:
        return int(hits[0])
    if hits:
        raise InputError(f"{what} {ref}: epoch {ref.value} names cycles {', '.join(map(str, hits))} (the RM restarted "
                         "in between and counted again from 0); give the cycle number")
    epochs = known["epoch"]
    span = f"epochs {epochs.min()!s}-{epochs.max()!s}" if known.height else "no epoch at all"
    growing = known.height and bool((known["epoch"].diff().drop_nulls() > 0).all())
    if near and growing:
        side = known.filter((pl.col("epoch") > ref.value) if near == "after" else (pl.col("epoch") < ref.value))
        if side.height:
            return int(side["cycle"][0] if near == "after" else side["cycle"][-1])
    raise InputError(f"{what} {ref}: no published cycle has epoch {ref.value} (the log's cycles have {span}; "
                     "an epoch that published no schedule is not a cycle)")


def resolve_span(span: CycleSpan | None, cycles: pl.DataFrame, what: str = "--cycles") -> range | None:
    """The range of cycle numbers a span names (None: every cycle)."""
    if span is None:
        return None
    first = resolve(span.first, cycles, what, None if span.exact else "after") if span.first else 1
    last = resolve(span.last, cycles, what, None if span.exact else "before") if span.last else 2**31
    if last < first:
        raise InputError(f"{what}: {span.first or 1} is after {span.last}: A must not exceed B")
    return range(first, last + 1)


def label(cycle: int, epoch: int | None) -> str:
    """'12 (epoch 118)', or '12' when the epoch is not known."""
    return f"{cycle} (epoch {epoch})" if epoch is not None else str(cycle)


def span_of(cycles: list[int], epoch_of: dict[int, int | None]) -> dict[str, dict[str, int | None]] | None:
    """{"first": {"cycle", "epoch"}, "last": {...}} of the cycles an output covers (None: no cycle)."""
    if not cycles:
        return None
    return {end: {"cycle": c, "epoch": epoch_of.get(c)} for end, c in (("first", min(cycles)), ("last", max(cycles)))}


def rows_frame(rows: list[tuple[Any, ...]], schema: Schema, epoch_of: dict[int, int | None]) -> pl.DataFrame:
    """A frame of rows that name their cycle (tuples without the epoch), `schema`'s `epoch` column
    filled from `epoch_of`."""
    bare = {k: v for k, v in schema.items() if k != "epoch"}
    epoch = pl.col("cycle").replace_strict(epoch_of, default=None, return_dtype=pl.Int64).alias("epoch")
    return pl.DataFrame(rows, schema=bare, orient="row").with_columns(epoch).select(*schema)


def duration_words(seconds: float) -> str:
    """Wall-clock time in words: '45 s', '12 min', '4 h 52 min', '3 d 2 h'."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    minutes, hours, days = s // 60, s // 3600, s // 86400
    if s < 3600:
        return f"{minutes} min"
    if s < 86400:
        return f"{hours} h {minutes % 60} min" if minutes % 60 else f"{hours} h"
    return f"{days} d {hours % 24} h" if hours % 24 else f"{days} d"


def cycles_with_time(cycles: pl.DataFrame, first: int, last: int) -> str:
    """'1,750 cycles (4 h 52 min)': the published cycles `first` to `last` and the wall-clock time
    from the start of `first` to the start of the cycle after `last` (the log's end if none)."""
    rows = cycles.filter(pl.col("cycle").is_not_null()).sort("cycle")
    n = int(rows["cycle"].is_between(first, last).sum())
    start = rows.filter(pl.col("cycle") == first)["ts_start"]
    after = rows.filter(pl.col("cycle") > last)["ts_start"].head(1)
    end = after if after.len() else rows.filter(pl.col("cycle") == last)["ts_end"]
    words = f"{n:,} cycle{'s' if n != 1 else ''}"
    if start.len() and end.len() and start[0] is not None and end[0] is not None:
        words += f" ({duration_words((end[0] - start[0]).total_seconds())})"
    return words
