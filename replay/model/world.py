"""Rebuild what the RM knew at the start of each cycle from the parsed tables (rmref's inputs).

The configuration comes from the log's bootstrap, or from `--config DIR` with what it leaves
open read off the log (`bootstrap`, replay.model.settings). State carried from cycle to cycle,
and where the log shows it:
* machines: node arrival, death and recovery events up to the cycle (`nodes`); the nodes there
  before the log began as the log states them or as their counters imply (`machine_inventory`:
  replay.model.inventory, replay.model.machines);
* shares held: the cycle's published `Existing` less its `Additions` is exactly what the job held
  when the cycle began; a share is pending removal if the previous schedule already removed it;
* work: every job the cycle publishes, described by its latest submit / howMuchFairShare row, and
  its cap inputs (`replay.model.inputs.cap_inputs`);
* needy jobs: the jobs the previous cycle's detectFragmentation found *potentially* needy (the RM
  keeps them on its needy list, and expands them first, even when it then finds room for them),
  less those the cycle's needy pass shows were left off (`needy_left_off`); in a log that starts
  at or inside the previous cycle, the jobs the cycle expands first;
* per process, what the eviction order reads: whether the process had reported (the RM's
  "initialized" test) and was running when the cycle began, its initialization time, and its
  investment. Investment (work done) is not logged; the published `Existing` list is sorted by
  the RM's own investment comparator, so a process's rank there stands in for it. The sort is
  stable over the job's share map, so where the comparator finds two processes equal (neither
  has reported, so neither has an initialization time) the same rank gives the map's order, by
  which shrinkBy, sorting the same map with the same comparator, chooses between them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace

import polars as pl

from replay.model import settings as st
from replay.model.bycycle import ByCycle
from replay.model.inputs import CAP_INPUT_COLUMNS, cap_inputs, job_descriptions, purged_hosts
from replay.model.inventory import Inventory, PoolOf, stated_inventory
from replay.model.machines import infer_inventory
from replay.model.release import ReleaseChoice
from replay.model.release import SETTING as RELEASE_SETTING
from replay.model.release import choose as choose_release
from replay.model.stale import StaleFree, stale_free
from replay.parsing.sources import InputError
from replay.parsing.tables import LEFT
from rmref import UNLIMITED, CapInput, job_order
from rmref.behaviours import for_release
from rmref.constants import DEAD, VARIED_OFF
from rmref.model import ClassDef, Config, CycleInput, Machine, Nodepool, Share, Work
from rmref.trees import tree_quantum

WORK_TYPES = {"J": "Job", "S": "Service", "R": "Reservation", "M": "ManagedReservation"}
_OFFLINE = {"death", "vary_off", "vary_on"}
_ONLINE = {"arrive", "reactivate", "recover", "recover_node"}


@dataclass(frozen=True)
class Bootstrap:
    """The configuration a replay needs before any cycle: from the log, or from `--config DIR`
    and the log; `assumed` says where each setting rmref reads came from."""

    config: Config
    classes: tuple[ClassDef, ...]
    nodepools: tuple[Nodepool, ...]
    assumed: tuple[st.Assumption, ...] = ()
    release: ReleaseChoice | None = None  # the DUCC release replayed (replay.model.release), in config.behaviours


def _int(value, default: int) -> int:
    try:
        return int(str(value).split()[0])
    except (TypeError, ValueError, IndexError):
        return default


def _user_allotments(config: dict[str, str]) -> dict[str, int]:
    """ducc.users overrides of the global allotment (GB), as the RM reads them.

    The RM takes any `max-allotment...` key whose *value* has no dot as the user's global limit
    (it tests the value, not the key, for a class suffix), so `max-allotment.<class> = 64`
    overrides the global allotment too; of several, the last one read wins.
    """
    out: dict[str, int] = {}
    for key, value in config.items():
        m = re.fullmatch(r"user\.(.+?)\.max-allotment(\..*)?", key)
        if m and "." not in value and _int(value, -1) >= 0:
            out[m.group(1)] = _int(value, UNLIMITED)
    return out


def _setting(rows: dict[str, tuple], key: str, setting: str, infer: Callable[[], st.Assumption]) -> st.Assumption:
    """A config row the log's bootstrap or --config gives; inferred from the log when only DUCC's
    documented default stands for it."""
    value, file, line = rows.get(key, (None, None, None))
    if value is None or file == st.DEFAULTS_FILE:
        return infer()
    return st.from_config(setting, value, file, line)


def bootstrap(tables: Mapping[str, pl.DataFrame]) -> Bootstrap:
    """Configuration, classes and nodepools from `config`/`classes`/`nodepools` tables, with what
    they leave open inferred from the log (replay.model.settings).

    Raises InputError naming what is missing when the log (or resources) did not have them.
    """
    missing = [name for name in ("classes", "nodepools") if tables[name].is_empty()]
    if missing:
        raise InputError(
            f"the log has no bootstrap section ({' and '.join(missing)} missing, probably rolled away): "
            "pass --config DIR with the DUCC resources directory (ducc.classes; ducc.properties if you have it)"
        )
    rows = {k: (v, f, ln) for k, v, f, ln in tables["config"].select("key", "value", "file", "line").iter_rows()}
    config = {k: v for k, (v, _f, _ln) in rows.items()}
    pools = tables["nodepools"]
    open_pools = set(pools.filter(pl.col("quantum").is_null())["name"].to_list())
    if open_pools:  # ducc.rm.share.quantum unknown: read off the jobs of the pools that take it
        quantum = st.infer_quantum(tables, {r["name"] for r in tables["classes"].iter_rows(named=True)
                                            if r["nodepool"] in open_pools}, machines=len(open_pools) == pools.height)
    else:
        quantum = st.from_config(st.QUANTUM, pools["quantum"][0], f"nodepool {pools['name'][0]}, {pools['file'][0]}",
                                 pools["line"][0])
    classes = tuple(
        ClassDef(
            name=r["name"], policy=r["policy"], priority=r["priority"], weight=r["weight"] or 0,
            nodepool=r["nodepool"], init_cap=r["init_cap"] or 0,
            expand_by_doubling=bool(r["expand_by_doubling"]), prediction=bool(r["prediction"]),
            prediction_fudge=r["prediction_fudge"] or 0, cap=_int(r["cap"], UNLIMITED),
            max_allotment=_int(r["max_allotment"], UNLIMITED),
        )
        for r in tables["classes"].iter_rows(named=True)
    )
    users = tuple(sorted(_user_allotments(config).items()))
    assumed = [
        quantum,
        _setting(rows, "fragmentation threshold", st.THRESHOLD, lambda: st.infer_threshold(tables, classes)),
        _setting(rows, "do defragmentation", st.DEFRAGMENTATION, lambda: st.infer_defragmentation(tables)),
        _setting(rows, "global allotment", st.GLOBAL_ALLOTMENT,
                 lambda: st.infer_global_allotment(tables, {user for user, _ in users})),
    ]
    chosen = choose_release(tables)
    assumed.append(st.Assumption(RELEASE_SETTING, chosen.release.name,
                                 st.CONFIG if chosen.source == "banner" and "not a release" not in chosen.evidence
                                 else chosen.source, chosen.evidence))
    cfg = Config(
        behaviours=for_release(chosen.release.name),
        quantum_gb=_int(assumed[0].value, 1),
        fragmentation_threshold=_int(assumed[1].value, 8),
        defragmentation=assumed[2].value.lower() == "true",
        global_allotment=_int(assumed[3].value, UNLIMITED),
        user_allotments=users,
    )
    # a pool whose quantum the files leave open takes the configuration's (inferred) one
    nodepools = tuple(Nodepool(r["name"], r["parent"], r["search_order"] or 100, r["quantum"] or 0)
                      for r in tables["nodepools"].iter_rows(named=True))
    boot = Bootstrap(cfg, classes, nodepools, tuple(assumed), chosen)
    open_classes = {r["name"] for r in tables["classes"].iter_rows(named=True) if r["init_cap"] is None}
    return _settle_cap_settings(tables, boot, open_classes) if open_classes else boot


def _settle_cap_settings(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, open_classes: set[str]) -> Bootstrap:
    """The initialization cap, doubling and prediction of the classes that take them from a
    missing ducc.properties: the values under which rmref's cap chain gives the logged caps."""
    provisional = _with_cap_settings(boot, open_classes, st.DOCUMENTED_CAPS)
    logged = dict(((c, j), a) for c, j, a in tables["job_caps"].filter(pl.col("cycle").is_not_null())
                  .select("cycle", "job_id", "actual_cap").iter_rows())
    inventory = stated_inventory(tables, pool_of(tables, boot), boot.config.quantum_gb)
    samples = [(w.cap_input, logged[(inp.cycle, w.job_id)])
               for inp in cycle_inputs(tables, provisional, inventory=inventory)
               for w in inp.work if w.class_name in open_classes and (inp.cycle, w.job_id) in logged]
    chosen, assumed = st.choose_cap_settings(samples)
    return replace(_with_cap_settings(boot, open_classes, chosen), assumed=boot.assumed + tuple(assumed))


