"""The order search for node IPs a log does not show: which order of the machines in the RM's node
maps makes What Of (rmref.whatof) put every process where the RM did, then IPs hashing to it.

Every map What Of walks (a pool's node map, its maps by free space, their clones, findMachines'
map) is a java.util.HashMap keyed by node: it meets machines by bucket, `spread(hash) & (capacity
- 1)`, and within a bucket in the order they were put in (rmref.javahash). No such map of a cycle
holds more than the cycle's machines, so none has more buckets than `top_capacity` (C): a
machine's hash enters What Of only through `spread(hash) mod C`, its *bucket value*. Each map
holds machines of one pool; give a pool's machines the values b, b+1, ... (mod C) in some order
and every map of C buckets meets them in that order (no bucket holds two). A smaller map (a clone
of few entries) meets them by the values' low bits, as it does the RM's; the first value b
changes those.

The search is best first over (b, order), from b = 0 and rmref's own order (the machines by their
bucket value with no IP, the arrival order breaking ties). A state is scored by What Of run under
IPs giving its values: the processes placed where the RM put them before the first that is not,
then all that are. At that first miss What Of met host X for job j where the RM put one of j's
processes on a host H it has not yet been given. Near moves: each H just before X, at the front,
swapped with X. Far moves, taken only after every state as good has had its near ones: each H at
every place, then every other b. The RM's hosts tell most of the order: seed 10202 scenario 5 on
2.2.2 (12 machines alike, 14 processes in cycle 1) is found in 20 runs of What Of, where a climb
over random IPs stops at 12 of 14 (900 runs).

IPs for a value are found per machine, each on its own: the IPs 10.x.y.z in a fixed sequence
(x naming the machine) until one hashes to the value; a value takes about C tries at most.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace

from rmref.javahash import node_hash, spread, table_size_for
from rmref.model import CycleInput, Placement
from rmref.whatof import what_of

# most runs of What Of one order search makes: 32 processes among 100 machines alike took 600 to 1,000
ORDER_BUDGET = 1000
_TRIES = 256 * 254  # IPs tried per machine before a value is given up on

_Miss = tuple[int, str, tuple[str, ...]]  # (job, the host What Of met, the RM's hosts it still wanted)
_State = tuple[int, tuple[str, ...]]  # (the value of each pool's first machine, the machines' order)


def top_capacity(machines: int) -> int:
    """The most buckets a node map of the cycle can have: HashMap.clone's (or putAll's) table for
    all `machines`, which is at least a map grown by puts to that size (rmref.javahash)."""
    return table_size_for(int(machines / 0.75 + 1.0))


class _Ips:
    """Per machine, an IP for each bucket value (`spread(node_hash) mod capacity`), found lazily."""

    def __init__(self, names: Sequence[str], capacity: int) -> None:
        self.capacity = capacity
        self.index = {n: k for k, n in enumerate(names)}
        self.seen: dict[str, dict[int, str]] = {n: {} for n in names}
        self.tried = dict.fromkeys(names, 0)

    def ip(self, name: str, value: int) -> str | None:
        """An IP giving `name` bucket value `value`; None when none is found in `_TRIES` tries."""
        seen, k = self.seen[name], self.index[name]
        while value not in seen and self.tried[name] < _TRIES:
            i = self.tried[name]
            self.tried[name] += 1
            ip = f"{10 + k // 256}.{k % 256}.{i // 254}.{1 + i % 254}"
            seen.setdefault(spread(node_hash(name, ip)) & (self.capacity - 1), ip)
        return seen.get(value)


def order_reproducing(inp: CycleInput, counts: Mapping[int, int], theirs: Mapping[int, Sequence[str]],
                      budget: int = ORDER_BUDGET, *,
                      stale_left: Mapping[str, int] | None = None) -> dict[str, str] | None:
    """Node IPs under which What Of puts every job's new processes on the RM's hosts (`theirs`, one
    host per process), found by searching the machines' order (module docstring) in at most
    `budget` runs of What Of; None when none is found. What Of is run under the very IPs returned,
    so a find is a proof. `stale_left`: What Of's input (IPs do not change it)."""
    names = [m.name for m in inp.machines]
    pool = {m.name: m.nodepool for m in inp.machines}
    if not names or budget <= 0:
        return None
    ips = _Ips(names, top_capacity(len(names)))
    want = {j: Counter(h) for j, h in theirs.items() if h}
    runs = 0

    def run(state: _State) -> tuple[tuple[int, int], _Miss | None, dict[str, str] | None]:
        """Score of an order, its first miss, and its IPs when What Of reproduces the RM under them."""
        nonlocal runs
        runs += 1
        base, order = state
        rank: Counter[str] = Counter()  # a machine's value: its place among its pool's machines, from `base`
        chosen = {}
        for n in order:
            chosen[n] = ips.ip(n, (base + rank[pool[n]]) % ips.capacity)
            rank[pool[n]] += 1
        if any(ip is None for ip in chosen.values()):
            return (-1, -1), None, None
        given = {n: chosen[n] or "" for n in names}
        trial = replace(inp, machines=tuple(replace(m, ip=given[m.name]) for m in inp.machines))
        return _score(what_of(trial, counts, stale_left=stale_left), want, given)

    start = 0, tuple(sorted(names, key=lambda n: spread(node_hash(n, "")) & (ips.capacity - 1)))  # stable: arrival
    score, miss, found = run(start)
    # best first: the longest prefix; at a tie, an order's near moves before any order's far ones
    frontier = [(-score[0], 0, -score[1], 0, start, miss)]
    seen = {start}
    while found is None and frontier and runs < budget:
        _p, stage, _t, k, state, miss = frontier.pop(frontier.index(min(frontier)))
        if stage == 0:
            frontier.append((_p, 1, _t, k, state, miss))
        for nxt in (_near_moves(state, miss) if stage == 0 else _far_moves(state, miss, ips.capacity)):
            if nxt in seen or runs >= budget:
                continue
            seen.add(nxt)
            score, after, found = run(nxt)
            if found is not None:
                break
            frontier.append((-score[0], 0, -score[1], len(seen), nxt, after))
    return found


