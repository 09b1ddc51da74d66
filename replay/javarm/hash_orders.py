"""The RM's hash order of a job's shares as an INFO log shows it, for the harness's share UUIDs
(`share_buckets`), as walks of the job's map of shares for the solver of `replay.javarm.hashes`.

A job keeps its shares in a `HashMap` (RmJob's assigned shares, keyed by the share's DuccId) made with
the job, which grows with the most shares the job has held and never shrinks. The published Existing
list is that map's values sorted by investment, stably (RmJob.ShareByInvestmentSorter): shares that tie
in the sort keep the map's walk order, the hash order of their DuccIds, which the RM draws at random.
Each run of tied shares is one walk of the job's map at its size then; the shares were put in the order
the RM created them, their share ids'. The hashes chosen are `replay.javarm.hashes.hashes_of`'s: the
least under which every such walk comes out as listed, distinct buckets where possible.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.javarm.cleared import clearing_listings
from replay.javarm.hashes import MIN_BITS, Hashes, Listing, hashes_of, machine_map, map_bits
from replay.javarm.purged import purge_listings
from replay.model.published import PublishedShares, published_schedule
from replay.model.logorder import log_order


def share_map(job: int) -> str:
    """The name of a job's map of shares, as a Listing's `owner`."""
    return f"job {job}"


def share_listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Each run of two shares or more that tie in a job's published Existing list (uninitialized with the
    same initialization time: here `^0`, and no process the log shows Running by the cycle: the
    Orchestrator's state, read before the cycle's schedule, initializes a share reported Running there,
    and a job whose processes initialize in no time prints it `^0` still), as a walk of the job's map of
    shares at the size it had then (the most shares the job's lists held so far), its shares put in
    share-id order."""
    procs = tables["processes"].filter((pl.col("state_to") == "Running") & pl.col("share_id").is_not_null()
                                       & pl.col("cycle").is_not_null())
    running = dict(procs.group_by("share_id").agg(pl.col("cycle").min()).iter_rows())
    published = PublishedShares(published_schedule(tables))
    held: dict[int, int] = {}  # job -> the most shares its map has held
    out: list[Listing] = []
    for cycle in tables["cycles"].filter(pl.col("cycle").is_not_null())["cycle"].to_list():
        runs: dict[int, list[list[int]]] = {}
        last: dict[int, bool] = {}
        count: dict[int, int] = {}
        for job, _host, sid, _mem, init_ms in published.shares(cycle)[0]:
            count[job] = count.get(job, 0) + 1
            tied = init_ms == 0 and sid is not None and running.get(sid, cycle + 1) > cycle
            if tied and last.get(job):
                runs[job][-1].append(sid)
            elif tied:
                runs.setdefault(job, []).append([sid])
            last[job] = tied
        for job, n in count.items():
            held[job] = max(held.get(job, 0), n)
        out += [Listing(cycle, share_map(job), tuple(run), map_bits(held[job]), tuple(sorted(run)))
                for job, job_runs in runs.items() for run in job_runs if len(run) > 1]
    return out


def share_hashes(tables: Mapping[str, pl.DataFrame]) -> Hashes:
    """Share id -> the hash of its DuccId under which every job's map of shares walks its tied shares as
    the log's Existing lists print them, and every machine's as its connectShare lines, its clearings
    (`replay.javarm.cleared`) and its purges (`replay.javarm.purged`) show
    (`replay.javarm.hashes.hashes_of`)."""
    return hashes_of(share_listings(tables) + machine_listings(tables) + clearing_listings(tables)
                     + purge_listings(tables))


