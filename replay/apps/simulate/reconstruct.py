"""The workload a log records, reconstructed for the simulator (see `workload` for the table).

Where each value comes from:
* submission (`time`): the first line that names the work; `admit_delay`: how long the
  Orchestrator took to hand it to the RM (its first published cycle less its submission);
* `start_delay`: the time from the RM's assignment to the process starting to initialize: the
  Orchestrator's `Initializing -> Running` line prints the initialization window it had reported
  one publication before, which dates the window's start (the median over the log's processes);
* `stop_delay`: the time from a process's removal to its Stopped report (the schedule's removals,
  else work's Completing to Completed publications, else a removed share the log ends still listing);
* `init`: the initialization time of the job's processes (the schedule's `^ms` of a process
  that reached Running; the median over the job's processes);
* `items`, `items_done`, `item_ms`: the Orchestrator's `jobUpdate` (total, completed when the
  job first appears, and the mean time of a completed item; errors count as done); work with no
  such line (none published while the log ran) takes its total and done from the RM's job rows;
  `item_profile`: the items in the order they completed, as (items, ms each) segments: the
  items one publication reports done beyond the last took, together, the growth of
  (completed x mean), so each segment is their mean. The simulation gives item k the k-th
  item's time of the profile (scaled to `item_ms` when that is edited) and `item_ms` to the rest;
* `duration`: a service or managed reservation runs this long after its first process starts
  running; a reservation is held this long after its assignment; `cancel`: a job that ended
  with work left, or work that ended before it ran, was canceled then (work the log ends only by
  the Orchestrator dropping it, `Gone`: GONE_PUBS publications before);
* node events are the `nodes` table's arrivals, deaths, returns and vary-offs; a node already
  there when the log began arrives at its first cycle.
What the log cannot give is assumed and said in `note` (and counted in the report).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import polars as pl

from replay.apps.simulate.fit import fit_item_times
from replay.apps.simulate.unnamed import unnamed_classes
from replay.apps.simulate.workload import (
    NODE_EVENTS,
    NodeEvent,
    StartShare,
    Workload,
    WorkSpec,
    item_profile,
)
from replay.model.inputs import job_descriptions
from replay.model.machines.inventory import Inventory
from replay.model.machines.liveness import ORDER_ALIKE, ORDER_OPEN
from replay.model.leaving import LEAVING, removals_before_the_log, unsure_removals
from replay.model.start import PREDATES, ReplayStart, replay_start
from replay.model.assembly import WORK_TYPES
from replay.model.bootstrap import Bootstrap
from replay.model.reads import narrow
from replay.model.start import node_liveness
from replay.parsing.sources import InputError
from replay.model.logorder import log_order
from rmref import UNLIMITED


def _seconds(column: str, t0: datetime) -> pl.Expr:
    return ((pl.col(column) - pl.lit(t0)).dt.total_milliseconds() / 1000.0).alias(column)


def cycle_times(tables: Mapping[str, pl.DataFrame]) -> list[float]:
    """Each published cycle's time, in seconds from the first (the RM's own cadence)."""
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    if cyc.is_empty():
        return []
    t0 = cyc["ts_start"][0]
    return [(t - t0).total_seconds() for t in cyc["ts_start"].to_list()]


def _origin(tables: Mapping[str, pl.DataFrame]) -> datetime:
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    if cyc.is_empty():
        raise InputError("no published schedule in the log: nothing to simulate (check that it has "
                         "`createState  Schedule sent` records)")
    t0: datetime = cyc["ts_start"][0]
    return t0


def start_delay(tables: Mapping[str, pl.DataFrame]) -> float | None:
    """Seconds from a process's assignment to the start of its initialization, or None when no
    process of the log shows it (see the module docstring)."""
    t0 = _origin(tables)
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    assigned = (sched.filter(pl.col("kind") == "addition").group_by("job_id", "share_id")
                .agg(pl.col("cycle").min().alias("assigned")))
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).select(
        "cycle", _seconds("ts_start", t0).alias("t"))
    ran = (tables["processes"].filter((pl.col("event") == "state") & (pl.col("state_from") == "Initializing")
                                      & (pl.col("state_to") == "Running") & (pl.col("init_ms") > 0)
                                      & pl.col("cycle").is_not_null())
           .select("job_id", "share_id", "cycle", "init_ms"))
    rows = (ran.join(assigned, on=["job_id", "share_id"])
            .join(cyc.rename({"cycle": "assigned", "t": "t_assigned"}), on="assigned")
            .join(cyc.with_columns(pl.col("cycle") + 1).rename({"t": "t_before"}), on="cycle")
            .select(pl.col("t_before") - pl.col("init_ms") / 1000.0 - pl.col("t_assigned")))
    if rows.is_empty():
        return None
    return max(0.0, _median(rows.to_series().to_list(), 0.0))


def _init_times(tables: Mapping[str, pl.DataFrame]) -> tuple[dict[int, float], dict[int, float]]:
    """(job -> seconds of initialization, job -> the least it can be).

    The first: the median over its processes that reached Running (a line shows it become Running,
    or leave Running: one running since before a mid-stream log began) of the last `^ms` the
    schedule showed for them. The second, for a job none of whose processes was seen running: the
    longest initialization window the schedule showed (it was still initializing then).
    """
    ran = (tables["processes"].filter(pl.col("event").is_in(["new", "state"])
                                      & ((pl.col("state_to") == "Running") | (pl.col("state_from") == "Running")))
           .select("job_id", "share_id").unique())
    shown = (tables["schedule"].filter((pl.col("kind") == "existing") & pl.col("init_ms").is_not_null())
             .group_by("job_id", "share_id").agg(pl.col("init_ms").max()))
    per = shown.join(ran, on=["job_id", "share_id"]).group_by("job_id").agg(pl.col("init_ms").median())
    least = shown.group_by("job_id").agg(pl.col("init_ms").max())
    return ({j: ms / 1000.0 for j, ms in per.iter_rows()}, {j: ms / 1000.0 for j, ms in least.iter_rows()})


def _ends(tables: Mapping[str, pl.DataFrame], t0: datetime) -> pl.DataFrame:
    """job -> (end, remaining then): the first publication that showed the work Completing or Completed."""
    ev = tables["job_events"].filter(pl.col("state_to").is_in(["Completing", "Completed"]) & pl.col("ts").is_not_null())
    return (ev.sort(log_order("ts")).group_by("job_id", maintain_order=True)
            .agg(pl.col("ts").first().alias("end"), pl.col("remaining").first().alias("left"))
            .with_columns(_seconds("end", t0)))


# publications from a cancel to the Orchestrator dropping the work from its map: Completing once, then
# Completed until it ages out (the fixtures' Orchestrator: three; a real one's aging is its configuration)
GONE_PUBS = 4


def _dropped(tables: Mapping[str, pl.DataFrame], t0: datetime, ends: Mapping[int, Any]) -> dict[int, float]:
    """job -> when it was canceled (seconds), for work the log ends only by `eventArrives  Gone`: no
    Completing or Completed line (work canceled before it was given a process), GONE_PUBS publications
    before the Orchestrator dropped it."""
    gone = (tables["job_events"].filter((pl.col("event") == "gone") & pl.col("ts").is_not_null())
            .group_by("job_id").agg(pl.col("ts").min()).with_columns(_seconds("ts", t0)))
    gap = median_gap(tables)
    return {job: t - GONE_PUBS * gap for job, t in gone.iter_rows() if job not in ends}


def logged_finish(tables: Mapping[str, pl.DataFrame]) -> dict[int, float]:
    """job -> seconds from the first cycle to the publication that first showed it ending."""
    return dict(_ends(tables, _origin(tables)).select("job_id", "end").iter_rows())


def _first_run(tables: Mapping[str, pl.DataFrame], t0: datetime) -> dict[int, float]:
    """job -> when its first process was assigned (seconds), the start the durations count from."""
    sched = tables["schedule"].filter((pl.col("kind") == "existing") & pl.col("host").is_not_null()
                                      & pl.col("ts").is_not_null())
    first = sched.group_by("job_id").agg(pl.col("ts").min()).with_columns(_seconds("ts", t0))
    return dict(first.iter_rows())


def _items(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Per job the Orchestrator's work counts: total, done when first seen, the last mean item time."""
    ev = tables["job_events"].filter(pl.col("event").is_in(["update", "arrives"]) & pl.col("total").is_not_null())
    done = pl.col("completed").fill_null(0) + pl.col("errors").fill_null(0)
    mean = pl.when(pl.col("mean").is_nan()).then(0.0).otherwise(pl.col("mean").fill_null(0.0))
    steps = (ev.sort(log_order("ts"))
             .with_columns(done.alias("done"), (pl.col("completed").fill_null(0) * mean).alias("spent"))
             .with_columns(pl.col("done").diff().over("job_id").fill_null(pl.col("done")).alias("n"),
                           pl.col("spent").diff().over("job_id").fill_null(pl.col("spent")).alias("ms")))
    segments = pl.struct(pl.col("n").alias("items"), (pl.col("ms") / pl.col("n")).clip(lower_bound=0.0).alias("ms"))
    updated = (steps.group_by("job_id", maintain_order=True)
               .agg(pl.col("total").last().alias("items"), pl.col("done").first().alias("items_done"),
                    pl.col("mean").filter(pl.col("mean").is_not_nan() & (pl.col("mean") > 0)).last().alias("item_ms"),
                    pl.col("done").last().alias("done_logged"),
                    segments.filter(pl.col("n") > 0).alias("item_profile"))
               .with_columns(pl.lit(False).alias("from_rm")))
    # work the Orchestrator published no change of while the log ran (e.g. one waiting on a pool
    # with no room, there before a cut) has no jobUpdate line: the RM's own job row gives its
    # questions and how many remain
    rows = tables["jobs"].filter(pl.col("nquest").is_not_null() & pl.col("remaining").is_not_null()
                                 & ~pl.col("job_id").is_in(updated["job_id"].implode()))
    done = pl.col("nquest") - pl.col("remaining")
    from_rm = (rows.sort(log_order()).group_by("job_id", maintain_order=True)
               .agg(pl.col("nquest").last().alias("items"), done.first().alias("items_done"),
                    pl.lit(None, pl.Float64).alias("item_ms"), done.last().alias("done_logged"))
               .with_columns(pl.lit([], updated.schema["item_profile"]).alias("item_profile"),
                             pl.lit(True).alias("from_rm")))
    return pl.concat([updated, from_rm.cast(dict(updated.schema))])  # type: ignore[arg-type]