def _with_cap_settings(boot: Bootstrap, names: set[str], s: st.CapSettings) -> Bootstrap:
    classes = tuple(replace(c, init_cap=s.init_cap, expand_by_doubling=s.expand_by_doubling, prediction=s.prediction)
                    if c.name in names else c for c in boot.classes)
    return replace(boot, classes=classes)


def machine_hosts(nodes: pl.DataFrame) -> list[str]:
    """The host names the rebuilt cycles name machines by: those that arrive or return, and those
    heard from (heartbeats), in first-seen order."""
    rows = nodes.filter(pl.col("event").is_in([*_ONLINE, "heartbeat"]))
    return rows["host"].drop_nulls().unique(maintain_order=True).to_list()


class _Machines:
    """Node liveness and inventory, advanced one cycle's events at a time.

    The nodes there before the log began come from the inventory (what the log states about them,
    and what was inferred: replay.model.inventory); a node it cannot size is `missing`.
    """

    def __init__(self, tables: Mapping[str, pl.DataFrame], inventory: Inventory, pool_of: PoolOf):
        nodes = tables["nodes"]
        self._events = ByCycle(nodes.filter(pl.col("event").is_in(list(_OFFLINE | _ONLINE))))
        ips = nodes.filter(pl.col("ip").is_not_null()).unique("host", keep="first", maintain_order=True)
        self._ips = dict(ips.select("host", "ip").iter_rows())
        self._pool = pool_of
        self._known: dict[str, Machine] = {
            h.name: Machine(h.name, h.nodepool, h.order or 0, inventory.memory_mb(h), h.ip, online=not h.dead)
            for h in inventory.hosts}  # there before the log began, in the order first heard from
        self.missing: set[str] = set(inventory.unknown)
        self._dead: set[str] = {h.name for h in inventory.hosts if h.dead}

    def advance(self, cycle: int) -> tuple[Machine, ...]:
        """The machines as the cycle's scheduling pass saw them."""
        events = self._events.get(cycle)
        # a disable (and the purge it makes) is news of the cycle it happened in only
        self._known = {h: replace(m, disabled="") if m.disabled else m for h, m in self._known.items()}
        if events is not None:
            for host, event, pool, order, memory in events.select(
                "host", "event", "nodepool", "share_order", "memory_mb"
            ).iter_rows():
                old = self._known.get(host)
                if event in _ONLINE:
                    varied_off = old.varied_off if old else False  # a dead node returns still varied off
                    self._known[host] = Machine(
                        host, pool or (old.nodepool if old else self._pool(host)),
                        order if order is not None else (old.order if old else 0),
                        memory if memory is not None else (old.memory_mb if old else 0),
                        self._ips.get(host, ""), online=not varied_off, varied_off=varied_off,
                    )
                    self._dead.discard(host)
                    if order is not None:  # (an arrival states the order)
                        self.missing.discard(host)
                elif old is None:
                    continue
                elif event == "death":  # NodePool.nodeLeaves: disable, every share but reservations
                    self._dead.add(host)
                    self._known[host] = replace(old, online=False, disabled=DEAD)
                else:  # an administrator's vary-off or vary-on
                    off = event == "vary_off"
                    # doVaryOff disables (purges fair-share work) only a machine that was online
                    purges = off and not old.varied_off and host not in self._dead
                    self._known[host] = replace(old, varied_off=off, online=not off and host not in self._dead,
                                                disabled=VARIED_OFF if purges else old.disabled)
        return tuple(self._known.values())  # arrival order: the order the RM's node maps were filled


