"""ducc.rm.fragmentation.threshold read off the RM's own defragmentation, where neither a
configuration file nor a line pins it (`Bootstrap.thresholds_open`).

Every cycle whose defragmentation the audit replays is evidence: the RM found jobs needy (or
none), and took from the rich (or took nothing). rmref's defragmentation, run on the RM's own
upstream decisions with each threshold the log allows, either reproduces that or not; the values
that reproduce every cycle some value reproduces are the ones the log supports. A cycle no value
reproduces says nothing of the threshold (something else parts rmref from the RM there: the
audit reports it as it finds it).

Of the supported values, one (or several that decide alike in every cycle) is the threshold the
replay runs with, inferred; several that decide differently stay open (the audit leaves a cycle
one of the others explains out); none leaves the assumption as it was, saying so.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from replay.model import settings as st
from replay.model.bootstrap import Bootstrap
from replay.model.defrag_inputs import cleared_by_rm, logged_phase_outputs, phase_arguments
from replay.model.logged import Logged
from rmref.defrag import Defrag, defragment
from rmref.howmuch_state import stale_after_howmuch
from rmref.model import CycleInput


class Start(Protocol):
    """What the inference reads of a replay's start (replay.model.start.ReplayStart, which settles
    its threshold here: named by its shape, so that nothing below the start imports it)."""

    @property
    def boot(self) -> Bootstrap: ...  # the settings, the threshold open

    @property
    def damage(self) -> Mapping[int, Any]: ...  # cycles whose input is damaged

    def skipped(self, cycle: int) -> str | None: ...  # why no decision of the cycle replays

    def machines_unsettled(self, cycle: int) -> str | None: ...  # why its machines are not known

    def classes_unknown(self, inp: CycleInput) -> str | None: ...  # why no phase of it runs

    def reports_unknown(self, inp: CycleInput, counts: Mapping[int, int],
                        defrag: bool = False) -> str | None: ...  # why its defragmentation is not replayed


Outcome = tuple[tuple[tuple[int, int], ...], tuple[tuple[int, tuple[tuple[str, int], ...]], ...]]


@dataclass(frozen=True)
class ThresholdFit:
    """What the log's defragmentation says of the threshold: the values tried, those that
    reproduce every cycle some value reproduces (`supported`), the cycles that told some value
    apart (`told`), and whether the supported values decide alike in every cycle run (`alike`)."""

    tried: tuple[int, ...]
    supported: tuple[int, ...]
    told: tuple[int, ...]
    alike: bool


def threshold_unsettled(boot: Bootstrap) -> bool:
    """Whether `settle_threshold` has a threshold to settle: no file or line pins it, and it is not settled yet."""
    return bool(boot.thresholds_open) and not boot.threshold_settled


def settle_threshold(start: Start, logged: Logged, inputs: Iterable[CycleInput]) -> Bootstrap:
    """`start.boot` with the fragmentation threshold the log's defragmentation supports (see the
    module docstring), read off every cycle's input (`inputs`, in order, as the replay assembles
    them) and the RM's `logged` decisions, once: a boot already settled, or one a file or line
    pins, is returned as is."""
    boot = start.boot
    if not threshold_unsettled(boot):
        return boot
    return threshold_decided(boot, threshold_fit(start, logged, inputs, (boot.config.fragmentation_threshold,
                                                                         *boot.thresholds_open)))


def threshold_decided(boot: Bootstrap, fit: ThresholdFit) -> Bootstrap:
    """`boot` with the threshold `fit` supports, its assumption saying from which cycles; where
    several values decide differently, the others left open (`Bootstrap.thresholds_open`)."""
    assumed = boot.config.fragmentation_threshold
    settled = replace(boot, threshold_settled=True)
    if not fit.told:  # no cycle tells the values apart: the assumption stands as it was
        return settled
    if not fit.supported:
        return _with(settled, assumed, boot.thresholds_open, st.Assumption(
            st.THRESHOLD, str(assumed), _source(boot), f"{_evidence(boot)}; no value the log allows "
            f"({_span(fit.tried)}) reproduces the RM's defragmentation in every cycle that tells them apart "
            f"({_cycles(fit.told)}): the RM's is not explained by any threshold, {assumed} is kept"))
    value = min(fit.supported, key=lambda t: (abs(t - assumed), t))
    pinned = len(fit.supported) == 1 or fit.alike
    others = () if pinned else tuple(sorted((t for t in fit.supported if t != value),
                                            key=lambda t: (abs(t - value), t)))
    reproduce = ("rmref's defragmentation finds the RM's needy jobs and takes what the RM took in every cycle "
                 f"(of the values the log allows, {_span(fit.tried)} tried)")
    said = (f"the only value under which {reproduce}" if len(fit.supported) == 1
            else f"{_span(fit.supported)} are the values under which {reproduce}, and they decide alike in every "
                 f"cycle; {value} is the nearest {assumed}" if fit.alike
            else f"{_span(fit.supported)} are the values under which {reproduce}, and they decide differently "
                 f"elsewhere: a cycle another of them explains is left out; {value} is the nearest {assumed}")
    return _with(settled, value, others, st.Assumption(
        st.THRESHOLD, str(value), st.INFERRED,
        f"fragmentation threshold inferred: {value} (from {_cycles(fit.told)}): {said}"))


def _with(boot: Bootstrap, value: int, others: tuple[int, ...], said: st.Assumption) -> Bootstrap:
    """`boot` run with threshold `value`, `others` left open, and `said` for its assumption."""
    assumed = tuple(said if a.setting == st.THRESHOLD else a for a in boot.assumed)
    return replace(boot, config=replace(boot.config, fragmentation_threshold=value), assumed=assumed,
                   thresholds_open=others)


def _source(boot: Bootstrap) -> str:
    return next((a.source for a in boot.assumed if a.setting == st.THRESHOLD), st.DEFAULT)


def _evidence(boot: Bootstrap) -> str:
    return next((a.evidence for a in boot.assumed if a.setting == st.THRESHOLD), "")


def _span(values: Iterable[int]) -> str:
    """'1', '1 and 3', '1 to 65' (consecutive), or '1, 3, 5'."""
    v = sorted(values)
    if len(v) > 2 and v == list(range(v[0], v[-1] + 1)):
        return f"{v[0]} to {v[-1]}"
    return " and ".join(map(str, v)) if len(v) <= 2 else ", ".join(map(str, v))


def _cycles(cycles: tuple[int, ...], most: int = 6) -> str:
    """'cycle 4', 'cycles 4, 6', 'cycles 1, 2, 3, 4, 5, 6 and 3 more'."""
    shown = ", ".join(map(str, cycles[:most]))
    return ("cycle " if len(cycles) == 1 else "cycles ") + shown + (
        f" and {len(cycles) - most} more" if len(cycles) > most else "")


def threshold_fit(start: Start, logged: Logged, inputs: Iterable[CycleInput], tried: tuple[int, ...]) -> ThresholdFit:
    """Each of `tried` run through the log's cycles (`inputs`), as the audit runs the
    defragmentation phase (on the RM's own upstream decisions, the users' wealth carried from
    cycle to cycle under each value), against the RM's needy jobs and takings."""
    wealth: dict[int, dict[str, int] | None] = dict.fromkeys(tried)
    fits = set(tried)
    told: list[int] = []
    split: list[dict[int, Outcome]] = []  # the cycles whose outcome some values change
    for inp in inputs:
        c = inp.cycle
        if start.skipped(c) is not None or start.machines_unsettled(c) is not None:
            if c in start.damage:  # the audit carries nothing over damage
                wealth = dict.fromkeys(tried)
            continue
        if (start.classes_unknown(inp) is not None
                or start.reports_unknown(inp, logged.counts.get(c, {}), bool(logged.needy.get(c))) is not None):
            wealth = dict.fromkeys(tried)
            continue
        outcomes = _outcomes(inp, logged, tried, wealth)
        rm = _rm_outcome(c, logged)
        matched = {t for t, (o, _w) in outcomes.items() if _reproduces(o, rm, c in logged.detected)}
        wealth = {t: w for t, (_o, w) in outcomes.items()}
        if matched and matched != set(tried):
            told.append(c)
            fits &= matched
        if len({o for o, _w in outcomes.values()}) > 1:
            split.append({t: o for t, (o, _w) in outcomes.items()})
    supported = tuple(t for t in sorted(tried) if t in fits)
    alike = all(len({seen[t] for t in supported}) <= 1 for seen in split)
    return ThresholdFit(tuple(sorted(tried)), supported, tuple(told), alike)


