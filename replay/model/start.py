"""Where a replay of a log starts: one computation that every command reads (audit, explain,
whatif, check, simulate, report, the TUI), so that a log that starts mid-stream is treated alike.

A log whose beginning rolled away lacks the bootstrap (the settings are inferred, `Bootstrap.assumed`),
the nodes' arrival (their sizes are stated or inferred, `Inventory.assumed`), the first cycle's
beginning (that cycle is partial, not replayed) and the submission of the work already running
(that work predates the log). `replay_start` computes all of it once.

Here too the entry points every command rebuilds cycles by: `bootstrap` (the settings, its open cap
settings settled by replaying the cap chain), `machine_inventory`, `node_liveness` and `cycle_inputs`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import polars as pl

from replay.model import settings as st
from replay.model.assembly import assemble
from replay.model.bootstrap import Bootstrap, open_cap_classes, properties_unread, read_bootstrap, with_cap_settings
from replay.model.clock import OpenProcesses, open_processes
from replay.model.damage import BAD_BYTES, NUL, UNPARSED, Damage, damaged_cycles, resume_points
from replay.model.handover import settle_handovers
from replay.model.held_inputs import HeldInputs, ReadOnce, Reads
from replay.model.leaving import leaving_assumed, removals_unsure, starts_midstream
from replay.model.logged import Logged, logged_decisions
from replay.model.machines.inventory import Inventory, stated_inventory
from replay.model.machines.liveness import NodeLiveness
from replay.model.pools import pool_of
from replay.model.machines.solver import infer_inventory, whole_cycles
from replay.model.orders import ORDER_SCHEMA, orders_assumed, work_orders
from replay.model.settings import Assumption
from replay.model.stale import StaleFree, stale_free
from replay.model.threshold import settle_threshold, threshold_unsettled
from rmref.behaviours import Behaviours
from rmref.model import CycleInput

PARTIAL_CYCLE = "the log starts inside this cycle (its scheduling pass began before the first line)"
NODE_FREE = ("caps",)  # decisions that do not depend on the machines (a cap reads only the job)
PREDATES = "already there when the log begins (its submission is not in the log)"
CLASS_UNKNOWN = ("the class of {jobs} is not in the log (submitted before the log began, or before a gap in "
                 "it, and never counted by class since): every phase reads a job's class")

CLASS_UNDEFINED = ("the definition of class {cls} ({jobs}) is not in the configuration rmref read, yet the RM "
                   "schedules work of that class ({where} names it): lines lost from the boot section (or a "
                   "--config DIR that lacks it); every phase reads a job's class")

MEMORY_UNKNOWN = ("the memory of {jobs} is not in the log (submitted before the log began, or before a gap in "
                  "it, and no line since gives it): every phase reads a process's size")

REPORTS_UNKNOWN = ("job {job} is counted fewer processes than it holds, and whether its {shares}, there before the "
                   "log began (or a gap in it), had reported is not in the log: shrinkBy takes a process still "
                   "initializing first")
UNREAD_REPORTS = ("whether job {job}'s {shares} had reported is not in the log: lines before this cycle that may "
                  "say so are unreadable (input damaged), and no line since shows it; shrinkBy and takeFromTheRich "
                  "take a process still initializing first")
REPORT_READERS = ("evictions", "defrag", "schedule")  # the decisions shrinkBy's choice decides


def bootstrap(tables: Mapping[str, pl.DataFrame]) -> Bootstrap:
    """Configuration, classes and nodepools from `config`/`classes`/`nodepools` tables, with what
    they leave open inferred from the log (replay.model.bootstrap, replay.model.settings).

    Raises InputError naming what is missing when the log (or resources) did not have them.
    """
    boot = read_bootstrap(tables)
    open_classes = open_cap_classes(tables)
    return _settle_cap_settings(tables, boot, open_classes) if open_classes else boot


def _settle_cap_settings(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, open_classes: set[str]) -> Bootstrap:
    """The initialization cap, doubling and prediction of the classes that take them from a
    missing ducc.properties (together, each class's own settings kept), and of a class whose
    block lost some of them (alone, its settings read kept): the values under which rmref's cap
    chain gives the logged caps."""
    own = _own_cap_settings(tables, open_classes)
    provisional = _with_cap_settings(boot, own, st.DOCUMENTED_CAPS)
    logged = dict(((c, j), a) for c, j, a in tables["job_caps"].filter(pl.col("cycle").is_not_null())
                  .select("cycle", "job_id", "actual_cap").iter_rows())
    inventory = stated_inventory(tables, pool_of(tables, boot), boot.config.quantum_gb)
    samples = [(w.class_name, w.cap_input, logged[(inp.cycle, w.job_id)])
               for inp in assemble(tables, provisional, inventory)
               for w in inp.work if w.class_name in open_classes and (inp.cycle, w.job_id) in logged]
    assumed = list(boot.assumed)
    for names, owner in cap_groups(tables, open_classes):
        group = [(n, c, a) for n, c, a in samples if n in names]
        chosen, said = st.choose_cap_settings([(c, a) for _n, c, a in group], own[owner] if owner else None, owner,
                                              [frozenset(own[n]) for n, _c, _a in group])
        boot = _with_cap_settings(boot, {n: own[n] for n in names}, chosen)
        assumed += said
    return replace(boot, assumed=tuple(assumed))


def _own_cap_settings(tables: Mapping[str, pl.DataFrame], open_classes: set[str]) -> dict[str, dict[str, Any]]:
    """Each open class's cap settings that the log or the class file gives (CapSettings field: value)."""
    return {r["name"]: {f: (r[f] if f == "init_cap" else bool(r[f])) for f in st.CAP_FIELDS.values()
                        if r[f] is not None}
            for r in tables["classes"].iter_rows(named=True) if r["name"] in open_classes}


def _with_cap_settings(boot: Bootstrap, own: Mapping[str, Mapping[str, Any]], s: st.CapSettings) -> Bootstrap:
    """`boot` with each class of `own` on the settings `s`, but for those it gives itself."""
    for name, mine in own.items():
        boot = with_cap_settings(boot, {name}, replace(s, **mine))
    return boot


def cap_groups(tables: Mapping[str, pl.DataFrame], open_classes: set[str]) -> list[tuple[set[str], str | None]]:
    """The open classes as they are settled, each group as (names, the one class or None).

    Without ducc.properties, every setting a class does not set itself is the same ducc.rm.* one,
    so all open classes are settled together (a class file's stanza sets what it sets, and
    takes the rest from ducc.rm.*). From a log's bootstrap, which prints every class's three
    settings, a class that read none shares the ducc.rm.* values with the others that read none,
    and one that read some lost the others (a block cut short): it is settled alone."""
    if properties_unread(tables):
        return [(set(open_classes), None)]
    rows = [r for r in tables["classes"].iter_rows(named=True) if r["name"] in open_classes]
    fields = st.CAP_FIELDS.values()
    shared = {r["name"] for r in rows if all(r[f] is None for f in fields)}
    groups: list[tuple[set[str], str | None]] = [(shared, None)] if shared else []
    groups += [({r["name"]}, r["name"]) for r in sorted(rows, key=lambda r: r["name"]) if r["name"] not in shared]
    return groups


def machine_inventory(tables: Mapping[str, pl.DataFrame], boot: Bootstrap,
                      handed_before: frozenset[tuple[int, int]] = frozenset(),
                      once: ReadOnce | None = None) -> Inventory:
    """The nodes there before the log began: stated by the log, or inferred from its counters
    (which replays the cycles assembled here with candidate inventories; `handed_before`: as
    `assemble` takes it; `once`: the start's reads of the log, else read here)."""
    stated = stated_inventory(tables, pool_of(tables, boot), boot.config.quantum_gb)
    if not stated.unknown and not (stated.hosts or starts_midstream(tables)):
        return stated  # the log shows every node arrive
    before = once.before if once is not None else None
    return infer_inventory(tables, stated,
                           lambda inv: assemble(tables, boot, inv, handed_before=handed_before, before=before),
                           once.logged if once is not None else None)


def node_liveness(tables: Mapping[str, pl.DataFrame], boot: Bootstrap,
                  inventory: Inventory | None = None, behaviours: Behaviours | None = None) -> NodeLiveness:
    """The node inventory and liveness, to advance cycle by cycle (`advance(cycle)`), by the rules
    of `behaviours`' release (default: the one `boot` replays)."""
    return NodeLiveness(tables, inventory or machine_inventory(tables, boot), pool_of(tables, boot),
                        behaviours or boot.config.behaviours)


def cycle_inputs(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
                 cycles: range | None = None, inventory: Inventory | None = None,
                 stale: StaleFree | None = None,
                 handed_before: frozenset[tuple[int, int]] = frozenset(),
                 before: pl.DataFrame | None = None) -> Iterator[CycleInput]:
    """rmref's input for every published cycle of the log (or those in `cycles`), in order
    (replay.model.assembly); `inventory`: the nodes there before the log began (default: stated or
    inferred from the log); `stale`, `handed_before`, `before`: as `assemble` takes them."""
    boot = boot or bootstrap(tables)
    yield from assemble(tables, boot, inventory or machine_inventory(tables, boot, handed_before), cycles, stale,
                        handed_before, before)


@dataclass(frozen=True)
class ReplayStart:
    """The configuration, the machines there before the log began, which cycles can be replayed
    whole, and the work that predates the log: what every command replays a log from."""

    boot: Bootstrap
    inventory: Inventory
    whole: frozenset[int]  # cycles whose scheduling pass began in the log
    predates: frozenset[int]  # jobs published before (or without) their submission in the log
    damage: Mapping[int, Damage]  # cycles whose input is damaged (replay.model.damage): replayed by no command
    processes: OpenProcesses = OpenProcesses(0, {})  # those there before the log whose report no line shows
    leaving: tuple[Assumption, ...] = ()  # the processes taken as leaving when a mid-stream log began
    orders: tuple[Assumption, ...] = ()  # the orders no line prints and no class defined gives (orders_assumed)
    handovers: tuple[Assumption, ...] = ()  # the processes handed over before the log began, or taken as not
    handed_before: frozenset[tuple[int, int]] = frozenset()  # (job, share id) of those inferred handed over
    # the inputs the threshold inference assembled, for the replay after it (`reads`; `replay_start`'s `hold`)
    held: HeldInputs | None = field(default=None, compare=False, repr=False)
    # the removals taken as decided before the log began and the logged decisions, read once (None: read on use)
    once: ReadOnce | None = field(default=None, compare=False, repr=False)
    # the settings as given or read (`bootstrap`), before the threshold inference: a stored audit's key reads them
    boot_read: Bootstrap | None = field(default=None, compare=False, repr=False)
    # every job's order and where it comes from (replay.model.orders.work_orders, on `boot`), for the
    # views that count quanta: found once
    work_orders: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ORDER_SCHEMA), compare=False,
                                      repr=False)
    # the first cycle of a mid-stream log whose removals may be from before it or its own (leaving.removals_unsure)
    unsure: Mapping[int, str] = field(default_factory=dict)

    @property
    def assumed(self) -> tuple[Assumption, ...]:
        """Every setting read and its source, the machines inferred, and what is taken for the
        processes there before the log began (whether leaving, whether handed over) and for the orders
        no line prints (report.json 'assumed')."""
        return (self.boot.assumed + self.inventory.assumed + self.processes.assumed() + self.leaving + self.handovers
                + self.orders)

    def skipped(self, cycle: int) -> str | None:
        """Why no decision of `cycle` can be replayed (None: it can): its input is damaged (a cut
        first cycle among the reasons), its removals may be from before the log or its own
        (`unsure`), or the log starts inside it."""
        if cycle in self.damage:
            return f"input damaged: {self.damage[cycle].text()}"
        if cycle not in self.whole:
            return PARTIAL_CYCLE
        return self.unsure.get(cycle)

    def classes_unknown(self, inp: CycleInput) -> str | None:
        """Why no decision of the cycle can be replayed because some of its work has a class, or
        processes of a size, the log never gives, or a class the RM schedules whose definition is
        lost (None: every class and size is given). A job of a class the RM never names is the RM's
        to refuse, and is replayed."""
        for why, jobs in ((CLASS_UNKNOWN, [w.job_id for w in inp.work if not w.class_name]),
                          (MEMORY_UNKNOWN, [w.job_id for w in inp.work if any(not s.order for s in w.shares)])):
            if jobs:
                return why.format(jobs=_jobs(jobs))
        if not self.boot.undefined:  # (the common case: asked every cycle)
            return None
        undefined = {name: f"{file}:{line}" for name, file, line in self.boot.undefined}
        for w in inp.work:
            if w.class_name in undefined:
                jobs = [v.job_id for v in inp.work if v.class_name == w.class_name]
                return CLASS_UNDEFINED.format(cls=w.class_name, jobs=_jobs(jobs), where=undefined[w.class_name])
        return None

    def reports_unknown(self, inp: CycleInput, counts: Mapping[int, int], defrag: bool = False) -> str | None:
        """Why shrinkBy's choice of the cycle (evictions, and the defragmentation and schedule that
        follow it) is not replayed, or None: a job counted fewer processes than it holds holds one
        whose report no line shows (there before the log began, or across lines unread:
        replay.model.clock.OpenProcesses); with `defrag` (the cycle defragments: takeFromTheRich
        also takes a process still initializing first), any job holding one across lines unread."""
        for w in inp.work:
            short = w.job_id in counts and counts[w.job_id] < sum(1 for s in w.shares if not s.pending_removal)
            unknown = [s for s in w.shares
                       if (short and self.processes.unknown(inp.cycle, w.job_id, s.host, s.share_id))
                       or (defrag and self.processes.unread_before(inp.cycle, w.job_id, s.host, s.share_id))]
            if unknown:
                unread = all(self.processes.unread_before(inp.cycle, w.job_id, s.host, s.share_id) for s in unknown)
                return (UNREAD_REPORTS if unread else REPORTS_UNKNOWN).format(
                    job=w.job_id, shares=", ".join(f"{s.host}.{s.share_id}" for s in unknown))
        return None

    def machines_unsettled(self, cycle: int) -> str | None:
        """Why the machines of `cycle` are not known (only NODE_FREE decisions replay then), or None."""
        return self.inventory.unsettled.get(cycle)

    def inputs(self, tables: Mapping[str, pl.DataFrame], cycles: range | None = None,
               stale: StaleFree | None = None) -> Iterator[CycleInput]:
        """rmref's input of every published cycle (those in `cycles`) on these settings and machines."""
        return cycle_inputs(tables, self.boot, cycles, inventory=self.inventory, stale=stale,
                            handed_before=self.handed_before, before=self.once.before if self.once else None)

    def logged(self, tables: Mapping[str, pl.DataFrame]) -> Logged:
        """The RM's logged decisions, as every part of the start read them (`once`), else read now."""
        return self.once.logged() if self.once is not None else logged_decisions(tables)

    def reads(self, tables: Mapping[str, pl.DataFrame], cycles: range | None = None) -> Reads:
        """What a replay of every cycle (those in `cycles`) reads: the inputs the threshold inference
        assembled, handed over the first time they are asked for (`held`), else assembled now."""
        taken = self.held.take(self.boot, cycles) if self.held is not None else None
        if taken is not None:
            return taken
        stale = stale_free(tables, self.boot.nodepools, self.boot.config.quantum_gb)
        return Reads(self.logged(tables), stale, self.inputs(tables, cycles, stale=stale))

    def let_go(self) -> None:
        """Let go of the inputs held for a replay (`held`) that none took: the caller's replay is done."""
        if self.held is not None:
            self.held.drop()


