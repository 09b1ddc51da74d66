"""The sequences of jobs an INFO log lists in the RM's hash order of their DuccIds (for the harness's
job UUIDs, replay.javarm.order).

The RM walks its jobs class by class, each class's in a HashMap keyed by job; How Much and What Of
sort fixed-share and reserve classes by submission (JobByTimeSorter), fair-share classes keep the
map's order. So a cycle's counting lines show the hash order only among the jobs of one fair-share
class: two jobs of two classes come in the order of their classes, and a fixed-share class's come
by submission. detectFragmentation lists every class's jobs in the map's order, and its maps keyed
by the jobs of every class show them across classes: each pool's `ACTUALLY NEEDY` lines and the
takeFromTheRich lines (`replay.model.logged.defrag_job_order`). Each sequence here is one listing.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.logged import defrag_job_order


def hash_sequences(tables: Mapping[str, pl.DataFrame]) -> list[tuple[int, list[int]]]:
    """(cycle, jobs in the RM's hash order) for every listing the log shows, in cycle order: per
    fair-share class its counting lines, and defragmentation's listings (per class, per pool's needy
    jobs, the takings)."""
    counted = (tables["counts"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null()
                                       & (pl.col("policy") == "FAIR_SHARE") & pl.col("class").is_not_null())
               .sort("file", "line").unique(["cycle", "class", "job_id"], keep="first", maintain_order=True))
    out: list[tuple[int, list[int]]] = []
    for (cycle, _cls), rows in counted.group_by("cycle", "class", maintain_order=True):
        if rows.height > 1:
            out.append((int(cycle), rows["job_id"].to_list()))
    for cycle, (_merged, shown) in defrag_job_order(tables["defrag"]).items():
        out += [(cycle, list(seq)) for seq in shown.sequences if len(seq) > 1]
    return sorted(out, key=lambda x: x[0])


def as_orders(sequences: list[tuple[int, list[int]]]) -> dict[int, dict[int, int]]:
    """The sequences as `replay.javarm.order.buckets_of` reads orders: one key per sequence, increasing
    with its cycle (a job's first key stands for when it came), job -> place."""
    return {k: {job: i for i, job in enumerate(seq)} for k, (_cycle, seq) in enumerate(sequences)}
