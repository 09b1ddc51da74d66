"""Solve for the nodes a mid-stream log never sizes, from the counters the RM printed.

Every How Much pass prints, per nodepool, the free space it apportions (countClassShares
`vmachines`): how many schedulable machines of the pool and its subpools have each free size.
Fair-share processes count as free there; only fixed-share and reservation processes occupy,
and only until earlier priority bands of the same cycle count new ones out. So in a *clean*
cycle (no fixed-share or reservation process added, no machine cleared for a reservation) the
first band's vectors are exactly the histogram of every schedulable machine's order less its
non-preemptable processes. The known machines' part of it is computed; what is left is the
unseen machines' part, one equation per cycle, pool and free size.

Unseen machines that look alike in every clean cycle (same pool, same liveness, same
non-preemptable processes, same lowest possible order from the shares they hold) are
interchangeable there: the equations fix how many of each such group have each order, and a
search finds every count that fits. Which machine of a group has which order only the
placements tell: the RM never placed a process on an unseen machine (a placement would have
sized it), and it places on the best-fitting free space first, so an order under which rmref's
What Of would place on the machine is ruled out. Where several inferences fit, the one whose
placements agree most with the log's is taken, and the audit says so.

Every cycle is then checked: the inventory must reproduce the counters the RM printed (in a
clean cycle by the histogram, in any other by rmref's own How Much run); a cycle that does not
is `unsettled`, and the audit leaves its node-dependent decisions out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from math import comb
from typing import cast

import polars as pl

from replay.model.logged import Logged, logged_decisions
from replay.model.pools import POOLS_OPEN
from replay.model.machines.counts import (
    Counts, Group, alike_groups, candidate_orders, held_floors, possible_orders, reserved_orders, solve,
    state_equations,
)
from replay.model.machines.evidence import CycleEvidence, PoolTree, counted_policies, gather_evidence, histogram
from replay.model.machines.inventory import Host, Inventory, arrival_order, memory_assumptions
from replay.model.machines.unnamed import Unnamed, unnamed_machines
from replay.model.reads import narrow
from replay.model.settings import INFERRED, Assumption
from rmref import how_much, job_caps, what_of
from rmref.model import CycleInput

MAX_ROUNDS = 12  # re-matching rounds of the placement check


# ---------------------------------------------------------------------------------------------
# which machine of a group has which order: the placements


def _match(groups: Sequence[Group], counts: Mapping[tuple[int, int], int], ruled_out: set[tuple[str, int]],
           previous: Mapping[str, int]) -> dict[str, int] | None:
    """Give each machine one of its group's orders (as many of each as `counts` says), none ruled
    out; machines keep their previous order where they can. A group `counts` gives no order stays
    unknown (counts.solve: nothing tells it)."""
    out: dict[str, int] = {}
    for gi, g in enumerate(groups):
        slots = [o for o in g.orders for _ in range(counts.get((gi, o), 0))]
        if not slots:
            continue
        matched = _match_group(g.hosts, slots, ruled_out, previous)
        if matched is None:
            return None
        out.update(matched)
    return out


def _match_group(hosts: Sequence[str], slots: Sequence[int], ruled_out: set[tuple[str, int]],
                 previous: Mapping[str, int]) -> dict[str, int] | None:
    """A perfect matching of machines to order slots (augmenting paths), or None."""
    owner: dict[int, str] = {}

    def assign(host: str, seen: set[int]) -> bool:
        for k in sorted(range(len(slots)), key=lambda k: slots[k] != previous.get(host)):
            if k in seen or (host, slots[k]) in ruled_out:
                continue
            seen.add(k)
            if k not in owner or assign(owner[k], seen):
                owner[k] = host
                return True
        return False

    if not all(assign(host, set()) for host in hosts):
        return None
    return {host: slots[k] for k, host in owner.items()}


def _with_orders(inp: CycleInput, orders: Mapping[str, int]) -> CycleInput:
    return replace(inp, machines=tuple(replace(m, order=orders[m.name]) if m.name in orders else m
                                       for m in inp.machines))


def _placement_check(cycles: Sequence[CycleEvidence], orders: Mapping[str, int],
                     logged: Logged) -> tuple[set[tuple[str, int]], int, int]:
    """Run rmref's What Of on the logged counts: the first process it puts on an unseen machine
    rules that machine's order out (the RM placed nothing there). Returns (ruled out, placements
    agreeing, placements logged)."""
    ruled_out: set[tuple[str, int]] = set()
    agree = total = 0
    for c in cycles:
        wanted = logged.connected.get(c.inp.cycle)
        if not wanted:
            continue
        placed = what_of(_with_orders(c.inp, orders), logged.counts.get(c.inp.cycle, {}))
        mine = Counter((p.job_id, p.host, p.order) for p in placed)
        theirs = Counter((j, h, o) for j, h, o, _sid in wanted)
        agree += sum((mine & theirs).values())
        total += sum(theirs.values())
        wrong = next((p for p in placed if p.host in orders), None)
        if wrong is not None:
            ruled_out.add((wrong.host, orders[wrong.host]))
    return ruled_out, agree, total


@dataclass(frozen=True)
class _Fit:
    orders: dict[str, int]
    agree: int
    total: int
    ruled_out: frozenset[tuple[str, int]]


def _fit(groups: Sequence[Group], counts: Counts, cycles: Sequence[CycleEvidence], logged: Logged) -> _Fit | None:
    """Orders for the machines of every group, re-matched until rmref's placements put nothing on them."""
    ruled_out: set[tuple[str, int]] = set()
    orders: dict[str, int] = {}
    best: _Fit | None = None
    for _ in range(MAX_ROUNDS):
        matched = _match(groups, counts, ruled_out, orders)
        if matched is None:
            break
        orders = matched
        new, agree, total = _placement_check(cycles, orders, logged)
        if best is None or agree > best.agree:
            best = _Fit(dict(orders), agree, total, frozenset(ruled_out | new))
        if not new - ruled_out:
            return _Fit(dict(orders), agree, total, frozenset(ruled_out))
        ruled_out |= new
    return best


