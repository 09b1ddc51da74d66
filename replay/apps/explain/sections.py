"""The story's sections in words: the job's life, then the eight levels of one cycle's detail."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from fractions import Fraction

import polars as pl

from replay.apps.explain.story import (
    Competitor,
    Counting,
    HeldShare,
    LifeEvent,
    LoggedCaps,
    Placed,
    Section,
    Story,
    Taken,
)
from replay.apps.explain.text import by_order, cap_text, fraction, plural, spaces_text
from replay.model.cycleref import label
from rmref import UNLIMITED, CapInput, Caps
from rmref.model import ClassDef, Work


def life_section(life: tuple[LifeEvent, ...]) -> Section:
    """The job's life: its events cycle by cycle."""
    return Section("Life", tuple(f"cycle {label(e.cycle, e.epoch)}: {e.text}" for e in life))


def _class_words(cls: ClassDef | None, class_name: str) -> str:
    if cls is None:
        return f"class {class_name} (not defined in the configuration)"
    return (f"class {cls.name} ({cls.policy}, priority {cls.priority}, weight {cls.weight}, "
            f"nodepool {cls.nodepool})")


def job_section(job_id: int, work: Work | None, work_type: str, user: str, class_name: str,
                cls: ClassDef | None, memory_gb: int, order: int, quantum: int) -> Section:
    """Who the job is: type, user, class, memory and order, and what it asked for."""
    lines = [f"{work_type} {job_id} of user {user}, {_class_words(cls, class_name)}.",
             f"Memory {memory_gb} GB: share order {order} ({memory_gb} GB / {quantum} GB quantum, rounded up)."]
    if work is not None:
        cap = work.cap_input
        held = sum(1 for s in work.shares if not s.pending_removal)
        lines.append(f"{plural(cap.threads, 'thread')} per process; {plural(cap.remaining, 'work item')} "
                     f"remaining; {plural(held, 'process')} held when the cycle began.")
        if cap.max_processes < UNLIMITED:
            lines.append(f"The submission allows at most {plural(cap.max_processes, 'process')}.")
    return Section("1. The job", tuple(lines))


