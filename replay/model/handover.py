"""Processes defragmentation may have handed over before a mid-stream log began.

takeFromTheRich's clearShare hands a fair-share job's pending process to a needy job (the log's
placements show it, `placed_for`); the RM never sets such a share's fixed bit, whatever its new
job's policy, so a reservation's or fixed-share job's process there leaves its machine freeable
(rmref.model.Share.handed_over). A log that begins after the handover has no line of it: the
process reads as fixed, as a process connected for its own job is. Only a process of work that is
not fair share, held when the log began, can be misread so (a fair-share one is never fixed), and
only where the RM defragments.

The log may still show it: countFreeableMachines sets a freeable machine aside, out of the
counters' free machines, so where the RmCounter vmachines of some cycles reproduce on no machines
with the process fixed and do with it handed over, and with no other handed over instead, it was
handed over (`settle_handovers`, a few processes tried, one at a time). Where several would do,
those cycles are not replayed, and their verdict names the processes. The rest are taken as not
handed over, and named so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.cycleref import label
from replay.model.inputs import job_descriptions
from replay.model.leaving import starts_midstream
from replay.model.machines.inventory import Inventory
from replay.model.published import PublishedShares, published_schedule
from replay.model.settings import INFERRED, Assumption
from rmref.model import FAIR_SHARE, RESERVE

HANDOVER = "processes there before the log began, taken as not handed over"  # its name in `assumed`
HANDOVER_WHY = ("defragmentation hands a fair-share job's pending process to a needy job without the fixed bit "
                "the new job's policy gives (Machine.isFreeable reads it), and no line before the log began says "
                "whether it handed over these processes of work that is not fair share: each is taken as "
                "connected for its own job, so fixed, and its machine not freeable (countFreeableMachines)")
HANDED = "handed over by defragmentation before the log began"  # the value of an inferred one
ONE_OF = ("the RmCounter vmachines reproduce on no machines with the processes there before the log began all "
          "fixed, and do with any one of {which} handed over by defragmentation before the log began (no fixed "
          "bit: countFreeableMachines may set its machine aside): the log does not say which")
SHOWN = 6  # processes named in the value; the rest counted
TRIED = 6  # processes tried as handed over, at most: each try solves the machines again

Process = tuple[int, str, int]  # (job, host, share id)
Solve = Callable[[frozenset[tuple[int, int]]], Inventory]  # the machines, on these (job, share) handed over


def handover_candidates(tables: Mapping[str, pl.DataFrame], boot: Bootstrap) -> list[Process]:
    """The processes of work that is not fair share held when a mid-stream log began, in (job,
    host, share) order: none where the log starts with the RM or the RM does not defragment."""
    if not boot.config.defragmentation or not starts_midstream(tables):
        return []
    published = PublishedShares(published_schedule(tables))
    first = published.first_listed(tables["cycles"]["cycle"].to_list())
    if first is None:
        return []
    existing, added, _ = published.shares(first)
    policy = {c.name: c.policy for c in boot.classes}
    classes: dict[int, str] = dict(job_descriptions(tables).select("job_id", "class").drop_nulls()
                                   .unique("job_id", keep="first", maintain_order=True).iter_rows())
    return sorted((job, host, sid) for job, host, sid, _mem, _init in existing
                  if (job, sid) not in added and policy.get(classes.get(job, ""), FAIR_SHARE) != FAIR_SHARE)


def settle_handovers(tables: Mapping[str, pl.DataFrame], boot: Bootstrap, inventory: Inventory,
                     solve: Solve) -> tuple[frozenset[tuple[int, int]], Inventory, tuple[Assumption, ...]]:
    """(job, share id) of the process the log shows handed over before it began, the machines
    solved on it, and what is said of every candidate (`handover_candidates`): the one inferred
    handed over (the cycles its handover settles), the rest taken as not handed over. Where
    several would each settle the cycles, the log does not say which: none is inferred, and those
    cycles' verdict says so instead of the machines'."""
    candidates = handover_candidates(tables, boot)
    if not candidates:
        return frozenset(), inventory, ()
    settling: list[tuple[Process, Inventory]] = []
    # only countFreeableMachines reads the fixed bit, for a reservation-class job's machines
    reserving = any(c.policy == RESERVE for c in boot.classes)
    for process in candidates[:TRIED] if reserving and inventory.unsettled else ():
        trial = solve(frozenset({(process[0], process[2])}))
        if trial.unsettled.keys() < inventory.unsettled.keys():
            settling.append((process, trial))
    handed: frozenset[tuple[int, int]] = frozenset()
    said: list[Assumption] = []
    if len(settling) == 1:
        ((job, host, sid), trial), = settling
        settled = sorted(inventory.unsettled.keys() - trial.unsettled.keys())
        handed, inventory = frozenset({(job, sid)}), trial
        said.append(Assumption(f"job {job}'s process {host}.{sid}", HANDED, INFERRED, _evidence(tables, settled)))
    elif settling:
        which = ", ".join(_name(p) for p, _ in settling)
        why = ONE_OF.format(which=which)
        open_cycles = {c for _, trial in settling for c in inventory.unsettled.keys() - trial.unsettled.keys()}
        inventory = replace(inventory, unsettled={c: why if c in open_cycles else w
                                                  for c, w in inventory.unsettled.items()})
    rest = [_name(p) for p in candidates if (p[0], p[2]) not in handed]
    if rest:
        value = ", ".join(rest[:SHOWN]) + (f" and {len(rest) - SHOWN} more" if len(rest) > SHOWN else "")
        said.append(Assumption(HANDOVER, value, INFERRED, HANDOVER_WHY))
    return handed, inventory, tuple(said)


def _name(process: Process) -> str:
    job, host, sid = process
    return f"job {job} {host}.{sid}"


def _evidence(tables: Mapping[str, pl.DataFrame], settled: list[int]) -> str:
    epoch = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    cycles = ", ".join(label(c, epoch.get(c)) for c in settled)
    return (f"taken as fixed, no machines reproduce the RmCounter vmachines of cycle(s) {cycles}; handed over "
            "(no fixed bit, so countFreeableMachines may set its machine aside), they do")
