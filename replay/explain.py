"""`rmreplay explain`: the story of one job in plain words, read from the parsed tables.

Without a cycle: the job's life (arrival, every cycle the processes it holds change, its end),
then the detail of its last published cycle. The detail of one cycle walks every level the RM
went through, in the spirit of kubectl's "0/5 nodes are available: ...":

1. the job (user, class, memory and share order, threads, work left);
2. its cap chain (rmref's `job_caps` on the rebuilt input, beside the logged one) and the binding rule;
3. what its class got among the classes of the nodepool (the countClassShares RmCounter block);
4. its user's part among the users of the class (countUserShares);
5. its own count among the user's jobs (countJobShares) and the count the RM logged;
6. where each new process went and why that host;
7. what was preempted or taken by defragmentation;
8. what it waited for.

`explain_job` gathers the facts (typed fields, for tests and the TUI) and the sections;
`render` prints them as plain text.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import polars as pl

from replay.inputs import CounterBlock, counter_blocks
from replay.sources import InputError
from replay.world import cycle_inputs
from rmref import UNLIMITED, CapInput, Caps, apportion, job_caps, job_order, n_shares_by_order
from rmref.model import ClassDef, CycleInput, Work

# ---------------------------------------------------------------------------------------------
# The story's facts


@dataclass(frozen=True)
class Section:
    """A titled block of the story."""

    title: str
    lines: tuple[str, ...]


@dataclass(frozen=True)
class HeldShare:
    """A process the job holds after the cycle (the published schedule's Existing list)."""

    host: str
    share_id: int
    order: int
    new: bool = False  # added by this cycle
    removing: bool = False  # listed as a removal (preempted, not yet gone)


@dataclass(frozen=True)
class Placed:
    """A new process and the machine it went to, as the machine was just before."""

    host: str
    share_id: int
    order: int
    machine_order: int | None
    free_before: int | None  # quantum shares unused on the machine
    active_before: int | None  # quantum shares in use on the machine
    placed_for: int | None = None  # placed for another job, handed over by defragmentation
    cancelled: bool = False  # never published: defragmentation gave the space to a needy job


@dataclass(frozen=True)
class Taken:
    """A process taken from the job this cycle, and why."""

    host: str
    share_id: int | None
    order: int | None
    reason: str  # the eviction reason (shrink, node_purge, ...), defrag, or removal (only the schedule says)
    needy_job: int | None = None  # defrag: the job the process was taken for
    inferred: bool = False  # defrag read from the needy job's eligible machines (INFO names no share)


@dataclass(frozen=True)
class LoggedCaps:
    """The cap chain the RM logged (initJobCap)."""

    base: int | None
    expected: int | None
    potential: int | None
    actual: int | None
    prediction: str | None  # predicted / cannot_predict


@dataclass(frozen=True)
class Competitor:
    """One entity of an RmCounter block: what it weighs, wanted and got, by share order."""

    name: str
    weight: int
    wanted: tuple[int, ...]  # index 0 is the total
    given: tuple[int, ...]


@dataclass(frozen=True)
class Counting:
    """One How Much counter run (an RmCounter block) the job took part in."""

    level: str  # countClassShares / countUserShares / countJobShares
    block: int
    vmachines: tuple[int, ...]  # free spaces by size in quanta
    competitors: tuple[Competitor, ...]
    given_logged: bool  # results printed by a DEBUG log (else recomputed with rmref.apportion)
    mine: str  # the entity this story follows (class, user or job id)
    approximate: bool = False  # recomputed classes of a nodepool tree (rmref does not bound bonuses per subpool)

    @property
    def quantum_shares(self) -> int:
        """Quantum shares the block divides."""
        return sum(size * n for size, n in enumerate(self.vmachines))

    def of(self, name: str) -> Competitor | None:
        """The competitor called `name`, if it is in the block."""
        return next((c for c in self.competitors if c.name == name), None)


@dataclass(frozen=True)
class LifeEvent:
    """A cycle where the job's processes (or its waiting reason) changed."""

    cycle: int
    processes: int  # held after the cycle
    text: str
    added: int = 0
    preempted: int = 0  # newly listed removals
    count: int | None = None  # the How Much count


@dataclass(frozen=True)
class Story:
    """Everything `explain` says about one job and one cycle: the facts, then the sections."""

    job_id: int
    cycle: int  # the cycle told in detail
    first_cycle: int
    last_cycle: int
    work_type: str
    user: str
    class_name: str
    policy: str | None
    nodepool: str | None
    memory_gb: int
    order: int
    threads: int | None
    remaining: int | None
    count: int | None  # the How Much count the RM logged (processes the job should have)
    logged_caps: LoggedCaps | None
    caps: Caps | None  # rmref's chain on the rebuilt input
    shares: tuple[HeldShare, ...]
    placed: tuple[Placed, ...]
    taken: tuple[Taken, ...]
    reason: str | None  # the published waiting / deferral reason
    classes: Counting | None
    users: Counting | None
    jobs: Counting | None
    life: tuple[LifeEvent, ...]
    sections: tuple[Section, ...]

    @property
    def actual_cap(self) -> int | None:
        """The cap the RM logged, else rmref's."""
        if self.logged_caps and self.logged_caps.actual is not None:
            return self.logged_caps.actual
        return self.caps.actual if self.caps else None

    @property
    def hosts(self) -> tuple[str, ...]:
        """Hosts of the processes held after the cycle, sorted (a host once per process)."""
        return tuple(sorted(s.host for s in self.shares))


# ---------------------------------------------------------------------------------------------
# Small text helpers


def _ranges(ids: Iterable[int]) -> str:
    """1, 2, 3, 7 -> '1-3, 7' (at most a dozen runs, then '...')."""
    runs: list[list[int]] = []
    for i in sorted(set(ids)):
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    text = [f"{a}-{b}" if a != b else str(a) for a, b in runs[:12]]
    return ", ".join(text) + (", ..." if len(runs) > 12 else "")


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}es" if word.endswith("s") else f"{n} {word}s"


