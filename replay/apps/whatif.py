"""`rmreplay whatif` and `rmreplay check`: replay recorded history through rmref with a change.

Each cycle's *recorded* inputs (the machines, the work and the shares the RM really held when
the cycle began) are scheduled by rmref's chained phases (`rmref.cycle.schedule`) with the
configuration changed (`--set KEY=VALUE`) and/or a phase replaced by the developer's own function
(`--scheduler MODULE:OBJECT`), and every decision is compared, cycle by cycle and job by job, with
the one the RM logged.

The replay is *open loop*: every cycle starts from what the RM actually held, not from what the
changed scheduler would have left behind, so a change shows what each cycle would have decided
differently; the effects do not accumulate over time. Only the scheduler's private memory (the
last pure fair shares, users' wealth in defragmentation) is threaded from the changed cycle to
the next.

Where rmref itself does not reproduce a logged decision (an audit divergence, `rmreplay audit`),
a change that leaves rmref's answer as it was is not counted as a change: the decision is then
compared with rmref's unchanged answer (the baseline), and the gap is reported as `unreproduced`.
Every figure (preemptions, shares held, fairness) is given three times: as logged, as the
baseline replays it, and with the change, so a change is read against the baseline.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from replay.model.cycleref import epochs, label, rows_frame, span_of
from replay.model.logged import Logged, logged_decisions
from replay.model.reads import narrow
from replay.parsing.sources import InputError
from replay.parsing.tables import Schema
from replay.model.settings import Assumption
from replay.model.start import NODE_FREE, ReplayStart, replay_start
from replay.model.world import Bootstrap, cycle_count
from replay.progress import OnProgress, counted
from rmref.behaviours import Behaviours, for_release
from rmref import job_order, machine_order
from rmref.cycle import CycleResult, Hints, Phases, schedule
from rmref.constants import PURGES
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Work

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "needy")
SIDES = ("logged", "baseline", "whatif")  # every figure: as logged, rmref unchanged, rmref with the change
TAKEN = ("evictions", "defrag_takes")  # shares taken from running work, each counted once

# ducc.properties keys a what-if may change -> (Config field, value parser)
_BOOL = {"true": True, "false": False}


def _at_least(low: int) -> Callable[[str], int]:
    """A parser of whole numbers no smaller than `low` (a weight of 0 would leave nothing to
    divide by; a negative cap or threshold means nothing to the RM)."""
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            value = None
        if value is None or value < low:
            raise ValueError(f"expected a whole number of {low} or more, got {text.strip()!r}")
        return value
    return parse


_to_int, _count, _positive = _at_least(-(2**31)), _at_least(0), _at_least(1)


def _to_bool(text: str) -> bool:
    try:
        return _BOOL[text.strip().lower()]
    except KeyError:
        raise ValueError(f"expected true or false, got {text!r}") from None


def _to_policy(text: str) -> str:
    policy = text.strip().upper()
    if policy not in (FAIR_SHARE, FIXED_SHARE, RESERVE):
        raise ValueError(f"expected FAIR_SHARE, FIXED_SHARE or RESERVE, got {text!r}")
    return policy


def _to_release(text: str) -> Behaviours:
    try:
        return for_release(text.strip())
    except KeyError as exc:
        raise ValueError(exc.args[0]) from None


PROPERTIES: dict[str, tuple[str, Callable[[str], object]]] = {
    "release": ("behaviours", _to_release),  # another DUCC release's scheduling (rmref.behaviours)
    "ducc.rm.share.quantum": ("quantum_gb", _positive),
    "ducc.rm.fragmentation.threshold": ("fragmentation_threshold", _count),
    "ducc.rm.defragmentation": ("defragmentation", _to_bool),
    "ducc.rm.global_allotment": ("global_allotment", _count),
}
# class.<name>.<attribute>, attributes spelt as in ducc.classes -> (ClassDef field, value parser)
CLASS_ATTRIBUTES: dict[str, tuple[str, Callable[[str], object]]] = {
    "weight": ("weight", _count),
    "priority": ("priority", _to_int),
    "policy": ("policy", _to_policy),
    "nodepool": ("nodepool", str.strip),  # checked against the log's nodepools in apply_sets
    "initialization-cap": ("init_cap", _count),
    "expand-by-doubling": ("expand_by_doubling", _to_bool),
    "use-prediction": ("prediction", _to_bool),
    "prediction-fudge": ("prediction_fudge", _count),
    "cap": ("cap", _count),
    "max-allotment": ("max_allotment", _count),
}
_SET_HELP = (", ".join(PROPERTIES) + ", class.<name>.{" + ",".join(CLASS_ATTRIBUTES) + "}"
             + ", user.<name>.max-allotment")


def parse_sets(items: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """`KEY=VALUE` strings as (key, value) pairs, in the order given (a later one wins)."""
    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InputError(f"--set {item!r}: expected KEY=VALUE (keys: {_SET_HELP})")
        out.append((key.strip(), value.strip()))
    return tuple(out)


def _show(text: str) -> str:
    """Text as typed, or quoted when it holds a line break or another control character (an error
    message stays one line)."""
    return text if text.isprintable() else repr(text)


def apply_sets(boot: Bootstrap, sets: Iterable[tuple[str, str]]) -> Bootstrap:
    """The bootstrap with every `--set` applied; InputError for an unknown key, class or bad value."""
    config, classes = boot.config, {c.name: c for c in boot.classes}
    pools = sorted(p.name for p in boot.nodepools)
    users = dict(config.user_allotments)
    for key, value in sets:
        try:
            if key in PROPERTIES:
                name, parse = PROPERTIES[key]
                setting: dict[str, Any] = {name: parse(value)}  # the field PROPERTIES names, its parsed value
                config = dataclasses.replace(config, **setting)
            elif key.startswith("class.") and "." in key[6:]:
                cls, _, attr = key[6:].rpartition(".")
                if cls not in classes:
                    raise InputError(f"--set {_show(key)}: no class {cls!r} (classes: {', '.join(sorted(classes))})")
                if attr not in CLASS_ATTRIBUTES:
                    raise InputError(f"--set {_show(key)}: unknown class attribute {attr!r} "
                                     f"(one of {', '.join(CLASS_ATTRIBUTES)})")
                name, parse = CLASS_ATTRIBUTES[attr]
                if name == "nodepool" and value not in pools:
                    raise ValueError(f"no nodepool {value!r} (nodepools: {', '.join(pools)})")
                attribute: dict[str, Any] = {name: parse(value)}  # the ClassDef field, its parsed value
                classes[cls] = dataclasses.replace(classes[cls], **attribute)
            elif key.startswith("user.") and key.endswith(".max-allotment") and len(key) > 19:
                users[key[5:-14]] = _count(value)
            else:
                raise InputError(f"--set {_show(key)}: not a setting a what-if can change (keys: {_SET_HELP})")
        except ValueError as exc:
            raise InputError(f"--set {_show(f'{key}={value}')}: {exc}") from None
    for before in boot.classes:  # the fair share divides by the weights of a priority's classes
        after = classes[before.name]
        if after != before and after.policy == FAIR_SHARE and after.weight < 1:
            raise InputError(f"--set class.{after.name}: a FAIR_SHARE class needs a weight of 1 or more "
                             f"(it has {after.weight}; add --set class.{after.name}.weight=N)")
    config = dataclasses.replace(config, user_allotments=tuple(sorted(users.items())))
    return Bootstrap(config, tuple(classes[c.name] for c in boot.classes), boot.nodepools)


def _requantise(work: Work, quantum: int) -> Work:
    """A job's process order (and its shares') recomputed from its memory for another quantum."""
    order = job_order(work.memory_gb, quantum)
    shares = tuple(dataclasses.replace(s, order=order) for s in work.shares)
    return dataclasses.replace(work, order=order, shares=shares)


def adapt(inp: CycleInput, before: Bootstrap, after: Bootstrap) -> CycleInput:
    """One recorded cycle's input as the changed configuration sees it.

    A quantum change changes every share order (jobs round their memory up to whole quanta,
    machines down); a class's initialization cap, doubling and prediction flags are copied into
    its jobs' cap inputs, which is where the cap phase reads them.
    """
    if after == before:
        return inp
    work, machines = inp.work, inp.machines
    if after.config.quantum_gb != before.config.quantum_gb:
        q = after.config.quantum_gb
        work = tuple(_requantise(w, q) for w in work)
        machines = tuple(dataclasses.replace(m, order=machine_order(m.memory_mb * 1024, q)) for m in machines)
    old = {c.name: c for c in before.classes}
    new = {c.name: c for c in after.classes}
    changed = {n for n in new if new[n] != old.get(n)}
    if changed:
        work = tuple(_with_class(w, new[w.class_name]) if w.class_name in changed else w for w in work)
    return dataclasses.replace(inp, config=after.config, classes=after.classes, machines=machines, work=work)


def _with_class(work: Work, cls: ClassDef) -> Work:
    cap = dataclasses.replace(work.cap_input, init_cap=cls.init_cap, expand_by_doubling=cls.expand_by_doubling,
                              use_prediction=cls.prediction)
    return dataclasses.replace(work, cap_input=cap)


def load_scheduler(spec: str) -> Phases:
    """`MODULE:OBJECT` (or `path/to/file.py:OBJECT`) as the phases to replay with.

    OBJECT is an `rmref.Phases` (e.g. `Phases(what_of=my_what_of)`), or a mapping from phase names
    (caps, how_much, what_of, evictions, defrag) to functions with the signature of rmref's own;
    phases it does not name stay rmref's.
    """
    module_name, sep, attr = spec.rpartition(":")
    if not sep or not module_name or not attr:
        raise InputError(f"--scheduler {spec!r}: expected MODULE:OBJECT or path/to/file.py:OBJECT")
    try:
        if module_name.endswith(".py") or "/" in module_name:
            path = Path(module_name)
            if not path.is_file():
                raise InputError(f"--scheduler {spec!r}: no file {module_name}")
            found = importlib.util.spec_from_file_location(f"rmreplay_scheduler_{path.stem}", path)
            if found is None or found.loader is None:  # a file Python does not load as a module
                raise InputError(f"--scheduler {spec!r}: {module_name} is not a Python source file (.py)")
            module = importlib.util.module_from_spec(found)
            sys.modules[found.name] = module  # dataclasses and pickling look modules up by name
            found.loader.exec_module(module)
        else:
            module = importlib.import_module(module_name)
    except InputError:
        raise
    except Exception as exc:  # the developer's module failed to import: say so in one line
        raise InputError(f"--scheduler {spec!r}: cannot import {module_name}: {type(exc).__name__}: {exc}") from None
    obj = getattr(module, attr, None)
    if obj is None:
        raise InputError(f"--scheduler {spec!r}: {module_name} has no {attr!r}")
    if isinstance(obj, Phases):
        return obj
    if isinstance(obj, Mapping):
        names = {f.name for f in dataclasses.fields(Phases)}
        unknown = sorted(set(obj) - names)
        if unknown or not all(callable(v) for v in obj.values()):
            raise InputError(f"--scheduler {spec!r}: phases are {', '.join(sorted(names))} (functions); "
                             f"got {', '.join(map(str, unknown)) or 'a value that is not a function'}")
        return Phases(**obj)
    raise InputError(f"--scheduler {spec!r}: {attr} is a {type(obj).__name__}; expected an rmref.Phases "
                     "or a dict of phase name -> function")


@dataclass(frozen=True)
class Change:
    """What a what-if changes: configuration settings and/or phases."""

    sets: tuple[tuple[str, str], ...] = ()
    phases: Phases = Phases()
    scheduler: str | None = None  # the --scheduler spec the phases came from, for the report

    @property
    def identity(self) -> bool:
        """True when nothing is changed (the what-if is rmref's own replay)."""
        return not self.sets and self.phases == Phases()


def _canon(value: object) -> str | None:
    """A decision as canonical JSON text (tuples as lists), None when absent."""
    return None if value is None else json.dumps(value, separators=(",", ":"))


def decision_values(result: CycleResult, logged_caps: Mapping[int, object],
                    logged_counts: Mapping[int, object]) -> dict[str, dict[int, str | None]]:
    """rmref's decisions of one cycle in the logged decisions' shapes (`replay.model.logged`), as JSON text.

    Caps are compared for the jobs the RM logged a cap for (it computes none for completed work);
    a count of 0 only where the RM logged one (a deferral).
    """
    d = result.decisions
    out: dict[str, dict[int, Any]] = {k: {} for k in DECISIONS}  # a decision's value: its logged shape
    out["caps"] = {j: d.caps[j].actual for j in logged_caps if j in d.caps}
    out["counts"] = {j: n for j, n in d.counts.items() if n or j in logged_counts}
    for p in d.placements:
        out["placements"].setdefault(p.job_id, []).append([p.host, p.order])
    for e in d.evictions:  # the log's purge lines name the host and the job, not the share
        out["evictions"].setdefault(e.job_id, []).append([e.host, None if e.reason in PURGES else e.share_id])
    for a in d.defrag:
        if a.action == "evict":
            out["defrag"].setdefault(a.donor_job, []).append([a.host, a.share_id])
    out["needy"] = dict(result.defrag.needy)
    return {k: {j: _canon(sorted(v, key=_sort_key) if isinstance(v, list) else v) for j, v in per.items()}
            for k, per in out.items()}


def _sort_key(item: list) -> tuple:
    return tuple((x is None, 0 if x is None else x) for x in item)  # a purge's share id (None) sorts last


def logged_values(logged: Logged, cycle: int) -> dict[str, dict[int, str | None]]:
    """The RM's logged decisions of one cycle, as JSON text in the shapes of `decision_values`."""
    def lists(per: Mapping[int, Iterable[Iterable[object]]]) -> dict[int, str | None]:
        return {j: _canon(sorted([list(x) for x in v], key=_sort_key)) for j, v in per.items()}
    return {
        "caps": {j: _canon(v) for j, v in logged.caps.get(cycle, {}).items()},
        "counts": {j: _canon(v) for j, v in logged.counts.get(cycle, {}).items()},
        "placements": lists(logged.placements.get(cycle, {})),
        "evictions": lists(logged.evictions.get(cycle, {})),
        "defrag": lists(logged.defrag.get(cycle, {})),
        "needy": {j: _canon(v) for j, v in logged.needy.get(cycle, {}).items()},
    }


def holdings(inp: CycleInput, result: CycleResult) -> dict[int, int]:
    """Quantum shares each job holds once the cycle's decisions are carried out (pending removals gone)."""
    held = {(w.job_id, s.host, s.share_id): s.order for w in inp.work for s in w.shares if not s.pending_removal}
    per: dict[int, int] = {}
    for (job, _h, _s), order in held.items():
        per[job] = per.get(job, 0) + order
    d = result.decisions
    for p in d.placements:
        per[p.job_id] = per.get(p.job_id, 0) + p.order
    gone = set()
    for e in d.evictions:
        if e.reason in PURGES:
            gone |= {k for k in held if k[0] == e.job_id and k[1] == e.host}
        else:
            gone.add((e.job_id, e.host, e.share_id))
    for a in d.defrag:
        if a.action == "evict":
            gone.add((a.donor_job, a.host, a.share_id))
        elif a.action in ("cancel_pending", "reassign_pending"):  # a share What Of had just placed
            per[a.donor_job] = per.get(a.donor_job, 0) - a.order
            if a.action == "reassign_pending":
                per[a.needy_job] = per.get(a.needy_job, 0) + a.order
    for key in gone:
        if key in held:
            per[key[0]] -= held.pop(key)
    return per


def logged_held(tables: Mapping[str, pl.DataFrame], quantum: int) -> pl.DataFrame:
    """(cycle, job_id, processes, qshares) each job held after the RM's cycle: its published
    Existing shares less the Removals (preempted, still running until the Orchestrator confirms)."""
    sched = narrow(tables, "schedule", ("cycle", "job_id", "kind", "host", "share_id", "memory_gb")).filter(
        pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    removed = sched.filter(pl.col("kind") == "removal").select("cycle", "job_id", "share_id").unique()
    return (sched.filter(pl.col("kind") == "existing")
            .join(removed, on=["cycle", "job_id", "share_id"], how="anti")
            .with_columns(((pl.col("memory_gb").fill_null(0) + quantum - 1) // quantum).alias("q"))
            .group_by("cycle", "job_id").agg(pl.len().cast(pl.Int64).alias("processes"),
                                             pl.col("q").sum().alias("qshares"))
            .sort("cycle", "job_id"))


def logged_holdings(tables: Mapping[str, pl.DataFrame], quantum: int) -> dict[int, dict[int, int]]:
    """Per cycle, the quantum shares each job held after the RM's cycle (`logged_held`)."""
    out: dict[int, dict[int, int]] = {}
    for cycle, job, q in logged_held(tables, quantum).select("cycle", "job_id", "qshares").iter_rows():
        out.setdefault(cycle, {})[job] = q
    return out


def taken_shares(result: CycleResult) -> dict[str, set[tuple[int, int]]]:
    """(job, share id) of the shares the cycle takes from running work for the scheduler's own
    reasons (not node deaths): by doEvictions (shrink, reservation clearing) and by defragmentation."""
    d = result.decisions
    return {"evictions": {(e.job_id, e.share_id) for e in d.evictions if e.reason not in PURGES},
            "defrag_takes": {(a.donor_job, a.share_id) for a in d.defrag if a.action == "evict"}}


def logged_taken_shares(logged: Logged, cycle: int) -> dict[str, set[tuple[int, int]]]:
    """The shares the RM took in the cycle, in the shapes of `taken_shares` (a purge names no share)."""
    return {"evictions": {(j, sid) for j, v in logged.evictions.get(cycle, {}).items() for _h, sid in v
                          if sid is not None},
            "defrag_takes": {(j, sid) for j, v in logged.defrag.get(cycle, {}).items() for _h, sid in v}}


def jain(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2); None when nobody holds anything."""
    xs = list(values)
    square = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * square) if xs and square else None


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

    def report(self) -> dict:
        """The report.json contract (means over every replayed cycle, 6 decimals)."""
        n = len(self.cycles)

        def mean(xs: list[float]) -> float | None:
            return round(sum(xs) / len(xs), 6) if xs else None

        by_kind = {k: sum(1 for r in self.changes if r[2] == k) for k in DECISIONS}
        evicted, took = self.taken["evictions"], self.taken["defrag_takes"]
        return {
            "cycles": n,
            "cycles_changed": self.cycles_changed,
            "jobs_changed": len({j for _c, j, *_ in self.changes}),
            "baseline_divergent_cycles": len(self.unreproduced_cycles),
            "per_user": {u: {f"mean_shares_{side}": round(q / n, 6) if n else 0.0 for side, q in zip(SIDES, v)}
                         for u, v in sorted(self.user_shares.items())},
            "preemptions": dict(zip(SIDES, (len(e | t) for e, t in zip(evicted, took)))),
            **{k: dict(zip(SIDES, map(len, self.taken[k]))) for k in TAKEN},
            "fairness": dict(zip(SIDES, map(mean, self.fairness))),
            "decisions_changed": by_kind,
            "unreproduced": self.unreproduced,
            "set": {k: v for k, v in self.change.sets},
            "scheduler": self.change.scheduler,
            "open_loop": True,
            "span": span_of(self.cycles, self.epochs),
            "skipped": {"cycles": len(self.skipped), "reason": next(iter(self.skipped.values()), None)},
            "partly": {"cycles": len(self.partly), "decisions": list(NODE_FREE) if self.partly else [],
                       "reason": next(iter(self.partly.values()), None)},
            "assumed": [{"setting": a.setting, "value": a.value, "source": a.source, "evidence": a.evidence}
                        for a in self.assumed],
        }


def _hints(logged: Logged, cycle: int, carried: CycleResult | None) -> Hints:
    """The orders the log reveals for the cycle, and what the scheduler carried from the last one."""
    return Hints(tuple(logged.user_orders.get(cycle, ())), tuple(logged.job_order.get(cycle, ())),
                 logged.share_walk.get(cycle, {}), carried.pure_fair_share if carried else {},
                 carried.defrag.wealth if carried else None)


def whatif(tables: Mapping[str, pl.DataFrame], change: Change = Change(), boot: Bootstrap | None = None,
           cycles: range | None = None, progress: OnProgress | None = None,
           start: ReplayStart | None = None) -> WhatIfResult:
    """Replay every cycle (or those in `cycles`) with the change and compare it with the log; the
    cycles the audit leaves out (`start`, replay.model.start) are left out alike."""
    start = start or replay_start(tables, boot)
    boot = start.boot
    changed_boot = apply_sets(boot, change.sets)
    logged = logged_decisions(tables)
    held_logged = logged_holdings(tables, boot.config.quantum_gb)
    result = WhatIfResult(change, epochs=epochs(tables["cycles"]), assumed=start.assumed)
    base_prev = what_prev = None
    inputs = start.inputs(tables, cycles)
    for inp in counted(inputs, cycle_count(tables, cycles), progress, "replaying"):
        c = inp.cycle
        why = start.skipped(c)
        if why is not None:
            result.skipped[c] = why
            continue
        result.cycles.append(c)
        base = schedule(inp, _hints(logged, c, base_prev))
        what = base if change.identity else schedule(adapt(inp, boot, changed_boot), _hints(logged, c, what_prev),
                                                     change.phases)
        unsettled = start.machines_unsettled(c)
        if unsettled is not None:
            result.partly[c] = unsettled
        _compare(result, c, logged, base, what, NODE_FREE if unsettled is not None else DECISIONS)
        if unsettled is None:  # the shares held and taken read the machines
            _tally(result, inp, logged, held_logged.get(c, {}), base, what)
        base_prev, what_prev = base, what
    return result


def _compare(result: WhatIfResult, cycle: int, logged: Logged, base: CycleResult, what: CycleResult,
             kinds: Iterable[str] = DECISIONS) -> None:
    """Record every decision the change alters. A decision differs from the log because of the
    change unless rmref unchanged already differed the same way (a reproduction gap, counted)."""
    lv = logged_values(logged, cycle)
    caps, counts = logged.caps.get(cycle, {}), logged.counts.get(cycle, {})
    bv = decision_values(base, caps, counts)
    wv = bv if what is base else decision_values(what, caps, counts)
    for kind in kinds:
        lk, bk, wk = lv[kind], bv[kind], wv[kind]
        for job in sorted(set(lk) | set(bk) | set(wk)):
            logged_v, base_v, what_v = lk.get(job), bk.get(job), wk.get(job)
            if base_v != logged_v:
                result.unreproduced += 1
                result.unreproduced_cycles.add(cycle)
            if what_v != logged_v and what_v != base_v:
                result.changes.append((cycle, job, kind, logged_v, base_v, what_v))


def _tally(result: WhatIfResult, inp: CycleInput, logged: Logged, held_logged: Mapping[int, int],
           base: CycleResult, what: CycleResult) -> None:
    """Per-user shares, fairness and the shares taken in one cycle, for every side (SIDES)."""
    owner = {w.job_id: w.user for w in inp.work}
    users = sorted(set(owner.values()))
    sides = ((held_logged, logged_taken_shares(logged, inp.cycle)),
             (holdings(inp, base), taken_shares(base)), (holdings(inp, what), taken_shares(what)))
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
            result.taken[kind][side] |= shares


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
    (out / "report.json").write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n")


def junit_xml(results: list[tuple[str, WhatIfResult, float]], max_changed: int) -> str:
    """A JUnit XML document: one testsuite per log, one testcase (the gate) in each; the suite's
    properties give the baseline's own divergences (cycles rmref unchanged does not reproduce)."""
    failed = [r.cycles_changed > max_changed for _, r, _ in results]
    root = ET.Element("testsuites", name="rmreplay check", tests=str(len(results)), failures=str(sum(failed)))
    for (name, res, seconds), fail in zip(results, failed):
        report = res.report()
        suite = ET.SubElement(root, "testsuite", name=name, tests="1", failures=str(int(fail)), errors="0",
                              time=f"{seconds:.3f}")
        props = ET.SubElement(suite, "properties")
        for key in ("cycles", "cycles_changed", "baseline_divergent_cycles", "unreproduced"):
            ET.SubElement(props, "property", name=key, value=str(report[key]))
        case = ET.SubElement(suite, "testcase", classname="rmreplay.check", name=f"changed cycles <= {max_changed}",
                             time=f"{seconds:.3f}")
        if fail:
            lines = [change_text(row, res.epochs) for row in res.changes[:50]]
            if len(res.changes) > 50:
                lines.append(f"... {len(res.changes) - 50} more")
            message = f"{res.cycles_changed} of {len(res.cycles)} cycles change (allowed {max_changed})"
            ET.SubElement(case, "failure", message=message, type="ChangedCycles").text = "\n".join(lines)
        ET.SubElement(case, "system-out").text = json.dumps(report, sort_keys=True)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
