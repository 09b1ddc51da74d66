"""Machines the counters count but no line of the log names.

A machine that holds no process, never dies, is never varied off or on and is never listed
(INFO logs print no heartbeats) is named only by its arrival. A log that starts mid-stream, or
its part after a gap, may have lost that arrival: the machine is in the RM's tables all along,
and in every How Much counter that covers its pool, yet the inventory (replay.model.machines)
cannot hold it, for no line gives its name, and its pool only as far as the counters cover it.

A clean cycle's first-band counters are exactly the free-size histogram of the schedulable
machines (replay.model.machines.evidence): when they count more machines than the named ones
(sized, or unsized: at most one each) can fill, the difference is machines no line names. rmref
would run every phase that reads the machines without them (How Much dividing less free space,
What Of and defragmentation missing their room), so every cycle of the log, or of its part, is
audited only for what does not read the machines.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from replay.model.machines.evidence import CycleEvidence, PoolTree


@dataclass(frozen=True)
class Unnamed:
    """The first clean cycle whose counters count machines no line names, and what they count."""

    cycle: int
    cycles: int  # the clean counters of `scope` that show them (of `clean`)
    clean: int
    scope: str  # the pool whose counter shows them (it covers the pool and its subpools)
    sizes: tuple[tuple[int, int], ...]  # (free quanta, machines) counted beyond the named machines

    def text(self) -> str:
        """Why the machines of every cycle are not known, as the audit prints it."""
        sizes = ", ".join(f"{k} with {free} free quanta" for free, k in self.sizes)
        return (f"the RmCounter vmachines count machines no line of the log names (nodepool {self.scope}'s count "
                f"in cycle {self.cycle} has {sizes} beyond the named ones; {self.cycles} of its {self.clean} counts "
                "in clean cycles show such machines): their arrival is not in the log (it starts mid-stream, or "
                "after a gap), so rmref's machines would lack them")


def unnamed_machines(cycles: Sequence[CycleEvidence], pools: PoolTree) -> Unnamed | None:
    """The machines no line names, as the first clean cycle that shows them counts them (None:
    none shown). A counter shows them when it counts more machines than the named ones can be (the
    residual less one machine per schedulable unsized machine it covers). Such a machine holds
    nothing and never changes state, so most clean counters of its pool's scope show it: a few that
    count a machine too many are those cycles' own (`_unsettled`), not machines no line names."""
    shown: dict[str, list[tuple[int, tuple[tuple[int, int], ...]]]] = {}
    total: Counter[str] = Counter()
    for c in cycles:
        if not c.clean:
            continue
        for scope, residual in zip(c.scopes, c.residual):
            if scope is None:
                continue
            total[scope] += 1
            room = sum(1 for h, s in c.seen.items() if s.schedulable and pools.covers(scope, _pool(c, h)))
            if sum(residual[1:]) > room:
                shown.setdefault(scope, []).append(
                    (c.inp.cycle, tuple((f, k) for f, k in enumerate(residual) if f and k > 0)))
    held = [(found[0], scope, len(found)) for scope, found in shown.items() if 2 * len(found) > total[scope]]
    if not held:
        return None
    (cycle, sizes), scope, n = min(held)
    return Unnamed(cycle, n, total[scope], scope, sizes)


def _pool(c: CycleEvidence, host: str) -> str:
    return next(m.nodepool for m in c.inp.machines if m.name == host)
