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
from typing import cast

import polars as pl

from replay.model.logged import Logged, logged_decisions
from replay.model.machines.inventory import Host, Inventory, memory_assumptions
from replay.model.reads import narrow
from replay.model.settings import INFERRED, Assumption
from rmref import how_much, job_caps, what_of
from rmref.model import FAIR_SHARE, FIXED_SHARE, RESERVE, CycleInput

MAX_SOLUTIONS = 16  # count solutions kept for the placements to choose from
MAX_ROUNDS = 12  # re-matching rounds of the placement check


def free_space(order: int, np_shares: Iterable[tuple[int, str]]) -> int:
    """A machine's free quanta once its non-preemptable processes are accounted for, as the RM's
    rearrangeVirtual takes them (rmref.howmuch._build_pools): a process bigger than the space
    left, or any reservation, takes all of it."""
    left = order
    for size, policy in np_shares:
        take = left if (size > left or policy == RESERVE) else size
        left -= take
    return left


@dataclass(frozen=True)
class _Seen:
    """What one unseen machine shows in one cycle: schedulable, and its non-preemptable processes."""

    schedulable: bool
    np_shares: tuple[tuple[int, str], ...]


@dataclass
class _Cycle:
    """One whole cycle's evidence."""

    inp: CycleInput
    clean: bool
    scopes: list[str | None]  # the first band's counted pools, in the log's order (None: not one pool)
    logged: list[tuple[int, ...]]  # their vmachines
    residual: list[list[int]]  # logged less the known machines' part (clean cycles)
    seen: dict[str, _Seen]


def _policies(inp: CycleInput) -> dict[int, str]:
    classes = {c.name: c.policy for c in inp.classes}
    return {w.job_id: classes.get(w.class_name, FAIR_SHARE) for w in inp.work}


def _np_shares(inp: CycleInput) -> dict[str, list[tuple[int, str]]]:
    """host -> its fixed-share and reservation processes (order, policy), in accounting order."""
    policy = _policies(inp)
    out: dict[str, list[tuple[int, str]]] = {}
    for w in inp.work:
        if policy[w.job_id] in (FIXED_SHARE, RESERVE):
            for s in w.shares:
                out.setdefault(s.host, []).append((s.order, policy[w.job_id]))
    return out


class _Pools:
    """The nodepool tree: each pool's depth, and which pools a pool's counter covers."""

    def __init__(self, inp: CycleInput):
        self.parent = {p.name: p.parent for p in inp.nodepools}
        self.class_pool = {c.name: c.nodepool for c in inp.classes}

    def chain(self, pool: str) -> list[str]:
        """The pool and its ancestors."""
        out = [pool]
        while (parent := self.parent.get(out[-1])) is not None:
            out.append(parent)
        return out

    def covers(self, scope: str, pool: str) -> bool:
        """Whether the counter of `scope` counts `pool`'s machines (scope is pool or above it)."""
        return scope in self.chain(pool)

    def scope_of(self, class_names: Sequence[str]) -> str | None:
        """The pool a countClassShares block counted: the highest pool among its classes' pools."""
        pools = [self.class_pool[c] for c in class_names if c in self.class_pool]
        return min(pools, key=lambda p: len(self.chain(p))) if pools else None


def _first_band(rmcounter: pl.DataFrame) -> dict[int, list[tuple[list[str], tuple[int, ...]]]]:
    """Per cycle, the leading countClassShares blocks (the first priority band's counters):
    (classes, vmachines)."""
    rows = rmcounter.filter(pl.col("cycle").is_not_null())
    out: dict[int, list] = {}
    done: set[int] = set()
    for (cycle, _block), block in rows.group_by("cycle", "block", maintain_order=True):
        if cycle in done:
            continue
        if block["descr"][0] != "countClassShares":
            done.add(cycle)
            continue
        out.setdefault(cycle, []).append((block["entity"].to_list(), tuple(block["vmachines"][0])))
    return out


