"""The hash order of a machine's shares that a defragmentation clearing shows in its outcome, as pairs for
the shares' solver (`replay.javarm.hashes.hashes_of`, beside `replay.javarm.hash_orders`).

takeFromTheRich, for a needy job of order `need`, sorts a machine's shares by their user's wealth, then by
investment (ShareByWealthSorter): shares of one user that are all uninitialized with the same time, as the
new shares of the cycle are, tie and keep the walk of the machine's map of shares, the hash order of their
DuccIds. It walks that sort adding the candidates' orders to the machine's free space until the sum reaches
`need`, then clears what it walked (exact matches of `need` first, stopping once the sum is reached). Where
none of the shares cleared is an exact match, the cleared shares are the walk's first candidates, and the
last of them is the one that brought the sum to `need`. A share cleared in the cycle it was made is in no
connectShare line after it was put in; the outcome shows it: the cycle's Existing lists leave it out.

A kept share tells only where its job was a candidate: a job cleared from, or, where the RM retried with
all candidates (`Satisfied needs of job by taking from all candidates`), any fair-share job of a class of
worse priority than the needy job's (each is a candidate then, rich or poor; the machine being eligible,
its nodepool is compatible).

Read only where the cycle holds one clearing on one machine: one needy job satisfied, needing one process,
the others given nothing (each needy job's rounds clear from the first machine that has room, so a job
needing one clears on one machine once), no exact match cleared and no share of the machine removed that
cycle (an evicted share stays on the machine, and the free space counted would not be the RM's).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.javarm.hashes import MIN_BITS, Listing, machine_map, map_bits
from replay.model.logorder import log_order

Share = tuple[int, int, int]  # (share id, job, order)


def clearing_listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Pairs (a, b) of shares of one user on one machine such that the machine's map walks a before b, from
    each cycle whose defragmentation cleared shares made in that cycle (module docstring): every share
    cleared before every share kept of a candidate job, and each cleared share before the last."""
    if "defrag" not in tables or "placements" not in tables:
        return []
    user = dict(tables["jobs"].filter(pl.col("user").is_not_null() & pl.col("job_id").is_not_null())
                .group_by("job_id").agg(pl.col("user").first()).iter_rows())
    placed = (tables["placements"].filter(pl.col("cycle").is_not_null() & pl.col("share_id").is_not_null()
                                          & pl.col("job_id").is_not_null() & pl.col("placed_for").is_null())
              .filter(pl.col("host").is_not_null()).sort(log_order("cycle"))
              .select("cycle", "host", "share_id", "job_id", "order", "m_unused", "m_jobs"))
    most: dict[str, int] = {}  # host -> the most shares its map has held
    for host, jobs in placed.select("host", "m_jobs").iter_rows():
        most[host] = max(most.get(host, 0), len(jobs or []) + 1)
    klass = dict(tables["jobs"].filter(pl.col("class").is_not_null() & pl.col("job_id").is_not_null())
                 .group_by("job_id").agg(pl.col("class").first()).iter_rows())
    classes = ([] if "classes" not in tables else  # a class's priority (greater: worse)
               tables["classes"].unique("name", keep="first", maintain_order=True)
               .filter(pl.col("priority").is_not_null()).select("name", "policy", "priority").rows())
    priority = {name: p for name, _, p in classes}
    fair = {name for name, policy, _ in classes if policy == "FAIR_SHARE"}
    schedule = tables["schedule"].filter(pl.col("cycle").is_not_null() & pl.col("share_id").is_not_null())
    out: list[Listing] = []
    for cycle, (needy, need, retried) in _one_clearing(tables["defrag"]).items():
        rows = placed.filter(pl.col("cycle") == cycle)
        listed = schedule.filter(pl.col("cycle") == cycle)
        kept = {(j, s) for j, s in listed.filter(pl.col("kind") == "existing").select("job_id", "share_id")
                .iter_rows()}
        removed_on = set(listed.filter(pl.col("kind") == "removal")["host"].to_list())
        new: dict[str, list[Share]] = {}
        free: dict[str, int | None] = {}
        for _, host, sid, job, order, unused, _jobs in rows.iter_rows():
            new.setdefault(host, []).append((sid, job, order))
            # the machine's free space once its last share of the cycle is put in (unknown: a line cut short)
            free[host] = None if unused is None or order is None else unused - order
        cleared = {h: [s for s in shares if (s[1], s[0]) not in kept] for h, shares in new.items()}
        hosts = [h for h, c in cleared.items() if c]
        if len(hosts) != 1 or hosts[0] in removed_on or map_bits(most.get(hosts[0], 0)) > MIN_BITS:
            continue
        host = hosts[0]
        room = free[host]
        if room is None or any(order is None for _, _, order in new[host]):
            continue
        bar = priority.get(klass.get(needy, ""))
        worse = {j for j, c in klass.items() if retried and bar is not None and c in fair and priority[c] > bar}
        candidates = worse | {j for _, j, _ in cleared[host]}
        kept_there = [s for s in new[host] if s not in cleared[host] and s[1] in candidates]
        out += [Listing(cycle, machine_map(host), pair, MIN_BITS, tuple(sorted(pair)))
                for pair in _pairs(cleared[host], kept_there, room, need, user)]
    return sorted(set(out), key=lambda w: (w.cycle, w.owner, w.keys))


