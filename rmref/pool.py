"""A nodepool's capacity tables, indexed by share order (seed 000, "NodePool").

n_machines[o]: whole free machines of order o; v_machines[o]: partly used ("virtual") machines
with o free quanta; n_shares[o]: how many processes of order o could still be carved out of
all of them, splitting bigger free spaces (the tables How Much and What Of both read).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def n_shares_by_order(n_machines: np.ndarray, v_machines: np.ndarray) -> np.ndarray:
    """nSharesByOrder from the two machine tables: a free space of order p holds p // o shares of order o."""
    free = (n_machines + v_machines).astype(np.int64)
    orders = np.arange(len(free))
    shares = free.copy()
    for o in range(1, len(free)):
        bigger = orders > o
        shares[o] += int(((orders[bigger] // o) * free[bigger]).sum())
    return shares


@dataclass(frozen=True)
class PoolTables:
    """The two machine tables of one nodepool (immutable; allocation returns new tables)."""

    n_machines: np.ndarray
    v_machines: np.ndarray

    @classmethod
    def from_free(cls, machines: list[tuple[int, int]], max_order: int) -> PoolTables:
        """From (machine order, free quanta) pairs: wholly free machines count as real, others as virtual."""
        n = np.zeros(max_order + 1, dtype=np.int64)
        v = np.zeros(max_order + 1, dtype=np.int64)
        for order, free in machines:
            if free == order:
                n[order] += 1
            elif free > 0:
                v[free] += 1
        return cls(n, v)

    @property
    def n_shares(self) -> np.ndarray:
        """nSharesByOrder."""
        return n_shares_by_order(self.n_machines, self.v_machines)

    def allocate(self, machine_order: int, free: int, order: int) -> PoolTables:
        """The tables after placing one process of `order` on a machine with `free` of `machine_order` quanta."""
        if order > free:
            raise ValueError(f"an order-{order} process does not fit in {free} free quanta")
        n, v = self.n_machines.copy(), self.v_machines.copy()
        if free == machine_order:
            n[machine_order] -= 1
        else:
            v[free] -= 1
        if free - order > 0:  # the rest of the machine becomes a smaller virtual machine
            v[free - order] += 1
        return PoolTables(n, v)
