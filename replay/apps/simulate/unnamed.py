"""The class of work whose class no line the job table reads names (a simulation needs every work's).

Work there before a mid-stream log began that is not fair share is described only on arrival;
where the RM deferred it through the whole log (or held it without a counting line that names
the class) nothing the job table reads names its class. The simulation must still schedule it,
so the class is read, or narrowed down, from other lines the RM writes about the job:

* named: detectFragmentation's table lists the job under its class's header; a deferral for
  want of hosts of the right size names the class (`... in class rsvb`);
* else narrowed: its counting lines give its policy (RESERVE, FIXED_SHARE) and doEvictions the
  nodepool it is scheduled in: the classes of the configuration with that policy and pool. One
  left is the class; several are alike but for the name (taken as the first, which schedules the
  same), or not (taken as the first in the configuration's order, and the note says the choice
  is open).

Work none of this settles keeps no class, and the simulation refuses it naming the job.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

import polars as pl

from replay.model.logorder import log_order
from rmref.model import ClassDef

DEFER_IN_CLASS = r"in class (\S+)$"  # RmJob.defer's "no hosts of the correct size in class X"
UNNAMED = "no line of the job table names its class"  # how each of the workload's notes on it begins


def unnamed_classes(tables: Mapping[str, pl.DataFrame], classes: tuple[ClassDef, ...],
                    jobs: Iterable[int]) -> dict[int, tuple[str, str]]:
    """job -> (class, what the workload's note says of it) for each of `jobs` (those no line the job
    table reads names the class of) that other lines name or narrow down (see the module docstring)."""
    wanted = sorted(set(jobs))
    if not wanted:
        return {}
    defrag = (tables["defrag"].filter(pl.col("job_id").is_in(wanted) & pl.col("class").is_not_null())
              .sort(log_order()).group_by("job_id", maintain_order=True).agg(pl.col("class").first()))
    named = {j: (c, f"{UNNAMED}: {c}, as detectFragmentation's table lists it") for j, c in defrag.iter_rows()}
    counts = tables["counts"].filter(pl.col("job_id").is_in(wanted)).sort(log_order())
    deferred = (counts.filter(pl.col("reason").is_not_null())
                .select("job_id", pl.col("reason").str.extract(DEFER_IN_CLASS).alias("class"))
                .drop_nulls().group_by("job_id", maintain_order=True).agg(pl.col("class").first()))
    for j, c in deferred.iter_rows():
        named.setdefault(j, (c, f"{UNNAMED}: {c}, as its deferral names it"))
    policy = dict(counts.filter(pl.col("policy").is_not_null()).group_by("job_id", maintain_order=True)
                  .agg(pl.col("policy").first()).iter_rows())
    pools = dict(tables["eviction_counts"].filter(pl.col("job_id").is_in(wanted) & pl.col("nodepool").is_not_null())
                 .sort(log_order()).group_by("job_id", maintain_order=True).agg(pl.col("nodepool").first()).iter_rows())
    out = {}
    for job in wanted:
        if job in named:
            out[job] = named[job]
        elif job in policy:
            taken = _narrowed(classes, policy[job], pools.get(job))
            if taken is not None:
                out[job] = taken
    return out


def _narrowed(classes: tuple[ClassDef, ...], policy: str, pool: str | None) -> tuple[str, str] | None:
    """(class, note) among the configuration's classes of `policy` (in `pool`, when known), or None."""
    fit = [c for c in classes if c.policy == policy and (pool is None or c.nodepool == pool)]
    if not fit:
        return None
    where = "" if pool is None else f" of nodepool {pool}"
    why = f"(its counting lines show {policy}{'' if pool is None else ', doEvictions the nodepool'})"
    first = fit[0]
    if len(fit) == 1:
        return first.name, f"{UNNAMED}: {first.name} assumed, the configuration's only {policy} class{where} {why}"
    names = ", ".join(c.name for c in fit)
    alike = all(dataclasses.replace(c, name=first.name) == first for c in fit)
    return first.name, (f"{UNNAMED}: {first.name} assumed of the configuration's {policy} classes{where}, "
                        f"{names} {why}: " + ("they are alike but for the name" if alike else
                           "they schedule differently and no line tells which it is"))