# ---------------------------------------------------------------------------------------------
# checking every cycle


STATED_UNFIT = ("the nodes the log states do not reproduce this cycle's RmCounter vmachines (a machine "
                "unschedulable since before the log began keeps a free space no line gives)")


def _unsettled(cycles: Sequence[CycleEvidence], orders: Mapping[str, int], pools: PoolTree, logged: Logged,
               unknown_left: set[str], unfit: str = "the inferred nodes do not reproduce this cycle's RmCounter "
                                                    "vmachines") -> dict[int, str]:
    """Cycles whose counters the inventory does not reproduce, and why (`unfit`, where they do not fit)."""
    out = {}
    for c in cycles:
        live_unknown = sorted(h for h, s in c.seen.items() if s.schedulable and h in unknown_left)
        if live_unknown:
            out[c.inp.cycle] = (f"the order of node(s) {', '.join(live_unknown[:3])} could not be inferred "
                                "(the counters do not tell it)")
            continue
        if not c.logged:
            continue
        if c.clean:
            machines = [(m.nodepool, orders.get(m.name, m.order), m.online and not m.blacklisted,
                         c.seen[m.name].np_shares if m.name in c.seen else ())
                        for m in c.inp.machines if m.name in c.seen]
            ok = all(list(r) == histogram(machines, pools, s, len(r))
                     for s, r in zip(c.scopes, c.residual) if s is not None)  # a clean cycle's are all known
        else:
            ok = _counters_fit(c, orders, logged)
        if not ok:
            out[c.inp.cycle] = unfit
    return out


def _counters_fit(c: CycleEvidence, orders: Mapping[str, int], logged: Logged) -> bool:
    """rmref's How Much on the inventory prints the first band's vectors the RM printed."""
    runs = _class_vectors(_with_orders(c.inp, orders), logged)[:len(c.logged)]
    return runs == [_trim(v) for v in c.logged]


