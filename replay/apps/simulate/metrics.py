"""What a simulation reports: three histories side by side (logged, baseline, sim), one measure each.

Every figure is computed the same way for the three: a `History` holds, per cycle, the processes
each job held after the cycle, the quantum shares in use and the capacity online, the users with
work, and the shares taken from running work; per job, when it was first given a process and
when the Orchestrator first showed it ending. `logged_history` reads one from the log, `run_history`
from a simulation; `report` and the tables compare them.

Quantum shares are counted in the log's quantum (a process of a job of M GB holds ceil(M/q)), so
a quantum change does not change the unit; utilisation is a ratio in each run's own quantum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.measures import jain, logged_held
from replay.apps.reports import SimAssumed, SimulateReport, WorkloadSummary, as_json, report_json
from replay.apps.simulate.loop import Run
from replay.apps.simulate.reconstruct import PRESENT, logged_finish
from replay.apps.simulate.simulation import Simulated
from replay.apps.simulate.workload import write_workload
from replay.model.logged import logged_decisions
from replay.model.nodes import cycle_capacity
from replay.model.orders import with_quanta
from replay.model.reads import narrow

SIDES = ("logged", "baseline", "sim")
SCHEDULER_REASONS = ("shrink", "reservation", "defrag")  # shares taken from running work (not node purges)


@dataclass(frozen=True)
class History:
    """One history of the cluster, in the quantities the report compares."""

    held: dict[tuple[int, int], int]  # (cycle, job) -> processes held after the cycle
    used: dict[int, tuple[int, int]]  # cycle -> (quantum shares in use, capacity online), the run's quantum
    users: dict[int, tuple[str, ...]]  # cycle -> users with work
    taken: dict[tuple[int, int], tuple[int, str]]  # (job, share) -> (cycle, why) the scheduler took it
    first_share: dict[int, float]  # job -> seconds of its first assignment
    finish: dict[int, float]  # job -> seconds of the publication that first showed it ending


def run_history(run: Run) -> History:
    """A simulation's history."""
    taken: dict[tuple[int, int], tuple[int, str]] = {}
    for cycle, job, sid, why in run.preempted:
        taken.setdefault((job, sid), (cycle, why))
    return History({(c, j): p for c, j, p in run.held}, {c: (u, k) for c, u, k in run.used}, dict(run.users),
                   taken, dict(run.first_share), dict(run.finish))


def logged_history(tables: Mapping[str, pl.DataFrame], sim: Simulated) -> History:
    """The log's own history, measured as a simulation's is."""
    quantum = sim.boot.config.quantum_gb
    ctx = sim.context
    logged = ctx.logged or logged_decisions(tables)  # a context built from the log has them already
    # the capacity the report plots and the TUI's Nodes tab lists: the one node model's (first:
    # the machines' model is built while less of the log is held)
    capacity = cycle_capacity(tables, sim.boot, sim.inventory)
    held = {(c, j): p for c, j, p in logged_held(tables, quantum, sim.boot, sim.work_orders).select(
        "cycle", "job_id", "processes").iter_rows()}
    sched = narrow(tables, "schedule", ("cycle", "job_id", "kind", "host", "memory_gb", "refused")).filter(
        pl.col("cycle").is_not_null() & ~pl.col("refused").fill_null(False))
    existing = with_quanta(sched.filter(pl.col("host").is_not_null() & (pl.col("kind") == "existing")), tables,
                           quantum, sim.boot, sim.work_orders)
    in_use = dict(existing.group_by("cycle").agg(pl.col("quanta").sum()).iter_rows())
    used = {c: (in_use.get(c, 0), capacity.get(c, 0)) for c in ctx.cycles}
    owner = {w.job_id: w.user for w in sim.workload.work}
    users = {c: tuple(sorted({owner[j] for j in jobs if j in owner}))
             for c, jobs in sched.group_by("cycle").agg(pl.col("job_id").unique()).iter_rows()}
    taken: dict[tuple[int, int], tuple[int, str]] = {}
    for kind, per_cycle in (("shrink", logged.evictions), ("defrag", logged.defrag)):
        for cycle in sorted(per_cycle):
            for job, shares in per_cycle[cycle].items():
                for _host, sid in shares:
                    if sid is not None:  # a purge line names no share: not the scheduler's choice
                        taken.setdefault((job, sid), (cycle, kind))
    t0 = ctx.times[0] / 1000.0
    times = dict(zip(ctx.cycles, ctx.times, strict=True))
    first = (sched.filter(pl.col("host").is_not_null() & (pl.col("kind") == "addition"))
             .group_by("job_id").agg(pl.col("cycle").min()))
    first_share = {j: times[c] / 1000.0 - t0 for j, c in first.iter_rows() if c in times}
    return History(held, used, users, taken, first_share, logged_finish(tables))


