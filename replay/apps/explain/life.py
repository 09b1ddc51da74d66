"""The job's whole life: arrival, every cycle its processes change, new waiting reasons, its end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from replay.apps.explain.lookup import published_rows
from replay.apps.explain.story import LifeEvent
from replay.apps.explain.text import plural
from replay.model.cycleref import cycles_with_time, epochs, label
from replay.parsing.tables import LEFT


def _life_rows(tables: Mapping[str, pl.DataFrame], job_id: int) -> pl.DataFrame:
    """Per published cycle: processes held, added, the removals listed, the reason, the count."""
    sched = published_rows(tables).filter(pl.col("job_id") == job_id)
    removal = pl.col("kind") == "removal"
    per_cycle = sched.group_by("cycle").agg(
        (pl.col("kind") == "existing").sum().alias("held"),
        (pl.col("kind") == "addition").sum().alias("added"),
        pl.concat_str("host", pl.lit("."), "share_id").filter(removal).alias("removals"),
        pl.col("reason").drop_nulls().first().alias("reason"),
    )
    counts = (tables["counts"].filter((pl.col("job_id") == job_id) & pl.col("shares_given").is_not_null())
              .unique("cycle", keep="last", maintain_order=True).select("cycle", pl.col("shares_given").alias("count")))
    return per_cycle.join(counts, on="cycle", **LEFT).sort("cycle")


def _life_text(prev: int | None, e: LifeEvent, predates: bool = False) -> str:
    told = f"; How Much count {e.count}" if e.count is not None else ""
    moves = [f"+{e.added} new"] if e.added else []
    if prev is None:
        first = f"{'already there when the log begins' if e.processes else 'already submitted when the log begins'} " \
                "(its submission is not in the log)" if predates else "arrives"
        return f"{first}; holds {plural(e.processes, 'process')}" + (f" ({moves[0]})" if moves else "") + told
    moves += [f"{e.preempted} preempted or taken"] if e.preempted else []
    gone = prev + e.added - e.processes
    moves += [f"{gone} confirmed gone"] if gone > 0 else []
    change = f" ({', '.join(moves)})" if moves else ""
    return f"{prev} -> {plural(e.processes, 'process')}{change}{told}"


def job_life(tables: Mapping[str, pl.DataFrame], job_id: int, cycles: list[int],
             predates: bool = False) -> tuple[LifeEvent, ...]:
    """Arrival (or, for work that `predates` the log, its state when the log begins), every cycle
    its processes change (or some are preempted), new waiting reasons, its end.

    A preempted process stays listed until the Orchestrator confirms it gone, so only its first
    listing counts as preempted; it leaves the held count when confirmed.
    """
    events: list[LifeEvent] = []
    epoch_of = epochs(tables["cycles"])
    prev_held, prev_reason = None, None
    prev_removals: set[str] = set()
    waits: list[tuple[int, int]] = []  # (index in events, first cycle) of each wait
    last_waiting: dict[int, int] = {}  # index in events -> the wait's last cycle
    for c, held, added, removals, reason, count in _life_rows(tables, job_id).select(
            "cycle", "held", "added", "removals", "reason", "count").iter_rows():
        removals = set(removals)
        e = LifeEvent(c, held, "", added, len(removals - prev_removals), count, epoch_of.get(c))
        if prev_held is None or held != prev_held or e.preempted:
            events.append(replace(e, text=_life_text(prev_held, e, predates)))
        if reason and reason != prev_reason:
            events.append(replace(e, text=f"waits: {reason}"))
            waits.append((len(events) - 1, c))
        if reason:
            last_waiting[waits[-1][0]] = c
        prev_held, prev_reason, prev_removals = held, reason, removals
    for index, first in waits:  # how long each wait lasted, in cycles and wall-clock time
        lasted = cycles_with_time(tables["cycles"], first, last_waiting[index])
        events[index] = replace(events[index], text=f"{events[index].text} (for {lasted})")
    last_log = tables["cycles"]["cycle"].max()
    gone = cycles[-1] + 1
    end = ("still published at the end of the log" if cycles[-1] == last_log
           else f"last published; gone from cycle {label(gone, epoch_of.get(gone))} on (finished or cancelled)")
    end += f"; published {cycles_with_time(tables['cycles'], cycles[0], cycles[-1])}"
    events.append(LifeEvent(cycles[-1], prev_held or 0, end, epoch=epoch_of.get(cycles[-1])))
    return tuple(events)
