"""What the TUI shows, precomputed once per log as polars frames sorted by cycle.

Every view (jobs, nodes, defragmentation, divergences, raw lines) is one frame for the whole log,
sorted by cycle, so showing a cycle is a binary search and a zero-copy `slice`: moving between
cycles never rebuilds a table. The audit's frames arrive later (it runs in the background) and
are joined in once with `Browse.with_audit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, time
from functools import cache, lru_cache

import numpy as np
import polars as pl

from replay.apps.audit import DIVERGENCE_SCHEMA
from replay import InputError
from replay.model.cycleref import parse_ref, resolve
from replay.model.damage import Damage
from replay.model.release import ReleaseChoice
from replay.model.inputs import job_descriptions
from replay.model.logged import defrag_takings, in_cycles, logged_counts
from replay.model.machines.liveness import ORDER_ALIKE
from replay.model.nodes import node_cycles
from replay.model.orders import ORDER_ASSUMED, ORDER_LOGGED, ORDER_POOL, work_orders
from replay.model.reads import narrow
from replay.model.bootstrap import Bootstrap
from replay.model.start import bootstrap
from replay.parsing.store import ParquetTables
from replay.parsing.tables import LEFT
from replay.model.logorder import log_order
from tui.views import Later, Sliced, deferred

DEFRAG_KINDS = ["needy_detected", "needy", "failed", "satisfied", "machines_found", "candidate_machine",
                "free_space"]
LOG_LINE_LIMIT = 4000  # a DEBUG cycle can print tens of thousands of lines; the Log tab shows the first ones


@dataclass
class LogLines:
    """The raw lines of the input, and the first line (0-based, across files) of every cycle."""

    text: pl.Series
    starts: dict[int, int]

    def at(self, cycle: int, next_cycle: int | None) -> tuple[list[str], int]:
        """The cycle's lines (at most LOG_LINE_LIMIT) and how many it has in all."""
        lo = self.starts.get(cycle, 0)
        hi = self.starts.get(next_cycle, len(self.text)) if next_cycle is not None else len(self.text)
        n = max(hi - lo, 0)
        return self.text.slice(lo, min(n, LOG_LINE_LIMIT)).to_list(), n


def log_lines(lines: pl.DataFrame, cycles: pl.DataFrame) -> LogLines:
    """Index the raw lines by cycle: a cycle runs from its loop-entry line to the next one's."""
    offsets: dict[str, int] = {}
    total = 0
    for name, n in lines.group_by("file", maintain_order=True).len().iter_rows():
        offsets[name] = total
        total += n
    starts: dict[int, int] = {}
    for i, (cycle, file, line) in enumerate(cycles.select("cycle", "file", "line").iter_rows()):
        # the bootstrap section before the first loop belongs to the first cycle (as in the tables)
        starts[cycle] = 0 if i == 0 else offsets.get(file, 0) + (line or 1) - 1
    return LogLines(lines["text"], starts)


# Colours of the family groups in the Log tab (the grouping `rmreplay parse` prints).
GROUP_STYLES = {
    "bootstrap": "grey62", "nodes": "cyan", "jobs and processes": "green", "job caps": "magenta",
    "how much": "yellow", "what of": "bright_blue", "evictions": "red", "defragmentation": "bright_red",
    "schedule and cycles": "bold white", "occupancy and tables": "blue", "generic messages": "default",
    "other": "default",
}


@lru_cache(maxsize=1)
def method_groups() -> dict[str, str]:
    """The family group of every logging method the grammar routes (on first use: the Log tab)."""
    from replay.parsing.groups import GROUPS, family_group
    from replay.parsing.families import ROUTES

    assert set(GROUPS) <= set(GROUP_STYLES)
    groups: dict[str, str] = {}
    for (_cls, method), routes in ROUTES.items():
        groups.setdefault(method, family_group(routes[0].family))
    return groups


