"""What the RM logged it decided, per cycle, in the shapes rmref's decisions take (the audit's other side).

Each decision kind becomes {cycle: {job: value}} so a comparison is a dictionary walk:
* caps: the `initJobCap` actual cap;
* counts: the How Much count (`whatOfFairShare ... shares given`, fixed and reservation grants;
  a deferral counts as 0);
* placements: sorted (host, order) of the shares What Of connected for the job (`connectShare`),
  before defragmentation may cancel one or hand it to a needy job (the schedule's Additions show
  the result of both phases);
* evictions: sorted (host, share_id) doEvictions took from the job: the `shrinkBy Removing share`
  and dead-host purge lines;
* defrag: sorted (host, share_id) the cycle newly removed from the job (a removal stays listed
  until the Orchestrator confirms it, so only its first appearance is a decision) that
  doEvictions did not take: INFO logs do not name defragmentation's victims, the published
  Removals show them.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import polars as pl

from replay.model.bycycle import CycleRows
from replay.model.inputs import CounterBlock, counter_blocks
from replay.model.leaving import REMOVAL_KEY, removals_before_the_log
from replay.model.reads import narrow
from replay.model.logorder import log_order

PerJob = dict[int, dict[int, Any]]  # cycle -> job -> value, as polars gives it
EVICTION_REASONS = ["shrink", "node_purge"]  # the `evictions` rows that name a share doEvictions took


@dataclass(frozen=True)
class OrderShown:
    """The sequences of jobs one cycle's lines list in the RM's order: a pair (a, b) is `in` it
    when some sequence lists a before b. (Kept as the sequences: the set of their pairs took
    19 MB on a 2,500-cycle log.)"""

    sequences: tuple[tuple[int, ...], ...]

    def __contains__(self, pair: object) -> bool:
        a, b = cast(tuple[int, int], pair)
        return any(a in s and b in s and s.index(a) < len(s) - 1 - s[::-1].index(b) for s in self.sequences)


@dataclass(frozen=True)
class Logged:
    """The RM's logged decisions of a whole log, by kind, cycle and job."""

    caps: PerJob
    counts: PerJob
    placements: PerJob
    evictions: PerJob
    defrag: PerJob  # donor job -> shares taken from it
    needy: dict[int, dict[int, int]]  # cycle -> actually needy job -> processes it still needs
    detected: frozenset[int]  # cycles whose detectFragmentation the log shows (`needy` is then its whole verdict)
    cleared: dict[int, tuple[str, ...]]  # hosts How Much cleared for a reservation (evictions' input)
    connected: dict[int, list[tuple[int, str, int, int]]]  # What Of's (job, host, order, share id), in order
    shrunk: dict[int, list[tuple[int, str, int | None, int | None, str]]]  # (job, host, share, order, reason)
    pure_fair_share: dict[int, dict[int, int]]  # detectFragmentation's PureFS per job
    job_order: dict[int, list[int]]  # the RM's job HashMap order, as far as the log shows it
    job_order_known: dict[int, OrderShown]  # (a, b) in it: the log shows a was taken before b
    user_orders: dict[int, list[tuple[str, ...]]]  # the user order of each countUserShares block
    share_walk: dict[int, dict[str, tuple[int, ...]]]  # cleared host -> its shares in the order the RM walked them
    rmcounter: CycleRows  # the cycle's RmCounter rows (`counters` builds the blocks when asked)
    deferrals: dict[int, dict[int, str]]  # job -> the reason the RM gave it nothing

    def counters(self, cycle: int) -> list[CounterBlock]:
        """The RmCounter blocks How Much printed in the cycle, in order (built only when asked: a
        long log has tens of thousands)."""
        rows = self.rmcounter.get(cycle)
        return counter_blocks({"rmcounter": rows}) if rows is not None else []
    published: PerJob  # job -> (Additions' hosts, new Removals' (host, share id)), both sorted
    # hosts countFreeableMachines gave a reservation (free or to be freed), in the order its walk met them
    freeable_given: dict[int, tuple[str, ...]] = field(default_factory=dict)
    # needy job -> the machines each of its takeFromTheRich calls searched, in the order it printed them
    searched: dict[int, dict[int, tuple[tuple[str, ...], ...]]] = field(default_factory=dict)


