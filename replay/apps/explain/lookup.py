"""Which job, which cycle: the published cycles of a job, the cycle to detail and its rows."""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.apps.explain.text import id_ranges
from replay.parsing.sources import InputError


def published_rows(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The published schedule's rows that name a cycle and a job."""
    return tables["schedule"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())


def job_cycles(tables: Mapping[str, pl.DataFrame], job_id: int) -> list[int]:
    """Cycles whose published schedule lists the job; InputError when it is not in the log."""
    published = published_rows(tables)
    cycles = sorted(set(published.filter(pl.col("job_id") == job_id)["cycle"].to_list()))
    if not cycles:
        known = published["job_id"].unique().to_list()
        have = f"its jobs are {id_ranges(known)}" if known else "it publishes no job at all"
        raise InputError(f"job {job_id} is not in the log: {have}")
    return cycles


def pick_cycle(tables: Mapping[str, pl.DataFrame], job_id: int, cycles: list[int], cycle: int | None) -> int:
    """The cycle to detail: the one asked for, else the job's last; InputError when out of range."""
    if cycle is None:
        return cycles[-1]
    logged = tables["cycles"]["cycle"].to_list()
    if cycle not in logged:
        span = f"{min(logged)}-{max(logged)}" if logged else "none"
        raise InputError(f"cycle {cycle} is out of range: the log has cycles {span}")
    if cycle not in cycles:
        raise InputError(f"job {job_id} is not in cycle {cycle}: it is published in cycles {id_ranges(cycles)}")
    return cycle


def cycle_rows(tables: Mapping[str, pl.DataFrame], name: str, cycle: int, job_id: int) -> pl.DataFrame:
    """The rows of table `name` for one job in one cycle."""
    frame = tables[name]
    return frame.filter((pl.col("cycle") == cycle) & (pl.col("job_id") == job_id))


def chosen_cycle(tables: Mapping[str, pl.DataFrame], job_id: int, cycle: int | None) -> int:
    """The cycle `explain` details for the job (`cycle`, else its last); InputError when the job
    is not in the log or not in that cycle."""
    return pick_cycle(tables, job_id, job_cycles(tables, job_id), cycle)