# ---------------------------------------------------------------------------------------------

def _mean(values: Iterable[float | None]) -> float | None:
    xs = [v for v in values if v is not None]
    return round(sum(xs) / len(xs), 6) if xs else None


def _pct_errors(pairs: Iterable[tuple[float | None, float | None, float | None]]) -> list[float]:
    """|a - b| as a percentage of the reference turnaround, over the pairs where both ended."""
    return sorted(abs(a - b) / ta * 100.0 for a, b, ta in pairs if a is not None and b is not None and ta)


def nearest_rank(values: Sequence[float], q: float) -> float | None:
    """The q-quantile by nearest rank (the smallest value with at least q of them at or below it)."""
    if not values:
        return None
    return values[max(0, math.ceil(q * len(values)) - 1)]


def process_orders(sim: Simulated) -> dict[int, int]:
    """job -> quantum shares one of its processes holds, in the log's quanta of its own pool tree."""
    return {w.job_id: sim.boot.process_order(w.class_name, w.memory_gb) for w in sim.workload.work}


@dataclass(frozen=True)
class Measured:
    """The three histories of a simulation and the per-job table built from them."""

    sim: Simulated
    sides: dict[str, History]
    jobs: pl.DataFrame  # one row per piece of work of the workload
    cycles: pl.DataFrame  # one row per cycle (`per_cycle`)
    rm: dict[str, Any] | None = None  # the real Java RM's runs, when `simulate --rm` made them (replay.javarm)


def measure(tables: Mapping[str, pl.DataFrame], sim: Simulated,
            given: Mapping[str, History] | None = None) -> Measured:
    """Measure the log, the baseline and the change the same way (`given`: sides measured elsewhere,
    e.g. the Java RM's runs, in place of rmref's)."""
    sides = {"logged": logged_history(tables, sim), "baseline": run_history(sim.baseline),
             "sim": run_history(sim.sim)} | dict(given or {})
    rows = []
    for w in sorted(sim.workload.work, key=lambda w: w.job_id):
        row = {"job_id": w.job_id, "work_type": w.work_type, "user": w.user, "class": w.class_name,
               "submit": w.submit}
        for side, h in sides.items():
            finish, first = h.finish.get(w.job_id), h.first_share.get(w.job_id)
            row[f"finish_{side}"] = finish
            row[f"turnaround_{side}"] = None if finish is None else round(finish - w.submit, 3)
            row[f"wait_{side}"] = None if first is None else round(first - w.submit, 3)
        row["projected"] = "runs past the log's end" in w.note
        row["predates"] = PRESENT in w.note
        row["note"] = w.note or None
        rows.append(row)
    schema = {"job_id": pl.Int64, "work_type": pl.String, "user": pl.String, "class": pl.String,
              "submit": pl.Float64}
    for side in SIDES:
        schema |= {f"finish_{side}": pl.Float64, f"turnaround_{side}": pl.Float64, f"wait_{side}": pl.Float64}
    schema |= {"projected": pl.Boolean, "predates": pl.Boolean, "note": pl.String}
    jobs = pl.DataFrame(rows, schema=schema, orient="row")
    return Measured(sim, sides, jobs, per_cycle(sim, sides))


