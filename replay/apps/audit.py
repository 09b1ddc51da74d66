"""`rmreplay audit`: run rmref on every rebuilt cycle and compare its decisions with the logged ones.

Each phase is fed the RM's *logged* upstream decisions (What Of gets the logged counts, not
rmref's), so one divergence does not cascade: every divergent row is attributable to the phase
that produced it. A phase can be swapped (`rmref.Phases`) to replay history against a change, and
`only` limits the audit to some decision kinds.

Where rmref's own phase found several choices equal (an order no log shows decided it), a
logged choice among them is a verified choice: it agrees, is listed in `AuditResult.verified`,
and the rest of the cycle follows it (replay.apps.verify, docs/verified-choices.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import polars as pl

from replay.apps.causes import Cause, CyclePlacements, count_cause, eviction_cause, placement_cause
from replay.apps.verify import (
    Verified, cleared_by_rm, follow_node_ips, follow_placements, unsettled_sentence, verdict_admitted,
    verdict_sentence,
)
from replay.model.conflicts import CONFLICTS
from replay.model.release import ReleaseChoice
from replay.model.cycleref import epochs, rows_frame, span_of
from replay.model.damage import Damage, damage_report, from_cycle, resume_points
from replay.model.logged import Logged, logged_decisions, pair_key
from replay.model.settings import Assumption
from replay.model.stale import stale_assumptions, stale_free
from replay.model.start import NODE_FREE, ReplayStart, replay_start
from replay.model.start import PARTIAL_CYCLE as PARTIAL_CYCLE  # where the tests and callers have read it
from replay.model.world import Bootstrap, cycle_count
from replay.parsing.tables import Schema
from replay.progress import OnProgress, counted
from rmref import Caps, Defrag, HowMuch, Phases
from rmref.constants import ALREADY_LEAVING, PURGE, PURGES, RESERVATION
from rmref.cycle import CycleResult, Hints, schedule
from rmref.defrag import NODE_IP
from rmref.model import CycleInput, Eviction, Placement

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "schedule")


@dataclass
class AuditResult:
    """rmref's decisions, the divergences and the per-kind tallies of one audit."""

    cycles: list[int] = field(default_factory=list)
    ref: dict[str, list[tuple]] = field(default_factory=lambda: {k: [] for k in DECISIONS})
    # (cycle, job, decision, logged, rmref, explanation, step, detail): DIVERGENCE_SCHEMA
    divergences: list[tuple[int, int | None, str, str, str, str, str, str]] = field(default_factory=list)
    # the RM's free choices found among rmref's equal ones (replay.apps.verify), counted as agreeing:
    # (cycle, job, decision, logged, rmref's own pick, explanation, step, detail), DIVERGENCE_SCHEMA
    verified: list[tuple[int, int | None, str, str, str, str, str, str]] = field(default_factory=list)
    tally: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in DECISIONS})
    audited: tuple[str, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)  # cycles not audited at all, and why
    damaged: dict[int, Damage] = field(default_factory=dict)  # cycles not audited: their input is damaged
    # decision kind -> cycle -> why that kind was not audited in that cycle (whole cycles included)
    skipped_kinds: dict[str, dict[int, str]] = field(default_factory=dict)
    assumed: tuple[Assumption, ...] = ()  # every setting rmref read and its source, and the nodes inferred
    wealth: dict[str, int] | None = None  # users' wealth, which defragmentation carries between cycles
    chained: CycleResult | None = None  # the last cycle's end-to-end run (what rmref carries forward)
    start: Carried | None = None  # what the first cycle run starts from, when not the log's start (a re-entry)
    # a stored audit's way back into any audited cycle (replay.apps.stored): (tables, cycle) -> its trace
    reenter: Callable[[Mapping[str, pl.DataFrame], int], CycleTrace | None] | None = None
    traces: dict[int, CycleTrace] = field(default_factory=dict)  # rmref's whole run of the cycles asked for
    carried: dict[int, Carried] = field(default_factory=dict)  # what each cycle started from (to run it again)
    epochs: dict[int, int | None] = field(default_factory=dict)  # cycle -> the RM's epoch (its name in any copy)
    config_conflicts: tuple[dict[str, str], ...] = ()  # where --config contradicts the log (configdir.apply_config)
    rm_release: ReleaseChoice | None = None  # the DUCC release replayed, its source and evidence

    def report(self) -> dict:
        """The report.json contract."""
        bad = {d[0] for d in self.divergences}
        return {
            "cycles": len(self.cycles) + len(self.damaged) + len(self.skipped),
            "cycles_audited": len(self.cycles),
            "cycles_agree": sum(1 for c in self.cycles if c not in bad),
            "damaged": damage_report(self.damaged),
            "config_conflicts": list(self.config_conflicts),
            "decisions": {k: {"agree": a, "total": t} for k, (a, t) in self.tally.items()},
            "verified_choices": {k: sum(1 for v in self.verified if v[2] == k) for k in self.audited},
            "audited": list(self.audited),
            "skipped": {"cycles": len(self.skipped), "reason": next(iter(self.skipped.values()), None)},
            "span": span_of(self.cycles, self.epochs),
            "coverage": self.coverage(),
            "assumed": [{"setting": a.setting, "value": a.value, "source": a.source, "evidence": a.evidence}
                        for a in self.assumed],
            "rm_release": self.rm_release.to_json() if self.rm_release else None,
        }

    def coverage(self) -> dict[str, dict]:
        """Per decision kind: cycles audited, cycles skipped and why (reason -> cycles)."""
        out = {}
        for kind in self.audited:
            skipped = self.skipped_kinds.get(kind, {})
            reasons: dict[str, int] = {}
            for why in skipped.values():
                reasons[why] = reasons.get(why, 0) + 1
            out[kind] = {"cycles_audited": sum(1 for c in self.cycles if c not in skipped),
                         "cycles_skipped": len(skipped), "skipped_because": reasons}
        return out

    def carry(self) -> Carried:
        """What rmref carries into the next cycle from the cycles run so far."""
        if self.chained is not None:
            return Carried(self.wealth, self.chained.pure_fair_share, self.chained.defrag.wealth)
        start = self.start or Carried(None, {}, None)
        return Carried(self.wealth, start.pure_fair_share, start.chained_wealth)

    def skip(self, cycle: int, kinds: Collection[str], why: str) -> None:
        """Record that `kinds` were not audited in `cycle`, and why."""
        for kind in kinds:
            self.skipped_kinds.setdefault(kind, {})[cycle] = why


