"""What the node IPs a log does not show could change in What Of (rmref.whatof): whether the RM's
hosts differ from rmref's only by the order of machines alike but for their IPs, and IPs under
which What Of reproduces the RM's hosts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from rmref.model import CycleInput
from rmref.node_order import ORDER_BUDGET, order_reproducing
from rmref.whatof import start_walk

_Row = tuple[int, ...]


def unlogged_node_order(inp: CycleInput, theirs: Mapping[int, Sequence[str]], ours: Mapping[int, Sequence[str]],
                        job: int, earlier: Sequence[tuple[str, int]] = (),
                        stale_left: Mapping[str, int] | None = None) -> bool:
    """Whether the RM's hosts for `job` (`theirs[job]`, one per process) differ from rmref's
    (`ours[job]`) only by the order of machines the log cannot tell apart, on a release whose log
    shows no node IP (behaviour node_ip_logged absent) and with no IP known for them.

    findShares walks the machines of one free space in the order of a node map hashed on each
    node's name and IP. So it holds when either the RM's whole cycle is rmref's with machines
    relabelled among those that began it alike (one pool, one free space), or this job's hosts are
    rmref's relabelled among machines alike at its turn: the cycle's start less `earlier`, the
    processes (host, order) placed before it. `stale_left`: What Of's input (rmref.whatof.start_walk).
    """
    mine, rm = list(ours.get(job, ())), list(theirs.get(job, ()))
    if inp.config.behaviours.has("node_ip_logged") or Counter(mine) == Counter(rm):
        return False
    walk = start_walk(inp, stale_left)
    hosts = {h for placed in (*theirs.values(), *ours.values()) for h in placed}
    if not hosts <= walk.machines.keys() or any(walk.machines[h].ip for h in hosts):
        return False

    def alike(free: Mapping[str, int], placed: Mapping[int, Sequence[str]]) -> dict[tuple[str, int], list[_Row]]:
        """Per (pool, free space): each machine's processes per job, sorted (a relabelling keeps it)."""
        counts = {j: Counter(p) for j, p in placed.items()}
        jobs = sorted(set(theirs) | set(ours))
        out: dict[tuple[str, int], list[_Row]] = {}
        for h in sorted(walk.machines):  # every machine: one left empty is a relabelling target too
            out.setdefault((walk.machines[h].nodepool, free.get(h, 0)), []).append(
                tuple(counts[j][h] if j in counts else 0 for j in jobs))
        return {k: sorted(v) for k, v in out.items()}

    if alike(walk.free, theirs) == alike(walk.free, ours):
        return True
    at_turn = dict(walk.free)
    for host, order in earlier:
        if host in at_turn:
            at_turn[host] -= order
    return alike(at_turn, {job: rm}) == alike(at_turn, {job: mine})


def ips_reproducing(inp: CycleInput, counts: Mapping[int, int], theirs: Mapping[int, Sequence[str]],
                    budget: int = ORDER_BUDGET, *,
                    stale_left: Mapping[str, int] | None = None) -> dict[str, str] | None:
    """Node IPs under which What Of puts every job's new processes on the RM's hosts (`theirs`, one
    host per process), on a release whose log shows no node IP; None when the log has them or the
    search finds none. A find proves the RM's choice is one its code makes for some IPs the log does
    not show. The search (rmref.node_order.order_reproducing) is over the machines' order in the
    node maps, deterministic, and runs What Of at most `budget` times.
    `stale_left`: What Of's input (How Much's `HowMuch.stale_left`; IPs do not change it).
    """
    if inp.config.behaviours.has("node_ip_logged") or any(m.ip for m in inp.machines):
        return None
    return order_reproducing(inp, counts, theirs, budget, stale_left=stale_left)
