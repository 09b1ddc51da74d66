"""The RM's free choices, verified: where rmref's phase found several choices equal (an order no
log shows decided it), the audit checks that the RM's logged choice is one of them and follows it.

rmref returns the choices it found equal beside its decision (`rmref.choices`): What Of's
`HostTie`s, takeFromTheRich's `Unsettled.alternatives`, detectFragmentation's `Defrag.verdicts`.
A logged choice inside that set is a *verified choice*: it agrees, and the rest of the cycle
(later jobs' placements, the chained schedule) is run again on the RM's pick, handed back to the
phase (`prefer`, `choose`, `serve`). A logged choice outside it stays a divergence.

Orders the cycle's input fixes but the log does not show are searched the same way: node IPs
(`follow_node_ips`) and the arrival order of machines whose node hashes share a bucket
(`follow_arrival_order`); one under which What Of places every process where the RM did verifies
the cycle's placements, and the rest of the cycle runs on the input in that order.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import islice, permutations

from rmref.choices import HostTie, host_choice
from rmref.defrag import Defrag, Unsettled
from rmref.model import CycleInput, Placement
from rmref.node_ips import ips_reproducing
from rmref.whatof import WhatOf, what_of, what_of_choices


@dataclass(frozen=True)
class Verified:
    """One verified choice: what rmref picked on its own, and the sentence the audit shows."""

    own: object  # rmref's pick, before it followed the RM's
    sentence: str  # "agrees: the RM chose ..."


FollowedIps = tuple[CycleInput, tuple[Placement, ...], dict[int, Verified]]  # input with IPs, placements, verified


@dataclass
class Followed:
    """What Of run on the RM's picks wherever it met an open order, and the choices verified."""

    what_of: WhatOf
    own: WhatOf  # rmref's run on its own order
    prefer: dict[str, int] = field(default_factory=dict)  # the RM's pick, as What Of reads it
    verified: dict[int, Verified] = field(default_factory=dict)  # job -> its verified placement


def _per_job(placements: Sequence[Placement]) -> dict[int, list[tuple[str, int]]]:
    out: dict[int, list[tuple[str, int]]] = {}
    for p in placements:
        out.setdefault(p.job_id, []).append((p.host, p.order))
    return {j: sorted(v) for j, v in out.items()}


def _hosts(value: Sequence[tuple[str, int]] | None) -> Counter[str]:
    return Counter(h for h, _ in value or ())


def tie_sentence(ties: Sequence[HostTie], theirs: Counter[str]) -> str:
    """'agrees: the RM chose 1 of 3 equally free hosts (...)' for a placement inside rmref's ties."""
    parts = []
    for t in ties:
        chosen = [h for h in t.hosts if theirs.get(h)]
        parts.append(f"the RM chose {len(chosen)} of {len(t.hosts)} equally free hosts ({', '.join(chosen)} of "
                     f"{', '.join(sorted(t.hosts))}; rmref took "
                     f"{', '.join(h for h, n in zip(t.hosts, t.got) if n)}), which findShares meets in the order "
                     + (f"the RM walked class {t.walked_in}'s jobs in at accounting (a HashMap keyed by random ids; "
                        "its lines list them oldest first)" if t.walked_in else
                        f"the RM walked job {t.walked_by}'s processes in (a HashMap keyed by random ids)")
                     + f": {t.ways()} placements were possible")
    return "agrees: " + "; ".join(parts)