@dataclass(frozen=True)
class Takings:
    """What the RM logged taking, per cycle and job: doEvictions' shares, defragmentation's, and
    the needy verdicts (what the report counts; kept with the stored audit)."""

    evictions: PerJob
    defrag: PerJob
    needy: dict[int, dict[int, int]]


def takings(logged: Logged) -> Takings:
    """The takings of the logged decisions."""
    return Takings(logged.evictions, logged.defrag, logged.needy)


def _nest(frame: pl.DataFrame, value: str) -> PerJob:
    out: PerJob = {}
    for cycle, job, v in frame.select("cycle", "job_id", value).iter_rows():
        out.setdefault(cycle, {})[job] = v
    return out


def _pairs(frame: pl.DataFrame, first: str, second: str) -> PerJob:
    """cycle -> job -> sorted [(first, second), ...]."""
    grouped = frame.with_columns(pl.struct(first, second).alias("v")).group_by("cycle", "job_id").agg("v")
    return {c: {j: sorted(((x[first], x[second]) for x in v), key=pair_key) for j, v in jobs.items()}
            for c, jobs in _nest(grouped, "v").items()}


def pair_key(pair: tuple[str, int | None]) -> tuple[str, int]:
    """Sort key of a (host, number) pair; an unnamed number (a purge's share) first on its host."""
    return pair[0], -1 if pair[1] is None else pair[1]


def new_removals(tables: Mapping[str, pl.DataFrame], cycle: int | None = None,
                 before: pl.DataFrame | None = None) -> pl.DataFrame:
    """(cycle, job_id, host, share_id, memory_gb, purged) of every removal the published schedule
    lists for the first time (in `cycle` alone, if given): a removal stays listed until the process
    is gone, so only its first listing is a decision. Removals taken as decided before a mid-stream
    log began are not the cycle's (`before`: replay.model.leaving.removals_before_the_log, read
    here when the caller has not)."""
    key = REMOVAL_KEY
    schedule = tables["schedule"]
    if cycle is not None:  # that cycle's rows and its predecessor's, all the rule reads
        schedule = schedule.filter(pl.col("cycle").is_between(cycle - 1, cycle))
    removed = schedule.filter((pl.col("kind") == "removal") & pl.col("host").is_not_null()).select(
        *key, "memory_gb", "purged")
    cycles = tables["cycles"]["cycle"].to_list()
    following = dict(zip(cycles[:-1], cycles[1:]))
    # typed as the cycle column, also when no cycle has a next one (an empty map types as null)
    seen_before = removed.select(key).with_columns(
        pl.col("cycle").replace_strict(following, default=None, return_dtype=removed.schema["cycle"])
    ).drop_nulls("cycle")
    new = removed.join(seen_before, on=key, how="anti")
    if cycle is not None:
        new = new.filter(pl.col("cycle") == cycle)
    return new.join(removals_before_the_log(tables) if before is None else before, on=key, how="anti")


def taken_by_defrag(removals: pl.DataFrame, shrunk: pl.DataFrame) -> pl.DataFrame:
    """The new removals (`new_removals`) that no row of `shrunk` (`shrinks`) accounts for: the
    shares defragmentation took. A purge line names the host and the job, not the share."""
    purged = shrunk.filter(pl.col("share_id").is_null())
    return (removals.join(shrunk, on=["cycle", "job_id", "host", "share_id"], how="anti")
            .join(purged, on=["cycle", "job_id", "host"], how="anti"))


def shrinks(tables: Mapping[str, pl.DataFrame], removals: pl.DataFrame) -> pl.DataFrame:
    """Every share a cycle took other than by defragmentation (cycle, job_id, host, share_id,
    order, reason, line): doEvictions' shrinks and purges, less the purges of shares already
    vacated, and the shares of hosts cleared for a reservation (`removals`: `new_removals`)."""
    evictions = in_cycles(tables["evictions"])
    # a job that completed in the cycle its node died is purged but no longer published: its
    # purge is no decision about the cycle's work
    listed = tables["schedule"].select("cycle", "job_id").unique()
    doevictions = (evictions.filter(pl.col("reason").is_in(EVICTION_REASONS))
                   .join(listed, on=["cycle", "job_id"], how="semi"))
    return _with_clearing(_without_vacated_purges(doevictions, tables), cleared_hosts(tables), removals, evictions)