def _max_processes(tables: Mapping[str, pl.DataFrame]) -> dict[int, int | None]:
    """The Orchestrator's process limit: the last 'Max shares adjusted' value, else the job row's."""
    adjusted = (tables["job_events"].filter((pl.col("event") == "max_shares") & pl.col("max_processes").is_not_null())
                .sort(log_order()).group_by("job_id", maintain_order=True).agg(pl.col("max_processes").last()))
    rows = (tables["jobs"].filter(pl.col("max_processes").is_not_null()).sort(log_order())
            .group_by("job_id", maintain_order=True).agg(pl.col("max_processes").first()))
    out = dict(rows.iter_rows())
    out.update(dict(adjusted.iter_rows()))
    return {j: (None if v is None or v >= UNLIMITED or v <= 0 else v) for j, v in out.items()}


def _median(values: list[float], default: float) -> float:
    values = sorted(v for v in values if v is not None and not math.isnan(v))
    if not values:
        return default
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def stop_delay(tables: Mapping[str, pl.DataFrame]) -> float | None:
    """Seconds from a process's removal to the Orchestrator reporting it Stopped: the median, over
    the shares the schedule removed, of the time until the schedule stops listing them; where none
    such, the time work took from Completing to Completed (`completion_stop_delay`); else, where the
    log ends with a removed share still listed (not purged: a purged one's node is gone), one
    publication period more than it was listed for after its removal (the least delay that keeps it
    listed)."""
    t0 = _origin(tables)
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).select("cycle", _seconds("ts_start", t0).alias("t"))
    removed = sched.filter(pl.col("kind") == "removal").group_by("job_id", "share_id").agg(pl.col("cycle").min())
    listed = sched.filter(pl.col("kind") == "existing").group_by("job_id", "share_id").agg(
        pl.col("cycle").max().alias("last"))
    gone = (removed.join(listed, on=["job_id", "share_id"])
            .with_columns((pl.col("last") + 1).alias("gone"))
            .join(cyc, on="cycle").join(cyc.rename({"cycle": "gone", "t": "t_gone"}), on="gone")
            .select(pl.col("t_gone") - pl.col("t")))
    if gone.height:
        return _median(gone.to_series().to_list(), 0.0)
    done = completion_stop_delay(tables)
    purged = sched.filter(pl.col("purged").fill_null(False)).select("job_id", "share_id").unique()
    still = (removed.join(listed.filter(pl.col("last") == cyc["cycle"].max()), on=["job_id", "share_id"])
             .join(purged, on=["job_id", "share_id"], how="anti").join(cyc, on="cycle"))
    if done is not None or still.is_empty():
        return done
    return float(max(cyc["t"].to_list()) - min(still["t"].to_list())) + median_gap(tables)


