"""What the RM logged it decided, per cycle, in the shapes rmref's decisions take (the audit's other side).

Each decision kind becomes {cycle: {job: value}} so a comparison is a dictionary walk:
* caps: the `initJobCap` actual cap;
* counts: the How Much count (`whatOfFairShare ... shares given`, fixed and reservation grants;
  a deferral counts as 0);
* placements: sorted (host, order) of the shares What Of connected for the job (`connectShare`),
  before defragmentation may cancel one or hand it to a needy job (the schedule's Additions show
  the result of both phases);
* evictions: sorted (host, share_id) doEvictions took from the job: the `shrinkBy Removing share`
  and dead-host purge lines;
* defrag: sorted (host, share_id) the cycle newly removed from the job (a removal stays listed
  until the Orchestrator confirms it, so only its first appearance is a decision) that
  doEvictions did not take: INFO logs do not name defragmentation's victims, the published
  Removals show them.
"""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

PerJob = dict[int, dict[int, object]]
EVICTION_REASONS = ["shrink", "node_purge"]  # the `evictions` rows that name a share doEvictions took


@dataclass(frozen=True)
class Logged:
    """The RM's logged decisions of a whole log, by kind, cycle and job."""

    caps: PerJob
    counts: PerJob
    placements: PerJob
    evictions: PerJob
    defrag: PerJob  # donor job -> shares taken from it
    needy: dict[int, tuple[int, ...]]
    cleared: dict[int, tuple[str, ...]]  # hosts How Much cleared for a reservation (evictions' input)


def _nest(frame: pl.DataFrame, value: str) -> PerJob:
    out: PerJob = {}
    for cycle, job, v in frame.select("cycle", "job_id", value).iter_rows():
        out.setdefault(cycle, {})[job] = v
    return out


def logged_decisions(tables: dict[str, pl.DataFrame]) -> Logged:
    """Collect every logged decision of the parsed log."""
    caps = tables["job_caps"].filter(pl.col("cycle").is_not_null() & pl.col("actual_cap").is_not_null())
    caps = caps.unique(["cycle", "job_id"], keep="last", maintain_order=True)
    counts = (tables["counts"].filter(pl.col("cycle").is_not_null())
              .with_columns(pl.col("shares_given").fill_null(0))
              .unique(["cycle", "job_id"], keep="last", maintain_order=True))
    sched = tables["schedule"].filter(pl.col("host").is_not_null())
    added = (tables["placements"].filter(pl.col("cycle").is_not_null())
             .with_columns(pl.struct("host", "order").alias("p"))
             .group_by("cycle", "job_id").agg(pl.col("p").sort_by("p")))
    removed = sched.filter(pl.col("kind") == "removal").select("cycle", "job_id", "host", "share_id")
    cycles = tables["cycles"]["cycle"].to_list()
    previous = dict(zip(cycles[1:], cycles[:-1]))
    earlier = removed.with_columns(pl.col("cycle").replace_strict(
        {v: k for k, v in previous.items()}, default=None)).drop_nulls("cycle")
    new_removals = removed.join(earlier, on=["cycle", "job_id", "host", "share_id"], how="anti")
    shrunk = tables["evictions"].filter(pl.col("reason").is_in(EVICTION_REASONS) & pl.col("cycle").is_not_null())
    evicted = shrunk.with_columns(pl.struct("host", "share_id").alias("e")).group_by(
        "cycle", "job_id").agg(pl.col("e").sort_by("e"))
    defrag = new_removals.join(shrunk, on=["cycle", "job_id", "host", "share_id"], how="anti").with_columns(
        pl.struct("host", "share_id").alias("e")).group_by("cycle", "job_id").agg(pl.col("e").sort_by("e"))
    needy = tables["defrag"].filter((pl.col("kind") == "needy") & pl.col("cycle").is_not_null())
    cleared = tables["evictions"].filter((pl.col("reason") == "clear_for_reservation") & pl.col("cycle").is_not_null())
    return Logged(
        caps=_nest(caps, "actual_cap"),
        counts=_nest(counts, "shares_given"),
        placements={c: {j: [(p["host"], p["order"]) for p in v] for j, v in jobs.items()}
                    for c, jobs in _nest(added, "p").items()},
        evictions={c: {j: [(e["host"], e["share_id"]) for e in v] for j, v in jobs.items()}
                   for c, jobs in _nest(evicted, "e").items()},
        defrag={c: {j: [(e["host"], e["share_id"]) for e in v] for j, v in jobs.items()}
                for c, jobs in _nest(defrag, "e").items()},
        needy={c: tuple(sorted(set(g["job_id"].to_list())))
               for (c,), g in needy.partition_by("cycle", as_dict=True).items()},
        cleared={c: tuple(g["host"].to_list()) for (c,), g in cleared.partition_by("cycle", as_dict=True).items()},
    )
