"""Defragmentation audited: detectFragmentation's needy verdicts and takeFromTheRich's takings."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from replay.apps.audit.compare import compare
from replay.apps.audit.result import AuditResult
from replay.apps.audit.reuse import Follow
from replay.apps.causes import Cause
from replay.apps.verify import Verified, unsettled_sentence, verdict_admitted, verdict_sentence
from replay.model.defrag_inputs import cleared_by_rm, logged_phase_outputs, phase_arguments
from replay.model.logged import Logged
from rmref import Defrag
from rmref.choices import Clearing, rest, within
from rmref.defrag import MEMORY, NODE_IP
from rmref.defrag_state import Unsettled
from rmref.model import CycleInput


def audit_defrag(inp: CycleInput, logged: Logged, counts: Mapping[int, int], phase: Callable[..., Defrag],
                 result: AuditResult, follow: Follow | None, stale: Mapping[str, int] | None = None) -> Defrag:
    """Needy jobs and the shares taken for them, against the ACTUALLY NEEDY lines and the Removals.
    With rmref's own phase (`follow`), a needy verdict or a clearing the RM reached by an order
    the log does not show, and that rmref finds among its equal choices, is a verified choice.
    `stale` is the phase's `stale_left` (passed, as rmref.schedule passes it, only when not empty)."""
    c = inp.cycle
    placed, gone = logged_phase_outputs(inp, logged)
    kwargs = phase_arguments(c, logged, result.wealth, stale)
    d = phase(inp, counts, placed, gone, **kwargs)
    logged_needy, logged_taken = logged.needy.get(c, {}), logged.defrag.get(c, {})
    needy_ref: dict[int, object] = {j: ("needy", n) for j, n in d.needy.items()}
    verified_needy: dict[int, Verified] = {}
    if follow is not None and c in logged.detected and d.needy != logged_needy:
        # the verdict of every tally order the log allows (rmref.defrag.Defrag.verdicts)
        ordered = phase(inp, counts, placed, gone, known_order=logged.job_order_known.get(c, ()), **kwargs)
        if verdict_admitted(ordered, logged_needy):
            why = verdict_sentence(ordered, logged_needy)
            verified_needy = {j: Verified(needy_ref.get(j), why) for j in set(d.needy) | set(logged_needy)
                              if d.needy.get(j) != logged_needy.get(j)}
            needy_ref = {j: ("needy", n) for j, n in logged_needy.items()}
            follow.needy = logged_needy
            follow.sentences.append(why)
    own_taken = _taken(d)
    verified_taken: dict[int, Verified] = {}
    if follow is not None and any(u.alternatives for u in d.unsettled):
        rm = cleared_by_rm(logged.connected.get(c, ()), logged.published.get(c, {}), logged_taken)
        again = _followed(d, rm, logged_taken, lambda: phase(inp, counts, placed, gone, choose=rm, **kwargs))
        if again is not None:
            d = again  # the RM's clearing, where rmref has it
            why = unsettled_sentence(d.unsettled)
            verified_taken = {j: Verified(("taken", own_taken.get(j)), why) for j in set(own_taken) | set(_taken(d))
                              if own_taken.get(j) != _taken(d).get(j)}
            follow.choose.update(rm)
            follow.sentences.append(why)
    if follow is not None and any(u.tied for u in d.unsettled):
        d, more = _follow_machine_tie(d, logged, inp, logged_taken, lambda rm: phase(inp, counts, placed, gone,
                                                                                  choose=rm, **kwargs), follow)
        verified_taken.update({j: v for j, v in more.items() if j not in verified_taken})
    result.wealth = d.wealth
    for i, a in enumerate(d.actions):
        # an action at or after an unsettled choice rests on it (the state it met came from that choice)
        unsettled = ", ".join(dict.fromkeys(r for u in d.unsettled if u.action <= i for r in u.reasons))
        result.ref["defrag"].append((c, a.needy_job, a.donor_job, a.host, a.share_id, unsettled or None))
    open_why = _threshold_open(inp, result.thresholds_open, c in logged.detected, logged_needy, logged_taken,
                               needy_ref, _taken(d), {**verified_needy, **verified_taken},
                               lambda t: phase(replace(inp, config=replace(inp.config, fragmentation_threshold=t)),
                                               counts, placed, gone, **kwargs))
    if open_why is not None:
        result.skip(c, ("defrag", "schedule"), open_why)
        return d
    compare(result, "defrag", c, {j: ("needy", n) for j, n in logged_needy.items()}, needy_ref,
            lambda j, lv, rv: Cause("detectFragmentation", f"job {j}",
                                     f"rmref finds it {_needy_words(rv)}, the RM {_needy_words(lv)}"),
            verified_needy, "detectFragmentation")
    compare(result, "defrag", c, {j: ("taken", v) for j, v in logged_taken.items()},
            {j: ("taken", v) for j, v in _taken(d).items()},
            lambda j, lv, rv: Cause("takeFromTheRich", f"job {j}",
                                     f"rmref takes {_shares_words(rv)} from it, the RM {_shares_words(lv)}"
                                     + unlisted_words(d, inp)), verified_taken, "takeFromTheRich")
    return d