def _class_vectors(inp: CycleInput, logged: Logged) -> list[tuple[int, ...]]:
    """The vmachines of each countClassShares run of rmref's How Much on `inp` (the logged caps
    standing), without their trailing zeros."""
    caps = logged.caps.get(inp.cycle, {})
    jc = {w.job_id: caps.get(w.job_id, job_caps(w.cap_input).actual) for w in inp.work}
    return [_trim(r.vmachines) for r in how_much(inp, jc, dict(inp.config.user_allotments),
                                                   logged.user_orders.get(inp.cycle, ())).runs
            if r.descr == "countClassShares"]


def _trim(v: Sequence[int]) -> tuple[int, ...]:
    """A vmachines vector without its trailing zeros (the RM prints it up to the max order)."""
    out = list(v)
    while out and not out[-1]:
        out.pop()
    return tuple(out)


def every_band(tables: Mapping[str, pl.DataFrame]) -> dict[int, list[tuple[int, ...]]]:
    """Per cycle, the vmachines of every countClassShares block, every band's, in the log's order."""
    rows = narrow(tables, "rmcounter", ("cycle", "block", "descr", "vmachines")).filter(pl.col("cycle").is_not_null())
    out: dict[int, list[tuple[int, ...]]] = {}
    for (cycle, _block), block in rows.group_by("cycle", "block", maintain_order=True):
        if block["descr"][0] == "countClassShares" and block["vmachines"][0] is not None:
            out.setdefault(cast(int, cycle), []).append(tuple(block["vmachines"][0]))
    return out


BANDS_UNNAMED = ("a later band's RmCounter vmachines count more machines than the nodes taken as there before "
                 "the log began: their arrival is not in the log (it starts mid-stream, or after a gap), so "
                 "rmref's machines would lack them")


def _unfit_bands(inputs: Sequence[CycleInput], vectors: Mapping[int, list[tuple[int, ...]]],
                 logged: Logged) -> dict[int, str]:
    """Cycles in which rmref's How Much on these machines does not print every band's vmachines
    the RM printed (a later band counts pools the first may not), and why: more machines counted
    than named (BANDS_UNNAMED), or otherwise (STATED_UNFIT)."""
    out = {}
    for inp in inputs:
        if inp.cycle not in vectors:
            continue
        runs = _class_vectors(inp, logged)
        printed = [_trim(v) for v in vectors[inp.cycle]]
        if runs != printed:
            more = any(sum(v[1:]) > sum(r[1:]) for r, v in zip(runs, printed))
            out[inp.cycle] = BANDS_UNNAMED if more else STATED_UNFIT
    return out


VARIED_OFF_MOST = 2  # the most idle machines tried together as varied off before the log began
VARIED_OFF_TRIALS = 64  # the most sets of one size tried (each replays the log's cycles)


