"""The counts: how many unseen machines of each group of alike machines have each order, solved
from the clean cycles' equations (replay.model.machines.evidence)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import NamedTuple

from replay.model.machines.evidence import CycleEvidence, PoolTree, Seen, free_space, policies
from replay.model.machines.inventory import Host
from rmref.model import RESERVE, CycleInput

MAX_SOLUTIONS = 16  # count solutions kept for the placements to choose from
Var = tuple[int, int]  # (group index, order): how many of the group's machines have the order
Equation = tuple[int, dict[Var, int]]  # (target, the counts that fill it)
State = tuple[int, list[Equation]]  # (cycles in that state, its equations)
Counts = dict[Var, int]  # one solution


@dataclass(frozen=True)
class Group:
    """Unseen machines that look alike in every clean cycle."""

    hosts: tuple[str, ...]
    pool: str
    floor: int  # the lowest order the shares they held allow
    orders: tuple[int, ...]  # the orders they may have


def held_floors(inputs: Sequence[CycleInput], unknown: set[str]) -> dict[str, tuple[int, int]]:
    """host -> (the most quanta its processes held at once, the cycle it held them)."""
    out: dict[str, tuple[int, int]] = {h: (0, 0) for h in unknown}
    for inp in inputs:
        used: Counter[str] = Counter()
        for w in inp.work:
            for s in w.shares:
                if s.host in unknown:
                    used[s.host] += s.order
        for host, q in used.items():
            if q > out[host][0]:
                out[host] = (q, inp.cycle)
    return out


def reserved_orders(inputs: Sequence[CycleInput], unknown: set[str],
                    counted: Mapping[int, str] | None = None) -> dict[str, int]:
    """host -> the order of a reservation it held: a reservation takes a machine of exactly its
    order (NodePool.findMachines); `counted` as evidence.policies reads it."""
    out = {}
    for inp in inputs:
        policy = policies(inp, counted)
        for w in inp.work:
            if policy[w.job_id] == RESERVE:
                out.update({s.host: s.order for s in w.shares if s.host in unknown})
    return out


def candidate_orders(cycles: Sequence[CycleEvidence], known_orders: Iterable[int], maxorder: int) -> list[int]:
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
                    # the RM counts at 0 only a machine smaller than a quantum, never a full one
                    out.update(free + h for h in held) if free else out.add(0)
    return known + sorted(o for o in out - set(known) if 0 <= o <= maxorder)


def alike_groups(cycles: Sequence[CycleEvidence], hosts: Mapping[str, Host], floors: Mapping[str, tuple[int, int]],
                 reserved: Mapping[str, int], orders: Sequence[int]) -> list[Group]:
    """The unseen machines grouped by what they show in every clean cycle (pool, floor, reserved
    order, liveness and non-preemptable processes): interchangeable in the equations."""
    clean = [c for c in cycles if c.clean]
    by_sig: dict[tuple[str, int, int | None, tuple[Seen | None, ...]], list[str]] = {}
    for name in hosts:
        sig = (hosts[name].nodepool, floors[name][0], reserved.get(name), tuple(c.seen.get(name) for c in clean))
        by_sig.setdefault(sig, []).append(name)
    return [Group(tuple(names), pool, floor,
                   (exact,) if exact is not None else _orders_from(orders, floor, seen))
            for (pool, floor, exact, seen), names in by_sig.items()]


def _orders_from(orders: Sequence[int], floor: int, seen: Sequence[Seen | None]) -> tuple[int, ...]:
    """The candidate orders at or above a group's floor, and the floor itself where its
    non-preemptable processes fill it: such a machine has no free space, so the RM's counters leave
    it out, and no residual names that order (the counters it is absent from are its evidence)."""
    full = floor > 0 and any(s is not None and s.np_shares and free_space(floor, s.np_shares) == 0 for s in seen)
    above = tuple(o for o in orders if o >= floor)  # (in the candidates' order: the known machines' first)
    return above + ((floor,) if full and floor not in above else ())


def state_equations(cycles: Sequence[CycleEvidence], groups: Sequence[Group],
                    pools: PoolTree) -> list[State]:
    """The equations of every clean cycle state, with the number of cycles in that state (most
    first): for each counter and free size, the residual the groups must fill and the (group,
    order) counts that fill it. Cycles in the same state but with other residuals contradict each
    other: the state's most common residual is kept (the others fail the check of every cycle)."""
    states: dict[tuple[tuple[Seen | None, ...], tuple[str | None, ...]], Counter[tuple[tuple[int, ...], ...]]] = {}
    for c in cycles:
        if c.clean:
            key = (tuple(c.seen.get(g.hosts[0]) for g in groups), tuple(c.scopes))
            states.setdefault(key, Counter())[tuple(tuple(r) for r in c.residual)] += 1
    out: list[State] = []
    for (seen, scopes), residuals in states.items():
        residual, support = residuals.most_common(1)[0]
        equations: list[Equation] = []  # (target, {(group index, order): 1})
        for scope, r in zip(scopes, residual):
            terms: dict[int, dict[tuple[int, int], int]] = {}
            for gi, g in enumerate(groups):
                s = seen[gi]
                if s is None or not s.schedulable or scope is None or not pools.covers(scope, g.pool):
                    continue
                for o in g.orders:
                    free = free_space(o, s.np_shares)
                    if (0 < free or o == 0) and free < len(r):  # (as evidence.histogram counts)
                        terms.setdefault(free, {})[(gi, o)] = 1
            equations += [(r[free], terms.get(free, {})) for free in range(len(r)) if r[free] or free in terms]
        out.append((support, equations))
    return sorted(out, key=lambda state: -state[0])


