"""Node IPs for the harness where the log shows none: IPs under which the RM's node maps walk the
machines in the order the log shows.

Before 3.0.0 an RM log names no node IP, yet the RM keeps its machines in `HashMap<Node, Machine>`
tables keyed by the node's name and IP (`rmref.javahash.node_hash`), and breaks ties among machines
alike in their walk order. Three things in the log show such walks:

- takeFromTheRich prints one per pass: a `Candidate machine` or `Not a candidate` line per machine of
  `NodePool.getAllMachines()` of the needy job's pool (its own map cloned, then each subpool's put
  in), in the map's order; machines too small are left out. That order decides the eligible machines'
  order among those of equal wealth and memory (EligibleMachineSorter), hence what is cleared. The
  map holds the pool's machines (and its subpools') arrived by then (a machine stays in its pool's
  map); its capacity is that of the clone and puts.
- before 2.2.0, How Much's countFreeableMachines prints its walk of the pool's machines of a
  reservation's size (`Machines to search`), a map filled as they arrived;
- What Of's placements (connectShare), each a walk of a clone of a free-space table
  (`rmref.whatof.TableWalk`), which the log shows only through the machines chosen.

The printed walks are constraints for `replay.javarm.hashes`' solver (no two machines of a walk in
one bucket: the order the harness puts machines in is not the log's). Then, at the first placement
where rmref's What Of under the IPs found meets another machine than the RM did, in a table that held
the RM's, the pair (the RM's machine first, at that table's size) is added and the hashes solved
again, until What Of places as the RM did in every cycle or the runs run out; a pair no hashes keep
with the rest marks its cycle as no node-hash tie. The values are bucket values (`spread(hash) mod`
the largest table's capacity); each machine takes the first IP hashing to its value. Machines in no
walk keep the harness's common IP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

import polars as pl

from replay.javarm.hashes import Hashes, Listing, hashes_of, map_bits
from replay.model.bootstrap import Bootstrap
from replay.model.start import ReplayStart, replay_start
from replay.model.logorder import log_order
from rmref.behaviours import Behaviours
from rmref.howmuch_state import stale_after_howmuch
from rmref.javahash import JavaHashMap, hashmap_order, node_hash, spread
from rmref.model import CycleInput
from rmref.whatof import what_of_choices

COMMON_IP = "10.0.0.1"  # the harness's IP for a node the log and its walks say nothing of
OWNER, WHAT_OF = "(node map)", "(What Of)"  # the owners of the two kinds of walk, as Listings name them
RUNS = 400  # most runs of What Of one log's search makes


@dataclass(frozen=True)
class NodeIps:
    """The IP chosen per machine; the printed walks (`hashes.kept_to` names a cut where they contradict
    each other); the cycles What Of placed in and how many of them it places as the RM did under these
    IPs (None: the search ran out of runs first)."""

    ip_of: dict[str, str]
    walks: int
    hashes: Hashes
    placing: int
    agree: int | None


@dataclass(frozen=True)
class Walked:
    """One walk of a node map the log prints (a takeFromTheRich pass, a countFreeableMachines call): the
    machines in the order named, and the bits of the table of the map walked."""

    cycle: int
    hosts: tuple[str, ...]
    bits: int


def rich_walks(tables: Mapping[str, pl.DataFrame]) -> list[tuple[int, int | None, tuple[str, ...]]]:
    """(cycle, needy job, hosts) of each takeFromTheRich pass, in the order its lines name the machines (a
    retry over the same machines, the same walk, once)."""
    if "defrag" not in tables:
        return []
    rows = (tables["defrag"].filter(pl.col("kind").is_in(["candidate_machine", "not_candidate_machine",
                                                           "machines_found"]) & pl.col("cycle").is_not_null())
            .sort(log_order("cycle")).select("cycle", "kind", "job_id", "host"))
    out: list[tuple[int, int | None, tuple[str, ...]]] = []
    hosts: list[str] = []
    for cycle, kind, job, host in rows.iter_rows():
        if kind == "machines_found":
            if len(hosts) > 1 and (not out or out[-1] != (cycle, job, tuple(hosts))):
                out.append((cycle, job, tuple(hosts)))
            hosts = []
        elif host is not None and host not in hosts:
            hosts.append(host)
    return out


def rich_listings(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> list[Walked]:
    """Each takeFromTheRich pass with the bits of the map it walked: the needy job's pool's (its class's;
    a job of no class the log configures: the deepest pool holding every machine named, which a pass that
    left out machines too small can take for a subpool), of the machines in the pools' maps then."""
    walks = rich_walks(tables)
    if not walks:
        return []
    cluster = _cluster(tables, boot.config.behaviours)
    classes = {c.name: c.nodepool for c in boot.classes}
    klass = dict(tables["jobs"].filter(pl.col("class").is_not_null() & pl.col("job_id").is_not_null())
                 .group_by("job_id").agg(pl.col("class").first()).iter_rows()) if "jobs" in tables else {}
    out = []
    for cycle, job, hosts in walks:
        pool = classes.get(klass.get(job, ""))
        if pool not in cluster.parent:
            pool = _walked_pool(hosts, cluster.parent, cluster.pool_of)
        if pool is not None:
            out.append(Walked(cycle, hosts, _capacity_bits(pool, cycle, cluster)))
    return out