def _threshold_open(inp: CycleInput, others: tuple[int, ...], detected: bool, logged_needy: Mapping[int, Any],
                    logged_taken: Mapping[int, Any], needy_ref: Mapping[int, object], own_taken: Mapping[int, Any],
                    verified: Mapping[int, Verified], rerun: Callable[[int], Defrag]) -> str | None:
    """Why the cycle's defragmentation rests on a fragmentation threshold the log does not pin, if it
    does: rmref's verdicts or takings differ from the RM's (beyond what is verified), and with another
    threshold the log allows (`others`, nearest first) rmref reaches the RM's."""
    needy_logged = {j: ("needy", n) for j, n in logged_needy.items()}
    taken_logged = {j: v for j, v in logged_taken.items() if v}
    differs = ({j for j in set(needy_logged) | set(needy_ref) if needy_logged.get(j) != needy_ref.get(j)} if detected
               else set()) | {j for j in set(taken_logged) | set(own_taken) if taken_logged.get(j) != own_taken.get(j)}
    if not others or not differs - set(verified):
        return None
    for t in others:
        again = rerun(t)
        if _taken(again) == taken_logged and (not detected or dict(again.needy) == dict(logged_needy)):
            return (f"the cycle's defragmentation rests on ducc.rm.fragmentation.threshold, which neither the log nor "
                    f"--config pins (assumed {inp.config.fragmentation_threshold}): with {t}, which the log allows, "
                    "rmref finds the RM's needy jobs and takes what the RM took; give ducc.properties to audit it")
    return None


def _followed(d: Defrag, rm: Mapping[str, Clearing], logged_taken: Mapping[int, Any],
              rerun: Callable[[], Defrag]) -> Defrag | None:
    """The run that follows the RM's clearing (`rerun`), where rmref's own run took another of an
    unsettled round's alternatives; or where each round took an alternative within the RM's clearing
    yet the takings differ (equally full alternatives that only a later round tells apart), when
    following makes them the RM's. None: nothing to follow."""
    if any(u.alternatives[u.taken] != _rm_alternative(u, rm, d) for u in d.unsettled if u.alternatives):
        return rerun()
    logged = {j: v for j, v in logged_taken.items() if v}
    if _taken(d) == logged:
        return None
    again = rerun()
    return again if _taken(again) == logged else None


def _rm_alternative(u: Unsettled, rm: Mapping[str, Clearing], d: Defrag) -> tuple[tuple[int, int], ...] | None:
    """The fullest of an unsettled round's alternatives that the RM's clearing on its machine
    contains beyond what earlier rounds cleared there (the RM may clear more in later rounds), or None."""
    left = rest(rm.get(u.host, ()), [(a.donor_job, a.share_id) for a in d.actions[:u.action] if a.host == u.host])
    fits = [alt for alt in u.alternatives if within(alt, left)]
    return max(fits, key=len, default=None)


def _unseen_ips(inp: CycleInput) -> str:
    """Which node IPs the log does not show: none before DUCC 3.0.0; from it, those of nodes that
    arrived before the log (or its part after a gap) began."""
    if inp.config.behaviours.has("node_ip_logged"):
        return ("IPs the log does not show (it names a node's IP as the node arrives, before the log, or its part "
                "after a gap, began)")
    return "IPs the log never shows"


def _tie_words(u: Unsettled, inp: CycleInput) -> str:
    """Why the order of the machines of a takeFromTheRich tie (`Unsettled.tied`) is open."""
    parts = []
    if NODE_IP in u.reasons:
        parts.append(f"and memory, met in the order of a node map hashed on {_unseen_ips(inp)}")
    if MEMORY in u.reasons:
        unstated = [m for m in inp.machines if m.name in {u.host, *u.tied} and not m.memory_stated]
        said = ", ".join(f"{m.name}'s memory, taken as order x quantum ({m.memory_mb} MB), the least it can be"
                         for m in unstated)
        parts.append(f"whose order by memory (the larger first) the log does not settle: it does not state {said}")
    return "; ".join(parts)