def _cap_text(value: int | None) -> str:
    if value is None:
        return "-"
    return "unlimited" if value >= UNLIMITED else str(value)


def _by_order(vector: Sequence[int]) -> str:
    """A wanted/given vector (index 0 the total) as '3 of order 2, 1 of order 1'."""
    parts = [f"{n} of order {o}" for o, n in reversed(list(enumerate(vector))) if o and n]
    return ", ".join(parts) if parts else "nothing"


def _spaces(vmachines: Sequence[int]) -> str:
    """The resource vector as '2 spaces of 8 quanta, 1 of 4'."""
    parts = [f"{n}×{size}Q" for size, n in reversed(list(enumerate(vmachines))) if size and n]
    return " + ".join(parts) if parts else "no free space"


def _fraction(part: int, whole: int) -> str:
    """A weight share in words: 'a third', 'half', '2/5', 'all'."""
    if whole <= 0:
        return "nothing"
    f = Fraction(part, whole)
    words = {Fraction(1): "all", Fraction(1, 2): "half", Fraction(1, 3): "a third", Fraction(2, 3): "two thirds",
             Fraction(1, 4): "a quarter", Fraction(3, 4): "three quarters"}
    return words.get(f, f"{f.numerator}/{f.denominator}")


# ---------------------------------------------------------------------------------------------
# Which job, which cycle


