"""rmref: a pure reference implementation of the DUCC RM's scheduling cycle (inputs in, decisions out).

No I/O, no logging and no import of `replay` or `tui`. The phases are plain functions over the
frozen dataclasses of `rmref.model`, chained by `schedule`; replace one (`Phases`) to replay
history against a change:

    caps       job_caps(CapInput) -> Caps                          RmJob.initJobCap
    How Much   how_much(inp, caps, ...) -> HowMuch                 howMuchFairShare / howMuchFixed / reservations
    What Of    what_of(inp, counts, ...) -> tuple[Placement, ...]  whatOfFairShare / findShares / findMachines
               (reads How Much's counts and stale_left: HowMuch.stale_left)
    clearing   clearing(inp, counts, set_aside, placed, ...)       setupPreemptions (in findMachines)
               -> tuple[str, ...] (the machines emptied for reservations, of HowMuch.set_aside)
    evictions  evictions(inp, counts, cleared) -> tuple[Eviction]  doEvictions (purge, reservation clearing, shrinkBy)
    defrag     defragment(inp, counts, placed, evicted, ...) -> Defrag   detectFragmentation / takeFromTheRich
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rmref.caps import CapInput, Caps, base_cap, job_caps
    from rmref.clearing import clearing
    from rmref.constants import UNLIMITED
    from rmref.howmuch import HowMuch, how_much
    from rmref.howmuch_state import CounterRun, SetAside
    from rmref.memory import Memory
    from rmref.cycle import CycleResult, Hints, Phases, schedule
    from rmref.defrag import Defrag, TakeFromTheRich, Unsettled, defragment
    from rmref.evictions import HeldShare, evictions, investment_key, shrink_by
    from rmref.apportion import Apportionment, Entity, apportion
    from rmref.model import (
        FAIR_SHARE, FIXED_SHARE, RESERVE, ClassDef, Config, CycleDecisions, CycleInput, DefragAction, Eviction, Machine,
        Nodepool, Placement, Share, Work,
    )
    from rmref.orders import job_order, machine_order, processes_for_qshares
    from rmref.pool import PoolTables, n_shares_by_order
    from rmref.whatof import what_of

# Each public name's module, loaded on first use: reading one small module of the package
# (rmref.releases, the release list a command line checks) loads neither the scheduler nor numpy.
_HOMES: dict[str, str] = {
    "caps": "CapInput Caps base_cap job_caps", "clearing": "clearing", "constants": "UNLIMITED",
    "howmuch": "HowMuch how_much", "howmuch_state": "CounterRun SetAside", "memory": "Memory",
    "cycle": "CycleResult Hints Phases schedule", "defrag": "Defrag TakeFromTheRich Unsettled defragment",
    "evictions": "HeldShare evictions investment_key shrink_by", "apportion": "Apportionment Entity apportion",
    "model": "FAIR_SHARE FIXED_SHARE RESERVE ClassDef Config CycleDecisions CycleInput DefragAction Eviction "
             "Machine Nodepool Placement Share Work",
    "orders": "job_order machine_order processes_for_qshares", "pool": "PoolTables n_shares_by_order",
    "whatof": "what_of",
}
_HOME = {name: f"rmref.{module}" for module, names in _HOMES.items() for name in names.split()}


class _Package(ModuleType):
    """rmref's module object: a public function keeps its name where a submodule of the same name
    loads (apportion, clearing, evictions), as the package's own import of it would leave it."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, ModuleType) and value.__name__ == _HOME.get(name):
            value = getattr(value, name)  # the import system binds the loaded submodule: take its function
        super().__setattr__(name, value)


__import__(__name__).__class__ = _Package


def __getattr__(name: str) -> Any:
    """A public name, imported from its module the first time it is read."""
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'rmref' has no attribute {name!r}")
    value = getattr(__import__(module, fromlist=[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "FAIR_SHARE", "FIXED_SHARE", "RESERVE", "UNLIMITED",
    "Apportionment", "CapInput", "Caps", "ClassDef", "Config", "CounterRun", "CycleDecisions", "CycleInput",
    "CycleResult", "Defrag", "DefragAction", "Entity", "Eviction", "HeldShare", "Hints", "HowMuch", "Machine",
    "Memory", "Nodepool", "Phases", "Placement", "PoolTables", "SetAside", "Share", "TakeFromTheRich", "Unsettled",
    "Work", "apportion", "base_cap", "clearing", "defragment", "evictions", "how_much", "investment_key", "job_caps",
    "job_order", "machine_order", "n_shares_by_order", "processes_for_qshares", "schedule", "shrink_by", "what_of",
]