def line_style(line: str) -> str:
    """The style of a raw log line: by the family group of its method (continuation lines: dim)."""
    if len(line) < 25 or not line[:2].isdigit():
        return "dim"
    if " WARN " in line[:35] or " ERROR " in line[:35]:
        return "bold red"
    parts = line[25:].split(None, 6)  # LEVEL RM.Class - JID T[n] method ...
    method = parts[5] if len(parts) > 5 else ""
    return GROUP_STYLES.get(method_groups().get(method, "other"), "default")


# why a job's order is not the RM's own, where it is not (the job's screen says it; "": unknown)
ORDER_NOTES = {
    "": "order unknown: no line prints it, and no quantum is known",
    ORDER_ASSUMED: "order assumed: its memory over the global quantum (no line prints it, and no class the "
                   "configuration defines gives its pool's)",
    ORDER_POOL: "order inferred: its memory over the quantum of the pool its processes run in (no line prints "
                "it, and the configuration does not define its class)",
}


def jobs_frame(tables: Mapping[str, pl.DataFrame], quantum: int | None, only: int | None = None,
               boot: Bootstrap | None = None, orders: pl.DataFrame | None = None) -> pl.DataFrame:
    """One row per (cycle, job) the published schedule lists: who, what it holds and the logged decisions;
    a job's order as every view reads it (replay.model.orders.work_orders, on `boot`'s classes and
    the global `quantum`: None, unknown; `orders`, where the caller found them), `order_from` saying
    where it comes from. `only`: the rows of that cycle alone (the same rows as the whole frame's of
    that cycle)."""
    if only is None:
        sched = in_cycles(tables["schedule"])
    else:  # that cycle's schedule, read alone; then only its jobs' rows of every table read below
        sched = (tables.cycle_rows("schedule", only) if isinstance(tables, ParquetTables)
                 else tables["schedule"].filter(pl.col("cycle") == only))
        tables = of_jobs(tables, sched["job_id"].unique())
    held = sched.group_by("cycle", "job_id", maintain_order=True).agg(
        pl.col("work_type").first().alias("type"),
        pl.col("memory_gb").first(),
        (pl.col("kind") == "existing").sum().cast(pl.Int64).alias("held"),
        (pl.col("kind") == "addition").sum().cast(pl.Int64).alias("added"),
        (pl.col("kind") == "removal").sum().cast(pl.Int64).alias("removed"),
        pl.col("host").filter(pl.col("kind") == "existing").unique(maintain_order=True).sort()
        .str.join(" ").alias("hosts"),
        pl.col("reason").drop_nulls().first().alias("sched_reason"),
        pl.col("refused").fill_null(False).any().alias("refused"),
    ).sort("cycle")
    # who each job is, as every command reads it: work there before the log began included
    described = (in_cycles(job_descriptions(tables)).sort(log_order("job_id", "cycle"), nulls_last=False)
                 .unique(["job_id", "cycle"], keep="last", maintain_order=True)
                 .select("job_id", "cycle", "user", "class", pl.col("order").alias("job_order"),
                         pl.col("memory_gb").alias("submitted_gb")).sort("cycle"))
    # the RM logs a cap for every job but a completed or refused one (replay.model.assembly): a
    # cycle without its line shows none, not the last logged
    caps = (in_cycles(tables["job_caps"]).filter(pl.col("actual_cap").is_not_null())
            .unique(["cycle", "job_id"], keep="last", maintain_order=True)
            .select("cycle", "job_id", pl.col("actual_cap").alias("cap")))
    counted = logged_counts(tables).select("cycle", "job_id", pl.col("shares_given").alias("counted"))
    deferred = in_cycles(tables["counts"]).filter(pl.col("reason").is_not_null()).group_by("cycle", "job_id").agg(
        pl.col("reason").unique(maintain_order=True).str.join("; ").alias("count_reason"))
    out = (held.join_asof(described, on="cycle", by="job_id", strategy="backward", check_sortedness=False)
           .join(caps, on=["cycle", "job_id"], **LEFT)
           .join(counted, on=["cycle", "job_id"], **LEFT)
           .join(deferred, on=["cycle", "job_id"], **LEFT))
    known = orders if orders is not None else work_orders(tables, quantum, boot)
    out = out.join(known.rename({"order": "_order"}), on="job_id", **LEFT)
    order = pl.coalesce("job_order", "_order")
    # (a cycle's own printed order: a reservation's may grow, countFreeableMachines' upgrade)
    order_from = pl.when(pl.col("job_order").is_not_null()).then(pl.lit(ORDER_LOGGED)).otherwise(pl.col("order_from"))
    # as drawn: "?" unknown, "N?" assumed (ORDER_NOTES says why on the job's screen)
    shown = (pl.when(order.is_null()).then(pl.lit("?"))
             .when(order_from == ORDER_ASSUMED).then(pl.format("{}?", order)).otherwise(order.cast(pl.String)))
    # work the RM refused (createState's "Refused: why") never joins its jobs: not Dormant
    state = (pl.when(pl.col("refused")).then(pl.lit("Refused"))
             .when(pl.col("added") > 0).then(pl.lit("Expanded"))
             .when(pl.col("removed") > 0).then(pl.lit("Shrunken"))
             .when((pl.col("type") == "Reservation") & (pl.col("held") > 0)).then(pl.lit("Reserved"))
             .when(pl.col("held") > 0).then(pl.lit("Stable"))
             .otherwise(pl.lit("Dormant")))
    return out.with_columns(
        order.alias("order"), order_from.alias("order_from"), shown.alias("order_shown"),
        order_from.fill_null("").replace_strict(ORDER_NOTES, default=None, return_dtype=pl.String).alias("order_note"),
        state.alias("state"),
        # the memory submitted: the schedule prints it rounded up to the quantum
        pl.coalesce("submitted_gb", "memory_gb").alias("memory_gb"),
        pl.coalesce("sched_reason", "count_reason").alias("reason"),
        pl.lit(None, pl.Int64).alias("ref_cap"), pl.lit(None, pl.Int64).alias("ref_counted"),
        pl.lit(0, pl.Int64).alias("divergences"),
    ).select("cycle", "job_id", "type", "user", "class", "order", "order_from", "order_shown", "order_note", "cap",
             "counted", "held", "added", "removed", "state", "ref_cap", "ref_counted", "divergences", "reason", "hosts",
             "memory_gb").sort("cycle", "job_id")


