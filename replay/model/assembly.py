"""Assemble rmref's input for each cycle: what the RM knew when the cycle began, from the parsed tables.

The configuration comes from the log's bootstrap, or from `--config DIR` with what it leaves
open read off the log (replay.model.bootstrap, replay.model.settings). State carried from cycle
to cycle, and where the log shows it:
* machines: node arrival, death and recovery events up to the cycle (`nodes`,
  replay.model.machines.liveness); the nodes there before the log began as the log states them
  or as their counters imply (replay.model.machines.inventory, replay.model.machines.solver);
* shares held: the cycle's published `Existing` less its `Additions` is exactly what the job held
  when the cycle began; a share is pending removal if the previous schedule already removed it;
* work: every job the cycle publishes, described by its latest submit / howMuchFairShare row, and
  its cap inputs (`replay.model.inputs.cap_inputs`);
* needy jobs: the jobs the previous cycle's detectFragmentation found *potentially* needy (the RM
  keeps them on its needy list, and expands them first, even when it then finds room for them),
  less those the cycle's needy pass shows were left off (replay.model.needy); in a log that starts
  at or inside the previous cycle, the jobs the cycle expands first;
* per process, what the eviction order reads: whether the process had reported (the RM's
  "initialized" test) and was running when the cycle began, its initialization time, and its
  investment. Investment (work done) is not logged; the published `Existing` list is sorted by
  the RM's own investment comparator, so a process's rank there stands in for it. The sort is
  stable over the job's share map, so where the comparator finds two processes equal (neither
  has reported, so neither has an initialization time) the same rank gives the map's order, by
  which shrinkBy, sorting the same map with the same comparator, chooses between them.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import cached_property
from typing import Any

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.bycycle import ByCycle
from replay.model.clock import ProcessClock
from replay.model.leaving import removals_before_the_log
from replay.model.inputs import CAP_INPUT_COLUMNS, cap_inputs, in_force, purged_hosts
from replay.model.machines.inventory import Inventory
from replay.model.machines.liveness import NodeLiveness
from replay.model.pools import pool_of
from replay.model.needy import needy_expanded, needy_left_off
from replay.model.orders import host_quanta
from replay.model.published import PublishedShares, published_schedule, work_rows
from replay.model.stale import StaleFree, stale_free
from replay.model.stranded import Stranded
from replay.model.submission import submission_order
from rmref import UNLIMITED, CapInput, job_order
from rmref.model import CycleInput, Machine, Share, Work
from rmref.trees import class_quantum

WORK_TYPES = {"J": "Job", "S": "Service", "R": "Reservation", "M": "ManagedReservation"}
ExistingRow = tuple[Any, ...]  # (job, host, share id, memory, init ms) of a published Existing share


def cycle_count(tables: Mapping[str, pl.DataFrame], cycles: range | None = None) -> int:
    """How many inputs `assemble` gives: the log's published cycles (those in `cycles`)."""
    logged = tables["cycles"]["cycle"]
    return len(logged) if cycles is None else int(logged.is_between(cycles.start, cycles.stop - 1).sum())


def assemble(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, inventory: Inventory,
             cycles: range | None = None, stale: StaleFree | None = None,
             handed_before: frozenset[tuple[int, int]] = frozenset(),
             before: pl.DataFrame | None = None) -> Iterator[CycleInput]:
    """rmref's input for every published cycle of the log (or those in `cycles`), in order, on
    `boot` and `inventory` (the nodes there before the log began); `stale`: the model of
    unschedulable machines' free space, whose `notes` then say where it was inferred (default: a
    fresh one); `handed_before`: (job, share id) of the processes defragmentation handed over before
    a mid-stream log began (replay.model.handover); `before`: the removals taken as decided before
    it began (replay.model.leaving.removals_before_the_log, read here when the caller has not)."""
    stale = stale or stale_free(tables, boot.nodepools, boot.config.quantum_gb)
    liveness = NodeLiveness(tables, inventory, pool_of(tables, boot), boot.config.behaviours)
    log = _LogReads(tables, boot, handed_before)
    removed_before: set[tuple[int, int]] = set()
    leaving: dict[int, set[tuple[int, int]]] = {}  # removals decided before a mid-stream log began
    for c, job, _host, sid in (removals_before_the_log(tables) if before is None else before).iter_rows():
        leaving.setdefault(c, set()).add((job, sid))
    first_held: set[tuple[int, int]] = set()  # shares held when the log's first listed cycle began
    all_cycles = tables["cycles"]["cycle"].to_list()
    first = log.published.first_listed(all_cycles)
    if first is not None:
        existing, added_now, _ = log.published.shares(first)
        first_held = {(job, sid) for job, _, sid, _, _ in existing} - added_now
    for cycle in all_cycles:
        existing, added_now, removed_now = log.published.shares(cycle)
        state = liveness.advance(cycle)
        filled = stale.fill(cycle, state, {host for _, host, _, _, _ in existing})
        stale.record(state, ((host, mem or 0) for _, host, _, mem, _ in existing))
        if cycles is not None and cycle not in cycles:
            removed_before = removed_now
            continue
        yield log.cycle_input(cycle, filled, existing, added_now, removed_before | leaving.get(cycle, set()),
                              first_held)
        removed_before = removed_now