def completion_stop_delay(tables: Mapping[str, pl.DataFrame]) -> float | None:
    """Seconds from work's first Completing publication to its first Completed one, over the work
    that held processes as it began completing (the median; None where no such work ended): its
    processes stop `stop_delay` after the Completing publication, and the work is Completed at the
    first publication after with none left, so this delay keeps the log's Completed publication
    (`stop_delay` where the schedule removed no share)."""
    ev = tables["job_events"].filter(pl.col("state_to").is_in(["Completing", "Completed"]) & pl.col("ts").is_not_null())
    first = {(j, s): ts for j, s, ts in ev.sort(log_order("ts")).group_by("job_id", "state_to", maintain_order=True)
             .agg(pl.col("ts").first()).iter_rows()}
    starts = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle").select("cycle", "ts_start")
    held = set(tables["schedule"].filter((pl.col("kind") == "existing") & pl.col("host").is_not_null()
                                         & pl.col("cycle").is_not_null()).select("cycle", "job_id").iter_rows())
    gaps = []
    for (job, state), tc in first.items():
        td = first.get((job, "Completed"))
        before = starts.filter(pl.col("ts_start") < tc)["cycle"]
        if state == "Completing" and td is not None and td > tc and before.len() and (before[-1], job) in held:
            gaps.append((td - tc).total_seconds())
    return _median(gaps, 0.0) if gaps else None