def freeable_listings(tables: Mapping[str, pl.DataFrame], behaviours: Behaviours) -> list[Walked]:
    """Each countFreeableMachines call's `Machines to search` list (How Much, for a reservation): before
    2.2.0 (no `freeable_by_eviction_cost`: from then it prints the machines sorted by eviction cost) a
    walk of the pool's machinesByOrder table for the reservation's size, a HashMap filled as machines
    arrive, at the size it had (the most machines of that size listed so far: a map never shrinks)."""
    if "expansions" not in tables or behaviours.has("freeable_by_eviction_cost"):
        return []
    rows = (tables["expansions"].filter((pl.col("kind") == "freeable_order") & pl.col("cycle").is_not_null())
            .sort(log_order("cycle")).select("cycle", "hosts"))
    order = dict(tables["nodes"].filter(pl.col("share_order").is_not_null()).group_by("host")
                 .agg(pl.col("share_order").last()).iter_rows())
    most: dict[int | None, int] = {}
    out = []
    for cycle, listed in rows.iter_rows():
        hosts = tuple(dict.fromkeys(h.rsplit(":", 1)[0] if ":" in h else h for h in listed or ()))
        if len(hosts) < 2:
            continue
        size = order.get(hosts[0])
        most[size] = max(most.get(size, 0), len(hosts))
        out.append(Walked(cycle, hosts, map_bits(most[size])))
    return out


JOINS = ("arrive", "reactivate", "recover_node", "vary_on")  # a node (back) in its pool's tables
LEAVES = ("death", "disable", "vary_off")  # before 2.1.0 NodePool.disable took the node out of them


@dataclass(frozen=True)
class _Cluster:
    """Each pool's parent, each machine's pool, and its joins (True) and leaves (False) of the pool's map by
    cycle (arrivals before the log's first cycle at 0)."""

    parent: dict[str, str | None]
    pool_of: dict[str, str]
    events: dict[str, list[tuple[int, bool]]]
    leaves: bool  # whether a node leaves its pool's map when disabled (before 2.1.0: purge_by_policy absent)

    def present(self, host: str, cycle: int) -> bool:
        """Whether the machine is in its pool's map at `cycle`."""
        state = False
        for at, joined in self.events.get(host, ()):
            if at > cycle:
                break
            if joined or self.leaves:
                state = joined
        return state


def _cluster(tables: Mapping[str, pl.DataFrame], behaviours: Behaviours) -> _Cluster:
    """The pools and machines of the log's node lines."""
    parent = dict(tables["nodepools"].select("name", "parent").iter_rows())
    nodes = tables["nodes"].filter(pl.col("host").is_not_null())
    pool_of = dict(nodes.filter(pl.col("nodepool").is_not_null()).group_by("host")
                   .agg(pl.col("nodepool").last()).iter_rows())
    events: dict[str, list[tuple[int, bool]]] = {}
    for cycle, host, event in (nodes.filter(pl.col("event").is_in([*JOINS, *LEAVES])).sort(log_order())
                               .select(pl.col("cycle").fill_null(0), "host", "event").iter_rows()):
        events.setdefault(host, []).append((cycle, event in JOINS))
    for marks in events.values():
        marks.sort(key=lambda e: e[0])  # stable: a cycle's events in the log's order
    return _Cluster(parent, {h: p for h, p in pool_of.items() if h in events}, events,
                    not behaviours.has("purge_by_policy"))