def _follow_machine_tie(d: Defrag, logged: Logged, inp: CycleInput, logged_taken: Mapping[int, Any],
                        rerun: Callable[[dict[str, Clearing]], Defrag],
                        follow: Follow) -> tuple[Defrag, dict[int, Verified]]:
    """takeFromTheRich met machines of equal wealth and memory in the order of a node map hashed on
    IPs the log does not show (before DUCC 3.0.0, never), or machines of equal wealth in the order of
    a memory the log does not state: where the RM cleared one of them, and rmref clearing the RM's
    machine there takes from every job what the RM took, the RM's choice is verified."""
    c = inp.cycle
    rm = cleared_by_rm(logged.connected.get(c, ()), logged.published.get(c, {}), logged_taken)
    logged_evicted = {j: v for j, v in logged_taken.items() if v}
    # (a clearing of new processes alone evicts nothing: the machine it cleared tells it apart)
    if _taken(d) == logged_evicted and _cleared(d) == rm:
        return d, {}
    ties = [u for u in d.unsettled if u.tied and set(u.tied) & set(rm)]
    if not ties:
        return d, {}
    again = rerun(dict(rm))
    if _taken(again) != logged_evicted or (_taken(d) == logged_evicted and _cleared(again) != rm):
        return d, {}
    u = ties[0]
    why = (f"agrees: the RM cleared {', '.join(sorted(set(u.tied) & set(rm)))} for needy job {u.needy_job}, one of "
           f"{len(u.tied) + 1} machines of equal owner wealth {_tie_words(u, inp)} (rmref met {u.host} first)")
    own = _taken(d)
    follow.choose.update(rm)
    follow.sentences.append(why)
    return again, {j: Verified(("taken", own.get(j)), why) for j in set(own) | set(_taken(again))
                   if own.get(j) != _taken(again).get(j)}


def _cleared(d: Defrag) -> dict[str, tuple[tuple[int, int], ...]]:
    """Host -> the (donor job, share id; 0 for a new process) defragmentation cleared there, sorted
    (as `replay.apps.verify.cleared_by_rm` reads the RM's)."""
    out: dict[str, list[tuple[int, int]]] = {}
    for a in d.actions:
        out.setdefault(a.host, []).append((a.donor_job, a.share_id if a.action == "evict" else 0))
    return {h: tuple(sorted(v)) for h, v in out.items()}


def _taken(d: Defrag) -> dict[int, list[tuple[str, int]]]:
    """The running shares defragmentation evicted, per donor job, sorted."""
    taken: dict[int, list[tuple[str, int]]] = {}
    for a in d.actions:
        if a.action == "evict":
            taken.setdefault(a.donor_job, []).append((a.host, a.share_id))
    return {j: sorted(v) for j, v in taken.items()}


def _needy_words(value: object) -> str:
    return f"needy for {value[1]} processes" if isinstance(value, tuple) else "not needy"


def unlisted_words(d: Defrag | None, inp: CycleInput) -> str:
    """Why a takeFromTheRich choice could not be verified: too many shares of open order to list, or
    machines met in the order of a map hashed on node IPs the log does not show."""
    if d is None or not any(not u.alternatives or u.partial for u in d.unsettled):
        return ""
    parts = []
    for u in d.unsettled:
        if u.alternatives and not u.partial:
            continue
        if MEMORY in u.reasons and NODE_IP not in u.reasons:
            parts.append(f"on {u.host} takeFromTheRich met machines of equal wealth in the order of their memory, "
                         f"which the log does not state for all of them")
        elif NODE_IP in u.reasons:
            unseen = ("which the log does not show for these nodes" if inp.config.behaviours.has("node_ip_logged")
                      else "which the log of this release never shows")
            parts.append(f"on {u.host} takeFromTheRich met machines of equal wealth and memory in the order of a "
                         f"map hashed on each node's IP, {unseen}")
        else:
            parts.append(f"on {u.host} takeFromTheRich chose among more equally ranked shares than rmref lists "
                         f"(rmref.choices.MAX_STEPS)")
    return f". {'; '.join(parts)}: its choice there is not verified"


def _shares_words(value: object) -> str:
    if not isinstance(value, tuple) or not value[1]:
        return "nothing"
    return ", ".join(f"{h}.{s}" for h, s in value[1])