def cleared_hosts(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The evictions rows of the hosts setupPreemptions cleared for a reservation."""
    return in_cycles(tables["evictions"]).filter(pl.col("reason") == "clear_for_reservation")


def defrag_takings(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The shares defragmentation took (cycle, job_id, host, share_id, memory_gb, purged), as the
    audit reads them: the view a user browses shows these, not its own reading."""
    removals = new_removals(tables)
    return taken_by_defrag(removals, shrinks(tables, removals))


def logged_counts(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The `counts` row of How Much's count per job and cycle (the last one logged), `shares_given`
    the shares it counted (0 where the line gives none; a RESERVE grant's, `_reservation_counts`)."""
    counts = _reservation_counts(in_cycles(tables["counts"]), tables["expansions"], tables["eviction_counts"])
    return counts.with_columns(pl.col("shares_given").fill_null(0)).unique(
        ["cycle", "job_id"], keep="last", maintain_order=True)


def _reservation_counts(counts: pl.DataFrame, expansions: pl.DataFrame, evictions: pl.DataFrame) -> pl.DataFrame:
    """A RESERVE grant's count: "Request is granted" does not say how many machines (a job in a
    reserve class may get several); findMachines, which places them, prints it ("counted N"),
    and doEvictions' table prints every job's count (findMachines skips a completed job)."""
    def first_counted(frame: pl.DataFrame) -> pl.DataFrame:
        return (frame.filter(pl.col("counted").is_not_null()).unique(["cycle", "job_id"], keep="first")
                .select("cycle", "job_id", "counted"))
    counted = (first_counted(expansions.filter(pl.col("kind") == "find_machines"))
               .join(first_counted(evictions), on=["cycle", "job_id"], how="full", coalesce=True, suffix="_ev")
               .select("cycle", "job_id", pl.coalesce("counted", "counted_ev").alias("_n")))
    granted = (pl.col("kind") == "granted") & (pl.col("policy") == "RESERVE")
    return (counts.join(counted, on=["cycle", "job_id"], how="left")
            .with_columns(pl.when(granted & pl.col("_n").is_not_null()).then(pl.col("_n"))
                          .otherwise(pl.col("shares_given")).alias("shares_given"))
            .drop("_n"))


def _without_vacated_purges(shrunk: pl.DataFrame, tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The shrink and purge rows less the purges of shares already gone from the cycle's input.

    The RM purges a dead host (handleDeadNodes) before it lets go of the shares whose processes
    the Orchestrator reported stopped just before the cycle (`Job vacate signal share`,
    processCompletion): such a share is purged and logged, yet it was leaving and the schedule
    no longer holds it. A purge line names the host and the job only, so as many of the job's
    purge lines on that host as it had shares vacated there are no decision of the cycle.
    """
    vacated = (tables["processes"].filter(pl.col("event") == "vacate")
               .group_by("cycle", "job_id", "host").len("_vacated"))
    purge = pl.col("share_id").is_null()
    rank = pl.int_range(pl.len()).over("cycle", "job_id", "host", purge)
    return (shrunk.join(vacated, on=["cycle", "job_id", "host"], how="left")
            .filter(~purge | (rank >= pl.col("_vacated").fill_null(0)))
            .drop("_vacated"))


def _with_clearing(shrunk: pl.DataFrame, cleared: pl.DataFrame, removals: pl.DataFrame,
                   evictions_rows: pl.DataFrame) -> pl.DataFrame:
    """The shrink and purge rows, and the shares taken from the hosts cleared for a reservation.

    setupPreemptions logs the host it clears ("Clearing X from preemptable list"), not the
    shares: at INFO they appear only as the schedule's new removals on that host. Defragmentation
    cannot take them too (a cleared host's shares are already leaving), so every new removal
    there that no shrink line names is the clearing's.
    """
    columns = ["cycle", "job_id", "host", "share_id", "order", "reason", "file", "line"]
    # a share it found not preemptable ("Found non-preemptable share N") stays; defragmentation may take it later
    kept = evictions_rows.filter(pl.col("reason") == "non_preemptable").select("cycle", "share_id")
    taken = (removals.join(cleared.select("cycle", "host").unique(), on=["cycle", "host"])
             .join(shrunk, on=["cycle", "job_id", "host", "share_id"], how="anti")
             .join(kept, on=["cycle", "share_id"], how="anti")
             .join(cleared.sort(log_order()).group_by("cycle", "host").agg(pl.col("file", "line").first()),
                   on=["cycle", "host"])
             .with_columns(pl.lit(None, pl.Int64).alias("order"), pl.lit("reservation").alias("reason")))
    return pl.concat([shrunk.select(columns), taken.select(columns)], how="vertical_relaxed")


def share_walk(shrunk: pl.DataFrame, evictions: pl.DataFrame) -> dict[int, dict[str, tuple[int, ...]]]:
    """Per cycle and cleared host, its shares in the order setupPreemptions walked them, as far
    as the log shows: the shares it took, then those it found not preemptable (logged in walk
    order, under the host's "Clearing" line). A host's shares are keyed by random ids, so this
    order is the log's to tell; which of a job's shares go depends on nothing else."""
    walked = (evictions.filter(pl.col("reason").is_in(["clear_for_reservation", "non_preemptable"]))
              .sort(log_order("cycle"))
              .with_columns(pl.when(pl.col("reason") == "clear_for_reservation").then(pl.col("host"))
                            .forward_fill().over("cycle").alias("host"))
              .filter(pl.col("reason") == "non_preemptable"))
    taken = shrunk.filter(pl.col("reason") == "reservation").sort(log_order("cycle", after=("share_id",)))
    out: dict[int, dict[str, tuple[int, ...]]] = {}
    for frame in (taken, walked):
        for cycle, host, sid in frame.select("cycle", "host", "share_id").drop_nulls().iter_rows():
            hosts = out.setdefault(cycle, {})
            hosts[host] = (*hosts.get(host, ()), sid)
    return out


def in_cycles(frame: pl.DataFrame) -> pl.DataFrame:
    """The rows that belong to a published cycle (a log's tail after its last schedule has none)."""
    return frame.filter(pl.col("cycle").is_not_null())


def logged_decisions(tables: Mapping[str, pl.DataFrame], before: pl.DataFrame | None = None) -> Logged:
    """Collect every logged decision of the parsed log (`before`: as `new_removals` takes it)."""
    caps = in_cycles(tables["job_caps"]).filter(pl.col("actual_cap").is_not_null()).unique(
        ["cycle", "job_id"], keep="last", maintain_order=True)
    counts = logged_counts(tables)
    # What Of's own decision: the job a share was connected for (`placed_for` when defragmentation
    # then handed it to a needy job)
    connected = in_cycles(tables["placements"]).with_columns(pl.coalesce("placed_for", "job_id").alias("job_id"))
    cleared = cleared_hosts(tables)
    removals = new_removals(tables, before=before)
    shrunk = shrinks(tables, removals)
    defrag = taken_by_defrag(removals, shrunk)
    analysis = in_cycles(tables["defrag"])
    orders = defrag_job_order(tables["defrag"])
    return Logged(
        caps=_nest(caps, "actual_cap"),
        counts=_nest(counts, "shares_given"),
        placements=_pairs(connected, "host", "order"),
        evictions=_pairs(shrunk, "host", "share_id"),
        defrag=_pairs(defrag, "host", "share_id"),
        needy=_nest(analysis.filter(pl.col("kind") == "needy"), "needed"),
        detected=frozenset(analysis.filter(pl.col("kind") == "analysis")["cycle"].to_list()),
        cleared={c: tuple(h for (h,) in rows) for c, rows in _rows(cleared, "host").items()},
        connected=_rows(connected.sort(log_order("cycle")), "job_id", "host", "order", "share_id"),
        shrunk=_rows(shrunk.sort(log_order("cycle")), "job_id", "host", "share_id", "order", "reason"),
        pure_fair_share=_nest(analysis.filter((pl.col("kind") == "analysis") & pl.col("pure_fs").is_not_null()),
                              "pure_fs"),
        job_order={c: order for c, (order, _) in orders.items()},
        job_order_known={c: known for c, (_, known) in orders.items()},
        user_orders=user_orders(narrow(tables, "rmcounter", ("cycle", "descr", "block", "entity"))),
        share_walk=share_walk(shrunk, in_cycles(tables["evictions"])),
        rmcounter=CycleRows(tables, "rmcounter"),
        deferrals={c: {j: r for j, r in jobs.items() if r} for c, jobs in _nest(
            in_cycles(tables["counts"]).filter(pl.col("reason").is_not_null())
            .unique(["cycle", "job_id"], keep="last", maintain_order=True), "reason").items()},
        published=published(tables, removals),
        freeable_given=_freeable_given(tables["expansions"]),
        searched=_searched(analysis),
    )


def _searched(defrag: pl.DataFrame) -> dict[int, dict[int, tuple[tuple[str, ...], ...]]]:
    """Per cycle and needy job, the machines each takeFromTheRich call searched (`Eligible
    machines:`), in the order it met them in its first round: the TreeMap's, whose ties between
    machines of equal owner wealth and memory follow a node map hashed on IPs a log before DUCC
    3.0.0 never shows."""
    rows = defrag.filter(pl.col("kind") == "eligible_machines").sort(log_order("cycle"))
    out: dict[int, dict[int, tuple[tuple[str, ...], ...]]] = {}
    for cycle, job, hosts in rows.select("cycle", "job_id", "hosts").iter_rows():
        calls = out.setdefault(cycle, {})
        calls[job] = (*calls.get(job, ()), tuple(hosts or ()))
    return out


def _freeable_given(expansions: pl.DataFrame) -> dict[int, tuple[str, ...]]:
    """Per cycle, the hosts countFreeableMachines gave (`Giving H because it is free|freeable`),
    each once, in log order: its walk over a node map (before 2.1.0 free machines not first)."""
    given = in_cycles(expansions).filter(pl.col("kind") == "freeable_giving").sort(log_order("cycle"))
    return {c: tuple(dict.fromkeys(h for (h,) in rows)) for c, rows in _rows(given, "host").items()}


def published(tables: Mapping[str, pl.DataFrame], removals: pl.DataFrame) -> PerJob:
    """The schedule each cycle sent: per job, the hosts of its Additions and the shares first
    listed as its Removals (`removals`: `new_removals`; a removal is listed again every cycle
    until the Orchestrator confirms it)."""
    additions = tables["schedule"].filter((pl.col("kind") == "addition") & pl.col("host").is_not_null())
    added = _nest(additions.group_by("cycle", "job_id").agg(pl.col("host").sort()), "host")
    removed = _pairs(removals, "host", "share_id")
    out: PerJob = {}
    for cycle in set(added) | set(removed):
        a, r = added.get(cycle, {}), removed.get(cycle, {})
        out[cycle] = {j: (tuple(a.get(j, ())), tuple(r.get(j, ()))) for j in sorted(set(a) | set(r))}
    return out


def user_orders(rmcounter: pl.DataFrame) -> dict[int, list[tuple[str, ...]]]:
    """Per cycle, the order the RM counted each class's users in (a HashMap order the log shows:
    users whose names share a bucket come in the order of a map keyed by random ids)."""
    rows = rmcounter.filter((pl.col("descr") == "countUserShares") & pl.col("cycle").is_not_null())
    orders: dict[int, list[tuple[str, ...]]] = {}
    for (cycle, _), block in rows.group_by("cycle", "block", maintain_order=True):
        orders.setdefault(cycle, []).append(tuple(block["entity"].to_list()))
    return orders


def _rows(frame: pl.DataFrame, *columns: str) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for cycle, *values in frame.filter(pl.col("cycle").is_not_null()).select("cycle", *columns).iter_rows():
        out.setdefault(cycle, []).append(tuple(values))
    return out


# the takeFromTheRich lines that name the needy job, in the order the RM served the jobs
_TAKE_KINDS = ("candidate_machine", "not_candidate_machine", "machines_found", "eligible_machines",
               "satisfied", "failed")


def _merge(sequences: list[list[int]], shown: tuple[tuple[int, ...], ...] = ()) -> list[int]:
    """One order consistent with every sequence (a topological sort; ties by first appearance).
    Where they contradict each other, a job one of the `shown` sequences puts after another still
    waiting goes later: those orders are the RM's own, the others only a guess."""
    first: dict[int, int] = {}
    after: dict[int, set[int]] = {}
    for seq in sequences:
        for a, b in zip([None, *seq], seq):
            first.setdefault(b, len(first))
            after.setdefault(b, set())
            if a is not None and a != b:
                after[a].add(b)
    before = {j: sum(j in nxt for nxt in after.values()) for j in first}
    out: list[int] = []
    while before:
        ready = [j for j, n in before.items() if n == 0] or _unheld(before.keys(), shown) or list(before)
        j = min(ready, key=first.__getitem__)
        out.append(j)
        del before[j]
        for k in after[j]:
            if k in before:
                before[k] -= 1
    return out


def _unheld(waiting: Collection[int], shown: tuple[tuple[int, ...], ...]) -> list[int]:
    """The waiting jobs no `shown` sequence puts after another waiting one (a contradiction's way out)."""
    held = {b for seq in shown for i, a in enumerate(seq) if a in waiting for b in seq[i + 1:]}
    return [j for j in waiting if j not in held]


def defrag_job_order(defrag: pl.DataFrame) -> dict[int, tuple[list[int], OrderShown]]:
    """Per cycle, the RM's job HashMap order as far as the INFO log shows it, and which pairs it shows.

    The RM keys jobs by random UUIDs, so the order it serves needy jobs in cannot be computed;
    each class's detectFragmentation rows, each pool's ACTUALLY NEEDY rows and the takeFromTheRich
    lines each show part of it, and one order consistent with all of them is taken. Jobs of two
    classes that no line relates keep an order the log does not show.

    Only the ACTUALLY NEEDY and takeFromTheRich lines are what the log *shows* of that order (the
    pairs returned): they iterate maps detectFragmentation fills afresh each cycle (a pool's
    potentially needy jobs, then the needy ones), while a class's rows iterate the class's own
    job map, which keeps the table size the class's most jobs ever needed (a HashMap never
    shrinks; past 12 jobs its jobs hash into 32 buckets or more, not 16), so the two may list
    the same two jobs in opposite orders. Those rows only break ties in the order taken.
    """
    rows = defrag.filter(pl.col("job_id").is_not_null() & pl.col("cycle").is_not_null()
                         & pl.col("kind").is_in(["analysis", "needy", *_TAKE_KINDS]))
    # per cycle, in log order: one sequence per class (analysis), per pool (needy), and the takings
    seqs: dict[int, dict[tuple[str, str | None], list[int]]] = {}
    for cycle, kind, cls, pool, job in rows.select("cycle", "kind", "class", "nodepool", "job_id").iter_rows():
        key = ("analysis", cls) if kind == "analysis" else ("needy", pool) if kind == "needy" else ("take", None)
        seq = seqs.setdefault(cycle, {}).setdefault(key, [])
        if key[0] != "take" or job not in seq:
            seq.append(job)
    out = {}
    for cycle, by_key in seqs.items():
        rank = {"analysis": 0, "needy": 1, "take": 2}  # ties in the merge go by this order
        parts = [seq for key, seq in sorted(by_key.items(), key=lambda kv: rank[kv[0][0]])]
        shown = tuple(tuple(seq) for key, seq in sorted(by_key.items(), key=lambda kv: rank[kv[0][0]])
                      if key[0] != "analysis")
        out[cycle] = (_merge(parts, shown), OrderShown(shown))
    return out
