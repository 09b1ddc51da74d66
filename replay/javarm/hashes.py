"""The hash order of DuccIds, for the harness's UUIDs: hashes that keep every order the log shows a
`HashMap` keyed by DuccIds walked in, at the size the map had. The maps of jobs give the jobs'
(`hash_bucket`, below); a job's map of shares gives its shares' (`share_buckets`,
`replay.javarm.hash_orders`). One solver (`hashes_of`) serves both, each a problem apart.

The RM keeps each class's jobs in a `HashMap` keyed by the job (its DuccId's hash: 31 + its UUID's)
and walks it every cycle: computing every job's cap (`getPrjCap`/`initJobCap` lines, `job_caps`) and,
for a fair-share class, printing `Scheduling job in class C : N shares given, order O` per job
(`counts`, kind `given`). A map walks its buckets in order, and a bucket its jobs in the order they
were put in (Java 8 appends, and a resize splits a bucket keeping that order). A map of 2^b buckets
puts a hash h in bucket `h mod 2^b` (h below 2^16, which Java's spread leaves as is); it starts at 16
and doubles when it gets a 13th, 25th, 49th ... job, and never shrinks: a class that once held 13 jobs
walks them by the low 5 bits of their hashes from then on, so its order changes where bit 4 differs.
Each cycle the RM also makes a map of the needy jobs afresh (`needy_walks`), which holds jobs of
different classes: it ties the classes' hashes together.

An INFO log shows no UUID, but it shows these walks and the size of each map. The hashes chosen are
the least values (in arrival order) under which every walk comes out as logged at the size its map had
then: a small constraint problem per group of maps that share keys, solved by propagation and search.
Keys in no such walk get none: their UUIDs come from the seed.
Where a group's walks contradict each other under any hashes, its hashes keep its walks up to the last
cycle they can (`Hashes.kept_to`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import polars as pl
from replay.model.logorder import log_order

MIN_BITS = 4  # a HashMap's initial table: 16 buckets
LOAD = 0.75  # a HashMap doubles when its size passes this fraction of its buckets
BUDGET = 20_000  # values tried per group before its listings are called contradictory
TREEIFY = 8  # a bucket of a map under 64 buckets that would get a 9th entry doubles the map instead
NEEDY = "(needy)"  # the name of the needy map's walks


@dataclass(frozen=True)
class Listing:
    """One walk of a map keyed by DuccIds: its keys (job or share ids) in the order printed, the map's size
    in bits, and the order they were put in (`inserted`; empty: a class's map, which takes each job as it
    comes)."""

    cycle: int
    owner: str  # whose map: a class's name, NEEDY, or a job's map of shares (hash_orders.share_map)
    keys: tuple[int, ...]
    bits: int
    inserted: tuple[int, ...] = ()


@dataclass(frozen=True)
class Hashes:
    """Per key (job or share id) the hash chosen; per group of maps whose listings contradict each other
    (their owners, joined by `+`) the last cycle whose listings the hashes keep, and the keys listed only
    after it (left to the seed)."""

    hash_of: dict[int, int]
    kept_to: dict[str, int]
    left: int


def machine_map(host: str) -> str:
    """The name of a machine's map of shares, as a Listing's `owner`."""
    return f"host {host}"


def map_bits(size: int, bits: int = MIN_BITS) -> int:
    """The bits of a HashMap's table once it has held `size` entries (from `bits`; it never shrinks)."""
    while size > LOAD * (1 << bits):
        bits += 1
    return bits


def listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Every cycle's walks of every class's map (`class_walks`), with its map's size then (the most jobs
    the class listed so far: a map never shrinks), and of the needy jobs (`needy_walks`)."""
    sources = class_walks(tables)
    size: dict[tuple[int, str], int] = {}
    for walks in sources:
        for key, jobs in walks.items():
            size[key] = max(size.get(key, 0), len(jobs))
    out: list[Listing] = []
    bits: dict[str, int] = {}
    for cycle, klass in sorted(size):
        bits[klass] = map_bits(size[(cycle, klass)], bits.get(klass, MIN_BITS))
        seen = {walks[(cycle, klass)] for walks in sources if (cycle, klass) in walks}
        out += [Listing(cycle, klass, jobs, bits[klass]) for jobs in sorted(seen)]
    return out + needy_walks(tables)


def class_walks(tables: Mapping[str, pl.DataFrame]) -> list[dict[tuple[int, str], tuple[int, ...]]]:
    """(cycle, class) -> the class's jobs in the order its map walks them, as two walks print it: the
    fair-share classes' `Scheduling job in class` lines (`counts`, kind `given`), and every class's jobs'
    `getPrjCap`/`initJobCap` lines (`job_caps`: the RM computes each job's cap walking each class's map,
    fixed-share and reservation classes too)."""
    given = (tables["counts"].filter((pl.col("kind") == "given") & pl.col("cycle").is_not_null()
                                     & pl.col("job_id").is_not_null() & pl.col("class").is_not_null())
             .sort(log_order("cycle")).select("cycle", "class", "job_id"))
    out = [_walks(given.iter_rows())]
    if "job_caps" in tables and "jobs" in tables:
        klass = dict(tables["jobs"].filter(pl.col("class").is_not_null() & pl.col("job_id").is_not_null())
                     .group_by("job_id").agg(pl.col("class").first()).iter_rows())
        caps = (tables["job_caps"].filter(pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
                .sort(log_order("cycle")).select("cycle", "job_id"))
        out.append(_walks((c, klass[j], j) for c, j in caps.iter_rows() if j in klass))
    return out


def _walks(rows: Iterable[tuple[int, str, int]]) -> dict[tuple[int, str], tuple[int, ...]]:
    """(cycle, class) -> its jobs in the order of their first row."""
    walks: dict[tuple[int, str], list[int]] = {}
    for cycle, klass, job in rows:
        jobs = walks.setdefault((cycle, klass), [])
        if job not in jobs:
            jobs.append(job)
    return {key: tuple(jobs) for key, jobs in walks.items()}


def needy_walks(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Per cycle with two needy jobs or more, the walk of the RM's needy map (a HashMap made afresh each
    cycle, keyed by job): put in the order detectFragmentation finds them (`... ACTUALLY NEEDY`), walked
    by doFinalEvictions (one `Satisfied needs of job` or `Could not get enough` line per job)."""
    if "defrag" not in tables:
        return []
    rows = (tables["defrag"].filter(pl.col("kind").is_in(["needy", "satisfied", "failed"])
                                    & pl.col("cycle").is_not_null() & pl.col("job_id").is_not_null())
            .sort(log_order("cycle")).select("cycle", "kind", "job_id"))
    put: dict[int, list[int]] = {}
    walked: dict[int, list[int]] = {}
    for cycle, kind, job in rows.iter_rows():
        seen = (put if kind == "needy" else walked).setdefault(cycle, [])
        if job not in seen:
            seen.append(job)
    return [Listing(c, NEEDY, tuple(walked[c]), map_bits(len(put[c])), tuple(put[c]))
            for c in sorted(put) if len(put[c]) > 1 and sorted(put[c]) == sorted(walked.get(c, []))]


def hash_buckets(tables: Mapping[str, pl.DataFrame]) -> Hashes:
    """The hashes that keep the log's listings (module docstring)."""
    return hashes_of(listings(tables))


def hashes_of(walks: Iterable[Listing]) -> Hashes:
    """Per group of maps that share keys, the least hashes that keep their listings; where none do,
    those that keep the longest run of its first cycles. The walks are of one kind of key (jobs, or
    shares): ids of the other kind would be taken for the same DuccIds."""
    hash_of: dict[int, int] = {}
    kept_to: dict[str, int] = {}
    left = 0
    for group in _groups(list(walks)):
        found = solve(group)
        if found is None:
            n = _longest_prefix(group)
            found = solve(group[:n]) or {}
            kept_to["+".join(sorted({w.owner for w in group}))] = group[n - 1].cycle if n else -1
            left += len({j for w in group for j in w.keys} - set(found))
        hash_of.update(found)
    return Hashes(hash_of, kept_to, left)


def _groups(walks: list[Listing]) -> list[list[Listing]]:
    """The walks in groups that share no key (each by cycle): each group's hashes are a problem apart."""
    parent: dict[int, int] = {}

    def root(j: int) -> int:
        while parent.setdefault(j, j) != j:
            parent[j] = parent[parent[j]]
            j = parent[j]
        return j
    for w in walks:
        for j in w.keys[1:]:
            parent[root(j)] = root(w.keys[0])
    groups: dict[int, list[Listing]] = {}
    for w in walks:
        if w.keys:
            groups.setdefault(root(w.keys[0]), []).append(w)
    return [sorted(g, key=lambda w: (w.cycle, w.owner)) for _, g in sorted(groups.items())]


def _longest_prefix(walks: list[Listing]) -> int:
    """The most first listings some hashes keep (they are kept by the empty prefix)."""
    lo, hi = 0, len(walks) - 1  # walks[:lo] solvable, walks[:hi + 1] not
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if solve(walks[:mid]) is not None:
            lo = mid
        else:
            hi = mid - 1
    return lo