JOB_TABLES = ("schedule", "jobs", "job_caps", "counts", "expansions", "eviction_counts")  # what `jobs_frame` reads


def of_jobs(tables: Mapping[str, pl.DataFrame], jobs: pl.Series) -> dict[str, pl.DataFrame]:
    """The rows of `jobs` alone of the tables `jobs_frame` reads (every step there is per job, so
    its rows of those jobs are the same), read from disk with the filter where the tables are on disk."""
    keep = pl.col("job_id").is_in(jobs.implode())
    if isinstance(tables, ParquetTables):
        return {name: tables.where(name, keep) for name in JOB_TABLES}
    return {name: tables[name].filter(keep) for name in JOB_TABLES}


NODES_SCHEMA = {"cycle": pl.UInt32, "host": pl.String, "nodepool": pl.String, "order": pl.Int64,
                "order_from": pl.String, "order_shown": pl.String, "status": pl.String, "blacklisted": pl.Boolean,
                "used": pl.Int64, "free": pl.Int64, "jobs": pl.String}


def nodes_frame(tables: Mapping[str, pl.DataFrame], nodes: pl.DataFrame | None) -> pl.DataFrame:
    """One row per (cycle, machine the RM knew): the world model's machines (`replay.model.nodes`)
    with the quanta the schedule leaves free and, where the DEBUG occupancy table says, blacklisting
    (`free` None where the order is not known, or is one of alike nodes' which no line tells)."""
    if nodes is None:
        return pl.DataFrame(schema=NODES_SCHEMA)
    black = pl.DataFrame(schema={"cycle": pl.UInt32, "host": pl.String, "blacklisted": pl.Boolean})
    if not tables["occupancy"].is_empty():
        black = in_cycles(tables["occupancy"]).group_by("cycle", "host").agg(pl.col("blacklisted").any())
    return (nodes.join(black, on=["cycle", "host"], **LEFT)
            .with_columns(pl.col("blacklisted").fill_null(False),
                          pl.when(pl.col("order_from") != ORDER_ALIKE)
                          .then((pl.col("order") - pl.col("used")).clip(lower_bound=0)).alias("free"))
            .select(list(NODES_SCHEMA)).sort("cycle", "nodepool", "host"))