@dataclass(frozen=True)
class Carried:
    """What rmref carries into a cycle from the ones before (so one cycle can be run again alone):
    the users' wealth the phase-isolated defragmentation left, and the chained run's last pure
    fair shares and wealth (its `Hints`). Everything else a cycle reads is in its own input."""

    wealth: dict[str, int] | None
    pure_fair_share: dict[int, int]
    chained_wealth: dict[str, int] | None


# what `audit` hands every audited cycle to, before running it: its input, the logged decisions,
# what it starts from and the kinds audited in it (replay.apps.stored keeps them, to re-enter a cycle)
Checkpoint = Callable[[CycleInput, Logged, Carried, tuple[str, ...]], None]


@dataclass(frozen=True)
class CycleTrace:
    """rmref's run of one audited cycle, every phase as the audit ran it: what `explain` tells."""

    cycle: int
    input: CycleInput
    caps: dict[int, Caps] = field(default_factory=dict)
    how_much: HowMuch | None = None  # on the RM's logged caps
    placements: tuple[Placement, ...] = ()  # on the RM's logged counts
    evictions: tuple[Eviction, ...] = ()
    defrag: Defrag | None = None
    chained: CycleResult | None = None  # the phases chained on rmref's own decisions
    logged: Logged | None = None  # the RM's logged decisions the cycle was compared with (the cycle's at least)


def _cap_rule(caps: Caps, logged: object) -> Cause:
    return Cause("initJobCap", "", f"rmref's cap chain is base {caps.base}, projected {caps.projected}, potential "
                 f"{caps.potential}, actual {caps.actual} (bound by {caps.rule}); the RM's actual cap is {logged}")


def _compare(result: AuditResult, kind: str, cycle: int, logged: Mapping[int, object],
             ref: Mapping[int, object], explain: Callable[[int, object, object], Cause],
             verified: Mapping[int, Verified] | None = None, step: str = "") -> None:
    """Tally one decision kind of one cycle, job by job, and record every disagreement with its cause
    (and every agreement that is a verified choice, `verified`: job -> rmref's own pick and why)."""
    for job in sorted(set(logged) | set(ref) | set(verified or ())):
        lv, rv = logged.get(job), ref.get(job)
        result.tally[kind][1] += 1
        if lv == rv:
            result.tally[kind][0] += 1
            if verified and job in verified:
                v = verified[job]
                result.verified.append((cycle, job, kind, str(lv), str(v.own), f"{step}, job {job}: {v.sentence}",
                                        step, v.sentence))
        else:
            cause = explain(job, lv, rv)
            if not cause.entity:
                cause = replace(cause, entity=f"job {job}")
            result.divergences.append((cycle, job, kind, str(lv), str(rv), cause.sentence(), cause.step,
                                       cause.detail))


# rmref's own phases, which read a mapping's items (never its order) and a sequence's items
# (never its type): a call with such equal arguments gives the same result, so the chained run
# can take the phase-isolated run's result wherever their inputs agree (`_Reuse`)
_OWN = Phases()
_REUSABLE = ("how_much", "what_of", "evictions", "defrag")