def follow_placements(inp: CycleInput, counts: Mapping[int, int], logged: Mapping[int, object],
                      connected: Sequence[tuple[int, str, int, int]],
                      stale_left: Mapping[str, int] | None = None) -> Followed:
    """What Of on the logged counts, following the RM's pick at each tie it verifies: the first job
    (in placement order) whose hosts differ from the log is verified against rmref's ties, and What
    Of runs again with the RM's hosts first in that tie; this stops at a difference no tie admits.
    `stale_left`: What Of's input of that name (How Much's `HowMuch.stale_left`), for every walk."""
    seq = [(j, h) for j, h, _o, _sid in sorted(connected, key=lambda r: r[3] or 0)]
    first = what_of_choices(inp, counts, stale_left=stale_left)
    out = Followed(first, first)
    own = _per_job(first.placements)
    for _ in range(len(inp.work) + 1):
        ours = _per_job(out.what_of.placements)
        order = list(dict.fromkeys(p.job_id for p in out.what_of.placements)) + sorted(set(logged) - set(ours))
        job = next((j for j in order if logged.get(j) != ours.get(j)), None)
        if job is None or job in out.verified:
            break
        theirs = _hosts(logged.get(job))  # type: ignore[arg-type]
        ties = host_choice(out.what_of.ties, job, theirs, _hosts(ours.get(job)))
        if ties is None:
            break
        out.verified[job] = Verified(own.get(job), tie_sentence(ties, theirs))
        for t in ties:  # the RM's hosts of the tie first, in the order it created the processes
            for h in dict.fromkeys(h for j, h in seq if j == job and h in t.hosts):
                out.prefer[h] = len(out.prefer)
        out.what_of = what_of_choices(inp, counts, out.prefer, stale_left)
    return out


def follow_node_ips(inp: CycleInput, counts: Mapping[int, int], logged: Mapping[int, object],
                    placements: Sequence[Placement], stale_left: Mapping[str, int] | None = None) -> FollowedIps | None:
    """On a release whose log shows no node IP (behaviour node_ip_logged absent), the RM meets
    machines alike in the order of maps hashed on each node's IP. When rmref's placements differ
    from the log's and some IPs make What Of place every process of the cycle where the RM did
    (rmref.node_ips.ips_reproducing), the RM's placement is one of its possible choices: the cycle's
    input with those IPs, What Of's placements under them and the jobs verified; None otherwise.
    `stale_left` as `follow_placements` takes it (node IPs do not change it)."""
    ours = _per_job(placements)
    if inp.config.behaviours.has("node_ip_logged") or all(logged.get(j) == ours.get(j) for j in {*logged, *ours}):
        return None
    theirs = {j: [h for h, _ in v] for j, v in logged.items() if isinstance(v, list)}
    ips = ips_reproducing(inp, counts, theirs, stale_left=stale_left)
    if ips is None:
        return None
    trial = replace(inp, machines=tuple(replace(m, ip=ips[m.name]) for m in inp.machines))
    placed = what_of(trial, counts, stale_left=stale_left)
    mine = _per_job(placed)
    release = inp.config.behaviours.release
    verified = {}
    for job in sorted({*mine, *ours}):
        if mine.get(job) != ours.get(job):
            hosts = sorted({h for h, _ in (*mine.get(job, ()), *ours.get(job, ()))})
            named = ", ".join(f"{h} {ips[h]}" for h in hosts)
            verified[job] = Verified(ours.get(job), f"agrees: the RM meets machines alike in the order of node maps "
                                     f"hashed on each node's IP, which the log of DUCC {release} never shows; with IPs "
                                     f"such as {named} What Of places every process of the cycle where the RM did")
    return trial, placed, verified


ARRIVAL_ORDERS = 120  # most orders of the assumed machines tried (the first is the assumed one)


def _each_order(groups: Sequence[Sequence[int]]) -> Iterator[tuple[tuple[int, ...], ...]]:
    """Every combination of one order of each group, the last group's varying fastest (as
    itertools.product gives them), drawn one at a time: product would draw every order of every
    group first, and a pool of 46 such machines (a gap in i_mega24) has 46! of them."""
    if not groups:
        yield ()
        return
    for first in permutations(groups[0]):
        for rest in _each_order(groups[1:]):
            yield (first, *rest)