# (time -> [(share id, host)] assigned then, share id -> removal time, [(time, items done)])
Timeline = tuple[dict[float, list[tuple[int, str]]], dict[int, float], list[tuple[float, int]]]


def _timelines(tables: Mapping[str, pl.DataFrame], t0: datetime) -> dict[int, Timeline]:
    """job -> (time -> [(share id, host)] assigned then, share id -> removal time, [(time, items done)]),
    times in ms from the first cycle: the log's own processes and completions, for the item fit."""
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null()).with_columns(
        (_seconds("ts", t0) * 1000.0).alias("ms"))
    out: dict[int, Timeline] = {}

    def entry(job: int) -> Timeline:
        return out.setdefault(job, ({}, {}, []))
    added = sched.filter(pl.col("kind") == "addition").unique(["job_id", "share_id"], keep="first", maintain_order=True)
    for job, sid, host, ms in added.select("job_id", "share_id", "host", "ms").iter_rows():
        entry(job)[0].setdefault(ms, []).append((sid, host))
    removed = (sched.filter(pl.col("kind") == "removal").group_by("job_id", "share_id").agg(pl.col("ms").min())
               .sort("job_id", "share_id"))
    for job, sid, ms in removed.iter_rows():
        entry(job)[1][sid] = ms
    ev = tables["job_events"].filter(pl.col("event").is_in(["update", "arrives"]) & pl.col("total").is_not_null()
                                     & pl.col("ts").is_not_null())
    done = (pl.col("completed").fill_null(0) + pl.col("errors").fill_null(0)).alias("done")
    for job, ms, n in ev.sort(log_order("ts")).select("job_id", _seconds("ts", t0) * 1000.0, done).iter_rows():
        entry(job)[2].append((ms, n))
    return out


PRESENT = f"{PREDATES}: taken as present from the start"
NO_ITEM_DONE = "no work item completed in the log"  # its item time is assumed (MEDIAN_OF_JOBS, NONE_OF_JOBS)
OPEN_ORDER = "no line tells which"  # a node's note: its order is one of several the log fits
MEDIAN_OF_JOBS = "the median of the log's jobs"  # of the mean item times the log shows for its jobs
NONE_OF_JOBS = "no job of the log completed one"  # (then 0 ms)


def projected_rates(notes: Mapping[int, str]) -> str:
    """The rate(s) the remaining work of the jobs run past the log's end (`notes`: job -> its
    workload note) is projected at, as their notes say: the mean observed, else an assumed one."""
    unseen = sorted(job for job, note in notes.items() if NO_ITEM_DONE in note)
    observed = "the mean item time the Orchestrator last reported"
    if not unseen:
        return observed
    bases = [b for b in (MEDIAN_OF_JOBS, NONE_OF_JOBS) if any(f"assumed: {b}" in notes[j] for j in unseen)]
    jobs = ", ".join(map(str, unseen[:10])) + (", ..." if len(unseen) > 10 else "")
    assumed = f"an item time assumed ({'; '.join(bases)})"
    if len(unseen) == len(notes):
        return f"{assumed}, none of them having completed an item in the log"
    return f"{observed}, or, for {len(unseen)} of them that completed no item in the log (job(s) {jobs}), {assumed}"


