"""The per-phase scheduler inputs the log states: the job-cap and How Much counter inputs.

The job-cap phase's inputs (one row per job the RM logged a cap for) and the How Much counter's
inputs (one per logged RmCounter block). `replay.model.assembly` assembles whole cycles from them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import cast

import polars as pl

from rmref import UNLIMITED
from rmref.apportion import Entity

from replay.model.logorder import AT, log_order

# the cap chain's inputs the log gives per job (the class's settings come from the bootstrap)
CAP_INPUT_COLUMNS = ["remaining", "threads", "max_processes", "initialized", "projected", "item_time"]


def in_force(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """(job_id, at, max_in_force, remaining_in_force): every value a job's process limit and
    remaining work took, in log order (`at`: the cycle, file and line, AT).

    The job rows print both; the Orchestrator's updates change them between rows ("Max shares
    adjusted", jobUpdate's `rem:`), and a job that is not fair share is printed only once.
    """
    printed = tables["jobs"].filter(pl.col("source").is_in(["howMuchFairShare", "submit"]))
    events = tables["job_events"]
    updates = [
        (printed, "max_processes", "max_in_force"),
        (events.filter(pl.col("event") == "max_shares"), "max_processes", "max_in_force"),
        (printed, "remaining", "remaining_in_force"),
        (events.filter(pl.col("event").is_in(["update", "arrives"])), "remaining", "remaining_in_force"),
    ]
    frames = [frame.filter(pl.col("cycle").is_not_null() & pl.col(column).is_not_null())
              .select("job_id", AT, pl.col(column).alias(name)) for frame, column, name in updates]
    # one row per change; each column forward-filled so a row carries both values then in force
    return (pl.concat(frames, how="diagonal").sort("at")
            .with_columns(pl.col("max_in_force", "remaining_in_force").forward_fill().over("job_id")))


PREDATES_LOG = "predates_log"  # `source` of a description built for work the log never describes
# `source` of a job's first description copied back to the cycles it was published in before it:
# work the log begins with, first described after (a fair-share job's howMuchFairShare line comes
# in the first whole cycle); who it is does not change
DESCRIBED_LATER = "described_later"
_TYPE_CODES = {"Job": "J", "Service": "S", "Reservation": "R", "ManagedReservation": "M"}


def job_descriptions(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The `jobs` rows, and a description (source PREDATES_LOG) of each job the log never prints
    a submit or howMuchFairShare row for: work submitted before the log began that is not fair
    share, which the RM describes only on arrival. A DEBUG log describes it every cycle (its
    schedule sections); an INFO log gives its class and type in the cycle's counting lines, its
    user and order in its cap line, its memory in the schedule, but not its work items, threads
    and process limit (the Orchestrator's updates give the latest, see `cap_inputs`)."""
    jobs = tables["jobs"]
    described = jobs.filter(pl.col("source").is_in(["howMuchFairShare", "submit"])).select("job_id").unique()
    sections = (jobs.filter(pl.col("source") == "schedule").join(described, on="job_id", how="anti")
                .with_columns(pl.lit(PREDATES_LOG).alias("source")))
    # a managed reservation's schedule section says "Service", its counting line "M": the counting
    # line's type wins, whichever cycle of the log names the job first
    seen = pl.concat([
        tables["counts"].select("cycle", "job_id", "class", "type_code", pl.lit(None, pl.String).alias("user"),
                                pl.lit(None, pl.Int64).alias("order"), pl.lit(None, pl.Int64).alias("memory_gb"),
                                pl.lit(True).alias("from_counts")),
        tables["job_caps"].select("cycle", "job_id", pl.lit(None, pl.String).alias("class"),
                                  pl.lit(None, pl.String).alias("type_code"), "user", "order",
                                  pl.lit(None, pl.Int64).alias("memory_gb"), pl.lit(False).alias("from_counts")),
        tables["schedule"].select("cycle", "job_id", pl.lit(None, pl.String).alias("class"),
                                  pl.col("work_type").replace_strict(_TYPE_CODES, default=None).alias("type_code"),
                                  pl.lit(None, pl.String).alias("user"), pl.lit(None, pl.Int64).alias("order"),
                                  "memory_gb", pl.lit(False).alias("from_counts")),
    ]).filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
    undescribed = seen.join(described, on="job_id", how="anti").join(sections.select("job_id").unique(),
                                                                       on="job_id", how="anti")
    counted = pl.col("type_code").filter(pl.col("from_counts")).drop_nulls().first()
    made = (undescribed.sort("cycle", maintain_order=True).group_by("job_id", maintain_order=True).agg(
        pl.col("cycle").first(), pl.coalesce(counted, pl.col("type_code").drop_nulls().first()).alias("type_code"),
        *(pl.col(c).drop_nulls().first() for c in ("class", "user", "order", "memory_gb")))
            .with_columns(pl.lit(PREDATES_LOG).alias("source")))
    out = pl.concat([jobs, sections, made], how="diagonal_relaxed").select(jobs.columns)
    return pl.concat([out, _carried_back(out, seen)], how="diagonal_relaxed").select(jobs.columns)


