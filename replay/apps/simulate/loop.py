"""The closed loop: at each of the RM's cycles, the Orchestrator publishes, the RM updates its
tables, rmref's chained phases schedule the simulated state, and the schedule is carried out.

Cycles come at the log's own times (the RM's cadence). What the log reveals and no input
determines is taken from the log's same cycle where the log has it, as the audit does: the order
the RM's hash maps list users, needy jobs and a cleared host's shares, its job table's order, and,
where the simulated state is the logged one, the order of a job's published Existing list (the
RM's investment order), the ids of the shares What Of places and the RM's other free choices
(clearings, the needy verdict, before 3.0.0 node IPs: `Simulation._choices`, `_by_node_ips`). The
scheduler's own memory (last pure fair shares, users' wealth, the needy list: rmref.memory.Memory)
is carried from the simulated cycle before.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace

import polars as pl

from replay.apps.baseline import Choices, run_following, swapped
from replay.apps.change import adapt
from replay.apps.simulate import rm
from replay.apps.simulate.orchestrator import COMPLETED, COMPLETING
from replay.apps.simulate.orchestrator import Work as OrWork
from replay.apps.simulate.workload import Workload, WorkSpec
from replay.model import settings as st
from replay.model.defrag_inputs import cleared_by_rm
from replay.model.logged import Logged
from replay.model.nodes import online_capacity
from replay.model.stale import StaleFree
from replay.model.bootstrap import Bootstrap
from replay.model.start import node_liveness
from replay.parsing.sources import InputError
from replay.parsing.tables import SCHEMAS, conform
from replay.progress import OnProgress, counted
from replay.model.logorder import log_order
from rmref.constants import PURGES
from rmref.cycle import CycleResult, Hints, Phases, schedule
from rmref.defrag import CANCEL, EVICT, REASSIGN
from rmref.evictions import departed, disable_purges
from rmref.memory import Memory
from rmref.node_ips import ips_reproducing
from rmref.model import CycleInput, Machine, Placement, Work
from rmref.whatof import what_of


# the DuccTypes NodePool.disable marks completed when it purges their process (Service, Pop)
_MARKED_COMPLETE = ("Service", "ManagedReservation", "Pop")


@dataclass(frozen=True)
class Context:
    """What every simulation of one log shares: its configuration, cadence and revealed orders."""

    boot: Bootstrap
    cycles: tuple[int, ...]  # the log's cycle numbers
    times: tuple[float, ...]  # their times, ms from the first
    nodepools: pl.DataFrame  # the nodepools table (node files: which pool a host is in)
    logged: Logged | None = None  # hints: the orders the log reveals per cycle
    table_order: dict[int, dict[int, int]] = field(default_factory=dict)  # cycle -> job -> rank
    submit_seq: dict[int, int] = field(default_factory=dict)
    # cycle -> job -> (host, share) -> rank
    ranks: dict[int, dict[int, dict[tuple[str, int], int]]] = field(default_factory=dict)
    # cycle -> (job, share) its schedule marks purged (^P): where a 2.0.x disable's walk stopped
    purge_marks: dict[int, frozenset[tuple[int, int]]] = field(default_factory=dict)
    epoch_ms: int = 10_000  # the RM's epoch, as getPrjCap adds it

    @property
    def period_ms(self) -> float:
        """The cycles' period (ms): the median gap between them (the upper one of an even count), 0 for one cycle."""
        gaps = sorted(b - a for a, b in itertools.pairwise(self.times))
        return gaps[len(gaps) // 2] if gaps else 0.0


@dataclass
class Run:
    """One simulation's outcome, cycle by cycle and job by job."""

    held: list[tuple[int, int, int]] = field(default_factory=list)  # (cycle, job, processes held after it)
    used: list[tuple[int, int, int]] = field(default_factory=list)  # (cycle, qshares in use, capacity)
    finish: dict[int, float] = field(default_factory=dict)  # job -> s at the publication that showed it ending
    first_share: dict[int, float] = field(default_factory=dict)  # job -> s of its first assignment
    preempted: list[tuple[int, int, int, str]] = field(default_factory=list)  # (cycle, job, share, reason)
    users: dict[int, tuple[str, ...]] = field(default_factory=dict)  # cycle -> users with work
    # user -> (job, reason) of the first deferral resting on an allotment ducc.users would set, unread
    unread_allotments: dict[str, tuple[int, str]] = field(default_factory=dict)


class Simulation:
    """The simulated cluster: machines, the Orchestrator's work and the RM's tables."""

    def __init__(self, ctx: Context, workload: Workload, boot: Bootstrap, phases: Phases):
        self.ctx, self.boot, self.phases = ctx, boot, phases
        self.specs = {w.job_id: w for w in workload.work}
        self.classes = {c.name: c for c in boot.classes}
        self.or_work: dict[int, OrWork] = {}
        self.jobs: dict[int, rm.RmJob] = {}
        self.pending = sorted(workload.work, key=lambda w: (w.submit + w.admit_delay, w.job_id))
        nodes = _node_tables(workload, ctx)
        # the machines the log's configuration sizes, back in service by the simulated release's rules
        self.machines = node_liveness(nodes, ctx.boot, behaviours=boot.config.behaviours)
        self.node_events: dict[int, list[tuple[str, str]]] = {}  # cycle -> (host, event), in order
        for c, host, event in nodes["nodes"].sort(log_order()).select("cycle", "host", "event").iter_rows():
            self.node_events.setdefault(c, []).append((host, event))
        self.off: set[str] = set()  # hosts NodePool.disable ran on that have not come back since
        self.purged_now: set[tuple[int, int]] = set()  # (job, share) the cycle's disables purged
        # a simulated world: an unschedulable machine's free space comes from its own schedules
        self.stale = StaleFree({}, ctx.boot.nodepools, ctx.boot.config.quantum_gb)
        self.run = Run()
        self.memory = Memory()  # what the RM kept from the simulated cycle before
        self.next_share = 1 + max([s.share_id for s in workload.shares] + [0])
        self.used_ids = {s.share_id for s in workload.shares}  # a share id is never given twice
        # (job, share id) of the processes leaving as the log began: the RM holds them pending removal
        self.leaving = {(s.job_id, s.share_id) for s in workload.shares if s.leaving}
        self._start(workload)

    def _start(self, workload: Workload) -> None:
        """The processes the work already ran when the log began."""
        for s in workload.shares:
            spec = self.specs.get(s.job_id)
            if spec is None:
                raise InputError(f"workload: share {s.share_id} on {s.host} belongs to job {s.job_id}, "
                                 "which has no work row")
            running_from = None if s.running_from is None else s.running_from * 1000.0
            work = self._or(spec)
            work.add(s.share_id, s.host, self.ctx.times[0], running=True, running_from=running_from)
            if s.leaving:  # removed before the log began: taken as the cycle before its first (the latest it can be)
                work.remove(s.share_id, self.ctx.times[0] - self.ctx.period_ms)

    def _or(self, spec: WorkSpec) -> OrWork:
        w = self.or_work.get(spec.job_id)
        if w is None:
            w = self.or_work[spec.job_id] = OrWork(spec, spec.start_delay * 1000.0, spec.init * 1000.0, spec.item_ms)
        return w

    # -- one cycle ------------------------------------------------------------------------------

    def step(self, i: int) -> None:
        """Cycle `i` (0-based): publication, RM update, schedule, carry it out."""
        cycle, t = self.ctx.cycles[i], self.ctx.times[i]
        for job_id in list(self.jobs):
            job = self.jobs[job_id]
            stop = job.spec.stop_delay * 1000.0
            state = self.or_work[job_id].publish(t, stop)
            self._ended(job_id, state, t)
            rm.update(job, self.or_work[job_id], state, t, stop)
            if rm.gone(state):
                del self.jobs[job_id]
        while self.pending and (self.pending[0].submit + self.pending[0].admit_delay) * 1000.0 <= t + 1e-6:
            spec = self.pending.pop(0)
            work = self._or(spec)
            if spec.is_job and spec.items_done and not work.processes:
                # items done before the log, none of its processes left: it ran, and the Orchestrator
                # reports it Running (a job all of whose processes were taken stays Running)
                work.ever_running = True
            state = work.publish(t, spec.stop_delay * 1000.0)
            job = rm.arrive(spec, work, state, self.classes.get(spec.class_name))
            for sid, p in work.processes.items():  # processes that predate the log
                job.shares[sid] = rm.RmShare(sid, p.host, pending_removal=(spec.job_id, sid) in self.leaving,
                                             initialized=True, init_ms=int(spec.init * 1000))
            if work.processes and spec.is_job:  # work that predates the log: the RM had the Orchestrator's updates
                rm.update(job, work, state, t, spec.stop_delay * 1000.0)
            elif work.processes:  # the RM took a service's initialization state on arrival, before it had a process
                job.init_wait = spec.work_type != "Reservation"
            self._ended(spec.job_id, state, t)
            if not rm.gone(state):
                self.jobs[spec.job_id] = job
        machines = self.machines.advance(cycle)
        self._node_news(cycle, machines)
        occupied = {s.host for job in self.jobs.values() for s in job.shares.values()}
        inp = self._input(cycle, self.stale.fill(cycle, machines, occupied))
        result = self._schedule(inp, cycle)
        if self.boot.users_open:
            self._unread_allotments(inp, result)
        self._check(inp, result, cycle)
        self._apply(inp, result, cycle, t)
        self.stale.record(machines, ((s.host, job.spec.memory_gb) for job in self.jobs.values()
                                     for s in job.shares.values()))
        self.memory = result.memory

    def _unread_allotments(self, inp: CycleInput, result: CycleResult) -> None:
        """The users whose allotment a deferral of the cycle rests on where no ducc.users was read."""
        users = {w.job_id: w.user for w in inp.work}
        own = dict(inp.config.user_allotments)
        for job, reason in sorted(result.how_much.deferred.items()):
            user = users.get(job)
            if user is not None and st.rests_on_unread_allotment(reason, user, own):
                self.run.unread_allotments.setdefault(user, (job, reason))

    def _node_news(self, cycle: int, machines: tuple[Machine, ...]) -> None:
        """What the cycle's node events did to the simulated processes on those nodes, as the
        RM's tables keep it (the flags of rm.RmShare, which rmref reads), from the simulated events
        and processes, as replay.model.stranded reads them off a log: NodePool.disable purged
        them (and marked a service or managed reservation it purged completed, UIMA-4327: it is
        not placed again); the node came back as a new record, leaving them on the old one
        (`stranded`), or as its own record (`Host reactivated`: `revived`)."""
        disabled = {m.name: m for m in machines if m.disabled}
        self.purged_now = set()
        if not disabled and cycle not in self.node_events:
            return
        on_host: dict[str, list[tuple[rm.RmJob, rm.RmShare]]] = {}
        for job in self.jobs.values():
            for s in job.shares.values():
                on_host.setdefault(s.host, []).append((job, s))
        for host, event in self.node_events.get(cycle, ()):
            if host in disabled and event in ("death", "vary_off"):
                self.off.add(host)
            elif event == "reactivate" or (event == "arrive" and host in self.off):
                # (the RM reactivates only a record it holds unresponsive: one whose disable may
                # predate the log)
                self.off.discard(host)
                for _job, s in on_host.get(host, ()):
                    s.stranded, s.revived = (True, s.revived) if event == "arrive" else (s.stranded, True)
        for host, m in disabled.items():
            for job, s in self._purged(cycle, m, on_host.get(host, [])):
                s.purged = True
                self.purged_now.add((job.spec.job_id, s.share_id))
                if job.spec.work_type in _MARKED_COMPLETE:
                    job.completed = True

    def _purged(self, cycle: int, machine: Machine,
                held: list[tuple[rm.RmJob, rm.RmShare]]) -> list[tuple[rm.RmJob, rm.RmShare]]:
        """The processes NodePool.disable purges on the machine (rmref.evictions.disable_purges),
        one already leaving included. Before 2.1.0 its walk stops at the first reservation's
        process, in the order of a HashMap on random ids that no input gives: where the machine
        holds the processes the log's did, the ones the log's schedule marks purged; else every
        process but the reservations'. Either way it marks them (`purged`), which is what
        rmref.evictions.purged_shares takes on such a machine."""
        by_policy = self.boot.config.behaviours.has("purge_by_policy")
        purged = []
        for job, s in held:
            cls = self.classes.get(job.spec.class_name)
            if disable_purges(machine, job.spec.work_type, cls.policy if cls else None, by_policy):
                purged.append((job, s))
        if by_policy or not any(job.spec.work_type == "Reservation" for job, _ in held):
            return purged
        logged = {(j, sid) for j, per in self.ctx.ranks.get(cycle, {}).items() for h, sid in per if h == machine.name}
        if logged != {(job.spec.job_id, s.share_id) for job, s in held}:
            return purged
        marks = self.ctx.purge_marks.get(cycle, frozenset())
        return [(job, s) for job, s in purged if (job.spec.job_id, s.share_id) in marks]

    def _schedule(self, inp: CycleInput, cycle: int) -> CycleResult:
        """rmref's chained phases (a --scheduler phase that fails says so in one line: change.DeveloperPhase),
        following the RM's free choices of the cycle where the simulated state is the log's (`_choices`)."""
        hints = self._hints(cycle)
        choices = self._choices(cycle, hints)
        run = self._run(inp, hints, choices)
        return self._by_node_ips(inp, cycle, hints, choices, run)

    def _run(self, inp: CycleInput, hints: Hints, choices: Choices) -> CycleResult:
        if not choices.any():
            return schedule(inp, hints, self.phases)
        return run_following(inp, hints, choices, self.phases, swapped(self.phases))[0]

    def _by_node_ips(self, inp: CycleInput, cycle: int, hints: Hints, choices: Choices,
                     run: CycleResult) -> CycleResult:
        """On a release whose log shows no node IP, the RM met machines alike in the order of node
        maps hashed on each node's IP. Where the simulated RM holds what the log's did and rmref's
        What Of places otherwise than the RM, the cycle is run again under node IPs that make it
        place every process where the RM did (rmref.node_ips.ips_reproducing), as the audit follows
        them; none found, or a plug-in What Of (whose ties are its own): the run stands."""
        logged = self.ctx.logged
        if (logged is None or inp.config.behaviours.has("node_ip_logged") or self.phases.what_of is not what_of
                or not self._as_logged(cycle)):
            return run
        theirs = {j: sorted(h for h, _o in v) for j, v in logged.placements.get(cycle, {}).items()}
        ours: dict[int, list[str]] = {}
        for p in run.decisions.placements:
            ours.setdefault(p.job_id, []).append(p.host)
        if {j: sorted(v) for j, v in ours.items()} == {j: v for j, v in theirs.items() if v}:
            return run
        ips = ips_reproducing(inp, run.how_much.counts, theirs, stale_left=run.how_much.stale_left)
        if ips is None:
            return run
        return self._run(replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines)), hints,
                         choices)

    def _choices(self, cycle: int, hints: Hints) -> Choices:
        """The RM's free choices the log shows for the cycle, as the audit follows them
        (replay.apps.audit): the machines How Much cleared for a reservation, takeFromTheRich's
        clearings, detectFragmentation's needy verdict and the tally order the log shows. Each is
        read by rmref's phase only among choices it finds equal itself, and each is taken only
        where the simulated RM holds exactly the processes the log's held when the cycle began:
        elsewhere the RM's pick answered another state, and the simulation settles its own ties."""
        logged = self.ctx.logged
        own = Choices(hints.prefer, given=hints.given_first)
        if logged is None or not self._as_logged(cycle):
            return own
        needy = logged.needy.get(cycle, {}) if cycle in logged.detected else None
        return replace(own, choose=cleared_by_rm(logged.connected.get(cycle, ()), logged.published.get(cycle, {}),
                                                 logged.defrag.get(cycle, {})),
                       cleared=tuple(logged.cleared.get(cycle, ())), needy=needy,
                       known_order=None if needy is None else logged.job_order_known.get(cycle, ()))

    def _as_logged(self, cycle: int) -> bool:
        """Whether the simulated RM holds, job by job, the processes (host and share id) the log's
        Existing lists show at the start of the cycle, and no other. A process already leaving may
        be missing from the lists: the log's Orchestrator may have confirmed it gone sooner."""
        logged = self.ctx.ranks.get(cycle)
        if logged is None:
            return False
        shown = {(job_id, host, sid) for job_id, per in logged.items() for host, sid in per}
        held = {(job_id, s.host, s.share_id): s.pending_removal for job_id, job in self.jobs.items()
                for s in job.shares.values()}
        return shown <= held.keys() and all(leaving or k in shown for k, leaving in held.items())

    def _ended(self, job_id: int, state: str, t: float) -> None:
        if state in (COMPLETING, COMPLETED) and job_id not in self.run.finish:
            self.run.finish[job_id] = t / 1000.0

    def _input(self, cycle: int, machines: tuple[Machine, ...]) -> CycleInput:
        """rmref's input for the cycle, from the RM's tables (under the unchanged configuration;
        `adapt` then applies the change, as the what-if does)."""
        base = self.ctx.boot
        rank = self.ctx.table_order.get(cycle, {})
        work = []
        for job_id in sorted(self.jobs, key=lambda j: (rank.get(j, len(rank)), j)):
            job = self.jobs[job_id]
            spec = job.spec
            cls = self.classes.get(spec.class_name)
            purged = sum(1 for s in job.shares.values() if not s.pending_removal
                         and (job_id, s.share_id) in self.purged_now)
            order = base.process_order(spec.class_name, spec.memory_gb)
            work.append(Work(job_id, spec.work_type, spec.user, spec.class_name, order, spec.memory_gb,
                             rm.cap_input(job, cls, self.ctx.epoch_ms, purged, base.config.behaviours),
                             submit_seq=self.ctx.submit_seq.get(job_id, job_id),
                             shares=rm.shares(job, order, self.ctx.ranks.get(cycle, {}).get(job_id))))
        # where every job's investments are the log's Existing ranks, two jobs' do not compare (as
        # the audit reads them): takeFromTheRich then meets them as an open order, the RM's pick
        # followed (`_choices`); a simulated investment anywhere keeps the simulated comparison
        logged = self.ctx.ranks.get(cycle, {})
        ranked = any(job.shares for job in self.jobs.values()) and all(
            rm.ranked(job, logged.get(job_id)) for job_id, job in self.jobs.items() if job.shares)
        inp = CycleInput(cycle, base.config, base.classes, base.nodepools, machines, tuple(work), self.memory.needy,
                         investment_ranked=ranked)
        return adapt(inp, base, self.boot)

    def _hints(self, cycle: int) -> Hints:
        """The orders the log reveals for the cycle; takeFromTheRich's printed order of the machines it met
        (ties of a node map hashed on IPs a log before 3.0.0 never shows) where the simulated RM holds what
        the log's did, as the audit reads it."""
        logged = self.ctx.logged
        searched = logged.searched.get(cycle, {}) if logged and self._as_logged(cycle) else {}
        return Hints(tuple(logged.user_orders.get(cycle, ())) if logged else (),
                     tuple(logged.job_order.get(cycle, ())) if logged else (),
                     logged.share_walk.get(cycle, {}) if logged else {},
                     self.memory, prefer=self._prefer(cycle),
                     given_first=logged.freeable_given.get(cycle, ()) if logged else (), searched=searched)

    def _prefer(self, cycle: int) -> dict[str, int]:
        """The hosts the RM connected new shares on this cycle, in the order it created them (share
        ids): What Of meets them first only among machines it finds equally free (rmref.choices),
        where the RM's walk followed a HashMap keyed by random ids and no input settles the pick.
        A plug-in What Of has ties of its own, if any: it is given none."""
        if self.phases.what_of is not what_of:
            return {}
        connected = self.ctx.logged.connected.get(cycle, []) if self.ctx.logged else []
        prefer: dict[str, int] = {}
        for _job, host, _order, _sid in sorted(connected, key=lambda r: r[3] or 0):
            prefer.setdefault(host, len(prefer))
        return prefer

    def _check(self, inp: CycleInput, result: CycleResult, cycle: int) -> None:
        """Stop a scheduler that puts more on a machine than it holds (cycle and machine named)."""
        free = {m.name: m.order for m in inp.machines}
        for w in inp.work:
            for s in w.shares:
                if s.host in free and not departed(s, inp):  # (before 2.1.0: not on the machine's new record)
                    free[s.host] -= s.order
        for p in result.decisions.placements:
            if p.host not in free:
                raise InputError(f"cycle {cycle}: the scheduler placed job {p.job_id} on {p.host}, "
                                 "which is not a machine of the cluster")
            free[p.host] -= p.order
        over = sorted(h for h, f in free.items() if f < 0)
        for host in over:
            placed = [p for p in result.decisions.placements if p.host == host]
            if placed:
                m = next(m for m in inp.machines if m.name == host)
                raise InputError(f"cycle {cycle}: the scheduler over-allocates machine {host} "
                                 f"({m.order - free[host]} quantum shares placed on {m.order}; "
                                 f"jobs {', '.join(str(j) for j in sorted({p.job_id for p in placed}))})")

    def _apply(self, inp: CycleInput, result: CycleResult, cycle: int, t: float) -> None:
        """Carry out the schedule the cycle publishes (`result.published`): each new share gets an
        id and a process, each removed one stops. What Of's placements in their order, as
        defragmentation left them, give the ids; the decisions say why a share was removed."""
        d = result.decisions
        # [job, host, share id] of each placement; defragmentation may hand one to another job
        new: list[tuple[int, str, int]] = [(p.job_id, p.host, sid) for p, sid in zip(
            d.placements, self._share_ids(d.placements, cycle), strict=True)]
        handed: set[int] = set()  # share ids defragmentation handed to a needy job (never fixed)
        why = {(e.job_id, e.share_id): e.reason for e in d.evictions}
        for a in d.defrag:
            if a.action == EVICT:
                why[(a.donor_job, a.share_id)] = "defrag"
                continue
            k = next(i for i, n in enumerate(new) if n[0] == a.donor_job and n[1] == a.host)
            if a.action == REASSIGN:
                new[k] = (a.needy_job, new[k][1], new[k][2])
                handed.add(new[k][2])
            elif a.action == CANCEL:
                new.pop(k)
        published = result.published
        for job_id, entry in published.items():
            hosts = sorted(h for j, h, _ in new if j == job_id)
            if hosts != list(entry.additions):
                raise AssertionError(f"cycle {cycle}: job {job_id}'s placements {hosts} are not the published "
                                     f"additions {list(entry.additions)}")
        # the RM numbers shares as it creates them: the Orchestrator starts them in share-id order (the
        # log's ids where the cycle placed what the log shows, whichever order rmref's What Of met them in)
        for job_id, host, sid in sorted(new, key=lambda n: n[2]):
            job = self.jobs.get(job_id)
            if job is None:
                continue
            job.shares[sid] = rm.RmShare(sid, host, handed_over=sid in handed)
            self.or_work[job_id].add(sid, host, t)
            self.run.first_share.setdefault(job_id, t / 1000.0)
        for job_id, entry in published.items():
            job = self.jobs.get(job_id)
            for _host, sid in entry.removals:
                share = job.shares.get(sid) if job else None
                if share is None or share.pending_removal:
                    continue  # already leaving: not a new removal
                share.pending_removal = True
                if why.get((job_id, sid)) not in PURGES:  # a dead host's work is not the scheduler's choice
                    self.run.preempted.append((cycle, job_id, sid, why.get((job_id, sid), "shrink")))
                self.or_work[job_id].remove(sid, t)
        self._tally(inp, cycle)

    def _share_ids(self, placements: tuple[Placement, ...], cycle: int) -> list[int]:
        """Ids for the new shares: the RM numbers them in the order it connects them, which What Of's
        answer does not keep; where the cycle places exactly what the log shows, the log's ids."""
        logged = self.ctx.logged.connected.get(cycle, []) if self.ctx.logged else []
        if (sorted((p.job_id, p.host) for p in placements) == sorted((j, h) for j, h, _o, _s in logged)
                and not self.used_ids & {sid for *_, sid in logged}):
            free: dict[tuple[int, str], list[int]] = {}
            for j, h, _o, sid in logged:
                free.setdefault((j, h), []).append(sid)
            ids = [free[(p.job_id, p.host)].pop(0) for p in placements]
        else:
            ids = list(range(self.next_share, self.next_share + len(placements)))
        self.next_share = max([self.next_share - 1, *ids]) + 1
        self.used_ids.update(ids)
        return ids

    def _tally(self, inp: CycleInput, cycle: int) -> None:
        """What the cycle leaves: processes per job, quantum shares in use (those being removed
        too) of the online capacity, the users with work."""
        in_use = 0
        for job_id, job in sorted(self.jobs.items()):
            # in the quanta of the job's own pool tree, as the machines' capacity counts them
            in_use += self.boot.process_order(job.spec.class_name, job.spec.memory_gb) * len(job.shares)
            self.run.held.append((cycle, job_id, job.held()))
        self.run.used.append((cycle, in_use, online_capacity(inp.machines)))
        self.run.users[cycle] = tuple(sorted({w.user for w in inp.work}))


