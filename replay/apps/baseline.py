"""rmref unchanged, cycle by cycle, as the audit's chained run leaves it: the baseline of `whatif` and `check`.

The audit runs rmref's phases chained on every cycle (`replay.apps.audit.schedule`); where the
cycle's phases verified a free choice of the RM's (`replay.apps.verify`: a tie settled by an
order no log shows) and following it makes the chained run publish what the RM published, the
chained run follows it. That run, per cycle, is rmref unchanged: `BaselineCycle` keeps what a
what-if reads of it (its decisions in the logged shapes, the shares held and taken, the jobs'
users) and the choices it followed (`Choices`), which the change side follows too where they
are still its own free choices (`run_following`). The audit computes it once; the stored audit
keeps it (replay.apps.stored), and `whatif` and `check` read it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from replay.apps.measures import holdings, taken_shares
from replay.apps.verify import verdict_admitted
from replay.model.damage import Damage
from replay.model.logged import Logged
from rmref.choices import Clearing
from rmref.constants import ALREADY_LEAVING, PURGES, RESERVATION
from rmref.cycle import CycleResult, Hints, Phases, schedule
from rmref.howmuch_state import SetAside
from rmref.memory import Memory
from rmref.model import CycleInput, Placement
from rmref.phases import ClearingPhase

DECISIONS = ("caps", "counts", "placements", "evictions", "defrag", "needy")  # what a what-if compares
_OWN = Phases()

# decision kind -> job -> its value as canonical JSON text (None: no such decision)
Values = dict[str, dict[int, str | None]]


def _canon(value: object) -> str | None:
    """A decision as canonical JSON text (tuples as lists), None when absent."""
    return None if value is None else json.dumps(value, separators=(",", ":"))


def _sort_key(item: list[Any]) -> tuple[Any, ...]:
    return tuple((x is None, 0 if x is None else x) for x in item)  # a purge's share id (None) sorts last


def decision_values(result: CycleResult, logged_caps: Mapping[int, object],
                    logged_counts: Mapping[int, object], served: Mapping[int, int] | None = None) -> Values:
    """rmref's decisions of one cycle in the logged decisions' shapes (`replay.model.logged`), as JSON text.

    Caps are compared for the jobs the RM logged a cap for (it computes none for completed work);
    a count of 0 only where the RM logged one (a deferral). The needy verdict is the one the run
    served (`served`, the RM's, where `run_following` followed it), else the run's own.
    """
    d = result.decisions
    out: dict[str, dict[int, Any]] = {k: {} for k in DECISIONS}  # a decision's value: its logged shape
    out["caps"] = {j: d.caps[j].actual for j in logged_caps if j in d.caps}
    out["counts"] = {j: n for j, n in d.counts.items() if n or j in logged_counts}
    for p in d.placements:
        out["placements"].setdefault(p.job_id, []).append([p.host, p.order])
    cleared = {(e.job_id, e.share_id) for e in d.evictions if e.reason == RESERVATION}
    for e in d.evictions:  # the log's purge lines name the host and the job, not the share
        if e.reason == ALREADY_LEAVING and (e.job_id, e.share_id) in cleared:
            continue  # the clearing's share, marked again by shrinkBy: the log names it once (audit.cycle)
        out["evictions"].setdefault(e.job_id, []).append([e.host, None if e.reason in PURGES else e.share_id])
    for a in d.defrag:
        if a.action == "evict":
            out["defrag"].setdefault(a.donor_job, []).append([a.host, a.share_id])
    out["needy"] = dict(result.defrag.needy if served is None else served)
    return {k: {j: _canon(sorted(v, key=_sort_key) if isinstance(v, list) else v) for j, v in per.items()}
            for k, per in out.items()}


def caps_values(caps: Mapping[int, int]) -> Values:
    """Only the caps (a cycle whose machines are unknown replays nothing else), as `decision_values` gives them."""
    return {k: ({j: _canon(v) for j, v in caps.items()} if k == "caps" else {}) for k in DECISIONS}


def logged_values(logged: Logged, cycle: int) -> Values:
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


@dataclass(frozen=True)
class Choices:
    """The RM's free choices a cycle's chained run follows (`rmref.cycle.Hints`' fields of the same
    names): each is read by rmref's phase only among the choices it finds equal itself."""

    prefer: Mapping[str, int] = field(default_factory=dict)  # What Of: machines' rank in an open order
    choose: Mapping[str, Clearing] = field(default_factory=dict)  # takeFromTheRich's clearings
    cleared: tuple[str, ...] = ()  # How Much, clearing: machines cleared for a reservation, in an open node-map order
    known_order: Container[tuple[int, int]] | None = None  # detectFragmentation: job pairs of known tally order
    needy: Mapping[int, int] | None = None  # detectFragmentation: the RM's verdict, served where admitted
    given: tuple[str, ...] = ()  # How Much: countFreeableMachines' walk, in an open node-map order

    def any(self) -> bool:
        """Whether there is a choice to follow."""
        return bool(self.prefer or self.choose or self.cleared or self.given or self.needy is not None)


NONE = Choices()


def swapped(phases: Phases) -> frozenset[str]:
    """The phases a change replaces (not rmref's own)."""
    return frozenset(n for n in ("caps", "how_much", "what_of", "clearing", "evictions", "defrag")
                     if getattr(phases, n) is not getattr(_OWN, n))


def run_following(inp: CycleInput, hints: Hints, choices: Choices, phases: Phases = _OWN,
                  mine: frozenset[str] = frozenset()) -> tuple[CycleResult, Mapping[int, int] | None]:
    """rmref's phases chained on `inp`, following `choices` where rmref's phase meets them among its
    equal choices; a phase in `mine` (a developer's, `--scheduler`) settles its own ties and is
    handed none. The RM's needy verdict is served only where the run's own detection reaches it
    too (one of `Defrag.verdicts`), as the audit serves it. The run, and the RM's verdict when it
    served it (None: its own)."""
    followed = replace(hints, prefer={} if "what_of" in mine else choices.prefer,
                       cleared_first=() if "how_much" in mine else choices.cleared,
                       given_first=() if "how_much" in mine else choices.given,
                       choose={} if "defrag" in mine else choices.choose,
                       known_order=None if "defrag" in mine else choices.known_order,
                       searched={} if "defrag" in mine else hints.searched)
    if "clearing" in mine:  # the hint also orders rmref's How Much's walk: only the developer's clearing goes without
        phases = replace(phases, clearing=_unhinted(phases.clearing))
    run = schedule(inp, followed, phases)
    if choices.needy is not None and "defrag" not in mine and run.defrag.needy != choices.needy \
            and verdict_admitted(run.defrag, choices.needy):
        return schedule(inp, replace(followed, needy=choices.needy), phases), choices.needy
    return run, None


def _unhinted(clearing: ClearingPhase) -> ClearingPhase:
    """A developer's clearing, handed no `cleared_first` (the RM's picks among rmref's equal choices)."""
    def run(inp: CycleInput, counts: Mapping[int, int], set_aside: Sequence[SetAside], placements: Sequence[Placement],
            /, *, stale_left: Mapping[str, int] | None = None, cleared_first: Sequence[str] = ()) -> Sequence[str]:
        if stale_left is None:  # passed as schedule passes it: only when How Much gave one
            return clearing(inp, counts, set_aside, placements)
        return clearing(inp, counts, set_aside, placements, stale_left=stale_left)
    return run


@dataclass(frozen=True)
class BaselineCycle:
    """rmref unchanged on one audited cycle: what a what-if reads of the audit's chained run."""

    values: Values  # its decisions, as `decision_values` gives them (only caps where `partly`)
    owner: dict[int, str]  # job -> user, for the cycle's work
    held: dict[int, int] | None = None  # quantum shares each job holds after the cycle (None where `partly`)
    taken: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)  # `taken_shares`
    choices: Choices = NONE  # the RM's free choices the chained run followed
    ips: tuple[tuple[str, str], ...] = ()  # the node IPs the audit inferred into the input (machine, IP)
    partly: str | None = None  # why the machines are unknown (only the caps are replayed), None if known


