"""`rmreplay audit`: run rmref on every rebuilt cycle and compare its decisions with the logged ones.

Each phase is fed the RM's *logged* upstream decisions (What Of gets the logged counts, not
rmref's), so one divergence does not cascade: every divergent row is attributable to the phase
that produced it. A phase can be swapped (`rmref.Phases`) to replay history against a change, and
`only` limits the audit to some decision kinds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Container, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import polars as pl

from replay.model.logged import Logged, pair_key, logged_decisions
from replay.model.world import Bootstrap, bootstrap, cycle_inputs, inventory_gaps
from rmref import Caps, Phases
from rmref.cycle import CycleResult, Hints, schedule
from rmref.evictions import PURGE
from rmref.model import CycleInput, Eviction, Placement

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "schedule")


@dataclass
class AuditResult:
    """rmref's decisions, the divergences and the per-kind tallies of one audit."""

    cycles: list[int] = field(default_factory=list)
    ref: dict[str, list[tuple]] = field(default_factory=lambda: {k: [] for k in DECISIONS})
    divergences: list[tuple[int, int | None, str, str, str, str]] = field(default_factory=list)
    tally: dict[str, list[int]] = field(default_factory=lambda: {k: [0, 0] for k in DECISIONS})
    audited: tuple[str, ...] = ()
    skipped: dict[int, str] = field(default_factory=dict)  # cycles that cannot be rebuilt, and why
    wealth: dict[str, int] | None = None  # users' wealth, which defragmentation carries between cycles
    chained: CycleResult | None = None  # the last cycle's end-to-end run (what rmref carries forward)

    def report(self) -> dict:
        """The report.json contract."""
        bad = {d[0] for d in self.divergences}
        return {
            "cycles": len(self.cycles),
            "cycles_agree": sum(1 for c in self.cycles if c not in bad),
            "decisions": {k: {"agree": a, "total": t} for k, (a, t) in self.tally.items()},
            "audited": list(self.audited),
            "skipped": {"cycles": len(self.skipped), "reason": next(iter(self.skipped.values()), None)},
        }


def _cap_rule(caps: Caps, logged: object) -> str:
    return (f"rmref's cap chain: base {caps.base}, projected {caps.projected}, potential {caps.potential}, "
            f"actual {caps.actual} (bound by {caps.rule}); the RM logged actual cap {logged}")


def _compare(result: AuditResult, kind: str, cycle: int, logged: Mapping[int, object],
             ref: Mapping[int, object], explain: Callable[[int, object, object], str]) -> None:
    """Tally one decision kind of one cycle, job by job, and record every disagreement."""
    for job in sorted(set(logged) | set(ref)):
        lv, rv = logged.get(job), ref.get(job)
        result.tally[kind][1] += 1
        if lv == rv:
            result.tally[kind][0] += 1
        else:
            result.divergences.append((cycle, job, kind, str(lv), str(rv), explain(job, lv, rv)))


def audit_cycle(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                only: Collection[str] = DECISIONS) -> None:
    """Run each phase on one cycle's input and compare it with the log."""
    result.cycles.append(inp.cycle)
    caps = _audit_caps(inp, logged, phases, result, "caps" in only)
    counts = logged.counts.get(inp.cycle, {})  # the downstream phases read the RM's counts
    if "counts" in only:
        _audit_counts(inp, logged, phases, result, caps)
    if "placements" in only:
        _audit_placements(inp, logged, phases, result, counts)
    if "evictions" in only:
        _audit_evictions(inp, logged, phases, result, counts)
    if "defrag" in only:
        _audit_defrag(inp, logged, counts, phases.defrag, result)
    if "schedule" in only:
        _audit_schedule(inp, logged, phases, result)


def _audit_caps(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult, tally: bool) -> dict[int, Caps]:
    """rmref's cap chain for every job the RM logged a cap for."""
    c, logged_caps = inp.cycle, logged.caps.get(inp.cycle, {})
    caps = {w.job_id: phases.caps(w.cap_input) for w in inp.work if w.job_id in logged_caps}
    if tally:
        result.ref["caps"] += [(c, j, k.base, k.projected, k.potential, k.actual) for j, k in sorted(caps.items())]
        _compare(result, "caps", c, logged_caps, {j: k.actual for j, k in caps.items()},
                 lambda j, lv, rv: _cap_rule(caps[j], lv) if j in caps else "the RM logged no cap input for this job")
    return caps


