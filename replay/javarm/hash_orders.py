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
from replay.model.published import PublishedShares, published_schedule


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


def share_sequences(tables: Mapping[str, pl.DataFrame]) -> list[tuple[int, list[int]]]:
    """(cycle, share ids in the RM's hash order) where a job's published Existing list shows it: the
    list is sorted by investment (RmJob.ShareByInvestmentSorter, stable) from the job's HashMap of
    shares, so shares that tie in it (uninitialized with the same initialization time: here `^0`,
    and no process the log shows Running before the cycle) keep the hash order of their DuccIds,
    which the RM draws at random."""
    procs = tables["processes"].filter((pl.col("state_to") == "Running") & pl.col("share_id").is_not_null()
                                       & pl.col("cycle").is_not_null())
    running = dict(procs.group_by("share_id").agg(pl.col("cycle").min()).iter_rows())
    published = PublishedShares(published_schedule(tables))
    out: list[tuple[int, list[int]]] = []
    for cycle in tables["cycles"].filter(pl.col("cycle").is_not_null())["cycle"].to_list():
        runs: dict[int, list[list[int]]] = {}
        last: dict[int, bool] = {}
        for job, _host, sid, _mem, init_ms in published.shares(cycle)[0]:
            tied = init_ms == 0 and sid is not None and running.get(sid, cycle) >= cycle
            if tied and last.get(job):
                runs[job][-1].append(sid)
            elif tied:
                runs.setdefault(job, []).append([sid])
            last[job] = tied
        out += [(cycle, run) for job_runs in runs.values() for run in job_runs if len(run) > 1]
    return out