def _varied_off_idle(stated: Inventory, inputs: list[CycleInput], unfit: dict[int, str],
                     vectors: Mapping[int, list[tuple[int, ...]]], logged: Logged,
                     build: Callable[[Inventory], Iterable[CycleInput]],
                     ) -> tuple[Inventory, list[CycleInput], dict[int, str]]:
    """The machines the counters leave out: the RM's How Much counts only schedulable machines, so
    a machine the log shows idle that no counter counts was unschedulable before the log began
    (varied off; nothing of the cut says so). Taken so only when exactly one smallest set of the
    machines idle in every cycle makes every cycle's counters fit; else the inventory is unchanged."""
    if BANDS_UNNAMED in unfit.values():  # machines missing: none the log names can be the one off
        return stated, inputs, unfit
    held = {s.host for inp in inputs for w in inp.work for s in w.shares}
    idle = [h for h in stated.hosts if h.name not in held and not (h.dead or h.varied_off or h.down)]
    whole = {inp.cycle for inp in inputs}
    for size in range(1, min(VARIED_OFF_MOST, len(idle)) + 1):
        if comb(len(idle), size) > VARIED_OFF_TRIALS:
            break
        fits = []
        for chosen in combinations(idle, size):
            names = {h.name for h in chosen}
            trial = replace(stated, hosts=tuple(replace(h, varied_off=True) if h.name in names else h
                                                for h in stated.hosts))
            again = [inp for inp in build(trial) if inp.cycle in whole]
            if not _unfit_bands(again, vectors, logged):
                fits.append((trial, again, sorted(names)))
        if len(fits) == 1:
            trial, again, off = fits[0]
            said = Assumption("nodes varied off before the log began", ", ".join(off), INFERRED,
                              "idle in every cycle, yet no RmCounter vmachines counts them (the RM counts only "
                              "schedulable machines), and every cycle's counters fit with them unschedulable; "
                              "no line of the log says so")
            return replace(trial, assumed=trial.assumed + (said,)), again, {}
        if fits:
            break  # several sets of alike machines fit: which one is off the counters do not tell
    return stated, inputs, unfit


# ---------------------------------------------------------------------------------------------
# the inventory


def whole_cycles(tables: Mapping[str, pl.DataFrame]) -> set[int]:
    """Published cycles whose scheduling pass began in the log (a log that starts inside a cycle
    lacks that cycle's loop-entry line: `started` is false; a log that prints no loop-entry lines
    at all is taken whole)."""
    cycles = tables["cycles"]
    numbers = cycles["cycle"].to_list()
    if cycles.height and not cycles["started"][0] and cycles["started"].any():
        return set(numbers[1:])
    return set(numbers)


def infer_inventory(tables: Mapping[str, pl.DataFrame], stated: Inventory,
                    build: Callable[[Inventory], Iterable[CycleInput]],
                    read_logged: Callable[[], Logged] | None = None) -> Inventory:
    """`stated` with the orders of its unknown nodes solved for from the counters and placements,
    and every cycle unsettled when the counters count machines no line names
    (replay.model.machines.unnamed); `build` gives the cycles' inputs on a candidate inventory
    (replay.model.start.machine_inventory); `read_logged` gives the RM's logged decisions
    (default: read here)."""
    unknown = {h.name: h for h in stated.hosts if h.order is None}
    whole = whole_cycles(tables)
    inputs = [inp for inp in build(stated) if inp.cycle in whole]
    if not inputs:
        return stated
    logged = read_logged() if read_logged is not None else logged_decisions(tables)
    cycles, pools = gather_evidence(tables, inputs, set(unknown), logged)
    unnamed = unnamed_machines(cycles, pools)
    if not unknown:
        # every node stated (a DEBUG log's occupancy table sizes them all): the counters may still
        # show a state no line gives, such as a machine unschedulable since before the log began,
        # whose stale free space the RM's vmachines count (even below zero), or which they leave out
        vectors = every_band(tables)
        unfit = _unfit_bands(inputs, vectors, logged)
        if unfit:
            stated, inputs, unfit = _varied_off_idle(stated, inputs, unfit, vectors, logged, build)
            cycles, pools = gather_evidence(tables, inputs, set(), logged)
        unsettled = _unsettled(cycles, {}, pools, logged, set(), STATED_UNFIT) | unfit
        checked = replace(stated, unsettled=dict(sorted(unsettled.items())))
        return checked if unnamed is None else _with_unnamed(checked, unnamed, inputs)
    floors = held_floors(inputs, set(unknown))
    known_orders = {h.order for h in stated.hosts if h.order is not None}
    logged_max = cast(int | None, narrow(tables, "rmcounter", ("maxorder",))["maxorder"].max())
    maxorder = logged_max or max(known_orders, default=0) or 1 << 16
    candidates = candidate_orders(cycles, known_orders, maxorder)
    reserved = reserved_orders(inputs, set(unknown), counted_policies(tables))
    groups = alike_groups(cycles, unknown, floors, reserved, candidates)
    # a group no clean counter covers while it is up is not inferred: no evidence, no guess. One
    # order left is evidence when a reservation held the machine (it takes exactly its order) or the
    # RM's maxorder bounds it from above as its processes do from below (the candidates are only the
    # orders some counter or machine shows, so one left above the floor is no evidence of itself)
    counted = {gi for _, eqs in state_equations(cycles, groups, pools) for _t, terms in eqs for gi, _o in terms}
    groups = [g for gi, g in enumerate(groups)
              if gi in counted or g.hosts[0] in reserved or (g.orders == (g.floor,) and g.floor == logged_max)]
    solutions, equations, cut_short = solve(groups, state_equations(cycles, groups, pools))
    fits = [f for f in (_fit(groups, counts, cycles, logged) for counts in solutions) if f is not None]
    # the search stops at MAX_SOLUTIONS: past it, what the fits give is no measure of what is open
    possible = possible_orders(groups, equations, solutions) if cut_short else {}
    # most placements reproduced; then the fewest machine sizes the known machines do not have
    fits.sort(key=lambda f: (-f.agree, len(set(f.orders.values()) - known_orders), len(set(f.orders.values())),
                             len(f.ruled_out)))
    orders = fits[0].orders if fits else {}
    unsettled = _unsettled(cycles, orders, pools, logged, set(unknown) - set(orders))
    hosts = tuple(_inferred(h, orders, groups, floors, fits, sum(c.clean for c in cycles), possible)
                  if h.name in unknown else h for h in stated.hosts)
    assumed = _assumptions(hosts, unknown, fits) + memory_assumptions(hosts, stated.quantum_gb) + arrival_order(hosts)
    assumed += tuple(a for a in stated.assumed if a.setting == POOLS_OPEN)  # (the hosts' pools: not inferred here)
    inferred = replace(stated, hosts=hosts, unsettled=unsettled, assumed=assumed)
    return inferred if unnamed is None else _with_unnamed(inferred, unnamed, inputs)


