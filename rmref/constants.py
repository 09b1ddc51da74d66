"""The constants every phase shares: Java's "no limit", units, DUCC's defaults, and the names of
eviction reasons and defragmentation actions as rmref's records carry them."""

from __future__ import annotations

UNLIMITED = 2147483647  # Java's Integer.MAX_VALUE: "no limit" / "could not predict"
KB_PER_GB = 1024 * 1024
DEFAULT_QUANTUM_GB = 15  # ducc.rm.share.quantum when nothing sets it

# why a process is taken away before defragmentation (rmref.evictions)
PURGE, RESERVATION, SHRINK = "purge", "reservation", "shrink"
ALREADY_LEAVING = "already_leaving"  # shrinkBy marked a share that was leaving anyway: nothing new goes
PURGE_LEAVING = "purge_leaving"  # a node's disable purged a share that was leaving anyway: nothing new goes
PURGES = frozenset({PURGE, PURGE_LEAVING})  # taken with a node: the RM's purge line names the host, not the share
NOT_NEW = frozenset({ALREADY_LEAVING, PURGE_LEAVING})  # taken again while leaving: no new removal

# why NodePool.disable ran on a machine since the previous cycle (Machine.disabled)
DEAD, VARIED_OFF = "dead", "varied_off"

# what defragmentation does with a donor's share (rmref.defrag, DefragAction.action)
EVICT, REASSIGN, CANCEL = "evict", "reassign_pending", "cancel_pending"