def _same(a: object, b: object) -> bool:
    """Whether one of rmref's own phases reads `a` and `b` alike (see _OWN)."""
    if a is b:
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _defrag_reads(args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """defragment's keyword arguments as it reads them: a pure fair share only for the cycle's
    work, 0 when a job has none (rmref.defrag._build). The RM logs a 0 that rmref's How Much
    leaves out, and the chained run carries a finished job's last one."""
    pure, work = kwargs.get("pure_fair_share"), args[0].work
    if not isinstance(pure, Mapping):
        return kwargs
    return {**kwargs, "pure_fair_share": {w.job_id: pure[w.job_id] for w in work if pure.get(w.job_id, 0)}}


_READS: dict[str, Callable[[tuple, dict[str, Any]], dict[str, Any]]] = {"defrag": _defrag_reads}


class _Reuse:
    """One cycle's phase-isolated calls of rmref's own phases and their results, handed to the
    chained run (rmref.schedule) for a call with the same arguments: where rmref's upstream
    decisions equal the logged ones (most cycles), the chained run repeats no phase's work.
    A swapped phase (not rmref's own) always runs."""

    def __init__(self, phases: Phases) -> None:
        self.calls: dict[str, tuple[tuple, dict, object]] = {}
        own = [n for n in _REUSABLE if getattr(phases, n) is getattr(_OWN, n)]
        self.recording = replace(phases, **{n: self._record(n, getattr(phases, n)) for n in own})
        self.replaying = replace(phases, **{n: self._replay(n, getattr(phases, n)) for n in own})

    def _record(self, name: str, phase: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: object, **kwargs: object) -> object:
            out = phase(*args, **kwargs)
            self.calls[name] = (args, kwargs, out)
            return out
        return run

    def _replay(self, name: str, phase: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: object, **kwargs: object) -> object:
            if name in self.calls:
                before, before_kw, out = self.calls[name]
                reads = _READS.get(name, lambda _args, kw: kw)
                if _same(before, args) and _same(reads(before, before_kw), reads(args, kwargs)):
                    return out
            return phase(*args, **kwargs)
        return run


@dataclass
class _Follow:
    """The RM's free choices one cycle's phases verified, for the chained run to follow."""

    prefer: dict[str, int] = field(default_factory=dict)  # What Of: machines' rank in an open order
    choose: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)  # takeFromTheRich's clearings
    needy: Mapping[int, int] | None = None  # detectFragmentation: the RM's verdict, one of rmref's
    # How Much: the machines the RM cleared for a reservation, where the node-map order is open
    cleared: tuple[str, ...] = ()
    sentences: list[str] = field(default_factory=list)

    def any(self) -> bool:
        """Whether there is a choice to follow."""
        return bool(self.prefer or self.choose or self.cleared or self.needy is not None)


def audit_cycle(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                only: Collection[str] = DECISIONS) -> CycleTrace:
    """Run each phase on one cycle's input, compare it with the log, and return rmref's run."""
    result.cycles.append(inp.cycle)
    # only rmref's own phases say which choices they found equal (rmref.choices)
    own = {n for n in ("what_of", "defrag") if getattr(phases, n) is getattr(_OWN, n)}
    reuse = _Reuse(phases)
    phases = reuse.recording
    follow = _Follow()
    caps = _audit_caps(inp, logged, phases, result, "caps" in only)
    counts = logged.counts.get(inp.cycle, {})  # the downstream phases read the RM's counts
    trace = CycleTrace(inp.cycle, inp, caps, logged=logged)
    if "counts" in only:
        trace = replace(trace, how_much=_audit_counts(inp, logged, phases, result, caps))
    if "placements" in only:
        inp, placed = _audit_placements(inp, logged, phases, result, counts, reuse if "what_of" in own else None,
                                        follow)
        trace = replace(trace, input=inp, placements=placed)
    if "evictions" in only:
        trace = replace(trace, evictions=_audit_evictions(inp, logged, phases, result, counts))
    if "defrag" in only:
        trace = replace(trace, defrag=_audit_defrag(inp, logged, counts, phases.defrag, result,
                                                    follow if "defrag" in own else None))
    if "schedule" in only:
        trace = replace(trace, chained=_audit_schedule(inp, logged, reuse.replaying, result, follow))
    return trace


def _audit_caps(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult, tally: bool) -> dict[int, Caps]:
    """rmref's cap chain for every job the RM logged a cap for."""
    c, logged_caps = inp.cycle, logged.caps.get(inp.cycle, {})
    caps = {w.job_id: phases.caps(w.cap_input) for w in inp.work if w.job_id in logged_caps}
    if tally:
        result.ref["caps"] += [(c, j, k.base, k.projected, k.potential, k.actual) for j, k in sorted(caps.items())]
        _compare(result, "caps", c, logged_caps, {j: k.actual for j, k in caps.items()},
                 lambda j, lv, rv: _cap_rule(caps[j], lv) if j in caps
                 else Cause("initJobCap", "", "the RM logged no cap input for this job"))
    return caps


