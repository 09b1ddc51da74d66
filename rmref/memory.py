"""What the RM keeps from one cycle to the next that no cycle's input holds: its memory.

The RM keeps each job's last pure (pre-bonus) fair share (detectFragmentation reads it for jobs
How Much did not count this cycle), the users' wealth its last defragmentation left (the next
one's machine and share orders read it), and the needy list detectFragmentation leaves (the next
cycle's What Of expands those jobs first). `rmref.schedule` reads a cycle's `Memory` from its
`Hints` and returns the next one in `CycleResult.memory`; every caller that chains cycles (the
audit, its stored checkpoints, the what-if, the simulation) carries exactly this value.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Memory:
    """The RM's state carried into a cycle from the one before (empty at the log's start)."""

    pure_fair_share: dict[int, int] = field(default_factory=dict)  # job -> its last pure fair share
    wealth: dict[str, int] | None = None  # users' wealth left by the last defragmentation (None: none yet)
    needy: tuple[int, ...] = ()  # the needy list the last detectFragmentation left, in its order
