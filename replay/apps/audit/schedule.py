"""The published schedule audited: rmref's phases chained on its own decisions, following verified choices."""

from __future__ import annotations

from collections.abc import Mapping
from itertools import groupby
from typing import cast

from replay.apps.audit.compare import compare
from replay.apps.baseline import Choices, run_following
from replay.apps.audit.defrag import unlisted_words
from replay.apps.audit.result import AuditResult
from replay.apps.audit.reuse import Follow
from replay.apps.causes import Cause
from replay.apps.verify import Verified
from replay.model.logged import Logged
from rmref import Phases
from rmref.cycle import CycleResult, Hints, schedule
from rmref.model import CycleInput


def audit_schedule(inp: CycleInput, logged: Logged, phases: Phases, result: AuditResult,
                   follow: Follow) -> CycleResult:
    """The phases chained, each fed rmref's own upstream decisions (rmref.schedule), against the
    schedule the RM published: a cascade that the phase-isolated kinds hide shows here. Where the
    cycle's phases verified a free choice of the RM's, the chained run follows it (rmref.choices)."""
    c, prev = inp.cycle, result.carry()
    hints = Hints(tuple(logged.user_orders.get(c, ())), tuple(logged.job_order.get(c, ())),
                  logged.share_walk.get(c, {}), prev.memory, searched=logged.searched.get(c, {}))
    run = schedule(inp, hints, phases)
    logged_pub = logged.published.get(c, {})
    ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    differs = {j for j in set(logged_pub) | set(ours) if logged_pub.get(j) != ours.get(j)}
    verified: dict[int, Verified] = {}
    _follow_cleared(inp, logged, follow)
    if follow.any():
        run, verified = _follow_schedule(inp, logged_pub, run, hints, phases, follow, differs, logged)
        ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    result.chained = run
    for job, pub in run.published.items():
        result.ref["schedule"] += [(c, job, "addition", h, None) for h in pub.additions]
        result.ref["schedule"] += [(c, job, "removal", h, sid) for h, sid in pub.removals]
    unlisted = unlisted_words(run.defrag, inp)
    compare(result, "schedule", c, logged_pub, ours,
            lambda j, lv, rv: Cause("schedule", f"job {j}", f"rmref's chained phases publish {_published(rv)}, "
                                     f"the RM {_published(lv)}" + unlisted), verified, "schedule")
    return run


def _follow_cleared(inp: CycleInput, logged: Logged, follow: Follow) -> None:
    """On a log that shows no node IP (before DUCC 3.0.0), the machines How Much gives and clears
    for a reservation are met in the order of a node map hashed on those IPs: the chained run takes
    the RM's logged ones first among the machines alike, in the walk's order (verified when the
    schedule then agrees)."""
    if inp.config.behaviours.has("node_ip_logged"):
        return
    given = logged.freeable_given.get(inp.cycle, ())
    if given:  # (the walk the log shows: countFreeableMachines' picks, free or to be freed)
        follow.given = tuple(given)
        follow.sentences.append(f"agrees: countFreeableMachines met {', '.join(given)} first for a reservation, "
                                "among machines alike but for the node IPs its node map hashes, which the log of "
                                f"DUCC {inp.config.behaviours.release} never shows (the log shows its walk)")
    cleared = logged.cleared.get(inp.cycle, ())
    if not cleared:
        return
    follow.cleared = tuple(cleared)
    follow.sentences.append(f"agrees: the RM cleared {', '.join(cleared)} for a reservation, among machines "
                            f"alike but for the node IPs its node maps hash, which the log of DUCC "
                            f"{inp.config.behaviours.release} never shows")


def _follow_schedule(inp: CycleInput, logged_pub: Mapping[int, object], run: CycleResult, hints: Hints,
                     phases: Phases, follow: Follow, differs: set[int],
                     logged: Logged) -> tuple[CycleResult, dict[int, Verified]]:
    """The chained run again on the RM's free choices (each only where the chained run finds it
    among its own equal ones, `run_following`). Unless it then publishes a job otherwise than the
    RM where rmref's own run did not, it is the cycle's run (`Follow.followed`): the run that
    follows the RM where the RM's choice was free. The jobs it publishes as the RM did, where the
    run on rmref's own picks did not, are verified choices."""
    known = logged.job_order_known.get(inp.cycle, ()) if follow.needy is not None else None
    choices = Choices(follow.prefer, follow.choose, follow.cleared, known, follow.needy, follow.given)
    again, served = run_following(inp, hints, choices, phases)
    theirs = {j: (p.additions, p.removals) for j, p in again.published.items()}
    parts = {j for j in set(logged_pub) | set(theirs) if logged_pub.get(j) != theirs.get(j)}
    if parts - differs:
        return run, {}
    follow.followed, follow.served = choices, served
    fixed = differs - parts
    if not fixed:
        return again, {}
    ours = {j: (p.additions, p.removals) for j, p in run.published.items()}
    why = "agrees once the chained phases follow the RM's free choices: " + "; ".join(
        x.removeprefix("agrees: ") for x in follow.sentences)
    return again, {j: Verified(ours.get(j), why) for j in fixed}


def _published(value: object) -> str:
    if not value:
        return "nothing"
    # a published decision: (hosts added, (host, share id) removed)
    additions, removals = cast(tuple[list[str], list[tuple[str, int | None]]], value)
    # a host once per run of additions on it ("n01 ×15"): a cycle may publish hundreds
    runs = [(host, len(list(same))) for host, same in groupby(additions)]
    parts = [f"additions on {', '.join(h if n == 1 else f'{h} ×{n}' for h, n in runs)}"] if additions else []
    parts += [f"removals {', '.join(f'{h}.{s}' for h, s in removals)}"] if removals else []
    return "; ".join(parts) or "nothing"
