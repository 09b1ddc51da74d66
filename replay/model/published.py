"""What each cycle's published schedule says: the shares each job held (`Existing`), those added
and removed, the work published and its place in the RM's job table, and the orders the
closed-loop simulation (replay.apps.simulate) rebuilds one piece at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from replay.model.bycycle import ByCycle
from replay.model.inputs import in_force, job_descriptions
from replay.model.logorder import AT, cycle_end, log_order, log_position
from replay.parsing.tables import LEFT


def published_schedule(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The published schedule, each job's memory filled from its own rows where the schedule does
    not print it (2.0.x: `Job 7` where later releases print `Job 7 4GB`)."""
    schedule = tables["schedule"]
    if not schedule["memory_gb"].null_count() or "memory_gb" not in tables["jobs"].columns:
        return schedule
    memory = tables["jobs"].filter(pl.col("memory_gb").is_not_null()).group_by("job_id").agg(
        pl.col("memory_gb").first().cast(schedule.schema["memory_gb"]).alias("_mem"))
    return schedule.join(memory, on="job_id", how="left", maintain_order="left").with_columns(
        pl.coalesce("memory_gb", "_mem").alias("memory_gb")).drop("_mem")


def work_rows(tables: Mapping[str, pl.DataFrame], forced: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per (cycle, job) published: the job's latest description at or before the cycle,
    its remaining work and process limit the latest logged by the cycle's end (the Orchestrator's
    updates change them between descriptions: an INFO log describes work that is not fair share
    only when it arrives, so a job completing later would keep its arrival's work otherwise).

    Rows come in the RM's job-table order, which decides ties in What Of: the table is keyed by
    random ids, so the order cannot be computed, but the cycle's "Scheduling job" lines (`counts`)
    are written in it. Jobs without such a line follow, by id. `forced`: `in_force`, read here when
    the caller has not.
    """
    # work refused on arrival (an unknown class, an unauthorized user) is published as refused
    # and never joins the scheduler's jobs
    published = published_schedule(tables).filter(~pl.col("refused").fill_null(False)).group_by(
        "cycle", "job_id", maintain_order=True).agg(pl.col("work_type").first(), pl.col("memory_gb").first())
    described = (
        job_descriptions(tables).filter(pl.col("cycle").is_not_null())
        .sort(log_order("job_id", "cycle"))
        .unique(["job_id", "cycle"], keep="last", maintain_order=True)
        .select("job_id", "cycle", "type_code", "user", "class", "order", "threads", "remaining",
                "init_wait", "max_processes", "shares", pl.col("memory_gb").alias("declared_gb"),
                AT.alias("described_at"))
        .sort("cycle")
    )
    table_order = tables["counts"].filter(pl.col("cycle").is_not_null()).group_by("cycle", "job_id").agg(
        log_position().min().alias("table_at"))
    # an update logged after the description in force (a description the log never printed has no line)
    updated = pl.col("_forced_at") > pl.col("described_at").fill_null(-1)
    return (
        published.sort("cycle")
        .join_asof(described, on="cycle", by="job_id", strategy="backward", check_sortedness=False)
        .with_columns(cycle_end()).sort("at")
        .join_asof((in_force(tables) if forced is None else forced).rename({"at": "_forced_at"}).with_columns(
                   pl.col("_forced_at").alias("at")), on="at", by="job_id", strategy="backward", check_sortedness=False)
        .with_columns(
            pl.when(updated).then(pl.coalesce("remaining_in_force", "remaining")).otherwise("remaining")
            .alias("remaining"),
            pl.when(updated).then(pl.coalesce("max_in_force", "max_processes")).otherwise("max_processes")
            .alias("max_processes"))
        .drop("at", "_forced_at", "described_at", "remaining_in_force", "max_in_force")
        .join(table_order, on=["cycle", "job_id"], **LEFT)
        .sort("cycle", pl.col("table_at").is_null(), "table_at", "job_id")
    )


class PublishedShares:
    """Per cycle, from the published schedule: the Existing shares in printed order (job, host,
    share id, memory, init ms), and the (job, share id) sets of Additions and Removals."""

    def __init__(self, schedule: pl.DataFrame):
        self._rows = ByCycle(schedule.filter(pl.col("host").is_not_null()).select(
            "cycle", "kind", "job_id", "host", "share_id", "memory_gb", "init_ms"))
        self._purged: dict[int, set[tuple[int, int]]] = {}  # few rows: read once, not per cycle
        for cycle, job, sid in schedule.filter((pl.col("kind") == "existing") & pl.col("purged").fill_null(False)
                                               & pl.col("host").is_not_null()).select(
                "cycle", "job_id", "share_id").iter_rows():
            self._purged.setdefault(cycle, set()).add((job, sid))

    def shares(self, cycle: int) -> tuple[list[tuple[Any, ...]], set[tuple[int, int]], set[tuple[int, int]]]:
        """(existing, added, removed) of one cycle."""
        existing: list[tuple[Any, ...]] = []
        added: set[tuple[int, int]] = set()
        removed: set[tuple[int, int]] = set()
        rows = self._rows.get(cycle)
        for _, kind, job, host, sid, mem, init_ms in rows.iter_rows() if rows is not None else ():
            if kind == "existing":
                existing.append((job, host, sid, mem, init_ms))
            elif kind == "addition":
                added.add((job, sid))
            elif kind == "removal":
                removed.add((job, sid))
        return existing, added, removed

    def first_listed(self, cycles: Iterable[int]) -> int | None:
        """The first of `cycles` whose published schedule lists a share held: where the log (or
        its part after a gap) starts in a cycle whose schedule is unread, the processes there
        before it are those the next schedule lists (a log that starts with no work lists none
        before its first additions, and those are no process held)."""
        return next((c for c in cycles if self.shares(c)[0]), None)

    def purged(self, cycle: int) -> set[tuple[int, int]]:
        """(job, share id) of the cycle's Existing shares the schedule marks purged (^P)."""
        return self._purged.get(cycle, set())




# -- for the closed-loop simulation (replay.apps.simulate): the same rebuild, one piece at a time --

def job_table_order(tables: Mapping[str, pl.DataFrame]) -> dict[int, dict[int, int]]:
    """Per cycle, each published job's place in the RM's job table (the order cycle_inputs lists work in)."""
    out: dict[int, dict[int, int]] = {}
    for cycle, job in work_rows(tables).select("cycle", "job_id").iter_rows():
        ranks = out.setdefault(cycle, {})
        ranks.setdefault(job, len(ranks))
    return out


def purge_marks(tables: Mapping[str, pl.DataFrame]) -> dict[int, frozenset[tuple[int, int]]]:
    """Per cycle, the (job, share id) of the Existing shares its schedule marks purged (^P): which
    processes a 2.0.x disable's walk took before it stopped at a reservation's (a HashMap order)."""
    out: dict[int, set[tuple[int, int]]] = {}
    marked = tables["schedule"].filter((pl.col("kind") == "existing") & pl.col("purged").fill_null(False)
                                       & pl.col("host").is_not_null())
    for cycle, job, sid in marked.select("cycle", "job_id", "share_id").iter_rows():
        out.setdefault(cycle, set()).add((job, sid))
    return {c: frozenset(v) for c, v in out.items()}


def existing_order(tables: Mapping[str, pl.DataFrame]) -> dict[int, dict[int, dict[tuple[str, int], int]]]:
    """Per cycle and job, the place of each share (host, share id) it held when the cycle began in
    the job's published Existing list (the RM's investment order, which cycle_inputs reads as investment)."""
    published = PublishedShares(published_schedule(tables))
    out: dict[int, dict[int, dict[tuple[str, int], int]]] = {}
    for cycle in tables["cycles"]["cycle"].to_list():
        rows, new, _ = published.shares(cycle)
        if not rows:
            continue
        per: dict[int, dict[tuple[str, int], int]] = {}
        printed: dict[int, int] = {}
        for job, host, sid, _mem, _init in rows:
            printed[job] = printed.get(job, -1) + 1
            if (job, sid) not in new:
                per.setdefault(job, {})[(host, sid)] = printed[job]
        out[cycle] = per
    return out