def _capacity_bits(pool: str, cycle: int, cluster: _Cluster) -> int:
    """The bits of getAllMachines()'s table for `pool` at `cycle`: its own map cloned, each subpool's
    (itself such a map) put in, in the order of the RM's map of subpools (a HashMap by name)."""
    serial = iter(range(1 << 30))  # distinct hashes: only the sizes decide the capacity

    def all_machines(p: str) -> JavaHashMap:
        own = JavaHashMap()
        for host in sorted(h for h, q in cluster.pool_of.items() if q == p and cluster.present(h, cycle)):
            own.put(host, next(serial))
        out = own.clone()
        for child in hashmap_order(sorted(c for c, q in cluster.parent.items() if q == p)):
            out.put_all(all_machines(child).entries())
        return out
    return all_machines(pool).capacity.bit_length() - 1  # a clone of few machines can be under 16


def _walked_pool(hosts: tuple[str, ...], parent: Mapping[str, str | None], pool_of: Mapping[str, str]) -> str | None:
    """The deepest pool whose tree holds every machine walked (the needy job's pool, as far as the walk shows)."""
    def chain(p: str | None) -> list[str]:
        out: list[str] = []
        while p is not None and p not in out:
            out.append(p)
            p = parent.get(p)
        return out[::-1]
    chains = [chain(pool_of.get(h)) for h in hosts]
    if not chains or not all(chains):
        return None
    common = None
    for level in zip(*chains, strict=False):
        if len(set(level)) > 1:
            break
        common = level[0]
    return common


def node_ips(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None,
             budget: int = RUNS) -> NodeIps | None:
    """IPs under which every walk of a node map the log prints comes out as printed and What Of places each
    cycle's processes where the RM did (as far as `budget` runs of What Of find); None where the log
    shows neither a walk nor a placement, or shows the nodes' IPs (3.0.0 on)."""
    if tables["nodes"].filter(pl.col("ip").is_not_null()).height:
        return None
    # not held for the search (`replay_start`'s hold): it reads the first `budget` placing cycles only
    start = replay_start(tables, boot)
    walks = rich_listings(tables, start.boot) + freeable_listings(tables, start.boot.config.behaviours)
    placed = _placing_cycles(tables, start, budget)
    if not walks and not placed.count:
        return None
    index: dict[str, int] = {}
    for w in walks:
        for h in w.hosts:
            index.setdefault(h, len(index))
    listings = [Listing(w.cycle, OWNER, tuple(index[h] for h in w.hosts), w.bits, ()) for w in walks]
    found, runs, finished = _solved(listings, index), 0, False
    unexplained: set[int] = set()
    while not finished and runs < budget:
        miss, ran, finished = _first_miss(placed, found.ip_of, unexplained, budget - runs)
        runs += ran
        if miss is None:
            continue
        cycle, before, after, bits = miss
        trial = [*listings, Listing(cycle, WHAT_OF, (index.setdefault(before, len(index)),
                                                     index.setdefault(after, len(index))), bits, ())]
        solved = _solved(trial, index)
        if solved.hashes.kept_to != found.hashes.kept_to:  # no hashes keep it with the rest: no node-hash tie
            unexplained.add(cycle)
        else:
            listings, found = trial, solved
    agree = sum(1 for c in placed.kept if c.cycle not in unexplained) if finished else None
    return replace(found, walks=len(walks), placing=placed.count, agree=agree)


def _solved(listings: list[Listing], index: Mapping[str, int]) -> NodeIps:
    """The least hashes keeping `listings` (each pair walked in distinct buckets: the order the harness puts
    machines in is not the log's), and an IP per machine hashing to its value."""
    strict = [replace(w, inserted=tuple(reversed(w.keys))) for w in listings]
    found = hashes_of(strict)
    mask = (1 << max((w.bits for w in listings), default=0)) - 1
    ip_of = {}
    for name, k in index.items():
        value = found.hash_of.get(k)
        ip = None if value is None else _ip(name, k, value, mask)
        if ip is not None:
            ip_of[name] = ip
    return NodeIps(ip_of, 0, found, 0, None)  # the caller counts the walks and cycles


@dataclass(frozen=True)
class _Placing:
    """A cycle whose What Of the log shows: rmref's input and counts, and the RM's (job, host) in order."""

    cycle: int
    inp: CycleInput
    counts: Mapping[int, int]
    theirs: tuple[tuple[int, str], ...]
    prefer: Mapping[str, int]


