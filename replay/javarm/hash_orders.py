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

from replay.javarm.hashes import Hashes, Listing, hashes_of, map_bits
from replay.model.published import PublishedShares, published_schedule


def share_map(job: int) -> str:
    """The name of a job's map of shares, as a Listing's `owner`."""
    return f"job {job}"


def share_listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Each run of two shares or more that tie in a job's published Existing list (uninitialized with the
    same initialization time: here `^0`, and no process the log shows Running before the cycle), as a
    walk of the job's map of shares at the size it had then (the most shares the job's lists held so
    far), its shares put in share-id order."""
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
            tied = init_ms == 0 and sid is not None and running.get(sid, cycle) >= cycle
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
    the log's Existing lists print them (`replay.javarm.hashes.hashes_of`)."""
    return hashes_of(share_listings(tables))