def _audit_counts(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                  caps: Mapping[int, Caps]) -> HowMuch:
    """How Much on the logged caps (the cap phase is audited on its own). The RM logs a cap for
    every job but a completed or refused one, whose cap rmref derives as the RM does."""
    c = inp.cycle
    logged_caps = logged.caps.get(c, {})
    job_caps = {w.job_id: logged_caps[w.job_id] if w.job_id in logged_caps else phases.caps(w.cap_input).actual
                for w in inp.work}
    hm = phases.how_much(inp, job_caps, dict(inp.config.user_allotments), logged.user_orders.get(c, ()))
    logged_counts = logged.counts.get(c, {})
    result.ref["counts"] += [(c, w.job_id, w.order, hm.counts[w.job_id]) for w in inp.work if w.job_id in hm.counts]
    work = {w.job_id: w for w in inp.work}
    reasons = logged.deferrals.get(c, {})

    def why(job: int, lv: object, rv: object) -> Cause:
        if job not in work:
            return Cause("howMuch", f"job {job}", f"the RM counted {lv} processes for a job the cycle does not "
                         "publish")
        return count_cause(work[job], inp, hm, logged.counters(c), lv if isinstance(lv, int) else None,
                           reasons.get(job))

    _compare(result, "counts", c, logged_counts, {j: n for j, n in hm.counts.items() if n or j in logged_counts}, why)
    return hm


def _audit_placements(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                      counts: Mapping[int, int], reuse: _Reuse | None,
                      follow: _Follow) -> tuple[CycleInput, tuple[Placement, ...]]:
    """What Of on the logged counts, against the connectShare lines. With rmref's own What Of
    (`reuse`), a host the RM chose among machines rmref found equally free, or by node IPs the
    log does not show, is a verified choice, and the rest of the cycle follows it
    (replay.apps.verify): the cycle's input (with the IPs found, if any) and the placements."""
    placed: dict[int, list] = {}
    verified: dict[int, Verified] = {}
    if reuse is None:
        placements = tuple(phases.what_of(inp, counts))
    else:
        f = follow_placements(inp, counts, logged.placements.get(inp.cycle, {}), logged.connected.get(inp.cycle, ()))
        reuse.calls["what_of"] = ((inp, counts), {}, f.own.placements)  # the chained run's own walk
        placements, verified = f.what_of.placements, f.verified
        follow.prefer.update(f.prefer)
        by_ip = follow_node_ips(inp, counts, logged.placements.get(inp.cycle, {}), placements)
        if by_ip is not None:  # the later phases and the chained run read the IPs found
            inp, placements, ip_verified = by_ip
            verified = {**verified, **ip_verified}
        follow.sentences += [v.sentence for v in verified.values()]
    for p in placements:
        placed.setdefault(p.job_id, []).append((p.host, p.order))
        result.ref["placements"].append((inp.cycle, p.job_id, p.host, p.order))
    theirs, ours = logged.placements.get(inp.cycle, {}), {j: sorted(v) for j, v in placed.items()}
    cycle = CyclePlacements(inp, theirs, ours, counts, placements)
    _compare(result, "placements", inp.cycle, theirs, ours,
             lambda j, lv, rv: placement_cause(inp, j, lv, rv, cycle), verified, "findShares")
    return inp, placements


def _audit_evictions(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                     counts: Mapping[int, int]) -> tuple[Eviction, ...]:
    """doEvictions on the logged counts, against the shrinkBy and purge lines."""
    evicted: dict[int, list] = {}
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
    _compare(result, "evictions", inp.cycle, logged.evictions.get(inp.cycle, {}),
             {j: sorted(v, key=pair_key) for j, v in evicted.items()},
             lambda j, lv, rv: eviction_cause(inp, j, counts.get(j), lv, rv, done))
    return done


def _logged_phase_outputs(inp: CycleInput, logged: Logged) -> tuple[list[Placement], list[Eviction]]:
    """What Of's and doEvictions' logged decisions, as the defragmentation phase reads them."""
    c = inp.cycle
    placed = [Placement(j, h, o) for j, h, o, _sid in sorted(logged.connected.get(c, ()), key=lambda r: r[3] or 0)]
    held: dict[tuple[int, str], list] = {}
    for w in inp.work:
        for share in w.shares:
            held.setdefault((w.job_id, share.host), []).append(share)
    gone: list[Eviction] = []
    for job, host, sid, order, reason in logged.shrunk.get(c, ()):
        if sid is None:  # a purge line names the host, not the share: every share the job has there
            gone += [Eviction(job, host, s.share_id, s.order, PURGE) for s in held.get((job, host), ())]
        else:
            gone.append(Eviction(job, host, sid, order or 0, reason))
    return placed, gone


