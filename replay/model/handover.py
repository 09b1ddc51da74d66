"""Processes defragmentation may have handed over before a mid-stream log began.

takeFromTheRich's clearShare hands a fair-share job's pending process to a needy job (the log's
placements show it, `placed_for`); the RM never sets such a share's fixed bit, whatever its new
job's policy, so a reservation's or fixed-share job's process there leaves its machine freeable
(rmref.model.Share.handed_over). A log that begins after the handover has no line of it: the
process reads as fixed, as a process connected for its own job is. Only a process of work that is
not fair share, held when the log began, can be misread so (a fair-share one is never fixed), and
only where the RM defragments: `handovers_assumed` names those processes.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.inputs import job_descriptions
from replay.model.leaving import starts_midstream
from replay.model.published import PublishedShares, published_schedule
from replay.model.settings import INFERRED, Assumption
from rmref.model import FAIR_SHARE

HANDOVER = "processes there before the log began, taken as not handed over"  # its name in `assumed`
HANDOVER_WHY = ("defragmentation hands a fair-share job's pending process to a needy job without the fixed bit "
                "the new job's policy gives (Machine.isFreeable reads it), and no line before the log began says "
                "whether it handed over these processes of work that is not fair share: each is taken as "
                "connected for its own job, so fixed, and its machine not freeable (countFreeableMachines)")
SHOWN = 6  # processes named in the value; the rest counted


def handovers_assumed(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> tuple[Assumption, ...]:
    """The processes of work that is not fair share held when a mid-stream log began (job, host.share),
    each taken as not handed over by defragmentation (none: the log starts with the RM, or the RM
    does not defragment)."""
    if not boot.config.defragmentation or not starts_midstream(tables):
        return ()
    published = PublishedShares(published_schedule(tables))
    first = published.first_listed(tables["cycles"]["cycle"].to_list())
    if first is None:
        return ()
    existing, added, _ = published.shares(first)
    policy = {c.name: c.policy for c in boot.classes}
    classes: dict[int, str] = dict(job_descriptions(tables).select("job_id", "class").drop_nulls()
                   .unique("job_id", keep="first", maintain_order=True).iter_rows())
    named = sorted((job, host, sid) for job, host, sid, _mem, _init in existing
                   if (job, sid) not in added and policy.get(classes.get(job, ""), FAIR_SHARE) != FAIR_SHARE)
    if not named:
        return ()
    shown = [f"job {job} {host}.{sid}" for job, host, sid in named]
    value = ", ".join(shown[:SHOWN]) + (f" and {len(shown) - SHOWN} more" if len(shown) > SHOWN else "")
    return (Assumption(HANDOVER, value, INFERRED, HANDOVER_WHY),)