def _published(tables: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return tables["schedule"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())


def _job_cycles(tables: dict[str, pl.DataFrame], job_id: int) -> list[int]:
    """Cycles whose published schedule lists the job; InputError when it is not in the log."""
    published = _published(tables)
    cycles = sorted(set(published.filter(pl.col("job_id") == job_id)["cycle"].to_list()))
    if not cycles:
        known = published["job_id"].unique().to_list()
        have = f"its jobs are {_ranges(known)}" if known else "it publishes no job at all"
        raise InputError(f"job {job_id} is not in the log: {have}")
    return cycles


def _chosen_cycle(tables: dict[str, pl.DataFrame], job_id: int, cycles: list[int], cycle: int | None) -> int:
    """The cycle to detail: the one asked for, else the job's last; InputError when out of range."""
    if cycle is None:
        return cycles[-1]
    logged = tables["cycles"]["cycle"].to_list()
    if cycle not in logged:
        span = f"{min(logged)}-{max(logged)}" if logged else "none"
        raise InputError(f"cycle {cycle} is out of range: the log has cycles {span}")
    if cycle not in cycles:
        raise InputError(f"job {job_id} is not in cycle {cycle}: it is published in cycles {_ranges(cycles)}")
    return cycle


def _cycle_input(tables: dict[str, pl.DataFrame], cycle: int) -> CycleInput | None:
    return next(cycle_inputs(tables, cycles=range(cycle, cycle + 1)), None)


# ---------------------------------------------------------------------------------------------
# Facts of one cycle, table by table


def _rows(tables: dict[str, pl.DataFrame], name: str, cycle: int, job_id: int) -> pl.DataFrame:
    frame = tables[name]
    return frame.filter((pl.col("cycle") == cycle) & (pl.col("job_id") == job_id))


def _logged_caps(tables: dict[str, pl.DataFrame], cycle: int, job_id: int) -> LoggedCaps | None:
    rows = _rows(tables, "job_caps", cycle, job_id).filter(pl.col("actual_cap").is_not_null())
    if rows.is_empty():
        return None
    r = rows.row(-1, named=True)
    return LoggedCaps(r["base_cap"], r["expected_cap"], r["potential_cap"], r["actual_cap"], r["prj_kind"])


def _logged_count(rows: pl.DataFrame) -> int | None:
    """The RM's How Much decision: the last count row that says how many (a deferral says 0)."""
    given = rows.filter(pl.col("shares_given").is_not_null())
    return None if given.is_empty() else int(given["shares_given"][-1])


def _schedule_shares(tables: dict[str, pl.DataFrame], cycle: int, job_id: int,
                     quantum: int) -> tuple[tuple[HeldShare, ...], str | None]:
    """Held processes after the cycle (the published Existing list) and the published reason."""
    rows = _rows(tables, "schedule", cycle, job_id)
    reason = next((r for r in rows["reason"].to_list() if r), None)
    with_host = rows.filter(pl.col("host").is_not_null())
    key = lambda kind: set(with_host.filter(pl.col("kind") == kind).select("host", "share_id").iter_rows())  # noqa: E731
    added, removing = key("addition"), key("removal")
    held = tuple(
        HeldShare(host, sid, job_order(mem or 0, quantum), (host, sid) in added, (host, sid) in removing)
        for host, sid, mem in with_host.filter(pl.col("kind") == "existing")
        .select("host", "share_id", "memory_gb").iter_rows()
    )
    return held, reason


def _placed(tables: dict[str, pl.DataFrame], cycle: int, job_id: int) -> tuple[Placed, ...]:
    """New processes connected for the job; one the published Additions lacks was cancelled."""
    rows = _rows(tables, "placements", cycle, job_id)
    sched = _rows(tables, "schedule", cycle, job_id).filter(pl.col("kind") == "addition")
    added = set(sched.select("host", "share_id").iter_rows())
    return tuple(
        Placed(r["host"], r["share_id"], r["order"], r["m_order"], r["m_unused"], r["m_active"],
               r["placed_for"] if r["reassigned"] else None, (r["host"], r["share_id"]) not in added)
        for r in rows.iter_rows(named=True)
    )


# Eviction lines that are not a decision to take a process: a confirmation it is gone, a share
# the RM found it cannot preempt, the machine-level line of a reservation's clearing.
_NOT_TAKEN = ("share_removed", "non_preemptable")


def _new_removals(tables: dict[str, pl.DataFrame], cycle: int, quantum: int) -> list[tuple[int, Taken]]:
    """(owner, removal) for every job's removals first listed by this cycle's schedule.

    A removal stays listed until the process is gone, so only its first listing is a decision;
    a dead node's processes are listed as purged.
    """
    removal = _published(tables).filter(pl.col("kind") == "removal")
    earlier = set(removal.filter(pl.col("cycle") == cycle - 1).select("job_id", "host", "share_id").iter_rows())
    now = removal.filter(pl.col("cycle") == cycle).select("job_id", "host", "share_id", "memory_gb", "purged")
    return [(job, Taken(host, sid, job_order(mem or 0, quantum), "node_purge" if purged else "removal"))
            for job, host, sid, mem, purged in now.iter_rows() if (job, host, sid) not in earlier]


def _logged_reasons(tables: dict[str, pl.DataFrame], cycle: int) -> dict[tuple[str, int], Taken]:
    """(host, share) -> why, from DEBUG defragmentation `clearShare` lines, then eviction lines."""
    out: dict[tuple[str, int], Taken] = {}
    cleared = tables["defrag"].filter((pl.col("cycle") == cycle) & (pl.col("kind") == "clear_share"))
    for r in cleared.iter_rows(named=True):
        out.setdefault((r["host"], r["share_id"]), Taken(r["host"], r["share_id"], None, "defrag", r["job_id"]))
    evicted = tables["evictions"].filter((pl.col("cycle") == cycle) & pl.col("share_id").is_not_null()
                                         & pl.col("host").is_not_null() & ~pl.col("reason").is_in(_NOT_TAKEN))
    for r in evicted.iter_rows(named=True):
        out.setdefault((r["host"], r["share_id"]), Taken(r["host"], r["share_id"], r["order"], r["reason"] or "evicted"))
    return out


def _rich_takings(tables: dict[str, pl.DataFrame], cycle: int, unexplained: list[Taken]) -> dict[tuple[str, int], int]:
    """(host, share) -> needy job, for removals no log line explains (INFO names no defrag share).

    Needy jobs are served in the order their searches are logged; each takes the unexplained
    removals on the machines it searched, in its search order, newest share first (the least
    invested), until the quantum shares it needed are covered.
    """
    rows = tables["defrag"].filter(pl.col("cycle") == cycle)
    need = {job: (n or 0) * (o or 0) for job, n, o in
            rows.filter(pl.col("kind") == "needy").select("job_id", "needed", "order").iter_rows()}
    left = sorted(unexplained, key=lambda t: -(t.share_id or 0))
    out: dict[tuple[str, int], int] = {}
    for needy, hosts in rows.filter(pl.col("kind") == "eligible_machines").select("job_id", "hosts").iter_rows():
        want = need.get(needy, 0)
        for host in hosts or ():
            for t in [t for t in left if t.host == host]:
                if want <= 0:
                    break
                out[(t.host, t.share_id)] = needy
                want -= t.order or 0
                left.remove(t)
    return out


def _taken(tables: dict[str, pl.DataFrame], cycle: int, job_id: int, quantum: int) -> tuple[Taken, ...]:
    """What the cycle took from the job: its new removals, each with the reason the log gives.

    The published Removals list is complete; an eviction or DEBUG defragmentation line says why.
    A removal no line explains went to a needy job's take-from-the-rich (inferred, see
    `_rich_takings`), else it is only "removed". A dead node's processes are listed as purged.
    """
    removals = _new_removals(tables, cycle, quantum)
    reasons = _logged_reasons(tables, cycle)
    unexplained = [t for _, t in removals if (t.host, t.share_id) not in reasons and t.reason == "removal"]
    inferred = _rich_takings(tables, cycle, unexplained)
    taken = []
    for r in (t for owner, t in removals if owner == job_id):
        why = reasons.get((r.host, r.share_id))
        needy = inferred.get((r.host, r.share_id))
        if r.reason == "removal" and why is not None:
            r = replace(why, order=why.order or r.order)
        elif r.reason == "removal" and needy is not None:
            r = replace(r, reason="defrag", needy_job=needy, inferred=True)
        taken.append(r)
    return tuple(taken)


def _kept_lines(tables: dict[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
    """Eviction lines about the job that took nothing: shares found not preemptable, reservation setup."""
    rows = _rows(tables, "evictions", cycle, job_id)
    lines = [f"Share {sid} was found not preemptable (a reservation waits for its machine)."
             for sid in rows.filter(pl.col("reason") == "non_preemptable")["share_id"].to_list()]
    lines += [f"Machine {h} is being cleared for it (reservation)."
              for h in rows.filter(pl.col("reason") == "setup_for_reservation")["host"].to_list()]
    return lines


def _confirmed_gone(tables: dict[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
    rows = _rows(tables, "evictions", cycle, job_id).filter(pl.col("reason") == "share_removed")
    return [f"{h}.{s}" for h, s in rows.select("host", "share_id").iter_rows()]


# ---------------------------------------------------------------------------------------------
# The three RmCounter levels


def _results(block: CounterBlock) -> tuple[dict[str, tuple[int, ...]], bool]:
    """Each entity's result: printed by a DEBUG log, else recomputed with rmref's counter."""
    if block.given:
        return block.given, True
    pool = None
    if block.descr == "countClassShares":  # classes of a nodepool: its shares bound their bonus
        vm = np.array(block.vmachines)
        pool = n_shares_by_order(vm, np.zeros(len(vm), dtype=np.int64))
    return apportion(block.entities, block.vmachines, pool_shares=pool).given, False


def _counting(block: CounterBlock, mine: str, subpools: bool) -> Counting:
    given, logged = _results(block)
    competitors = tuple(Competitor(e.name, e.weight, e.wanted, given.get(e.name, (0,) * len(e.wanted)))
                        for e in block.entities)
    approximate = subpools and not logged and block.descr == "countClassShares"
    return Counting(block.descr, block.block, block.vmachines, competitors, logged, mine, approximate)


def _names(block: CounterBlock) -> set[str]:
    return {e.name for e in block.entities}


def _counter_chain(blocks: list[CounterBlock], job_id: int, class_name: str, user: str,
                   subpools: bool = False) -> tuple[Counting | None, Counting | None, Counting | None]:
    """The class, user and job blocks the job went through this cycle.

    The RM counts classes (nodepool by nodepool, the parent last), then for each class its users,
    then each user's jobs: the job's block names it; its user block is the nearest user block
    before it, the class block the nearest class block before that naming the class.
    """
    at_job = next((i for i, b in enumerate(blocks) if b.descr == "countJobShares" and str(job_id) in _names(b)), None)
    end = at_job if at_job is not None else len(blocks)
    at_user = None
    if at_job is not None:
        at_user = next((i for i in range(at_job - 1, -1, -1) if blocks[i].descr == "countUserShares"), None)
    before = at_user if at_user is not None else end
    at_class = next((i for i in range(before - 1, -1, -1)
                     if blocks[i].descr == "countClassShares" and class_name in _names(blocks[i])), None)
    if at_class is None:  # no job block: the class may still have been counted (and got nothing)
        at_class = next((i for i in range(len(blocks) - 1, -1, -1)
                         if blocks[i].descr == "countClassShares" and class_name in _names(blocks[i])), None)
    pick = lambda i, mine: _counting(blocks[i], mine, subpools) if i is not None else None  # noqa: E731
    classes, users = pick(at_class, class_name), pick(at_user, user)
    if classes is not None and users is not None and not classes.given_logged:
        classes = _with_given(classes, class_name, users.vmachines)
    return classes, users, pick(at_job, str(job_id))


def _with_given(counting: Counting, name: str, given: tuple[int, ...]) -> Counting:
    """The class's result taken from its user block, whose resource vector is exactly what the class got."""
    competitors = tuple(replace(c, given=given) if c.name == name else c for c in counting.competitors)
    return replace(counting, competitors=competitors)


# ---------------------------------------------------------------------------------------------
# Sections of one cycle


def _class_words(cls: ClassDef | None, class_name: str) -> str:
    if cls is None:
        return f"class {class_name} (not defined in the configuration)"
    return (f"class {cls.name} ({cls.policy}, priority {cls.priority}, weight {cls.weight}, "
            f"nodepool {cls.nodepool})")


def _job_section(job_id: int, work: Work | None, work_type: str, user: str, class_name: str,
                 cls: ClassDef | None, memory_gb: int, order: int, quantum: int) -> Section:
    lines = [f"{work_type} {job_id} of user {user}, {_class_words(cls, class_name)}.",
             f"Memory {memory_gb} GB: share order {order} ({memory_gb} GB / {quantum} GB quantum, rounded up)."]
    if work is not None:
        cap = work.cap_input
        held = sum(1 for s in work.shares if not s.pending_removal)
        lines.append(f"{_plural(cap.threads, 'thread')} per process; {_plural(cap.remaining, 'work item')} "
                     f"remaining; {_plural(held, 'process')} held when the cycle began.")
        if cap.max_processes < UNLIMITED:
            lines.append(f"The submission allows at most {_plural(cap.max_processes, 'process')}.")
    return Section("1. The job", tuple(lines))


def _rule_words(caps: Caps, cap: CapInput) -> str:
    """Why `actual` is what it is, in words."""
    wanted = -(-max(cap.remaining, 0) // max(cap.threads, 1))
    base = (f"the base cap: {_plural(cap.remaining, 'work item')} / {_plural(cap.threads, 'thread')} "
            f"rounded up = {wanted}"
            + (f", at most the {cap.max_processes} max processes" if cap.max_processes < wanted else "")
            + (f", at least the {cap.current} processes held" if cap.current > wanted else ""))
    words = {
        "base": f"bound by {base}",
        "prediction": (f"bound by prediction: from the time per work item the RM projects {_cap_text(caps.projected)} "
                       "processes finish the work as soon, so it asks no more (never below what it holds)"),
        "initialization_cap": (f"capped at {caps.actual} by the class's initialization cap until a process "
                               "finishes initializing"),
        "doubling": (f"expand by doubling: at most twice the {cap.current} processes held ({caps.actual}) "
                     "until it reaches its potential cap"),
        "restart": (f"the job had lost every process, so it starts again from the initialization cap "
                    f"({caps.actual})"),
        "completed": "the job is completed: it keeps what it holds and asks for no more",
        "refused": "refused work gets nothing",
    }
    return words.get(caps.rule, caps.rule)


def _cap_section(caps: Caps | None, cap: CapInput | None, logged: LoggedCaps | None) -> Section:
    lines = []
    if logged is not None:
        pred = " (could not predict)" if logged.prediction == "cannot_predict" else ""
        lines.append(f"Logged cap chain: base {_cap_text(logged.base)}, expected {_cap_text(logged.expected)}{pred}, "
                     f"potential {_cap_text(logged.potential)}, actual {_cap_text(logged.actual)}.")
    else:
        lines.append("The RM logged no cap chain for this job in this cycle.")
    if caps is not None and cap is not None:
        lines.append(f"rmref's chain: base {_cap_text(caps.base)}, projected {_cap_text(caps.projected)}, "
                     f"potential {_cap_text(caps.potential)}, actual {_cap_text(caps.actual)}.")
        lines.append(f"Actual cap {_cap_text(caps.actual)}: {_rule_words(caps, cap)}.")
        if logged is not None and logged.actual is not None and logged.actual != caps.actual:
            lines.append(f"rmref disagrees with the log: it computes {caps.actual}, the RM logged {logged.actual} "
                         "(see `rmreplay audit`).")
    return Section("2. Cap", tuple(lines))


_LEVELS = {"countClassShares": ("class", "classes"), "countUserShares": ("user", "users"),
           "countJobShares": ("job", "jobs")}


def _competitor_line(c: Competitor, total_weight: int, qshares: int, mine: str, what: str) -> str:
    share = Fraction(c.weight, total_weight) * qshares if total_weight else Fraction(0)
    mark = ("  <- this job" + ("" if what == "job" else f"'s {what}")) if c.name == mine else ""
    return (f"{what} {c.name}: weight {c.weight} of {total_weight} in total, deserves "
            f"{_fraction(c.weight, total_weight)} of {qshares} quantum shares ({float(share):.1f}); "
            f"wants {_by_order(c.wanted)}; got {_by_order(c.given)}{mark}")


def _counting_lines(counting: Counting) -> list[str]:
    """One RmCounter block in words: what it divides, each competitor's weight share and result."""
    what, _ = _LEVELS.get(counting.level, ("entity", "entities"))
    total = sum(c.weight for c in counting.competitors)
    source = ("results as logged (DEBUG)" if counting.given_logged
              else "results recomputed with rmref's counter (an INFO log prints only the inputs)")
    lines = [f"{counting.level} (RmCounter block {counting.block}) divides {counting.quantum_shares} quantum shares "
             f"({_spaces(counting.vmachines)}); {source}."]
    if counting.approximate:
        lines.append("Approximate for the other classes: with subpools a class's bonus is bounded by its own "
                     "pool's free space, which this recomputation does not model (this job's class: exact, "
                     "from its user count).")
    lines += [_competitor_line(c, total, counting.quantum_shares, counting.mine, what) for c in counting.competitors]
    me = counting.of(counting.mine)
    if me is not None and me.given[0] < me.wanted[0]:
        why = ("it was alone: that is all the space held for its order" if len(counting.competitors) == 1
               or me.weight == total else "the others' weights and the shape of the free space took the rest")
        lines.append(f"{what.capitalize()} {me.name} got {me.given[0]} of the {me.wanted[0]} it wanted: {why}.")
    return lines


def _counting_section(title: str, counting: Counting | None, missing: str) -> Section:
    return Section(title, tuple(_counting_lines(counting)) if counting else (missing,))


def _fixed_lines(rows: pl.DataFrame) -> list[str]:
    """Count rows of fixed-share and reservation work (no RmCounter: a request is granted or not)."""
    lines = []
    for r in rows.iter_rows(named=True):
        kind = r["kind"]
        if kind == "granted":
            lines.append(f"Granted {r['nqm'] or r['shares_given']} in nodepool {r['nodepool'] or '-'}.")
        elif kind == "stable":
            lines.append(f"Stable: keeps its {_plural(r['shares'] or 0, 'process')}.")
        elif kind == "available":
            lines.append(f"{r['count']} spaces of order {r['order']} available.")
        elif kind in ("deferred", "deferring", "out_of_shares"):
            text = (r["reason"] or kind).rstrip(".")
            lines.append(f"{text}." if text.startswith("Deferred") else f"Deferred: {text}.")
    return lines


def _count_section(count: int | None, rows: pl.DataFrame, jobs: Counting | None, policy: str | None) -> Section:
    if policy and policy != "FAIR_SHARE":
        lines = [f"{policy} work is not weighed against others: the RM grants the whole request if it fits."]
        lines += _fixed_lines(rows)
    else:
        lines = _counting_lines(jobs) if jobs else ["No job count: the user got nothing to divide among its jobs."]
        me = jobs.of(jobs.mine) if jobs else None
        if me is not None and count is not None and me.given[0] != count:
            lines.append(f"The counter gives it {me.given[0]} but the RM logged {count}: "
                         "see `rmreplay audit` for the How Much phase.")
    lines.append(f"The RM's How Much count for this job: {_plural(count, 'process')}." if count is not None
                 else "The RM logged no How Much count for this job in this cycle.")
    title = "5. Its count among its user's jobs" if not policy or policy == "FAIR_SHARE" else f"5. Its count ({policy})"
    return Section(title, tuple(lines))


def _placement_section(placed: tuple[Placed, ...], expansions: pl.DataFrame) -> Section:
    lines = []
    for r in expansions.filter(pl.col("kind") == "find_shares_counted").iter_rows(named=True):
        lines.append(f"What Of: counted {r['counted']}, holds {r['current']}, needs {r['needed']} more of order {r['order']}.")
    if placed:
        lines.append("The RM looks at machines by free space, the smallest space that fits the order first, "
                     "so new processes pack onto the fullest machines that still have room.")
    for p in placed:
        machine = f"a machine of order {p.machine_order}" if p.machine_order is not None else "a machine"
        before = (f" with {p.free_before} quantum shares free and {p.active_before} in use before"
                  if p.free_before is not None else "")
        handed = f" (placed for job {p.placed_for}, handed over by defragmentation)" if p.placed_for else ""
        handed += " (cancelled before publication: defragmentation gave the space to a needy job)" if p.cancelled else ""
        lines.append(f"New process {p.host}.{p.share_id} (order {p.order}) on {machine}{before}{handed}.")
    if not lines:
        lines.append("No new process this cycle.")
    return Section("6. Where new processes went", tuple(lines))


_TAKEN_WORDS = {
    "shrink": "preempted: the job holds more than its count, so the RM shrinks it (least invested processes first)",
    "schedule_removal": "removed in the published schedule",
    "node_purge": "purged: its node died",
    "clear_for_reservation": "evicted to clear a machine for a reservation",
    "removal": "listed for removal in the published schedule",
}


def _defrag_lines(tables: dict[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
    """The job as a needy job of defragmentation."""
    rows = tables["defrag"].filter((pl.col("cycle") == cycle) & (pl.col("job_id") == job_id))
    lines = []
    for r in rows.iter_rows(named=True):
        kind = r["kind"]
        if kind == "needy":
            lines.append(f"Needy: defragmentation finds it {r['needed']} short of processes of order {r['order']} "
                         f"(pure fair share {r['pure_fs']} quantum shares).")
        elif kind == "satisfied":
            lines.append("Defragmentation satisfied it by taking from the rich.")
        elif kind == "failed":
            lines.append(f"Defragmentation could not get enough from the rich (still needing {r['needed']}).")
        elif kind == "clear_share":
            lines.append(f"For it, defragmentation took {r['host']}.{r['share_id']} from job {r['donor_job']}.")
    return lines


def _taken_words(t: Taken) -> str:
    if t.reason == "defrag":
        how = " (inferred: the needy job's search covered this host)" if t.inferred else ""
        return f"taken by defragmentation for needy job {t.needy_job}{how}"
    return _TAKEN_WORDS.get(t.reason, t.reason)


def _taken_section(taken: tuple[Taken, ...], defrag: list[str], gone: list[str]) -> Section:
    lines = [f"{t.host}.{t.share_id}" + (f" (order {t.order})" if t.order else "") + ": " + _taken_words(t) + "."
             for t in taken]
    lines += defrag
    if gone:
        lines.append(f"Confirmed gone by the Orchestrator: {', '.join(gone)}.")
    return Section("7. Preempted or taken", tuple(lines) or ("Nothing was taken from it this cycle.",))


_REASON_WORDS = {
    "Waiting for preemptions.": ("it was counted processes but no machine had room of its order: it waits "
                                 "until processes preempted from other jobs are gone"),
    "Waiting for defragmentation.": ("it is needy: defragmentation could not yet free a space big enough for "
                                     "one of its processes"),
    "No machines match user specified list.": "none of the machines the submission names can hold it",
}


def _waiting_section(reason: str | None, count_rows: pl.DataFrame, held: tuple[HeldShare, ...],
                     count: int | None) -> Section:
    lines = []
    if reason:
        lines.append(f"Published reason: {reason}")
        if reason in _REASON_WORDS:
            lines.append(f"That is, {_REASON_WORDS[reason]}.")
    for r in count_rows.filter(pl.col("reason").is_not_null()).iter_rows(named=True):
        if r["reason"] != reason:
            lines.append(f"Counting said: {r['reason']}")
    keeps = sum(1 for s in held if not s.removing)
    if not lines:
        if count is not None and keeps < count:
            lines.append(f"It keeps {keeps} of its {count}: the rest wait for space to be freed.")
        elif count is not None and keeps > count:
            lines.append(f"Nothing: it keeps {keeps}, more than its count of {count}, until a shrink takes the rest.")
        else:
            lines.append("Nothing: it keeps what it was counted.")
    return Section("8. What it waits for", tuple(lines))


# ---------------------------------------------------------------------------------------------
# The whole life


def _life_rows(tables: dict[str, pl.DataFrame], job_id: int) -> pl.DataFrame:
    """Per published cycle: processes held, added, the removals listed, the reason, the count."""
    sched = _published(tables).filter(pl.col("job_id") == job_id)
    removal = pl.col("kind") == "removal"
    per_cycle = sched.group_by("cycle").agg(
        (pl.col("kind") == "existing").sum().alias("held"),
        (pl.col("kind") == "addition").sum().alias("added"),
        pl.concat_str("host", pl.lit("."), "share_id").filter(removal).alias("removals"),
        pl.col("reason").drop_nulls().first().alias("reason"),
    )
    counts = (tables["counts"].filter((pl.col("job_id") == job_id) & pl.col("shares_given").is_not_null())
              .unique("cycle", keep="last", maintain_order=True).select("cycle", pl.col("shares_given").alias("count")))
    return per_cycle.join(counts, on="cycle", how="left").sort("cycle")


def _life_text(prev: int | None, e: LifeEvent) -> str:
    told = f"; How Much count {e.count}" if e.count is not None else ""
    moves = [f"+{e.added} new"] if e.added else []
    if prev is None:
        return f"arrives; holds {_plural(e.processes, 'process')}" + (f" ({moves[0]})" if moves else "") + told
    moves += [f"{e.preempted} preempted or taken"] if e.preempted else []
    gone = prev + e.added - e.processes
    moves += [f"{gone} confirmed gone"] if gone > 0 else []
    change = f" ({', '.join(moves)})" if moves else ""
    return f"{prev} -> {_plural(e.processes, 'process')}{change}{told}"


def _life(tables: dict[str, pl.DataFrame], job_id: int, cycles: list[int]) -> tuple[LifeEvent, ...]:
    """Arrival, every cycle its processes change (or some are preempted), new waiting reasons, its end.

    A preempted process stays listed until the Orchestrator confirms it gone, so only its first
    listing counts as preempted; it leaves the held count when confirmed.
    """
    events: list[LifeEvent] = []
    prev_held, prev_reason, prev_removals = None, None, set()
    for c, held, added, removals, reason, count in _life_rows(tables, job_id).select(
            "cycle", "held", "added", "removals", "reason", "count").iter_rows():
        removals = set(removals)
        e = LifeEvent(c, held, "", added, len(removals - prev_removals), count)
        if prev_held is None or held != prev_held or e.preempted:
            events.append(replace(e, text=_life_text(prev_held, e)))
        if reason and reason != prev_reason:
            events.append(replace(e, text=f"waits: {reason}"))
        prev_held, prev_reason, prev_removals = held, reason, removals
    last_log = tables["cycles"]["cycle"].max()
    end = ("still published at the end of the log" if cycles[-1] == last_log
           else f"last published; gone from cycle {cycles[-1] + 1} on (finished or cancelled)")
    events.append(LifeEvent(cycles[-1], prev_held or 0, end))
    return tuple(events)


def _life_section(life: tuple[LifeEvent, ...]) -> Section:
    return Section("Life", tuple(f"cycle {e.cycle}: {e.text}" for e in life))


# ---------------------------------------------------------------------------------------------
# Putting it together


@dataclass(frozen=True)
class _Who:
    """The job's identity in the detailed cycle."""

    work_type: str
    user: str
    class_name: str
    memory_gb: int
    order: int


def _who(tables: dict[str, pl.DataFrame], work: Work | None, cycle: int, job_id: int, quantum: int) -> _Who:
    if work is not None:
        return _Who(work.work_type, work.user, work.class_name, work.memory_gb, work.order)
    row = _rows(tables, "schedule", cycle, job_id).row(0, named=True)
    mem = row["memory_gb"] or 0
    return _Who(row["work_type"] or "Job", "", "", mem, job_order(mem, quantum))


def _facts(tables: dict[str, pl.DataFrame], inp: CycleInput | None, job_id: int, c: int,
           cycles: list[int], with_life: bool) -> Story:
    """The story's facts for cycle `c` (no sections yet)."""
    quantum = inp.config.quantum_gb if inp else 15
    work = next((w for w in inp.work if w.job_id == job_id), None) if inp else None
    cls = inp.class_of(work) if inp and work else None
    who = _who(tables, work, c, job_id, quantum)
    held, reason = _schedule_shares(tables, c, job_id, quantum)
    fair = cls is None or cls.policy == "FAIR_SHARE"
    blocks = counter_blocks({"rmcounter": tables["rmcounter"].filter(pl.col("cycle") == c)})
    subpools = bool(tables["nodepools"]["parent"].is_not_null().any())
    classes, users, jobs = (_counter_chain(blocks, job_id, who.class_name, who.user, subpools) if fair
                            else (None, None, None))
    return Story(
        job_id=job_id, cycle=c, first_cycle=cycles[0], last_cycle=cycles[-1], work_type=who.work_type,
        user=who.user, class_name=who.class_name, policy=cls.policy if cls else None,
        nodepool=cls.nodepool if cls else None, memory_gb=who.memory_gb, order=who.order,
        threads=work.cap_input.threads if work else None, remaining=work.cap_input.remaining if work else None,
        count=_logged_count(_rows(tables, "counts", c, job_id)), logged_caps=_logged_caps(tables, c, job_id),
        caps=job_caps(work.cap_input) if work else None, shares=held, placed=_placed(tables, c, job_id),
        taken=_taken(tables, c, job_id, quantum), reason=reason, classes=classes, users=users, jobs=jobs,
        life=_life(tables, job_id, cycles) if with_life else (), sections=(),
    )


def _sections(tables: dict[str, pl.DataFrame], story: Story, inp: CycleInput | None) -> tuple[Section, ...]:
    """The story's sections: its life when told, then the eight levels of the cycle's detail."""
    c, job_id = story.cycle, story.job_id
    quantum = inp.config.quantum_gb if inp else 15
    work = next((w for w in inp.work if w.job_id == job_id), None) if inp else None
    cls = inp.class_of(work) if inp and work else None
    not_fair = story.policy is not None and story.policy != "FAIR_SHARE"
    count_rows = _rows(tables, "counts", c, job_id)
    sections = [_life_section(story.life)] if story.life else []
    sections += [
        _job_section(job_id, work, story.work_type, story.user, story.class_name, cls, story.memory_gb,
                     story.order, quantum),
        _cap_section(story.caps, work.cap_input if work else None, story.logged_caps),
        _counting_section(f"3. Its class among the classes of nodepool {story.nodepool or '?'}", story.classes,
                          "No class count: " + ("the class is not fair share." if not_fair
                                                else "no RmCounter block names the class this cycle.")),
        _counting_section(f"4. Its user among the users of class {story.class_name}", story.users,
                          "No user count: " + ("the class is not fair share." if not_fair
                                               else "the class got nothing to divide among its users.")),
        _count_section(story.count, count_rows, story.jobs, story.policy),
        _placement_section(story.placed, _rows(tables, "expansions", c, job_id)),
        _taken_section(story.taken, _defrag_lines(tables, c, job_id) + _kept_lines(tables, c, job_id),
                       _confirmed_gone(tables, c, job_id)),
        _waiting_section(story.reason, count_rows, story.shares, story.count),
    ]
    return tuple(sections)


def explain_job(tables: dict[str, pl.DataFrame], job_id: int, cycle: int | None = None) -> Story:
    """The story of one job: its life (when `cycle` is None) and the detail of one cycle.

    Raises InputError when the job is not in the log or the cycle is out of range.
    """
    cycles = _job_cycles(tables, job_id)
    c = _chosen_cycle(tables, job_id, cycles, cycle)
    inp = _cycle_input(tables, c)
    story = _facts(tables, inp, job_id, c, cycles, with_life=cycle is None)
    return replace(story, sections=_sections(tables, story, inp))


def _summary(story: Story) -> str:
    hosts: dict[str, int] = {}
    for h in story.hosts:
        hosts[h] = hosts.get(h, 0) + 1
    where = ", ".join(f"{n} on {h}" for h, n in hosts.items())
    count = f"How Much gave it {story.count}" if story.count is not None else "no How Much count logged"
    return (f"Cycle {story.cycle}: {count} (cap {_cap_text(story.actual_cap)}); it holds "
            f"{_plural(len(story.shares), 'process')} after the cycle" + (f": {where}." if where else "."))


def render(story: Story) -> str:
    """The story as plain text."""
    head = (f"{story.work_type} {story.job_id}: user {story.user}, class {story.class_name}"
            f" ({story.policy or 'unknown policy'}), published in cycles {story.first_cycle}-{story.last_cycle}")
    out = [head, "=" * len(head), _summary(story), ""]
    for section in story.sections:
        out.append(section.title)
        out += [f"  {line}" for line in section.lines]
        out.append("")
    return "\n".join(out).rstrip() + "\n"