def _audit_defrag(inp: CycleInput, logged: Logged, counts: Mapping[int, int], phase: Callable[..., Defrag],
                  result: AuditResult, follow: _Follow | None) -> Defrag:
    """Needy jobs and the shares taken for them, against the ACTUALLY NEEDY lines and the Removals.
    With rmref's own phase (`follow`), a needy verdict or a clearing the RM reached by an order
    the log does not show, and that rmref finds among its equal choices, is a verified choice."""
    c = inp.cycle
    placed, gone = _logged_phase_outputs(inp, logged)
    # takeFromTheRich serves the jobs the RM found needy, as every phase reads the RM's upstream
    # decisions: rmref's own verdict, audited here too, may rest on a tally order the log lacks
    serve = {"serve": logged.needy.get(c, {})} if c in logged.detected else {}
    kwargs = dict(pure_fair_share=logged.pure_fair_share.get(c, {}), job_order=logged.job_order.get(c, ()),
                  wealth=result.wealth, **serve)
    d = phase(inp, counts, placed, gone, **kwargs)
    logged_needy, logged_taken = logged.needy.get(c, {}), logged.defrag.get(c, {})
    needy_ref: dict[int, object] = {j: ("needy", n) for j, n in d.needy.items()}
    verified_needy: dict[int, Verified] = {}
    if follow is not None and c in logged.detected and d.needy != logged_needy:
        # the verdict of every tally order the log allows (rmref.defrag.Defrag.verdicts)
        ordered = phase(inp, counts, placed, gone, known_order=logged.job_order_known.get(c, ()), **kwargs)
        if verdict_admitted(ordered, logged_needy):
            why = verdict_sentence(ordered, logged_needy)
            verified_needy = {j: Verified(needy_ref.get(j), why) for j in set(d.needy) | set(logged_needy)
                              if d.needy.get(j) != logged_needy.get(j)}
            needy_ref = {j: ("needy", n) for j, n in logged_needy.items()}
            follow.needy = logged_needy
            follow.sentences.append(why)
    own_taken = _taken(d)
    verified_taken: dict[int, Verified] = {}
    if follow is not None and any(u.alternatives for u in d.unsettled):
        rm = cleared_by_rm(logged.connected.get(c, ()), logged.published.get(c, {}), logged_taken)
        if any(not set(u.alternatives[u.taken]) <= rm.get(u.host, frozenset()) for u in d.unsettled if u.alternatives):
            d = phase(inp, counts, placed, gone, choose=rm, **kwargs)  # the RM's clearing, where rmref has it
            why = unsettled_sentence(d.unsettled)
            verified_taken = {j: Verified(("taken", own_taken.get(j)), why) for j in set(own_taken) | set(_taken(d))
                              if own_taken.get(j) != _taken(d).get(j)}
            follow.choose.update(rm)
            follow.sentences.append(why)
    if follow is not None and _taken(d) != logged_taken and any(u.tied for u in d.unsettled):
        d, more = _follow_machine_tie(d, logged, c, logged_taken, lambda rm: phase(inp, counts, placed, gone,
                                                                                  choose=rm, **kwargs), follow)
        verified_taken.update({j: v for j, v in more.items() if j not in verified_taken})
    result.wealth = d.wealth
    for i, a in enumerate(d.actions):
        # an action at or after an unsettled choice rests on it (the state it met came from that choice)
        unsettled = ", ".join(dict.fromkeys(r for u in d.unsettled if u.action <= i for r in u.reasons))
        result.ref["defrag"].append((c, a.needy_job, a.donor_job, a.host, a.share_id, unsettled or None))
    _compare(result, "defrag", c, {j: ("needy", n) for j, n in logged_needy.items()}, needy_ref,
             lambda j, lv, rv: Cause("detectFragmentation", f"job {j}",
                                     f"rmref finds it {_needy_words(rv)}, the RM {_needy_words(lv)}"),
             verified_needy, "detectFragmentation")
    _compare(result, "defrag", c, {j: ("taken", v) for j, v in logged_taken.items()},
             {j: ("taken", v) for j, v in _taken(d).items()},
             lambda j, lv, rv: Cause("takeFromTheRich", f"job {j}",
                                     f"rmref takes {_shares_words(rv)} from it, the RM {_shares_words(lv)}"
                                     + _unlisted_words(d)), verified_taken, "takeFromTheRich")
    return d


def _follow_machine_tie(d: Defrag, logged: Logged, c: int, logged_taken: Mapping[int, Any],
                        rerun: Callable[[dict[str, frozenset[tuple[int, int]]]], Defrag],
                        follow: _Follow) -> tuple[Defrag, dict[int, Verified]]:
    """takeFromTheRich met machines of equal wealth and memory in the order of a node map hashed on
    IPs the log (before DUCC 3.0.0) never shows: where the RM cleared one of them, and rmref clearing
    the RM's machine there takes from every job what the RM took, the RM's choice is verified."""
    rm = cleared_by_rm(logged.connected.get(c, ()), logged.published.get(c, {}), logged_taken)
    ties = [u for u in d.unsettled if u.tied and set(u.tied) & set(rm)]
    if not ties:
        return d, {}
    again = rerun(dict(rm))
    if _taken(again) != {j: v for j, v in logged_taken.items() if v}:
        return d, {}
    u = ties[0]
    why = (f"agrees: the RM cleared {', '.join(sorted(set(u.tied) & set(rm)))} for needy job {u.needy_job}, one of "
           f"{len(u.tied) + 1} machines of equal owner wealth and memory, met in the order of a node map hashed on "
           f"IPs the log never shows (rmref met {u.host} first)")
    own = _taken(d)
    follow.choose.update(rm)
    follow.sentences.append(why)
    return again, {j: Verified(("taken", own.get(j)), why) for j in set(own) | set(_taken(again))
                   if own.get(j) != _taken(again).get(j)}


