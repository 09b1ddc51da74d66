"""`simulate`: the recorded workload through the closed loop, unchanged (the baseline) and changed.

The baseline is the workload simulated with rmref as it is; it is what validates the simulator
(compared with the logged history, `identity`), and what a change is measured against. A run
with no change is its own baseline.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Mapping
from dataclasses import dataclass

import polars as pl

from replay.apps.change import Change, apply_sets
from replay.apps.simulate.loop import Context, Run, simulate_run
from replay.apps.simulate.reconstruct import cycle_times, workload_from_log
from replay.apps.simulate.workload import Workload
from replay.model.machines.inventory import Inventory
from replay.model.logged import Logged, logged_decisions
from replay.model.settings import Assumption, user_allotment_assumed, users_shown_allotted
from replay.model.start import ReplayStart, replay_start
from replay.model.bootstrap import Bootstrap
from replay.model.published import existing_order, job_table_order, purge_marks
from replay.model.submission import submission_order
from replay.parsing.sources import InputError
from replay.progress import OnProgress


@dataclass(frozen=True)
class Simulated:
    """A simulation's inputs and both runs (`sim` is `baseline` when nothing is changed)."""

    change: Change
    boot: Bootstrap
    context: Context  # its `ranks` emptied once the runs are done (read by the runs only)
    workload: Workload
    baseline: Run
    sim: Run
    workload_from: str  # "log", or the workload file's path
    assumed: tuple[Assumption, ...] = ()  # the settings and machines read, as every command reads them
    inventory: Inventory | None = None  # the machines there before the log (the replay's start's), found once
    work_orders: pl.DataFrame | None = None  # every job's order (the replay's start's), found once


def prediction_epoch(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, default_ms: int) -> int:
    """The epoch getPrjCap adds to a job's target (ms): each logged projection's target less its
    mean initialization and its class's fudge (the median), else the cycle period."""
    fudge = {c.name: c.prediction_fudge for c in boot.classes}
    cls = tables["jobs"].select("job_id", "class").drop_nulls().unique("job_id", keep="last")
    rows = (tables["job_caps"].filter(pl.col("prj_t").is_not_null() & pl.col("prj_ti").is_not_null())
            .join(cls, on="job_id", how="left").select("prj_t", "prj_ti", "class"))
    gaps = [t - ti - fudge.get(c, 0) for t, ti, c in rows.iter_rows()]
    return int(statistics.median(gaps)) if gaps else default_ms


def context_from_log(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, logged: Logged | None = None) -> Context:
    """The log's cycles, cadence and the orders it reveals (see `loop`); `logged`: the RM's logged
    decisions, as the replay start read them (default: read here)."""
    cyc = tables["cycles"].filter(pl.col("cycle").is_not_null()).sort("cycle")
    if cyc.is_empty():
        raise InputError("no published schedule in the log: nothing to simulate (check that it has "
                         "`createState  Schedule sent` records)")
    times = tuple(t * 1000.0 for t in cycle_times(tables))
    ctx = Context(boot, tuple(cyc["cycle"].to_list()), times, tables["nodepools"],
                  logged=logged if logged is not None else logged_decisions(tables),
                  table_order=job_table_order(tables), submit_seq=submission_order(tables),
                  ranks=existing_order(tables), purge_marks=purge_marks(tables))
    # getPrjCap's epoch where no projection shows it: the cycles' period
    return dataclasses.replace(ctx, epoch_ms=prediction_epoch(tables, boot, int(ctx.period_ms) if len(times) > 1
                                                              else 10_000))


def submission_ranks(workload: Workload, logged: Mapping[int, int]) -> dict[int, int]:
    """Each job's place in submission order (JobByTimeSorter): by submission time, then by the
    log's order (which knows the ties of jobs submitted in the same millisecond), so that an edited
    submission time moves the job and the log's own workload keeps the log's order."""
    keys = {w.job_id: (w.submit, logged.get(w.job_id, w.job_id)) for w in workload.work}
    ranks: dict[tuple[float, int], int] = {}
    for key in sorted(set(keys.values())):
        ranks[key] = len(ranks)
    return {job: ranks[key] for job, key in keys.items()}


def log_context(tables: Mapping[str, pl.DataFrame], start: ReplayStart,
                workload: Workload | None = None) -> tuple[Context, Workload]:
    """The context of the log's own simulation and its workload (the log's, unless given), the
    work ranked in the order the RM met its submissions."""
    ctx = context_from_log(tables, start.boot, start.logged(tables))
    workload = workload or workload_from_log(tables, start.boot, start)
    return dataclasses.replace(ctx, submit_seq=submission_ranks(workload, ctx.submit_seq)), workload


def simulate(tables: Mapping[str, pl.DataFrame], change: Change | None = None, workload: Workload | None = None,
             boot: Bootstrap | None = None, workload_from: str = "log",
             progress: OnProgress | None = None, start: ReplayStart | None = None) -> Simulated:
    """Simulate the log's workload (or `workload`) at the log's cycles: the baseline, then the change."""
    change = change or Change()
    start = start or replay_start(tables, boot)
    boot = start.boot
    changed = apply_sets(boot, change.sets)
    ctx, workload = log_context(tables, start, workload)
    unnamed = sorted(w.job_id for w in workload.work if not w.class_name)
    if unnamed:
        # e.g. work there before a cut that the RM deferred throughout: no line it wrote names the class
        raise InputError(f"workload: the log never names the class of job(s) {', '.join(map(str, unnamed))}; "
                         "nor do its lines narrow it to a class of the configuration (no counting line shows a "
                         "policy of one): simulate needs every work's class (give it in a --workload file)")
    missing = sorted({w.class_name for w in workload.work} - {c.name for c in boot.classes})
    if missing:
        raise InputError(f"workload: class(es) {', '.join(missing)} are not defined in the configuration "
                         f"(classes: {', '.join(sorted(c.name for c in boot.classes))})")
    baseline = simulate_run(ctx, workload, boot, progress=progress, stage="simulating (baseline)")
    sim = baseline if change.identity else simulate_run(ctx, workload, changed, change.phases, progress,
                                                        "simulating (changed)")
    # the runs are done: the published orders they followed are read no more (about 28 MB on
    # i_mega24, held through the measures otherwise)
    ctx = dataclasses.replace(ctx, ranks={})
    return Simulated(change, boot, ctx, workload, baseline, sim, workload_from,
                     (*start.assumed, *changed.assumed, *_unread_allotments(tables, baseline, sim, boot)),
                     start.inventory, start.work_orders)


def _unread_allotments(tables: Mapping[str, pl.DataFrame], baseline: Run, sim: Run,
                       boot: Bootstrap) -> tuple[Assumption, ...]:
    """Each user whose allotment a simulated deferral rests on, ducc.users unread, and no line of
    the log shows (the global one is taken; a user's lines show the allotment the RM held it to)."""
    first = {**sim.unread_allotments, **baseline.unread_allotments}
    shown = users_shown_allotted(tables) if first else set()
    return tuple(user_allotment_assumed(user, job, reason, boot.config.global_allotment)
                 for user, (job, reason) in sorted(first.items()) if user not in shown)
