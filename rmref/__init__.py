"""rmref: a pure reference implementation of the DUCC RM's scheduling phases (inputs in, decisions out).

No I/O and no import of `replay` or `tui`. Each phase is a plain function over frozen
dataclasses, so a developer can replace one and replay history against the change. Present so
far: share orders, nodepool capacity tables, the job-cap phase and the How Much counter, the eviction
order of shrinkBy; What Of and defragmentation follow (issue 3).
"""

from rmref.caps import UNLIMITED, CapInput, Caps, base_cap, job_caps
from rmref.evictions import HeldShare, investment_key, shrink_by
from rmref.howmuch import Apportionment, Entity, apportion
from rmref.orders import job_order, machine_order, processes_for_qshares
from rmref.pool import PoolTables, n_shares_by_order

__all__ = [
    "Apportionment", "Entity", "HeldShare", "apportion", "investment_key", "shrink_by", "UNLIMITED", "CapInput", "Caps", "PoolTables", "base_cap", "job_caps", "job_order", "machine_order",
    "n_shares_by_order", "processes_for_qshares",
]
