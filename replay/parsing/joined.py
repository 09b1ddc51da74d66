"""A compiled reader's rows of one block joined to the templated rows `scan.fill_rows` left unframed
for the same bucket and block (`RawRows`), in record order, so that the bucket is still typed in C.

Its users keep only what is their own (which reader, which records it must take, which fields it
fills): the DEBUG schedule's sections (replay.parsing.sectioned), doExpansion
(replay.parsing.columns_expansions), the bootstrap's node lists and JD host line
(replay.parsing.boot_scan).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

import numpy as np

from replay.parsing.chunks import Bytes
from replay.parsing.families import FAMILY_CODE, FAMILY_NAMES, TARGETS
from replay.parsing.scan import Bucket, RawRows


def record_positions(every: np.ndarray, rec: np.ndarray) -> np.ndarray | None:
    """Where each record number of `rec` stands in `every` (sorted); None: one of them is not there."""
    pos = np.searchsorted(every, rec)
    if (pos >= len(every)).any() or (every[np.minimum(pos, len(every) - 1)] != rec).any():
        return None
    return pos


def widen_bucket(base: Bucket, family: str, columns: Sequence[str] = (), lists: Sequence[str] = ()) -> Bucket:
    """`base` with the string `columns` and (string) list columns `lists` it lacks appended after its
    own, and `family`'s target constants at `family`'s code."""
    new_lists = (*base.lists, *[name for name in lists if name not in base.lists])
    consts = {key: list(per_code) for key, per_code in base.consts}
    for key, value in TARGETS[family][0].consts.items():
        consts.setdefault(key, [None] * len(FAMILY_NAMES))[FAMILY_CODE[family]] = value
    return dataclasses.replace(
        base, columns=(*base.columns, *[name for name in columns if name not in base.columns]), lists=new_lists,
        list_ints=(*base.list_ints, *[False] * (len(new_lists) - len(base.lists))),
        consts=tuple((key, tuple(per_code)) for key, per_code in consts.items()))


def join_rows(old: RawRows | None, bucket: Bucket, at: np.ndarray, spans: Mapping[str, np.ndarray],
              lists: Mapping[str, tuple[np.ndarray, bytes]], data: Bytes, rec: np.ndarray,
              codes: np.ndarray) -> RawRows:
    """One block's RawRows of `bucket` (whose columns begin with `old`'s): `old`'s rows (None: none)
    and a reader's, in record order (a record's rows keep theirs, `old`'s first). The reader's rows
    are at positions `at` in `rec` (every record's number; `codes`: every record's family code), with
    `spans` (a string column's int32 (start, end) per row) and `lists` (a list column's item count per
    row, -1: none, and its items' spans); a list column takes its items from one side only."""
    old_at = np.empty(0, np.int64) if old is None else old.rows
    m, n = len(old_at), len(at)
    out = np.full((m + n, 2 * len(bucket.columns)), -1, dtype=np.int32)
    if old is not None:
        if bucket.columns[:len(old.bucket.columns)] != old.bucket.columns:
            raise ValueError(f"{bucket.table}: the joined bucket's columns do not begin with the templated ones")
        out[:m, :old.spans.shape[1]] = old.spans
    for name, column in spans.items():
        c = bucket.columns.index(name)
        out[m:, 2 * c:2 * c + 2] = column
    rows_at = np.concatenate([old_at, at]).astype(np.int64, copy=False)
    order = np.argsort(rows_at, kind="stable")
    joined_lists = []
    for name in bucket.lists:  # a list's items are one side's, in its order: only the counts move
        counts, items = np.full(m + n, -1, np.int32), b""
        if old is not None and name in old.bucket.lists:
            if name in lists:
                raise ValueError(f"{bucket.table}.{name}: both sides fill this list")
            old_counts, items = old.got[2][old.bucket.lists.index(name)]
            counts[:m] = np.frombuffer(old_counts, dtype=np.int32)
        elif name in lists:
            counts[m:], items = lists[name]
        joined_lists.append((counts[order].tobytes(), items))
    got = (np.arange(m + n, dtype=np.int32).tobytes(), np.ascontiguousarray(out[order]).tobytes(), joined_lists)
    return RawRows(bucket, got, data, rows_at[order], rec, codes)
