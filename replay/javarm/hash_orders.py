"""The RM's hash order of a job's shares as an INFO log shows it, for the harness's share UUIDs
(`share_buckets`; jobs' hashes are `replay.javarm.hashes`).

A job's published Existing list is sorted by investment, stably, from the job's HashMap of shares:
shares that tie in it keep the hash order of their DuccIds, which the RM draws at random. The
harness gives each such share a UUID whose hash puts it in a chosen bucket of every map of 16
buckets or more: the least buckets that keep every pair a list shows in its order (a longest path
through the orders), distinct where 16 suffice, else shared by shares that came in the order
listed; none where the orders contradict each other.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping

import polars as pl

from replay.model.published import PublishedShares, published_schedule

BUCKETS = 16  # a HashMap's initial table: every map holds at least this many buckets


def as_orders(sequences: list[tuple[int, list[int]]]) -> dict[int, dict[int, int]]:
    """The sequences as `buckets_of` reads orders: one key per sequence, increasing
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


def buckets_of(orders: Mapping[int, Mapping[int, int]]) -> tuple[dict[int, int], int]:
    """(job -> bucket, jobs left without one) for the orders (cycle -> job -> place in the table)."""
    after: dict[int, set[int]] = {}  # job -> the jobs some cycle lists after it
    arrival: dict[int, int] = {}
    for cycle in sorted(orders):
        ranks = orders[cycle]
        listed = sorted(ranks, key=lambda j: ranks[j])
        for i, a in enumerate(listed):
            arrival.setdefault(a, cycle)
            after.setdefault(a, set()).update(listed[i + 1:])
    for strict in (True, False):
        buckets = _longest_paths(after, arrival, strict)
        if buckets is not None and max(buckets.values(), default=0) < BUCKETS:
            break
    if buckets is None:  # the log's orders contradict each other (a map that grew): none is imposed
        return {}, len(arrival)
    over = sum(b >= BUCKETS for b in buckets.values())
    return {j: min(b, BUCKETS - 1) for j, b in buckets.items()}, over


def _longest_paths(after: Mapping[int, set[int]], arrival: Mapping[int, int], strict: bool) -> dict[int, int] | None:
    """The least buckets that keep every listed pair in order: a job listed after another takes a higher
    bucket, or (`strict` False) the same one where it came later (a bucket keeps its first arrival first);
    None where the orders form a cycle."""
    indegree = {j: 0 for j in arrival}
    for a, later in after.items():
        for b in later:
            indegree[b] += 1
    ready = sorted((arrival[j], j) for j, n in indegree.items() if n == 0)  # a heap: earliest arrival first
    buckets = {j: 0 for j in arrival}
    done = 0
    while ready:
        _, a = heapq.heappop(ready)
        done += 1
        for b in sorted(after.get(a, ())):
            step = 1 if strict or arrival[b] < arrival[a] or (arrival[b] == arrival[a] and b < a) else 0
            buckets[b] = max(buckets[b], buckets[a] + step)
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (arrival[b], b))
    return buckets if done == len(arrival) else None
