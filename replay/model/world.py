"""Rebuild what the RM knew at the start of each cycle from the parsed tables (rmref's inputs).

State carried from cycle to cycle, and where the log shows it:
* machines: node arrival, death and recovery events up to the cycle (`nodes`);
* shares held: the cycle's published `Existing` less its `Additions` is exactly what the job held
  when the cycle began; a share is pending removal if the previous schedule already removed it;
* work: every job the cycle publishes, described by its latest submit / howMuchFairShare row, and
  its cap inputs (`replay.model.inputs.cap_inputs`);
* needy jobs: the jobs the previous cycle's detectFragmentation found *potentially* needy (the RM
  keeps them on its needy list, and expands them first, even when it then finds room for them);
* per process, what the eviction order reads: whether the process had reported (the RM's
  "initialized" test) and was running when the cycle began, its initialization time, and its
  investment. Investment (work done) is not logged; the published `Existing` list is sorted by
  the RM's own investment comparator, so a process's rank there stands in for it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import polars as pl

from replay.model.inputs import CAP_INPUT_COLUMNS, cap_inputs
from replay.parsing.sources import InputError
from replay.parsing.tables import LEFT
from rmref import UNLIMITED, CapInput, job_order
from rmref.model import ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work
from rmref.trees import tree_quantum

WORK_TYPES = {"J": "Job", "S": "Service", "R": "Reservation", "M": "ManagedReservation"}
_OFFLINE = {"death", "vary_off", "vary_on"}
_ONLINE = {"arrive", "reactivate", "recover", "recover_node"}


@dataclass(frozen=True)
class Bootstrap:
    """The configuration a replay needs before any cycle: from the log, or from `--config DIR`."""

    config: Config
    classes: tuple[ClassDef, ...]
    nodepools: tuple[Nodepool, ...]


def _int(value, default: int) -> int:
    try:
        return int(str(value).split()[0])
    except (TypeError, ValueError, IndexError):
        return default


def _global_allotment(tables: dict[str, pl.DataFrame], config: dict[str, str],
                      overridden: set[str]) -> int:
    """ducc.rm.global_allotment (GB): the RM does not log it at bootstrap, but every fixed-share
    and reservation count prints the allotment it checks against, and every allotment deferral
    names it; resources (--config) have it. A user with an allotment of its own (ducc.users)
    shows that one instead, so only the other users' lines tell."""
    if "global allotment" in config:
        return _int(config["global allotment"], UNLIMITED)
    if not {"jobs", "allotments", "counts"} <= tables.keys():  # resources alone, no log
        return UNLIMITED
    users = tables["jobs"].select("job_id", "user").drop_nulls().unique("job_id", keep="last")
    checked = tables["allotments"].filter((pl.col("kind") == "current") & pl.col("allotment_gb").is_not_null()).select(
        "cycle", "line", "job_id", "allotment_gb")
    deferred = tables["counts"].filter(pl.col("reason").str.contains("allotment of")).select(
        "cycle", "line", "job_id",
        pl.col("reason").str.extract(r"allotment of (\d+)GB").cast(pl.Int64).alias("allotment_gb"))
    seen = (pl.concat([checked, deferred]).drop_nulls("allotment_gb").join(users, on="job_id", how="left")
            .filter(~pl.col("user").is_in(list(overridden)) | pl.col("user").is_null())
            .sort("cycle", "line", nulls_last=False))
    return int(seen["allotment_gb"][-1]) if seen.height else UNLIMITED


def _user_allotments(config: dict[str, str]) -> dict[str, int]:
    """ducc.users overrides of the global allotment (GB), as the RM reads them.

    The RM takes any `max-allotment...` key whose *value* has no dot as the user's global limit
    (it tests the value, not the key, for a class suffix), so `max-allotment.<class> = 64`
    overrides the global allotment too; of several, the last one read wins.
    """
    out: dict[str, int] = {}
    for key, value in config.items():
        m = re.fullmatch(r"user\.(.+?)\.max-allotment(\..*)?", key)
        if m and "." not in value and _int(value, -1) >= 0:
            out[m.group(1)] = _int(value, UNLIMITED)
    return out