def _score(placed: Sequence[Placement], want: Mapping[int, Counter[str]],
           given: dict[str, str]) -> tuple[tuple[int, int], _Miss | None, dict[str, str] | None]:
    """(processes placed where the RM put them before the first miss, all so placed), the first
    miss, and `given` when What Of placed exactly the RM's processes."""
    left = {j: Counter(c) for j, c in want.items()}
    prefix = total = 0
    miss: _Miss | None = None
    for p in placed:
        job, host = p.job_id, p.host
        still = left.get(job, Counter())
        if still[host] > 0:
            still[host] -= 1
            total += 1
            prefix += miss is None
        elif miss is None:
            miss = (job, host, tuple(sorted(h for h, n in still.items() if n > 0)))
    exact = miss is None and all(c.total() == 0 for c in left.values())
    return (prefix, total), miss, given if exact else None


def _near_moves(state: _State, miss: _Miss | None) -> list[_State]:
    """The orders tried first at a miss: each host the RM still wanted moved just before the host
    What Of met instead, to the front, and swapped with it."""
    if miss is None:  # What Of placed fewer processes than the RM: no order helps
        return []
    base, order = state
    _job, met, hosts = miss
    out = []
    for h in hosts:
        rest = [n for n in order if n != h]
        at = rest.index(met) if met in rest else 0
        out += [(base, tuple(rest[:at] + [h] + rest[at:])), (base, tuple([h] + rest)),
                (base, tuple(met if n == h else h if n == met else n for n in order))]
    return out


def _far_moves(state: _State, miss: _Miss | None, capacity: int) -> list[_State]:
    """The orders tried next: each host the RM still wanted moved to every place, then the same
    order from every other first value (a map of few buckets meets machines by their values' low
    bits, where being earlier need not be first)."""
    if miss is None:
        return []
    base, order = state
    out = []
    for h in miss[2]:
        rest = [n for n in order if n != h]
        out += [(base, tuple(rest[:at] + [h] + rest[at:])) for at in range(len(rest) + 1)]
    return out + [((base + shift) % capacity, order) for shift in range(1, capacity)]