def workload_from_log(tables: Mapping[str, pl.DataFrame], boot: Bootstrap,
                      replay: ReplayStart | None = None) -> Workload:
    """Reconstruct the workload the log records (see the module docstring for every source)."""
    t0 = _origin(tables)
    begin = replay or replay_start(tables, boot)
    unknown = begin.inventory.unknown
    if unknown:  # the simulation places every process: each node's size must be known
        raise InputError(f"cannot simulate: the log never shows the size of {len(unknown)} node(s) "
                         f"({', '.join(unknown[:5])}{', ...' if len(unknown) > 5 else ''}) and its counters do "
                         "not settle them; give a DEBUG log or one that includes their arrival")
    rows = narrow(tables, "schedule", ("job_id", "refused", "cycle", "ts", "work_type", "memory_gb"))
    refused = set(rows.filter(pl.col("refused").fill_null(False))["job_id"].to_list())
    sched = rows.filter(~pl.col("refused").fill_null(False) & pl.col("cycle").is_not_null())
    del rows  # not held through the rest (a simulation's peak is in this function)
    admitted: dict[int, float] = dict(sched.group_by("job_id").agg(pl.col("ts").min())
                                      .with_columns(_seconds("ts", t0)).iter_rows())
    work_type = dict(sched.group_by("job_id").agg(pl.col("work_type").drop_nulls().first()).iter_rows())
    memory = dict(sched.group_by("job_id").agg(pl.col("memory_gb").drop_nulls().first()).iter_rows())
    named = pl.concat([tables[t].select("job_id", "ts") for t in ("jobs", "job_events", "processes")])
    submitted: dict[int, float] = dict(named.drop_nulls().group_by("job_id").agg(pl.col("ts").min())
                                       .with_columns(_seconds("ts", t0)).iter_rows())
    # who the work is: its submission, else (work there before the log began) what the log says of
    # it later, as every command reads it (replay.model.inputs.job_descriptions)
    desc = {r["job_id"]: r for r in job_descriptions(tables).filter(pl.col("user").is_not_null())
            .sort(log_order(), nulls_last=False).unique("job_id", keep="last", maintain_order=True)
            .iter_rows(named=True)}
    items = {r["job_id"]: r for r in _items(tables).iter_rows(named=True)}
    inits, least = _init_times(tables)
    ends = {r["job_id"]: r for r in _ends(tables, t0).iter_rows(named=True)}
    dropped = _dropped(tables, t0, ends)
    first_run = _first_run(tables, t0)
    limits = _max_processes(tables)
    delay = start_delay(tables)
    default_delay = 0.0 if delay is None else delay
    stopping = stop_delay(tables)
    period = median_gap(tables)
    default_stop = period if stopping is None else stopping
    default_init = _median(list(inits.values()), 0.0)
    means = [r["item_ms"] for r in items.values() if r["item_ms"] is not None]
    default_item = _median(means, 0.0)
    basis = MEDIAN_OF_JOBS if means else NONE_OF_JOBS  # where the item time of a job none of whose completed comes from
    running_before = {s.job_id for s in _start_shares(tables)}
    timelines = _timelines(tables, t0)
    leaving, leaving_notes = _leaving(tables, begin, default_stop)
    # work whose class no line the job table reads names (there before a cut, deferred throughout)
    unnamed = unnamed_classes(tables, boot.classes, (j for j in admitted if not desc.get(j, {}).get("class")))
    unprinted = _unprinted_sizes(tables, {j for j in begin.predates if not desc.get(j, {}).get("threads")},
                                 {j for j in begin.predates if j not in limits}, leaving)
    work = []
    for job in sorted(admitted):
        if job in refused:
            continue
        d = desc.get(job, {})
        notes = [PRESENT] if job in begin.predates else []
        # work there before the log began is there from its first cycle, whatever line names it first
        submit = admitted[job] if job in begin.predates else submitted.get(job, admitted[job])
        kind = WORK_TYPES.get(d.get("type_code") or "") or work_type.get(job) or "Job"
        it = items.get(job, {})
        total = it.get("items") or 0
        if it.get("from_rm"):
            notes.append(f"no Orchestrator update of it in the log: {total} work item(s), "
                         f"{it.get('items_done') or 0} done, as the RM's job table shows it")
        item_ms = it.get("item_ms")
        if kind == "Job" and item_ms is None:
            item_ms = default_item
            notes.append(f"{NO_ITEM_DONE}: {item_ms:.0f} ms per item assumed ({basis})")
        end = ends.get(job)
        if end is None and job in dropped:
            end = {"end": dropped[job], "left": 1}
            notes.append(f"the log ends it only by the Orchestrator dropping it (`Gone`): canceled {GONE_PUBS} "
                         "publications before (published Completing once, then Completed until it aged out; "
                         f"{GONE_PUBS - 1} publications assumed)")
        start = first_run.get(job)
        init = inits.get(job, 0.0 if kind == "Reservation" else None)
        if init is None:
            worked = _surviving_start(timelines.get(job), end, start)
            init, why = _unseen_init(least.get(job, 0.0), default_init, end, worked, default_delay, total, it,
                                     item_ms or 0.0, d.get("threads") or 1, period)
            notes.append(why)
        duration, cancel = _ending(kind, end, start, it, item_ms, job in running_before, default_delay + init,
                                   notes, basis)
        notes += leaving_notes.get(job, [])
        cls, why_cls = unnamed.get(job, (d.get("class") or "", ""))
        if why_cls:
            notes.append(why_cls)
        threads, limit, said = d.get("threads") or 1, limits.get(job), ""
        if kind == "Job" and job in unprinted:  # (a reservation's or service's are the RM's own)
            given_threads, given_limit, said = unprinted[job]
            threads, limit = given_threads or threads, limit if given_limit is None else given_limit
            if said:
                notes.append(said)
        work.append(WorkSpec(
            job, kind, d.get("user") or "", cls, d.get("memory_gb") or memory.get(job) or 1,
            threads, limit, submit,
            max(0.0, admitted[job] - submit), default_delay, default_stop, init,
            total, it.get("items_done") or 0, item_ms or 0.0, (), item_profile(it.get("item_profile")), duration,
            cancel, "; ".join(notes)))
    shares = _start_shares(tables, leaving)
    fitted = _with_item_times(work, tables, timelines, shares, default_stop)
    return Workload(fitted, _node_events(tables, boot, t0, begin.inventory), shares)