def bootstrap(tables: dict[str, pl.DataFrame]) -> Bootstrap:
    """Configuration, classes and nodepools from `config`/`classes`/`nodepools` tables.

    Raises InputError naming what is missing when the log (or resources) did not have them.
    """
    missing = [name for name in ("classes", "nodepools") if tables[name].is_empty()]
    if missing:
        raise InputError(
            f"the log has no bootstrap section ({' and '.join(missing)} missing, probably rolled away): "
            "pass --config DIR with the DUCC resources directory (ducc.properties, ducc.classes)"
        )
    config = dict(tables["config"].select("key", "value").iter_rows())
    quantum = tables["nodepools"]["quantum"].drop_nulls()
    users = tuple(sorted(_user_allotments(config).items()))
    cfg = Config(
        quantum_gb=int(quantum[0]) if len(quantum) else 15,
        fragmentation_threshold=_int(config.get("fragmentation threshold"), 8),
        defragmentation=str(config.get("do defragmentation", "true")).lower() == "true",
        global_allotment=_global_allotment(tables, config, {user for user, _ in users}),
        user_allotments=users,
    )
    classes = tuple(
        ClassDef(
            name=r["name"], policy=r["policy"], priority=r["priority"], weight=r["weight"] or 0,
            nodepool=r["nodepool"], init_cap=r["init_cap"] or 0,
            expand_by_doubling=bool(r["expand_by_doubling"]), prediction=bool(r["prediction"]),
            prediction_fudge=r["prediction_fudge"] or 0, cap=_int(r["cap"], UNLIMITED),
            max_allotment=_int(r["max_allotment"], UNLIMITED),
        )
        for r in tables["classes"].iter_rows(named=True)
    )
    nodepools = tuple(Nodepool(r["name"], r["parent"], r["search_order"] or 100, r["quantum"] or 0)
                      for r in tables["nodepools"].iter_rows(named=True))
    return Bootstrap(cfg, classes, nodepools)


class _ByCycle:
    """Rows grouped by cycle, each cycle's rows in their order, without a frame per cycle: one
    frame sorted by cycle and each cycle's place in it (a cycle's rows are a zero-copy slice).
    Rows after the last published schedule have no cycle and are dropped."""

    def __init__(self, frame: pl.DataFrame):
        self._frame = frame.filter(pl.col("cycle").is_not_null()).sort("cycle", maintain_order=True)
        cycles = self._frame["cycle"].cast(pl.Int64).to_numpy()
        starts = np.flatnonzero(np.diff(cycles, prepend=-1) != 0)
        ends = np.append(starts[1:], len(cycles))
        self._at = {int(cycles[a]): (int(a), int(b - a)) for a, b in zip(starts, ends)}

    def get(self, cycle: int) -> pl.DataFrame | None:
        """The cycle's rows (None: it has none)."""
        at = self._at.get(cycle)
        return None if at is None else self._frame.slice(*at)


class _Machines:
    """Node liveness and inventory, advanced one cycle's events at a time.

    A log that starts after the nodes arrived never shows their arrival: a host it hears from
    (heartbeats) is taken as there from the start when some line shows its size (a connectShare
    or occupancy line); otherwise it is `missing`, and the cycles cannot be rebuilt.
    """

    def __init__(self, tables: dict[str, pl.DataFrame], top_pool: str):
        nodes = tables["nodes"]
        self._events = _ByCycle(nodes.filter(pl.col("event").is_in(list(_OFFLINE | _ONLINE))))
        ips = nodes.filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
        self._ips = dict(ips.select("host", "ip").iter_rows())
        self._known: dict[str, Machine] = {}
        sizes = pl.concat([
            tables["placements"].select("host", pl.col("m_order").alias("order"), "memory_mb"),
            tables["occupancy"].select("host", "order", "memory_mb"),
        ]).drop_nulls().unique("host", keep="first", maintain_order=True)
        sizes = {h: (o, m) for h, o, m in sizes.iter_rows()}
        self._pool_of = {n: r["name"] for r in tables["nodepools"].iter_rows(named=True) for n in (r["nodes"] or ())}
        self._top = top_pool
        arrived = set(nodes.filter(pl.col("event").is_in(list(_ONLINE)))["host"].to_list())
        heard = nodes.filter(pl.col("event") == "heartbeat")["host"].unique(maintain_order=True).to_list()
        self.missing: set[str] = set()
        self._dead: set[str] = set()
        for host in heard:  # there before the log began, in the order they were first heard from
            if host in arrived:
                continue
            if host in sizes:
                order, memory = sizes[host]
                self._known[host] = Machine(host, self._pool(host), order, memory, self._ips.get(host, ""))
            else:
                self.missing.add(host)

    def _pool(self, host: str) -> str:
        return self._pool_of.get(host, self._pool_of.get(host.split(".")[0], self._top))

    def advance(self, cycle: int) -> tuple[Machine, ...]:
        """The machines as the cycle's scheduling pass saw them."""
        events = self._events.get(cycle)
        if events is not None:
            for host, event, pool, order, memory in events.select(
                "host", "event", "nodepool", "share_order", "memory_mb"
            ).iter_rows():
                old = self._known.get(host)
                if event in _ONLINE:
                    varied_off = old.varied_off if old else False  # a dead node returns still varied off
                    self._known[host] = Machine(
                        host, pool or (old.nodepool if old else self._pool(host)),
                        order if order is not None else (old.order if old else 0),
                        memory if memory is not None else (old.memory_mb if old else 0),
                        self._ips.get(host, ""), online=not varied_off, varied_off=varied_off,
                    )
                    self._dead.discard(host)
                elif old is None:
                    continue
                elif event == "death":
                    self._dead.add(host)
                    self._known[host] = replace(old, online=False)
                else:  # an administrator's vary-off or vary-on
                    off = event == "vary_off"
                    self._known[host] = replace(old, varied_off=off, online=not off and host not in self._dead)
        return tuple(self._known.values())  # arrival order: the order the RM's node maps were filled