def _clean(inp: CycleInput, logged: Logged) -> bool:
    """No earlier band changed the tables: no fixed-share or reservation process counted beyond
    those held, no machine set aside for a reservation."""
    if logged.cleared.get(inp.cycle):
        return False
    counts = logged.counts.get(inp.cycle, {})
    policy = _policies(inp)
    for w in inp.work:
        if policy[w.job_id] in (FIXED_SHARE, RESERVE):
            held = sum(1 for s in w.shares if not s.pending_removal)
            if counts.get(w.job_id, 0) > held:
                return False
    return True


def _histogram(machines: Iterable[tuple[str, int, bool, Sequence[tuple[int, str]]]], pools: _Pools,
               scope: str, size: int) -> list[int]:
    """Free-size histogram of (pool, order, schedulable, non-preemptable processes) machines a
    counter of `scope` covers."""
    out = [0] * size
    for pool, order, schedulable, np_shares in machines:
        if schedulable and pools.covers(scope, pool):
            free = free_space(order, np_shares)
            if 0 < free < size:
                out[free] += 1
    return out


def _evidence(tables: Mapping[str, pl.DataFrame], inputs: Sequence[CycleInput], unknown: set[str],
              logged: Logged) -> tuple[list[_Cycle], _Pools]:
    """Every whole cycle's counters, with the known machines' part taken out."""
    pools = _Pools(inputs[0])
    band = _first_band(narrow(tables, "rmcounter", ("cycle", "block", "descr", "entity", "vmachines")))
    out = []
    for inp in inputs:
        blocks = band.get(inp.cycle, [])
        scopes = [pools.scope_of(names) for names, _ in blocks]
        np_of = _np_shares(inp)
        known = [(m.nodepool, m.order, m.online and not m.blacklisted, np_of.get(m.name, ()))
                 for m in inp.machines if m.name not in unknown]
        seen = {m.name: _Seen(m.online and not m.blacklisted, tuple(np_of.get(m.name, ())))
                for m in inp.machines if m.name in unknown}
        logged_v = [v for _, v in blocks]
        residual = [[a - b for a, b in zip(v, _histogram(known, pools, s, len(v)))] if s else []
                    for s, v in zip(scopes, logged_v)]
        clean = (bool(blocks) and None not in scopes and _clean(inp, logged)
                 and all(x >= 0 for r in residual for x in r))
        out.append(_Cycle(inp, clean, scopes, logged_v, residual, seen))
    return out, pools


# ---------------------------------------------------------------------------------------------
# the counts: how many unseen machines of each group have each order


@dataclass(frozen=True)
class _Group:
    """Unseen machines that look alike in every clean cycle."""

    hosts: tuple[str, ...]
    pool: str
    floor: int  # the lowest order the shares they held allow
    orders: tuple[int, ...]  # the orders they may have


def _floors(inputs: Sequence[CycleInput], unknown: set[str]) -> dict[str, tuple[int, int]]:
    """host -> (the most quanta its processes held at once, the cycle it held them)."""
    out: dict[str, tuple[int, int]] = {h: (0, 0) for h in unknown}
    for inp in inputs:
        used: Counter = Counter()
        for w in inp.work:
            for s in w.shares:
                if s.host in unknown:
                    used[s.host] += s.order
        for host, q in used.items():
            if q > out[host][0]:
                out[host] = (q, inp.cycle)
    return out


def _reserved(inputs: Sequence[CycleInput], unknown: set[str]) -> dict[str, int]:
    """host -> the order of a reservation it held: a reservation takes a machine of exactly its
    order (NodePool.findMachines)."""
    out = {}
    for inp in inputs:
        policy = _policies(inp)
        for w in inp.work:
            if policy[w.job_id] == RESERVE:
                out.update({s.host: s.order for s in w.shares if s.host in unknown})
    return out