def identity(m: Measured, side: str = "baseline") -> dict[str, Any]:
    """A side (the baseline) against the logged history: completion times per job, shares per job-cycle."""
    jobs = m.jobs
    errors = _pct_errors(zip(jobs[f"finish_{side}"], jobs["finish_logged"], jobs["turnaround_logged"], strict=True))
    logged, base = m.sides["logged"].held, m.sides[side].held
    keys = set(logged) | set(base)
    same = sum(logged.get(k, 0) == base.get(k, 0) for k in keys)
    median, p90 = nearest_rank(errors, 0.5), nearest_rank(errors, 0.9)
    return {"jobs": len(errors),
            "finish_error_median_pct": None if median is None else round(median, 6),
            "finish_error_p90_pct": None if p90 is None else round(p90, 6),
            "shares_match": round(same / len(keys), 6) if keys else None,
            "job_cycles": len(keys)}


def _group(m: Measured, key: str) -> dict[str, dict[str, float | None]]:
    """per_class / per_user: mean turnaround, wait (over the jobs that ended, or got a process, on
    that side) and quantum shares held after each cycle, averaged over the cycles."""
    orders, n = process_orders(m.sim), len(m.sim.context.cycles)
    name_of = {w.job_id: (w.class_name if key == "class" else w.user) for w in m.sim.workload.work}
    out: dict[str, dict[str, float | None]] = {}
    for (group,), rows in sorted(m.jobs.group_by(key), key=lambda g: g[0][0]):
        entry: dict[str, float | None] = {"jobs": rows.height}
        for side in SIDES:
            entry[f"finished_{side}"] = rows[f"finish_{side}"].drop_nulls().len()
            entry[f"mean_turnaround_{side}"] = _mean(rows[f"turnaround_{side}"])
            entry[f"mean_wait_{side}"] = _mean(rows[f"wait_{side}"])
        out[group] = entry
    for side in SIDES:
        total: dict[str, int] = dict.fromkeys(out, 0)
        for (_c, job), p in m.sides[side].held.items():
            if job in name_of:
                total[name_of[job]] += p * orders[job]
        for name, entry in out.items():
            entry[f"mean_shares_{side}"] = round(total[name] / n, 6) if n else 0.0
    return out


def per_cycle(sim: Simulated, sides: Mapping[str, History]) -> pl.DataFrame:
    """cycles.parquet: per cycle and side, the scheduler's takings, utilisation and fairness."""
    ctx, orders = sim.context, process_orders(sim)
    owner = {w.job_id: w.user for w in sim.workload.work}
    t0 = ctx.times[0]
    cols: dict[str, list[Any]] = {"cycle": list(ctx.cycles), "time": [round((t - t0) / 1000.0, 3) for t in ctx.times]}
    for side in SIDES:
        h = sides[side]
        preempted: dict[int, int] = {}
        defrag: dict[int, int] = {}
        for cycle, why in h.taken.values():
            preempted[cycle] = preempted.get(cycle, 0) + 1
            if why == "defrag":
                defrag[cycle] = defrag.get(cycle, 0) + 1
        per_user: dict[int, dict[str, int]] = {}
        for (c, job), p in h.held.items():
            if job in owner:
                users = per_user.setdefault(c, {})
                users[owner[job]] = users.get(owner[job], 0) + p * orders[job]
        fair = []
        for c in ctx.cycles:
            shares = per_user.get(c, {})
            fair.append(jain([shares.get(u, 0) for u in h.users.get(c, ())]))
        cols[f"preemptions_{side}"] = [preempted.get(c, 0) for c in ctx.cycles]
        cols[f"defrag_takes_{side}"] = [defrag.get(c, 0) for c in ctx.cycles]
        cols[f"used_{side}"] = [h.used.get(c, (0, 0))[0] for c in ctx.cycles]
        cols[f"capacity_{side}"] = [h.used.get(c, (0, 0))[1] for c in ctx.cycles]
        cols[f"fairness_{side}"] = fair
    schema = {"cycle": pl.UInt32, "time": pl.Float64}
    for side in SIDES:
        schema |= {f"preemptions_{side}": pl.Int64, f"defrag_takes_{side}": pl.Int64, f"used_{side}": pl.Int64,
                   f"capacity_{side}": pl.Int64, f"fairness_{side}": pl.Float64}
    return pl.DataFrame(cols, schema=schema)


