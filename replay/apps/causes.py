"""Why rmref and the RM part: the first step of a decision where their inputs or results differ.

A count is the end of a chain the RM logs step by step: each fair-share class's award among the
classes of its nodepool (an RmCounter block countClassShares), each user's part of the class's
award (countUserShares) and each job's part of its user's (countJobShares). rmref's How Much
records the same runs (`HowMuch.runs`). Walking the chain from the top, the first run whose
inputs (competitors, weights, wanted processes, the free space divided) or results differ is
where the two part; later differences follow from it. An INFO log does not print a run's
results, but the next level's block starts from them: a class's award is the resource vector
of its users' block, a user's that of its jobs' block.

`Cause` is what the audit stores per divergence (`step`, `detail`) and what `explain` tells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from replay.model.inputs import CounterBlock
from rmref import CounterRun, HowMuch
from rmref.apportion import Entity
from rmref.constants import PURGE, PURGE_LEAVING, RESERVATION
from rmref.model import FAIR_SHARE, CycleInput, Machine, Placement, Work
from rmref.node_ips import unlogged_node_order


@dataclass(frozen=True)
class Cause:
    """The first step where rmref and the RM part, for one decision of one job."""

    step: str  # the RM's method (countClassShares, howMuchFixed, initJobCap, findShares, shrinkBy, ...)
    entity: str  # what the step decided about: a class, a user, a job, a host
    detail: str  # one sentence: what each side had as input and got

    def sentence(self) -> str:
        """The explanation as one line."""
        return f"{self.step}, {self.entity}: {self.detail}"


def _trim(vector: Sequence[int]) -> tuple[int, ...]:
    """A vector by share order without its trailing zeros (the two sides size them differently)."""
    out = list(vector)
    while out and out[-1] == 0:
        out.pop()
    return tuple(out)


def _quanta(vector: Sequence[int]) -> int:
    """Quantum shares in a free-space or award vector (index 0 is a total, not a size)."""
    return sum(size * n for size, n in enumerate(vector) if size)


def _processes(vector: Sequence[int]) -> str:
    """An award by share order, in words: '3 of order 2, 1 of order 4' (or 'nothing')."""
    parts = [f"{n} of order {o}" for o, n in enumerate(vector) if o and n]
    return ", ".join(parts) if parts else "nothing"


def _wants(e: Entity) -> str:
    return _processes(e.wanted)


def _same_inputs(run: CounterRun, block: CounterBlock) -> str | None:
    """How the RM's block and rmref's run differ in what they divided and among whom (None: alike).

    A competitor's own inputs come first (a weight also moves it in the order), then who competed,
    then the order they were counted in, then the free space.
    """
    mine = {e.name: (e.weight, _trim(e.wanted)) for e in run.entities}
    theirs = {e.name: (e.weight, _trim(e.wanted)) for e in block.entities}
    for e in block.entities:
        if e.name not in mine:
            continue
        (weight, wanted), (their_weight, their_wanted) = mine[e.name], theirs[e.name]
        if weight != their_weight:
            return f"{e.name} weighs {their_weight} for the RM, {weight} for rmref"
        if wanted != their_wanted:
            return (f"{e.name} wants {_processes((0, *their_wanted[1:]))} for the RM, "
                    f"{_processes((0, *wanted[1:]))} for rmref")
    ours_order, their_order = [e.name for e in run.entities], [e.name for e in block.entities]
    if set(ours_order) != set(their_order):
        return (f"the competitors differ: the RM counted {', '.join(their_order)}, rmref {', '.join(ours_order)}")
    if ours_order != their_order:
        return (f"the competitors come in another order: the RM {', '.join(their_order)}, "
                f"rmref {', '.join(ours_order)}")
    if _trim(run.vmachines[1:]) != _trim(block.vmachines[1:]):
        return (f"they divide different free space: the RM {_quanta(block.vmachines)} quantum shares "
                f"{list(_trim(block.vmachines[1:]))}, rmref {_quanta(run.vmachines)} {list(_trim(run.vmachines[1:]))} "
                f"(machines by free quanta, from 1)")
    return None


@dataclass(frozen=True)
class Level:
    """One level of a job's chain: rmref's run and the RM's block, and the entity followed."""

    step: str
    entity: str  # the class, user or job this level decides about
    label: str  # how to name it in a sentence
    run: CounterRun | None
    block: CounterBlock | None


def pick_run(runs: Sequence[CounterRun], descr: str, name: str, scope: str | None = None) -> CounterRun | None:
    """rmref's last run of `descr` naming `name` (a class counted again higher in the tree keeps the last)."""
    found = [r for r in runs if r.descr == descr and any(e.name == name for e in r.entities)
             and (scope is None or r.scope == scope)]
    return found[-1] if found else None


