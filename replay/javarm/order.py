"""Orders the RM's INFO log shows and no input settles, for the harness: the RM's hash order of jobs
(for the harness's DuccIds), and its investment order of a job's shares (for the Orchestrator's
investments, `investment_orders`).

The RM keeps its jobs in hash maps keyed by DuccId, whose hash is its UUID's: wherever it walks
them (its job table, a class's jobs, the users those jobs bring, the needy), equal candidates are
taken in that order. An INFO log shows no UUID, but it shows the order: each cycle lists the jobs
of its job table in turn (`replay.model.published.job_table_order`). The harness can give each job
a UUID whose hash puts it in a chosen bucket of every map of 16 buckets or more (`hash_bucket`):
the maps walk buckets in order, and within one bucket the job that came first.

Buckets are the least that keep every pair of jobs a cycle lists in its order (a longest path
through the orders): distinct where 16 buckets suffice, else shared by jobs that came in the order
the log lists them. Where no such buckets exist (orders that contradict each other: a map that grew
past 16 buckets), none is imposed.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from typing import Any

import polars as pl

from replay.apps.simulate.reconstruct import cycle_times
from replay.javarm.hash_orders import as_orders, hash_sequences
from replay.model.published import existing_order

BUCKETS = 16  # a HashMap's initial table: every map holds at least this many buckets


def hash_buckets(tables: Mapping[str, pl.DataFrame]) -> tuple[dict[int, int], int]:
    """(job -> bucket in 0..15 consistent with the log's hash orders of jobs, jobs left without one)."""
    return buckets_of(as_orders(hash_sequences(tables)))


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


def investment_orders(tables: Mapping[str, pl.DataFrame], shift_ms: int) -> dict[int, list[list[Any]]]:
    """job -> [harness ms, "host#k ..."] where the order of the shares the job held when a cycle began,
    as its published Existing list shows it (the RM's investment order), changes ("" where it lists none).
    A share is named by its host and its place among the job's shares there (by share id): a run whose
    RM numbered its shares in another order (jobs placed in another order) still names the same ones.

    The order is what the Orchestrator's per-item timing made it, which no input settles to the
    millisecond; simulate's loop reads it as the shares' investment where the simulated job holds exactly
    those shares, and the harness's Orchestrator does the same (replay.apps.simulate.rm.shares)."""
    ranks = existing_order(tables)
    times = cycle_times(tables)
    cycles = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")["cycle"].to_list()
    out: dict[int, list[list[Any]]] = {}
    last: dict[int, str] = {}
    for cycle, t in zip(cycles, times, strict=True):
        per = ranks.get(cycle, {})
        for job in sorted(set(per) | set(last)):
            order = " ".join(_named(per.get(job, {})))
            if last.get(job, "") != order:
                out.setdefault(job, []).append([round(t * 1000) + shift_ms, order])
                last[job] = order
    return out


def _named(ranks: Mapping[tuple[str, int], int]) -> list[str]:
    """The shares (host, share id) -> place, in their order, each as `host#k` (k: its place among the
    shares on its host, by id)."""
    place = {key: k for host in {h for h, _ in ranks}
             for k, key in enumerate(sorted(key for key in ranks if key[0] == host))}
    return [f"{key[0]}#{place[key]}" for key in sorted(ranks, key=lambda x: ranks[x])]
