"""One cycle audited phase by phase: caps, How Much, What Of, evictions, then defragmentation and the chained run."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace
from typing import Any

from replay.apps.audit.compare import compare
from replay.apps.audit.defrag import audit_defrag
from replay.apps.audit.result import DECISIONS, AuditResult, CycleTrace
from replay.apps.audit.reuse import OWN, Follow, Reuse
from replay.apps.audit.schedule import audit_schedule
from replay.apps.causes import Cause, CyclePlacements, count_cause, eviction_cause, placement_cause, placement_step
from replay.apps.verify import Verified, follow_arrival_order, follow_node_ips, follow_placements
from replay.model import settings as st
from replay.model.logged import Logged, pair_key
from rmref import Caps, HowMuch, Phases
from rmref.constants import ALREADY_LEAVING, PURGES, RESERVATION
from rmref.howmuch_state import stale_after_howmuch
from rmref.model import CycleInput, Eviction, Placement


def _cap_rule(caps: Caps, logged: object) -> Cause:
    return Cause("initJobCap", "", f"rmref's cap chain is base {caps.base}, projected {caps.projected}, potential "
                 f"{caps.potential}, actual {caps.actual} (bound by {caps.rule}); the RM's actual cap is {logged}")


def audit_cycle(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                only: Collection[str] = DECISIONS) -> CycleTrace:
    """Run each phase on one cycle's input, compare it with the log, and return rmref's run."""
    result.cycles.append(inp.cycle)
    # only rmref's own phases say which choices they found equal (rmref.choices)
    own = {n for n in ("how_much", "what_of", "defrag") if getattr(phases, n) is getattr(OWN, n)}
    reuse = Reuse(phases)
    phases = reuse.recording
    follow = Follow()
    caps = _audit_caps(inp, logged, phases, result, "caps" in only)
    counts = logged.counts.get(inp.cycle, {})  # the downstream phases read the RM's counts
    trace = CycleTrace(inp.cycle, inp, caps, logged=logged, kinds=tuple(k for k in DECISIONS if k in only))
    if "counts" in only:
        trace = replace(trace, how_much=_audit_counts(inp, logged, phases, result, caps, "how_much" in own))
    # What Of's start on unschedulable machines, as rmref's How Much leaves it (it reads neither
    # caps nor counts, so one value serves every walk of the cycle, phase-isolated and chained)
    own_left = trace.how_much.stale_left if "how_much" in own and trace.how_much is not None else None
    stale = stale_after_howmuch(inp) if own_left is None else own_left
    if "placements" in only:
        inp, placed = _audit_placements(inp, logged, phases, result, counts, reuse if "what_of" in own else None,
                                        follow, stale)
        trace = replace(trace, input=inp, placements=placed)
    if "evictions" in only:
        trace = replace(trace, evictions=_audit_evictions(inp, logged, phases, result, counts))
    if "defrag" in only:
        trace = replace(trace, defrag=audit_defrag(inp, logged, counts, phases.defrag, result,
                                                   follow if "defrag" in own else None, stale))
    if "schedule" in only and inp.cycle in result.skipped_kinds.get("schedule", {}):
        result.chained = None  # rmref's chained run does not carry over what it could not run
    elif "schedule" in only:
        trace = replace(trace, chained=audit_schedule(inp, logged, reuse.replaying, result, follow),
                        followed=follow.followed, served=follow.served)
    return trace


def _audit_caps(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult, tally: bool) -> dict[int, Caps]:
    """rmref's cap chain for every job the RM logged a cap for."""
    c, logged_caps = inp.cycle, logged.caps.get(inp.cycle, {})
    caps = {w.job_id: phases.caps(w.cap_input) for w in inp.work if w.job_id in logged_caps}
    if tally:
        result.ref["caps"] += [(c, j, k.base, k.projected, k.potential, k.actual) for j, k in sorted(caps.items())]
        compare(result, "caps", c, logged_caps, {j: k.actual for j, k in caps.items()},
                lambda j, lv, rv: _cap_rule(caps[j], lv) if j in caps
                else Cause("initJobCap", "", "the RM logged no cap input for this job"))
    return caps


