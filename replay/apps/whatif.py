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
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import json
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from xml.sax.saxutils import escape, quoteattr

import polars as pl

from replay.model.logged import Logged, logged_decisions
from replay.parsing.sources import InputError
from replay.model.world import Bootstrap, bootstrap, cycle_inputs
from rmref import job_order, machine_order
from rmref.cycle import CycleResult, Hints, Phases, schedule
from rmref.evictions import PURGE
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Work

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "needy")

# ducc.properties keys a what-if may change -> (Config field, value parser)
_BOOL = {"true": True, "false": False}


def _to_int(text: str) -> int:
    return int(text.strip())


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


PROPERTIES: dict[str, tuple[str, Callable[[str], object]]] = {
    "ducc.rm.share.quantum": ("quantum_gb", _to_int),
    "ducc.rm.fragmentation.threshold": ("fragmentation_threshold", _to_int),
    "ducc.rm.defragmentation": ("defragmentation", _to_bool),
    "ducc.rm.global_allotment": ("global_allotment", _to_int),
}
# class.<name>.<attribute>, attributes spelt as in ducc.classes -> (ClassDef field, value parser)
CLASS_ATTRIBUTES: dict[str, tuple[str, Callable[[str], object]]] = {
    "weight": ("weight", _to_int),
    "priority": ("priority", _to_int),
    "policy": ("policy", _to_policy),
    "nodepool": ("nodepool", str.strip),
    "initialization-cap": ("init_cap", _to_int),
    "expand-by-doubling": ("expand_by_doubling", _to_bool),
    "use-prediction": ("prediction", _to_bool),
    "prediction-fudge": ("prediction_fudge", _to_int),
    "cap": ("cap", _to_int),
    "max-allotment": ("max_allotment", _to_int),
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


def apply_sets(boot: Bootstrap, sets: Iterable[tuple[str, str]]) -> Bootstrap:
    """The bootstrap with every `--set` applied; InputError for an unknown key, class or bad value."""
    config, classes = boot.config, {c.name: c for c in boot.classes}
    users = dict(config.user_allotments)
    for key, value in sets:
        try:
            if key in PROPERTIES:
                name, parse = PROPERTIES[key]
                config = dataclasses.replace(config, **{name: parse(value)})
            elif key.startswith("class.") and "." in key[6:]:
                cls, _, attr = key[6:].rpartition(".")
                if cls not in classes:
                    raise InputError(f"--set {key}: no class {cls!r} (classes: {', '.join(sorted(classes))})")
                if attr not in CLASS_ATTRIBUTES:
                    raise InputError(f"--set {key}: unknown class attribute {attr!r} "
                                     f"(one of {', '.join(CLASS_ATTRIBUTES)})")
                name, parse = CLASS_ATTRIBUTES[attr]
                classes[cls] = dataclasses.replace(classes[cls], **{name: parse(value)})
            elif key.startswith("user.") and key.endswith(".max-allotment") and len(key) > 19:
                users[key[5:-14]] = _to_int(value)
            else:
                raise InputError(f"--set {key}: not a setting a what-if can change (keys: {_SET_HELP})")
        except ValueError as exc:
            raise InputError(f"--set {key}={value}: {exc}") from None
    if config.quantum_gb <= 0:
        raise InputError("--set ducc.rm.share.quantum: the quantum must be a positive number of GB")
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
            loader = importlib.util.spec_from_file_location(f"rmreplay_scheduler_{path.stem}", path)
            module = importlib.util.module_from_spec(loader)
            sys.modules[loader.name] = module  # dataclasses and pickling look modules up by name
            loader.loader.exec_module(module)
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
                    logged_counts: Mapping[int, object]) -> dict[str, dict[int, str]]:
    """rmref's decisions of one cycle in the logged decisions' shapes (`replay.model.logged`), as JSON text.

    Caps are compared for the jobs the RM logged a cap for (it computes none for completed work);
    a count of 0 only where the RM logged one (a deferral).
    """
    d = result.decisions
    out: dict[str, dict[int, object]] = {k: {} for k in DECISIONS}
    out["caps"] = {j: d.caps[j].actual for j in logged_caps if j in d.caps}
    out["counts"] = {j: n for j, n in d.counts.items() if n or j in logged_counts}
    for p in d.placements:
        out["placements"].setdefault(p.job_id, []).append([p.host, p.order])
    for e in d.evictions:  # the log's purge lines name the host and the job, not the share
        out["evictions"].setdefault(e.job_id, []).append([e.host, None if e.reason == PURGE else e.share_id])
    for a in d.defrag:
        if a.action == "evict":
            out["defrag"].setdefault(a.donor_job, []).append([a.host, a.share_id])
    out["needy"] = dict(result.defrag.needy)
    return {k: {j: _canon(sorted(v, key=_sort_key) if isinstance(v, list) else v) for j, v in per.items()}
            for k, per in out.items()}


def _sort_key(item: list) -> tuple:
    return tuple((x is None, 0 if x is None else x) for x in item)  # a purge's share id (None) sorts last