def defrag_frame(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """Defragmentation per cycle: needy jobs and the machines searched for them, then the shares taken."""
    rows = in_cycles(tables["defrag"]).filter(pl.col("kind").is_in(DEFRAG_KINDS)).select(
        "cycle", "kind", "job_id", "user", "class", "host", "donor_job", "counted", "needed", "detail")
    # the audit's reading of what defragmentation took, not the schedule's every removal
    taken = defrag_takings(tables).select(
        "cycle", pl.lit("taken").alias("kind"), pl.lit(None, pl.Int64).alias("job_id"),
        pl.lit(None, pl.String).alias("user"), pl.lit(None, pl.String).alias("class"), "host",
        pl.col("job_id").alias("donor_job"), pl.lit(None, pl.Int64).alias("counted"),
        pl.lit(None, pl.Int64).alias("needed"), pl.format("share {}", pl.col("share_id")).alias("detail"))
    return pl.concat([rows, taken.cast(rows.schema)]).sort("cycle", maintain_order=True)


def timeline_frame(cycles: pl.DataFrame, tables: Mapping[str, pl.DataFrame], divergences: pl.DataFrame) -> pl.DataFrame:
    """One row per cycle: time, jobs, expanded and shrunken jobs, needy jobs, node deaths, divergences
    (the jobs counted as `jobs_frame` lists them: one per job the cycle's schedule names)."""
    kind = pl.col("kind")
    per = (in_cycles(narrow(tables, "schedule", ("cycle", "job_id", "kind"))).group_by("cycle", "job_id")
           .agg((kind == "addition").any().alias("added"), (kind == "removal").any().alias("removed"))
           .group_by("cycle").agg(pl.len().cast(pl.Int64).alias("jobs"),
                                  pl.col("added").sum().cast(pl.Int64).alias("expanded"),
                                  pl.col("removed").sum().cast(pl.Int64).alias("shrunken")))
    needy = (in_cycles(narrow(tables, "defrag", ("cycle", "kind", "job_id")))
             .filter(pl.col("kind").is_in(["needy", "needy_detected"]))
             .group_by("cycle").agg(pl.col("job_id").n_unique().cast(pl.Int64).alias("needy")))
    deaths = (in_cycles(narrow(tables, "nodes", ("cycle", "event"))).filter(pl.col("event").is_in(["death", "disable"]))
              .group_by("cycle").agg(pl.len().cast(pl.Int64).alias("deaths")))
    div = divergences.group_by("cycle").agg(pl.len().cast(pl.Int64).alias("divergences"))
    return (cycles.select("cycle", "epoch", pl.coalesce("ts_start", "ts_end").alias("ts"))
            .join(per, on="cycle", **LEFT).join(needy, on="cycle", **LEFT)
            .join(deaths, on="cycle", **LEFT).join(div, on="cycle", **LEFT)
            .with_columns(pl.col("jobs", "expanded", "shrunken", "needy", "deaths", "divergences").fill_null(0))
            .sort("cycle"))


EMPTY_DIVERGENCES = pl.DataFrame(schema=DIVERGENCE_SCHEMA)


@dataclass
class Browse:
    """Everything the TUI shows, for every cycle of one log."""

    name: str
    tables: Mapping[str, pl.DataFrame]
    timeline: pl.DataFrame
    jobs: Sliced
    nodes: Sliced
    defrag: Sliced
    diff: Sliced
    lines: LogLines | None = None
    boot: Bootstrap | None = None  # the configuration the nodes were rebuilt with (None: the log has none)
    nodes_note: str = ""  # why there are no nodes to show
    audited: bool = False
    cycle_list: list[int] = field(default_factory=list)
    div_cycles: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    later: Later | None = None  # the thread building the whole views (build(later=True))

    def go_on(self) -> None:
        """The first screen is shown: the whole views may be built."""
        if self.later is not None:
            self.later.go_on()

    @property
    def total(self) -> int:
        """Number of published cycles."""
        return len(self.cycle_list)

    def ts(self, cycle: int) -> datetime | None:
        """The cycle's timestamp (when its scheduling loop began)."""
        i = self.index(cycle)
        return self.timeline["ts"][i] if i is not None else None

    def epoch(self, cycle: int) -> int | None:
        """The RM's scheduling epoch of the cycle (its name in any copy of the log)."""
        i = self.index(cycle)
        return self.timeline["epoch"][i] if i is not None else None

    def cycle_named(self, text: str) -> int:
        """The cycle `12` or `e118` names (InputError saying why none)."""
        cycle = resolve(parse_ref(text, "go to"), self.tables["cycles"], "go to")
        if self.index(cycle) is None:
            raise InputError(f"no cycle {cycle}: cycles are 1..{self.total}")
        return cycle

    def index(self, cycle: int) -> int | None:
        """Position of the cycle in the log (cycles are numbered 1..n)."""
        i = cycle - 1
        return i if 0 <= i < len(self.cycle_list) and self.cycle_list[i] == cycle else (
            self.cycle_list.index(cycle) if cycle in self.cycle_list else None)

    def step(self, cycle: int, delta: int) -> int:
        """The cycle `delta` places after (before) this one, within the log."""
        i = self.index(cycle) or 0
        return self.cycle_list[min(max(i + delta, 0), self.total - 1)]

    def move(self, where: str, cycle: int) -> tuple[int | None, str]:
        """Where a move leads from a cycle: `next` / `prev` cycle, `next_div` / `prev_div` cycle with a
        divergence; (None, why) when nowhere."""
        if where in ("next", "prev"):
            return self.step(cycle, 1 if where == "next" else -1), ""
        if not self.audited:
            return None, "the audit is still running: divergences are not known yet"
        forward = where == "next_div"
        return self.next_divergence(cycle, forward), f"no {'later' if forward else 'earlier'} cycle with a divergence"

    def cycle_for(self, value: str, around: int) -> int:
        """The cycle a `g` answer names: a cycle number, an epoch (e118), or the last cycle begun by
        a time (see `cycle_at_time`); InputError saying why none."""
        value = value.strip()
        if value.isdigit() or (value[:1] in "eE" and value[1:].isdigit()):
            return self.cycle_named(value)
        found = self.cycle_at_time(value, around)
        if found is None:
            raise InputError(f"{value!r}: not a cycle number, an epoch (e118) or a time")
        return found

    def next_divergence(self, cycle: int, forward: bool = True) -> int | None:
        """The next (or previous) cycle with a divergence, or None."""
        d = self.div_cycles
        if forward:
            i = int(np.searchsorted(d, cycle, "right"))
            return int(d[i]) if i < len(d) else None
        i = int(np.searchsorted(d, cycle, "left")) - 1
        return int(d[i]) if i >= 0 else None

    def cycle_at_time(self, text: str, around: int) -> int | None:
        """The last cycle that began at or before a time (`HH:MM[:SS]` on the current cycle's day, or a
        full `YYYY-MM-DD HH:MM[:SS]` / `DD Mon YYYY HH:MM:SS`)."""
        text = text.strip()
        when: datetime | None = None
        for fmt in ("%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S", "%d %b %Y %H:%M:%S,%f",
                    "%d %b %Y %H:%M:%S", "%d %b %Y %H:%M"):
            try:
                when = datetime.strptime(text, fmt)
                break
            except ValueError:
                pass
        if when is None:
            for fmt in ("%H:%M:%S", "%H:%M"):
                try:
                    t = datetime.strptime(text, fmt).time()
                except ValueError:
                    continue
                day = self.ts(around) or self.timeline.select(pl.col("ts").drop_nulls().first()).item()
                if day is None:
                    return None
                when = datetime.combine(day.date(), time(t.hour, t.minute, t.second))
                break
        if when is None:
            return None
        ts = self.timeline["ts"]
        at = self.timeline.filter(ts <= when)
        return int(at["cycle"][-1]) if at.height else int(self.timeline["cycle"][0])

    def log_at(self, cycle: int) -> tuple[list[str], int]:
        """The raw lines of the cycle (none when the input was a parse directory without the logs)."""
        if self.lines is None:
            return [], 0
        i = self.index(cycle)
        nxt = self.cycle_list[i + 1] if i is not None and i + 1 < len(self.cycle_list) else None
        return self.lines.at(cycle, nxt)

    def history(self, job_id: int) -> pl.DataFrame:
        """Every cycle the job was published in."""
        return self.jobs.frame.filter(pl.col("job_id") == job_id)

    def with_audit(self, frames: dict[str, pl.DataFrame]) -> Browse:
        """The same views with rmref's decisions and the divergences joined in."""
        div = frames["divergences"]
        ref_caps = frames["ref_caps"].unique(["cycle", "job_id"], keep="last").select(
            "cycle", "job_id", pl.col("actual_cap").alias("_rc"))
        ref_counts = frames["ref_counts"].unique(["cycle", "job_id"], keep="last").select(
            "cycle", "job_id", pl.col("shares_given").alias("_rn"))
        per_job = div.group_by("cycle", "job_id").agg(pl.len().cast(pl.Int64).alias("_dv"))
        jobs = self.jobs.then(lambda frame: frame.join(ref_caps, on=["cycle", "job_id"], **LEFT)
                              .join(ref_counts, on=["cycle", "job_id"], **LEFT)
                              .join(per_job, on=["cycle", "job_id"], **LEFT)
                              .with_columns(pl.col("_rc").alias("ref_cap"), pl.col("_rn").alias("ref_counted"),
                                            pl.col("_dv").fill_null(0).alias("divergences"))
                              .drop("_rc", "_rn", "_dv"))
        taken = frames["ref_defrag"].select(
            "cycle", pl.lit("rmref taken").alias("kind"), pl.col("needy_job").alias("job_id"),
            pl.lit(None, pl.String).alias("user"), pl.lit(None, pl.String).alias("class"), "host", "donor_job",
            pl.lit(None, pl.Int64).alias("counted"), pl.lit(None, pl.Int64).alias("needed"),
            pl.format("share {}", pl.col("share_id")).alias("detail"))
        defrag = self.defrag.then(lambda frame: pl.concat([frame, taken.cast(frame.schema)]))
        timeline = self.timeline.drop("divergences").join(
            div.group_by("cycle").agg(pl.len().cast(pl.Int64).alias("divergences")), on="cycle", how="left"
        ).with_columns(pl.col("divergences").fill_null(0)).sort("cycle")
        return replace(self, jobs=jobs, defrag=defrag, diff=Sliced(div), timeline=timeline,
                       audited=True, div_cycles=div["cycle"].cast(pl.Int64).unique().sort().to_numpy())


def audit_status(frames: Mapping[str, pl.DataFrame], total: int, damaged: Mapping[int, Damage] | None = None,
                 release: ReleaseChoice | None = None) -> str:
    """The status line of an audit's frames: cycles agreeing of those audited (the cycles the audit
    left out wholly, or whose input is damaged, are named apart, as `rmreplay audit` does), and the
    divergences."""
    divergences, skipped = frames["divergences"], frames["skipped"].filter(pl.col("decisions") == "all")
    n, bad = divergences.height, divergences["cycle"].n_unique()
    hurt = {c: d for c, d in (damaged or {}).items() if c not in set(skipped["cycle"].to_list())}
    audited = total - skipped["cycle"].n_unique() - len(hurt)
    left_out = f" ({skipped.height:,} not audited: {skipped['reason'][0]})" if skipped.height else ""
    first = next(iter(hurt.values()), None)
    as_release = f" (DUCC {release.release.name})" if release else ""
    return (f"audit{as_release}: {audited - bad:,} of {audited:,} cycles agree with rmref{left_out}, "
            f"{n:,} divergence{'s' if n != 1 else ''}" + ("" if n == 0 else " (d / D to visit)")
            + (f"; {len(hurt):,} not audited, input damaged (cycle {first.cycle}: {first.text()})" if first else ""))


def build(name: str, tables: Mapping[str, pl.DataFrame], lines: pl.DataFrame | None = None,
          nodes: pl.DataFrame | None = None, boot: Bootstrap | None = None, later: bool = False) -> Browse:
    """Precompute every view of a parsed log (the audit's columns come later, see `with_audit`);
    `nodes`: every cycle's machines as the stored audit keeps them (else computed here); `boot`:
    the log's configuration, if already rebuilt. `later`: only what the first screen shows now
    (the timeline, the first cycle's jobs), the whole views on a thread (`Deferred`)."""
    cycles, note = tables["cycles"], ""

    @cache
    def orders() -> pl.DataFrame:
        """Every job's order, found once for the whole jobs view and the machines (one thread asks)."""
        return work_orders(tables, boot.config.quantum_gb if boot else None, boot)

    try:
        boot = boot or bootstrap(tables)
        if not later:  # the machines of every cycle, from the world model the audit runs on
            nodes = nodes if nodes is not None else node_cycles(tables, boot, orders=orders())
    except InputError as exc:  # a log without its bootstrap, opened without --config
        boot, nodes, note = None, None, f"no nodes: {exc}"
        orders.cache_clear()  # (any found on the configuration given up)
    quantum = boot.config.quantum_gb if boot else None

    def machines() -> pl.DataFrame:
        try:
            return nodes_frame(tables, nodes if nodes is not None or boot is None
                               else node_cycles(tables, boot, orders=orders()))
        except InputError:  # (as above: no machines to show)
            return nodes_frame(tables, None)

    cycle_list = cycles["cycle"].cast(pl.Int64).to_list()
    views: tuple[Sliced, Sliced, Sliced]
    thread = Later() if later and cycle_list else None
    if thread is not None:
        first, none = cycle_list[0], frozenset[int]()
        views = (deferred(jobs_frame(tables, quantum, only=first, boot=boot), frozenset({first}),
                          lambda: jobs_frame(tables, quantum, boot=boot, orders=orders()), thread),
                 deferred(pl.DataFrame(), none, machines, thread),
                 deferred(pl.DataFrame(), none, lambda: defrag_frame(tables), thread))
    else:
        views = (Sliced(jobs_frame(tables, quantum, boot=boot, orders=orders())), Sliced(machines()),
                 Sliced(defrag_frame(tables)))
    return Browse(
        name=name, tables=tables, timeline=timeline_frame(cycles, tables, EMPTY_DIVERGENCES),
        jobs=views[0], nodes=views[1], defrag=views[2],
        diff=Sliced(EMPTY_DIVERGENCES), lines=log_lines(lines, cycles) if lines is not None else None,
        boot=boot, nodes_note=note, cycle_list=cycle_list, later=thread,
    )


def matches(frame: pl.DataFrame, query: str, columns: dict[str, str]) -> pl.DataFrame:
    """Rows matching a filter: words that must all match, each `text` (any column) or `field:text`
    (field one of job, user, class, host); case-insensitive substring, job ids whole."""
    keep = pl.lit(True)
    for word in query.split():
        key, sep, value = word.partition(":")
        if not sep:
            key, value = "", word
        value = value.lower()
        wanted = [c for k, c in columns.items() if (not key or k == key) and c in frame.columns]
        if not wanted:
            return frame.clear()
        any_of = pl.lit(False)
        for col in wanted:
            if frame.schema[col].is_integer():
                any_of = any_of | (pl.col(col).cast(pl.String) == value)
            else:
                any_of = any_of | pl.col(col).str.to_lowercase().str.contains(value, literal=True).fill_null(False)
        keep = keep & any_of
    return frame.filter(keep)
