"""Evictions: which processes a job gives up when How Much counts it fewer than it holds.

RmJob.shrinkBy sorts the job's assigned shares by investment (least first) and removes the first
ones (seed 000, "shrinkBy", as corrected by the source, catalog section 7 item 21):
  1. a process still initializing goes before any initialized one;
  2. two initializing processes: the one with less initialization time so far goes first;
  3. two initialized ones: less investment (work done in the process) first;
  4. same investment: the larger host first (the "deeper nodepool" rule never applies: the RM
     compares a share's depth with itself), then the newest share (highest id) first.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class HeldShare:
    """One process a job holds, as the eviction order sees it."""

    share_id: int
    host: str
    initialized: bool
    init_ms: int  # initialization time so far (or taken, once initialized)
    investment: int  # work-item time invested in the process (ms)
    host_memory_mb: int


def investment_key(share: HeldShare) -> tuple[int, int, int, int, int]:
    """Sort key: least investment first (see the module docstring for the rules)."""
    if not share.initialized:
        return (0, share.init_ms, 0, 0, -share.share_id)
    return (1, share.investment, -share.host_memory_mb, -share.share_id, 0)


def shrink_by(shares: Sequence[HeldShare], howmany: int) -> list[HeldShare]:
    """The processes a job loses when it must shed `howmany` of them."""
    return sorted(shares, key=investment_key)[: max(0, min(howmany, len(shares)))]