def _taken(d: Defrag) -> dict[int, list[tuple[str, int]]]:
    """The running shares defragmentation evicted, per donor job, sorted."""
    taken: dict[int, list[tuple[str, int]]] = {}
    for a in d.actions:
        if a.action == "evict":
            taken.setdefault(a.donor_job, []).append((a.host, a.share_id))
    return {j: sorted(v) for j, v in taken.items()}


def _needy_words(value: object) -> str:
    return f"needy for {value[1]} processes" if isinstance(value, tuple) else "not needy"


def _unlisted_words(d: Defrag | None) -> str:
    """Why a takeFromTheRich choice could not be verified: too many shares of open order to list, or
    machines met in the order of a map hashed on node IPs the log of this release never shows."""
    if d is None or not any(not u.alternatives for u in d.unsettled):
        return ""
    parts = []
    for u in d.unsettled:
        if u.alternatives:
            continue
        if NODE_IP in u.reasons:
            parts.append(f"on {u.host} takeFromTheRich met machines of equal wealth and memory in the order of a "
                         f"map hashed on each node's IP, which the log of this release never shows")
        else:
            parts.append(f"on {u.host} takeFromTheRich chose among more equally ranked shares than rmref lists "
                         f"(rmref.choices.MAX_OPEN)")
    return f". {'; '.join(parts)}: its choice there is not verified"


def _shares_words(value: object) -> str:
    if not isinstance(value, tuple) or not value[1]:
        return "nothing"
    return ", ".join(f"{h}.{s}" for h, s in value[1])


def _audit_schedule(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                    follow: _Follow) -> CycleResult:
    """The phases chained, each fed rmref's own upstream decisions (rmref.schedule), against the
    schedule the RM published: a cascade that the phase-isolated kinds hide shows here. Where the
    cycle's phases verified a free choice of the RM's, the chained run follows it (rmref.choices)."""
    c, prev = inp.cycle, result.carry()
    hints = Hints(tuple(logged.user_orders.get(c, ())), tuple(logged.job_order.get(c, ())),
                  logged.share_walk.get(c, {}), prev.pure_fair_share, prev.chained_wealth)
    run = schedule(inp, hints, phases)
    logged_pub = logged.published.get(c, {})
    ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    differs = {j for j in set(logged_pub) | set(ours) if logged_pub.get(j) != ours.get(j)}
    verified: dict[int, Verified] = {}
    _follow_cleared(inp, logged, follow)
    if differs and follow.any():
        run, verified = _follow_schedule(inp, logged_pub, run, replace(hints, prefer=follow.prefer,
                                         choose=follow.choose, cleared_first=follow.cleared),
                                         phases, follow, differs, logged)
        ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    result.chained = run
    for job, pub in run.published.items():
        result.ref["schedule"] += [(c, job, "addition", h, None) for h in pub.additions]
        result.ref["schedule"] += [(c, job, "removal", h, sid) for h, sid in pub.removals]
    _compare(result, "schedule", c, logged_pub, ours,
             lambda j, lv, rv: Cause("schedule", f"job {j}", f"rmref's chained phases publish {_published(rv)}, "
                                     f"the RM {_published(lv)}" + _unlisted_words(run.defrag)), verified, "schedule")
    return run


def _follow_cleared(inp: CycleInput, logged: Logged, follow: _Follow) -> None:
    """On a log that shows no node IP (before DUCC 3.0.0), the machines How Much clears for a
    reservation are met in the order of a node map hashed on those IPs: the chained run takes the
    RM's logged ones first among the machines alike (verified when the schedule then agrees)."""
    cleared = logged.cleared.get(inp.cycle, ())
    if not cleared or inp.config.behaviours.has("node_ip_logged"):
        return
    follow.cleared = tuple(cleared)
    follow.sentences.append(f"agrees: the RM cleared {', '.join(cleared)} for a reservation, among machines "
                            f"alike but for the node IPs its node maps hash, which the log of DUCC "
                            f"{inp.config.behaviours.release} never shows")


def _follow_schedule(inp: CycleInput, logged_pub: Mapping[int, object], run: CycleResult, hints: Hints,
                     phases: Phases, follow: _Follow, differs: set[int],
                     logged: Logged) -> tuple[CycleResult, dict[int, Verified]]:
    """The chained run again on the RM's free choices (each only where the chained run finds it
    among its own equal ones); the jobs it then publishes as the RM did are verified choices."""
    if follow.needy is not None:
        hints = replace(hints, known_order=logged.job_order_known.get(inp.cycle, ()))
    again = schedule(inp, hints, phases)
    if follow.needy is not None and again.defrag.needy != follow.needy and verdict_admitted(again.defrag,
                                                                                            follow.needy):
        again = schedule(inp, replace(hints, needy=follow.needy), phases)
    theirs = {j: (p.additions, p.removals) for j, p in again.published.items()}
    fixed = {j for j in differs if logged_pub.get(j) == theirs.get(j)}
    if not fixed:
        return run, {}
    ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    why = "agrees once the chained phases follow the RM's free choices: " + "; ".join(
        x.removeprefix("agrees: ") for x in follow.sentences)
    return again, {j: Verified(ours.get(j), why) for j in fixed}


