"""Evictions: which processes a job gives up when How Much counts it fewer than it holds.

RmJob.shrinkBy sorts the job's assigned shares by investment (least first) and removes the first
ones (RmJob.ShareByInvestmentSorter, which calls RmJob.compareInvestment):
  1. a process still initializing goes before any initialized one;
  2. two initializing processes: the one with less initialization time so far goes first; on a
     tie the comparator says "equal" and the sort keeps the job's share map order (RmJob's
     assignedShares, a HashMap keyed by random share ids): `map_rank` where the caller knows it
     (a log prints the job's shares in exactly this order), else the newest share first;
  3. two initialized ones: less investment (work done in the process) first;
  4. same investment: the larger host first (the "deeper nodepool" rule never applies: the RM
     compares a share's depth with itself), then the newest share (highest id) first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rmref.constants import ALREADY_LEAVING, PURGE, PURGE_LEAVING, RESERVATION, SHRINK, VARIED_OFF
from rmref.model import FAIR_SHARE, CycleInput, Eviction, Machine, Share, Work


@dataclass(frozen=True)
class HeldShare:
    """One process a job holds, as the eviction order sees it."""

    share_id: int
    host: str
    initialized: bool
    init_ms: int  # initialization time so far (or taken, once initialized)
    investment: int  # work-item time invested in the process (ms)
    host_memory_mb: int
    map_rank: int = 0  # place in the job's share map (Share.map_rank); 0: unknown


def investment_key(share: HeldShare) -> tuple[int, int, int, int, int]:
    """Sort key: least investment first (see the module docstring for the rules)."""
    if not share.initialized:
        return (0, share.init_ms, share.map_rank, -share.share_id, 0)
    return (1, share.investment, -share.host_memory_mb, -share.share_id, 0)


def shrink_by(shares: Sequence[HeldShare], howmany: int) -> list[HeldShare]:
    """The processes a job loses when it must shed `howmany` of them."""
    return sorted(shares, key=investment_key)[: max(0, min(howmany, len(shares)))]


# ------------------------------------------------------------------------------------------------
# The eviction phase of one cycle (NodepoolScheduler.doEvictions and what runs before it).
#
# In the RM a share taken from a job stays in the job's assigned set, marked as pending removal,
# until the Orchestrator confirms the process is gone; the published schedule lists every pending
# removal again each cycle. "Current" for a job is therefore what it holds minus what is already
# leaving (RmJob.countNShares; new shares placed this cycle would count too, but a job counted
# fewer than it holds is never given any).
#
# Three things take shares away before defragmentation, in this order:
#   purge        a dead host's work is taken at once, before the schedule is computed
#                (NodePool.disable from Scheduler.handleDeadNodes);
#   reservation  a host the RESERVE phase chose to clear (NodePool.setupPreemptions, during the
#                What Of of reservations) loses every share that is still *preemptable*: fair-share
#                work of a job that, at that moment, holds more than it was counted;
#   shrink       every job counted fewer processes than it currently has gives up the difference
#                (RmJob.shrinkBy, UIMA-4275), least invested first.
# The NodePool squatter/resident eviction (doEvictionsByMachine, neededByOrder) is dead code in
# the RM this models: nothing calls it, so a squatter loses shares only through shrink or
# defragmentation.
#
# Share.initialized is the RM's own test: the Orchestrator has sent an initialization window with
# an end. Orchestrators that report the time so far as the end make every reported process
# "initialized" while it is still initializing; its investment is then 0, so it still goes first,
# and ties among such processes fall to the larger host, then the newest share.
# ------------------------------------------------------------------------------------------------




def held_count(work: Work) -> int:
    """Processes the job currently has: assigned minus those already pending removal."""
    return sum(not s.pending_removal for s in work.shares)


def _held_share(share: Share, machines: Mapping[str, Machine]) -> HeldShare:
    """The share as the eviction order sees it (host memory from the machine list)."""
    host = machines.get(share.host)
    return HeldShare(share.share_id, share.host, share.initialized, share.init_ms, share.investment,
                     host.memory_mb if host else 0, share.map_rank)


def shrink_victims(work: Work, counted: int, machines: Mapping[str, Machine],
                   leaving: frozenset[int] = frozenset()) -> list[Share]:
    """The shares shrinkBy marks ("Removing share") when the job is counted `counted` processes.

    `leaving` holds share ids already taken earlier in this cycle. The RM sorts *all* the job's
    assigned shares, those already pending removal included, and marks the first `overage` of
    them (overage = what the job holds, less what is leaving, less its count); marking one that is
    already leaving changes nothing, so the job then sheds fewer than its overage this cycle
    (and the rest in a later one). `evictions` tells the two apart.
    """
    gone = {s.share_id for s in work.shares if s.pending_removal} | set(leaving)
    overage = sum(s.share_id not in gone for s in work.shares) - counted
    if overage <= 0:
        return []
    by_id = {s.share_id: s for s in work.shares}
    return [by_id[h.share_id] for h in shrink_by([_held_share(s, machines) for s in work.shares], overage)]


def _preemptable(work: Work, inp: CycleInput) -> bool:
    """Fair-share work can be preempted; FIXED_SHARE and RESERVE shares are fixed."""
    cls = inp.class_of(work)
    return cls is not None and cls.policy == FAIR_SHARE


def disable_purges(machine: Machine | None, work_type: str, policy: str | None, by_policy: bool = True) -> bool:
    """Whether NodePool.disable, run on the machine since the previous cycle, purges a share of
    this work there: a dead machine loses everything but reservations; one an administrator
    varied off loses only its fair-share work (its services and other fixed work stay on it).
    Before 2.1.0 (`by_policy` False: behaviour purge_by_policy) a varied-off machine loses
    everything but reservations too."""
    if machine is None or not machine.disabled or work_type == "Reservation":
        return False
    return machine.disabled != VARIED_OFF or policy == FAIR_SHARE or not by_policy


def purged_shares(inp: CycleInput) -> list[tuple[Work, Share]]:
    """The shares NodePool.disable took from the machines it ran on since the previous cycle.

    disable walks every share the machine still holds, one already leaving included (that one is
    purged, and logged, once more). The RM takes them before the cycle counts anything, so no
    phase counts them as held.

    Before 2.1.0 the walk stops at the first reservation process it meets: which processes come
    before it is the order of a HashMap on random ids, which no input gives. On such a machine
    the processes the input marks purged (`Share.purged`: the schedule's `^P`, or what a
    simulation purged) are taken, and no other: a walk that met the reservation's first purged
    nothing, and the schedule marks nothing there.
    """
    machines = {m.name: m for m in inp.machines}
    by_policy = inp.config.behaviours.has("purge_by_policy")
    walk_stopped = set() if by_policy else _walk_stopped(inp)
    out = []
    for w in inp.work:
        cls = inp.class_of(w)
        policy = cls.policy if cls else None
        out += [(w, s) for s in w.shares if disable_purges(machines.get(s.host), w.work_type, policy, by_policy)
                and (s.host not in walk_stopped or s.purged)]
    return out


def _walk_stopped(inp: CycleInput) -> set[str]:
    """Disabled machines holding a reservation's process, where the disable's walk stopped."""
    disabled = {m.name for m in inp.machines if m.disabled}
    return {s.host for w in inp.work if w.work_type == "Reservation" for s in w.shares if s.host in disabled}


def off_the_record(purged: bool, revived: bool, stranded: bool, by_policy: bool) -> bool:
    """Whether a process takes no space on the machine record the RM holds for its host.

    Before 2.1.0 (`by_policy` False: no behaviour purge_by_policy) NodePool.disable took the machine
    out of the pool's tables, and the node came back as a new, empty machine, while the processes
    it purged (`purged`) stayed with their jobs until the Orchestrator confirmed them gone, and
    those it kept stayed on the old record (`stranded`). A dead node came back otherwise: as its
    old record, purged processes and all (`revived`). From 2.1.0 on a machine stays in the tables
    and every process it holds is on its one record.
    """
    return not by_policy and ((purged and not revived) or stranded)


def departed(share: Share, inp: CycleInput) -> bool:
    """Whether the share's machine no longer holds it (`off_the_record` of the share's flags)."""
    return off_the_record(share.purged, share.revived, share.stranded, inp.config.behaviours.has("purge_by_policy"))


def in_tables(machine: Machine, inp: CycleInput) -> bool:
    """Whether the machine is in its pool's tables (NodePool.allMachines): before 2.1.0
    (purge_by_policy) NodePool.disable took a dead or varied-off machine out of them until it came
    back, so rearrangeVirtual, which looks the node up there, never accounts its processes."""
    return machine.online or inp.config.behaviours.has("purge_by_policy")


def held_now(inp: CycleInput) -> dict[int, int]:
    """RmJob.countNShares when the cycle's counting starts: held, less what is leaving or purged."""
    gone = {(w.job_id, s.share_id) for w, s in purged_shares(inp)}
    return {w.job_id: sum(1 for s in w.shares if not s.pending_removal and (w.job_id, s.share_id) not in gone)
            for w in inp.work}