def logged_values(logged: Logged, cycle: int) -> dict[str, dict[int, str]]:
    """The RM's logged decisions of one cycle, as JSON text in the shapes of `decision_values`."""
    def lists(per: Mapping[int, object]) -> dict[int, str]:
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
        if e.reason == PURGE:
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


def logged_held(tables: dict[str, pl.DataFrame], quantum: int) -> pl.DataFrame:
    """(cycle, job_id, processes, qshares) each job held after the RM's cycle: its published
    Existing shares less the Removals (preempted, still running until the Orchestrator confirms)."""
    sched = tables["schedule"].filter(pl.col("host").is_not_null() & pl.col("cycle").is_not_null())
    removed = sched.filter(pl.col("kind") == "removal").select("cycle", "job_id", "share_id").unique()
    return (sched.filter(pl.col("kind") == "existing")
            .join(removed, on=["cycle", "job_id", "share_id"], how="anti")
            .with_columns(((pl.col("memory_gb").fill_null(0) + quantum - 1) // quantum).alias("q"))
            .group_by("cycle", "job_id").agg(pl.len().cast(pl.Int64).alias("processes"),
                                             pl.col("q").sum().alias("qshares"))
            .sort("cycle", "job_id"))


def logged_holdings(tables: dict[str, pl.DataFrame], quantum: int) -> dict[int, dict[int, int]]:
    """Per cycle, the quantum shares each job held after the RM's cycle (`logged_held`)."""
    out: dict[int, dict[int, int]] = {}
    for cycle, job, q in logged_held(tables, quantum).select("cycle", "job_id", "qshares").iter_rows():
        out.setdefault(cycle, {})[job] = q
    return out


def preemptions(result: CycleResult) -> int:
    """Processes the cycle takes from running work for the scheduler's own reasons (not node deaths)."""
    d = result.decisions
    return (sum(1 for e in d.evictions if e.reason != PURGE)
            + sum(1 for a in d.defrag if a.action == "evict"))


def jain(values: Iterable[float]) -> float | None:
    """Jain's fairness index (sum x)^2 / (n sum x^2); None when nobody holds anything."""
    xs = list(values)
    square = sum(x * x for x in xs)
    return (sum(xs) ** 2) / (len(xs) * square) if xs and square else None


@dataclass
class WhatIfResult:
    """Changed decisions of a what-if replay and the tallies report.json is made of."""

    change: Change
    cycles: list[int] = field(default_factory=list)
    changes: list[tuple[int, int, str, str | None, str | None]] = field(default_factory=list)
    unreproduced: int = 0  # decisions rmref unchanged does not reproduce (audit divergences)
    user_shares: dict[str, list[int]] = field(default_factory=dict)  # user -> [logged, what-if] share-cycles
    fairness: list[list[float]] = field(default_factory=lambda: [[], []])  # per cycle Jain index, logged / what-if
    preemptions: list[int] = field(default_factory=lambda: [0, 0])

    @property
    def cycles_changed(self) -> int:
        """Cycles with at least one changed decision."""
        return len({c for c, *_ in self.changes})

    def report(self) -> dict:
        """The report.json contract (means over every replayed cycle, 6 decimals)."""
        n = len(self.cycles)
        mean = (lambda xs: round(sum(xs) / len(xs), 6) if xs else None)
        by_kind = {k: sum(1 for r in self.changes if r[2] == k) for k in DECISIONS}
        return {
            "cycles": n,
            "cycles_changed": self.cycles_changed,
            "jobs_changed": len({j for _c, j, *_ in self.changes}),
            "per_user": {u: {"mean_shares_logged": round(v[0] / n, 6) if n else 0.0,
                             "mean_shares_whatif": round(v[1] / n, 6) if n else 0.0}
                         for u, v in sorted(self.user_shares.items())},
            "preemptions": {"logged": self.preemptions[0], "whatif": self.preemptions[1]},
            "fairness": {"logged": mean(self.fairness[0]), "whatif": mean(self.fairness[1])},
            "decisions_changed": by_kind,
            "unreproduced": self.unreproduced,
            "set": {k: v for k, v in self.change.sets},
            "scheduler": self.change.scheduler,
            "open_loop": True,
        }


def _hints(logged: Logged, cycle: int, carried: CycleResult | None) -> Hints:
    """The orders the log reveals for the cycle, and what the scheduler carried from the last one."""
    return Hints(tuple(logged.user_orders.get(cycle, ())), tuple(logged.job_order.get(cycle, ())),
                 logged.share_walk.get(cycle, {}), carried.pure_fair_share if carried else {},
                 carried.defrag.wealth if carried else None)


def _logged_preemptions(logged: Logged, cycle: int) -> int:
    shrunk = sum(1 for v in logged.evictions.get(cycle, {}).values() for _h, sid in v if sid is not None)
    return shrunk + sum(len(v) for v in logged.defrag.get(cycle, {}).values())


def whatif(tables: dict[str, pl.DataFrame], change: Change = Change(), boot: Bootstrap | None = None,
           cycles: range | None = None, progress: Callable[[int, int], None] | None = None) -> WhatIfResult:
    """Replay every cycle (or those in `cycles`) with the change and compare it with the log."""
    boot = boot or bootstrap(tables)
    changed_boot = apply_sets(boot, change.sets)
    logged = logged_decisions(tables)
    held_logged = logged_holdings(tables, boot.config.quantum_gb)
    result = WhatIfResult(change)
    base_prev = what_prev = None
    total = tables["cycles"].height
    for i, inp in enumerate(cycle_inputs(tables, boot, cycles)):
        c = inp.cycle
        result.cycles.append(c)
        base = schedule(inp, _hints(logged, c, base_prev))
        what = base if change.identity else schedule(adapt(inp, boot, changed_boot), _hints(logged, c, what_prev),
                                                     change.phases)
        _compare(result, c, logged, base, what)
        _tally(result, inp, logged, held_logged.get(c, {}), what)
        base_prev, what_prev = base, what
        if progress and i % 50 == 0:
            progress(i, total)
    return result


def _compare(result: WhatIfResult, cycle: int, logged: Logged, base: CycleResult, what: CycleResult) -> None:
    """Record every decision the change alters. A decision differs from the log because of the
    change unless rmref unchanged already differed the same way (a reproduction gap, counted)."""
    lv = logged_values(logged, cycle)
    caps, counts = logged.caps.get(cycle, {}), logged.counts.get(cycle, {})
    bv = decision_values(base, caps, counts)
    wv = bv if what is base else decision_values(what, caps, counts)
    for kind in DECISIONS:
        lk, bk, wk = lv[kind], bv[kind], wv[kind]
        for job in sorted(set(lk) | set(bk) | set(wk)):
            logged_v, base_v, what_v = lk.get(job), bk.get(job), wk.get(job)
            if base_v != logged_v:
                result.unreproduced += 1
            if what_v != logged_v and what_v != base_v:
                result.changes.append((cycle, job, kind, logged_v, what_v))


def _tally(result: WhatIfResult, inp: CycleInput, logged: Logged, held_logged: Mapping[int, int],
           what: CycleResult) -> None:
    """Per-user shares, fairness and preemptions of one cycle, logged and what-if."""
    owner = {w.job_id: w.user for w in inp.work}
    users = sorted(set(owner.values()))
    held_what = holdings(inp, what)
    for side, held in enumerate((held_logged, held_what)):
        per_user = dict.fromkeys(users, 0)
        for job, q in held.items():
            if job in owner:
                per_user[owner[job]] += q
        for u, q in per_user.items():
            result.user_shares.setdefault(u, [0, 0])[side] += q
        index = jain(per_user.values())
        if index is not None:
            result.fairness[side].append(index)
    result.preemptions[0] += _logged_preemptions(logged, inp.cycle)
    result.preemptions[1] += preemptions(what)


CHANGES_SCHEMA = {"cycle": pl.UInt32, "job_id": pl.Int64, "decision": pl.String, "logged": pl.String,
                  "whatif": pl.String}


def changes_frame(result: WhatIfResult) -> pl.DataFrame:
    """changes.parquet: one row per changed decision, values as JSON text (null: no such decision)."""
    return pl.DataFrame(result.changes, schema=CHANGES_SCHEMA, orient="row")


def write_whatif(result: WhatIfResult, out: Path) -> None:
    """OUT/report.json and OUT/changes.parquet (byte-identical for the same input)."""
    out.mkdir(parents=True, exist_ok=True)
    changes_frame(result).write_parquet(out / "changes.parquet", compression="zstd", statistics=False)
    (out / "report.json").write_text(json.dumps(result.report(), indent=2, sort_keys=True) + "\n")


def junit_xml(results: list[tuple[str, WhatIfResult, float]], max_changed: int) -> str:
    """A JUnit XML document: one testsuite per log, one testcase (the gate) in each."""
    suites = []
    for name, res, seconds in results:
        n = res.cycles_changed
        case = f'    <testcase classname="rmreplay.check" name={quoteattr(f"changed cycles <= {max_changed}")} ' \
               f'time="{seconds:.3f}">\n'
        if n > max_changed:
            lines = [f"cycle {c} job {j} {k}: logged {lv} -> what-if {wv}" for c, j, k, lv, wv in res.changes[:50]]
            more = len(res.changes) - 50
            if more > 0:
                lines.append(f"... {more} more")
            case += (f'      <failure message={quoteattr(f"{n} of {len(res.cycles)} cycles change (allowed {max_changed})")}'
                     f' type="ChangedCycles">{escape(chr(10).join(lines))}</failure>\n')
        report = res.report()
        case += f"      <system-out>{escape(json.dumps(report, sort_keys=True))}</system-out>\n    </testcase>\n"
        failures = int(n > max_changed)
        suites.append(f'  <testsuite name={quoteattr(name)} tests="1" failures="{failures}" errors="0" '
                      f'time="{seconds:.3f}">\n{case}  </testsuite>\n')
    total_fail = sum(int(r.cycles_changed > max_changed) for _, r, _ in results)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n'
            f'<testsuites name="rmreplay check" tests="{len(results)}" failures="{total_fail}">\n'
            + "".join(suites) + "</testsuites>\n")
