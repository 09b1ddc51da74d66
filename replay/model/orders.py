"""Each job's share order (quanta per process), and where it comes from: what every view reads.

The RM computes a job's order on its arrival (Scheduler.calcShareOrder): its memory over the share
quantum of its class's nodepool tree, rounded up. The log prints it for most jobs (submit lines,
cap lines, counting lines); for a job it never prints it for (work there before a mid-stream log
began, not fair share), the order is computed the RM's way from the job's class where the
configuration defines that class. Where it does not, the pool its processes run in gives the
quantum (ORDER_POOL: the RM places a job's processes in its class's pool tree only): the pool whose
node file lists their hosts, and a host no node file lists is the first top-level pool's, where
the RM puts it (`pools.PoolOf`). Else the only quantum known is the global one: the order so read
is an assumption, and is marked so (ORDER_ASSUMED), for a pool of its own quantum gives another.
`orders_assumed` names the jobs of both, as every command lists what it assumed.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.inputs import job_descriptions
from replay.model.pools import pool_of
from replay.model.reads import narrow
from replay.model.settings import INFERRED, Assumption
from replay.parsing.tables import LEFT
from rmref import job_order
from rmref.trees import class_quantum, tree_quantum

# where a job's order comes from (`work_orders`' order_from)
ORDER_LOGGED = "log"  # the RM printed it
ORDER_CLASS = "class"  # its memory over its class's pool-tree quantum, as the RM computes it
ORDER_POOL = "pool"  # its memory over the quantum of the pool tree its processes run in: its class is not known
ORDER_ASSUMED = "assumed"  # its memory over the global quantum: its class's pool is not known
ORDER_SCHEMA = pl.Schema({"job_id": pl.Int64, "order": pl.Int64, "order_from": pl.String})


def job_orders(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Each job's share order as the RM printed it (job rows, cap and counting lines): the quanta
    of one of its processes in its own pool's quantum, which an assumed quantum may not give."""
    stated = pl.concat([narrow(tables, name, ("job_id", "order")) for name in ("jobs", "job_caps", "counts")])
    return stated.drop_nulls().unique("job_id", keep="first", maintain_order=True)


def work_orders(tables: Mapping[str, pl.DataFrame], quantum: int | None, boot: Bootstrap | None = None) -> pl.DataFrame:
    """(job_id, order, order_from) of every job the log names: as printed (ORDER_LOGGED), else from
    its class (ORDER_CLASS: `boot` defines the class), else from the pool its processes run in
    (ORDER_POOL, `host_quanta`), else its memory over the global `quantum` (ORDER_ASSUMED); no row
    where neither its memory nor a quantum is known (the order is unknown)."""
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
    hosted: dict[int, int] | None = None  # (read only where a class is not defined: the schedule's hosts)
    for job, mem, cls in rest.select("job_id", "memory_gb", "class").iter_rows():
        if boot is not None and cls in defined:
            rows.append((job, job_order(mem, class_quantum(boot.classes, boot.nodepools, cls, boot.config.quantum_gb)),
                         ORDER_CLASS))
            continue
        if boot is not None and hosted is None:
            hosted = host_quanta(tables, boot)
        if hosted and job in hosted:
            rows.append((job, job_order(mem, hosted[job]), ORDER_POOL))
        elif quantum:
            rows.append((job, job_order(mem, quantum), ORDER_ASSUMED))
    computed = pl.DataFrame(rows, schema=ORDER_SCHEMA, orient="row")
    return pl.concat([printed.cast(ORDER_SCHEMA), computed]).sort("job_id")


def with_quanta(rows: pl.DataFrame, tables: Mapping[str, pl.DataFrame], quantum: int,
                boot: Bootstrap | None = None, orders: pl.DataFrame | None = None) -> pl.DataFrame:
    """`rows` (job_id, memory_gb: the schedule's, one per process) with `quanta`, each process's:
    its job's order (`orders`, else `work_orders` of `tables`), else its memory over `quantum`,
    rounded up (rmref.job_order)."""
    known = orders if orders is not None else work_orders(tables, quantum, boot)
    orders = known.select("job_id", pl.col("order").alias("_order"))
    return rows.join(orders, on="job_id", **LEFT).with_columns(
        pl.coalesce("_order", -(-pl.col("memory_gb").fill_null(0) // quantum)).alias("quanta")).drop("_order")


def host_quanta(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> dict[int, int]:
    """job -> the share quantum of the pool tree its processes run in, for each job the schedule
    places on hosts all in one tree: the pool whose node file lists a host, else the first
    top-level pool, which the RM gives a host no node file lists (`PoolOf.placed`)."""
    of = pool_of(tables, boot)
    trees: dict[int, set[int]] = {}
    for job, host in narrow(tables, "schedule", ("job_id", "host")).drop_nulls().unique().iter_rows():
        pool = of.placed(host)
        if pool is not None:
            trees.setdefault(job, set()).add(tree_quantum(boot.nodepools, pool, boot.config.quantum_gb))
    return {job: quanta.pop() for job, quanta in trees.items() if len(quanta) == 1}


def job_quantum(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, job_id: int, class_name: str | None) -> int:
    """The share quantum a job's order is in: its class's pool tree's, else (the configuration lacks
    the class) the tree's its processes run in (`host_quanta`), else the global one (assumed)."""
    if any(c.name == class_name for c in boot.classes):
        return class_quantum(boot.classes, boot.nodepools, class_name, boot.config.quantum_gb)
    return host_quanta(tables, boot).get(job_id, boot.config.quantum_gb)


ORDERS_FROM_POOL = "share order of work whose class the configuration lacks"  # names in `assumed`
ORDERS_ASSUMED = "share order over the global quantum"
_POOL_WHY = ("no line prints the order, and the configuration rmref read does not define the class: the memory "
             "over the share quantum of the pool tree the processes run in (a node file lists their hosts, or "
             "lists them nowhere: the RM puts such a host in the first top-level pool; it places a job's "
             "processes in its class's tree only)")
_ASSUMED_WHY = ("no line prints the order, no class the configuration defines gives the pool, and no host the "
                "work runs on tells its pool tree (none is listed, or a node rule may take them): the memory "
                "over the global ducc.rm.share.quantum, which a pool with a share-quantum of its own does not "
                "count in")
SHOWN = 6  # jobs named in the value; the rest counted


def orders_assumed(tables: Mapping[str, pl.DataFrame], orders: pl.DataFrame) -> tuple[Assumption, ...]:
    """What `work_orders` (`orders`) takes for the orders of the work the RM schedules that no line
    prints and no class defined gives: each job with its order, from its pool (ORDER_POOL) or
    assumed (ORDER_ASSUMED)."""
    scheduled = narrow(tables, "schedule", ("job_id", "refused")).filter(
        pl.col("job_id").is_not_null() & ~pl.col("refused").fill_null(False)).select("job_id").unique()
    orders = orders.join(scheduled, on="job_id").sort("job_id")
    out = []
    for source, setting, why in ((ORDER_POOL, ORDERS_FROM_POOL, _POOL_WHY),
                                 (ORDER_ASSUMED, ORDERS_ASSUMED, _ASSUMED_WHY)):
        named = [f"job {j} order {o}" for j, o in orders.filter(pl.col("order_from") == source)
                 .select("job_id", "order").iter_rows()]
        if named:
            out.append(Assumption(setting, ", ".join(named[:SHOWN]) + (f" and {len(named) - SHOWN} more"
                                                                      if len(named) > SHOWN else ""), INFERRED, why))
    return tuple(out)