def _ending(kind: str, end: dict[str, Any] | None, start: float | None, it: dict[str, Any], item_ms: float | None,
            ran_before: bool, start_to_work: float, notes: list[str],
            basis: str = MEDIAN_OF_JOBS) -> tuple[float | None, float | None]:
    """A work's (duration, cancel time) from how the log ends it (None: not ended in the log); a job
    that runs past the log's end is projected, and `notes` says so (at `basis`, where the log shows no
    mean of its items). `start_to_work`: a process's start delay and initialization, after which a
    service's or managed reservation's duration runs."""
    total = it.get("items") or 0
    if kind == "Job":
        if end is None and total > (it.get("done_logged") or 0):
            # the mean the Orchestrator last reported, else (none completed) the median assumed for it
            rate = "the mean observed" if it.get("item_ms") is not None else f"assumed: {basis}"
            notes.append(f"runs past the log's end: {total - (it.get('done_logged') or 0)} item(s) left, "
                         f"projected at {item_ms or 0.0:.0f} ms each ({rate})")
        elif end is not None and (end["left"] or 0) > 0:
            return None, end["end"]
        return None, None
    if end is None:
        return None, None
    if start is None:
        return None, end["end"]  # ended before it was given anything: canceled
    if kind == "Reservation":
        return end["end"] - start, None
    if ran_before:  # its process ran before the log: its duration counts from the first cycle
        return max(0.0, end["end"] - start), None
    # a service or managed reservation runs its duration from its first process's start
    return max(0.0, end["end"] - (start + start_to_work)), None


def _with_item_times(work: list[WorkSpec], tables: Mapping[str, pl.DataFrame], timelines: dict[int, Timeline],
                     shares: Sequence[StartShare], default_stop: float) -> tuple[WorkSpec, ...]:
    """Each work with its items' times fitted to the processes the log shows it running."""
    times = [t * 1000.0 for t in cycle_times(tables)]
    fitted = []
    for spec in work:
        added, removed, updates = timelines.get(spec.job_id, ({}, {}, []))
        # a process leaving as the log began did none of the log's work
        running = [(s.share_id, s.host) for s in shares if s.job_id == spec.job_id and not s.leaving]
        item_times = fit_item_times(spec, times, added, removed, running, updates, default_stop * 1000.0)
        fitted.append(dataclasses.replace(spec, item_times=item_times))
    return tuple(fitted)


def median_gap(tables: Mapping[str, pl.DataFrame]) -> float:
    """The median time between cycles (seconds): the Orchestrator's publication period."""
    times = cycle_times(tables)
    return _median([b - a for a, b in itertools.pairwise(times)], 0.0)


def _surviving_start(timeline: Timeline | None, end: dict[str, Any] | None,
                     first: float | None) -> float | None:
    """When the first of the job's processes still held at its end was assigned (seconds): the
    earliest its work can have started. A process removed before the end, while still initializing,
    did none of it (a job preempted in initialization and given a process again later, say), so
    counting from the first assignment would let the initialization stretch over that gap."""
    if timeline is None or end is None:
        return first
    added, removed, _updates = timeline
    end_ms = end["end"] * 1000.0
    kept = [t for t, shares in added.items() if t <= end_ms
            and any(removed.get(sid, math.inf) >= end_ms for sid, _host in shares)]
    return min(kept) / 1000.0 if kept else first


def _unseen_init(least: float, default: float, end: dict[str, Any] | None, start: float | None, delay: float,
                 items: int, it: dict[str, Any], item_ms: float, threads: int, period: float) -> tuple[float, str]:
    """The initialization time of a job no process of which was seen running, and how it was chosen.

    It was still initializing when last shown (`least`). A job that nevertheless ended had run
    its work before the publication that showed it ending: if it did so on one process, its
    initialization lies between `least` and that publication less the start delay and the work
    (items x mean over the threads); the middle of that range is taken. Otherwise the log's median,
    unless that is no longer than `least`: then one publication `period` more, since a process
    still initializing at a window of `least` takes longer than that (at exactly `least` it would
    be running at the publication that showed it initializing).
    """
    profile = item_profile(it.get("item_profile"))
    work = (sum(n * ms for n, ms in profile) or items * item_ms) / 1000.0 / max(threads, 1)
    if end is not None and start is not None and (end["left"] or 0) == 0:
        most = end["end"] - start - delay - work
        if most >= least:
            init = (least + most) / 2
            return init, (f"no process was seen running: initialization {init:g} s, between the {least:g} s "
                          f"last shown and the {most:g} s its end allows")
    if default > least:
        return default, (f"no process was seen running: initialization {default:g} s assumed "
                         f"(the log's median, over the {least:g} s shown)")
    init = least + period
    return init, (f"no process was seen running: initialization {init:g} s assumed (one publication more "
                  f"than the {least:g} s it was last shown initializing; the log's median is {default:g} s)")


