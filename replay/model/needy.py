"""The RM's needy list as the log shows it: the jobs a cycle expands first, those the previous
cycle found potentially needy but left off the list, and the submission-order ties the list shows.

detectFragmentation puts every potentially needy job on a TreeMap keyed by JobByTimeSorter; the
next cycle's needy pass expands them before any other placement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import polars as pl

from replay.model.bycycle import ByCycle
from replay.model.reads import narrow
from replay.model.logorder import log_order, log_position


def needy_expanded(tables: Mapping[str, pl.DataFrame]) -> ByCycle:
    """Per cycle, the jobs What Of expanded before its normal pass: the needy list the cycle
    carried from the one before (its doExpansion lines before the fair-share traversal, the
    fixed-share and reserve work its needy pass gave processes to, `expandNeedyJobs Assign:`, and
    at DEBUG every job its "Expand needy ..." lines name)."""
    expansions = tables["expansions"].filter(pl.col("cycle").is_not_null()).sort(log_order())
    # findShares prints the same "Doing expansions" line for a job's subpools, also inside the
    # needy pass, right after its "counted" line: only traverseNodepoolsForExpansion's start the
    # normal pass
    in_find = ((pl.col("kind").shift(1) == "find_shares_counted") & (pl.col("line").shift(1) == pl.col("line") - 1)
               & (pl.col("file").shift(1) == pl.col("file")))
    # and the normal pass starts at a top-level pool: a subpool's line is findShares' (an INFO log
    # prints no "counted" line to tell it by) or the normal pass's after its start
    pools = tables["nodepools"] if "nodepools" in tables else None
    subpool = (pl.col("nodepool").is_in(pools.filter(pl.col("parent").is_not_null())["name"].implode())
               if pools is not None and not pools.is_empty() else pl.lit(False))
    normal = pl.concat([
        expansions.filter((pl.col("kind") == "expansion_order") & ~in_find.fill_null(False) & ~subpool)
        .select("cycle", log_position()),
        tables["counts"].filter((pl.col("kind") == "given") & pl.col("cycle").is_not_null())
        .select("cycle", log_position()),
    ]).group_by("cycle").agg(pl.col("log_position").min().alias("normal"))
    early = (expansions.filter((pl.col("kind") == "do_expansion") & pl.col("job_id").is_not_null())
             .join(normal, on="cycle", how="left")
             .filter(pl.col("normal").is_null() | (log_position() < pl.col("normal"))))
    defrag = (narrow(tables, "defrag", ("cycle", "file", "line", "kind", "job_id", "job_ids"))
              .filter(pl.col("cycle").is_not_null()))
    assigned = defrag.filter((pl.col("kind") == "expand_needy_assign") & pl.col("job_id").is_not_null())
    named = (defrag.filter(pl.col("kind") == "expand_needy").explode("job_ids")
             .filter(pl.col("job_ids").is_not_null()).with_columns(pl.col("job_ids").alias("job_id")))
    rows = pl.concat([frame.select("cycle", "file", "line", "job_id") for frame in (early, assigned, named)])
    return ByCycle(rows.sort(log_order("cycle")).unique(["cycle", "job_id"], keep="first", maintain_order=True)
                   .select("cycle", "job_id"))



def _needy_evidence(tables: Mapping[str, pl.DataFrame]) -> tuple[pl.DataFrame, dict[int, int], set[tuple[int, int]]]:
    """What the needy-list checks read: the potentially needy rows, each cycle's next one, and the
    (cycle, job) pairs whatOfFixedShare gave processes to (`Assign(H|V)`)."""
    potential = tables["defrag"].filter(pl.col("potentially_needy") & pl.col("cycle").is_not_null())
    cycles = tables["cycles"]["cycle"].to_list()
    assigned = set(tables["expansions"].filter(pl.col("kind") == "fixed_assign").select("cycle", "job_id").iter_rows())
    return potential, dict(zip(cycles[:-1], cycles[1:])), assigned


def needy_left_off(tables: Mapping[str, pl.DataFrame]) -> dict[int, set[int]]:
    """Per cycle, the jobs the previous cycle found potentially needy that the cycle shows were
    not on the RM's needy list. That list is a TreeMap on JobByTimeSorter, filled from a HashMap
    keyed by the jobs' random ids: of two jobs that tie (same submission time and order) only
    the one put last stays, and no log line shows which. The cycle's needy pass, which runs
    before every other placement, does:

    * at DEBUG its "Expand needy ..." lines name every job it took: any other was left off;
    * a fixed-share job that whatOfFixedShare gives processes (`Assign(H|V)`) was left off, or
      the needy pass would have given it those;
    * a reservation findMachines saw once was left off (not deferred, the needy pass and
      whatOfReserve each print one findMachines line for it);
    * a fixed-share job still short of its count that the needy pass passed over while it gave a
      process (`expandNeedyJobs Assign:`) to a later job of its class and order was left off
      (`_passed_over`).

    A job completed by the cycle (or gone from its class) is none of these: the needy pass drops
    it from the list unprinted, and it shows no tie (`_uncapped`)."""
    potential, following, assigned = _needy_evidence(tables)
    passed_over = _passed_over(tables, potential, following)
    finished = _uncapped(tables)
    candidates: dict[int, set[int]] = {}
    for cycle, job in potential.select("cycle", "job_id").iter_rows():
        if cycle in following and not finished(following[cycle], job):
            candidates.setdefault(following[cycle], set()).add(job)
    expand = tables["defrag"].filter((pl.col("kind") == "expand_needy") & pl.col("cycle").is_not_null())
    listed: dict[int, set[int]] = {c: set() for c in expand["cycle"].unique().to_list()}
    for cycle, ids in expand.select("cycle", "job_ids").iter_rows():
        listed[cycle].update(ids or ())
    exp = tables["expansions"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
    seen = exp.filter(pl.col("kind") == "find_machines").group_by("cycle", "job_id").len()
    once = set(seen.filter(pl.col("len") == 1).select("cycle", "job_id").iter_rows())
    deferred = set(tables["counts"].filter(pl.col("kind").is_in(["deferred", "deferring"])
                                           & pl.col("cycle").is_not_null()).select("cycle", "job_id").iter_rows())
    left: dict[int, set[int]] = {}
    for cycle, jobs in candidates.items():
        if cycle in listed:
            off = jobs - listed[cycle]
        else:
            off = {j for j in jobs if (cycle, j) in assigned or (cycle, j) in passed_over
                   or ((cycle, j) in once and (cycle, j) not in deferred)}
        if off:
            left[cycle] = off
    return left


def _uncapped(tables: Mapping[str, pl.DataFrame]) -> Callable[[int, int], bool]:
    """Whether a cycle prints no cap for a job though it prints others': the RM's initJobCap logs
    every job of a class but a refused or completed one (a job is marked complete once the
    Orchestrator publishes it Completing), and the needy pass, before it prints the jobs it takes,
    drops a completed job or one no longer in a class from the list without a word."""
    caps = narrow(tables, "job_caps", ("cycle", "job_id")).filter(pl.col("cycle").is_not_null())
    capped = set(caps.select("cycle", "job_id").iter_rows())
    cycles = {cycle for cycle, _job in capped}
    return lambda cycle, job: cycle in cycles and (cycle, job) not in capped


def _passed_over(tables: Mapping[str, pl.DataFrame], potential: pl.DataFrame,
                 following: Mapping[int, int]) -> set[tuple[int, int]]:
    """(cycle, job) pairs of fixed-share jobs the cycle's needy pass shows were not on the list
    (its `Assign:` lines are printed for fixed-share jobs only, so only their classes match).
    expandNeedyJobs serves a nodepool's fixed-share jobs in JobByTimeSorter order, each by
    findShares on the same machines: had the job been on the list, it would have come before any
    later-submitted job of its class and order (ids follow submission; an equal time ties and keeps
    only one), and taken the process that job was given. It must still be short when the cycle
    ends (doEvictions' needed), or it needed nothing and the pass rightly gave it nothing. Work
    that names its machines (trunk's "machine list:") may search fewer, so it proves nothing."""
    # (only the columns read: on disk a table is read whole otherwise)
    given = narrow(tables, "defrag", ("kind", "cycle", "job_id")).filter(
        (pl.col("kind") == "expand_needy_assign") & pl.col("cycle").is_not_null())
    served: dict[int, set[int]] = {}
    for cycle, job in given.select("cycle", "job_id").iter_rows():
        served.setdefault(cycle, set()).add(job)
    counts = narrow(tables, "eviction_counts", ("cycle", "job_id", "needed")).filter(
        pl.col("cycle").is_not_null() & (pl.col("needed") > 0))
    short = set(counts.select("cycle", "job_id").iter_rows())
    events = narrow(tables, "job_events", ("event", "job_id"))
    listed = set(events.filter(pl.col("event") == "machine_list")["job_id"].to_list())
    put: dict[int, dict[int, tuple[str, int]]] = {}  # the cycle it follows -> job -> (class, order)
    for cycle, job, cls, order in potential.select("cycle", "job_id", "class", "order").iter_rows():
        if cycle in following and cls is not None and job not in listed:
            put.setdefault(following[cycle], {}).setdefault(job, (cls, order))
    return {(cycle, job) for cycle, jobs in put.items() for job, key in jobs.items()
            if (cycle, job) in short and job not in served.get(cycle, ())
            and any(other > job and jobs.get(other) == key for other in served.get(cycle, ()))}


def needy_ties(tables: Mapping[str, pl.DataFrame],
               left: Mapping[int, set[int]] | None = None) -> list[tuple[int, int]]:
    """Ties the needy list shows, as (job left off, job kept): it is a TreeMap on JobByTimeSorter, so
    of two potentially needy jobs that tie only the one put last stays. A potentially needy job that
    whatOfFixedShare assigns processes to in the next cycle (`Assign(H|V)`) was not in it, or the
    needy pass, which runs first, would have given it those: it tied with the one job of its order
    put after it. Any other job the next cycle shows left off (`needy_left_off`, or `left` when
    already read) tied with the one job of its order that cycle kept."""
    rows, following, assigned = _needy_evidence(tables)
    left = needy_left_off(tables) if left is None else left
    ties = []
    # each cycle's jobs as first put, in rows, not a frame per cycle (a log's thousands of cycles)
    by_cycle: dict[int, dict[int, int]] = {}
    for cycle, job, order in rows.select("cycle", "job_id", "order").iter_rows():
        by_cycle.setdefault(cycle, {}).setdefault(job, order)
    for cycle, first in by_cycle.items():
        put = list(first.items())
        off = left.get(following.get(cycle, -1), set())
        for i, (job, order) in enumerate(put):
            after = [other for other, o in put[i + 1:] if o == order]
            kept = [other for other, o in put if o == order and other != job and other not in off]
            if (following.get(cycle), job) in assigned and len(after) == 1:
                ties.append((job, after[0]))
            elif job in off and len(kept) == 1:  # left off the list: the one job of its order kept replaced it
                ties.append((job, kept[0]))
    return ties