def _names(x: CounterRun | CounterBlock) -> frozenset[str]:
    return frozenset(e.name for e in x.entities)


def pick_block(runs: Sequence[CounterRun], run: CounterRun | None, blocks: Sequence[CounterBlock], descr: str,
               names: set[str]) -> CounterBlock | None:
    """The RM's block of the same count as rmref's `run`.

    Both sides count in the same order (classes pool by pool, then each class's users, then each
    user's jobs), so the k-th run of these competitors pairs with the k-th block of them (two
    classes can have the same users). With no run, the RM's last block of `names` (else the
    last naming one of them).
    """
    if run is not None:
        same = [r for r in runs if r.descr == descr and _names(r) == _names(run)]
        theirs = [b for b in blocks if b.descr == descr and _names(b) == _names(run)]
        k = next(i for i, r in enumerate(same) if r is run)
        if theirs:
            return theirs[min(k, len(theirs) - 1)]
    exact = [b for b in blocks if b.descr == descr and _names(b) == names]
    if exact:
        return exact[-1]
    overlap = [b for b in blocks if b.descr == descr and names & _names(b)]
    return overlap[-1] if overlap else None


def chain(runs: Sequence[CounterRun], blocks: Sequence[CounterBlock], class_name: str, user: str, job: int,
          users: set[str], jobs: set[str], class_label: str = "") -> list[Level]:
    """The job's three levels (class, user, job), rmref's run paired with the RM's block at each."""
    specs = [("countClassShares", class_name, class_label or f"class {class_name}", None, {class_name}),
             ("countUserShares", user, f"user {user} in class {class_name}", class_name, users),
             ("countJobShares", str(job), f"job {job}", f"{class_name}/{user}", jobs)]
    levels = []
    for descr, entity, label, scope, names in specs:
        run = pick_run(runs, descr, entity, scope)
        levels.append(Level(descr, entity, label, run, pick_block(runs, run, blocks, descr, names)))
    return levels


def award(level: Level, below: Level | None) -> tuple[int, ...] | None:
    """What the RM gave the level's entity: printed by a DEBUG log, else the next level's resource vector."""
    if level.block is not None and level.block.given is not None:
        return level.block.given.get(level.entity)
    if below is not None and below.block is not None:
        return below.block.vmachines
    return None


def count_cause(work: Work, inp: CycleInput, hm: HowMuch, blocks: Sequence[CounterBlock],
                logged: int | None, deferred_reason: str | None = None) -> Cause:
    """Where rmref's count of `work` departs from the RM's (`logged`), walking the How Much chain."""
    cls = inp.class_of(work)
    mine = hm.counts.get(work.job_id)
    if cls is None:
        return Cause("howMuch", f"job {work.job_id}", f"its class {work.class_name or '?'} is not in the "
                     f"configuration rmref read; rmref counts {mine}, the RM {logged}")
    if cls.policy != FAIR_SHARE:
        step = "howMuchReserve" if cls.policy == "RESERVE" else "howMuchFixed"
        why = f" ({hm.deferred[work.job_id]})" if work.job_id in hm.deferred else ""
        their = f" ({deferred_reason})" if deferred_reason else ""
        return Cause(step, f"job {work.job_id}", f"class {cls.name} ({cls.policy}, priority {cls.priority}): "
                     f"rmref grants {mine}{why}, the RM {logged}{their}")
    users_of_class = {w.user for w in inp.work if w.class_name == cls.name}
    jobs_of_user = {str(w.job_id) for w in inp.work if w.class_name == cls.name and w.user == work.user}
    levels = chain(hm.runs, blocks, cls.name, work.user, work.job_id, users_of_class, jobs_of_user,
                   f"class {cls.name} (priority {cls.priority})")
    for i, level in enumerate(levels):
        if level.run is None and level.block is None:
            continue
        if level.run is None or level.block is None:
            side = "rmref" if level.block is None else "the RM"
            other = "the RM" if level.block is None else "rmref"
            return Cause(level.step, level.label, f"{side} ran this count and {other} did not "
                         f"(rmref counts {mine}, the RM {logged})")
        differs = _same_inputs(level.run, level.block)
        if differs:
            return Cause(level.step, level.label, differs)
        theirs = award(level, levels[i + 1] if i + 1 < len(levels) else None)
        ours = level.run.given.get(level.entity)
        if theirs is not None and ours is not None and _trim(theirs[1:]) != _trim(ours[1:]):
            return Cause(level.step, level.label,
                         f"from the same {_quanta(level.block.vmachines)} quantum shares and competitors, rmref "
                         f"gave it {_processes(ours)}, the RM {_processes(theirs)}")
    return Cause("howMuchFairShare", f"job {work.job_id}", f"every counter run agrees, but rmref counts {mine} "
                 f"and the RM {logged}")


