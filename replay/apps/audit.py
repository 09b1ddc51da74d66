"""`rmreplay audit`: run rmref on every rebuilt cycle and compare its decisions with the logged ones.

Each phase is fed the RM's *logged* upstream decisions (What Of gets the logged counts, not
rmref's), so one divergence does not cascade: every divergent row is attributable to the phase
that produced it. A phase can be swapped (`rmref.Phases`) to replay history against a change, and
`only` limits the audit to some decision kinds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Container, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import polars as pl

from replay.apps.causes import Cause, count_cause, eviction_cause, placement_cause
from replay.model.cycleref import epochs, rows_frame, span_of
from replay.model.inventory import Inventory
from replay.model.logged import Logged, logged_decisions, pair_key
from replay.model.machines import whole_cycles
from replay.model.settings import Assumption
from replay.model.stale import stale_assumptions, stale_free
from replay.model.world import Bootstrap, bootstrap, cycle_count, cycle_inputs, machine_inventory
from replay.parsing.tables import Schema
from replay.progress import OnProgress, counted
from rmref import Caps, Defrag, HowMuch, Phases
from rmref.constants import ALREADY_LEAVING, PURGE, PURGES, RESERVATION
from rmref.cycle import CycleResult, Hints, schedule
from rmref.defrag import INVESTMENT, SHARE_MAP
from rmref.model import CycleInput, Eviction, Placement

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "schedule")
NODE_FREE = ("caps",)  # decisions that do not depend on the machines (a cap reads only the job)
PARTIAL_CYCLE = "the log starts inside this cycle (its scheduling pass began before the first line)"
LACKS_INPUT = "the log lacks this input"  # ends every explanation of a divergence the log cannot settle


@dataclass
class AuditResult:
    """rmref's decisions, the divergences and the per-kind tallies of one audit."""

    cycles: list[int] = field(default_factory=list)
    ref: dict[str, list[tuple]] = field(default_factory=lambda: {k: [] for k in DECISIONS})
    # (cycle, job, decision, logged, rmref, explanation, step, detail): DIVERGENCE_SCHEMA
    divergences: list[tuple[int, int | None, str, str, str, str, str, str]] = field(default_factory=list)
    tally: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in DECISIONS})
    audited: tuple[str, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)  # cycles not audited at all, and why
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

    def report(self) -> dict:
        """The report.json contract."""
        bad = {d[0] for d in self.divergences}
        return {
            "cycles": len(self.cycles),
            "cycles_agree": sum(1 for c in self.cycles if c not in bad),
            "decisions": {k: {"agree": a, "total": t} for k, (a, t) in self.tally.items()},
            "audited": list(self.audited),
            "skipped": {"cycles": len(self.skipped), "reason": next(iter(self.skipped.values()), None)},
            "span": span_of(self.cycles, self.epochs),
            "coverage": self.coverage(),
            "assumed": [{"setting": a.setting, "value": a.value, "source": a.source, "evidence": a.evidence}
                        for a in self.assumed],
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
             ref: Mapping[int, object], explain: Callable[[int, object, object], Cause]) -> None:
    """Tally one decision kind of one cycle, job by job, and record every disagreement with its cause."""
    for job in sorted(set(logged) | set(ref)):
        lv, rv = logged.get(job), ref.get(job)
        result.tally[kind][1] += 1
        if lv == rv:
            result.tally[kind][0] += 1
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


