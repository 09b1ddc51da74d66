"""A cycle whose decisions diverge on machines whose order the log leaves open, run again on the others.

On a log that starts mid-stream the replay takes an order for a node no line sizes, and where the
counters fit several (nodes alike in every counter, or inferences that fit as well:
`Host.alike`, `Host.rivals`) the one taken is an assumption. A decision that diverges under it
may be the assumption's, not the RM's: where another order the inference allows makes rmref
make every decision the RM logged in the cycle, the cycle's machine-dependent decisions rest on
input the log does not give, a verdict of its own (the audit leaves them out and says why).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations

from replay.model.machines.inventory import Inventory
from rmref.model import CycleInput

MAX_TRIALS = 24  # the most other assignments tried on one cycle (each runs the cycle again)


@dataclass(frozen=True)
class OpenOrder:
    """A schedulable machine of the cycle whose order the replay took of several the log allows."""

    host: str
    taken: int
    options: tuple[int, ...]
    pool: str = ""  # the deepest nodepool it belongs to
    root: str = ""  # its top-level nodepool: the one whose counters count it


def open_orders(inventory: Inventory, inp: CycleInput) -> tuple[OpenOrder, ...]:
    """The cycle's schedulable machines whose order was taken of several (a machine an arrival has
    sized since, whose order then differs from the one taken, is not among them)."""
    hosts = {h.name: h for h in inventory.hosts if h.alike or h.rivals}
    parents = {p.name: p.parent for p in inp.nodepools}
    out = []
    for m in inp.machines:
        h = hosts.get(m.name)
        options = tuple(sorted({*h.alike, *h.rivals})) if h is not None else ()
        if h is not None and m.online and h.order == m.order and len(options) > 1:
            out.append(OpenOrder(m.name, m.order, options, m.nodepool, _root(m.nodepool, parents)))
    return tuple(out)


def _root(pool: str, parents: Mapping[str, str | None]) -> str:
    seen = {pool}
    while (up := parents.get(pool)) is not None and up not in seen:
        pool = up
        seen.add(pool)
    return pool


def trials(opens: Sequence[OpenOrder]) -> list[dict[str, int]]:
    """Other orders to try, those that keep the counters' tally of each order first: two machines
    trading orders, then one machine of another order it may have; then, past those, each
    nodepool's open machines taking the smallest or the largest of the orders taken under their
    top-level pool (`by_pool`)."""
    out = [{a.host: b.taken, b.host: a.taken} for a, b in combinations(opens, 2)
           if a.taken != b.taken and a.taken in b.options and b.taken in a.options]
    out += [{o.host: k} for o in opens for k in o.options if k != o.taken]
    first = out[:MAX_TRIALS]
    return first + [t for t in by_pool(opens) if t not in first]


def by_pool(opens: Sequence[OpenOrder]) -> list[dict[str, int]]:
    """Orders that move the open machines' sizes from one nodepool to another under the same
    top-level pool, keeping their tally: a top-level pool's counters count its subpools' machines
    with its own, so which pool holds which of the sizes they count only the decisions tell (a
    fixed-share request deferred in a subpool for want of a machine big enough, where the orders
    taken give it the big ones). Each pool's machines take the smallest, or the largest, of the
    orders, the others the rest, each set in the order its machines were taken in; where a machine
    cannot have the order this gives it, no trial."""
    out: list[dict[str, int]] = []
    for root in sorted({o.root for o in opens}):
        under = sorted((o for o in opens if o.root == root), key=lambda o: (o.taken, o.host))
        tally = sorted(o.taken for o in under)
        for pool in sorted({o.pool for o in under}):
            mine = [o for o in under if o.pool == pool]
            rest = [o for o in under if o.pool != pool]
            if not rest:
                continue
            for smallest in (True, False):
                ours = tally[:len(mine)] if smallest else tally[len(tally) - len(mine):]
                theirs = tally[len(mine):] if smallest else tally[:len(tally) - len(mine)]
                given = {**dict(zip((o.host for o in mine), ours)), **dict(zip((o.host for o in rest), theirs))}
                if any(given[o.host] not in o.options for o in under):
                    continue
                changed = {o.host: given[o.host] for o in under if given[o.host] != o.taken}
                if changed and changed not in out:
                    out.append(changed)
    return out


def with_orders(inp: CycleInput, orders: Mapping[str, int]) -> CycleInput:
    """The cycle's input with these machines of these orders (an unstated memory follows its order:
    order x quantum, as the inventory takes it)."""
    mb = inp.config.quantum_gb * 1024
    return replace(inp, machines=tuple(
        replace(m, order=orders[m.name], memory_mb=m.memory_mb if m.memory_stated else orders[m.name] * mb)
        if m.name in orders else m for m in inp.machines))


def rests_on_open_orders(inp: CycleInput, opens: Sequence[OpenOrder],
                         agrees: Callable[[CycleInput], bool]) -> str | None:
    """Why the cycle's machine-dependent decisions rest on orders the log leaves open, or None:
    with other orders it allows (`trials`), rmref makes every decision the RM logged (`agrees`,
    the cycle run again on that input)."""
    taken = {o.host: o for o in opens}
    for orders in trials(opens):
        if agrees(with_orders(inp, orders)):
            assumed = ", ".join(f"{h} (taken as order {taken[h].taken}, of {' or '.join(map(str, taken[h].options))})"
                                for h in sorted(orders))
            other = " and ".join(f"{h} of order {k}" for h, k in sorted(orders.items()))
            return (f"the cycle's decisions on the machines rest on orders the log leaves open: {assumed}; with "
                    f"{other}, which the inference allows as well, rmref makes every decision the RM logged in it")
    return None
