"""`rmreplay whatif` and `rmreplay check`: replay recorded history through rmref with a change.

Each cycle's *recorded* inputs (the machines, the work and the shares the RM really held when
the cycle began) are scheduled by rmref's chained phases (`rmref.cycle.schedule`) with the
configuration changed (`--set KEY=VALUE`) and/or a phase replaced by the developer's own function
(`--scheduler MODULE:OBJECT`), and every decision is compared, cycle by cycle and job by job, with
the one the RM logged.

The replay is *open loop*: every cycle starts from what the RM actually held, not from what the
changed scheduler would have left behind, so a change shows what each cycle would have decided
differently; the effects do not accumulate over time. Only the scheduler's private memory
(`rmref.Memory`: the last pure fair shares, users' wealth in defragmentation) is threaded from
the changed cycle to the next; the needy list comes, as the rest of the input, from the log.

Where rmref itself does not reproduce a logged decision (an audit divergence, `rmreplay audit`),
a change that leaves rmref's answer as it was is not counted as a change: the decision is then
compared with rmref's unchanged answer (the baseline), and the gap is reported as `unreproduced`.
Every figure (preemptions, shares held, fairness) is given three times: as logged, as the
baseline replays it, and with the change, so a change is read against the baseline.

The baseline is the audit's chained run (replay.apps.baseline), read from the stored audit: it
follows the RM's verified free choices, so its `unreproduced` decisions are the audit's
divergences. The change runs on the audit's input of each cycle and follows those choices only
where its own phases still meet them among their equal choices (`run_following`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from replay.apps.baseline import (
    DECISIONS,
    Audited,
    BaselineCycle,
    Values,
    caps_values,
    decision_values,
    logged_values,
    run_following,
    swapped,
    with_ips,
)
from replay.apps.change import Change, adapt, apply_sets
from replay.apps.junit import Case, Failure, Suite
from replay.apps.junit import junit_xml as suite_xml
from replay.apps.reports import LeftOut, Partly, WhatIfReport, as_json, report_json
from replay.apps.measures import holdings, jain, logged_holdings, logged_taken_shares, taken_shares
from replay.model.bootstrap import Bootstrap
from replay.model.cycleref import epochs, label, rows_frame, span_of
from replay.model.logged import Logged
from replay.model.settings import Assumption
from replay.model.start import NODE_FREE, ReplayStart, replay_start
from replay.parsing.tables import Schema
from replay.progress import OnProgress, counted
from rmref.cycle import Hints
from rmref.memory import Memory
from rmref.model import CycleInput

SIDES = ("logged", "baseline", "whatif")  # every figure: as logged, rmref unchanged, rmref with the change
TAKEN = ("evictions", "defrag_takes")  # shares taken from running work, each counted once

# one changed decision: cycle, job, decision kind, then its value logged, rmref unchanged, with the change
ChangeRow = tuple[int, int, str, str | None, str | None, str | None]


@dataclass
class WhatIfResult:
    """Changed decisions of a what-if replay and the tallies report.json is made of (per SIDES)."""

    change: Change
    cycles: list[int] = field(default_factory=list)
    changes: list[ChangeRow] = field(default_factory=list)
    unreproduced: int = 0  # decisions rmref unchanged does not reproduce (audit divergences)
    unreproduced_cycles: set[int] = field(default_factory=set)  # the cycles they are in
    user_shares: dict[str, list[int]] = field(default_factory=dict)  # user -> share-cycles per side
    fairness: list[list[float]] = field(default_factory=lambda: [[] for _ in SIDES])  # per cycle Jain index
    # figure -> per side, every (job, share id) taken: a share the replay takes again in a later
    # cycle (open loop: each cycle starts from what the RM held) is still one share
    taken: dict[str, list[set[tuple[int, int]]]] = field(
        default_factory=lambda: {k: [set() for _ in SIDES] for k in TAKEN})
    epochs: dict[int, int | None] = field(default_factory=dict)  # cycle -> the RM's epoch (its name in any copy)
    # as the audit leaves them out (replay.model.start): cycles not replayed, and cycles whose
    # machines are unknown, where only the decisions that do not read them (NODE_FREE) are compared
    skipped: dict[int, str] = field(default_factory=dict)
    partly: dict[int, str] = field(default_factory=dict)
    assumed: tuple[Assumption, ...] = ()  # the settings and machines read, and their sources

    @property
    def cycles_changed(self) -> int:
        """Cycles with at least one changed decision."""
        return len({c for c, *_ in self.changes})

    def report(self) -> dict[str, Any]:
        """The report.json contract (`summary`, in JSON's shapes)."""
        return as_json(self.summary())

    def summary(self) -> WhatIfReport:
        """The what-if's figures as report.json holds them (means over every replayed cycle, 6 decimals)."""
        n = len(self.cycles)

        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 6) if xs else None

        evicted, took = self.taken["evictions"], self.taken["defrag_takes"]
        return WhatIfReport(
            cycles=n,
            cycles_changed=self.cycles_changed,
            jobs_changed=len({j for _c, j, *_ in self.changes}),
            baseline_divergent_cycles=len(self.unreproduced_cycles),
            per_user={u: {f"mean_shares_{side}": round(q / n, 6) if n else 0.0 for side, q in zip(SIDES, v)}
                      for u, v in sorted(self.user_shares.items())},
            preemptions=dict(zip(SIDES, (len(e | t) for e, t in zip(evicted, took)))),
            evictions=dict(zip(SIDES, map(len, evicted))),
            defrag_takes=dict(zip(SIDES, map(len, took))),
            fairness=dict(zip(SIDES, map(mean, self.fairness))),
            decisions_changed={k: sum(1 for r in self.changes if r[2] == k) for k in DECISIONS},
            unreproduced=self.unreproduced,
            set=dict(self.change.sets),
            scheduler=self.change.scheduler,
            open_loop=True,
            span=span_of(self.cycles, self.epochs),
            skipped=LeftOut(len(self.skipped), next(iter(self.skipped.values()), None)),
            partly=Partly(len(self.partly), list(NODE_FREE) if self.partly else [],
                          next(iter(self.partly.values()), None)),
            assumed=list(self.assumed),
        )


