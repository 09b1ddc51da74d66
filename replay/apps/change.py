"""What a what-if or a simulation changes: `--set KEY=VALUE` rules and `--scheduler MODULE:OBJECT` phases.

`apply_sets` gives the bootstrap with the settings changed, `adapt` one recorded cycle's input as the
changed configuration sees it, and `load_scheduler` the developer's phases (an `rmref.Phases`).
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import inspect
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.model.bootstrap import Bootstrap
from replay.model.settings import Assumption
from replay.parsing.sources import InputError
from rmref import machine_order
from rmref.behaviours import Behaviours, for_release
from rmref.cycle import Phases
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, CycleInput, Nodepool, Work
from rmref.trees import tree_quantum

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


# ducc.properties keys a what-if may change -> (Config field, value parser)
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
    nodepools, assumed = _pools_following(boot, config.quantum_gb)
    return Bootstrap(config, tuple(classes[c.name] for c in boot.classes), nodepools, assumed)


def _pools_following(boot: Bootstrap, quantum: int) -> tuple[tuple[Nodepool, ...], tuple[Assumption, ...]]:
    """The nodepools under a global quantum of `quantum`, and what that reading assumes.

    The log prints every pool's quantum, its own `share-quantum` or the global one it inherits,
    alike: a pool printed at the old global quantum is taken to inherit it and to follow the change
    (a pool's own share-quantum of the same size would not), a pool printed at another keeps it."""
    old = boot.config.quantum_gb
    if quantum == old:
        return boot.nodepools, ()
    follow = [p.name for p in boot.nodepools if p.quantum_gb in (0, old)]
    pools = tuple(dataclasses.replace(p, quantum_gb=0) if p.name in follow else p for p in boot.nodepools)
    kept = [f"{p.name} ({p.quantum_gb} GB)" for p in boot.nodepools if p.name not in follow]
    evidence = (f"the log gives their quantum as the global {old} GB, which a pool's own share-quantum of "
                f"{old} GB would also show" + (f"; these keep their own: {', '.join(kept)}" if kept else ""))
    return pools, (Assumption(f"nodepools following ducc.rm.share.quantum={quantum}", ", ".join(follow) or "none",
                              "inferred", evidence),)


def _requantise(work: Work, boot: Bootstrap) -> Work:
    """A job's process order (and its shares') recomputed from its memory for another quantum."""
    order = boot.process_order(work.class_name, work.memory_gb)
    shares = tuple(dataclasses.replace(s, order=order) for s in work.shares)
    return dataclasses.replace(work, order=order, shares=shares)


def adapt(inp: CycleInput, before: Bootstrap, after: Bootstrap) -> CycleInput:
    """One recorded cycle's input as the changed configuration sees it.

    A quantum change changes the share orders of the pool trees that count in the global quantum
    (jobs round their memory up to whole quanta, machines down; a top-level pool's own
    `share-quantum` stands), and so does a class moved to a tree of another quantum; a class's
    initialization cap, doubling and prediction flags are copied into its jobs' cap inputs, which
    is where the cap phase reads them, and so is another release's.
    """
    if after == before:
        return inp
    work, machines = inp.work, inp.machines
    # a job's quanta change with the global quantum, or with its class moved to a pool tree of another quantum
    work = tuple(_requantise(w, after) if after.process_order(w.class_name, w.memory_gb)
                 != before.process_order(w.class_name, w.memory_gb) else w for w in work)
    if after.config.quantum_gb != before.config.quantum_gb:
        q = after.config.quantum_gb
        machines = tuple(dataclasses.replace(m, order=machine_order(m.memory_mb * 1024,
                                                                    tree_quantum(after.nodepools, m.nodepool, q)))
                         for m in machines)
    old = {c.name: c for c in before.classes}
    new = {c.name: c for c in after.classes}
    changed = {n for n in new if new[n] != old.get(n)}
    if changed:
        work = tuple(_with_class(w, new[w.class_name]) if w.class_name in changed else w for w in work)
    if after.config.behaviours != before.config.behaviours:  # initJobCap reads the release from each job
        work = tuple(dataclasses.replace(w, cap_input=dataclasses.replace(w.cap_input,
                                                                          behaviours=after.config.behaviours))
                     for w in work)
    return dataclasses.replace(inp, config=after.config, classes=after.classes, machines=machines, work=work)


def _with_class(work: Work, cls: ClassDef) -> Work:
    cap = dataclasses.replace(work.cap_input, init_cap=cls.init_cap, expand_by_doubling=cls.expand_by_doubling,
                              use_prediction=cls.prediction)
    return dataclasses.replace(work, cap_input=cap)


def load_scheduler(spec: str) -> Phases:
    """`MODULE:OBJECT` (or `path/to/file.py:OBJECT`) as the phases to replay with.

    OBJECT is an `rmref.Phases` (e.g. `Phases(what_of=my_what_of)`), or a mapping from phase names
    (caps, how_much, what_of, clearing, evictions, defrag) to functions with the signature of rmref's own;
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
        return _guarded(obj, spec)
    if isinstance(obj, Mapping):
        names = {f.name for f in dataclasses.fields(Phases)}
        unknown = sorted(set(obj) - names)
        if unknown or not all(callable(v) for v in obj.values()):
            raise InputError(f"--scheduler {spec!r}: phases are {', '.join(sorted(names))} (functions); "
                             f"got {', '.join(map(str, unknown)) or 'a value that is not a function'}")
        return _guarded(Phases(**obj), spec)
    raise InputError(f"--scheduler {spec!r}: {attr} is a {type(obj).__name__}; expected an rmref.Phases "
                     "or a dict of phase name -> function")


@dataclass(frozen=True)
class DeveloperPhase:
    """A phase loaded by `--scheduler`: passed only the keywords it declares (rmref hands later
    phases keywords such as `stale_left` only on some cycles), and an exception it raises reported
    in one line, naming the phase and the cycle, instead of a traceback."""

    fn: Callable[..., Any]
    name: str
    spec: str
    keywords: frozenset[str] | None  # the keyword arguments it declares; None: any (a **kwargs, or unknown)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The developer's phase on these arguments."""
        if self.keywords is not None:
            kwargs = {k: v for k, v in kwargs.items() if k in self.keywords}
        try:
            return self.fn(*args, **kwargs)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the developer's phase raises, said in one line
            cycle = getattr(args[0], "cycle", None) if args else None
            at = f"cycle {cycle}: " if cycle is not None else ""
            raise InputError(f"{at}the --scheduler {self.name} phase ({self.spec}) raised "
                             f"{type(exc).__name__}: {exc}") from None


def _declared(fn: Callable[..., Any]) -> frozenset[str] | None:
    """The keyword arguments `fn` takes (None: any, or a callable whose signature is not known)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind is p.VAR_KEYWORD for p in params):
        return None
    return frozenset(p.name for p in params if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))


def _guarded(phases: Phases, spec: str) -> Phases:
    """`phases` with each of the developer's own (not rmref's) wrapped as a `DeveloperPhase`."""
    own = {f.name: getattr(phases, f.name) for f in dataclasses.fields(Phases)
           if getattr(phases, f.name) is not getattr(Phases, f.name)}
    return dataclasses.replace(phases, **{name: DeveloperPhase(fn, name, spec, _declared(fn))
                                          for name, fn in own.items()})


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