def _ceiling(inp: CycleInput, counts: Mapping[int, int], placed: int) -> int:
    """A value from which every greater threshold decides as it does in this cycle: a threshold
    is only ever compared with a job's processes, held or still counted (rmref.defrag)."""
    most = max((len(w.shares) for w in inp.work), default=0) + placed
    return max(most, *counts.values(), 0) + 1


def _outcomes(inp: CycleInput, logged: Logged, tried: tuple[int, ...],
              wealth: Mapping[int, dict[str, int] | None]) -> dict[int, tuple[Outcome, dict[str, int]]]:
    """Per threshold tried: rmref's needy verdict and takings in the cycle, and the wealth it leaves."""
    c = inp.cycle
    counts = logged.counts.get(c, {})
    placed, gone = logged_phase_outputs(inp, logged)
    rm = cleared_by_rm(logged.connected.get(c, ()), logged.published.get(c, {}), logged.defrag.get(c, {}))
    top = _ceiling(inp, counts, len(placed))
    stale = stale_after_howmuch(inp)
    runs: dict[tuple[int, Any], tuple[Outcome, dict[str, int]]] = {}

    def run(t: int, w: dict[str, int] | None) -> tuple[Outcome, dict[str, int]]:
        key = (min(t, top), None if w is None else tuple(sorted(w.items())))
        if key not in runs:
            at = replace(inp, config=replace(inp.config, fragmentation_threshold=key[0]))
            kwargs = phase_arguments(c, logged, w, stale)
            d = defragment(at, counts, placed, gone, choose=rm, **kwargs)
            if c in logged.detected and d.needy != logged.needy.get(c, {}):
                ordered = defragment(at, counts, placed, gone, known_order=logged.job_order_known.get(c, ()),
                                     choose=rm, **kwargs)
                if tuple(sorted(logged.needy.get(c, {}).items())) in ordered.verdicts:
                    d = replace(d, needy=dict(logged.needy.get(c, {})))  # the RM's, by a tally order it allows
            runs[key] = ((tuple(sorted(d.needy.items())), _taken(d)), dict(d.wealth))
        return runs[key]

    served = any(n > 0 for n in logged.needy.get(c, {}).values()) if c in logged.detected else None
    if not served and not run(top, wealth[tried[0]])[0][0]:
        # a job needy under a threshold is needy under every greater one (it holds fewer), and with
        # none needy and none served nothing is taken: every value decides alike, the wealth untouched
        return {t: (((), ()), dict(wealth[t] or {})) for t in tried}
    return {t: run(t, wealth[t]) for t in tried}


def _taken(d: Defrag) -> tuple[tuple[int, tuple[tuple[str, int], ...]], ...]:
    """The running shares defragmentation evicted, per donor job, sorted."""
    taken: dict[int, list[tuple[str, int]]] = {}
    for a in d.actions:
        if a.action == "evict":
            taken.setdefault(a.donor_job, []).append((a.host, a.share_id))
    return tuple(sorted((j, tuple(sorted(v))) for j, v in taken.items()))


def _rm_outcome(cycle: int, logged: Logged) -> Outcome:
    """The RM's needy verdict and takings in the cycle, as `_outcomes` gives rmref's."""
    taken = tuple(sorted((j, tuple(sorted(v))) for j, v in logged.defrag.get(cycle, {}).items() if v))
    return tuple(sorted(logged.needy.get(cycle, {}).items())), taken


def _reproduces(ours: Outcome, rm: Outcome, detected: bool) -> bool:
    """Whether rmref's outcome is the RM's: the takings, and the needy verdict where the log shows it."""
    return ours[1] == rm[1] and (not detected or ours[0] == rm[0])