def _hints(logged: Logged, cycle: int, memory: Memory) -> Hints:
    """The orders the log reveals for the cycle, and what the scheduler carried from the last one
    (the machines' order takeFromTheRich met them in ties on the nodes' hashes, which no change moves)."""
    return Hints(tuple(logged.user_orders.get(cycle, ())), tuple(logged.job_order.get(cycle, ())),
                 logged.share_walk.get(cycle, {}), memory, searched=logged.searched.get(cycle, {}))


@dataclass(frozen=True)
class _Side:
    """One side of a cycle (rmref unchanged, or with the change) as the what-if reads it."""

    values: Values
    held: Mapping[int, int] | None = None
    taken: Mapping[str, Collection[tuple[int, int]]] = field(default_factory=dict)


def whatif(tables: Mapping[str, pl.DataFrame], change: Change = Change(), boot: Bootstrap | None = None,
           cycles: range | None = None, progress: OnProgress | None = None,
           start: ReplayStart | None = None, audited: Audited | None = None,
           read_audit: Callable[[ReplayStart], Audited | None] | None = None) -> WhatIfResult:
    """Replay every cycle (or those in `cycles`) with the change and compare it with the log and
    with rmref unchanged, which is the audit's chained run (`audited`, or what `read_audit` reads
    once the change is known to apply: the stored audit's, run from the start it is given when it
    is not stored; else an audit run now, `replay.apps.stored.audited_now`); the cycles the audit
    leaves out are left out alike."""
    # an audit run here takes over the inputs the threshold inference assembles (`hold`)
    start = start or replay_start(tables, boot, hold=audited is None)
    boot = start.boot
    changed_boot = apply_sets(boot, change.sets)  # a bad --set is told before any audit runs
    if audited is None and read_audit is not None:
        audited = read_audit(start)
    if audited is None:
        from replay.apps.stored import audited_now  # the stored audit's module imports the audit's phases

        audited = audited_now(tables, boot, progress, start)
    start.let_go()  # (a stored audit read: the inputs held for one run now are not needed)
    mine = swapped(change.phases)
    logged = start.logged(tables)
    held_logged = logged_holdings(tables, boot.config.quantum_gb, boot, start.work_orders)
    result = WhatIfResult(change, epochs=epochs(tables["cycles"]), assumed=(*start.assumed, *changed_boot.assumed))
    todo = sorted(c for c in {*audited.baseline, *audited.left_out} if cycles is None or c in cycles)
    memory: Memory | None = None  # the change side's, None where its chain breaks
    for c in counted(iter(todo), len(todo), progress, "replaying"):
        base = audited.baseline.get(c)
        if base is None:
            result.skipped[c] = audited.left_out[c]
            memory = None
            continue
        result.cycles.append(c)
        if base.partly is not None:
            result.partly[c] = base.partly
        baseline = _Side(base.values, base.held, base.taken)
        what = baseline
        if not change.identity:
            inp, carried = audited.entry(c)
            inp = adapt(with_ips(inp, base.ips), boot, changed_boot)
            what, memory = _changed(inp, logged, base, change, mine, carried if memory is None else memory)
        _compare(result, c, logged, baseline, what, NODE_FREE if base.partly is not None else DECISIONS)
        if base.partly is None:  # the shares held and taken read the machines
            _tally(result, base.owner, logged, c, held_logged.get(c, {}), baseline, what)
    return result


