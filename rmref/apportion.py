"""How Much: weighted fair share of quantum shares among entities (NodepoolScheduler.apportion_qshares).

The same counter runs three times per band: classes of a nodepool compete for its free machines,
users of a class for the class's award, jobs of a user for the user's award. The logged RmCounter
block (replay's `rmcounter` table) is exactly this function's input: entities in apportionment
order, weights, wanted processes by share order, and the resource vector ("vmachines").

Each pass, every entity *deserves* weight/total of the remaining quantum shares; then, from the
largest order down, each entity that wants processes of that order takes its weighted part (at
least one process), capped by what it still deserves this pass. Passes repeat while anything is
given. A last "bonus" round hands out what rounding left behind, one process per entity per turn.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from rmref.constants import UNLIMITED
from rmref.pool import n_shares_listed, remove_shares


@dataclass(frozen=True)
class Entity:
    """One competitor: a class, a user or a job."""

    name: str
    weight: int
    wanted: tuple[int, ...]  # processes wanted by share order; index 0 is the total
    order: int = 0  # a job's share order (a job can use a bonus process only of its own order)
    cap: int = UNLIMITED  # calculateCap(): classes' fair-share cap in quantum shares; none for users and jobs


@dataclass(frozen=True)
class Apportionment:
    """Processes given to each entity by share order (index 0 is the total), in entity order."""

    given: dict[str, tuple[int, ...]]
    vmachines_left: tuple[int, ...]


def _can_use_bonus(e: Entity, wanted: Sequence[int], given: Mapping[str, Sequence[int]], order: int,
                   pool_shares: np.ndarray | None) -> bool:
    """Whether one more process of `order` is usable (canUseBonus of a class, user or job)."""
    mine = given[e.name]
    if wanted[order] <= 0 or mine[0] >= e.cap:
        return False
    if e.order and order != e.order:  # a job: only processes of its own size
        return False
    if pool_shares is not None:  # a class: only while its nodepool has such shares not yet counted out
        return int(pool_shares[order]) - sum(int(g[order]) for g in given.values()) > 0
    return True


def _java_div(a: int, b: int) -> int:
    """a / b as Java's int division computes it (truncated towards zero, unlike Python's //)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


BonusRule = Callable[[Entity, int, Sequence[int], Mapping[str, Sequence[int]]], bool]


def apportion(entities: Sequence[Entity], vmachines: Sequence[int],
              pool_shares: Sequence[int] | None = None) -> Apportionment:
    """Weighted fair share of the resource vector among the entities (given in apportionment order).

    `pool_shares` marks the entities as the classes of a nodepool with that nSharesByOrder (it
    limits their bonus processes); leave it out for users and jobs.
    """
    pool = None if pool_shares is None else np.array(pool_shares, dtype=np.int64)

    def bonus_ok(e: Entity, order: int, wanted: Sequence[int], kept: Mapping[str, Sequence[int]]) -> bool:
        return _can_use_bonus(e, wanted, kept, order, pool)

    return apportion_nested(entities, vmachines, {}, bonus_ok)


def apportion_nested(entities: Sequence[Entity], vmachines: Sequence[int],
                     earlier: Mapping[str, Sequence[int]], bonus_ok: BonusRule) -> Apportionment:
    """The counter for classes counted again higher up the nodepool tree (and, with no `earlier`, for anything).

    A class already counted in a subpool keeps that award (ResourceClass.setGivenByOrder ignores a
    second array): the passes below still run for it, and still use up the vector, but what they
    give it is dropped; only the bonus round adds to the award it already has. `earlier` holds
    those awards, `bonus_ok(entity, order, still wanted, awards so far)` is canUseBonus.
    """
    # plain lists of ints, not numpy arrays: the vectors are short (one slot per share order)
    # and read element by element, where a numpy scalar costs ten times a Python int
    vmach = list(map(int, vmachines))
    nshares = n_shares_listed(vmach)
    maxorder = len(vmach) - 1
    wanted = {e.name: list(map(int, e.wanted)) for e in entities}
    given = {e.name: [0] * len(vmach) for e in entities}
    # the award each entity keeps: the earlier one when there is one, else this count's
    kept = {e.name: list(map(int, earlier[e.name])) if e.name in earlier else given[e.name] for e in entities}
    # by position from here on (a count's names are unique: the classes of a pool, users, jobs),
    # which spares the inner loop four lookups by name per entity and order
    want = [wanted[e.name] for e in entities]
    got = [given[e.name] for e in entities]
    keep = [kept[e.name] for e in entities]
    weight = [e.weight for e in entities]
    cap = [e.cap for e in entities]
    working = list(range(len(entities)))
    shares_given = True
    while shares_given and working:
        shares_given = False
        allweights = sum(weight[i] for i in working)
        per_round = [0] * len(entities)  # quantum shares given this pass
        deserved = [0] * len(entities)
        for i in working:
            deserved[i] = math.floor(nshares[1] * (weight[i] / allweights))
        leftover = nshares[1] - sum(deserved[i] for i in working)
        for i in working:  # the rounding remainder: one more each, in entity order
            if leftover <= 0:
                break
            deserved[i] += 1
            leftover -= 1
        for o in range(maxorder, 0, -1):
            free = nshares[o]  # (counted out below only once every entity has had its turn)
            if free == 0:
                continue
            taken_here = 0
            for i in working:
                w, g = want[i], got[i]
                if w[o] == 0 or g[0] >= cap[i]:
                    continue
                room = max(0, deserved[i] - per_round[i])
                qgiven = min(room, math.ceil(free * (weight[i] / allweights) * o))
                # Java's int division truncates towards zero: over a negative free space (a table a
                # "bad virtual machine list" left below zero) the share is never rounded down further
                n = _java_div(qgiven, o)
                if qgiven - n * o > 0 and n == 0:
                    n = min(1, free)  # a fraction of a process rounds up to one
                if n + g[0] > cap[i]:
                    n = max(0, cap[i] - g[0])
                take = min(n, w[o], free - taken_here)
                g[o] += take
                g[0] += take
                w[o] -= take
                w[0] -= take
                taken_here += take
                per_round[i] += take * o
            if taken_here > 0:  # (a negative take, from a negative free space, is no progress)
                shares_given = True
            if taken_here:
                remove_shares(vmach, taken_here, o)
                nshares = n_shares_listed(vmach)
            # an entity that got all it deserves this pass stops diluting the others' share
            allweights -= sum(weight[i] for i in working if deserved[i] - per_round[i] <= 0)
            if allweights <= 0:
                break
        working = [i for i in working if want[i][0] > 0 and keep[i][0] < cap[i]]
        left = [o for o in range(1, maxorder + 1) if nshares[o] > 0]
        working = [i for i in working if any(want[i][o] > 0 for o in left)]
    bonus_given = True
    while nshares[1] > 0 and bonus_given:  # leftovers: one process per entity per turn
        bonus_given = False
        for e in entities:
            for o in range(maxorder, 0, -1):
                if vmach[o] > 0 and bonus_ok(e, o, wanted[e.name], kept):
                    kept[e.name][o] += 1
                    kept[e.name][0] += 1
                    remove_shares(vmach, 1, o)
                    nshares = n_shares_listed(vmach)
                    bonus_given = True
    return Apportionment({e.name: tuple(kept[e.name]) for e in entities}, tuple(vmach))
