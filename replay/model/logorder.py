"""Log order across a rolled set (rm.log.2, rm.log.1, rm.log): the file's place in the set, then the line.

Line numbers restart in each file and the tables name a row's file (`file`: its name), so "in log
order" is never the line alone, nor the file's name as text ("rm.log.1" sorts before the older
"rm.log.2"). Every site that orders rows of several tables, compares two rows' places, or looks
for a job's first or last row reads the position here.
"""

from __future__ import annotations

import polars as pl

# a rolled member's number, as replay.parsing.sources.rolled_key reads a name: log4j's
# RollingFileAppender keeps rm.log current, rm.log.1 the newest backup, the largest N the oldest
_BACKUP = r"\.(\d+)(?:\.gz)?$"
_LINE_BITS = 32  # a line number is a UInt32
_PLACES = (1 << 31) - 1


def file_place(column: str = "file") -> pl.Expr:
    """A file's place in its rolled set, oldest first: -N for a backup rm.log.N (.gz), 0 for the
    current file and for a table of one nameless file (a simulation's own)."""
    return (-pl.col(column).str.extract(_BACKUP, 1).cast(pl.Int64).fill_null(0)).alias("file_place")


def log_position() -> pl.Expr:
    """A row's place in the whole log as one Int64 (its file's place, then its line): smaller is
    earlier; null for a row the log has no line for."""
    # the place is at most 0 and above -2**31: shifted to 0 .. 2**31 - 1, it and the line fill an Int64
    return ((file_place() + _PLACES) * (1 << _LINE_BITS) + pl.col("line").cast(pl.Int64)).alias("log_position")


def log_order(*before: str, after: tuple[str, ...] = ()) -> list[pl.Expr]:
    """Sort keys: the columns `before`, the row's place in the log (`log_position`), then `after`."""
    return [*(pl.col(c) for c in before), log_position(), *(pl.col(c) for c in after)]


# a row's place in the log with its cycle first, as one number for join_asof (Int128: the cycle and
# the position each keep their whole range)
AT = (pl.col("cycle").cast(pl.Int128) * (1 << 64) + log_position().cast(pl.Int128)).alias("at")


def cycle_end(cycle: str = "cycle") -> pl.Expr:
    """An `at` after every line of the cycle (AT's numbering)."""
    return ((pl.col(cycle).cast(pl.Int128) + 1) * (1 << 64) - 1).alias("at")