def _with_unnamed(inventory: Inventory, unnamed: Unnamed, inputs: Sequence[CycleInput]) -> Inventory:
    """Every whole cycle unsettled: the counters count machines no line names (replay.model.machines.unnamed)."""
    why = unnamed.text()
    note = Assumption("nodes (unnamed)", f"at least {sum(k for _, k in unnamed.sizes)} machine(s) no line names",
                      INFERRED, f"{why}; only what does not read the machines (caps) is audited")
    return replace(inventory, unsettled={inp.cycle: why for inp in inputs}, assumed=inventory.assumed + (note,))


def _inferred(h: Host, orders: Mapping[str, int], groups: Sequence[Group], floors: Mapping[str, tuple[int, int]],
              fits: Sequence[_Fit], clean: int, possible: Mapping[int, set[int]]) -> Host:
    if h.name not in orders:
        return h
    gi, group = next((gi, g) for gi, g in enumerate(groups) if h.name in g.hosts)
    ruled = sorted(o for host, o in fits[0].ruled_out if host == h.name)
    held, at = floors[h.name]
    sizes = Counter(orders[n] for n in group.hosts)
    why = [(f"the RmCounter vmachines of {clean} clean cycle(s) leave "
            + ", ".join(f"{n} of order {o}" for o, n in sorted(sizes.items()))
            + f" to it and {len(group.hosts) - 1} node(s) alike in every one of them")]
    if held:
        why.append(f"its processes held {held} quanta (cycle {at})")
    if ruled:
        why.append(f"rmref's What Of would place processes on it as order {', '.join(map(str, ruled))}, "
                   "where the RM placed none")
    open_ = len(sizes) > 1 and not ruled and not any(host in group.hosts for host, _o in fits[0].ruled_out)
    if open_:
        why.append("which of these alike nodes has which order no placement tells: taken in the order "
                   "they were first heard from (every view shows it as one of "
                   + " or ".join(map(str, sorted(sizes))) + ")")
    rivals = _rivals(h.name, group, [f for f in fits if f.agree == fits[0].agree], possible.get(gi, set()))
    if len(rivals) > 1:
        fit = ("the counts that fit the counters (more than the search keeps) give its group order"
               if len(possible.get(gi, ())) > 1 else "the inferences that fit as well give it order")
        why.append(f"{fit} {' or '.join(map(str, rivals))}: every view shows it so, its quanta not known")
    return replace(h, order=orders[h.name], source=INFERRED, evidence="; ".join(why),
                   alike=tuple(sorted(sizes)) if open_ else (), alike_with=group.hosts if open_ else (),
                   rivals=tuple(rivals) if len(rivals) > 1 else ())