def _audit_counts(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                  caps: Mapping[int, Caps]) -> None:
    """How Much on the logged caps (the cap phase is audited on its own). The RM logs a cap for
    every job but a completed or refused one, whose cap rmref derives as the RM does."""
    c = inp.cycle
    logged_caps = logged.caps.get(c, {})
    job_caps = {w.job_id: logged_caps[w.job_id] if w.job_id in logged_caps else phases.caps(w.cap_input).actual
                for w in inp.work}
    hm = phases.how_much(inp, job_caps, dict(inp.config.user_allotments), logged.user_orders.get(c, ()))
    logged_counts = logged.counts.get(c, {})
    result.ref["counts"] += [(c, w.job_id, w.order, hm.counts[w.job_id]) for w in inp.work if w.job_id in hm.counts]
    deferred = {j: f" ({why})" for j, why in hm.deferred.items()}
    _compare(result, "counts", c, logged_counts, {j: n for j, n in hm.counts.items() if n or j in logged_counts},
             lambda j, lv, rv: f"rmref counts {rv} processes{deferred.get(j, '')}, the RM {lv}")


def _audit_placements(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                      counts: Mapping[int, int]) -> None:
    """What Of on the logged counts, against the connectShare lines."""
    placed: dict[int, list] = {}
    for p in phases.what_of(inp, counts):
        placed.setdefault(p.job_id, []).append((p.host, p.order))
        result.ref["placements"].append((inp.cycle, p.job_id, p.host, p.order))
    _compare(result, "placements", inp.cycle, logged.placements.get(inp.cycle, {}),
             {j: sorted(v) for j, v in placed.items()},
             lambda j, lv, rv: f"rmref places the new processes on {rv or 'no host'}, the RM on {lv or 'no host'}")


def _audit_evictions(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                     counts: Mapping[int, int]) -> None:
    """doEvictions on the logged counts, against the shrinkBy and purge lines."""
    evicted: dict[int, list] = {}
    for e in phases.evictions(inp, counts, logged.cleared.get(inp.cycle, ()), logged.share_walk.get(inp.cycle, {})):
        # the log's purge lines name the host and the job, not the share
        evicted.setdefault(e.job_id, []).append((e.host, None if e.reason == PURGE else e.share_id))
        result.ref["evictions"].append((inp.cycle, e.job_id, e.host, e.share_id, e.reason))
    _compare(result, "evictions", inp.cycle, logged.evictions.get(inp.cycle, {}),
             {j: sorted(v, key=pair_key) for j, v in evicted.items()},
             lambda j, lv, rv: f"rmref evicts {rv or 'nothing'}, the RM {lv or 'nothing'}")


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


def _audit_defrag(inp: CycleInput, logged: Logged, counts: Mapping[int, int], phase, result: AuditResult) -> None:
    """Needy jobs and the shares taken for them, against the ACTUALLY NEEDY lines and the Removals."""
    c = inp.cycle
    placed, gone = _logged_phase_outputs(inp, logged)
    d = phase(inp, counts, placed, gone, pure_fair_share=logged.pure_fair_share.get(c, {}),
              job_order=logged.job_order.get(c, ()), wealth=result.wealth)
    result.wealth = d.wealth
    taken: dict[int, list] = {}
    for a in d.actions:
        result.ref["defrag"].append((c, a.needy_job, a.donor_job, a.host, a.share_id))
        if a.action == "evict":
            taken.setdefault(a.donor_job, []).append((a.host, a.share_id))
    logged_needy = logged.needy.get(c, {})
    disputed = set(logged_needy) | set(d.needy) | set(d.carried)  # every job that competed for free space
    _compare(result, "defrag", c, {j: ("needy", n) for j, n in logged_needy.items()},
             {j: ("needy", n) for j, n in d.needy.items()},
             lambda j, lv, rv: f"rmref finds job {j} {'needy for ' + str(rv[1]) if rv else 'not needy'}, "
                               f"the RM {'needy for ' + str(lv[1]) if lv else 'not needy'}"
                               + _unknown_order(j, disputed, logged.job_order_known.get(c, set())))
    _compare(result, "defrag", c, {j: ("taken", v) for j, v in logged.defrag.get(c, {}).items()},
             {j: ("taken", sorted(v)) for j, v in taken.items()},
             lambda j, lv, rv: f"defragmentation takes {rv[1] if rv else 'nothing'} from job {j} in rmref, "
                               f"{lv[1] if lv else 'nothing'} in the RM")


