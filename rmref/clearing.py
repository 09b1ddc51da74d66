"""The clearing step: which machines set aside for reservations setupPreemptions empties
(NodePool.findMachines, in What Of), from How Much's record of them (`HowMuch.set_aside`).

    How Much (set_aside) -> What Of -> clearing (the machines to empty) -> doEvictions

In the RM, How Much's countFreeableMachines sets busy machines aside for a reservation, and What
Of's findMachines, on reaching the reservation, counts the free machines of its size and asks
setupPreemptions to empty set-aside machines only for what those leave short. rmref runs it as
a step of its own, between What Of and the evictions, so each phase can be swapped alone
(`rmref.cycle.Phases.clearing`, shape `rmref.phases.ClearingPhase`).

The free machines each reservation finds are a state inside What Of's walk, not one of its
outputs (placements): `clearing` works them out with rmref's own What Of walk
(`rmref.whatof.free_at_find_machines`), whichever What Of the cycle ran. A developer who swaps
What Of so that reservations find other free machines swaps this step too; one that reads the
swapped walk's placements (passed as `placements`) can take a reservation's shortfall as its
`SetAside.wanted` less its new processes, since findMachines places on the free machines it finds.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from rmref.evictions import clearing_evictions, purged_shares
from rmref.howmuch_state import SetAside, met_first
from rmref.javahash import node_map_order
from rmref.model import CycleInput, Placement
from rmref.trees import trees
from rmref.whatof import free_at_find_machines


def clearing(inp: CycleInput, counts: Mapping[int, int], set_aside: Sequence[SetAside],
             placements: Sequence[Placement] = (), /, *, stale_left: Mapping[str, int] | None = None,
             cleared_first: Sequence[str] = ()) -> tuple[str, ...]:
    """The machines setupPreemptions empties, of those How Much set aside (`set_aside`), in order.

    findMachines asks setupPreemptions, per reservation, only when the free machines of its size
    fall short of what was counted, for the shortfall (before 2.1.0 countFreeableMachines may set a
    busy machine aside while a free one remains: nothing is then cleared). The free machines are
    those rmref's What Of walk leaves when it reaches the reservation, on `counts` and `stale_left`
    (How Much's, as What Of takes them; the passes before, and earlier reservations, may have taken
    some): `rmref.whatof.free_at_find_machines`, not the What Of that produced `placements`, which
    this function does not read (see the module's note for a developer swapping What Of).
    setupPreemptions walks the pool's preemptables (a HashMap on the node), every machine set aside
    there, whoever it was set aside for, for machines of the request's order. But the RM reuses the
    order variable for each share it evicts, so after a machine where it evicted a share it looks
    for machines of that share's order: machines of the request's size are skipped unless the last
    share evicted filled one. A machine where it evicted nothing (every share's job holds no more
    than it was counted: Share.isPreemptable) leaves the order as it was. (Which share is last is a
    HashMap walk over random ids; when the evicted shares differ in size the largest is taken.)
    Before 2.2.0 (behaviour `clearing_order_per_share`, UIMA-5086) the
    order stays the request's: every machine set aside of that size is cleared, up to the shortfall.
    `cleared_first` are the machines the RM cleared, taken first where
    the node-map order is open (rmref.choices), as How Much's walk takes them.
    """
    parts = trees(inp)
    if len(parts) == 1:
        return tuple(_clear_tree(inp, counts, list(set_aside), stale_left, tuple(cleared_first)))
    cleared: list[str] = []
    for tree in parts:
        pools = {p.name for p in tree.nodepools}
        cleared += _clear_tree(tree, counts, [a for a in set_aside if a.pool in pools], stale_left,
                               tuple(cleared_first))
    return tuple(cleared)


def _clear_tree(inp: CycleInput, counts: Mapping[int, int], set_aside: list[SetAside],
                stale_left: Mapping[str, int] | None, cleared_first: tuple[str, ...]) -> list[str]:
    """`clearing` in one top-level pool tree (each tree's scheduler runs its own What Of)."""
    if not any(a.machines for a in set_aside):
        return []
    # the shares evicted so far this cycle, as setupPreemptions' shrinkByOne sees each job's count
    taken: dict[int, set[int]] = {}
    for w, s in purged_shares(inp):
        taken.setdefault(w.job_id, set()).add(s.share_id)
    found = free_at_find_machines(inp, counts, stale_left)
    per_share = inp.config.behaviours.has("clearing_order_per_share")
    cleared: list[str] = []
    for pool in dict.fromkeys(a.pool for a in set_aside):
        asked = [(a.order, a.wanted - found[a.job]) for a in set_aside
                 if a.pool == pool and a.job in found and a.wanted > found[a.job]]
        # it walks the pool's preemptables, which hold every machine set aside, whoever asked
        in_pool = [m for a in set_aside if a.pool == pool for m in a.machines]
        left = met_first(inp, node_map_order([(m.name, m.ip) for m in in_pool]), cleared_first)
        size = {m.name: m.order for m in in_pool}
        for order, short in asked:
            given = 0
            for name in list(left):
                if given >= short:
                    break
                if size[name] != order:
                    continue
                cleared.append(name)
                left.remove(name)
                given += 1
                evicted = clearing_evictions(inp, counts, [name], taken, {})
                if per_share and evicted:
                    order = max(e.order for e in evicted)
    return cleared