def audit_cycle(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                only: Collection[str] = DECISIONS) -> CycleTrace:
    """Run each phase on one cycle's input, compare it with the log, and return rmref's run."""
    result.cycles.append(inp.cycle)
    reuse = _Reuse(phases)
    phases = reuse.recording
    caps = _audit_caps(inp, logged, phases, result, "caps" in only)
    counts = logged.counts.get(inp.cycle, {})  # the downstream phases read the RM's counts
    trace = CycleTrace(inp.cycle, inp, caps, logged=logged)
    if "counts" in only:
        trace = replace(trace, how_much=_audit_counts(inp, logged, phases, result, caps))
    if "placements" in only:
        trace = replace(trace, placements=_audit_placements(inp, logged, phases, result, counts))
    if "evictions" in only:
        trace = replace(trace, evictions=_audit_evictions(inp, logged, phases, result, counts))
    if "defrag" in only:
        trace = replace(trace, defrag=_audit_defrag(inp, logged, counts, phases.defrag, result))
    if "schedule" in only:
        trace = replace(trace, chained=_audit_schedule(inp, logged, reuse.replaying, result))
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
                      counts: Mapping[int, int]) -> tuple[Placement, ...]:
    """What Of on the logged counts, against the connectShare lines."""
    placed: dict[int, list] = {}
    placements = tuple(phases.what_of(inp, counts))
    for p in placements:
        placed.setdefault(p.job_id, []).append((p.host, p.order))
        result.ref["placements"].append((inp.cycle, p.job_id, p.host, p.order))
    _compare(result, "placements", inp.cycle, logged.placements.get(inp.cycle, {}),
             {j: sorted(v) for j, v in placed.items()},
             lambda j, lv, rv: placement_cause(inp, j, lv, rv))
    return placements


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


def _unknown_order(job: int, disputed: set[int], known: Container[tuple[int, int]]) -> str:
    """Why a needy verdict can differ: the log does not show the order the RM tallied the jobs in
    (`disputed`: the jobs that competed for the same free space)."""
    unordered = sorted(o for o in disputed - {job} if (job, o) not in known and (o, job) not in known)
    if not unordered:
        return ""
    return (f". detectFragmentation tallies free space job by job, so the first job tallied takes the last "
            f"free space; the RM tallied jobs {job} and {', '.join(map(str, unordered))} in "
            f"an order the INFO log does not show (its job map is keyed by random ids), and rmref took "
            f"the submission order: the log lacks this input")


def _audit_defrag(inp: CycleInput, logged: Logged, counts: Mapping[int, int], phase: Callable[..., Defrag],
                  result: AuditResult) -> Defrag:
    """Needy jobs and the shares taken for them, against the ACTUALLY NEEDY lines and the Removals."""
    c = inp.cycle
    placed, gone = _logged_phase_outputs(inp, logged)
    # takeFromTheRich serves the jobs the RM found needy, as every phase reads the RM's upstream
    # decisions: rmref's own verdict, audited here too, may rest on a tally order the log lacks
    serve = {"serve": logged.needy.get(c, {})} if c in logged.detected else {}
    d = phase(inp, counts, placed, gone, pure_fair_share=logged.pure_fair_share.get(c, {}),
              job_order=logged.job_order.get(c, ()), wealth=result.wealth, **serve)
    result.wealth = d.wealth
    taken: dict[int, list] = {}
    for i, a in enumerate(d.actions):
        # an action at or after an unsettled choice rests on it (the state it met came from that choice)
        unsettled = ", ".join(dict.fromkeys(r for u in d.unsettled if u.action <= i for r in u.reasons))
        result.ref["defrag"].append((c, a.needy_job, a.donor_job, a.host, a.share_id, unsettled or None))
        if a.action == "evict":
            taken.setdefault(a.donor_job, []).append((a.host, a.share_id))
    logged_needy = logged.needy.get(c, {})
    disputed = set(logged_needy) | set(d.needy) | set(d.carried)  # every job that competed for free space
    _compare(result, "defrag", c, {j: ("needy", n) for j, n in logged_needy.items()},
             {j: ("needy", n) for j, n in d.needy.items()},
             lambda j, lv, rv: Cause(
                 "detectFragmentation", f"job {j}",
                 f"rmref finds it {_needy_words(rv)}, the RM {_needy_words(lv)}"
                 + _unknown_order(j, disputed, logged.job_order_known.get(c, set()))))
    _compare(result, "defrag", c, {j: ("taken", v) for j, v in logged.defrag.get(c, {}).items()},
             {j: ("taken", sorted(v)) for j, v in taken.items()},
             lambda j, lv, rv: Cause("takeFromTheRich", f"job {j}",
                                     f"rmref takes {_shares_words(rv)} from it, the RM {_shares_words(lv)}"
                                     + _unsettled_words(d)))
    return d