class _LogReads:
    """What the rebuild reads off the whole log, each per-cycle structure kept as one frame and
    read a cycle at a time (ByCycle): a dict or a frame per cycle took 75 MB on a 2,500-cycle log."""

    def __init__(self, tables: Mapping[str, pl.DataFrame], boot: Bootstrap,
                 handed_before: frozenset[tuple[int, int]] = frozenset()):
        self.tables = tables
        self.boot = boot
        self.quantum = boot.config.quantum_gb
        self.tree_q = {c.name: class_quantum(boot.classes, boot.nodepools, c.name, self.quantum) for c in boot.classes}
        self.class_settings = {c.name: (c.init_cap, c.expand_by_doubling, c.prediction) for c in boot.classes}
        self.published = PublishedShares(published_schedule(tables))
        forced = in_force(tables)  # (both read the same process limits and remaining work)
        self.work = ByCycle(work_rows(tables, forced))
        self.caps = ByCycle(cap_inputs(tables, forced))
        self.purged = purged_hosts(tables)
        self.stranded = Stranded(tables)
        self.left_off = needy_left_off(tables)
        self.submitted = submission_order(tables, self.left_off)  # (the ties read the same left-off jobs)
        self.capped = ByCycle(tables["job_caps"].select("cycle", "job_id"))
        refusals = tables["job_events"].filter((pl.col("event") == "refused") & pl.col("cycle").is_not_null())
        self.refused_in = dict(refusals.group_by("job_id").agg(pl.col("cycle").min()).iter_rows())  # job -> first
        self.needy = ByCycle(tables["defrag"].filter(pl.col("potentially_needy")).select("cycle", "job_id"))
        self.analysed = set(tables["defrag"].filter(pl.col("kind") == "analysis")["cycle"].drop_nulls().to_list())
        self.expanded_first = needy_expanded(tables)
        self.clock = ProcessClock(tables["processes"], tables["cycles"])
        # shares defragmentation handed to another job than What Of connected them for (in a log
        # that begins later, one handed over before it reads as fixed, as most are, unless the
        # start infers it: replay.model.handover)
        moved = tables["placements"].filter(pl.col("placed_for").is_not_null())
        self.handed_over = set(moved.select("job_id", "share_id").iter_rows()) | handed_before

    @cached_property
    def _hosted(self) -> dict[int, int]:
        return host_quanta(self.tables, self.boot)

    def _unclassed(self, job: int) -> int:
        """The quantum of a job whose class the configuration does not define: the pool tree's its
        processes run in, else the global one (replay.model.orders, whose `orders_assumed` names both)."""
        return self._hosted.get(job, self.quantum)

    def cycle_input(self, cycle: int, state: tuple[Machine, ...], existing: list[ExistingRow],
                    added_now: set[tuple[int, int]], removed_before: set[tuple[int, int]],
                    first_held: set[tuple[int, int]]) -> CycleInput:
        """One cycle's input, on the machines as its scheduling pass saw them (`state`)."""
        rows = self.work.get(cycle)
        logged_caps = _rows_by_job(self.caps.get(cycle))
        capped_now = set(_column(self.capped.get(cycle), "job_id"))
        # a share's order is in its own pool tree's quantum (columns read as lists: a select on
        # each cycle's rows cost a polars query per cycle, 6 ms)
        quantum_of = {} if rows is None else {job: self.tree_q.get(cls) or self._unclassed(job) for job, cls in zip(
            rows["job_id"].to_list(), rows["class"].to_list())}
        held = self._held(cycle, existing, added_now, removed_before, first_held, quantum_of)
        jobs = tuple(self._work(cycle, r, held, quantum_of, logged_caps.get(r["job_id"]), capped_now)
                     for r in (rows.iter_rows(named=True) if rows is not None else ()))
        prev_needy = [j for j in _column(self.needy.get(cycle - 1), "job_id") if j not in self.left_off.get(cycle, ())]
        if cycle - 1 not in self.analysed:  # the log starts at or inside the cycle before: the needy pass shows them
            prev_needy = _column(self.expanded_first.get(cycle), "job_id")
        return CycleInput(
            cycle, self.boot.config, self.boot.classes, self.boot.nodepools, state, jobs,
            tuple(dict.fromkeys(prev_needy)),  # in the order detectFragmentation logged them
            investment_ranked=True,  # a rank within each job's Existing list (see the module docstring)
        )

    def _held(self, cycle: int, existing: Iterable[ExistingRow], added_now: set[tuple[int, int]],
              removed_before: set[tuple[int, int]], first_held: set[tuple[int, int]],
              quantum_of: Mapping[int, int]) -> dict[int, list[Share]]:
        """Per job, the shares it held when the cycle began (the published Existing less Additions)."""
        purged_now = self.published.purged(cycle)
        held: dict[int, list[Share]] = {}
        rank: dict[int, int] = {}
        for job, host, sid, mem, init_ms in existing:
            rank[job] = rank.get(job, -1) + 1  # position in the printed list, investment order
            if (job, sid) in added_now:
                continue
            reported, running = self.clock.state(cycle, host, sid, predates_log=(job, sid) in first_held)
            held.setdefault(job, []).append(Share(
                # (no line gives the memory of a job submitted in a span lost: order 0, and the
                # replay skips the cycle, replay.model.start.ReplayStart.classes_unknown)
                sid, job, host, job_order(mem or 0, quantum_of.get(job) or self._unclassed(job)),
                pending_removal=(job, sid) in removed_before,
                initialized=reported, init_ms=(init_ms or 0) if reported else 0,
                investment=rank[job] + 1 if reported else 0,  # the printed order is the comparator's
                map_rank=rank[job] + 1,  # where the comparator ties, the printed order is the share map's
                purged=(job, sid) in purged_now, stranded=self.stranded(job, sid, host, cycle),
                revived=self.stranded.revived(job, sid, host, cycle), handed_over=(job, sid) in self.handed_over,
            ))
        return held

    def _work(self, cycle: int, r: dict[str, Any], held: Mapping[int, list[Share]], quantum_of: Mapping[int, int],
              logged: dict[str, Any] | None, capped_now: set[int]) -> Work:
        """One published job as the cycle's scheduling pass saw it, its cap inputs included."""
        job = r["job_id"]
        behaviours = self.boot.config.behaviours
        shares = tuple(sorted(held.get(job, ()), key=lambda s: s.share_id))
        # countNShares: held, less what is leaving and what a node's purge took this cycle (a
        # share there already leaving, or already vacated and gone from the schedule, once)
        gone = self.purged.get((cycle, job), set())
        # where the schedule marks which (2.0.x stops its purge at a reservation's process), those
        marked = {s.host for s in shares if s.purged and s.host in gone}
        held_now = sum(1 for s in shares if not s.pending_removal
                       and not (s.purged if s.host in marked else s.host in gone))
        # the RM logs a cap for every job but a completed or refused one; a refusal that leaves the
        # job in a class (a service in a fair-share class) does not stop its scheduling
        refused = self.refused_in.get(job, cycle + 1) <= cycle and not r["class"]
        init_cap, doubling, prediction = self.class_settings.get(r["class"], (0, False, False))
        cap = CapInput(**{k: logged[k] for k in CAP_INPUT_COLUMNS}, init_cap=init_cap,
                       expand_by_doubling=doubling, use_prediction=prediction,
                       current=held_now, behaviours=behaviours) if logged else CapInput(
            remaining=r["remaining"] or 0, threads=r["threads"] or 1, current=held_now,
            max_processes=r["max_processes"] if r["max_processes"] is not None else UNLIMITED,
            initialized=not r["init_wait"], projected=0, init_cap=0, expand_by_doubling=False,
            use_prediction=False, completed=job not in capped_now and not refused, refused=refused,
            behaviours=behaviours,
        )
        return Work(
            job, WORK_TYPES.get(r["type_code"] or "") or r["work_type"] or "Job", r["user"] or "",
            r["class"] or "", r["order"] or job_order(r["memory_gb"] or 0, quantum_of[job]),
            # the memory submitted: the schedule prints it rounded up to the quantum, which a
            # what-if of another quantum must not round again
            r["declared_gb"] if r["declared_gb"] is not None else r["memory_gb"] or 0,
            cap, submit_seq=self.submitted.get(job, job), shares=shares,
        )


def _rows_by_job(rows: pl.DataFrame | None) -> dict[int, dict[str, Any]]:
    """A cycle's rows by job (the last row of a job wins)."""
    return {} if rows is None else {r["job_id"]: r for r in rows.iter_rows(named=True)}


def _column(rows: pl.DataFrame | None, name: str) -> list[Any]:
    """One column of a cycle's rows ([] when it has none)."""
    return [] if rows is None else rows[name].to_list()