def _published(value: object) -> str:
    if not value:
        return "nothing"
    # a published decision: (hosts added, (host, share id) removed)
    additions, removals = cast(tuple[list[str], list[tuple[str, int | None]]], value)
    parts = [f"additions on {', '.join(additions)}"] if additions else []
    parts += [f"removals {', '.join(f'{h}.{s}' for h, s in removals)}"] if removals else []
    return "; ".join(parts)


def audit(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None, cycles: range | None = None,
          phases: Phases = Phases(), progress: OnProgress | None = None,
          only: Collection[str] = DECISIONS, trace: Collection[int] = (), rerunnable: bool = False,
          start: ReplayStart | None = None, checkpoint: Checkpoint | None = None) -> AuditResult:
    """Audit every cycle (or those in `cycles`) of a parsed log (`_audit_part`); after each gap in
    the stream (replay.model.damage) the audit starts again, on the log from there on, as on a
    log that starts mid-stream: what the log before the gap said is stale. `start` is the
    log's own start (replay.model.start), which every command reads; `checkpoint` is handed each
    audited cycle before it runs (replay.apps.stored)."""
    start = start or replay_start(tables, boot)
    damage = start.damage
    starts = resume_points(damage)
    conflicts = tuple(tables[CONFLICTS].to_dicts()) if CONFLICTS in tables else ()
    if not starts:
        part = _audit_part(tables, start, cycles, phases, progress, only, trace, rerunnable, damage, checkpoint)
        return replace(part, config_conflicts=conflicts)
    parts = []
    for lo, hi in zip([0, *starts], [*starts, None]):
        span = range(max(lo, cycles.start if cycles else 0),
                     min(hi if hi is not None else 1 << 32, cycles.stop if cycles else 1 << 32))
        if not span:
            continue
        part_tables = tables if lo == 0 else from_cycle(tables, lo)
        part_start = start if lo == 0 else replay_start(part_tables, None)
        parts.append(_audit_part(part_tables, part_start, span, phases, progress, only, trace, rerunnable,
                                 damage, checkpoint))
    return replace(_merged(parts, only, epochs(tables["cycles"])), config_conflicts=conflicts)


def _merged(parts: list[AuditResult], only: Collection[str], cycle_epochs: dict[int, int | None]) -> AuditResult:
    """The audits of a log's parts between gaps, as one."""
    out = AuditResult(audited=tuple(k for k in DECISIONS if k in only), epochs=cycle_epochs,
                      rm_release=parts[0].rm_release if parts else None)
    seen: set[Assumption] = set()
    for part in parts:
        out.cycles += part.cycles
        for kind in DECISIONS:
            out.ref[kind] += part.ref[kind]
            out.tally[kind] = [a + b for a, b in zip(out.tally[kind], part.tally[kind])]
        out.divergences += part.divergences
        out.verified += part.verified
        out.skipped.update(part.skipped)
        out.damaged.update(part.damaged)
        for kind, skipped in part.skipped_kinds.items():
            out.skipped_kinds.setdefault(kind, {}).update(skipped)
        out.assumed += tuple(a for a in part.assumed if a not in seen)
        seen.update(part.assumed)
        out.traces.update(part.traces)
        out.carried.update(part.carried)
        out.wealth, out.chained = part.wealth, part.chained
    return out


def _audit_part(tables: Mapping[str, pl.DataFrame], start: ReplayStart, cycles: range | None, phases: Phases,
                progress: OnProgress | None, only: Collection[str], trace: Collection[int], rerunnable: bool,
                damage: Mapping[int, Damage], checkpoint: Checkpoint | None = None) -> AuditResult:
    """Audit every cycle (or those in `cycles`) of a parsed log, for the decision kinds in `only`;
    rmref's whole run of the cycles in `trace` is kept (`AuditResult.traces`), and with
    `rerunnable` what every cycle started from (`AuditResult.carried`, for `trace_cycle`; it holds
    a chained run per cycle, so a long log's audit keeps it only when asked); `checkpoint` is
    handed each audited cycle before it runs (replay.apps.stored).

    A cycle whose input is damaged (the log starts inside it, a gap in the stream, unreadable
    lines: replay.model.damage) is not audited (`damaged`), and the audit resumes after it as it
    starts on a log that begins mid-stream (rmref carries nothing over it); a cycle whose counters
    the machine inventory does not reproduce (replay.model.machines) is audited only for what
    does not depend on the machines (NODE_FREE). `skipped_kinds` says which, and why; both
    come from `start` (replay.model.start), which every command reads."""
    boot = start.boot
    logged = logged_decisions(tables)
    kinds = tuple(k for k in DECISIONS if k in only)
    result = AuditResult(audited=kinds, assumed=start.assumed, epochs=epochs(tables["cycles"]),
                         rm_release=boot.release)
    stale = stale_free(tables, boot.nodepools, boot.config.quantum_gb)
    inputs = start.inputs(tables, cycles, stale=stale)
    for inp in counted(inputs, cycle_count(tables, cycles), progress, "auditing"):
        if inp.cycle in damage:
            result.damaged[inp.cycle] = damage[inp.cycle]
            result.wealth, result.chained = None, None  # what rmref carried does not cross damage
            continue
        partial = start.skipped(inp.cycle)
        if partial is not None:
            result.skipped[inp.cycle] = partial
            result.skip(inp.cycle, kinds, partial)
            continue
        if rerunnable:
            result.carried[inp.cycle] = result.carry()
        kinds_now: tuple[str, ...] = kinds
        why = start.machines_unsettled(inp.cycle)
        if why is not None:
            result.skip(inp.cycle, [k for k in kinds if k not in NODE_FREE], why)
            kinds_now = tuple(k for k in kinds if k in NODE_FREE)
            if not kinds_now:
                result.skipped[inp.cycle] = why
                continue
        if checkpoint is not None:
            checkpoint(inp, logged, result.carry(), kinds_now)
        cycle_trace = audit_cycle(inp, logged, phases, result, kinds_now)
        if inp.cycle in trace:
            result.traces[inp.cycle] = cycle_trace
    result.assumed += stale_assumptions(stale.notes, set(result.cycles))
    return result