def _node_events(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, t0: datetime,
                 inventory: Inventory | None = None) -> tuple[NodeEvent, ...]:
    """The log's node arrivals, deaths, returns and vary-offs; nodes there before the log arrive at 0,
    and those down then (dead, varied off, or down either way: replay.model.machines.inventory) leave
    at 0 as they were, by a death or a vary-off (`inventory`: the machines there before the log, as
    the replay's start found them)."""
    ips = dict(tables["nodes"].filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
               .select("host", "ip").iter_rows())  # a heartbeat names the IP an arrival may not
    nodes = tables["nodes"].filter(pl.col("event").is_in(list(NODE_EVENTS)) & pl.col("ts").is_not_null())
    events = [NodeEvent(t, h, e, p, m, o, ip or ips.get(h)) for t, h, e, p, m, o, ip in nodes.sort(log_order("ts"))
              .with_columns(_seconds("ts", t0))
              .select("ts", "host", "event", "nodepool", "memory_mb", "share_order", "ip").iter_rows()]
    arrived = {e.host for e in events if e.event in ("arrive", "reactivate", "recover_node")}
    known = node_liveness(tables, boot, inventory)  # hosts heard from but never seen arriving: there already
    before = []
    for m in known.advance(0):
        if m.name in arrived:
            continue
        open_order = known.order_from.get(m.name) in (ORDER_ALIKE, ORDER_OPEN)
        note = (f"order {m.order} taken of {' or '.join(map(str, known.alike[m.name]))}: {OPEN_ORDER} "
                f"(report.json 'assumed': node {m.name}); the simulation's decisions on it rest on that"
                if open_order and m.name in known.alike else "")
        before.append(NodeEvent(0.0, m.name, "arrive", m.nodepool, m.memory_mb, m.order, m.ip or None, note))
        if not m.online:  # down when the log began: the simulated RM must not schedule on it either
            down = ("down when the log began" if m.varied_off or m.name not in known.unsure
                    else "down when the log began, dead or varied off, which the log does not say: taken as dead")
            before.append(NodeEvent(0.0, m.name, "vary_off" if m.varied_off else "death", note=down))
    return tuple(before + events)


def _leaving(tables: Mapping[str, pl.DataFrame], begin: ReplayStart,
             stop: float) -> tuple[set[tuple[int, int]], dict[int, list[str]]]:
    """(job, share id) of the processes there before the log began that were leaving as it began, and
    per job what the workload's note says of them. Those the replay's start takes as leaving
    (replay.model.leaving.removals_before_the_log) are; of those whose removal the first schedule lists
    on a machine the cycle cleared for a reservation, the log not telling whether the clearing took them
    (`unsure_removals`), the simulation must take one or the other: leaving where the log shows them
    gone sooner than `stop` seconds (the stop delay) after the first cycle, which a removal in that cycle
    could not be, else the clearing's."""
    before = begin.once.before if begin.once is not None else removals_before_the_log(tables)
    unsure = unsure_removals(tables, before)
    out = {(j, s) for _c, j, _h, s in before.iter_rows()}
    notes: dict[int, list[str]] = {}
    for _c, job, host, sid in before.iter_rows():
        notes.setdefault(job, []).append(f"process {host}.{sid} leaving as the log began (report.json 'assumed': "
                                         f"{LEAVING})")
    if unsure.is_empty():
        return out, notes
    gone = _gone_at(tables)
    for _c, job, host, sid in unsure.iter_rows():
        at = gone.get((job, sid))
        where = (f"the first schedule lists its removal on {host}, which that cycle cleared for a reservation, "
                 "and no line says which it was")
        if at is not None and at < stop:
            out.add((job, sid))
            notes.setdefault(job, []).append(
                f"process {host}.{sid} taken as leaving as the log began: {where}; the log shows it gone at "
                f"{at:g} s, sooner than the {stop:g} s stop delay after a removal in the first cycle")
        else:
            shown = "never shows it gone" if at is None else f"shows it gone at {at:g} s"
            notes.setdefault(job, []).append(
                f"process {host}.{sid} taken as removed by the first cycle's clearing of {host}: {where}; the log "
                f"{shown}, no sooner than the {stop:g} s stop delay allows")
    return out, notes