def clearing_evictions(inp: CycleInput, counts: Mapping[int, int], hosts: Sequence[str],
                       taken: dict[int, set[int]], walk: Mapping[str, Sequence[int]]) -> list[Eviction]:
    """Shares evicted from hosts set up for clearing for a reservation (setupPreemptions).

    The RM clears the hosts in turn and walks each host's shares in its hash-map order (keyed by
    random ids): a share goes while its job still holds more than it was counted. `walk` gives a
    host's order where the caller knows it (a log shows it); otherwise shares go by id. `taken`
    (job -> share ids already gone this cycle: purges, earlier clearings) is updated in place.
    """
    owner = {s.share_id: (w, s) for w in inp.work for s in w.shares}
    out = []
    for host in hosts:
        listed = list(walk.get(host, ()))
        on_host = sorted((sid for sid, (_, s) in owner.items() if s.host == host), key=lambda sid: (
            listed.index(sid) if sid in listed else len(listed), sid))
        for sid in on_host:
            work, s = owner[sid]
            if work.job_id not in counts or not _preemptable(work, inp) or s.pending_removal:
                continue
            gone = taken.setdefault(work.job_id, set())
            if sid in gone or held_count(work) - len(gone) - counts[work.job_id] <= 0:
                continue  # only a job over its count is preemptable
            gone.add(sid)
            out.append(Eviction(work.job_id, host, sid, s.order, RESERVATION))
    return out