def _audit_schedule(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult) -> None:
    """The phases chained, each fed rmref's own upstream decisions (rmref.schedule), against the
    schedule the RM published: a cascade that the phase-isolated kinds hide shows here."""
    c, prev = inp.cycle, result.chained
    hints = Hints(tuple(logged.user_orders.get(c, ())), tuple(logged.job_order.get(c, ())),
                  logged.share_walk.get(c, {}), prev.pure_fair_share if prev else {},
                  prev.defrag.wealth if prev else None)
    run = schedule(inp, hints, phases)
    result.chained = run
    for job, pub in run.published.items():
        result.ref["schedule"] += [(c, job, "addition", h, None) for h in pub.additions]
        result.ref["schedule"] += [(c, job, "removal", h, sid) for h, sid in pub.removals]
    _compare(result, "schedule", c, logged.published.get(c, {}),
             {j: (p.additions, p.removals) for j, p in run.published.items()},
             lambda j, lv, rv: f"rmref's chained phases publish {_published(rv)} for job {j}, the RM {_published(lv)}")


def _published(value: object) -> str:
    if not value:
        return "nothing"
    additions, removals = value  # type: ignore[misc]
    parts = [f"additions on {', '.join(additions)}"] if additions else []
    parts += [f"removals {', '.join(f'{h}.{s}' for h, s in removals)}"] if removals else []
    return "; ".join(parts)


def audit(tables: dict[str, pl.DataFrame], boot: Bootstrap | None = None, cycles: range | None = None,
          phases: Phases = Phases(), progress: Callable[[int, int], None] | None = None,
          only: Collection[str] = DECISIONS) -> AuditResult:
    """Audit every cycle (or those in `cycles`) of a parsed log, for the decision kinds in `only`."""
    boot = boot or bootstrap(tables)
    logged = logged_decisions(tables)
    result = AuditResult(audited=tuple(k for k in DECISIONS if k in only))
    gaps = inventory_gaps(tables, boot)
    total = tables["cycles"].height
    for i, inp in enumerate(cycle_inputs(tables, boot, cycles)):
        if inp.cycle in gaps:
            result.skipped[inp.cycle] = gaps[inp.cycle]
            continue
        audit_cycle(inp, logged, phases, result, only)
        if progress and i % 50 == 0:
            progress(i, total)
    return result


REF_SCHEMAS = {
    "caps": {"cycle": pl.UInt32, "job_id": pl.Int64, "base_cap": pl.Int64, "projected_cap": pl.Int64,
             "potential_cap": pl.Int64, "actual_cap": pl.Int64},
    "counts": {"cycle": pl.UInt32, "job_id": pl.Int64, "order": pl.Int64, "shares_given": pl.Int64},
    "placements": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "order": pl.Int64},
    "evictions": {"cycle": pl.UInt32, "job_id": pl.Int64, "host": pl.String, "share_id": pl.Int64,
                  "reason": pl.String},
    "defrag": {"cycle": pl.UInt32, "needy_job": pl.Int64, "donor_job": pl.Int64, "host": pl.String,
               "share_id": pl.Int64},
    "schedule": {"cycle": pl.UInt32, "job_id": pl.Int64, "kind": pl.String, "host": pl.String,
                 "share_id": pl.Int64},
}
DIVERGENCE_SCHEMA = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                     "reference": pl.String, "explanation": pl.String}


def result_frames(result: AuditResult) -> dict[str, pl.DataFrame]:
    """ref_<kind> and divergences as data frames (rows in cycle order, as decided)."""
    frames = {f"ref_{k}": pl.DataFrame(result.ref[k], schema=s, orient="row") for k, s in REF_SCHEMAS.items()}
    frames["divergences"] = pl.DataFrame(result.divergences, schema=DIVERGENCE_SCHEMA, orient="row")
    return frames


def write_audit(result: AuditResult, out: Path) -> None:
    """OUT/report.json, OUT/ref_*.parquet and OUT/divergences.parquet."""
    out.mkdir(parents=True, exist_ok=True)
    for name, frame in result_frames(result).items():
        frame.write_parquet(out / f"{name}.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n")