def _audit_counts(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                  caps: Mapping[int, Caps], own: bool) -> HowMuch:
    """How Much on the logged caps (the cap phase is audited on its own). The RM logs a cap for
    every job but a completed or refused one, whose cap rmref derives as the RM does. `own`:
    rmref's own How Much, which follows the RM's walk where it finds the machines alike."""
    c = inp.cycle
    logged_caps = logged.caps.get(c, {})
    job_caps = {w.job_id: logged_caps[w.job_id] if w.job_id in logged_caps else phases.caps(w.cap_input).actual
                for w in inp.work}
    hm = phases.how_much(inp, job_caps, dict(inp.config.user_allotments), logged.user_orders.get(c, ()))
    logged_counts = logged.counts.get(c, {})
    hm, verified = _follow_freeable_walk(inp, logged, phases, hm, job_caps, logged_counts) if own else (hm, {})
    result.ref["counts"] += [(c, w.job_id, w.order, hm.counts[w.job_id]) for w in inp.work if w.job_id in hm.counts]
    work = {w.job_id: w for w in inp.work}
    reasons = logged.deferrals.get(c, {})

    def why(job: int, lv: object, rv: object) -> Cause:
        if job not in work:
            return Cause("howMuch", f"job {job}", f"the RM counted {lv} processes for a job the cycle does not "
                         "publish")
        return count_cause(work[job], inp, hm, logged.counters(c), lv if isinstance(lv, int) else None,
                           reasons.get(job))

    open_why = _allotment_open(inp, hm, logged_counts) if result.users_open else None
    if open_why is not None:
        result.skip(c, ("counts", "schedule"), open_why)
        return hm
    compare(result, "counts", c, logged_counts, {j: n for j, n in hm.counts.items() if n or j in logged_counts}, why,
            verified, "countFreeableMachines")
    return hm


def _allotment_open(inp: CycleInput, hm: HowMuch, logged_counts: Mapping[int, Any]) -> str | None:
    """Why the cycle's counts rest on input neither the log nor --config gives, if they do: rmref
    defers a job for its user's allotment that the RM counts more, and the user may have an
    allotment of its own (ducc.users), which the RM prints only at its start."""
    users = {w.job_id: w.user for w in inp.work}
    own = dict(inp.config.user_allotments)
    for job, reason in sorted(hm.deferred.items()):
        theirs = logged_counts.get(job)
        if (isinstance(theirs, int) and theirs > hm.counts.get(job, 0)
                and st.rests_on_unread_allotment(reason, users.get(job), own)):
            return (f"job {job}'s count rests on user {users.get(job)}'s allotment, which the log does not show: "
                    f"rmref defers it ({reason}) and the RM counts it {theirs}; {st.USERS_UNREAD}")
    return None


def _follow_freeable_walk(inp: CycleInput, logged: Logged, phases: Phases, hm: HowMuch, job_caps: Mapping[int, int],
                          logged_counts: Mapping[int, object]) -> tuple[HowMuch, dict[int, Verified]]:
    """countFreeableMachines walks alike machines in a node map hashed on IPs the log (before DUCC
    3.0.0) never shows, and the log shows the walk (`Giving H because it is free|freeable`): where
    How Much then counts every job as the RM did, and on its own order did not, the RM's walk is a
    verified choice (before 2.1.0 it decides whether a free machine is given or a busy one set aside)."""
    given = logged.freeable_given.get(inp.cycle, ())
    own = {j: n for j, n in hm.counts.items() if n or j in logged_counts}
    if not given or inp.config.behaviours.has("node_ip_logged") or own == dict(logged_counts):
        return hm, {}
    again = phases.how_much(inp, job_caps, dict(inp.config.user_allotments),
                            logged.user_orders.get(inp.cycle, ()), given_first=given)
    theirs = {j: n for j, n in again.counts.items() if n or j in logged_counts}
    if theirs != dict(logged_counts):
        return hm, {}
    why = (f"agrees: countFreeableMachines met {', '.join(given)} first for a reservation, among machines alike "
           f"but for the node IPs its node map hashes, which the log of DUCC {inp.config.behaviours.release} "
           "never shows (the log shows its walk)")
    return again, {j: Verified(own.get(j), why) for j in set(own) | set(theirs) if own.get(j) != theirs.get(j)}