def _changed(inp: CycleInput, logged: Logged, base: BaselineCycle, change: Change, mine: frozenset[str],
             memory: Memory) -> tuple[_Side, Memory]:
    """The change's side of one cycle, and the memory it carries on. The change follows the RM's
    free choices the baseline followed only where they are still its own (`run_following`); on a
    cycle whose machines are unknown only the caps are replayed, and the memory carries over it."""
    caps = logged.caps.get(inp.cycle, {})
    if base.partly is not None:
        return _Side(caps_values({w.job_id: change.phases.caps(w.cap_input).actual
                                  for w in inp.work if w.job_id in caps})), memory
    run, served = run_following(inp, _hints(logged, inp.cycle, memory), base.choices, change.phases, mine)
    values = decision_values(run, caps, logged.counts.get(inp.cycle, {}), served)
    return _Side(values, holdings(inp, run), taken_shares(run)), run.memory


def _compare(result: WhatIfResult, cycle: int, logged: Logged, base: _Side, what: _Side,
             kinds: Iterable[str] = DECISIONS) -> None:
    """Record every decision the change alters. A decision differs from the log because of the
    change unless rmref unchanged already differed the same way (a reproduction gap, counted)."""
    lv, bv, wv = logged_values(logged, cycle), base.values, what.values
    for kind in kinds:
        lk, bk, wk = lv[kind], bv[kind], wv[kind]
        for job in sorted(set(lk) | set(bk) | set(wk)):
            logged_v, base_v, what_v = lk.get(job), bk.get(job), wk.get(job)
            if base_v != logged_v:
                result.unreproduced += 1
                result.unreproduced_cycles.add(cycle)
            if what_v != logged_v and what_v != base_v:
                result.changes.append((cycle, job, kind, logged_v, base_v, what_v))


def _tally(result: WhatIfResult, owner: Mapping[int, str], logged: Logged, cycle: int,
           held_logged: Mapping[int, int], base: _Side, what: _Side) -> None:
    """Per-user shares, fairness and the shares taken in one cycle, for every side (SIDES)."""
    users = sorted(set(owner.values()))
    sides = ((held_logged, logged_taken_shares(logged, cycle)), (base.held or {}, base.taken),
             (what.held or {}, what.taken))
    for side, (held, taken) in enumerate(sides):
        per_user = dict.fromkeys(users, 0)
        for job, q in held.items():
            if job in owner:
                per_user[owner[job]] += q
        for u, q in per_user.items():
            result.user_shares.setdefault(u, [0] * len(SIDES))[side] += q
        index = jain(per_user.values())
        if index is not None:
            result.fairness[side].append(index)
        for kind, shares in taken.items():
            result.taken[kind][side] |= set(shares)