def _arrival_orders(inp: CycleInput, open_: Collection[str]) -> list[tuple[str, ...]]:
    """The cycle's machine names in each other order of those in `open_` (within each pool, in
    the slots they hold), the assumed order not included; at most ARRIVAL_ORDERS - 1."""
    names = [m.name for m in inp.machines]
    pools: dict[str, list[int]] = {}
    for k, m in enumerate(inp.machines):
        if m.name in open_:
            pools.setdefault(m.nodepool, []).append(k)
    groups = [ks for ks in pools.values() if len(ks) > 1]
    slots = [k for ks in groups for k in ks]
    out: list[tuple[str, ...]] = []
    for combo in islice(_each_order(groups), 1, ARRIVAL_ORDERS):
        order = list(names)
        for k, src in zip(slots, (k for ks in combo for k in ks)):
            order[k] = names[src]
        out.append(tuple(order))
    return out


def follow_arrival_order(inp: CycleInput, counts: Mapping[int, int], logged: Mapping[int, object],
                         placements: Sequence[Placement], open_: Collection[str],
                         stale_left: Mapping[str, int] | None = None) -> FollowedIps | None:
    """Machines there before the log began whose node hashes share a bucket of the RM's node map
    are met in the order they arrived, which the log does not show (`open_`: the audit took them in
    the order first heard from). When rmref's placements differ from the log's and another order
    of those machines makes What Of place every process of the cycle where the RM did, the RM's
    placement is one of its possible choices: the cycle's input in that order, What Of's
    placements in it and the jobs verified; None otherwise. `stale_left` as `follow_placements`."""
    ours = _per_job(placements)
    if all(logged.get(j) == ours.get(j) for j in {*logged, *ours}):
        return None
    machines = {m.name: m for m in inp.machines}
    for order in _arrival_orders(inp, open_):
        trial = replace(inp, machines=tuple(machines[n] for n in order))
        placed = what_of(trial, counts, stale_left=stale_left)
        mine = _per_job(placed)
        if any(logged.get(j) != mine.get(j) for j in {*logged, *mine}):
            continue
        moved = [n for n, m in zip(order, inp.machines) if n != m.name]
        verified = {job: Verified(ours.get(job), f"agrees: the RM's node map meets {', '.join(sorted(moved))} "
                                  "(their node hashes share a bucket) in the order they arrived, before the log "
                                  f"began, which the log does not show; taken to have arrived {', then '.join(moved)} "
                                  "(not in the order first heard from), What Of places every process of the cycle "
                                  "where the RM did")
                    for job in sorted({*mine, *ours}) if mine.get(job) != ours.get(job)}
        return trial, placed, verified
    return None


def verdict_sentence(d: Defrag, theirs: Mapping[int, int]) -> str:
    """'agrees: ...' for the RM's needy verdict, one of those the log's tally orders allow."""
    words = ", ".join(f"job {j} for {n}" for j, n in sorted(theirs.items())) or "no job"
    return (f"agrees: the RM found {words} actually needy, one of {len(d.verdicts)} verdicts detectFragmentation "
            f"reaches by the orders the log allows for tallying the competing jobs (its job map is keyed by "
            f"random ids)")


def verdict_admitted(d: Defrag, theirs: Mapping[int, int]) -> bool:
    """Whether the RM's needy verdict is one of rmref's (`Defrag.verdicts`)."""
    return tuple(sorted(theirs.items())) in d.verdicts


def _cleared_words(shares: Sequence[tuple[int, int]]) -> str:
    """'5.50, a new process of job 7', or 'nothing'."""
    return ", ".join(f"{j}.{s}" if s else f"a new process of job {j}" for j, s in shares) or "nothing"


def unsettled_sentence(rounds: Sequence[Unsettled]) -> str:
    """'agrees: ...' for takeFromTheRich rounds where the RM cleared one of rmref's alternatives."""
    parts = [f"on {u.host} (for needy job {u.needy_job}) the RM cleared {_cleared_words(u.alternatives[u.taken])}, "
             f"one of {len(u.alternatives)} choices among equally ranked shares of jobs "
             f"{', '.join(map(str, sorted({j for j, _ in u.shares})))} ({' and '.join(u.reasons)} order, "
             f"which the log does not show)" for u in rounds if u.alternatives]
    return "agrees: " + "; ".join(parts)
