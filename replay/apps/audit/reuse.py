"""The chained run reuses the phase-isolated run's calls, and follows the RM's verified free choices."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from replay.apps.baseline import NONE, Choices
from rmref import Phases
from rmref.choices import Clearing

# rmref's own phases, which read a mapping's items (never its order) and a sequence's items
# (never its type): a call with such equal arguments gives the same result, so the chained run
# can take the phase-isolated run's result wherever their inputs agree (`Reuse`)
OWN = Phases()
_REUSABLE = ("how_much", "what_of", "evictions", "defrag")


def _same(a: object, b: object) -> bool:
    """Whether one of rmref's own phases reads `a` and `b` alike (see OWN)."""
    if a is b:
        return True
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(_same(v, b[k]) for k, v in a.items())
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


def _defrag_reads(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """defragment's keyword arguments as it reads them: a pure fair share only for the cycle's
    work, 0 when a job has none (rmref.defrag._build). The RM logs a 0 that rmref's How Much
    leaves out, and the chained run carries a finished job's last one."""
    pure, work = kwargs.get("pure_fair_share"), args[0].work
    if not isinstance(pure, Mapping):
        return kwargs
    return {**kwargs, "pure_fair_share": {w.job_id: pure[w.job_id] for w in work if pure.get(w.job_id, 0)}}


def _as_given(_args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """A phase's keyword arguments as it reads them: as given (every phase but defragment)."""
    return kwargs


_READS: dict[str, Callable[[tuple[Any, ...], dict[str, Any]], dict[str, Any]]] = {"defrag": _defrag_reads}


class Reuse:
    """One cycle's phase-isolated calls of rmref's own phases and their results, handed to the
    chained run (rmref.schedule) for a call with the same arguments: where rmref's upstream
    decisions equal the logged ones (most cycles), the chained run repeats no phase's work.
    A swapped phase (not rmref's own) always runs."""

    def __init__(self, phases: Phases) -> None:
        self.calls: dict[str, tuple[tuple[Any, ...], dict[str, Any], object]] = {}
        own = [n for n in _REUSABLE if getattr(phases, n) is getattr(OWN, n)]
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
                reads = _READS.get(name, _as_given)
                if _same(before, args) and _same(reads(before, before_kw), reads(args, dict(kwargs))):
                    return out
            return phase(*args, **kwargs)
        return run


@dataclass
class Follow:
    """The RM's free choices one cycle's phases verified, for the chained run to follow."""

    prefer: dict[str, int] = field(default_factory=dict)  # What Of: machines' rank in an open order
    choose: dict[str, Clearing] = field(default_factory=dict)  # takeFromTheRich's clearings
    needy: Mapping[int, int] | None = None  # detectFragmentation: the RM's verdict, one of rmref's
    # How Much's walk and the clearing step: the machines the RM cleared for a reservation, where the
    # node-map order is open
    cleared: tuple[str, ...] = ()
    # How Much: the machines countFreeableMachines gave, in the walk the log shows (an open order)
    given: tuple[str, ...] = ()
    sentences: list[str] = field(default_factory=list)
    followed: Choices = NONE  # the choices the cycle's chained run followed (none: it follows none)
    served: Mapping[int, int] | None = None  # the RM's needy verdict the chained run served (None: its own)

    def any(self) -> bool:
        """Whether there is a choice to follow."""
        return bool(self.prefer or self.choose or self.cleared or self.given or self.needy is not None)
