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

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

UNLIMITED = 2147483647


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


@lru_cache(maxsize=None)
def _split_matrix(size: int) -> np.ndarray:
    """S[o, p] = p // o for p > o: how many order-o processes a free space of order p holds."""
    split = np.zeros((size, size), dtype=np.int64)
    for o in range(1, size):
        split[o, o + 1:] = np.arange(o + 1, size) // o
    return split


def shares_by_order(vmach: np.ndarray) -> np.ndarray:
    """nSharesByOrder of one free-space vector (rmref.pool.n_shares_by_order with no virtual machines, as one product)."""
    return vmach + _split_matrix(len(vmach)) @ vmach


def _remove_shares(vmach: np.ndarray, count: int, order: int) -> None:
    """Take `count` processes of `order` from the free-space vector, splitting bigger spaces."""
    if count == 0:
        return
    f = 1
    while f * order < len(vmach):  # first, spaces that are whole multiples of the order
        fo = f * order
        if vmach[fo] > 0:
            available = int(vmach[fo]) * f
            given = min(count, available)
            remaining = available - given
            vmach[fo] = (remaining * order) // fo
            if (remaining * order) % fo:
                vmach[(remaining * order) % fo] += 1
            count -= given
        if count == 0:
            return
        f += 1
    for o in range(order, len(vmach)):  # then split any space big enough
        while vmach[o] > 0:
            if count >= o // order:
                count -= o // order
                if o % order:
                    vmach[o % order] += 1
            else:
                vmach[o - count * order] += 1
                count = 0
            vmach[o] -= 1
            if count == 0:
                return


def _can_use_bonus(e: Entity, wanted: np.ndarray, given: Mapping[str, np.ndarray], order: int,
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


BonusRule = Callable[[Entity, int, np.ndarray, Mapping[str, np.ndarray]], bool]


def apportion(entities: Sequence[Entity], vmachines: Sequence[int],
              pool_shares: Sequence[int] | None = None) -> Apportionment:
    """Weighted fair share of the resource vector among the entities (given in apportionment order).

    `pool_shares` marks the entities as the classes of a nodepool with that nSharesByOrder (it
    limits their bonus processes); leave it out for users and jobs.
    """
    pool = None if pool_shares is None else np.array(pool_shares, dtype=np.int64)

    def bonus_ok(e: Entity, order: int, wanted: np.ndarray, kept: Mapping[str, np.ndarray]) -> bool:
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
    vmach = np.array(vmachines, dtype=np.int64)
    nshares = shares_by_order(vmach)
    maxorder = len(vmach) - 1
    wanted = {e.name: np.array(e.wanted, dtype=np.int64) for e in entities}
    given = {e.name: np.zeros(len(vmach), dtype=np.int64) for e in entities}
    # the award each entity keeps: the earlier one when there is one, else this count's
    kept = {e.name: np.array(earlier[e.name], dtype=np.int64) if e.name in earlier else given[e.name]
            for e in entities}
    working = list(entities)
    shares_given = True
    while shares_given and working:
        shares_given = False
        allweights = sum(e.weight for e in working)
        per_round = {e.name: 0 for e in working}  # quantum shares given this pass
        deserved = {e.name: int(np.floor(nshares[1] * (e.weight / allweights))) for e in working}
        leftover = int(nshares[1]) - sum(deserved.values())
        for e in working:  # the rounding remainder: one more each, in entity order
            if leftover <= 0:
                break
            deserved[e.name] += 1
            leftover -= 1
        for o in range(maxorder, 0, -1):
            if nshares[o] == 0:
                continue
            taken_here = 0
            for e in working:
                w, g = wanted[e.name], given[e.name]
                if w[o] == 0 or g[0] >= e.cap:
                    continue
                room = max(0, deserved[e.name] - per_round[e.name])
                qgiven = min(room, int(np.ceil(nshares[o] * (e.weight / allweights) * o)))
                n = qgiven // o
                if qgiven % o and n == 0:
                    n = min(1, int(nshares[o]))  # a fraction of a process rounds up to one
                if n + g[0] > e.cap:
                    n = max(0, e.cap - int(g[0]))
                take = min(n, int(w[o]), int(nshares[o]) - taken_here)
                g[o] += take
                g[0] += take
                w[o] -= take
                w[0] -= take
                taken_here += take
                per_round[e.name] += take * o
            if taken_here:
                shares_given = True
                _remove_shares(vmach, taken_here, o)
                nshares = shares_by_order(vmach)
            # an entity that got all it deserves this pass stops diluting the others' share
            allweights -= sum(e.weight for e in working if deserved[e.name] - per_round[e.name] <= 0)
            if allweights <= 0:
                break
        working = [e for e in working if wanted[e.name][0] > 0 and kept[e.name][0] < e.cap]
        working = [e for e in working if any(wanted[e.name][o] > 0 and nshares[o] > 0 for o in range(1, maxorder + 1))]
    bonus_given = True
    while nshares[1] > 0 and bonus_given:  # leftovers: one process per entity per turn
        bonus_given = False
        for e in entities:
            for o in range(maxorder, 0, -1):
                if vmach[o] > 0 and bonus_ok(e, o, wanted[e.name], kept):
                    kept[e.name][o] += 1
                    kept[e.name][0] += 1
                    _remove_shares(vmach, 1, o)
                    nshares = shares_by_order(vmach)
                    bonus_given = True
    return Apportionment({e.name: tuple(int(x) for x in kept[e.name]) for e in entities},
                         tuple(int(x) for x in vmach))
