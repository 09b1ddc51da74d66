"""The two bootstrap families the templates cannot spell, read by the compiled scanner: a pool's node
list (np_nodes: "<None>" or node names over one or more lines, `_scan.nodes`) and the JD host line
(jd_host_class: one terminal with a blank inside, `_scan.jd_host`), both in csrc/boot.c.

Their rows join their bucket's templated rows (`fill_rows`' RawRows of `_nodepool_lines` and
`_config_lines`) in record order, so the boot tables' rows of a bootstrap all come from the scanner
and are typed in C (replay.parsing.columns_boot). A family of which the reader refuses any record
of the chunk (another shape, lines in two blocks, a header the polars path read) stays with the
handler and regex (replay/parsing/fast.py `_np_nodes`, REGEXES), then the grammar, which decides;
its rows then send the bucket the reference way (family_rows.parse_families), as before.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import polars as pl

from replay.parsing.chunks import Bytes
from replay.parsing.columns import Unframed, compiled_buckets
from replay.parsing.joined import join_rows, record_positions, widen_bucket
from replay.parsing.records import Records
from replay.parsing.scan import Bucket, RawRows, fill_plan
from replay.parsing.compiled import COMPILED

if COMPILED:
    from replay.parsing import _scan

# family -> (its bucket, the bucket's string column its value fills, or its list column the items fill)
FAMILIES = {"jd_host_class": ("_config_lines", "value"), "np_nodes": ("_nodepool_lines", "nodes_list")}
_LISTS = {"nodes_list"}


@dataclass(frozen=True)
class Read:
    """One family's rows of a chunk as its reader gave them, all in one block: per row its record,
    the value's span (jd_host_class) or its item count (-1: "<None>") and item spans (np_nodes)."""

    family: str
    data: Bytes
    rec: np.ndarray
    spans: np.ndarray  # (rows, 2) int32, or (items, 2) for a list
    counts: np.ndarray | None = None


def take(parts: dict[str, pl.DataFrame], recs: Records, raw: dict[str, list[Unframed]], whole: pl.DataFrame) -> None:
    """Read the two families' records of `parts` in C, when the reader takes them all: their rows go
    into `raw` with their bucket's templated rows, the family out of `parts` (`whole`: the chunk's
    records, as `fill_rows` numbers them)."""
    compiled = compiled_buckets()
    for family, (bucket, _) in FAMILIES.items():
        if family not in parts or bucket not in compiled:
            continue
        got = read(family, parts[family], recs)
        joined = None if got is None else _joined(raw.get(bucket, []), got, whole)
        if joined is not None:
            raw[bucket] = joined
            del parts[family]


def read(family: str, part: pl.DataFrame, recs: Records) -> Read | None:
    """The rows of `part` (the family's records: rec, _piece, _bs, _be) by its reader; None: a record
    refused, or not all of them (with their lines) in one block the scanner read."""
    if not COMPILED or "_bs" not in part.columns or part["_bs"].null_count() or part["_piece"].n_unique() != 1:
        return None
    piece = part["_piece"][0]
    lines = part.select("rec", pl.col("_bs").alias("_s"), pl.col("_be").alias("_e"))
    if family == "np_nodes":  # its body's line, then its continuation lines
        more = recs.continuations.join(part.select("rec"), on="rec", how="semi")
        if more.height:
            if "_s" not in more.columns or more["_s"].null_count() or (more["_piece"] != piece).any():
                return None
            lines = pl.concat([lines, more.select("rec", "_s", "_e")], how="vertical_relaxed").sort(
                "rec", maintain_order=True)
    data = recs.blocks[piece]
    spans = [np.ascontiguousarray(lines[c].to_numpy(), np.int32) for c in ("rec", "_s", "_e")]
    if family == "np_nodes":
        rec, counts, items, refused = _scan.nodes(data, *spans)
        return None if refused else Read(family, data, i32(rec), i32(items).reshape(-1, 2), i32(counts))
    rec, values, refused = _scan.jd_host(data, *spans)
    return None if refused else Read(family, data, i32(rec), i32(values).reshape(-1, 2))


def i32(raw: bytes) -> np.ndarray:
    """A reader's int32 column."""
    return np.frombuffer(raw, dtype=np.int32)


@lru_cache(maxsize=None)
def widened(table: str) -> Bucket | None:
    """The templated bucket `table` of `fill_rows` with the two families' fields and constants."""
    bucket = next((b for b in fill_plan()[0] if b.table == table), None)
    for family, (name, field) in FAMILIES.items():
        if bucket is None or name != table:
            continue
        if field in _LISTS and field in bucket.lists:  # a template fills it too: the join would mix their items
            return None
        bucket = widen_bucket(bucket, family, *(((), (field,)) if field in _LISTS else ((field,), ())))
    return bucket


def _joined(old: list[Unframed], got: Read, whole: pl.DataFrame) -> list[Unframed] | None:
    """`old` (a bucket's RawRows, one per block) with `got`'s rows joined to those of its block, in
    record order; None: rows the join cannot place (the reference way takes the family)."""
    bucket = widened(FAMILIES[got.family][0])
    every = whole["rec"].to_numpy()
    pos = record_positions(every, got.rec)
    if bucket is None or any(bucket.list_ints) or not all(isinstance(r, RawRows) for r in old) or pos is None:
        return None
    field = FAMILIES[got.family][1]
    if got.counts is None:
        spans, lists = {field: got.spans}, {}
    else:
        spans, lists = {}, {field: (got.counts, got.spans.tobytes())}
    base = next((r for r in old if isinstance(r, RawRows) and r.data is got.data), None)
    if base is None:
        codes = whole["_code"].to_numpy().astype(np.int32)
        return [*old, join_rows(None, bucket, pos, spans, lists, got.data, every, codes)]
    return [join_rows(base, bucket, pos, spans, lists, got.data, base.rec, base.codes) if r is base else r
            for r in old]