CHANGES_SCHEMA: Schema = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                  "baseline": pl.String, "whatif": pl.String, "epoch": pl.Int64}
_ABSENT = {"caps": "no cap", "counts": "no count", "placements": "nothing placed", "evictions": "nothing taken",
           "defrag": "nothing taken", "needy": "not needy"}


def _processes(n: int) -> str:
    return f"{n:,} process" + ("" if n == 1 else "es")


def describe(kind: str, value: str | None) -> str:
    """A decision's value (JSON text, as in changes.parquet; None: no such decision) in words."""
    if value is None:
        return _ABSENT[kind]
    v = json.loads(value)
    if kind == "caps":
        return f"cap {v:,}"
    if kind == "counts":
        return _processes(v)
    if kind == "needy":
        return f"needs {_processes(v)}"
    if kind == "placements":  # [host, order] per process
        orders = {order for _h, order in v}
        per_host = Counter(host if len(orders) == 1 else f"{host} (order {order})" for host, order in v)
        of = f" of order {next(iter(orders))}" if len(orders) == 1 else ""
        if len(per_host) == 1:
            return f"{_processes(len(v))}{of} on {next(iter(per_host))}"
        return f"{_processes(len(v))}{of}: " + ", ".join(f"{n} on {h}" for h, n in per_host.items())
    # evictions, defrag: [host, share id], the share id None for a node purge (the log names none)
    ids: dict[str, list[int | None]] = {}
    for host, share in v:
        ids.setdefault(host, []).append(share)
    words = []
    for host, shares in ids.items():
        named = [str(s) for s in shares if s is not None]
        if named:
            words.append(f"share{'s' if len(named) > 1 else ''} {', '.join(named)} on {host}")
        if None in shares:
            words.append(f"every share on {host} (node purged)")
    return "; ".join(words)


def change_text(row: ChangeRow, epoch_of: dict[int, int | None] | None = None) -> str:
    """One changed decision in words: the logged value, the what-if's, and the baseline's where it
    already differed from the log (the cycle named with its epoch when `epoch_of` knows it)."""
    cycle, job, kind, logged, base, what = row
    unchanged = "" if base == logged else f" (rmref unchanged: {describe(kind, base)})"
    where = label(cycle, (epoch_of or {}).get(cycle))
    return (f"cycle {where} job {job} {kind}: logged {describe(kind, logged)}{unchanged} "
            f"-> what-if {describe(kind, what)}")


def changes_frame(result: WhatIfResult) -> pl.DataFrame:
    """changes.parquet: one row per changed decision, logged, rmref unchanged and with the change,
    values as JSON text (null: no such decision)."""
    return rows_frame(result.changes, CHANGES_SCHEMA, result.epochs)


def write_whatif(result: WhatIfResult, out: Path) -> None:
    """OUT/report.json and OUT/changes.parquet (byte-identical for the same input)."""
    out.mkdir(parents=True, exist_ok=True)
    changes_frame(result).write_parquet(out / "changes.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(report_json(result.report()))


def junit_xml(results: list[tuple[str, WhatIfResult, float]], max_changed: int) -> str:
    """A JUnit XML document: one testsuite per log, one testcase (the gate) in each; the suite's
    properties give the baseline's own divergences (cycles rmref unchanged does not reproduce)."""
    suites = []
    for name, res, seconds in results:
        report = res.report()
        failure = None
        if res.cycles_changed > max_changed:
            lines = [change_text(row, res.epochs) for row in res.changes[:50]]
            if len(res.changes) > 50:
                lines.append(f"... {len(res.changes) - 50} more")
            message = f"{res.cycles_changed} of {len(res.cycles)} cycles change (allowed {max_changed})"
            failure = Failure(message, "ChangedCycles", "\n".join(lines))
        case = Case("rmreplay.check", f"changed cycles <= {max_changed}", f"{seconds:.3f}",
                    json.dumps(report, sort_keys=True), failure)
        properties = tuple((key, str(report[key])) for key in
                           ("cycles", "cycles_changed", "baseline_divergent_cycles", "unreproduced"))
        suites.append(Suite(name, f"{seconds:.3f}", (case,), properties))
    return suite_xml("rmreplay check", suites)