def baseline_cycle(before: CycleInput, after: CycleInput, run: CycleResult | None, logged: Logged,
                   choices: Choices, caps: Mapping[int, int], partly: str | None,
                   served: Mapping[int, int] | None = None) -> BaselineCycle:
    """One cycle's baseline from the audit's run of it: `before` the input it rebuilt, `after` the
    one it ran on (with any node IPs it inferred), `run` the chained run (None when the machines
    are unknown: `partly`, and `caps` are rmref's caps of the jobs the RM logged a cap for),
    `served` the RM's needy verdict where the run served it."""
    owner = {w.job_id: w.user for w in before.work}
    if run is None:
        return BaselineCycle(caps_values(caps), owner, partly=partly)
    c = before.cycle
    values = decision_values(run, logged.caps.get(c, {}), logged.counts.get(c, {}), served)
    ips = () if after.machines == before.machines else tuple((m.name, m.ip) for m in after.machines)
    taken = {k: frozenset(v) for k, v in taken_shares(run).items()}
    return BaselineCycle(values, owner, holdings(after, run), taken, choices, ips, partly)


def with_ips(inp: CycleInput, ips: tuple[tuple[str, str], ...]) -> CycleInput:
    """The cycle's input with the node IPs the audit inferred (none: as it is)."""
    if not ips:
        return inp
    ip = dict(ips)
    return replace(inp, machines=tuple(replace(m, ip=ip.get(m.name, m.ip)) for m in inp.machines))


# one audited cycle's input as the audit rebuilt it (before any node IP it inferred) and the
# memory the chained run carried into it: the change side starts from them
Entry = tuple[CycleInput, Memory]


@dataclass(frozen=True)
class Audited:
    """The audit a what-if reads rmref unchanged from: every audited cycle's baseline, the cycles
    it left out (and why), and the way to each audited cycle's input (`entry`)."""

    baseline: Mapping[int, BaselineCycle]
    left_out: Mapping[int, str]
    entry: Callable[[int], Entry]


def left_out(skipped: Mapping[int, str], damaged: Mapping[int, Damage]) -> dict[int, str]:
    """The cycles an audit did not audit, and why (the words `ReplayStart.skipped` uses)."""
    return {**skipped, **{c: f"input damaged: {d.text()}" for c, d in damaged.items()}}
