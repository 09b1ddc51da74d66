"""The investment order of a job's shares, which the RM's INFO log shows and no input settles, for the
harness's Orchestrator (`investment_orders`); the hash order of jobs is replay.javarm.hashes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl

from replay.apps.simulate.reconstruct import cycle_times
from replay.model.published import existing_order


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


def addition_orders(tables: Mapping[str, pl.DataFrame], shift_ms: int) -> dict[int, list[list[Any]]]:
    """job -> [harness ms, "host host ..."] per cycle that added processes to it: their hosts in the order
    of the log's share ids. Simulate's item fit (replay.apps.simulate.fit) numbers processes added at once
    in that order, and a process numbered lower takes the item first where two start at the same time:
    the harness's Orchestrator numbers them alike, not in the order of its own RM's share ids (the RM may
    number shares placed at once in another order)."""
    times = cycle_times(tables)
    cycles = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")["cycle"].to_list()
    at = {c: round(t * 1000) + shift_ms for c, t in zip(cycles, times, strict=True)}
    added = (tables["schedule"].filter((pl.col("kind") == "addition") & pl.col("host").is_not_null()
                                       & pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
             .unique(["job_id", "share_id"], keep="first", maintain_order=True)
             .sort("job_id", "cycle", "share_id"))
    hosts: dict[tuple[int, int], list[str]] = {}
    for job, cycle, host in added.select("job_id", "cycle", "host").iter_rows():
        hosts.setdefault((job, cycle), []).append(host)
    out: dict[int, list[list[Any]]] = {}
    for (job, cycle), names in sorted(hosts.items()):
        if len(names) > 1 and cycle in at:  # one process added: no order to keep
            out.setdefault(job, []).append([at[cycle], " ".join(names)])
    return out