@dataclass
class CyclePlacements:
    """A cycle's new processes on both sides, for explaining where they part (job -> [(host, order)])."""

    inp: CycleInput
    theirs: Mapping[int, object]  # the RM's, from the log
    ours: Mapping[int, object]  # rmref's
    counts: Mapping[int, int]  # the counts What Of served
    placements: tuple[Placement, ...]  # rmref's, in the order it made them
    stale_left: Mapping[str, int] | None = None  # What Of's input of that name (How Much's accounting)

    def hosts(self, placed: Mapping[int, object]) -> dict[int, list[str]]:
        """Job -> one host per process."""
        return {j: [h for h, _ in v] for j, v in placed.items() if isinstance(v, list)}

    def before(self, job: int) -> list[tuple[str, int]]:
        """The processes (host, order) the cycle placed before `job`'s, in rmref's job order: the
        RM's hosts for a job the log shows, rmref's for the others."""
        jobs = list(dict.fromkeys(p.job_id for p in self.placements))
        out: list[tuple[str, int]] = []
        for j in jobs[:jobs.index(job)] if job in jobs else ():
            rm = self.theirs.get(j)
            out.extend(rm if isinstance(rm, list) else [(p.host, p.order) for p in self.placements if p.job_id == j])
        return out


def placement_cause(inp: CycleInput, job: int, logged: object, ref: object,
                    cycle: CyclePlacements | None = None, drawn: Mapping[str, tuple[int, str]] | None = None) -> Cause:
    """Where What Of's choice of hosts departs: the hosts each side picked, with their size and pool
    (a size no line states as every view draws it: `drawn`, replay.model.nodes.drawn_orders)."""
    machines = {m.name: m for m in inp.machines}
    drawn = drawn or {}

    def order(m: Machine) -> str:
        taken, shown = drawn.get(m.name, (None, ""))
        if taken != m.order:  # (stated since: a line sized it)
            return str(m.order)
        return shown if shown in ("?", f"{taken}?") else f"{shown}, rmref taking {taken}"

    def hosts(value: object) -> str:
        if not isinstance(value, list) or not value:
            return "no host"
        named = sorted({h for h, _ in value})
        return ", ".join(f"{h} ({sum(1 for x, _ in value if x == h)}x; order {order(machines[h])}, "
                         f"pool {machines[h].nodepool})" if h in machines else h for h in named)

    text = f"the RM put its new processes on {hosts(logged)}; rmref on {hosts(ref)}"
    return Cause(placement_step(inp, job), f"job {job}", text + _node_ips(inp, job, cycle))


def placement_step(inp: CycleInput, job: int) -> str:
    """The RM's method that places a job's processes: findMachines for a reservation, else findShares."""
    work = next((w for w in inp.work if w.job_id == job), None)
    cls = inp.class_of(work) if work else None
    return "findMachines" if cls is not None and cls.policy == "RESERVE" else "findShares"


def _node_ips(inp: CycleInput, job: int, cycle: CyclePlacements | None) -> str:
    """Why the hosts can differ on a release that logs no node IP, when no IPs were found that make
    rmref place the cycle as the RM did (those are verified choices, replay.apps.verify): the hosts
    differ only among machines alike but for the IP (rmref.node_ips.unlogged_node_order)."""
    if cycle is None:
        return ""
    theirs, ours = cycle.hosts(cycle.theirs), cycle.hosts(cycle.ours)
    if not unlogged_node_order(inp, theirs, ours, job, cycle.before(job), cycle.stale_left):
        return ""
    return (f". The hosts differ only among machines of one pool with the same free space; the RM meets those "
            f"in the order of its node map, hashed on each node's IP, which the log of DUCC "
            f"{inp.config.behaviours.release} never shows; no IPs were found under which rmref places the whole "
            f"cycle where the RM did, so the choice is not verified")


def eviction_cause(inp: CycleInput, job: int, counted: int | None, logged: object, ref: object,
                   evictions: Sequence[object]) -> Cause:
    """Where the processes taken from a job depart: what each side took, and the job's count and holding."""
    work = next((w for w in inp.work if w.job_id == job), None)
    held = sum(1 for s in work.shares if not s.pending_removal) if work else 0
    reasons = sorted({getattr(e, "reason", "") for e in evictions if getattr(e, "job_id", None) == job})
    step_of = {PURGE: "disable", PURGE_LEAVING: "disable", RESERVATION: "setupPreemptions"}
    step = step_of.get(reasons[0], "shrinkBy") if reasons else "shrinkBy"

    def shares(value: object) -> str:
        if not isinstance(value, list) or not value:
            return "nothing"
        return ", ".join(f"{h}.{s}" if s is not None else f"every share on {h}" for h, s in value)

    return Cause(step, f"job {job}", f"it holds {held} and is counted {counted}; rmref takes {shares(ref)}, "
                 f"the RM {shares(logged)}")