def solve(walks: list[Listing]) -> dict[int, int] | None:
    """key -> the least hash (by arrival) under which every walk lists its keys as it does: preferably
    one bucket per key at every size, else keys that came in the order listed sharing one (never more
    than TREEIFY of a walk); None when no hashes do."""
    arrival: dict[int, tuple[int, int]] = {}
    for walk in walks:
        for job in walk.keys:
            arrival.setdefault(job, (walk.cycle, job))
    if not arrival:
        return {}
    top = max(w.bits for w in walks)
    for shared in (False, True):
        cons: dict[tuple[int, int, int], bool] = {}  # (a, b, bits) -> strict: a walks before b at that size
        for walk in walks:
            put = {j: k for k, j in enumerate(walk.inserted)}
            for a, b in zip(walk.keys, walk.keys[1:], strict=False):
                # a bucket walks its keys in the order they were put in: a class's map, as they came (shared
                # only by jobs of different cycles); a needy map, as detectFragmentation found them; a job's
                # map of shares, as the RM created them
                came_first = put[a] < put[b] if put else arrival[a][0] < arrival[b][0]
                strict = not shared or not came_first
                cons[(a, b, walk.bits)] = cons.get((a, b, walk.bits), False) or strict
        found = _search(sorted(arrival, key=arrival.__getitem__), cons, 1 << top)
        if found is not None:
            return None if crowded(found, walks) else found
    return None


def crowded(hashes: Mapping[int, int], walks: Iterable[Listing]) -> bool:
    """Whether some walk's map would hold more than TREEIFY keys in one bucket: below 64 buckets such a map
    doubles (HashMap.treeifyBin), and would walk another order than the one chosen."""
    for walk in walks:
        counts: dict[int, int] = {}
        for job in walk.keys:
            bucket = hashes[job] % (1 << walk.bits)
            counts[bucket] = counts.get(bucket, 0) + 1
            if counts[bucket] > TREEIFY:
                return True
    return False


def _before(va: int, vb: int, bits: int, strict: bool) -> bool:
    """Whether a map of 2^bits buckets walks hash va before vb (equal buckets: the first to come first)."""
    mask = (1 << bits) - 1
    return (va & mask) < (vb & mask) or (not strict and (va & mask) == (vb & mask))


Domains = dict[int, list[int]]


def _search(order: list[int], cons: Mapping[tuple[int, int, int], bool], size: int) -> dict[int, int] | None:
    """The least values in `order` (each below `size`) meeting every constraint, by search with
    propagation; None when there are none or the search passes BUDGET."""
    near: dict[int, list[tuple[int, int, int, bool]]] = {v: [] for v in order}  # v -> (a, b, bits, strict)
    for (a, b, bits), strict in cons.items():
        near[a].append((a, b, bits, strict))
        near[b].append((a, b, bits, strict))
    start = _propagate({v: list(range(size)) for v in order}, near, order)
    if start is None:
        return None
    stack: list[tuple[int, list[int], Domains]] = [(0, list(start[order[0]]), start)]
    tried = 0
    while stack:
        depth, values, domains = stack[-1]
        if not values:
            stack.pop()
            continue
        value = values.pop(0)
        tried += 1
        if tried > BUDGET:
            return None
        trial = dict(domains)
        trial[order[depth]] = [value]
        narrowed = _propagate(trial, near, [order[depth]])
        if narrowed is None:
            continue
        if depth + 1 == len(order):
            return {v: narrowed[v][0] for v in order}
        stack.append((depth + 1, list(narrowed[order[depth + 1]]), narrowed))
    return None


def _propagate(domains: Domains, near: Mapping[int, list[tuple[int, int, int, bool]]],
               changed: list[int]) -> Domains | None:
    """The domains with every value that no value of a neighbour supports removed (arc consistency);
    None when one empties."""
    queue = list(changed)
    queued = set(queue)
    while queue:
        v = queue.pop()
        queued.discard(v)
        for a, b, bits, strict in near[v]:
            other = b if v == a else a
            kept = _supported(domains[other], domains[v], other == a, bits, strict)
            if len(kept) < len(domains[other]):
                if not kept:
                    return None
                domains[other] = kept
                if other not in queued:
                    queue.append(other)
                    queued.add(other)
    return domains


def _supported(values: list[int], by: list[int], first: bool, bits: int, strict: bool) -> list[int]:
    """The values (of a, if `first`, else of b) some value of the other side (`by`) keeps a before b."""
    mask = (1 << bits) - 1
    if first:  # a needs some b above it
        top = max(x & mask for x in by)
        return [x for x in values if _before(x, top, bits, strict)]
    low = min(x & mask for x in by)
    return [x for x in values if _before(low, x, bits, strict)]