def _carried_back(described: pl.DataFrame, seen: pl.DataFrame) -> pl.DataFrame:
    """Each job's first description, at the first cycle the log names the job in when that is earlier."""
    first_seen = seen.group_by("job_id").agg(pl.col("cycle").min().alias("seen"))
    first = (described.filter(pl.col("cycle").is_not_null() & pl.col("user").is_not_null())
             .sort(log_order("job_id", "cycle")).unique("job_id", keep="first", maintain_order=True))
    return (first.join(first_seen, on="job_id").filter(pl.col("seen") < pl.col("cycle"))
            .with_columns(pl.col("seen").cast(described.schema["cycle"]).alias("cycle"),
                          pl.lit(DESCRIBED_LATER).alias("source"))
            .drop("seen"))


def purged_hosts(tables: Mapping[str, pl.DataFrame]) -> dict[tuple[int, int], set[str]]:
    """(cycle, job) -> the hosts a dead or varied-off node's purge (NodePool.disable) took the
    job's shares from during the cycle. A purge line names the host, not the share."""
    purges = tables["nodes"].filter((pl.col("event") == "purge") & pl.col("cycle").is_not_null())
    out: dict[tuple[int, int], set[str]] = {}
    for cycle, job, host in purges.select("cycle", "job_id", "host").iter_rows():
        out.setdefault((cycle, job), set()).add(host)
    return out


def cap_inputs(tables: Mapping[str, pl.DataFrame], forced: pl.DataFrame | None = None) -> pl.DataFrame:
    """(cycle, job_id, CapInput fields) for every job the RM logged a cap for (`forced`: `in_force`,
    read here when the caller has not).

    The row describing the job is the `howMuchFairShare` one of the same cycle (the job's state
    when its cap was computed) or else the latest `submit`/`howMuchFairShare` row before it (work
    that is not fair share is described only when it arrives). What the row does not say:
    * reservations print 0 work items and threads: the RM counts one request of one thread;
    * the processes the cap counts (countNShares) are those the job holds less those being
      removed, which the caller knows from the schedule, and those a node purge took earlier in
      the same cycle (`purged_hosts`), which the schedule does not show yet;
    * prediction: `getPrjCap` "Cannot predict" means the job has no work-item time, and its
      init_wait is the Orchestrator's (before UIMA-4882, a job can be initialized and still not
      predicted; from it on, the line's init_wait already counts the missing item time);
    * the Orchestrator changes a job's process limit ("Max shares adjusted") and remaining work
      (jobUpdate) between rows, and a job that is not fair share is printed only when it
      arrives: the latest value logged is the one in force;
    * work that is not fair share and was submitted before the log began is never printed
      (`job_descriptions`): its remaining work is its logged base cap (the least of the two),
      its process limit its highest logged base cap, its threads one; once the Orchestrator
      updates its remaining work, its threads are the ones its logged base caps allow
      (`_threads_of_unprinted`).
    """
    caps = tables["job_caps"].filter(pl.col("cycle").is_not_null()).select(
        "cycle", "job_id", "expected_cap", "base_cap", "prj_kind", pl.col("init_wait").alias("prj_init_wait"), AT)
    rows = (
        job_descriptions(tables).filter(pl.col("source").is_in(["howMuchFairShare", "submit", PREDATES_LOG])
                                        & pl.col("cycle").is_not_null())
        .sort(pl.col("source") != "howMuchFairShare", maintain_order=True)
        .unique(["cycle", "job_id"], keep="first", maintain_order=True)
        .with_columns(pl.col("cycle").alias("described"))
        .drop("line")
        .sort("cycle")
    )
    reservation = pl.col("type_code") == "R"
    return (
        caps.sort("cycle")
        .join_asof(rows, on="cycle", by="job_id", strategy="backward", check_sortedness=False)
        .filter(pl.col("described").is_not_null())
        .join_asof(in_force(tables) if forced is None else forced, on="at", by="job_id", strategy="backward",
                   check_sortedness=False)
        .with_columns(_threads_of_unprinted().alias("threads"))
        .select(
            "cycle", "job_id",
            # work that predates the log has no row to give its work items, threads and process
            # limit: unless the Orchestrator updates them, its logged base cap stands in for both
            pl.when(reservation).then(1).otherwise(pl.coalesce(
                "remaining_in_force", "remaining", pl.when(pl.col("source") == PREDATES_LOG).then("base_cap"), 0))
            .alias("remaining"),
            pl.when(reservation).then(1).otherwise(pl.col("threads").fill_null(1)).alias("threads"),
            pl.coalesce("max_in_force", "max_processes", _highest_base())
            .fill_null(UNLIMITED).alias("max_processes"),
            # a stale row's init_wait is stale too; the cycle's own getPrjCap line still tells
            (((pl.col("prj_kind") == "predicted")
              & (~pl.col("init_wait").fill_null(False) | (pl.col("described") != pl.col("cycle"))))
             | ((pl.col("prj_kind") != "predicted") & (pl.col("prj_init_wait") == False)))  # noqa: E712
            .fill_null(False).alias("initialized"),
            pl.col("expected_cap").alias("projected"),
            (pl.col("prj_kind") == "predicted").alias("item_time"),
        )
        .sort("cycle", "job_id")
    )