def _one_clearing(defrag: pl.DataFrame) -> dict[int, tuple[int, int, bool]]:
    """Cycle -> (the needy job, its order, whether it was satisfied from all candidates), for each cycle
    with one clearing: one needy job satisfied, needing one process, and every other needy job given
    nothing."""
    rows = (defrag.filter(pl.col("kind").is_in(["needy", "satisfied", "failed"]) & pl.col("cycle").is_not_null()
                          & pl.col("job_id").is_not_null())
            .select("cycle", "kind", "job_id", "needed", "order", "count", "detail"))
    needy: dict[int, dict[int, tuple[int, int]]] = {}
    satisfied: dict[int, list[tuple[int, bool]]] = {}
    partial: set[int] = set()
    for cycle, kind, job, needed, order, count, detail in rows.iter_rows():
        if kind == "needy":
            needy.setdefault(cycle, {})[job] = (needed, order)
        elif kind == "satisfied":
            satisfied.setdefault(cycle, []).append((job, "all candidates" in (detail or "")))
        elif needed is None or count is None or count != needed:  # failed, but given some
            partial.add(cycle)
    out: dict[int, tuple[int, int, bool]] = {}
    for cycle, jobs in satisfied.items():
        job, retried = jobs[0]
        needed, order = needy.get(cycle, {}).get(job, (0, 0))
        if len(jobs) == 1 and cycle not in partial and needed == 1:
            out[cycle] = (job, order, retried)
    return out


def _pairs(cleared: list[Share], kept: list[Share], free: int, need: int,
           user: Mapping[int, str]) -> list[tuple[int, int]]:
    """The pairs one clearing shows (module docstring), `kept` the candidates' shares it left: none where a
    cleared share matched `need` exactly or the space counted does not reach it."""
    total = free + sum(order for _, _, order in cleared)
    if any(order == need for _, _, order in cleared) or total < need:
        return []
    pairs: list[tuple[int, int]] = []
    last = [s for s in cleared if total - s[2] < need]  # without it the walk had not reached `need`
    if len(last) == 1:
        sid, job, _ = last[0]
        pairs += [(c, sid) for c, j, _ in cleared if c != sid and _alike(user, j, job)]
    pairs += [(c, k) for c, j, _ in cleared for k, kj, order in kept if order != need and _alike(user, j, kj)]
    return pairs


def _alike(user: Mapping[int, str], a: int, b: int) -> bool:
    """Whether two jobs' shares tie in wealth: the same (known) user's."""
    return user.get(a) is not None and user.get(a) == user.get(b)