def machine_listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """The walks of each machine's map of shares (Machine's active shares, a `HashMap` keyed by the share,
    made with the machine, which never shrinks) that its connectShare lines print, as pairs of shares one
    walks before the other: each line lists the jobs of the machine's shares in the map's walk order, before
    the new share is put in. A share is named where its job's places hold no other share of the job: the
    job's shares there are the ones the last cycle's Existing lists held on the machine and those connected
    there since, when they are as many as the line shows. A new share is placed by the machine's next line
    where that is the walk before with it put in, and only one place explains it.
    takeFromTheRich walks this map among shares that tie in wealth and investment."""
    if "placements" not in tables:
        return []
    rows = (tables["placements"].filter(pl.col("cycle").is_not_null() & pl.col("share_id").is_not_null()
                                        & pl.col("job_id").is_not_null())
            .sort(log_order("cycle")).select("cycle", "host", "share_id", "job_id", "m_jobs"))
    # a map that grows past 16 buckets walks by hash bits no line before its growth shows, and least
    # hashes (all below 16) would keep its old walk: such a machine's shares are left to the seed
    grown = {h for h, n in rows.group_by("host").agg(pl.col("m_jobs").list.len().max()).iter_rows()
             if n is not None and map_bits(n + 1) > MIN_BITS}
    rows = rows.filter(~pl.col("host").is_in(sorted(grown)))
    published = PublishedShares(published_schedule(tables))
    held: dict[int, dict[tuple[str, int], set[int]]] = {}  # cycle -> (host, job) -> its shares listed there
    most: dict[str, int] = {}  # host -> the most shares its map has held
    last: dict[str, tuple[int, list[int], dict[int, list[int]], int, int]] = {}  # host -> its last line
    since: dict[tuple[int, str, int], set[int]] = {}  # (cycle, host, job) -> shares connected in the cycle
    seen: set[Listing] = set()
    for cycle, host, sid, job, listed_jobs in rows.iter_rows():
        jobs: list[int] = listed_jobs or []  # `<none>`: an empty machine
        if cycle - 1 not in held:
            listed: dict[tuple[str, int], set[int]] = {}
            for j, h, s, _mem, _init in published.shares(cycle - 1)[0]:
                if s is not None:
                    listed.setdefault((h, j), set()).add(s)
            held[cycle - 1] = listed
        named: dict[int, list[int]] = {}  # share -> its possible places
        for j in set(jobs):
            slots = [k for k, x in enumerate(jobs) if x == j]
            mine = held[cycle - 1].get((host, j), set()) | since.get((cycle, host, j), set())
            if len(mine) == len(slots):
                named.update({s: slots for s in mine})
        before = last.get(host)
        if before is not None:  # one more than the line before: no share left since, nothing else put in
            _, old_jobs, old_named, put_sid, put_job = before
            fits = [k for k in range(len(jobs)) if jobs[k] == put_job and jobs[:k] + jobs[k + 1:] == old_jobs]
            if len(fits) == 1:
                k = fits[0]
                for s, ks in old_named.items():
                    if s in named and len(ks) < len(named[s]):
                        named[s] = [x + (x >= k) for x in ks]
                named[put_sid] = [k]
                for s, ks in named.items():  # the others of its job: its place is no longer theirs
                    if s != put_sid and len(ks) > 1 and k in ks:
                        named[s] = [x for x in ks if x != k]
        bits = map_bits(max(most.get(host, 0), len(jobs)))
        most[host] = max(most.get(host, 0), len(jobs) + 1)
        last[host] = (cycle, list(jobs), named, sid, job)
        since.setdefault((cycle, host, job), set()).add(sid)
        seen.update(Listing(cycle, machine_map(host), pair, bits, tuple(sorted(pair)))
                    for pair in _certain_pairs(named))
    return sorted(seen, key=lambda w: (w.cycle, w.owner, w.keys))


def _certain_pairs(named: Mapping[int, list[int]]) -> list[tuple[int, int]]:
    """Pairs of shares (a, b) such that a walks before b whichever of its possible places each takes,
    each to its nearest followers only."""
    span = {s: (min(ks), max(ks)) for s, ks in named.items()}
    pairs: list[tuple[int, int]] = []
    for a, (_, a_hi) in span.items():
        after = [(lo, b) for b, (lo, _) in span.items() if lo > a_hi]
        if after:
            nearest = min(lo for lo, _ in after)
            pairs += [(a, b) for lo, b in after if lo == nearest]
    return pairs