def _needy_words(value: object) -> str:
    return f"needy for {value[1]} processes" if isinstance(value, tuple) else "not needy"


_UNSETTLED_BY = {
    INVESTMENT: "ranks initialized processes of different jobs by their work-item investment, which the log "
                "does not print (a job's Existing list orders only its own processes)",
    SHARE_MAP: "finds processes equal (neither initialized, same initialization time) and keeps its share "
               "map's order, keyed by random share ids",
}


def _unsettled_words(d: Defrag | None) -> str:
    """Why rmref's takeFromTheRich may part from the RM's with no error on either side: a choice
    rested on an order of shares the log does not show (rmref.defrag.Unsettled); "" when none did."""
    if d is None or not d.unsettled:
        return ""
    parts = [f"on {u.host} (for needy job {u.needy_job}) jobs "
             f"{', '.join(map(str, sorted({j for j, _ in u.shares})))} have equally wealthy owners and the RM "
             + " and ".join(_UNSETTLED_BY[r] for r in u.reasons) for u in d.unsettled]
    return f". takeFromTheRich chose by an order the log lacks: {'; '.join(parts)}; rmref picked one: {LACKS_INPUT}"


def _shares_words(value: object) -> str:
    if not isinstance(value, tuple) or not value[1]:
        return "nothing"
    return ", ".join(f"{h}.{s}" for h, s in value[1])


def _audit_schedule(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult) -> CycleResult:
    """The phases chained, each fed rmref's own upstream decisions (rmref.schedule), against the
    schedule the RM published: a cascade that the phase-isolated kinds hide shows here."""
    c, prev = inp.cycle, result.carry()
    hints = Hints(tuple(logged.user_orders.get(c, ())), tuple(logged.job_order.get(c, ())),
                  logged.share_walk.get(c, {}), prev.pure_fair_share, prev.chained_wealth)
    run = schedule(inp, hints, phases)
    result.chained = run
    for job, pub in run.published.items():
        result.ref["schedule"] += [(c, job, "addition", h, None) for h in pub.additions]
        result.ref["schedule"] += [(c, job, "removal", h, sid) for h, sid in pub.removals]
    logged_pub = logged.published.get(c, {})
    ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    tally = _tally_order_words(inp, logged, run, hints, phases) if any(
        logged_pub.get(j) != ours.get(j) for j in set(logged_pub) | set(ours)) else {}
    _compare(result, "schedule", c, logged_pub, ours,
             lambda j, lv, rv: Cause("schedule", f"job {j}", f"rmref's chained phases publish {_published(rv)}, "
                                     f"the RM {_published(lv)}" + (tally.get(j) or _unsettled_words(run.defrag))))
    return run


