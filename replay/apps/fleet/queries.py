"""Questions about a whole fleet, answered over its dataset (polars, lazily).

The fleet report shows these; docs/commands.md gives the same questions in DuckDB SQL and in polars
(tests/integration/test_fleet_report.py holds those queries to these answers).
* preemptions per cluster per day: `shrinkBy` evictions (processes taken to rebalance fair
  shares), by the day of the line;
* wait per class: from a job's arrival (`jobArrives`) to the first schedule that adds a process
  for it (jobs never given one are left out), p50 and p95 in seconds, across the fleet;
* disagreement per cluster: cycles where rmref and the RM differ and divergent decisions (for
  streams parsed with `--audit`);
* node deaths and defragmentation per cluster: deaths, and cycles where defragmentation found
  jobs needy.
"""

from __future__ import annotations

from pathlib import Path

import polars as pl

from replay.apps.fleet.dataset import read_manifest, scan_table

STREAM = ("cluster", "stream")


def preemptions_per_day(dataset: str | Path) -> pl.DataFrame:
    """(cluster, day, preemptions), by cluster and day."""
    return (scan_table(dataset, "evictions").filter(pl.col("reason") == "shrink")
            .group_by("cluster", pl.col("ts").dt.date().alias("day")).agg(pl.len().alias("preemptions"))
            .sort("cluster", "day").collect())


def wait_per_class(dataset: str | Path) -> pl.DataFrame:
    """(class, jobs, p50_s, p95_s): seconds from arrival to the first process, by class."""
    arrive = (scan_table(dataset, "job_events").filter(pl.col("event") == "arrives")
              .group_by(*STREAM, "job_id").agg(pl.col("ts").min().alias("t0")))
    first = (scan_table(dataset, "schedule").filter(pl.col("kind") == "addition")
             .group_by(*STREAM, "job_id").agg(pl.col("ts").min().alias("t1")))
    cls = (scan_table(dataset, "jobs").filter(pl.col("class").is_not_null())
           .group_by(*STREAM, "job_id").agg(pl.col("class").min()))
    wait = ((pl.col("t1") - pl.col("t0")).dt.total_milliseconds() / 1000).alias("wait_s")
    return (arrive.join(first, on=[*STREAM, "job_id"]).join(cls, on=[*STREAM, "job_id"])
            .select("class", wait).group_by("class")
            .agg(pl.len().alias("jobs"), pl.col("wait_s").quantile(0.5, "linear").alias("p50_s"),
                 pl.col("wait_s").quantile(0.95, "linear").alias("p95_s"))
            .sort("class").collect())


def disagreement(dataset: str | Path) -> pl.DataFrame:
    """(cluster, audited_cycles, cycles_diverging, divergences), clusters with most first."""
    diverging = (pl.col("audit_cycles") - pl.col("cycles_agree")).sum().alias("cycles_diverging")
    audited = (read_manifest(Path(dataset)).filter(pl.col("audited"))
               .group_by("cluster").agg(pl.col("audit_cycles").sum().alias("audited_cycles"), diverging,
                                        pl.col("divergences").sum()))
    return audited.sort("cycles_diverging", "cluster", descending=[True, False])


def deaths_and_defrag(dataset: str | Path) -> pl.DataFrame:
    """(cluster, node_deaths, needy_cycles): node deaths, and cycles where defragmentation found
    jobs needy."""
    deaths = (scan_table(dataset, "nodes").filter(pl.col("event") == "death")
              .group_by("cluster").agg(pl.len().alias("node_deaths")))
    needy = (scan_table(dataset, "defrag").filter((pl.col("kind") == "needy") & pl.col("cycle").is_not_null())
             .select(*STREAM, "cycle").unique().group_by("cluster").agg(pl.len().alias("needy_cycles")))
    clusters = read_manifest(Path(dataset)).select("cluster").unique().lazy()
    return (clusters.join(deaths, on="cluster", how="left").join(needy, on="cluster", how="left")
            .with_columns(pl.col("node_deaths", "needy_cycles").fill_null(0).cast(pl.Int64))
            .sort("cluster").collect())