def distinct(equations: Iterable[Equation]) -> list[Equation]:
    """The equations without repeats (the same target over the same terms)."""
    return list({(t, tuple(sorted(k))): (t, k) for t, k in equations}.values())


class Solved(NamedTuple):
    """`solve`'s counts, the equations they fit, and whether the search stopped at its limit."""

    counts: list[Counts]
    equations: list[Equation]
    cut_short: bool


def solve(groups: Sequence[Group], states: Sequence[State]) -> Solved:
    """The counts that fit every state's equations; when none does (a state the others
    contradict), the counts that fit the most-seen states that fit together (greedily), without
    the groups of several possible orders none of those states counts (their orders left
    unknown: nothing kept tells them); none where no state fits at all."""
    every = distinct(eq for _, eqs in states for eq in eqs)
    solutions = solve_counts(groups, every)
    if solutions or not states:
        return Solved(solutions, every, len(solutions) >= MAX_SOLUTIONS)
    kept: list[Equation] = []
    for _support, eqs in states:
        if solve_counts(groups, distinct([*kept, *eqs]), limit=1):
            kept += eqs
    if not kept:
        return Solved([], [], False)
    told = {gi for _t, terms in kept for gi, _o in terms}
    loose = {gi for gi, g in enumerate(groups) if gi not in told and len(g.orders) > 1}
    found = solve_counts(groups, distinct(kept))
    out: list[Counts] = []
    for counts in found:
        fixed = {v: n for v, n in counts.items() if v[0] not in loose}
        if fixed not in out:
            out.append(fixed)
    return Solved(out, distinct(kept), len(found) >= MAX_SOLUTIONS)


def possible_orders(groups: Sequence[Group], equations: Sequence[Equation],
                    found: Iterable[Counts]) -> dict[int, set[int]]:
    """group index -> every order one of its machines has in some count that fits `equations`:
    those of the counts `found`, and each other one a search with one machine of the group set to
    it still fits (`found` stops at MAX_SOLUTIONS; a truncated list is no measure of what the
    log leaves open)."""
    out: dict[int, set[int]] = {gi: set() for gi in range(len(groups))}
    for counts in found:
        for (gi, o), n in counts.items():
            if n:
                out[gi].add(o)
    for gi, g in enumerate(groups):
        fewer = [replace(x, hosts=x.hosts[1:]) if i == gi else x for i, x in enumerate(groups)]
        for o in g.orders:
            if o in out[gi]:
                continue
            less = [(t - terms.get((gi, o), 0), terms) for t, terms in equations]
            if all(t >= 0 for t, _ in less) and solve_counts(fewer, less, limit=1):
                out[gi].add(o)
    return out


def solve_counts(groups: Sequence[Group], equations: Iterable[Equation], limit: int = MAX_SOLUTIONS) -> list[Counts]:
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
    solutions: list[Counts] = []

    def room(v: tuple[int, int]) -> int:
        return min(residual[k] for k in rows_of[v])

    def pick() -> tuple[tuple[int, int], range] | None:
        best: tuple[tuple[int, int], Var] | None = None
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