def _node_tables(workload: Workload, ctx: Context) -> dict[str, pl.DataFrame]:
    """The workload's node events as the `nodes` table the inventory rebuild reads, each in the
    first cycle at or after its time."""
    times = ctx.times
    rows = []
    for n in workload.nodes:
        t = n.time * 1000.0
        k = next((i for i, ct in enumerate(times) if ct + 1e-6 >= t), None)
        if k is None:
            continue  # after the last cycle
        rows.append((ctx.cycles[k], n.host, n.event, n.nodepool, n.share_order, n.memory_mb, n.ip))
    nodes = pl.DataFrame(rows, schema={"cycle": pl.UInt32, "host": pl.String, "event": pl.String,
                                       "nodepool": pl.String, "share_order": pl.Int64, "memory_mb": pl.Int64,
                                       "ip": pl.String}, orient="row").with_row_index("line", offset=1)
    # every other table the inventory could read is there, empty: the workload states every node
    # (conform broadcasts its null columns over a frame of no columns to one row: cleared)
    tables = {name: conform(pl.DataFrame(), schema).clear() for name, schema in SCHEMAS.items()}
    return {**tables, "nodes": conform(nodes, SCHEMAS["nodes"]), "nodepools": ctx.nodepools}


def simulate_run(ctx: Context, workload: Workload, boot: Bootstrap, phases: Phases | None = None,
                 progress: OnProgress | None = None, stage: str = "simulating") -> Run:
    """Simulate every cycle of the context with the given configuration and phases (rmref's by default)."""
    sim = Simulation(ctx, workload, boot, phases or Phases())
    n = len(ctx.cycles)
    for i in counted(range(n), n, progress, stage):
        sim.step(i)
    return sim.run