@dataclass(frozen=True)
class _Placings:
    """How many undamaged cycles What Of placed processes in (`count`), and the first of them, as
    many as the search's runs (`kept`): a cycle the search reaches has cost a run, as has every
    one before it (run in that pass, or in an earlier one that left it out), so it reaches no
    further, and a long log's inputs are not held (about 29 KB a cycle on i_mega24)."""

    kept: tuple[_Placing, ...]
    count: int


def _placing_cycles(tables: Mapping[str, pl.DataFrame], start: ReplayStart, budget: int) -> _Placings:
    """The undamaged cycles in which What Of placed processes, as the audit reads them, the first
    `budget` kept (`_Placings`)."""
    reads = start.reads(tables)
    logged = reads.logged
    placing = [c for c in tables["cycles"]["cycle"].to_list() if logged.connected.get(c) and c not in start.damage]
    kept: list[_Placing] = []
    wanted = min(budget, len(placing))
    for inp in reads.inputs if wanted else ():  # every published cycle's, in order (as `placing` lists them)
        connected = logged.connected.get(inp.cycle, [])
        if not connected or inp.cycle in start.damage:
            continue
        prefer: dict[str, int] = {}
        for _job, host, _order, _sid in sorted(connected, key=lambda r: r[3] or 0):
            prefer.setdefault(host, len(prefer))
        kept.append(_Placing(inp.cycle, inp, logged.counts.get(inp.cycle, {}),
                             tuple((j, h) for j, h, _o, _s in connected), prefer))
        if len(kept) == wanted:
            break
    return _Placings(tuple(kept), len(placing))


def _first_miss(placed: _Placings, ip_of: Mapping[str, str], skip: set[int],
                budget: int) -> tuple[tuple[int, str, str, int] | None, int, bool]:
    """The first place where What Of under these IPs (the harness's common one for the rest) puts a process
    on another host than the RM: (cycle, the RM's host, What Of's, the bits of the table it walked), where the
    RM's host was in that table (met later); a cycle whose first miss is of another kind joins `skip`. Also
    the runs of What Of made, and whether every cycle was run (none missed, none left for lack of runs)."""
    runs = 0
    for c in placed.kept:
        if c.cycle in skip:
            continue
        if runs >= budget:
            return None, runs, False
        runs += 1
        inp = replace(c.inp, machines=tuple(replace(m, ip=ip_of.get(m.name, COMMON_IP)) for m in c.inp.machines))
        result = what_of_choices(inp, c.counts, c.prefer, stale_after_howmuch(inp))
        ours = tuple((p.job_id, p.host) for p in result.placements)
        if ours == c.theirs:
            continue
        k = next((i for i, (a, b) in enumerate(zip(ours, c.theirs, strict=False)) if a != b), None)
        table = None if k is None else next((t for t in result.tables if t.first <= k < t.end), None)
        if k is None or table is None or ours[k][0] != c.theirs[k][0] or c.theirs[k][1] not in table.hosts:
            skip.add(c.cycle)
            continue
        return (c.cycle, c.theirs[k][1], ours[k][1], table.capacity.bit_length() - 1), runs, False
    return None, runs, len(placed.kept) == placed.count  # past the last kept, the runs are spent (`_Placings`)


def _ip(name: str, k: int, value: int, mask: int) -> str | None:
    """The first IP 10+k/256.k%256.x.y (k naming the machine) whose node hash has bucket value `value`."""
    for i in range(256 * 254):
        ip = f"{10 + k // 256}.{k % 256}.{i // 254}.{1 + i % 254}"
        if spread(node_hash(name, ip)) & mask == value:
            return ip
    return None


def note(found: NodeIps | None) -> str:
    """What the scenario assumed of the nodes' IPs (the log shows none)."""
    if found is None:
        return (f"node IPs: {COMMON_IP} for every node (the log shows no IP, no walk of a node map and no "
                "placement): the RM meets machines alike in the hash order of their names")
    cut = "".join(f"; the printed walks up to cycle {c:,} (later ones contradict them)"
                  for c in found.hashes.kept_to.values())
    placing = (f"What Of places as the RM did in {found.agree:,} of the {found.placing:,} cycles it placed in"
               if found.agree is not None else f"What Of's {found.placing:,} cycles not all searched")
    return (f"node IPs: {len(found.ip_of)} machine(s) given IPs under which the RM's node maps walk them as the "
            f"log's {found.walks} printed walk(s) (takeFromTheRich, countFreeableMachines) show and, as far as "
            f"rmref's model of the maps tells, as What Of met them ({placing}); the log shows no IP; the others "
            f"{COMMON_IP}{cut}")