def _rivals(host: str, group: Group, tied: Sequence[_Fit], possible: set[int]) -> list[int]:
    """The orders `host` may have, where the log leaves it several: those the fits as good as the
    one taken give it (told apart by the fewest machine sizes only: no evidence), or `possible`,
    every order a fitting count gives its group (counts.possible_orders: the search was cut
    short). Machines of a group no placement tells apart are interchangeable: each may have any
    order a fit gives one of them, unless every fit gives the group the same orders (which has
    which is then only not known: Host.alike)."""
    if len(possible) > 1:
        return sorted(possible)
    if any(name in group.hosts for f in tied for name, _o in f.ruled_out):
        options = {f.orders[host] for f in tied if host in f.orders}
    else:
        shapes = {tuple(sorted(f.orders[n] for n in group.hosts if n in f.orders)) for f in tied}
        options = {o for shape in shapes for o in shape} if len(shapes) > 1 else set()
    return sorted(options) if len(options) > 1 else []


def _order_taken(h: Host) -> str:
    """An inferred node's order as the assumptions name it: where the log leaves it one of several
    (`Host.alike`, `Host.rivals`), the one the replay took, as taken."""
    options = sorted({*h.alike, *h.rivals})
    return f"order {h.order} taken of {' or '.join(map(str, options))}" if options else f"order {h.order}"


def _assumptions(hosts: Sequence[Host], unknown: Mapping[str, Host], fits: Sequence[_Fit]) -> tuple[Assumption, ...]:
    """Each inferred node, a summary line, and a word on the inferences that fit as well."""
    inferred = [h for h in hosts if h.name in unknown and h.order is not None]
    out = [Assumption(f"node {h.name}", f"{_order_taken(h)}, nodepool {h.nodepool}", INFERRED, h.evidence)
           for h in inferred]
    sizes = Counter(h.order for h in inferred)
    left = len(unknown) - len(inferred)
    out.append(Assumption(
        "nodes", f"{len(hosts)} there before the log began: {len(hosts) - len(unknown)} sized by the log, "
                 f"{len(inferred)} inferred"
                 + (f" ({', '.join(f'{n} of order {o}' for o, n in sorted(sizes.items()))})" if sizes else "")
                 + (f", {left} unknown" if left else ""),
        INFERRED, "solved from the RmCounter vmachines (the free space by size each How Much pass counted) and "
                  "checked against the placements; report.json lists each node with its evidence"))
    if len(fits) > 1:
        same = fits[1].agree == fits[0].agree
        differ = sorted(n for n in fits[0].orders if fits[0].orders[n] != fits[1].orders.get(n))
        out.append(Assumption(
            "nodes (alternatives)", f"{len(fits)} inferences fit the counters", INFERRED,
            f"the next differs on {', '.join(differ[:4])}{' ...' if len(differ) > 4 else ''}; the one taken agrees "
            f"with {fits[0].agree} of {fits[0].total} logged placements, the next with {fits[1].agree}"
            + ("; the one taken has fewer machine sizes the log does not show" if same else "")))
    return tuple(out)