def _unprinted_sizes(tables: Mapping[str, pl.DataFrame], no_threads: set[int], no_limit: set[int],
                     leaving: set[tuple[int, int]]) -> dict[int, tuple[int | None, int | None, str]]:
    """job -> (threads, process limit, the note; None: not read here) for work there before the log began that no line
    describes (not fair share: the RM prints it only on arrival): its threads are getPrjCap's `NTh`
    (processes x threads) in the first cycle over the processes it held then (less those leaving);
    its limit, as the audit reads it (replay.model.inputs.cap_inputs), its highest logged base cap
    (a base cap is the least of the limit and the work's need, so never above it)."""
    jobs = sorted(no_threads | no_limit)
    if not jobs:
        return {}
    caps = tables["job_caps"].filter(pl.col("job_id").is_in(jobs) & pl.col("cycle").is_not_null())
    first = tables["schedule"].filter(pl.col("cycle").is_not_null())["cycle"].min()
    held = (tables["schedule"].filter((pl.col("cycle") == first) & (pl.col("kind") == "existing")
                                      & pl.col("host").is_not_null() & pl.col("job_id").is_in(jobs))
            .join(tables["schedule"].filter((pl.col("cycle") == first) & (pl.col("kind") == "addition"))
                  .select("job_id", "share_id"), on=["job_id", "share_id"], how="anti")
            .select("job_id", "share_id").unique())
    counted: dict[int, int] = {}
    for job, sid in held.iter_rows():
        if (job, sid) not in leaving:
            counted[job] = counted.get(job, 0) + 1
    nth = dict(caps.filter((pl.col("cycle") == first) & (pl.col("prj_nth") > 0)).sort(log_order())
               .group_by("job_id", maintain_order=True).agg(pl.col("prj_nth").first()).iter_rows())
    highest = dict(caps.filter(pl.col("base_cap") > 0).group_by("job_id").agg(pl.col("base_cap").max()).iter_rows())
    out = {}
    for job in jobs:
        said: list[str] = []
        threads: int | None = None
        limit: int | None = None
        n, k = nth.get(job), counted.get(job, 0)
        if job in no_threads and n is not None and k and n % k == 0:
            threads = n // k
            said.append(f"{threads} thread(s) per process: getPrjCap's {n} over the {k} process(es) it held "
                        "(no line prints its threads)")
        elif job in no_threads:
            threads = 1
            said.append("1 thread per process assumed (no line prints its threads, nor getPrjCap's with a process)")
        if job in no_limit and job in highest:
            limit = highest[job]
            said.append(f"process limit {limit} taken from its highest base cap (no line prints its limit; the "
                        "limit is never below it)")
        out[job] = (threads, limit, "; ".join(said))
    return out


def _gone_at(tables: Mapping[str, pl.DataFrame]) -> dict[tuple[int, int], float]:
    """(job, share id) -> seconds from the first cycle to the first schedule that no longer lists the
    process (the Orchestrator had reported it Stopped), for those the log shows go."""
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null()
                                      & (pl.col("kind") == "existing"))
    times = dict(zip(sorted(tables["cycles"].filter(pl.col("cycle").is_not_null())["cycle"].to_list()),
                     cycle_times(tables), strict=True))
    order = sorted(times)
    after = dict(itertools.pairwise(order))
    last = sched.group_by("job_id", "share_id").agg(pl.col("cycle").max())
    return {(j, s): times[after[c]] for j, s, c in last.iter_rows() if c in after}


def _start_shares(tables: Mapping[str, pl.DataFrame],
                  leaving: set[tuple[int, int]] | frozenset[tuple[int, int]] = frozenset()) -> tuple[StartShare, ...]:
    """The processes the first cycle's schedule lists as held (not added in it): they predate the log
    (`leaving`: (job, share id) of those leaving as it began)."""
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    if sched.is_empty():
        return ()
    first = sched["cycle"].min()
    rows = sched.filter(pl.col("cycle") == first)
    held = (rows.filter(pl.col("kind") == "existing")
            .join(rows.filter(pl.col("kind") == "addition").select("job_id", "share_id"),
                  on=["job_id", "share_id"], how="anti"))
    # a process the log shows leaving Initializing was still initializing when the log began
    t0 = _origin(tables)
    left = (tables["processes"].filter((pl.col("state_from") == "Initializing") & pl.col("state_to").is_not_null()
                                       & (pl.col("state_to") != "Initializing") & pl.col("ts").is_not_null())
            .sort(log_order("ts")).unique(["host", "share_id"], keep="first").with_columns(_seconds("ts", t0))
            .select("host", "share_id", "ts"))
    running_from = {(h, s): ts for h, s, ts in left.iter_rows()}
    return tuple(StartShare(j, h, s, running_from.get((h, s)), (j, s) in leaving) for j, h, s in held.select(
        "job_id", "host", "share_id").unique(maintain_order=True).sort("job_id", "share_id").iter_rows())


