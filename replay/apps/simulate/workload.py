"""The workload the simulator replays: work, node events, processes at the start (one table).

`OUT/workload.parquet` holds one row per piece of work (`kind` work), per node event (`node`) and
per process already running when the log began (`share`; its `event` "leaving": its removal was
decided before the log began, and it stops as the log begins). Times are seconds from the log's first
cycle. A user may edit it (submit times, work, memory, node outages) and run
`rmreplay simulate LOG --workload FILE` on the result; `replay.apps.simulate.reconstruct` says
where each value comes from in a log.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from replay.model.assembly import WORK_TYPES
from replay.parsing.sources import InputError
from replay.parsing.tables import Schema

SEGMENT = pl.Struct({"items": pl.Int64, "ms": pl.Float64})
LEAVING = "leaving"  # a share row's event: its removal was decided before the log began
NODE_EVENTS = ("arrive", "death", "reactivate", "recover", "recover_node", "vary_off", "vary_on")
SCHEMA: Schema = {
    "kind": pl.String, "job_id": pl.Int64, "work_type": pl.String, "user": pl.String, "class": pl.String,
    "memory_gb": pl.Int64, "threads": pl.Int64, "max_processes": pl.Int64, "time": pl.Float64,
    "admit_delay": pl.Float64, "start_delay": pl.Float64, "stop_delay": pl.Float64, "init": pl.Float64,
    "items": pl.Int64, "items_done": pl.Int64, "item_ms": pl.Float64, "item_times": pl.List(pl.Float64),
    "item_profile": pl.List(SEGMENT), "duration": pl.Float64,
    "cancel": pl.Float64,
    "host": pl.String, "event": pl.String, "nodepool": pl.String, "memory_mb": pl.Int64,
    "share_order": pl.Int64, "ip": pl.String, "share_id": pl.Int64, "note": pl.String,
}
REQUIRED = {  # columns each kind of row needs a value in
    "work": ("job_id", "work_type", "user", "class", "memory_gb", "threads", "time", "admit_delay",
             "start_delay", "stop_delay", "init", "items", "items_done", "item_ms"),
    "node": ("time", "host", "event"),
    "share": ("job_id", "host", "share_id"),
}


@dataclass(frozen=True)
class WorkSpec:
    """One job, service or reservation: what it asks for and the work it brings."""

    job_id: int
    work_type: str  # Job / Service / Reservation / ManagedReservation
    user: str
    class_name: str
    memory_gb: int
    threads: int
    max_processes: int | None  # None: no limit
    submit: float  # seconds from the first cycle
    admit_delay: float
    start_delay: float
    stop_delay: float
    init: float
    items: int
    items_done: int
    item_ms: float
    item_times: tuple[float, ...] = ()  # ms each hand-out of an item keeps a thread busy, in order
    item_profile: tuple[tuple[int, float], ...] = ()  # (items, ms each), in completion order
    duration: float | None = None
    cancel: float | None = None
    note: str = ""

    @property
    def is_job(self) -> bool:
        """A job (work items), not a service, managed reservation or reservation."""
        return self.work_type == "Job"


@dataclass(frozen=True)
class NodeEvent:
    """A node arriving, dying, returning or being varied off or on."""

    time: float
    host: str
    event: str
    nodepool: str | None = None
    memory_mb: int | None = None
    share_order: int | None = None
    ip: str | None = None
    note: str = ""  # what the log does not tell of it and was taken (a node there before the log began)


@dataclass(frozen=True)
class StartShare:
    """A process the job already ran when the log began."""

    job_id: int
    host: str
    share_id: int
    running_from: float | None = None  # when it left Initializing (s from the first cycle); None: before the log
    leaving: bool = False  # its removal decided before the log began: it does no more work, and stops


@dataclass(frozen=True)
class Workload:
    """Everything the simulation replays."""

    work: tuple[WorkSpec, ...]
    nodes: tuple[NodeEvent, ...]
    shares: tuple[StartShare, ...] = ()

    def frame(self) -> pl.DataFrame:
        """The workload as one table (workload.parquet's rows, in a stable order)."""
        rows = [{"kind": "work", "job_id": w.job_id, "work_type": w.work_type, "user": w.user,
                 "class": w.class_name, "memory_gb": w.memory_gb, "threads": w.threads,
                 "max_processes": w.max_processes, "time": w.submit, "admit_delay": w.admit_delay,
                 "start_delay": w.start_delay, "stop_delay": w.stop_delay, "init": w.init, "items": w.items,
                 "items_done": w.items_done, "item_ms": w.item_ms, "item_times": list(w.item_times),
                 "item_profile": [{"items": n, "ms": ms} for n, ms in w.item_profile],
                 "duration": w.duration, "cancel": w.cancel, "note": w.note or None}
                for w in self.work]
        rows += [{"kind": "node", "time": n.time, "host": n.host, "event": n.event, "nodepool": n.nodepool,
                  "memory_mb": n.memory_mb, "share_order": n.share_order, "ip": n.ip, "note": n.note or None}
                 for n in self.nodes]
        rows += [{"kind": "share", "job_id": s.job_id, "host": s.host, "share_id": s.share_id,
                  "time": s.running_from, "event": LEAVING if s.leaving else None}
                 for s in self.shares]  # a share's time: when it began running
        return pl.DataFrame(rows, schema=SCHEMA, orient="row") if rows else pl.DataFrame(schema=SCHEMA)


def write_workload(workload: Workload, path: Path) -> None:
    """workload.parquet (byte-identical for the same workload)."""
    workload.frame().write_parquet(path, compression="zstd", statistics=False)


def read_workload(path: str | Path) -> Workload:
    """A workload file (Parquet) back into a Workload; InputError when it cannot be used."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--workload {path}: no such file")
    try:
        frame = pl.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - a damaged or foreign file: say which and why, in one line
        raise InputError(f"--workload {path}: not a workload table ({type(exc).__name__}: {exc})") from None
    return workload_from_frame(frame, str(path))


def workload_from_frame(frame: pl.DataFrame, name: str = "workload") -> Workload:
    """Validate a workload table (columns, types, values) and build the Workload."""
    missing = [c for c in SCHEMA if c not in frame.columns]
    if missing:
        raise InputError(f"{name}: missing column(s) {', '.join(missing)} (a workload table has "
                         f"{', '.join(SCHEMA)}; `rmreplay simulate LOG -o OUT` writes one)")
    try:
        frame = frame.select([pl.col(c).cast(t, strict=True) for c, t in SCHEMA.items()])
    except Exception as exc:  # noqa: BLE001 - whichever cast fails, said in one line
        raise InputError(f"{name}: a column has values of the wrong type ({type(exc).__name__}: "
                         f"{str(exc).splitlines()[0]})") from None
    unknown = frame.filter(~pl.col("kind").is_in(list(REQUIRED)) | pl.col("kind").is_null())
    if unknown.height:
        raise InputError(f"{name}: row kind {unknown['kind'][0]!r} is none of {', '.join(REQUIRED)}")
    for kind, needed in REQUIRED.items():
        rows = frame.filter(pl.col("kind") == kind)
        for column in needed:
            nulls = rows.filter(pl.col(column).is_null() | (pl.col(column).is_nan() if rows.schema[column]
                                                           == pl.Float64 else pl.lit(False)))
            if nulls.height:
                raise InputError(f"{name}: {nulls.height} {kind} row(s) have no {column} "
                                 f"(first: {_describe(nulls.row(0, named=True))})")
    work = [WorkSpec(r["job_id"], r["work_type"], r["user"], r["class"], r["memory_gb"], r["threads"],
                     r["max_processes"], r["time"], r["admit_delay"], r["start_delay"], r["stop_delay"], r["init"],
                     r["items"], r["items_done"], r["item_ms"], tuple(r["item_times"] or ()),
                     item_profile(r["item_profile"]), r["duration"], r["cancel"], r["note"] or "")
            for r in frame.filter(pl.col("kind") == "work").iter_rows(named=True)]
    _check_work(work, name)
    nodes = [NodeEvent(r["time"], r["host"], r["event"], r["nodepool"], r["memory_mb"], r["share_order"], r["ip"],
                       r["note"] or "")
             for r in frame.filter(pl.col("kind") == "node").iter_rows(named=True)]
    bad = [n for n in nodes if n.event not in NODE_EVENTS]
    if bad:
        raise InputError(f"{name}: node event {bad[0].event!r} ({bad[0].host}) is none of {', '.join(NODE_EVENTS)}")
    share_rows = frame.filter(pl.col("kind") == "share")
    odd = share_rows.filter(pl.col("event").is_not_null() & (pl.col("event") != LEAVING))
    if odd.height:
        raise InputError(f"{name}: share row event {odd['event'][0]!r} (job {odd['job_id'][0]}) is not "
                         f"{LEAVING!r} (a process leaving as the log began) nor empty")
    shares = [StartShare(r["job_id"], r["host"], r["share_id"], r["time"], r["event"] == LEAVING)
              for r in share_rows.iter_rows(named=True)]
    return Workload(tuple(work), tuple(sorted(nodes, key=lambda n: n.time)), tuple(shares))


def item_profile(segments: list[dict[str, Any]] | None) -> tuple[tuple[int, float], ...]:
    """A work's item-time profile, (items, ms) per segment, from its stored rows (empty segments left out)."""
    return tuple((s["items"], s["ms"]) for s in segments or () if s and s["items"] and s["ms"] is not None)


def _describe(row: dict[str, Any]) -> str:
    return f"job {row['job_id']}" if row.get("job_id") is not None else f"host {row.get('host')}"


def _check_work(work: list[WorkSpec], name: str) -> None:
    """Values a simulation cannot run with: say which job and what is wrong."""
    seen: set[int] = set()
    for w in work:
        problem = (
            "appears twice" if w.job_id in seen
            else f"work_type {w.work_type!r} is none of {', '.join(WORK_TYPES.values())}"
            if w.work_type not in WORK_TYPES.values()
            else "memory_gb must be positive" if w.memory_gb <= 0
            else "threads must be positive" if w.threads <= 0
            else "items and items_done must be >= 0, items_done <= items" if not 0 <= w.items_done <= max(w.items, 0)
            else "item_ms must be a positive number" if w.is_job and w.items > w.items_done and not w.item_ms > 0
            else "admit_delay, start_delay, stop_delay and init must be >= 0"
            if min(w.admit_delay, w.start_delay, w.stop_delay, w.init) < 0 or math.isinf(w.init)
            else "duration must be >= 0" if w.duration is not None and w.duration < 0
            else ""
        )
        if problem:
            raise InputError(f"{name}: job {w.job_id}: {problem}")
        seen.add(w.job_id)
