"""What a cycle took from the job (preempted, purged, taken by defragmentation) and what it only said about it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from replay.apps.explain.lookup import cycle_rows
from replay.apps.explain.facts import OrderOf
from replay.apps.explain.story import Taken
from replay.model.leaving import REMOVAL_KEY, removals_before_the_log
from replay.model.logged import new_removals

# Eviction lines that are not a decision to take a process: a confirmation it is gone, a share
# the RM found it cannot preempt, the machine-level line of a reservation's clearing.
_NOT_TAKEN = ("share_removed", "non_preemptable")
ShareKey = tuple[str, int | None]  # (host, share id); a purge names no share


def _new_removals(tables: Mapping[str, pl.DataFrame], cycle: int, order_of: OrderOf) -> list[tuple[int, Taken]]:
    """(owner, removal) for every job's removals first listed by this cycle's schedule, as the
    audit reads them (replay.model.logged.new_removals); a dead node's processes are listed as
    purged, and one taken as leaving before a mid-stream log began as that (an inference)."""
    before = removals_before_the_log(tables)
    new = new_removals(tables, cycle, before).select("job_id", "host", "share_id", "memory_gb", "purged")
    leaving = (before.filter(pl.col("cycle") == cycle)
               .join(tables["schedule"].filter(pl.col("kind") == "removal"), on=REMOVAL_KEY, how="left")
               .unique(REMOVAL_KEY, keep="first", maintain_order=True)
               .select("job_id", "host", "share_id", "memory_gb", "purged"))
    return ([(job, Taken(host, sid, order_of(job, mem), "node_purge" if purged else "removal"))
             for job, host, sid, mem, purged in new.iter_rows()]
            + [(job, Taken(host, sid, order_of(job, mem), "leaving", inferred=True))
               for job, host, sid, mem, _ in leaving.iter_rows()])


def _logged_reasons(tables: Mapping[str, pl.DataFrame], cycle: int) -> dict[ShareKey, Taken]:
    """(host, share) -> why, from DEBUG defragmentation `clearShare` lines, then eviction lines."""
    out: dict[ShareKey, Taken] = {}
    cleared = tables["defrag"].filter((pl.col("cycle") == cycle) & (pl.col("kind") == "clear_share"))
    for r in cleared.iter_rows(named=True):
        out.setdefault((r["host"], r["share_id"]), Taken(r["host"], r["share_id"], None, "defrag", r["job_id"]))
    evicted = tables["evictions"].filter((pl.col("cycle") == cycle) & pl.col("share_id").is_not_null()
                                         & pl.col("host").is_not_null() & ~pl.col("reason").is_in(_NOT_TAKEN))
    for r in evicted.iter_rows(named=True):
        taken = Taken(r["host"], r["share_id"], r["order"], r["reason"] or "evicted")
        out.setdefault((r["host"], r["share_id"]), taken)
    return out


def rich_takings(tables: Mapping[str, pl.DataFrame], cycle: int, unexplained: list[Taken]) -> dict[ShareKey, int]:
    """(host, share) -> needy job, for removals no log line explains (INFO names no defrag share).

    Needy jobs are served in the order their searches are logged; each takes the unexplained
    removals on the machines it searched, in its search order, newest share first (the least
    invested), until the quantum shares it needed are covered.
    """
    rows = tables["defrag"].filter(pl.col("cycle") == cycle)
    need = {job: (n or 0) * (o or 0) for job, n, o in
            rows.filter(pl.col("kind") == "needy").select("job_id", "needed", "order").iter_rows()}
    left = sorted(unexplained, key=lambda t: -(t.share_id or 0))
    out: dict[ShareKey, int] = {}
    for needy, hosts in rows.filter(pl.col("kind") == "eligible_machines").select("job_id", "hosts").iter_rows():
        want = need.get(needy, 0)
        for host in hosts or ():
            for t in [t for t in left if t.host == host]:
                if want <= 0:
                    break
                out[(t.host, t.share_id)] = needy
                want -= t.order or 0
                left.remove(t)
    return out


def taken_processes(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int, order_of: OrderOf,
                    rmref_takings: Mapping[tuple[int, str, int], int] | None = None) -> tuple[Taken, ...]:
    """What the cycle took from the job: its new removals, each with the reason the log gives.

    The published Removals list is complete; an eviction or DEBUG defragmentation line says why.
    A removal no line explains went to a needy job's take-from-the-rich: the one rmref's run of
    the cycle took that same share for (`rmref_takings`: (donor, host, share id) -> needy job),
    else one inferred from the needy jobs' searches (`rich_takings`); else it is only "removed".
    A dead node's processes are listed as purged.
    """
    removals = _new_removals(tables, cycle, order_of)
    reasons = _logged_reasons(tables, cycle)
    unexplained = [t for _, t in removals if (t.host, t.share_id) not in reasons and t.reason == "removal"]
    inferred = rich_takings(tables, cycle, unexplained)
    ours = rmref_takings or {}
    taken = []
    for r in (t for owner, t in removals if owner == job_id):
        why = reasons.get((r.host, r.share_id))
        needy = inferred.get((r.host, r.share_id))
        if r.reason == "removal" and why is not None:
            r = replace(why, order=why.order or r.order)
        elif r.reason == "removal" and r.share_id is not None and (job_id, r.host, r.share_id) in ours:
            r = replace(r, reason="defrag", needy_job=ours[(job_id, r.host, r.share_id)], inferred=True, by_rmref=True)
        elif r.reason == "removal" and needy is not None:
            r = replace(r, reason="defrag", needy_job=needy, inferred=True)
        taken.append(r)
    return tuple(taken)


def kept_lines(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
    """Eviction lines about the job that took nothing: shares found not preemptable, reservation setup."""
    rows = cycle_rows(tables, "evictions", cycle, job_id)
    lines = [f"Share {sid} was found not preemptable (a reservation waits for its machine)."
             for sid in rows.filter(pl.col("reason") == "non_preemptable")["share_id"].to_list()]
    lines += [f"Machine {h} is being cleared for it (reservation)."
              for h in rows.filter(pl.col("reason") == "setup_for_reservation")["host"].to_list()]
    return lines


def confirmed_gone(tables: Mapping[str, pl.DataFrame], cycle: int, job_id: int) -> list[str]:
    """The job's processes the Orchestrator confirmed gone in the cycle (host.share)."""
    rows = cycle_rows(tables, "evictions", cycle, job_id).filter(pl.col("reason") == "share_removed")
    return [f"{h}.{s}" for h, s in rows.select("host", "share_id").iter_rows()]
