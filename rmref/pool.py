"""A nodepool's capacity tables, indexed by share order (NodePool's arrays, NodePool.reset, calcNSharesByOrder).

nMachinesByOrder[o]: whole free machines of order o; vMachinesByOrder[o]: partly used
("virtual") machines with o free quanta; nSharesByOrder[o]: how many processes of order o could
still be carved out of all of them, splitting bigger free spaces. How Much counts on these
tables, and every count-out changes them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from rmref.model import Machine


@lru_cache(maxsize=None)
def _split_matrix(size: int) -> np.ndarray:
    """S[o, p] = p // o for p > o: how many order-o processes a free space of order p holds."""
    split = np.zeros((size, size), dtype=np.int64)
    for o in range(1, size):
        split[o, o + 1:] = np.arange(o + 1, size) // o
    return split


def n_shares_by_order(free: np.ndarray) -> np.ndarray:
    """nSharesByOrder of a free-space vector (free[o]: spaces of o quanta, whole or partly used machines)."""
    shares: np.ndarray = free + _split_matrix(len(free)) @ free
    return shares


def n_shares_listed(free: Sequence[int]) -> list[int]:
    """n_shares_by_order of a list, as a list, for a counter that reads it element by element."""
    return list(_n_shares_of(tuple(free)))


@lru_cache(maxsize=1 << 12)
def _n_shares_of(free: tuple[int, ...]) -> tuple[int, ...]:
    # only the sizes present are split: a free-space vector has a slot for every order and few
    # filled; the same vectors recur from pass to pass and cycle to cycle
    out = list(free)
    for p, n in enumerate(free):
        if n and p > 1:
            for o in range(1, p):
                out[o] += (p // o) * n
    return tuple(out)


def remove_shares(vmach: np.ndarray | list[int], count: int, order: int) -> None:
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
    if count < 0:  # a negative take (over a negative free space) splits nothing (doShareSplits needs count > 0)
        return
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


@dataclass
class PoolTables:
    """One nodepool's counting tables (mutable scratch state of one cycle): whole free machines
    and partly used ones, by free quanta, with the pool's subpools."""

    name: str
    search_order: int
    n: list[int]  # nMachinesByOrder
    v: list[int]  # vMachinesByOrder
    machines: list[Machine] = field(default_factory=list)  # its own machines (not its subpools')
    children: list[PoolTables] = field(default_factory=list)  # HashMap order (by name)
    preemptable: set[str] = field(default_factory=set)  # machines set aside for reservations this cycle
    # nSharesByOrder as the RM last computed it, where a rearrangeVirtual that stopped on a bad
    # machine list lowered the tables without computing it again (None: it follows the tables)
    frozen: np.ndarray | None = None

    def ascending(self) -> list[PoolTables]:
        """getChildrenAscending: subpools by search order (ties keep the map order)."""
        return sorted(self.children, key=lambda p: p.search_order)

    def subtree(self) -> list[PoolTables]:
        """This pool and every pool below it."""
        return [self] + [p for c in self.children for p in c.subtree()]

    def local_nshares(self) -> np.ndarray:
        """nSharesByOrder of this pool alone."""
        if self.frozen is not None:
            return self.frozen
        return n_shares_by_order(np.array(self.n, dtype=np.int64) + np.array(self.v, dtype=np.int64))

    def freeze(self) -> None:
        """The tables are about to change without nSharesByOrder being computed again."""
        if self.frozen is None:
            self.frozen = self.local_nshares()

    def vmachines(self) -> list[int]:
        """cloneVMachinesByOrder: free spaces of this pool and all its subpools."""
        return [sum(p.n[o] + p.v[o] for p in self.subtree()) for o in range(len(self.n))]

    def count_out(self, order: int, wanted: int) -> int:
        """countOutNSharesByOrder: take `wanted` processes of `order`, from here first, then the subpools."""
        self.frozen = None  # it computes nSharesByOrder again
        given, low, top = 0, order, len(self.n) - 1
        while given < wanted and low <= top:
            if self.v[low] + self.n[low] > 0:
                if self.v[low] > 0:  # partly used machines go first
                    self.v[low] -= 1
                else:
                    self.n[low] -= 1
                given += 1
                rest = low - order
                if rest > 0:
                    self.v[rest] += 1
                    low = max(rest, order)
            else:
                low += 1
        for child in self.children:
            if given >= wanted:
                break
            given += child.count_out(order, wanted - given)
        return given
