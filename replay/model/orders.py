"""Each job's share order (quanta per process), and where it comes from: what every view reads.

The RM computes a job's order on its arrival (Scheduler.calcShareOrder): its memory over the share
quantum of its class's nodepool tree, rounded up. The log prints it for most jobs (submit lines,
cap lines, counting lines); for a job it never prints it for (work there before a mid-stream log
began, not fair share), the order is computed the RM's way from the job's class where the
configuration defines that class. Where it does not, the only quantum known is the global one: the
order so read is an assumption, and is marked so (ORDER_ASSUMED), for a pool of its own quantum
gives another.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.inputs import job_descriptions
from replay.model.reads import narrow
from replay.parsing.tables import LEFT
from rmref import job_order
from rmref.trees import class_quantum

# where a job's order comes from (`work_orders`' order_from)
ORDER_LOGGED = "log"  # the RM printed it
ORDER_CLASS = "class"  # its memory over its class's pool-tree quantum, as the RM computes it
ORDER_ASSUMED = "assumed"  # its memory over the global quantum: its class's pool is not known
ORDER_SCHEMA = pl.Schema({"job_id": pl.Int64, "order": pl.Int64, "order_from": pl.String})


def job_orders(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Each job's share order as the RM printed it (job rows, cap and counting lines): the quanta
    of one of its processes in its own pool's quantum, which an assumed quantum may not give."""
    stated = pl.concat([narrow(tables, name, ("job_id", "order")) for name in ("jobs", "job_caps", "counts")])
    return stated.drop_nulls().unique("job_id", keep="first", maintain_order=True)


def work_orders(tables: Mapping[str, pl.DataFrame], quantum: int | None, boot: Bootstrap | None = None) -> pl.DataFrame:
    """(job_id, order, order_from) of every job the log names: as printed (ORDER_LOGGED), else from
    its class (ORDER_CLASS: `boot` defines the class), else its memory over the global `quantum`
    (ORDER_ASSUMED); no row where neither its memory nor a quantum is known (the order is unknown)."""
    printed = job_orders(tables).select("job_id", "order", pl.lit(ORDER_LOGGED).alias("order_from"))
    described = job_descriptions(tables)
    memory = pl.concat([
        described.select("job_id", "memory_gb"),
        narrow(tables, "schedule", ("job_id", "memory_gb")),
    ]).drop_nulls().unique("job_id", keep="first", maintain_order=True)
    classes = described.select("job_id", "class").drop_nulls().unique("job_id", keep="first", maintain_order=True)
    rest = memory.join(printed.select("job_id"), on="job_id", how="anti").join(classes, on="job_id", **LEFT)
    defined = {c.name for c in boot.classes} if boot else set()
    rows = []
    for job, mem, cls in rest.select("job_id", "memory_gb", "class").iter_rows():
        if boot is not None and cls in defined:
            rows.append((job, job_order(mem, class_quantum(boot.classes, boot.nodepools, cls, boot.config.quantum_gb)),
                         ORDER_CLASS))
        elif quantum:
            rows.append((job, job_order(mem, quantum), ORDER_ASSUMED))
    computed = pl.DataFrame(rows, schema=ORDER_SCHEMA, orient="row")
    return pl.concat([printed.cast(ORDER_SCHEMA), computed]).sort("job_id")


def with_quanta(rows: pl.DataFrame, tables: Mapping[str, pl.DataFrame], quantum: int,
                boot: Bootstrap | None = None) -> pl.DataFrame:
    """`rows` (job_id, memory_gb: the schedule's, one per process) with `quanta`, each process's:
    its job's order (`work_orders`), else its memory over `quantum`, rounded up (rmref.job_order)."""
    orders = work_orders(tables, quantum, boot).select("job_id", pl.col("order").alias("_order"))
    return rows.join(orders, on="job_id", **LEFT).with_columns(
        pl.coalesce("_order", -(-pl.col("memory_gb").fill_null(0) // quantum)).alias("quanta")).drop("_order")
