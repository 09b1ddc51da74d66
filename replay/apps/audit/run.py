"""Every cycle of a log audited, part by part between gaps, and one cycle run again as the audit ran it."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import replace

import polars as pl

from replay.apps.audit.cycle import audit_cycle
from replay.apps.audit.open_orders import open_orders, rests_on_open_orders
from replay.apps.baseline import baseline_cycle
from replay.apps.audit.result import DECISIONS, AuditResult, Carried, Checkpoint, CycleTrace, Mark
from replay.model.conflicts import CONFLICTS
from replay.model.cycleref import epochs
from replay.model.damage import Damage, between_gaps, resume_points
from replay.model.logged import Logged
from replay.model.nodes import drawn_orders
from replay.model.settings import Assumption
from replay.model.stale import stale_assumptions
from replay.model.start import NODE_FREE, REPORT_READERS, ReplayStart, replay_start
from replay.model.assembly import cycle_count
from replay.model.bootstrap import Bootstrap
from replay.progress import OnProgress, counted
from rmref import Phases
from rmref.model import CycleInput


def audit(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None, cycles: range | None = None,
          phases: Phases = Phases(), progress: OnProgress | None = None,
          only: Collection[str] = DECISIONS, trace: Collection[int] = (), rerunnable: bool = False,
          start: ReplayStart | None = None, checkpoint: Checkpoint | None = None) -> AuditResult:
    """Audit every cycle (or those in `cycles`) of a parsed log (`_audit_part`); after each gap in
    the stream (replay.model.damage) the audit starts again, on the log from there to the next gap,
    as on a log that starts mid-stream: what one side of a gap says of the machines and processes
    is no evidence about the other, though the settings are one (`start_of_part`). `start` is the
    log's own start (replay.model.start), which every command reads, from `boot` or, without it,
    from the settings it infers from the whole log, alike; `checkpoint` is handed each audited
    cycle before it runs (replay.apps.stored)."""
    start = start or replay_start(tables, boot, hold=True)
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
        part_tables, part_start = start_of_part(tables, start, lo, hi)
        part = _audit_part(part_tables, part_start, span, phases, progress, only, trace, rerunnable, damage,
                           checkpoint)
        if not part.cycles and not part.skipped:  # every cycle of it damaged: what it took is read by none
            part = replace(part, assumed=(), arrival_open=())
        parts.append(part)
    return replace(_merged(parts, only, epochs(tables["cycles"])), config_conflicts=conflicts)


def start_of_part(tables: Mapping[str, pl.DataFrame], start: ReplayStart, lo: int,
                  hi: int | None) -> tuple[dict[str, pl.DataFrame], ReplayStart]:
    """The tables of the part of the log from cycle `lo` to `hi` (between gaps) and its start,
    under the log's settings (`start.boot`, whether the caller gave them or not): one RM, with one
    configuration, wrote both sides of a gap (a restart is an epoch going back, no gap), so the
    whole log is evidence of them; the machines and processes each part infers from its own."""
    part_tables = between_gaps(tables, lo, hi, lo in start.damage and start.damage[lo].after_start)
    return part_tables, replay_start(part_tables, start.boot)


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
        out.arrival_open += tuple(n for n in part.arrival_open if n not in out.arrival_open)
        out.orders_drawn.update(part.orders_drawn)
        out.traces.update(part.traces)
        out.baseline.update(part.baseline)
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
    reads = start.reads(tables, cycles)
    logged = reads.logged
    kinds = tuple(k for k in DECISIONS if k in only)
    result = AuditResult(audited=kinds, assumed=start.assumed, arrival_open=start.inventory.arrival_open,
                         orders_drawn=drawn_orders(start.inventory),
                         epochs=epochs(tables["cycles"]), rm_release=boot.release, users_open=boot.users_open,
                         thresholds_open=boot.thresholds_open)
    for inp in counted(reads.inputs, cycle_count(tables, cycles), progress, "auditing"):
        if inp.cycle in damage:
            result.damaged[inp.cycle] = damage[inp.cycle]
            result.wealth, result.chained = None, None  # what rmref carried does not cross damage
            continue
        partial = start.skipped(inp.cycle)
        if partial is not None:
            result.skipped[inp.cycle] = partial
            result.skip(inp.cycle, kinds, partial)
            continue
        unknown = start.classes_unknown(inp)
        if unknown is not None:
            result.skipped[inp.cycle] = unknown
            result.skip(inp.cycle, kinds, unknown)
            result.wealth, result.chained = None, None  # rmref's run does not carry over what it could not run
            continue
        kinds_now: tuple[str, ...] = kinds
        open_why = start.reports_unknown(inp, logged.counts.get(inp.cycle, {}), bool(logged.needy.get(inp.cycle)))
        if open_why is not None:
            result.skip(inp.cycle, [k for k in kinds if k in REPORT_READERS], open_why)
            kinds_now = tuple(k for k in kinds if k not in REPORT_READERS)
            result.wealth, result.chained = None, None  # rmref's run does not carry over what it could not run
        why = start.machines_unsettled(inp.cycle)
        if why is not None:
            result.skip(inp.cycle, [k for k in kinds_now if k not in NODE_FREE], why)
            kinds_now = tuple(k for k in kinds_now if k in NODE_FREE)
            if not kinds_now:
                result.skipped[inp.cycle] = why
                continue
        carried = result.carry()
        if checkpoint is not None:
            checkpoint(inp, logged, carried, kinds_now)
        if rerunnable:
            result.carried[inp.cycle] = carried, kinds_now
        mark = result.mark()
        cycle_trace = audit_cycle(inp, logged, phases, result, kinds_now)
        open_why = _open_orders_why(inp, logged, phases, result, start, carried, mark, kinds_now)
        if open_why is not None:
            why = open_why
            kinds_now = tuple(k for k in kinds_now if inp.cycle not in result.skipped_kinds.get(k, {}))
        if "schedule" in kinds_now or (why is not None and "caps" in kinds_now):
            result.baseline[inp.cycle] = baseline_cycle(inp, cycle_trace.input,
                                                        cycle_trace.chained if why is None else None, logged,
                                                        cycle_trace.followed, _caps(cycle_trace), why,
                                                        cycle_trace.served)
        if inp.cycle in trace:
            result.traces[inp.cycle] = cycle_trace.left_in(result.left_in(inp.cycle, kinds_now))
    result.assumed += stale_assumptions(reads.stale.notes, set(result.cycles))
    return result


def _open_orders_why(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult, start: ReplayStart,
                     carried: Carried, mark: Mark, kinds: tuple[str, ...]) -> str | None:
    """Where the cycle just audited diverges on the machines and rests on orders the log leaves open
    (replay.apps.audit.open_orders), why: its machine-dependent kinds are then taken back and left out."""
    diverged = {d.decision for d in result.divergences[mark.divergences:]} - set(NODE_FREE)
    opens = open_orders(start.inventory, inp) if diverged else ()
    if not opens:
        return None

    def agrees(trial: CycleInput) -> bool:
        again = result.for_rerun(carried)
        audit_cycle(trial, logged, phases, again, kinds)
        return not again.divergences

    why = rests_on_open_orders(inp, opens, agrees)
    if why is not None:
        # the kinds that agreed did so on orders the log allows; the schedule chains every phase
        out = [k for k in kinds if k in diverged or k == "schedule"]
        result.undo(mark, out)
        result.skip(inp.cycle, out, why)
        result.wealth, result.chained = None, None  # rmref's run does not carry over what it could not run
    return why


def _caps(trace: CycleTrace) -> dict[int, int]:
    """rmref's actual caps of the jobs the RM logged a cap for, as the cycle's audit computed them."""
    return {j: k.actual for j, k in trace.caps.items()}


def trace_cycle(tables: Mapping[str, pl.DataFrame], result: AuditResult, cycle: int, boot: Bootstrap | None = None,
                phases: Phases = Phases(), start: ReplayStart | None = None) -> CycleTrace | None:
    """rmref's run of one cycle exactly as `result`'s audit ran it (the cycle again, from what the
    audit carried into it, its decisions of the kinds the audit left in for it: `rerun`); None
    when the audit did not audit the cycle."""
    if cycle in result.traces:
        return result.traces[cycle]
    if result.reenter is not None:
        return result.reenter(tables, cycle)
    entry = result.carried.get(cycle)
    if entry is None:
        return None
    begin = start or replay_start(tables, boot)
    inp = next(begin.inputs(tables, range(cycle, cycle + 1)), None)
    return rerun(inp, begin.logged(tables), phases, result, *entry) if inp else None


def rerun(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult, carried: Carried,
          ran: tuple[str, ...]) -> CycleTrace:
    """rmref's run of one cycle of `result`'s audit again, from what the audit carried into it
    (`carried`), the kinds it ran there (`ran`) run as it ran them: the decisions of the kinds the
    audit left in for the cycle (`AuditResult.left_in`: what it decided, read, not decided again)."""
    trace = audit_cycle(inp, logged, phases, result.for_rerun(carried), ran)
    return trace.left_in(result.left_in(inp.cycle, ran))