def _threads_of_unprinted() -> pl.Expr:
    """The threads per process of work that predates the log, where the Orchestrator's updates
    give its remaining work: base cap = ceil(remaining / threads), so each logged base cap b of
    remaining r bounds them to r/b <= threads < r/(b-1); the least that every cycle allows (else
    each cycle's own least). Elsewhere the row's threads, or one (with the base cap standing in for
    the remaining work, one thread reproduces it)."""
    rem, base = pl.col("remaining_in_force"), pl.col("base_cap")
    told = (pl.col("source") == PREDATES_LOG) & rem.is_not_null() & (base > 0)
    # a base cap at the job's highest may be its process limit, not ceil(remaining / threads):
    # such a cycle only bounds the threads from above (the work alone would give at least that)
    lo = pl.when(told & (base < _highest_base())).then((rem + base - 1) // base)
    hi = pl.when(told & (base > 1)).then((rem + base - 2) // (base - 1) - 1)
    least, most = lo.max().over("job_id").fill_null(1), hi.min().over("job_id")
    every = pl.when(most.is_null() | (least <= most)).then(least)
    return pl.when(told).then(pl.coalesce(every, lo, 1)).otherwise(pl.col("threads"))


def _highest_base() -> pl.Expr:
    """The highest base cap logged for work that predates the log: the process limit it stands in
    for (a base cap is the least of that limit and the work's own need, so never above it)."""
    return pl.when(pl.col("source") == PREDATES_LOG).then(pl.col("base_cap")).max().over("job_id")


@dataclass(frozen=True)
class CounterBlock:
    """One logged RmCounter block: the How Much counter's complete input."""

    cycle: int
    block: int
    descr: str  # countClassShares / countUserShares / countJobShares
    entities: tuple[Entity, ...]
    vmachines: tuple[int, ...]
    given: dict[str, tuple[int, ...]] | None  # the RM's result, when the log is at DEBUG


def _as_tuple(values: object) -> tuple[int, ...]:
    """A list cell as a tuple (empty when null: a block cut by a gap in the stream)."""
    return () if values is None else tuple(cast(Iterable[int], values))


def counter_blocks(tables: Mapping[str, pl.DataFrame]) -> list[CounterBlock]:
    """Every RmCounter block of the log, entities in the RM's apportionment order.

    A job's share order is the order it wants processes of (its wanted vector has one non-zero
    order); users and classes have none.
    """
    blocks = []
    for (cycle, block), rows in tables["rmcounter"].group_by("cycle", "block", maintain_order=True):
        descr = rows["descr"][0]
        entities = tuple(
            Entity(name, weight, wanted,
                   order=next((o for o, n in enumerate(wanted) if o and n), 0) if descr == "countJobShares" else 0)
            for name, weight, wanted in ((n, w, _as_tuple(v)) for n, w, v in
                                         rows.select("entity", "weight", "wanted").iter_rows())
        )
        given = dict(rows.select("entity", "given").iter_rows()) if rows["given"].null_count() == 0 else None
        blocks.append(CounterBlock(cycle, block, descr, entities, _as_tuple(rows["vmachines"][0]),
                                   {k: tuple(v) for k, v in given.items()} if given else None))
    return blocks
