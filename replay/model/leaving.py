"""Processes already leaving when a log that starts mid-stream begins.

The RM lists a process for removal in every schedule it publishes until the Orchestrator reports
it gone. In a log whose start (the RM's boot, every node arriving) is not in it, the first
schedule may list removals decided before the log began: the process is leaving as that cycle
starts (countNShares does not count it), and no decision of the cycle took it. Where no line of
the cycle can have decided such a removal, it is read as one from before the log; elsewhere it
is taken as the cycle's own, as a removal a schedule lists for the first time always was. That
reading is an inference, and `leaving_assumed` says so, naming the processes and the cycle.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import cast

import polars as pl

from replay.model.cycleref import label
from replay.model.damage import lost_after_start
from replay.model.logorder import log_order, log_position
from replay.model.reads import narrow
from replay.model.settings import INFERRED, Assumption

LEAVING = "processes leaving as the log began"  # its name in the audit's `assumed` list
LEAVING_WHY = ("the first schedule lists their removal, and no line of that cycle can have decided it (no eviction "
               "line names the process or its host, no job was found needy; or the job's findShares count already "
               "leaves them out, besides those a line named before it): taken "
               "as decided before the log began, so the cycle does not count them (countNShares) and no decision "
               "of it took them")
SHOWN = 6  # processes named in the value; the rest counted
REMOVAL_KEY = ["cycle", "job_id", "host", "share_id"]


def starts_midstream(tables: Mapping[str, pl.DataFrame]) -> bool:
    """No node arrives in the log's first cycle: the RM's start, where every node arrives, is not in
    it; or loops were lost after the start (`damage.lost_after_start`: the part of a log after a
    gap, where a node that arrives in the first cycle may have been there before)."""
    cycles = tables["cycles"]["cycle"]
    if cycles.is_empty():
        return False
    # read as the log has it (`narrow`): a view of some cycles' rows (replay.apps.explain.scope)
    # may leave the first cycle out, and the log's start is a fact of the whole log
    nodes = narrow(tables, "nodes", ("cycle", "event"))
    return (nodes.filter((pl.col("event") == "arrive") & (pl.col("cycle") == cycles.min())).is_empty()
            or lost_after_start(tables))


def _first_listed_removals(tables: Mapping[str, pl.DataFrame]) -> tuple[int, pl.DataFrame] | None:
    """The first listed cycle of a mid-stream log and the removals (REMOVAL_KEY) its schedule lists
    on a host; None for a log from the RM's start (the common case: its schedule is not read) or one
    that lists no schedule in any cycle."""
    if not starts_midstream(tables):
        return None
    # the log's first listed cycle, as the log has it (`narrow`), and then that cycle's rows alone:
    # a view of some cycles' rows (explain.scope) holds them whole where it holds the cycle at all
    first = narrow(tables, "schedule", ("cycle",))["cycle"].min()
    if first is None:
        return None
    return cast(int, first), tables["schedule"].filter((pl.col("kind") == "removal") & pl.col("host").is_not_null()
                                            & (pl.col("cycle") == first)).select(REMOVAL_KEY)


def removals_before_the_log(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """(cycle, job_id, host, share_id) of the removals the first schedule of a mid-stream log lists
    that no line of that cycle can have decided: no eviction line names the share, nor its host
    without a share (a purge, a reservation's clearing), and detectFragmentation found no job
    needy, so takeFromTheRich (whose takings have no line of their own at INFO) took nothing."""
    found = _first_listed_removals(tables)
    if found is None:
        return tables["schedule"].select(REMOVAL_KEY).clear()
    first, listed_first = found
    if listed_first.is_empty():
        return listed_first
    needy = tables["defrag"].filter((pl.col("cycle") == first) & pl.col("kind").is_in(["needy", "needy_detected"]))
    if not needy.is_empty():
        return listed_first.clear()
    evicted = tables["evictions"].filter(pl.col("cycle") == first)
    uncounted = _uncounted(tables, first, evicted)
    undecided = (listed_first.join(uncounted, on=REMOVAL_KEY, how="anti")
                 .join(evicted.filter(pl.col("share_id").is_not_null()).select(REMOVAL_KEY), on=REMOVAL_KEY, how="anti")
                 .join(evicted.filter(pl.col("share_id").is_null()).select("cycle", "host").unique(),
                       on=["cycle", "host"], how="anti"))
    return pl.concat([uncounted, undecided]).sort(REMOVAL_KEY)


def _uncounted(tables: Mapping[str, pl.DataFrame], cycle: int, evicted: pl.DataFrame) -> pl.DataFrame:
    """The removals (REMOVAL_KEY) the first schedule lists that the RM had stopped counting before the
    cycle decided them: per job, findShares' `current` (countNShares, at DEBUG) leaves out of the
    shares it held as the cycle began (listed as existing, less its additions) exactly the removals
    no eviction line named before that count, besides those one did. shrinkBy can pick a process
    already leaving again, so a line after the count is no sign the cycle decided it; a line before
    it that names the job but no process (a purge) leaves the job out."""
    schedule = tables["schedule"].filter((pl.col("cycle") == cycle) & pl.col("job_id").is_not_null())
    held = dict(schedule.group_by("job_id").agg(
        held=(pl.col("kind") == "existing").sum().cast(pl.Int64) - (pl.col("kind") == "addition").sum()).iter_rows())
    counted = (tables["expansions"].filter((pl.col("cycle") == cycle) & (pl.col("kind") == "find_shares_counted")
                                           & pl.col("current").is_not_null())
               .sort(log_order()).group_by("job_id")
               .agg(pl.col("current").first(), log_position().first()))
    lines = list(evicted.filter(pl.col("job_id").is_not_null()).select("job_id", "share_id", log_position())
                 .iter_rows())
    listed = schedule.filter((pl.col("kind") == "removal") & pl.col("host").is_not_null()).select(REMOVAL_KEY)
    out = []
    for job, current, at in counted.iter_rows():
        before = [sid for j, sid, line in lines if j == job and line < at]
        if None in before:
            continue
        removals = listed.filter(pl.col("job_id") == job)
        decided = set(before) & set(removals["share_id"])
        left = removals.filter(~pl.col("share_id").is_in(list(decided)))
        if left.height and held.get(job, 0) - current - len(decided) == left.height:
            out.append(left)
    return pl.concat(out) if out else listed.clear()


UNSURE = ("whether {removals}, whose removal the first schedule lists, were leaving as the log began or "
          "taken by the cycle's clearing of {hosts} for a reservation, no line says (the clearing names the machine, "
          "not its processes): the count of every job there (countNShares), and so each decision of the cycle, rests "
          "on it")


def unsure_removals(tables: Mapping[str, pl.DataFrame], before: pl.DataFrame | None = None) -> pl.DataFrame:
    """(cycle, job_id, host, share_id) of the removals the first schedule of a mid-stream log lists on
    a machine the cycle cleared for a reservation that no line names and no findShares count accounts
    for (`removals_before_the_log`; `before`: its result, read here when the caller has not): decided
    before the log began or by the clearing, the log does not tell."""
    found = _first_listed_removals(tables)  # a later cycle's removals are its own
    if found is None:
        return tables["schedule"].select(REMOVAL_KEY).clear()
    first, removals = found
    if removals.is_empty():
        return removals
    evicted = tables["evictions"].filter(pl.col("cycle") == first)
    cleared = evicted.filter((pl.col("reason") == "clear_for_reservation") & pl.col("share_id").is_null())
    taken = removals_before_the_log(tables) if before is None else before
    return (removals
            .join(cleared.select("cycle", "host").unique(), on=["cycle", "host"], how="semi")
            .join(evicted.filter(pl.col("share_id").is_not_null()).select(REMOVAL_KEY), on=REMOVAL_KEY, how="anti")
            .join(taken, on=REMOVAL_KEY, how="anti").sort(REMOVAL_KEY))


def removals_unsure(tables: Mapping[str, pl.DataFrame], before: pl.DataFrame | None = None) -> dict[int, str]:
    """The first cycle of a mid-stream log, and why no decision of it can be replayed, where its
    schedule lists removals `unsure_removals` finds (none when there is none)."""
    unsure = unsure_removals(tables, before)
    if unsure.is_empty():
        return {}
    first = unsure["cycle"][0]
    named = ", ".join(f"job {j} {h}.{s}" for _c, j, h, s in unsure.iter_rows())
    return {first: UNSURE.format(removals=named, hosts=", ".join(unsure["host"].unique().sort()))}


def leaving_assumed(tables: Mapping[str, pl.DataFrame], before: pl.DataFrame | None = None) -> tuple[Assumption, ...]:
    """The assumption `removals_before_the_log` makes (`before`: its result, read here when the
    caller has not), as every command lists it: the cycle and the processes (job, host.share)
    taken as leaving when it began (none when it takes none)."""
    removals = removals_before_the_log(tables) if before is None else before
    if removals.is_empty():
        return ()
    cycle = removals["cycle"][0]  # the log's first listed cycle, the only one the rule reads
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows()).get(cycle)
    named = [f"job {j} {h}.{s}" for _c, j, h, s in removals.sort(REMOVAL_KEY).iter_rows()]
    value = (f"cycle {label(cycle, epoch)}: " + ", ".join(named[:SHOWN])
             + (f" and {len(named) - SHOWN} more" if len(named) > SHOWN else ""))
    return (Assumption(LEAVING, value, INFERRED, LEAVING_WHY),)
