"""What the RM logged it decided, per cycle, in the shapes rmref's decisions take (the audit's other side).

Each decision kind becomes {cycle: {job: value}} so a comparison is a dictionary walk:
* caps: the `initJobCap` actual cap;
* counts: the How Much count (`whatOfFairShare ... shares given`, fixed and reservation grants;
  a deferral counts as 0);
* placements: sorted (host, order) of the shares the published schedule *added* to the job (a share
  placed for one job and handed to a needy job by defragmentation belongs to the latter);
* evictions: sorted (host, share_id) the cycle newly removed from the job (a removal stays listed
  until the Orchestrator confirms it, so only its first appearance is a decision);
* defrag: sorted (donor_job, host, share_id) of the shares taken for the needy job.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from rmref import job_order

PerJob = dict[int, dict[int, object]]


@dataclass(frozen=True)
class Logged:
    """The RM's logged decisions of a whole log, by kind, cycle and job."""

    caps: PerJob
    counts: PerJob
    placements: PerJob
    evictions: PerJob
    needy: dict[int, tuple[int, ...]]


def _nest(frame: pl.DataFrame, value: str) -> PerJob:
    out: PerJob = {}
    for cycle, job, v in frame.select("cycle", "job_id", value).iter_rows():
        out.setdefault(cycle, {})[job] = v
    return out


def logged_decisions(tables: dict[str, pl.DataFrame], quantum_gb: int) -> Logged:
    """Collect every logged decision of the parsed log."""
    caps = tables["job_caps"].filter(pl.col("cycle").is_not_null() & pl.col("actual_cap").is_not_null())
    caps = caps.unique(["cycle", "job_id"], keep="last", maintain_order=True)
    counts = (tables["counts"].filter(pl.col("cycle").is_not_null())
              .with_columns(pl.col("shares_given").fill_null(0))
              .unique(["cycle", "job_id"], keep="last", maintain_order=True))
    sched = tables["schedule"].filter(pl.col("host").is_not_null())
    added = (sched.filter(pl.col("kind") == "addition")
             .with_columns(pl.struct(pl.col("host"), pl.col("memory_gb").map_elements(
                 lambda m: job_order(m, quantum_gb), return_dtype=pl.Int64).alias("order")).alias("p"))
             .group_by("cycle", "job_id").agg(pl.col("p").sort_by("p")))
    removed = sched.filter(pl.col("kind") == "removal").select("cycle", "job_id", "host", "share_id")
    cycles = tables["cycles"]["cycle"].to_list()
    previous = dict(zip(cycles[1:], cycles[:-1]))
    earlier = removed.with_columns(pl.col("cycle").replace_strict(
        {v: k for k, v in previous.items()}, default=None)).drop_nulls("cycle")
    new_removals = removed.join(earlier, on=["cycle", "job_id", "host", "share_id"], how="anti")
    evicted = new_removals.with_columns(pl.struct("host", "share_id").alias("e")).group_by(
        "cycle", "job_id").agg(pl.col("e").sort_by("e"))
    needy = tables["defrag"].filter((pl.col("kind") == "needy") & pl.col("cycle").is_not_null())
    return Logged(
        caps=_nest(caps, "actual_cap"),
        counts=_nest(counts, "shares_given"),
        placements={c: {j: [(p["host"], p["order"]) for p in v] for j, v in jobs.items()}
                    for c, jobs in _nest(added, "p").items()},
        evictions={c: {j: [(e["host"], e["share_id"]) for e in v] for j, v in jobs.items()}
                   for c, jobs in _nest(evicted, "e").items()},
        needy={c: tuple(sorted(set(g["job_id"].to_list())))
               for (c,), g in needy.partition_by("cycle", as_dict=True).items()},
    )