def published_schedule(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """The published schedule, each job's memory filled from its own rows where the schedule does
    not print it (2.0.x: `Job 7` where later releases print `Job 7 4GB`)."""
    schedule = tables["schedule"]
    if not schedule["memory_gb"].null_count() or "memory_gb" not in tables["jobs"].columns:
        return schedule
    memory = tables["jobs"].filter(pl.col("memory_gb").is_not_null()).group_by("job_id").agg(
        pl.col("memory_gb").first().cast(schedule.schema["memory_gb"]).alias("_mem"))
    return schedule.join(memory, on="job_id", how="left", maintain_order="left").with_columns(
        pl.coalesce("memory_gb", "_mem").alias("memory_gb")).drop("_mem")


def _work_rows(tables: Mapping[str, pl.DataFrame]) -> pl.DataFrame:
    """One row per (cycle, job) published: the job's latest description at or before the cycle.

    Rows come in the RM's job-table order, which decides ties in What Of: the table is keyed by
    random ids, so the order cannot be computed, but the cycle's "Scheduling job" lines (`counts`)
    are written in it. Jobs without such a line follow, by id.
    """
    # work refused on arrival (an unknown class, an unauthorized user) is published as refused
    # and never joins the scheduler's jobs
    published = published_schedule(tables).filter(~pl.col("refused").fill_null(False)).group_by(
        "cycle", "job_id", maintain_order=True).agg(pl.col("work_type").first(), pl.col("memory_gb").first())
    described = (
        job_descriptions(tables).filter(pl.col("cycle").is_not_null())
        .sort("job_id", "cycle", "line")
        .unique(["job_id", "cycle"], keep="last", maintain_order=True)
        .select("job_id", "cycle", "type_code", "user", "class", "order", "threads", "remaining",
                "init_wait", "max_processes", "shares")
        .sort("cycle")
    )
    table_order = tables["counts"].filter(pl.col("cycle").is_not_null()).group_by("cycle", "job_id").agg(
        pl.col("file").first().alias("table_file"), pl.col("line").min().alias("table_line"))
    return (
        published.sort("cycle")
        .join_asof(described, on="cycle", by="job_id", strategy="backward", check_sortedness=False)
        .join(table_order, on=["cycle", "job_id"], **LEFT)
        .sort("cycle", pl.col("table_line").is_null(), "table_file", "table_line", "job_id")
    )


class ProcessClock:
    """When each process (host, share id) first reported, and first left Initializing."""

    def __init__(self, processes: pl.DataFrame, cycles: pl.DataFrame):
        reports = processes.filter(pl.col("event").is_in(["new", "state"]) & pl.col("cycle").is_not_null())
        running = reports.filter(pl.col("state_to").is_not_null() & (pl.col("state_to") != "Initializing")
                                 & (pl.col("state_from").is_null() | (pl.col("state_from") == "Initializing")))
        self._reported = self._first(reports)
        self._running = self._first(running)
        self._starts = dict(cycles.select("cycle", "line").iter_rows())

    @staticmethod
    def _first(frame: pl.DataFrame) -> dict[tuple[str, int], tuple[int, int]]:
        rows = frame.sort("cycle", "line").unique(["host", "share_id"], keep="first")
        return {(h, s): (c, ln) for h, s, c, ln in rows.select("host", "share_id", "cycle", "line").iter_rows()}

    def state(self, cycle: int, host: str, share_id: int, predates_log: bool = False) -> tuple[bool, bool]:
        """(reported, running) as the RM knew them when the cycle's scheduling pass began.

        A process already there when the log began had reported before the log's first line,
        and was running then unless the log shows it leave Initializing later."""
        start = (cycle, self._starts.get(cycle, 0))
        never = (1 << 62, 0)
        if predates_log:
            left_init = self._running.get((host, share_id))
            return True, left_init is None or left_init < start
        return (self._reported.get((host, share_id), never) < start,
                self._running.get((host, share_id), never) < start)


def _top_pool(boot: Bootstrap) -> str:
    return next((p.name for p in boot.nodepools if p.parent is None), "--default--")


def pool_of(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> PoolOf:
    """Which nodepool a host is in (the node files' lists, else the top pool)."""
    return PoolOf(tables["nodepools"], _top_pool(boot))


def machine_inventory(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> Inventory:
    """The nodes there before the log began: stated by the log, or inferred from its counters
    (which replays the cycles built here with candidate inventories)."""
    pools = pool_of(tables, boot)
    stated = stated_inventory(tables, pools, boot.config.quantum_gb)
    if not stated.unknown:
        return stated
    return infer_inventory(tables, boot, stated, lambda inv: cycle_inputs(tables, boot, inventory=inv))


def machines(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, inventory: Inventory | None = None) -> _Machines:
    """The node inventory and liveness, to advance cycle by cycle (`advance(cycle)`)."""
    return _Machines(tables, inventory or machine_inventory(tables, boot), pool_of(tables, boot))


class _Published:
    """Per cycle, from the published schedule: the Existing shares in printed order (job, host,
    share id, memory, init ms), and the (job, share id) sets of Additions and Removals."""

    def __init__(self, schedule: pl.DataFrame):
        self._rows = ByCycle(schedule.filter(pl.col("host").is_not_null()).select(
            "cycle", "kind", "job_id", "host", "share_id", "memory_gb", "init_ms"))
        self._purged: dict[int, set[tuple[int, int]]] = {}  # few rows: read once, not per cycle
        for cycle, job, sid in schedule.filter((pl.col("kind") == "existing") & pl.col("purged").fill_null(False)
                                               & pl.col("host").is_not_null()).select(
                "cycle", "job_id", "share_id").iter_rows():
            self._purged.setdefault(cycle, set()).add((job, sid))

    def shares(self, cycle: int) -> tuple[list[tuple], set[tuple[int, int]], set[tuple[int, int]]]:
        """(existing, added, removed) of one cycle."""
        existing: list[tuple] = []
        added: set[tuple[int, int]] = set()
        removed: set[tuple[int, int]] = set()
        rows = self._rows.get(cycle)
        for _, kind, job, host, sid, mem, init_ms in rows.iter_rows() if rows is not None else ():
            if kind == "existing":
                existing.append((job, host, sid, mem, init_ms))
            elif kind == "addition":
                added.add((job, sid))
            elif kind == "removal":
                removed.add((job, sid))
        return existing, added, removed

    def purged(self, cycle: int) -> set[tuple[int, int]]:
        """(job, share id) of the cycle's Existing shares the schedule marks purged (^P)."""
        return self._purged.get(cycle, set())


def needy_expanded(tables: Mapping[str, pl.DataFrame]) -> ByCycle:
    """Per cycle, the jobs What Of expanded before its normal pass: the needy list the cycle
    carried from the one before (its doExpansion lines before the fair-share traversal)."""
    expansions = tables["expansions"].filter(pl.col("cycle").is_not_null())
    normal = pl.concat([
        expansions.filter(pl.col("kind") == "expansion_order").select("cycle", "line"),
        tables["counts"].filter((pl.col("kind") == "given") & pl.col("cycle").is_not_null()).select("cycle", "line"),
    ]).group_by("cycle").agg(pl.col("line").min().alias("normal"))
    early = (expansions.filter((pl.col("kind") == "do_expansion") & pl.col("job_id").is_not_null())
             .join(normal, on="cycle", how="left")
             .filter(pl.col("normal").is_null() | (pl.col("line") < pl.col("normal"))))
    return ByCycle(early.select("cycle", "job_id"))


def submission_order(tables: Mapping[str, pl.DataFrame]) -> dict[int, int]:
    """Each job's place in submission order (JobByTimeSorter's key), equal for jobs that tie.

    The Orchestrator numbers work in submission order, so job ids order it; the timestamps are
    not logged. Two jobs submitted in the same millisecond tie, and the RM then keeps its job
    table's order, which can put the later id first: wherever the log lists jobs in
    JobByTimeSorter's order (a pool's "Expansions in this order", a fixed-share or reserve class's
    counting lines) and does so, the two tie.
    """
    classes = dict(tables["jobs"].select("job_id", "class").drop_nulls().unique("job_id", keep="last").iter_rows())
    expansions = tables["expansions"].filter((pl.col("kind") == "do_expansion") & pl.col("job_id").is_not_null())
    sequences = [rows["job_id"].to_list() for _, rows in
                 expansions.group_by("cycle", "file", "line", maintain_order=True)]
    counted = tables["counts"].filter(pl.col("job_id").is_not_null() & (
        ((pl.col("kind") == "class") & (pl.col("policy") == "FIXED_SHARE"))
        | ((pl.col("kind") == "counting") & (pl.col("policy") == "RESERVE"))))
    for _, rows in counted.group_by("cycle", maintain_order=True):
        by_class: dict[str, list[int]] = {}
        for job in rows["job_id"].to_list():
            by_class.setdefault(classes.get(job, ""), []).append(job)
        sequences += by_class.values()
    tied: dict[int, int] = {}  # job -> the earliest job it ties with (union-find parent)

    def root(job: int) -> int:
        while tied.get(job, job) != job:
            job = tied[job]
        return job

    pairs = [(earlier, later) for seq in sequences for i, later in enumerate(seq) for earlier in seq[i + 1:]
             if earlier < later]  # listed after a later-submitted job: the two tie
    for x, y in pairs + _needy_ties(tables):
        a, b = sorted((root(x), root(y)))
        if a != b:
            tied[b] = a
    return {job: root(job) for job in tied}


def _needy_evidence(tables: Mapping[str, pl.DataFrame]) -> tuple[pl.DataFrame, dict[int, int], set[tuple[int, int]]]:
    """What the needy-list checks read: the potentially needy rows, each cycle's next one, and the
    (cycle, job) pairs whatOfFixedShare gave processes to (`Assign(H|V)`)."""
    potential = tables["defrag"].filter(pl.col("potentially_needy") & pl.col("cycle").is_not_null())
    cycles = tables["cycles"]["cycle"].to_list()
    assigned = set(tables["expansions"].filter(pl.col("kind") == "fixed_assign").select("cycle", "job_id").iter_rows())
    return potential, dict(zip(cycles[:-1], cycles[1:])), assigned


def needy_left_off(tables: Mapping[str, pl.DataFrame]) -> dict[int, set[int]]:
    """Per cycle, the jobs the previous cycle found potentially needy that the cycle shows were
    not on the RM's needy list. That list is a TreeMap on JobByTimeSorter, filled from a HashMap
    keyed by the jobs' random ids: of two jobs that tie (same submission time and order) only
    the one put last stays, and no log line shows which. The cycle's needy pass, which runs
    before every other placement, does:

    * at DEBUG its "Expand needy ..." lines name every job it took: any other was left off;
    * a fixed-share job that whatOfFixedShare gives processes (`Assign(H|V)`) was left off, or
      the needy pass would have given it those;
    * a reservation findMachines saw once was left off (not deferred, the needy pass and
      whatOfReserve each print one findMachines line for it)."""
    potential, following, assigned = _needy_evidence(tables)
    candidates: dict[int, set[int]] = {}
    for (cycle,), part in potential.group_by("cycle"):
        if cycle in following:
            candidates[following[cycle]] = set(part["job_id"].to_list())
    expand = tables["defrag"].filter((pl.col("kind") == "expand_needy") & pl.col("cycle").is_not_null())
    listed: dict[int, set[int]] = {c: set() for c in expand["cycle"].unique().to_list()}
    for cycle, ids in expand.select("cycle", "job_ids").iter_rows():
        listed[cycle].update(ids or ())
    exp = tables["expansions"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
    seen = exp.filter(pl.col("kind") == "find_machines").group_by("cycle", "job_id").len()
    once = set(seen.filter(pl.col("len") == 1).select("cycle", "job_id").iter_rows())
    deferred = set(tables["counts"].filter(pl.col("kind").is_in(["deferred", "deferring"])
                                           & pl.col("cycle").is_not_null()).select("cycle", "job_id").iter_rows())
    left: dict[int, set[int]] = {}
    for cycle, jobs in candidates.items():
        if cycle in listed:
            off = jobs - listed[cycle]
        else:
            off = {j for j in jobs if (cycle, j) in assigned or ((cycle, j) in once and (cycle, j) not in deferred)}
        if off:
            left[cycle] = off
    return left


def _needy_ties(tables: Mapping[str, pl.DataFrame]) -> list[tuple[int, int]]:
    """Ties the needy list shows: it is a TreeMap on JobByTimeSorter, so of two potentially needy
    jobs that tie only the one put last stays. A potentially needy job that whatOfFixedShare
    assigns processes to in the next cycle (`Assign(H|V)`) was not in it, or the needy pass, which
    runs first, would have given it those: it tied with the one job of its order put after it."""
    rows, following, assigned = _needy_evidence(tables)
    ties = []
    for (cycle,), part in rows.group_by("cycle", maintain_order=True):
        put = part.unique("job_id", keep="first", maintain_order=True).select("job_id", "order").rows()
        for i, (job, order) in enumerate(put):
            after = [other for other, o in put[i + 1:] if o == order]
            if (following.get(cycle), job) in assigned and len(after) == 1:
                ties.append((job, after[0]))
    return ties


def cycle_count(tables: Mapping[str, pl.DataFrame], cycles: range | None = None) -> int:
    """How many inputs `cycle_inputs` gives: the log's published cycles (those in `cycles`)."""
    logged = tables["cycles"]["cycle"]
    return len(logged) if cycles is None else int(logged.is_between(cycles.start, cycles.stop - 1).sum())


def cycle_inputs(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
                 cycles: range | None = None, inventory: Inventory | None = None,
                 stale: StaleFree | None = None) -> Iterator[CycleInput]:
    """rmref's input for every published cycle of the log (or those in `cycles`), in order;
    `inventory`: the nodes there before the log began (default: stated or inferred from the log);
    `stale`: the model of unschedulable machines' free space, whose `notes` then say where it
    was inferred (default: a fresh one)."""
    boot = boot or bootstrap(tables)
    stale = stale or stale_free(tables, boot.nodepools, boot.config.quantum_gb)
    quantum = boot.config.quantum_gb
    tree_q = {c.name: tree_quantum(boot.nodepools, c.nodepool, quantum) for c in boot.classes}
    machines_now = machines(tables, boot, inventory)
    class_settings = {c.name: (c.init_cap, c.expand_by_doubling, c.prediction) for c in boot.classes}
    # every per-cycle structure is kept as one frame and read a cycle at a time (_ByCycle): a
    # dict or a frame per cycle took 75 MB on a 2,500-cycle log
    published = _Published(published_schedule(tables))
    work = ByCycle(_work_rows(tables))
    caps = ByCycle(cap_inputs(tables))
    purged = purged_hosts(tables)
    submitted = submission_order(tables)
    capped = ByCycle(tables["job_caps"].select("cycle", "job_id"))
    refusals = tables["job_events"].filter((pl.col("event") == "refused") & pl.col("cycle").is_not_null())
    refused_in = dict(refusals.group_by("job_id").agg(pl.col("cycle").min()).iter_rows())  # job -> first cycle
    needy = ByCycle(tables["defrag"].filter(pl.col("potentially_needy")).select("cycle", "job_id"))
    analysed = set(tables["defrag"].filter(pl.col("kind") == "analysis")["cycle"].drop_nulls().to_list())
    expanded_first = needy_expanded(tables)
    left_off = needy_left_off(tables)
    clock = ProcessClock(tables["processes"], tables["cycles"])
    removed_before: set[tuple[int, int]] = set()
    first_held: set[tuple[int, int]] = set()  # shares held when the log's first cycle began
    all_cycles = tables["cycles"]["cycle"].to_list()
    if all_cycles:
        existing, added_now, _ = published.shares(all_cycles[0])
        first_held = {(job, sid) for job, _, sid, _, _ in existing} - added_now
    for cycle in all_cycles:
        existing, added_now, removed_now = published.shares(cycle)
        purged_now = published.purged(cycle)
        state = machines_now.advance(cycle)
        filled = stale.fill(cycle, state, {host for _, host, _, _, _ in existing})
        stale.record(state, ((host, mem or 0) for _, host, _, mem, _ in existing))
        state = filled
        if cycles is not None and cycle not in cycles:
            removed_before = removed_now
            continue
        rows = work.get(cycle)
        logged_caps = _rows_by_job(caps.get(cycle))
        capped_now = set(_column(capped.get(cycle), "job_id"))
        # a share's order is in its own pool tree's quantum (columns read as lists: a select on
        # each cycle's rows cost a polars query per cycle, 6 ms)
        quantum_of = {} if rows is None else {job: tree_q.get(cls, quantum) for job, cls in zip(
            rows["job_id"].to_list(), rows["class"].to_list())}
        held: dict[int, list[Share]] = {}
        rank: dict[int, int] = {}
        for job, host, sid, mem, init_ms in existing:
            rank[job] = rank.get(job, -1) + 1  # position in the printed list, investment order
            if (job, sid) in added_now:
                continue
            reported, running = clock.state(cycle, host, sid, predates_log=(job, sid) in first_held)
            held.setdefault(job, []).append(Share(
                sid, job, host, job_order(mem, quantum_of.get(job, quantum)),
                pending_removal=(job, sid) in removed_before,
                initialized=reported, init_ms=(init_ms or 0) if reported else 0,
                investment=rank[job] + 1 if reported else 0,  # the printed order is the comparator's
                map_rank=rank[job] + 1,  # where the comparator ties, the printed order is the share map's
                purged=(job, sid) in purged_now,
            ))
        jobs = []
        for r in rows.iter_rows(named=True) if rows is not None else ():
            job = r["job_id"]
            shares = tuple(sorted(held.get(job, ()), key=lambda s: s.share_id))
            logged = logged_caps.get(job)
            # countNShares: held, less what is leaving and what a node's purge took this cycle (a
            # share there already leaving, or already vacated and gone from the schedule, once)
            gone = purged.get((cycle, job), set())
            held_now = sum(1 for s in shares if not s.pending_removal and s.host not in gone)
            # the RM logs a cap for every job but a completed or refused one; a refusal that leaves the
            # job in a class (a service in a fair-share class) does not stop its scheduling
            refused = refused_in.get(job, cycle + 1) <= cycle and not r["class"]
            init_cap, doubling, prediction = class_settings.get(r["class"], (0, False, False))
            cap = CapInput(**{k: logged[k] for k in CAP_INPUT_COLUMNS}, init_cap=init_cap,
                           expand_by_doubling=doubling, use_prediction=prediction,
                           current=held_now, behaviours=boot.config.behaviours) if logged else CapInput(
                remaining=r["remaining"] or 0, threads=r["threads"] or 1, current=held_now,
                max_processes=r["max_processes"] if r["max_processes"] is not None else UNLIMITED,
                initialized=not r["init_wait"], projected=0, init_cap=0, expand_by_doubling=False,
                use_prediction=False, completed=job not in capped_now and not refused, refused=refused,
                behaviours=boot.config.behaviours,
            )
            jobs.append(Work(
                job, WORK_TYPES.get(r["type_code"] or "") or r["work_type"] or "Job", r["user"] or "",
                r["class"] or "", r["order"] or job_order(r["memory_gb"] or 0, quantum_of.get(job, quantum)),
                r["memory_gb"] or 0,
                cap, submit_seq=submitted.get(job, job), shares=shares,
            ))
        prev_needy = [j for j in _column(needy.get(cycle - 1), "job_id") if j not in left_off.get(cycle, ())]
        if cycle - 1 not in analysed:  # the log starts at or inside the cycle before: the needy pass shows them
            prev_needy = _column(expanded_first.get(cycle), "job_id")
        yield CycleInput(
            cycle, boot.config, boot.classes, boot.nodepools, state, tuple(jobs),
            tuple(dict.fromkeys(prev_needy)),  # in the order detectFragmentation logged them
            investment_ranked=True,  # a rank within each job's Existing list (see the module docstring)
        )
        removed_before = removed_now


def _rows_by_job(rows: pl.DataFrame | None) -> dict[int, dict]:
    """A cycle's rows by job (the last row of a job wins)."""
    return {} if rows is None else {r["job_id"]: r for r in rows.iter_rows(named=True)}


def _column(rows: pl.DataFrame | None, name: str) -> list:
    """One column of a cycle's rows ([] when it has none)."""
    return [] if rows is None else rows[name].to_list()


# -- for the closed-loop simulation (replay.apps.simulate): the same rebuild, one piece at a time --

def job_table_order(tables: Mapping[str, pl.DataFrame]) -> dict[int, dict[int, int]]:
    """Per cycle, each published job's place in the RM's job table (the order cycle_inputs lists work in)."""
    out: dict[int, dict[int, int]] = {}
    for cycle, job in _work_rows(tables).select("cycle", "job_id").iter_rows():
        ranks = out.setdefault(cycle, {})
        ranks.setdefault(job, len(ranks))
    return out


def existing_order(tables: Mapping[str, pl.DataFrame]) -> dict[int, dict[int, dict[tuple[str, int], int]]]:
    """Per cycle and job, the place of each share (host, share id) it held when the cycle began in
    the job's published Existing list (the RM's investment order, which cycle_inputs reads as investment)."""
    published = _Published(published_schedule(tables))
    out: dict[int, dict[int, dict[tuple[str, int], int]]] = {}
    for cycle in tables["cycles"]["cycle"].to_list():
        rows, new, _ = published.shares(cycle)
        if not rows:
            continue
        per: dict[int, dict[tuple[str, int], int]] = {}
        printed: dict[int, int] = {}
        for job, host, sid, _mem, _init in rows:
            printed[job] = printed.get(job, -1) + 1
            if (job, sid) not in new:
                per.setdefault(job, {})[(host, sid)] = printed[job]
        out[cycle] = per
    return out
