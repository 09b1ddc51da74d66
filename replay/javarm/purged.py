"""The hash order of a machine's shares that a purge shows in its outcome, as pairs for the shares' solver
(`replay.javarm.hashes.hashes_of`, beside `replay.javarm.hash_orders` and `replay.javarm.cleared`).

When a node dies or is varied off, NodePool.disable walks the machine's map of shares (Machine's active
shares, keyed by the share's DuccId) and purges each share (`Purge Job on dead/offline`), leaving a
reservation's intact (`Not purging Reservation`). Before 2.1.0 the walk stops at the first reservation's
share (a `break` where later releases `continue`): the shares walked before it are purged, those after it
are not. The next cycle's Existing lists mark the purged shares `^P`, so where a share of work that is no
reservation is left unmarked the walk stopped there, and it shows every purged share before the
reservation's share, and that share before every share left.

Read only where the machine holds one reservation's share, the purge lines are as many as the shares
marked, and its map has not outgrown 16 buckets (as `hash_orders.machine_listings`).
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl

from replay.javarm.hashes import MIN_BITS, Listing, machine_map, map_bits
from replay.model.logorder import log_order


def purge_listings(tables: Mapping[str, pl.DataFrame]) -> list[Listing]:
    """Pairs (a, b) of shares one machine's map walks a before b, from each purge that stopped at a
    reservation's share (module docstring)."""
    if "nodes" not in tables or "event" not in tables["nodes"].columns:
        return []
    events = (tables["nodes"].filter(pl.col("event").is_in(["purge", "not_purged"]) & pl.col("cycle").is_not_null()
                                     & pl.col("host").is_not_null())
              .sort(log_order("cycle")).select("cycle", "host", "event"))
    stops: dict[tuple[int, str], int] = {}  # (cycle, host) -> the purges before the walk stopped
    purges: dict[tuple[int, str], int] = {}
    for cycle, host, event in events.iter_rows():
        if event == "purge":
            purges[(cycle, host)] = purges.get((cycle, host), 0) + 1
        else:
            stops.setdefault((cycle, host), purges.get((cycle, host), 0))
    if not stops:
        return []
    most: dict[str, int] = {}  # host -> the most shares its map has held
    if "placements" in tables:
        for host, jobs in tables["placements"].filter(pl.col("host").is_not_null()).select(
                "host", "m_jobs").iter_rows():
            most[host] = max(most.get(host, 0), len(jobs or []) + 1)
    listed = tables["schedule"].filter((pl.col("kind") == "existing") & pl.col("share_id").is_not_null()
                                       & pl.col("cycle").is_in(sorted({c for c, _ in stops})))
    out: list[Listing] = []
    for (cycle, host), purged_before in sorted(stops.items()):
        there = listed.filter((pl.col("cycle") == cycle) & (pl.col("host") == host))
        rows = there.select("share_id", "work_type", "purged").rows()
        kept = [s for s, kind, p in rows if kind == "Reservation"]
        purged = [s for s, kind, p in rows if kind != "Reservation" and p]
        left = [s for s, kind, p in rows if kind != "Reservation" and not p]
        if (len(kept) != 1 or not left or len(purged) != purged_before or purges.get((cycle, host)) != purged_before
                or map_bits(max(most.get(host, 0), len(rows))) > MIN_BITS):
            continue
        pairs = [(s, kept[0]) for s in purged] + [(kept[0], s) for s in left]
        out += [Listing(cycle, machine_map(host), pair, MIN_BITS, tuple(sorted(pair))) for pair in pairs]
    return out