def _jobs(jobs: list[int]) -> str:
    return ("job " if len(jobs) == 1 else "jobs ") + ", ".join(map(str, jobs))


def predates_log(tables: Mapping[str, pl.DataFrame]) -> frozenset[int]:
    """Jobs the log publishes but never shows submitted: they were there before its first line."""
    published = tables["schedule"].filter(pl.col("job_id").is_not_null())["job_id"].unique()
    submitted = tables["jobs"].filter(pl.col("source") == "submit")["job_id"].unique()
    return frozenset(set(published.to_list()) - set(submitted.to_list()))


def replay_start(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None, hold: bool = False) -> ReplayStart:
    """The replay's start (see the module docstring); InputError when the bootstrap is missing.
    `hold`: the caller replays every cycle next (`ReplayStart.reads`), and takes over the inputs
    the threshold inference assembles rather than assembling them again (on a log without gaps:
    each part of one with gaps is replayed from its own start)."""
    boot = boot or bootstrap(tables)
    once = ReadOnce(tables)  # what the machines, the handovers, the threshold and the replay read alike
    damage = damaged_cycles(tables)
    # a cycle with lines unread may have lost a process's report (reconcileProcess's "New process ...
    # Running"): shrinkBy's choice then rests on what the log does not say
    unreadable = [c for c, d in damage.items() if any(r in (UNPARSED, NUL, BAD_BYTES) for r, *_ in d.reasons)]
    # a process defragmentation handed over before a mid-stream log began, where the counters show it
    handed, inventory, handovers = settle_handovers(tables, boot, machine_inventory(tables, boot, once=once),
                                                    lambda h: machine_inventory(tables, boot, h, once))
    orders = work_orders(tables, boot.config.quantum_gb, boot)
    start = ReplayStart(boot, inventory, frozenset(whole_cycles(tables)), predates_log(tables),
                        damage, open_processes(tables, unreadable), leaving_assumed(tables, once.before),
                        orders_assumed(tables, orders), handovers, handed, once=once, boot_read=boot,
                        work_orders=orders, unsure=removals_unsure(tables, once.before))
    if not threshold_unsettled(start.boot):
        return start
    # the threshold no file or line pins, read off the RM's defragmentation (once, for every command)
    reads = start.reads(tables)
    if not hold or resume_points(damage):
        return replace(start, boot=settle_threshold(start, reads.logged, reads.inputs))
    inputs = list(reads.inputs)
    return replace(start, boot=settle_threshold(start, reads.logged, inputs),
                   held=HeldInputs(start.boot, inputs, reads.logged, reads.stale))