def rule_words(caps: Caps, cap: CapInput) -> str:
    """Why `actual` is what it is, in words."""
    wanted = -(-max(cap.remaining, 0) // max(cap.threads, 1))
    base = (f"the base cap: {plural(cap.remaining, 'work item')} / {plural(cap.threads, 'thread')} "
            f"rounded up = {wanted}"
            + (f", at most the {cap.max_processes} max processes" if cap.max_processes < wanted else "")
            + (f", at least the {cap.current} processes held" if cap.current > wanted else ""))
    words = {
        "base": f"bound by {base}",
        "prediction": (f"bound by prediction: from the time per work item the RM projects {cap_text(caps.projected)} "
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


def cap_section(caps: Caps | None, cap: CapInput | None, logged: LoggedCaps | None) -> Section:
    """The cap chain: as logged, and as rmref computes it."""
    lines = []
    if logged is not None:
        pred = " (could not predict)" if logged.prediction == "cannot_predict" else ""
        lines.append(f"Logged cap chain: base {cap_text(logged.base)}, expected {cap_text(logged.expected)}{pred}, "
                     f"potential {cap_text(logged.potential)}, actual {cap_text(logged.actual)}.")
    elif cap is not None and (cap.completed or cap.refused):
        # initJobCap is not run for such work: no cap is logged, none is a decision
        what = "completed" if cap.completed else "refused"
        lines.append(f"No cap: the RM logs none for {what} work, and the job is {what} in this cycle "
                     "(as the audit reads a cycle without its cap line).")
    else:
        lines.append("The RM logged no cap chain for this job in this cycle.")
    if caps is not None and cap is not None:
        lines.append(f"rmref's chain: base {cap_text(caps.base)}, projected {cap_text(caps.projected)}, "
                     f"potential {cap_text(caps.potential)}, actual {cap_text(caps.actual)}.")
        lines.append(f"Actual cap {cap_text(caps.actual)}: {rule_words(caps, cap)}.")
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
            f"{fraction(c.weight, total_weight)} of {qshares} quantum shares ({float(share):.1f}); "
            f"wants {by_order(c.wanted)}; got {by_order(c.given)}{mark}")


def _counting_lines(counting: Counting) -> list[str]:
    """One RmCounter block in words: what it divides, each competitor's weight share and result."""
    what, _ = _LEVELS.get(counting.level, ("entity", "entities"))
    total = sum(c.weight for c in counting.competitors)
    block = f"the RM's RmCounter block {counting.block}" if counting.block else "no block of the RM's log"
    lines = [f"{counting.level} (rmref's run, the audit's; {block}) divides {counting.quantum_shares} quantum "
             f"shares ({spaces_text(counting.vmachines)})."]
    if counting.logged_vmachines is not None and _trimmed(counting.logged_vmachines) != _trimmed(counting.vmachines):
        lines.append(f"The RM's block divided other free space: {spaces_text(counting.logged_vmachines)}.")
    if counting.approximate:
        lines.append("Approximate for the other classes: with subpools a class's bonus is bounded by its own "
                     "pool's free space, which this recomputation does not model (this job's class: exact, "
                     "from its user count).")
    lines += [_competitor_line(c, total, counting.quantum_shares, counting.mine, what) for c in counting.competitors]
    me = counting.of(counting.mine)
    award = counting.logged_award
    if me is not None and award is not None and _trimmed(award[1:]) != _trimmed(me.given[1:]):
        lines.append(f"The RM gave {what} {me.name} {award[0]} ({spaces_text(award)}), rmref {me.given[0]}.")
    elif me is not None and award is not None:
        lines.append(f"The RM's log shows the same award for {what} {me.name}.")
    if me is not None and me.given[0] < me.wanted[0]:
        why = ("it was alone: that is all the space held for its order" if len(counting.competitors) == 1
               or me.weight == total else "the others' weights and the shape of the free space took the rest")
        lines.append(f"{what.capitalize()} {me.name} got {me.given[0]} of the {me.wanted[0]} it wanted: {why}.")
    return lines


def _trimmed(vector: tuple[int, ...]) -> tuple[int, ...]:
    out = list(vector)
    while out and out[-1] == 0:
        out.pop()
    return tuple(out)


def counting_section(title: str, counting: Counting | None, missing: str) -> Section:
    """One counter's lines (How Much), or `missing` when the log has none."""
    return Section(title, tuple(_counting_lines(counting)) if counting else (missing,))


def _fixed_lines(rows: pl.DataFrame) -> list[str]:
    """Count rows of fixed-share and reservation work (no RmCounter: a request is granted or not)."""
    lines = []
    for r in rows.iter_rows(named=True):
        kind = r["kind"]
        if kind == "granted":
            lines.append(f"Granted {r['nqm'] or r['shares_given']} in nodepool {r['nodepool'] or '-'}.")
        elif kind == "stable":
            lines.append(f"Stable: keeps its {plural(r['shares'] or 0, 'process')}.")
        elif kind == "available":
            lines.append(f"{r['count']} spaces of order {r['order']} available.")
        elif kind in ("deferred", "deferring", "out_of_shares"):
            text = (r["reason"] or kind).rstrip(".")
            lines.append(f"{text}." if text.startswith("Deferred") else f"Deferred: {text}.")
    return lines


def count_section(story: Story, rows: pl.DataFrame, left_out: str | None = None) -> Section:
    """The job's own count: rmref's (the audit's run) beside the RM's, and where they part if they do
    (`left_out`: why rmref's is not told, the audit having left the cycle's counts out)."""
    policy, jobs = story.policy, story.jobs
    if policy and policy != "FAIR_SHARE":
        lines = [f"{policy} work is not weighed against others: the RM grants the whole request if it fits."]
        lines += _fixed_lines(rows)
    else:
        lines = (_counting_lines(jobs) if jobs else [left_out] if left_out
                 else ["No job count: the user got nothing to divide among its jobs."])
    count = story.count
    lines.append(f"The RM's How Much count for this job: {plural(count, 'process')}." if count is not None
                 else "The RM logged no How Much count for this job in this cycle.")
    ours = story.rmref.count if story.rmref else None
    if ours is not None:
        lines.append(f"rmref's count (the audit's run): {plural(ours, 'process')}.")
    for d in story.causes:
        if d.decision == "counts":
            lines.append(f"rmref and the RM part at {d.explanation}.")
    title = "5. Its count among its user's jobs" if not policy or policy == "FAIR_SHARE" else f"5. Its count ({policy})"
    return Section(title, tuple(lines))


def placement_section(placed: tuple[Placed, ...], expansions: pl.DataFrame, verified: list[str]) -> Section:
    """Where What Of placed the job's new processes, and why there."""
    lines = []
    for r in expansions.filter(pl.col("kind") == "find_shares_counted").iter_rows(named=True):
        lines.append(f"What Of: counted {r['counted']}, holds {r['current']}, "
                     f"needs {r['needed']} more of order {r['order']}.")
    if placed:
        lines.append("The RM looks at machines by free space, the smallest space that fits the order first, "
                     "so new processes pack onto the fullest machines that still have room.")
    for p in placed:
        machine = f"a machine of order {p.machine_order}" if p.machine_order is not None else "a machine"
        before = (f" with {p.free_before} quantum shares free and {p.active_before} in use before"
                  if p.free_before is not None else "")
        handed = f" (placed for job {p.placed_for}, handed over by defragmentation)" if p.placed_for else ""
        if p.cancelled:
            handed += " (cancelled before publication: defragmentation gave the space to a needy job)"
        lines.append(f"New process {p.host}.{p.share_id} (order {p.order}) on {machine}{before}{handed}.")
    if not lines:
        lines.append("No new process this cycle.")
    return Section("6. Where new processes went", tuple(lines + verified))


_TAKEN_WORDS = {
    "shrink": "preempted: the job holds more than its count, so the RM shrinks it (least invested processes first)",
    "schedule_removal": "removed in the published schedule",
    "node_purge": "purged: its node died",
    "clear_for_reservation": "evicted to clear a machine for a reservation",
    "removal": "listed for removal in the published schedule",
    # replay.model.leaving: the cycle's first schedule lists it, and no line of the cycle can have decided it
    "leaving": ("already leaving as the log began (inferred: its removal was decided before the log's first line, "
                "so this cycle did not take it)"),
}


def defrag_lines(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
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
        how = (" (inferred: INFO names no needy job; rmref's run of the cycle took this same share for it)"
               if t.by_rmref else " (inferred: the needy job's search covered this host)" if t.inferred else "")
        return f"taken by defragmentation for needy job {t.needy_job}{how}"
    return _TAKEN_WORDS.get(t.reason, t.reason)


def taken_section(taken: tuple[Taken, ...], defrag: list[str], gone: list[str]) -> Section:
    """What was preempted or taken from the job this cycle."""
    lines = [f"{t.host}.{t.share_id}" + (f" (order {t.order})" if t.order else "") + ": " + _taken_words(t) + "."
             for t in taken]
    lines += defrag
    if gone:
        lines.append(f"Confirmed gone by the Orchestrator: {', '.join(gone)}.")
    return Section("7. Preempted or taken", tuple(lines) or ("Nothing was taken from it this cycle.",))


def _preemption_words(count: int | None, keeps: int) -> str:
    """The RM publishes "Waiting for preemptions." for any job its placement pass leaves with no
    process (NodepoolScheduler, NodePool: countNShares() == 0), whatever How Much counted."""
    if keeps:
        return (f"the RM gave this reason when the job was left with no process and has not cleared it: "
                f"it now holds {plural(keeps, 'process')}")
    if count == 0:
        return ("How Much gave it nothing this cycle, so it holds no process (the RM gives this reason to any "
                "job its placement pass leaves with none); it waits until its class or user is owed more")
    if count is None:
        return "its placement pass left it with no process (the RM gives this reason to any job left with none)"
    return (f"it was counted {plural(count, 'process')} but none could be placed: no machine had room of its "
            "order; it waits until processes preempted from other jobs are gone")


def _defrag_reason_words(kinds: Collection[str], keeps: int) -> str:
    """The RM publishes "Waiting for defragmentation." for a needy job still holding nothing after
    takeFromTheRich, whether or not it freed enough space (the freed processes must go first)."""
    if "satisfied" in kinds:
        return ("defragmentation found it the space it needs this cycle (taking from richer jobs where "
                "needed, section 7); it holds nothing until the processes taken are gone")
    if "failed" in kinds:
        return "it is needy and defragmentation could not get enough from the rich this cycle"
    if keeps:
        return (f"the RM gave this reason when defragmentation left it with no process and has not cleared it: "
                f"it now holds {plural(keeps, 'process')}")
    return "it is needy and holds no process: no space big enough for one of its processes has been freed yet"


def _reason_words(reason: str, count: int | None, keeps: int, defrag: Collection[str]) -> str | None:
    """What the RM's published reason means for this job in this cycle (None: no more than it says)."""
    if reason == "Waiting for preemptions.":
        return _preemption_words(count, keeps)
    if reason == "Waiting for defragmentation.":
        return _defrag_reason_words(defrag, keeps)
    if reason == "No machines match user specified list.":
        return "none of the machines the submission names can hold it"
    return None


def waiting_section(reason: str | None, count_rows: pl.DataFrame, held: tuple[HeldShare, ...],
                    count: int | None, defrag: Collection[str] = ()) -> Section:
    """What the job waits for: the RM's published reason, read with the cycle's count, what it
    holds and what defragmentation did for it (`defrag`: its defrag row kinds), so the words
    never contradict the sections before."""
    lines = []
    keeps = sum(1 for s in held if not s.removing)
    if reason:
        lines.append(f"Published reason: {reason}")
        words = _reason_words(reason, count, keeps, defrag)
        if words:
            lines.append(f"That is, {words}.")
    for r in count_rows.filter(pl.col("reason").is_not_null()).iter_rows(named=True):
        if r["reason"] != reason:
            lines.append(f"Counting said: {r['reason']}")
    if not lines:
        if count is not None and keeps < count:
            lines.append(f"It keeps {keeps} of its {count}: the rest wait for space to be freed.")
        elif count is not None and keeps > count:
            lines.append(f"Nothing: it keeps {keeps}, more than its count of {count}, until a shrink takes the rest.")
        else:
            lines.append("Nothing: it keeps what it was counted.")
    return Section("8. What it waits for", tuple(lines))