def _work_rows(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per (cycle, job) published: the job's latest description at or before the cycle.

    Rows come in the RM's job-table order, which decides ties in What Of: the table is keyed by
    random ids, so the order cannot be computed, but the cycle's "Scheduling job" lines (`counts`)
    are written in it. Jobs without such a line follow, by id.
    """
    # work refused on arrival (an unknown class, an unauthorized user) is published as refused
    # and never joins the scheduler's jobs
    published = tables["schedule"].filter(~pl.col("refused").fill_null(False)).group_by(
        "cycle", "job_id", maintain_order=True).agg(pl.col("work_type").first(), pl.col("memory_gb").first())
    described = (
        tables["jobs"].filter(pl.col("cycle").is_not_null())
        .sort("job_id", "cycle", "line")
        .unique(["job_id", "cycle"], keep="last", maintain_order=True)
        .select("job_id", "cycle", "type_code", "user", "class", "order", "threads", "remaining",
                "init_wait", "max_processes", "shares")
        .sort("cycle")
    )
    table_order = tables["counts"].filter(pl.col("cycle").is_not_null()).group_by("cycle", "job_id").agg(
        pl.col("file").first().alias("table_file"), pl.col("line").min().alias("table_line"))
    return (
        published.sort("cycle")
        .join_asof(described, on="cycle", by="job_id", strategy="backward", check_sortedness=False)
        .join(table_order, on=["cycle", "job_id"], **LEFT)
        .sort("cycle", pl.col("table_line").is_null(), "table_file", "table_line", "job_id")
    )


class ProcessClock:
    """When each process (host, share id) first reported, and first left Initializing."""

    def __init__(self, processes: pl.DataFrame, cycles: pl.DataFrame):
        reports = processes.filter(pl.col("event").is_in(["new", "state"]) & pl.col("cycle").is_not_null())
        running = reports.filter(pl.col("state_to").is_not_null() & (pl.col("state_to") != "Initializing")
                                 & (pl.col("state_from").is_null() | (pl.col("state_from") == "Initializing")))
        self._reported = self._first(reports)
        self._running = self._first(running)
        self._starts = dict(cycles.select("cycle", "line").iter_rows())

    @staticmethod
    def _first(frame: pl.DataFrame) -> dict[tuple[str, int], tuple[int, int]]:
        rows = frame.sort("cycle", "line").unique(["host", "share_id"], keep="first")
        return {(h, s): (c, ln) for h, s, c, ln in rows.select("host", "share_id", "cycle", "line").iter_rows()}

    def state(self, cycle: int, host: str, share_id: int, predates_log: bool = False) -> tuple[bool, bool]:
        """(reported, running) as the RM knew them when the cycle's scheduling pass began.

        A process already there when the log began had reported before the log's first line,
        and was running then unless the log shows it leave Initializing later."""
        start = (cycle, self._starts.get(cycle, 0))
        never = (1 << 62, 0)
        if predates_log:
            left_init = self._running.get((host, share_id))
            return True, left_init is None or left_init < start
        return (self._reported.get((host, share_id), never) < start,
                self._running.get((host, share_id), never) < start)


def _top_pool(boot: Bootstrap) -> str:
    return next((p.name for p in boot.nodepools if p.parent is None), "--default--")


def inventory_gaps(tables: dict[str, pl.DataFrame], boot: Bootstrap | None = None) -> dict[int, str]:
    """Cycles whose machines the log cannot rebuild, and why (a log that starts mid-run)."""
    machines = _Machines(tables, _top_pool(boot or bootstrap(tables)))
    gaps = {}
    for cycle in tables["cycles"]["cycle"].to_list():
        machines.advance(cycle)
        if machines.missing:  # (the same hosts for every cycle: a size, once shown, is known throughout)
            hosts = sorted(machines.missing)
            gaps[cycle] = (f"the log starts after {len(hosts)} node(s) arrived and never shows their "
                           f"memory ({', '.join(hosts[:5])}{', ...' if len(hosts) > 5 else ''}): a DEBUG log "
                           "(occupancy table) or one that includes their arrival has it")
    return gaps


class _Published:
    """Per cycle, from the published schedule: the Existing shares in printed order (job, host,
    share id, memory, init ms), and the (job, share id) sets of Additions and Removals."""

    def __init__(self, schedule: pl.DataFrame):
        self._rows = _ByCycle(schedule.filter(pl.col("host").is_not_null()).select(
            "cycle", "kind", "job_id", "host", "share_id", "memory_gb", "init_ms"))

    def shares(self, cycle: int) -> tuple[list[tuple], set[tuple[int, int]], set[tuple[int, int]]]:
        """(existing, added, removed) of one cycle."""
        existing: list[tuple] = []
        added: set[tuple[int, int]] = set()
        removed: set[tuple[int, int]] = set()
        rows = self._rows.get(cycle)
        for _, kind, job, host, sid, mem, init_ms in rows.iter_rows() if rows is not None else ():
            if kind == "existing":
                existing.append((job, host, sid, mem, init_ms))
            elif kind == "addition":
                added.add((job, sid))
            elif kind == "removal":
                removed.add((job, sid))
        return existing, added, removed


def submission_order(tables: dict[str, pl.DataFrame]) -> dict[int, int]:
    """Each job's place in submission order (JobByTimeSorter's key), equal for jobs that tie.

    The Orchestrator numbers work in submission order, so job ids order it; the timestamps are
    not logged. Two jobs submitted in the same millisecond tie, and the RM then keeps its job
    table's order, which can put the later id first: wherever the log lists jobs in
    JobByTimeSorter's order (a pool's "Expansions in this order", a fixed-share or reserve class's
    counting lines) and does so, the two tie.
    """
    classes = dict(tables["jobs"].select("job_id", "class").drop_nulls().unique("job_id", keep="last").iter_rows())
    expansions = tables["expansions"].filter((pl.col("kind") == "do_expansion") & pl.col("job_id").is_not_null())
    sequences = [rows["job_id"].to_list() for _, rows in
                 expansions.group_by("cycle", "file", "line", maintain_order=True)]
    counted = tables["counts"].filter(pl.col("job_id").is_not_null() & (
        ((pl.col("kind") == "class") & (pl.col("policy") == "FIXED_SHARE"))
        | ((pl.col("kind") == "counting") & (pl.col("policy") == "RESERVE"))))
    for _, rows in counted.group_by("cycle", maintain_order=True):
        by_class: dict[str, list[int]] = {}
        for job in rows["job_id"].to_list():
            by_class.setdefault(classes.get(job, ""), []).append(job)
        sequences += by_class.values()
    tied: dict[int, int] = {}  # job -> the earliest job it ties with (union-find parent)

    def root(job: int) -> int:
        while tied.get(job, job) != job:
            job = tied[job]
        return job

    for seq in sequences:
        for i, later in enumerate(seq):
            for earlier in seq[i + 1:]:
                if earlier < later:  # listed after a later-submitted job: the two tie
                    a, b = sorted((root(earlier), root(later)))
                    tied[b] = a
    return {job: root(job) for job in tied}


def cycle_inputs(tables: dict[str, pl.DataFrame], boot: Bootstrap | None = None,
                 cycles: range | None = None) -> Iterator[CycleInput]:
    """rmref's input for every published cycle of the log (or those in `cycles`), in order."""
    boot = boot or bootstrap(tables)
    quantum = boot.config.quantum_gb
    tree_q = {c.name: tree_quantum(boot.nodepools, c.nodepool, quantum) for c in boot.classes}
    machines = _Machines(tables, _top_pool(boot))
    # every per-cycle structure is kept as one frame and read a cycle at a time (_ByCycle): a
    # dict or a frame per cycle took 75 MB on a 2,500-cycle log
    published = _Published(tables["schedule"])
    work = _ByCycle(_work_rows(tables))
    caps = _ByCycle(cap_inputs(tables))
    submitted = submission_order(tables)
    capped = _ByCycle(tables["job_caps"].select("cycle", "job_id"))
    refusals = tables["job_events"].filter((pl.col("event") == "refused") & pl.col("cycle").is_not_null())
    refused_in = dict(refusals.group_by("job_id").agg(pl.col("cycle").min()).iter_rows())  # job -> first cycle
    needy = _ByCycle(tables["defrag"].filter(pl.col("potentially_needy")).select("cycle", "job_id"))
    clock = ProcessClock(tables["processes"], tables["cycles"])
    removed_before: set[tuple[int, int]] = set()
    first_held: set[tuple[int, int]] = set()  # shares held when the log's first cycle began
    all_cycles = tables["cycles"]["cycle"].to_list()
    if all_cycles:
        existing, added_now, _ = published.shares(all_cycles[0])
        first_held = {(job, sid) for job, _, sid, _, _ in existing} - added_now
    for cycle in all_cycles:
        state = machines.advance(cycle)
        existing, added_now, removed_now = published.shares(cycle)
        if cycles is not None and cycle not in cycles:
            removed_before = removed_now
            continue
        rows = work.get(cycle)
        logged_caps = _rows_by_job(caps.get(cycle))
        capped_now = set(_column(capped.get(cycle), "job_id"))
        quantum_of = {} if rows is None else {job: tree_q.get(cls, quantum) for job, cls in rows.select(
            "job_id", "class").iter_rows()}  # a share's order is in its own pool tree's quantum
        held: dict[int, list[Share]] = {}
        rank: dict[int, int] = {}
        for job, host, sid, mem, init_ms in existing:
            rank[job] = rank.get(job, -1) + 1  # position in the printed list, investment order
            if (job, sid) in added_now:
                continue
            reported, running = clock.state(cycle, host, sid, predates_log=(job, sid) in first_held)
            held.setdefault(job, []).append(Share(
                sid, job, host, job_order(mem, quantum_of.get(job, quantum)), pending_removal=(job, sid) in removed_before,
                initialized=reported, init_ms=(init_ms or 0) if reported else 0,
                investment=rank[job] + 1 if reported else 0,  # the printed order is the comparator's
            ))
        jobs = []
        for r in rows.iter_rows(named=True) if rows is not None else ():
            job = r["job_id"]
            shares = tuple(sorted(held.get(job, ()), key=lambda s: s.share_id))
            logged = logged_caps.get(job)
            held_now = sum(1 for s in shares if not s.pending_removal)
            # the RM logs a cap for every job but a completed or refused one
            refused = refused_in.get(job, cycle + 1) <= cycle
            cap = CapInput(**{k: logged[k] for k in CAP_INPUT_COLUMNS},
                           current=held_now - logged["purged"]) if logged else CapInput(
                remaining=r["remaining"] or 0, threads=r["threads"] or 1, current=held_now,
                max_processes=r["max_processes"] if r["max_processes"] is not None else UNLIMITED,
                initialized=not r["init_wait"], projected=0, init_cap=0, expand_by_doubling=False,
                use_prediction=False, completed=job not in capped_now and not refused, refused=refused,
            )
            jobs.append(Work(
                job, WORK_TYPES.get(r["type_code"] or "") or r["work_type"] or "Job", r["user"] or "",
                r["class"] or "", r["order"] or job_order(r["memory_gb"] or 0, quantum_of.get(job, quantum)),
                r["memory_gb"] or 0,
                cap, submit_seq=submitted.get(job, job), shares=shares,
            ))
        yield CycleInput(
            cycle, boot.config, boot.classes, boot.nodepools, state, tuple(jobs),
            tuple(sorted(set(_column(needy.get(cycle - 1), "job_id")))),
        )
        removed_before = removed_now


def _rows_by_job(rows: pl.DataFrame | None) -> dict[int, dict]:
    """A cycle's rows by job (the last row of a job wins)."""
    return {} if rows is None else {r["job_id"]: r for r in rows.iter_rows(named=True)}


def _column(rows: pl.DataFrame | None, name: str) -> list:
    """One column of a cycle's rows ([] when it has none)."""
    return [] if rows is None else rows[name].to_list()