def shares_frame(m: Measured) -> pl.DataFrame:
    """shares.parquet: per cycle and job, the processes and quantum shares held after the cycle, each side."""
    orders = process_orders(m.sim)
    spec = {w.job_id: w for w in m.sim.workload.work}
    keys = sorted({k for h in m.sides.values() for k in h.held if k[1] in spec})
    cols: dict[str, list[Any]] = {"cycle": [c for c, _ in keys], "job_id": [j for _, j in keys],
                             "user": [spec[j].user for _, j in keys], "class": [spec[j].class_name for _, j in keys]}
    for side in SIDES:
        held = m.sides[side].held
        cols[f"processes_{side}"] = [held.get(k, 0) for k in keys]
        cols[f"qshares_{side}"] = [held.get(k, 0) * orders[k[1]] for k in keys]
    schema = {"cycle": pl.UInt32, "job_id": pl.Int64, "user": pl.String, "class": pl.String}
    for side in SIDES:
        schema |= {f"processes_{side}": pl.Int64, f"qshares_{side}": pl.Int64}
    return pl.DataFrame(cols, schema=schema)


def report(m: Measured) -> dict[str, Any]:
    """report.json (times in seconds from the log's first cycle; 6 decimals)."""
    sim, cycles, jobs = m.sim, m.cycles, m.jobs
    projected = jobs.filter(pl.col("projected"))["job_id"].to_list()
    present = jobs.filter(pl.col("predates"))["job_id"].to_list()  # submitted before the log began

    def triple(fn: Callable[[str], Any]) -> dict[str, Any]:
        return {side: fn(side) for side in SIDES}

    def util(side: str) -> float | None:
        used, cap = cycles[f"used_{side}"], cycles[f"capacity_{side}"]
        return _mean(u / c for u, c in zip(used, cap, strict=True) if c)

    return as_json(SimulateReport(
        cycles=len(sim.context.cycles),
        set=dict(sim.change.sets),
        scheduler=sim.change.scheduler,
        changed=not sim.change.identity,
        workload=WorkloadSummary(sim.workload_from, len(sim.workload.work), len(sim.workload.nodes),
                                 len(sim.workload.shares), projected, present),
        jobs=jobs.drop("projected", "predates", "note").to_dicts(),
        identity=identity(m),
        per_class=_group(m, "class"),
        per_user=_group(m, "user"),
        preemptions=triple(lambda s: len(m.sides[s].taken)),
        defrag_takes=triple(lambda s: sum(1 for _c, why in m.sides[s].taken.values() if why == "defrag")),
        utilisation=triple(util),
        fairness=triple(lambda s: _mean(v for v in cycles[f"fairness_{s}"] if v is not None)),
        assumed=SimAssumed(sim.context.epoch_ms, _first(w.start_delay for w in sim.workload.work),
                           _first(w.stop_delay for w in sim.workload.work), list(sim.assumed)),
        rm=m.rm,
    ))


def _first(values: Iterable[float]) -> float | None:
    return next(iter(values), None)


def write_simulation(m: Measured, out: Path) -> dict[str, Any]:
    """OUT/report.json, jobs.parquet, shares.parquet, cycles.parquet, workload.parquet (byte-identical
    for the same input); returns the report."""
    out.mkdir(parents=True, exist_ok=True)
    rep = report(m)
    m.jobs.write_parquet(out / "jobs.parquet", compression="zstd", statistics=False)
    shares_frame(m).write_parquet(out / "shares.parquet", compression="zstd", statistics=False)
    m.cycles.write_parquet(out / "cycles.parquet", compression="zstd", statistics=False)
    write_workload(m.sim.workload, out / "workload.parquet")
    (out / "report.json").write_text(report_json(rep, allow_nan=False))
    return rep


def triple_line(values: Mapping[str, object]) -> str:
    """`logged / baseline / sim` in one string."""
    return " / ".join("-" if values[s] is None else f"{values[s]:,}" if isinstance(values[s], int)
                      else f"{values[s]:.3f}" for s in SIDES)