def trace_cycle(tables: Mapping[str, pl.DataFrame], result: AuditResult, cycle: int, boot: Bootstrap | None = None,
                phases: Phases = Phases(), start: ReplayStart | None = None) -> CycleTrace | None:
    """rmref's run of one cycle exactly as `result`'s audit ran it (the cycle again, from what the
    audit carried into it); None when the audit did not audit the cycle."""
    if cycle in result.traces:
        return result.traces[cycle]
    if result.reenter is not None:
        return result.reenter(tables, cycle)
    carried = result.carried.get(cycle)
    if carried is None:
        return None
    again = AuditResult(audited=result.audited, wealth=carried.wealth, start=carried)
    inp = next((start or replay_start(tables, boot)).inputs(tables, range(cycle, cycle + 1)), None)
    return audit_cycle(inp, logged_decisions(tables), phases, again, result.audited) if inp else None


EPOCH = {"epoch": pl.Int64}  # last: every frame names its cycle both ways (replay.model.cycleref)
REF_SCHEMAS: dict[str, Schema] = {
    "caps": {"cycle": pl.UInt32, "job_id": pl.Int64, "base_cap": pl.Int64, "projected_cap": pl.Int64,
             "potential_cap": pl.Int64, "actual_cap": pl.Int64, **EPOCH},
    "counts": {"cycle": pl.UInt32, "job_id": pl.Int64, "order": pl.Int64, "shares_given": pl.Int64, **EPOCH},
    "placements": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "order": pl.Int64, **EPOCH},
    "evictions": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "share_id": pl.Int64,
                  "reason": pl.String, **EPOCH},
    "defrag": {"cycle": pl.UInt32, "needy_job": pl.Int64, "donor_job": pl.Int64, "host": pl.String,
               "share_id": pl.Int64, "unsettled": pl.String, **EPOCH},
    "schedule": {"cycle": pl.UInt32, "job_id": pl.Int64, "kind": pl.String, "host": pl.String,
                 "share_id": pl.Int64, **EPOCH},
}
# cycles, or decision kinds of a cycle, the audit did not audit, and why (report.json 'skipped', 'coverage')
SKIPPED_SCHEMA: Schema = {"cycle": pl.UInt32, "decisions": pl.String, "reason": pl.String, **EPOCH}
DIVERGENCE_SCHEMA: Schema = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                     "reference": pl.String, "explanation": pl.String, "step": pl.String, "detail": pl.String,
                     **EPOCH}


def result_frames(result: AuditResult) -> dict[str, pl.DataFrame]:
    """ref_<kind> and divergences as data frames (rows in cycle order, as decided), each cycle with its epoch."""
    frames = {f"ref_{k}": rows_frame(result.ref[k], s, result.epochs) for k, s in REF_SCHEMAS.items()}
    frames["divergences"] = rows_frame(result.divergences, DIVERGENCE_SCHEMA, result.epochs)
    frames["verified_choices"] = rows_frame(result.verified, DIVERGENCE_SCHEMA, result.epochs)
    frames["skipped"] = rows_frame(skipped_rows(result), SKIPPED_SCHEMA, result.epochs)
    return frames


def skipped_rows(result: AuditResult) -> list[tuple[int, str, str]]:
    """(cycle, decision kinds not audited, why) per cycle the audit left out wholly ("all") or in part."""
    per: dict[tuple[int, str], list[str]] = {}
    for kind in result.audited:
        for cycle, why in result.skipped_kinds.get(kind, {}).items():
            per.setdefault((cycle, why), []).append(kind)
    return [(c, "all" if c in result.skipped else ", ".join(kinds), why) for (c, why), kinds in sorted(per.items())]


def write_audit(result: AuditResult, out: Path) -> None:
    """OUT/report.json, OUT/ref_*.parquet and OUT/divergences.parquet."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in result_frames(result).items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n")