def _audit_placements(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                      counts: Mapping[int, int], reuse: Reuse | None, follow: Follow,
                      stale: Mapping[str, int]) -> tuple[CycleInput, tuple[Placement, ...]]:
    """What Of on the logged counts, against the connectShare lines. With rmref's own What Of
    (`reuse`), a host the RM chose among machines rmref found equally free, or by node IPs or an
    arrival order of machines the log does not show, is a verified choice, and the rest of the
    cycle follows it (replay.apps.verify): the cycle's input (with the IPs or order found, if any)
    and the placements.
    `stale` is What Of's `stale_left` (passed, as rmref.schedule passes it, only when not empty)."""
    placed: dict[int, list[Any]] = {}
    verified: dict[int, Verified] = {}
    left = {"stale_left": stale} if stale else {}
    if reuse is None:
        placements = tuple(phases.what_of(inp, counts, **left))
    else:
        f = follow_placements(inp, counts, logged.placements.get(inp.cycle, {}), logged.connected.get(inp.cycle, ()),
                              stale)
        reuse.calls["what_of"] = ((inp, counts), left, f.own.placements)  # the chained run's own walk
        placements, verified = f.what_of.placements, f.verified
        follow.prefer.update(f.prefer)
        by_ip = follow_node_ips(inp, counts, logged.placements.get(inp.cycle, {}), placements, stale)
        if by_ip is None and result.arrival_open:
            by_ip = follow_arrival_order(inp, counts, logged.placements.get(inp.cycle, {}), placements,
                                         result.arrival_open, stale)
        if by_ip is not None:  # the later phases and the chained run read the IPs (or arrival order) found
            inp, placements, ip_verified = by_ip
            verified = {**verified, **ip_verified}
        follow.sentences += [v.sentence for v in verified.values()]
    for p in placements:
        placed.setdefault(p.job_id, []).append((p.host, p.order))
        result.ref["placements"].append((inp.cycle, p.job_id, p.host, p.order))
    theirs, ours = logged.placements.get(inp.cycle, {}), {j: sorted(v) for j, v in placed.items()}
    cycle = CyclePlacements(inp, theirs, ours, counts, placements, stale)
    compare(result, "placements", inp.cycle, theirs, ours,
            lambda j, lv, rv: placement_cause(inp, j, lv, rv, cycle, result.orders_drawn), verified,
            lambda j: placement_step(inp, j))
    return inp, placements


def _audit_evictions(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                     counts: Mapping[int, int]) -> tuple[Eviction, ...]:
    """doEvictions on the logged counts, against the shrinkBy and purge lines."""
    evicted: dict[int, list[Any]] = {}
    done = tuple(phases.evictions(inp, counts, logged.cleared.get(inp.cycle, ()), logged.share_walk.get(inp.cycle, {})))
    # a share the reservation clearing took that shrinkBy then marks again: the log's shrinkBy line
    # is the only trace of either at INFO, so the logged side names it once (logged._with_clearing)
    cleared = {(e.job_id, e.share_id) for e in done if e.reason == RESERVATION}
    for e in done:
        result.ref["evictions"].append((inp.cycle, e.job_id, e.host, e.share_id, e.reason))
        if e.reason == ALREADY_LEAVING and (e.job_id, e.share_id) in cleared:
            continue
        # the log's purge lines name the host and the job, not the share
        evicted.setdefault(e.job_id, []).append((e.host, None if e.reason in PURGES else e.share_id))
    compare(result, "evictions", inp.cycle, logged.evictions.get(inp.cycle, {}),
            {j: sorted(v, key=pair_key) for j, v in evicted.items()},
            lambda j, lv, rv: eviction_cause(inp, j, counts.get(j), lv, rv, done))
    return done