def _candidate_orders(cycles: Sequence[_Cycle], known_orders: Iterable[int], maxorder: int) -> list[int]:
    """Orders an unseen machine may have: the known machines', and every free size the counters
    leave to the unseen ones (plus what non-preemptable processes hold there); none above the
    RM's maxorder (the largest order it has seen). The known machines' orders come first."""
    known = sorted(set(known_orders))
    out = set(known)
    for c in cycles:
        if not c.clean:
            continue
        held = {sum(o for o, _ in s.np_shares) for s in c.seen.values()}
        for r in c.residual:
            for free, n in enumerate(r):
                if n > 0:
                    out.update(free + h for h in held)
    return known + sorted(o for o in out - set(known) if 0 < o <= maxorder)


def _groups(cycles: Sequence[_Cycle], hosts: Mapping[str, Host], floors: Mapping[str, tuple[int, int]],
            reserved: Mapping[str, int], orders: Sequence[int]) -> list[_Group]:
    clean = [c for c in cycles if c.clean]
    by_sig: dict[tuple, list[str]] = {}
    for name in hosts:
        sig = (hosts[name].nodepool, floors[name][0], reserved.get(name), tuple(c.seen.get(name) for c in clean))
        by_sig.setdefault(sig, []).append(name)
    return [_Group(tuple(names), pool, floor,
                   (exact,) if exact is not None else tuple(o for o in orders if o >= max(floor, 1)))
            for (pool, floor, exact, _), names in by_sig.items()]


def _equations(cycles: Sequence[_Cycle], groups: Sequence[_Group], pools: _Pools) -> list[tuple[int, list]]:
    """The equations of every clean cycle state, with the number of cycles in that state (most
    first): for each counter and free size, the residual the groups must fill and the (group,
    order) counts that fill it. Cycles in the same state but with other residuals contradict each
    other: the state's most common residual is kept (the others fail the check of every cycle)."""
    states: dict[tuple, Counter] = {}
    for c in cycles:
        if c.clean:
            key = (tuple(c.seen.get(g.hosts[0]) for g in groups), tuple(c.scopes))
            states.setdefault(key, Counter())[tuple(tuple(r) for r in c.residual)] += 1
    out = []
    for (seen, scopes), residuals in states.items():
        residual, support = residuals.most_common(1)[0]
        equations = []  # (target, {(group index, order): 1})
        for scope, r in zip(scopes, residual):
            terms: dict[int, dict[tuple[int, int], int]] = {}
            for gi, g in enumerate(groups):
                s = seen[gi]
                if s is None or not s.schedulable or not pools.covers(scope, g.pool):
                    continue
                for o in g.orders:
                    free = free_space(o, s.np_shares)
                    if 0 < free < len(r):
                        terms.setdefault(free, {})[(gi, o)] = 1
            equations += [(r[free], terms.get(free, {})) for free in range(1, len(r)) if r[free] or free in terms]
        out.append((support, equations))
    return sorted(out, key=lambda state: -state[0])


def _distinct(equations: Iterable) -> list:
    return list({(t, tuple(sorted(k))): (t, k) for t, k in equations}.values())


def _solve(groups: Sequence[_Group], states: Sequence[tuple[int, list]]) -> list[dict[tuple[int, int], int]]:
    """The counts that fit every state's equations; when none does (a state the others
    contradict), the counts that fit the most-seen states that fit together (greedily)."""
    solutions = _solve_counts(groups, _distinct(eq for _, eqs in states for eq in eqs))
    if solutions or not states:
        return solutions
    kept: list = []
    for _support, eqs in states:
        if _solve_counts(groups, _distinct([*kept, *eqs]), limit=1):
            kept += eqs
    return _solve_counts(groups, _distinct(kept))


