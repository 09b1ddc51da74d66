"""The RM's free choices: where its input leaves an order open, the whole set of decisions it could make.

The RM walks some maps in an order no input settles (HashMaps keyed by random ids). Where such
an order decides a choice, the phase that makes it returns, beside its decision, what it found
equal: a `HostTie` (What Of: machines findShares met in an order the input leaves open), an
alternative in `rmref.defrag.Unsettled.alternatives` (takeFromTheRich: equally ranked shares) or
`rmref.defrag.Defrag.verdicts` (detectFragmentation: the tally orders the input allows). A caller
holding the RM's own decision checks it is one of them (`host_choice`), and can hand the RM's
pick back to the phase (`prefer`, `choose`, `serve`) so what follows in the cycle follows it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import permutations, product
from math import factorial

# The shares defragmentation cleared on one machine: (job, share id; 0 for a new process), sorted,
# a new process once for each (two new processes of one job on a machine are two entries)
Clearing = tuple[tuple[int, int], ...]

MAX_OPEN = 7  # at most this many items of open order are permuted (7! orders); beyond, no set is listed
# at most this many steps are taken walking the orders a round could meet (open_prefixes); beyond, no
# set is listed
MAX_STEPS = factorial(MAX_OPEN)


@dataclass(frozen=True)
class HostTie:
    """Machines findShares met, for one job, in an order its input does not settle."""

    job_id: int  # the job being placed
    hosts: tuple[str, ...]  # the equally free machines, in the order rmref met them
    got: tuple[int, ...]  # processes rmref gave the job on each
    walked_by: int  # the job whose process walk (a HashMap keyed by random ids) put them in that order
    # or, where they were last moved by fixed-share or reserved work, its class, whose job map (keyed
    # by random ids) accounting walks and no line lists
    walked_in: str = ""

    def admits(self, placed: Mapping[str, int]) -> bool:
        """Whether `placed` (processes per host) on these hosts is one way the walk could have gone."""
        return sorted(placed.get(h, 0) for h in self.hosts) == sorted(self.got)

    def ways(self) -> int:
        """How many different placements on these hosts the open order allows."""
        out = factorial(len(self.got))
        for n in set(self.got):
            out //= factorial(self.got.count(n))
        return out


def host_choice(ties: Sequence[HostTie], job: int, theirs: Mapping[str, int],
                ours: Mapping[str, int]) -> tuple[HostTie, ...] | None:
    """The ties of `job` that make the RM's processes per host (`theirs`) one of rmref's choices,
    or None when the RM's placement is not among them (some host outside a tie differs, or a
    tie's counts are not rmref's permuted)."""
    mine = [t for t in ties if t.job_id == job]
    free = {h for t in mine for h in t.hosts}
    if any(theirs.get(h, 0) != ours.get(h, 0) for h in set(theirs) | set(ours) if h not in free):
        return None
    used = tuple(t for t in mine if any(theirs.get(h, 0) != ours.get(h, 0) for h in t.hosts))
    return used if used and all(t.admits(theirs) for t in used) else None


def tie_groups(hosts: Sequence[str], key: Callable[[str], Hashable | None]) -> list[list[int]]:
    """Positions of `hosts` whose relative order is open: two or more with one equal, non-None key."""
    groups: dict[Hashable, list[int]] = {}
    for i, h in enumerate(hosts):
        k = key(h)
        if k is not None:
            groups.setdefault(k, []).append(i)
    return [g for g in groups.values() if len(g) > 1]


def met_order(hosts: Sequence[str], groups: Sequence[Sequence[int]], prefer: Mapping[str, int]) -> list[str]:
    """`hosts` with each open group's members reordered by `prefer` (rank; the unranked keep their
    order, after the ranked) in the positions the group holds."""
    out = list(hosts)
    if not prefer:
        return out
    for group in groups:
        members = [hosts[i] for i in group]
        ranked = sorted(range(len(members)), key=lambda k: (0, prefer[members[k]]) if members[k] in prefer else (1, k))
        for i, k in zip(group, ranked):
            out[i] = members[k]
    return out


def open_prefixes(n: int, settled: Container[tuple[int, int]], decided: Callable[[tuple[int, ...]], bool],
                  budget: int = MAX_STEPS) -> list[tuple[int, ...]] | None:
    """Every order of items 0..n-1 that keeps each `settled` pair (i, j), i < j, with i first, as far as
    `decided` needs it: each shortest prefix it holds of (or a whole order), completed by the other
    items in index order, in lexicographic order. None when the walk takes more than `budget` steps."""
    # only the prefix up to the point a choice is made matters: walking prefixes, not whole orders,
    # keeps a round with many shares of open order listable when it stops after a few of them
    before = [frozenset(x for x in range(y) if (x, y) in settled) for y in range(n)]
    out: list[tuple[int, ...]] = []
    steps = 0

    def walk(prefix: tuple[int, ...], placed: frozenset[int]) -> bool:
        nonlocal steps
        steps += 1
        if steps > budget:
            return False
        if len(prefix) == n or decided(prefix):
            out.append(prefix + tuple(i for i in range(n) if i not in placed))
            return True
        return all(walk((*prefix, y), placed | {y}) for y in range(n) if y not in placed and before[y] <= placed)

    return out if walk((), frozenset()) else None


def allowed_orders(orders: Mapping[str, Sequence[int]],
                   known: Container[tuple[int, int]] | None) -> list[dict[str, tuple[int, ...]]]:
    """Every assignment group -> order of its items (e.g. pool -> jobs) in which no item comes
    after one it is `known` to precede; [] without `known`, or when they are too many to list."""
    if known is None:
        return []
    per_group: list[list[tuple[int, ...]]] = []
    for items in orders.values():
        if len(items) > MAX_OPEN:
            return []
        per_group.append([p for p in permutations(items)
                          if not any((b, a) in known for i, a in enumerate(p) for b in p[i + 1:])])
    combos = 1
    for options in per_group:
        combos *= len(options)
    if combos > factorial(MAX_OPEN):
        return []
    return [dict(zip(orders, combo)) for combo in product(*per_group)]


def within(shares: Iterable[tuple[int, int]], clearing: Clearing) -> bool:
    """Whether every share is in the clearing, each at most as often as it is there."""
    return not Counter(shares) - Counter(clearing)


def rest(clearing: Clearing, done: Iterable[tuple[int, int]]) -> Clearing:
    """The clearing less the shares `done` (each as often as it is there)."""
    return tuple(sorted((Counter(clearing) - Counter(done)).elements()))
