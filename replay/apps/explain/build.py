"""Putting it together: `explain_job` gathers a cycle's facts, then the sections that tell them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from replay.apps.audit import AuditResult, CycleTrace, audit, trace_cycle
from replay.apps.explain.counting import rmref_chain
from replay.apps.explain.facts import (
    job_identity,
    placed_processes,
    process_orders,
    read_logged_caps,
    schedule_shares,
)
from replay.apps.explain.life import job_life
from replay.apps.explain.lookup import cycle_rows, job_cycles, pick_cycle
from replay.apps.explain.sections import (
    cap_section,
    count_section,
    counting_section,
    defrag_lines,
    job_section,
    life_section,
    placement_section,
    taken_section,
    waiting_section,
)
from replay.apps.explain.story import Decisions, Divergence, Section, Story
from replay.apps.explain.taken import confirmed_gone, kept_lines, taken_processes
from replay.model.bootstrap import Bootstrap
from replay.model.cycleref import epochs
from replay.model.inputs import counter_blocks
from replay.model.logged import Logged, logged_decisions, pair_key
from replay.model.orders import job_quantum
from replay.model.start import predates_log, replay_start
from rmref.constants import PURGES
from rmref.model import CycleInput


def _sides(trace: CycleTrace | None, logged: Logged, job_id: int, cycle: int) -> tuple[Decisions | None, Decisions]:
    """The job's decisions as the audit's rmref run made them, and as the audit reads them from the log."""
    theirs = Decisions(
        logged.caps.get(cycle, {}).get(job_id), logged.counts.get(cycle, {}).get(job_id),
        tuple(logged.placements.get(cycle, {}).get(job_id, ())),
        tuple(logged.evictions.get(cycle, {}).get(job_id, ())))
    if trace is None:
        return None, theirs
    caps = trace.caps.get(job_id)
    # the trace holds the decisions of the kinds the audit left in for the cycle only (CycleTrace.left_in)
    ours = Decisions(
        caps.actual if caps else None, trace.how_much.counts.get(job_id) if trace.how_much else None,
        tuple(sorted((p.host, p.order) for p in trace.placements if p.job_id == job_id))
        if "placements" in trace.kinds else None,
        tuple(sorted(((e.host, None if e.reason in PURGES else e.share_id) for e in trace.evictions
                      if e.job_id == job_id), key=pair_key)) if "evictions" in trace.kinds else None)
    return ours, theirs


def _facts(tables: Mapping[str, pl.DataFrame], result: AuditResult, trace: CycleTrace | None, inp: CycleInput | None,
           boot: Bootstrap, predates: bool, job_id: int, c: int, cycles: list[int], with_life: bool,
           orders: pl.DataFrame | None = None) -> Story:
    """The story's facts for cycle `c` (no sections yet), rmref's side from the audit's own run
    (`inp`: the cycle's rebuilt input, also where the audit did not audit the cycle; `predates`:
    the job was there before the log began; `orders`: the replay start's work orders, when one ran)."""
    work = next((w for w in inp.work if w.job_id == job_id), None) if inp else None
    cls = inp.class_of(work) if inp and work else None
    epoch_of = epochs(tables["cycles"])
    order_of = process_orders(tables, inp, boot, orders)
    who = job_identity(tables, work, c, job_id, order_of)
    held, reason = schedule_shares(tables, c, job_id, who.order)
    blocks = counter_blocks({"rmcounter": tables["rmcounter"].filter(pl.col("cycle") == c)})
    classes, users, jobs = (rmref_chain(inp, trace.how_much, work, cls, blocks) if inp and trace
                            else (None, None, None))
    logged = trace.logged if trace is not None and trace.logged is not None else logged_decisions(tables)
    ours, theirs = _sides(trace, logged, job_id, c)
    causes = tuple(Divergence(d.decision, d.step, d.explanation) for d in result.divergences
                   if d.cycle == c and d.job_id == job_id)
    verified = tuple(Divergence(v.decision, v.step, v.detail) for v in result.verified
                     if v.cycle == c and v.job_id == job_id)
    return Story(
        job_id=job_id, cycle=c, first_cycle=cycles[0], last_cycle=cycles[-1], work_type=who.work_type,
        user=who.user, class_name=who.class_name, policy=cls.policy if cls else None,
        nodepool=cls.nodepool if cls else None, memory_gb=who.memory_gb, order=who.order,
        threads=work.cap_input.threads if work else None, remaining=work.cap_input.remaining if work else None,
        count=theirs.count, logged_caps=read_logged_caps(tables, c, job_id),
        caps=trace.caps.get(job_id) if trace else None, shares=held, placed=placed_processes(tables, c, job_id),
        taken=taken_processes(tables, c, job_id, order_of, _rmref_takings(trace)),
        reason=reason, classes=classes, users=users, jobs=jobs,
        life=job_life(tables, job_id, cycles, predates) if with_life else (), sections=(),
        rmref=ours, logged=theirs, causes=causes, verified=verified,
        epoch=epoch_of.get(c), first_epoch=epoch_of.get(cycles[0]), last_epoch=epoch_of.get(cycles[-1]),
        not_audited=_not_audited(result, c), predates_log=predates,
        assumed=tuple(a for a in result.assumed if a.source != "config" and not a.setting.startswith("node ")),
        rm_release=result.rm_release.to_json() if result.rm_release else None,
    )


def _rmref_takings(trace: CycleTrace | None) -> dict[tuple[int, str, int], int]:
    """(donor, host, share id) -> needy job, of every share rmref's defragmentation took in the cycle."""
    if trace is None or trace.defrag is None:
        return {}
    return {(a.donor_job, a.host, a.share_id): a.needy_job for a in trace.defrag.actions if a.action == "evict"}


def _agrees(story: Story, kinds: tuple[str, ...]) -> list[str]:
    """The verified choices of these decision kinds, one line each ("findShares agrees: ...")."""
    return [f"{v.step} {v.explanation}." for v in story.verified if v.decision in kinds]


def _not_audited(result: AuditResult, cycle: int) -> str | None:
    """Why the audit left the cycle out, wholly or for some decisions (None: it audited all)."""
    if cycle in result.skipped:
        return result.skipped[cycle]
    kinds = [k for k in result.audited if cycle in result.skipped_kinds.get(k, {})]
    if not kinds:
        return None
    return f"partly: {', '.join(kinds)} not audited, {result.skipped_kinds[kinds[0]][cycle]}"


def _defrag_kinds(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> set[str]:
    """What defragmentation logged for the job in the cycle (needy, satisfied, failed, ...)."""
    return set(cycle_rows(tables, "defrag", cycle, job_id)["kind"].drop_nulls().to_list())


def _sections(tables: Mapping[str, pl.DataFrame], story: Story, inp: CycleInput | None,
              boot: Bootstrap, counted: bool) -> tuple[Section, ...]:
    """The story's sections: its life when told, then the eight levels of the cycle's detail
    (`counted`: rmref's counts are the audit's, which did not leave them out of the cycle)."""
    c, job_id = story.cycle, story.job_id
    work = next((w for w in inp.work if w.job_id == job_id), None) if inp else None
    cls = inp.class_of(work) if inp and work else None
    not_fair = story.policy is not None and story.policy != "FAIR_SHARE"
    left_out = None if counted or not_fair else "No count of rmref's: the audit left the cycle's counts out."
    count_rows = cycle_rows(tables, "counts", c, job_id)
    sections = [life_section(story.life)] if story.life else []
    sections += [
        job_section(job_id, work, story.work_type, story.user, story.class_name, cls, story.memory_gb,
                     story.order, job_quantum(tables, boot, job_id, story.class_name)),
        cap_section(story.caps, work.cap_input if work else None, story.logged_caps),
        counting_section(f"3. Its class among the classes of nodepool {story.nodepool or '?'}", story.classes,
                          left_out or "No class count: " + ("the class is not fair share." if not_fair
                                                            else "no RmCounter block names the class this cycle.")),
        counting_section(f"4. Its user among the users of class {story.class_name}", story.users,
                          left_out or "No user count: " + ("the class is not fair share." if not_fair
                                                           else "the class got nothing to divide among its users.")),
        count_section(story, count_rows, left_out),
        placement_section(story.placed, cycle_rows(tables, "expansions", c, job_id), _agrees(story, ("placements",))),
        taken_section(story.taken, defrag_lines(tables, c, job_id) + kept_lines(tables, c, job_id)
                       + _agrees(story, ("defrag",)), confirmed_gone(tables, c, job_id)),
        waiting_section(story.reason, count_rows, story.shares, story.count, _defrag_kinds(tables, c, job_id)),
    ]
    return tuple(sections)


def explain_job(tables: Mapping[str, pl.DataFrame], job_id: int, cycle: int | None = None,
                result: AuditResult | None = None) -> Story:
    """The story of one job: its life (when `cycle` is None) and the detail of one cycle.

    rmref's side is the audit's own run of that cycle: `result` when it holds the cycle's trace
    (an audit run with `trace={cycle}`) or re-enters it (`trace_cycle`), none where `result` left
    the cycle out, else an audit of the log up to the cycle (defragmentation carries the users'
    wealth from cycle to cycle, so the cycles before it count).
    Raises InputError when the job is not in the log or the cycle is out of range.
    """
    cycles = job_cycles(tables, job_id)
    c = pick_cycle(tables, job_id, cycles, cycle)
    trace: CycleTrace | None
    inp: CycleInput | None
    orders: pl.DataFrame | None = None  # the work orders, where a replay start found them
    if result is not None and c in result.traces:
        # the audit's own run of the cycle is at hand (a stored audit's re-entry, explain.scope):
        # no replay, so no replay start (on a scoped view of the tables it would infer the machines),
        # and the configuration the audit ran the cycle with (not rebuilt from the scoped view)
        trace, inp = result.traces[c], result.traces[c].input
        boot, predates = Bootstrap(inp.config, inp.classes, inp.nodepools), job_id in predates_log(tables)
    else:
        # the settings, machines and cycles every command replays from; the audit up to the cycle,
        # when it runs, takes over the inputs the threshold inference assembles (`hold`)
        start = replay_start(tables, hold=True)
        trace = trace_cycle(tables, result, c, start=start) if result is not None else None
        # a cycle the audit left out or found damaged is its verdict, read, not reached a second way
        if result is None or (trace is None and c not in result.skipped and c not in result.damaged):
            result = audit(tables, cycles=range(0, c + 1), trace={c}, start=start)
            trace = result.traces.get(c)
        start.let_go()
        inp = trace.input if trace else next(start.inputs(tables, range(c, c + 1)), None)
        boot, predates, orders = start.boot, job_id in start.predates, start.work_orders
    story = _facts(tables, result, trace, inp, boot, predates, job_id, c, cycles, with_life=cycle is None,
                   orders=orders)
    damage = result.damaged.get(c)
    counted = trace is None or "counts" in trace.kinds
    return replace(story, sections=_sections(tables, story, inp, boot, counted),
                   damaged=damage.text() if damage else None)