def _tally_order_words(inp: CycleInput, logged: Logged, run: CycleResult, hints: Hints,
                       phases: Phases) -> dict[int, str]:
    """Jobs whose chained schedule differs from the RM's only because rmref's detectFragmentation
    tallied the competing jobs in another order than the RM's (which the log does not show): with
    the RM's needy verdict served instead, rmref publishes what the RM did for them. Job -> why."""
    c = inp.cycle
    if c not in logged.detected:
        return {}
    rm_needy = logged.needy.get(c, {})
    ours = run.defrag.needy
    differing = {j for j in set(rm_needy) | set(ours) if rm_needy.get(j) != ours.get(j)}
    disputed = set(rm_needy) | set(ours) | set(run.defrag.carried)
    known: Container[tuple[int, int]] = logged.job_order_known.get(c, set())
    reasons = [_unknown_order(j, disputed, known) for j in sorted(differing)]
    if not differing or not all(reasons):
        return {}  # no difference in the verdict, or one the tally order does not explain
    served = {j: (p.additions, p.removals) for j, p in schedule(inp, replace(hints, needy=rm_needy),
                                                                  phases).published.items()}
    logged_pub = logged.published.get(c, {})
    words = (f". rmref's defragmentation served other needy jobs than the RM ({_needy_list(ours)} against "
             f"{_needy_list(rm_needy)}); served the RM's, it publishes what the RM did{reasons[0]}")
    return {j: words for j in set(logged_pub) | set(served) | set(run.published)
            if logged_pub.get(j) == served.get(j)}


def _needy_list(needy: Mapping[int, int]) -> str:
    return ", ".join(f"job {j} for {n}" for j, n in sorted(needy.items())) or "none"


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
          checkpoint: Checkpoint | None = None, inventory: Inventory | None = None) -> AuditResult:
    """Audit every cycle (or those in `cycles`) of a parsed log, for the decision kinds in `only`;
    rmref's whole run of the cycles in `trace` is kept (`AuditResult.traces`), and with
    `rerunnable` what every cycle started from (`AuditResult.carried`, for `trace_cycle`; it holds
    a chained run per cycle, so a long log's audit keeps it only when asked); `checkpoint` is
    handed each audited cycle before it runs (replay.apps.stored); `inventory`: the nodes there
    before the log began, when already worked out (`machine_inventory`).

    A cycle the log starts inside is not audited; a cycle whose counters the machine inventory
    does not reproduce (a log that starts mid-stream: replay.model.machines) is audited only for
    what does not depend on the machines (NODE_FREE). `skipped_kinds` says which, and why."""
    boot = boot or bootstrap(tables)
    logged = logged_decisions(tables)
    inventory = inventory if inventory is not None else machine_inventory(tables, boot)
    whole = whole_cycles(tables)
    kinds = tuple(k for k in DECISIONS if k in only)
    result = AuditResult(audited=kinds, assumed=boot.assumed + inventory.assumed, epochs=epochs(tables["cycles"]))
    stale = stale_free(tables, boot.nodepools, boot.config.quantum_gb)
    inputs = cycle_inputs(tables, boot, cycles, inventory=inventory, stale=stale)
    for inp in counted(inputs, cycle_count(tables, cycles), progress, "auditing"):
        if inp.cycle not in whole:
            result.skipped[inp.cycle] = PARTIAL_CYCLE
            result.skip(inp.cycle, kinds, PARTIAL_CYCLE)
            continue
        if rerunnable:
            result.carried[inp.cycle] = result.carry()
        kinds_now: tuple[str, ...] = kinds
        why = inventory.unsettled.get(inp.cycle)
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
                phases: Phases = Phases()) -> CycleTrace | None:
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
    inp = next(cycle_inputs(tables, boot or bootstrap(tables), range(cycle, cycle + 1)), None)
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
DIVERGENCE_SCHEMA: Schema = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                     "reference": pl.String, "explanation": pl.String, "step": pl.String, "detail": pl.String,
                     **EPOCH}


def result_frames(result: AuditResult) -> dict[str, pl.DataFrame]:
    """ref_<kind> and divergences as data frames (rows in cycle order, as decided), each cycle with its epoch."""
    frames = {f"ref_{k}": rows_frame(result.ref[k], s, result.epochs) for k, s in REF_SCHEMAS.items()}
    frames["divergences"] = rows_frame(result.divergences, DIVERGENCE_SCHEMA, result.epochs)
    return frames


def write_audit(result: AuditResult, out: Path) -> None:
    """OUT/report.json, OUT/ref_*.parquet and OUT/divergences.parquet."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in result_frames(result).items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n")