def evictions(inp: CycleInput, counts: Mapping[int, int], clear_hosts: Sequence[str] = (),
              share_walk: Mapping[str, Sequence[int]] | None = None) -> tuple[Eviction, ...]:
    """The shares the cycle takes away before defragmentation: purges, reservation clearing, shrinks.

    `counts` is How Much's processes per job (a job absent from it is not judged and keeps what
    it has); `clear_hosts` are the hosts the RESERVE phase chose to clear (countFreeableMachines),
    `share_walk` the order the RM walks a cleared host's shares in, where known.
    Only fair-share work is shrunk: FIXED_SHARE and RESERVE work is never counted below what it holds.
    """
    machines = {m.name: m for m in inp.machines}
    out = [Eviction(w.job_id, s.host, s.share_id, s.order, PURGE_LEAVING if s.pending_removal else PURGE)
           for w, s in purged_shares(inp)]
    taken: dict[int, set[int]] = {}
    for e in out:
        taken.setdefault(e.job_id, set()).add(e.share_id)
    out += clearing_evictions(inp, counts, clear_hosts, taken, share_walk or {})
    for work in sorted(inp.work, key=lambda w: w.job_id):
        if work.job_id not in counts or not _preemptable(work, inp):
            continue
        leaving = frozenset(taken.get(work.job_id, ()))
        gone = leaving | {s.share_id for s in work.shares if s.pending_removal}
        out += [Eviction(work.job_id, s.host, s.share_id, s.order, ALREADY_LEAVING if s.share_id in gone else SHRINK)
                for s in shrink_victims(work, counts[work.job_id], machines, leaving)]
    return tuple(out)