def _solve_counts(groups: Sequence[_Group], equations, limit: int = MAX_SOLUTIONS) -> list[dict[tuple[int, int], int]]:
    """Every assignment of orders to the groups' machines (counts per group and order) that fills
    every equation exactly (at most `limit`).

    Each equation, and each group's size, is a sum of some of the counts: a depth-first search
    takes the count with the least room first (an equation with one open count fixes it), and
    tries the known machines' orders, and larger counts, first."""
    variables = [(gi, o) for gi, g in enumerate(groups) for o in g.orders]
    rows = [(target, list(terms)) for target, terms in equations]
    rows += [(len(g.hosts), [(gi, o) for o in g.orders]) for gi, g in enumerate(groups)]
    rows_of: dict[tuple[int, int], list[int]] = {v: [] for v in variables}
    for k, (_t, terms) in enumerate(rows):
        for v in terms:
            rows_of[v].append(k)
    residual = [t for t, _ in rows]
    open_in = [len(terms) for _, terms in rows]
    rank = {v: i for i, v in enumerate(variables)}
    chosen: dict[tuple[int, int], int] = {}
    solutions: list[dict] = []

    def room(v: tuple[int, int]) -> int:
        return min(residual[k] for k in rows_of[v])

    def pick() -> tuple[tuple[int, int], range] | None:
        best = None
        for v in variables:
            if v in chosen:
                continue
            forced = next((residual[k] for k in rows_of[v] if open_in[k] == 1), None)
            if forced is not None:
                return v, range(forced, forced - 1, -1)
            key = (room(v), rank[v])
            if best is None or key < best[0]:
                best = (key, v)
        return None if best is None else (best[1], range(best[0][0], -1, -1))

    def search() -> None:
        if len(solutions) >= limit:
            return
        step = pick()
        if step is None:
            if not any(residual):
                solutions.append({v: n for v, n in chosen.items() if n})
            return
        v, values = step
        for n in values:
            if n < 0 or n > room(v):
                continue
            chosen[v] = n
            for k in rows_of[v]:
                residual[k] -= n
                open_in[k] -= 1
            if all(residual[k] == 0 or open_in[k] > 0 for k in rows_of[v]):
                search()
            for k in rows_of[v]:
                residual[k] += n
                open_in[k] += 1
            del chosen[v]

    if all(g.orders for g in groups) and all(t >= 0 for t in residual):
        search()
    return solutions


# ---------------------------------------------------------------------------------------------
# which machine of a group has which order: the placements


def _match(groups: Sequence[_Group], counts: Mapping[tuple[int, int], int], ruled_out: set[tuple[str, int]],
           previous: Mapping[str, int]) -> dict[str, int] | None:
    """Give each machine one of its group's orders (as many of each as `counts` says), none ruled
    out; machines keep their previous order where they can."""
    out: dict[str, int] = {}
    for gi, g in enumerate(groups):
        slots = [o for o in g.orders for _ in range(counts.get((gi, o), 0))]
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


def _placement_check(cycles: Sequence[_Cycle], orders: Mapping[str, int], logged: Logged) -> tuple[set, int, int]:
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
    ruled_out: frozenset


def _fit(groups: Sequence[_Group], counts, cycles: Sequence[_Cycle], logged: Logged) -> _Fit | None:
    """Orders for the machines of every group, re-matched until rmref's placements put nothing on them."""
    ruled_out: set = set()
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


def _unsettled(cycles: Sequence[_Cycle], orders: Mapping[str, int], pools: _Pools, logged: Logged,
               unknown_left: set[str]) -> dict[int, str]:
    """Cycles whose counters the inventory does not reproduce, and why."""
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
            ok = all(list(r) == _histogram(machines, pools, s, len(r))
                     for s, r in zip(c.scopes, c.residual) if s is not None)  # a clean cycle's are all known
        else:
            ok = _counters_fit(c, orders, logged)
        if not ok:
            out[c.inp.cycle] = "the inferred nodes do not reproduce this cycle's RmCounter vmachines"
    return out


def _counters_fit(c: _Cycle, orders: Mapping[str, int], logged: Logged) -> bool:
    """rmref's How Much on the inventory prints the first band's vectors the RM printed."""
    inp = _with_orders(c.inp, orders)
    caps = logged.caps.get(inp.cycle, {})
    jc = {w.job_id: caps.get(w.job_id, job_caps(w.cap_input).actual) for w in inp.work}
    runs = [r.vmachines for r in how_much(inp, jc, dict(inp.config.user_allotments),
                                          logged.user_orders.get(inp.cycle, ())).runs
            if r.descr == "countClassShares"][:len(c.logged)]

    def trim(v: Sequence[int]) -> tuple[int, ...]:
        v = list(v)
        while v and not v[-1]:
            v.pop()
        return tuple(v)
    return [trim(v) for v in runs] == [trim(v) for v in c.logged]


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
                    build: Callable[[Inventory], Iterable[CycleInput]]) -> Inventory:
    """`stated` with the orders of its unknown nodes solved for from the counters and placements;
    `build` gives the cycles' inputs on a candidate inventory (replay.model.start.machine_inventory)."""
    unknown = {h.name: h for h in stated.hosts if h.order is None}
    whole = whole_cycles(tables)
    inputs = [inp for inp in build(stated) if inp.cycle in whole]
    if not inputs:
        return stated
    logged = logged_decisions(tables)
    cycles, pools = _evidence(tables, inputs, set(unknown), logged)
    floors = _floors(inputs, set(unknown))
    known_orders = {h.order for h in stated.hosts if h.order is not None}
    logged_max = cast(int | None, narrow(tables, "rmcounter", ("maxorder",))["maxorder"].max())
    maxorder = logged_max or max(known_orders, default=0) or 1 << 16
    candidates = _candidate_orders(cycles, known_orders, maxorder)
    groups = _groups(cycles, unknown, floors, _reserved(inputs, set(unknown)), candidates)
    # a group no clean counter covers while it is up is not inferred: no evidence, no guess
    counted = {gi for _, eqs in _equations(cycles, groups, pools) for _t, terms in eqs for gi, _o in terms}
    groups = [g for gi, g in enumerate(groups) if gi in counted or len(g.orders) == 1]
    solutions = _solve(groups, _equations(cycles, groups, pools))
    fits = [f for f in (_fit(groups, counts, cycles, logged) for counts in solutions) if f is not None]
    # most placements reproduced; then the fewest machine sizes the known machines do not have
    fits.sort(key=lambda f: (-f.agree, len(set(f.orders.values()) - known_orders), len(set(f.orders.values())),
                             len(f.ruled_out)))
    orders = fits[0].orders if fits else {}
    unsettled = _unsettled(cycles, orders, pools, logged, set(unknown) - set(orders))
    hosts = tuple(_inferred(h, orders, groups, floors, fits, sum(c.clean for c in cycles)) if h.name in unknown else h
                  for h in stated.hosts)
    assumed = _assumptions(hosts, unknown, fits) + memory_assumptions(hosts, stated.quantum_gb)
    return replace(stated, hosts=hosts, unsettled=unsettled, assumed=assumed)


def _inferred(h: Host, orders: Mapping[str, int], groups: Sequence[_Group], floors, fits: Sequence[_Fit],
              clean: int) -> Host:
    if h.name not in orders:
        return h
    group = next(g for g in groups if h.name in g.hosts)
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
    elif len(sizes) > 1 and not any(host in group.hosts for host, _o in fits[0].ruled_out):
        why.append("which of these alike nodes has which order no placement tells: taken in the order "
                   "they were first heard from")
    return replace(h, order=orders[h.name], source=INFERRED, evidence="; ".join(why))


def _assumptions(hosts: Sequence[Host], unknown: Mapping[str, Host], fits: Sequence[_Fit]) -> tuple[Assumption, ...]:
    """Each inferred node, a summary line, and a word on the inferences that fit as well."""
    inferred = [h for h in hosts if h.name in unknown and h.order is not None]
    out = [Assumption(f"node {h.name}", f"order {h.order}, nodepool {h.nodepool}", INFERRED, h.evidence)
           for h in inferred]
    sizes = Counter(h.order for h in inferred)
    left = len(unknown) - len(inferred)
    out.append(Assumption(
        "nodes", f"{len(hosts)} there before the log began: {len(hosts) - len(unknown)} sized by the log, "
                 f"{len(inferred)} inferred ({', '.join(f'{n} of order {o}' for o, n in sorted(sizes.items()))})"
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
