"""Where a replay of a log starts: one computation that every command reads (audit, explain,
whatif, check, simulate, report, the TUI), so that a log that starts mid-stream is treated alike.

A log whose beginning rolled away lacks the bootstrap (the settings are inferred, `Bootstrap.assumed`),
the nodes' arrival (their sizes are stated or inferred, `Inventory.assumed`), the first cycle's
beginning (that cycle is partial, not replayed) and the submission of the work already running
(that work predates the log). `replay_start` computes all of it once.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import polars as pl

from replay.model.damage import Damage, damaged_cycles
from replay.model.inventory import Inventory
from replay.model.machines import whole_cycles
from replay.model.settings import Assumption
from replay.model.stale import StaleFree
from replay.model.world import Bootstrap, bootstrap, cycle_inputs, machine_inventory
from rmref.model import CycleInput

PARTIAL_CYCLE = "the log starts inside this cycle (its scheduling pass began before the first line)"
NODE_FREE = ("caps",)  # decisions that do not depend on the machines (a cap reads only the job)
PREDATES = "already there when the log begins (its submission is not in the log)"


@dataclass(frozen=True)
class ReplayStart:
    """The configuration, the machines there before the log began, which cycles can be replayed
    whole, and the work that predates the log: what every command replays a log from."""

    boot: Bootstrap
    inventory: Inventory
    whole: frozenset[int]  # cycles whose scheduling pass began in the log
    predates: frozenset[int]  # jobs published before (or without) their submission in the log
    damage: Mapping[int, Damage]  # cycles whose input is damaged (replay.model.damage): replayed by no command

    @property
    def assumed(self) -> tuple[Assumption, ...]:
        """Every setting read and its source, and the machines inferred (report.json 'assumed')."""
        return self.boot.assumed + self.inventory.assumed

    def skipped(self, cycle: int) -> str | None:
        """Why no decision of `cycle` can be replayed (None: it can): its input is damaged (a cut
        first cycle among the reasons), or the log starts inside it."""
        if cycle in self.damage:
            return f"input damaged: {self.damage[cycle].text()}"
        return None if cycle in self.whole else PARTIAL_CYCLE

    def machines_unsettled(self, cycle: int) -> str | None:
        """Why the machines of `cycle` are not known (only NODE_FREE decisions replay then), or None."""
        return self.inventory.unsettled.get(cycle)

    def inputs(self, tables: Mapping[str, pl.DataFrame], cycles: range | None = None,
               stale: StaleFree | None = None) -> Iterator[CycleInput]:
        """rmref's input of every published cycle (those in `cycles`) on these settings and machines."""
        return cycle_inputs(tables, self.boot, cycles, inventory=self.inventory, stale=stale)


def predates_log(tables: Mapping[str, pl.DataFrame]) -> frozenset[int]:
    """Jobs the log publishes but never shows submitted: they were there before its first line."""
    published = tables["schedule"].filter(pl.col("job_id").is_not_null())["job_id"].unique()
    submitted = tables["jobs"].filter(pl.col("source") == "submit")["job_id"].unique()
    return frozenset(set(published.to_list()) - set(submitted.to_list()))


def replay_start(tables: Mapping[str, pl.DataFrame], boot: Bootstrap | None = None) -> ReplayStart:
    """The replay's start (see the module docstring); InputError when the bootstrap is missing."""
    boot = boot or bootstrap(tables)
    return ReplayStart(boot, machine_inventory(tables, boot), frozenset(whole_cycles(tables)), predates_log(tables),
                       damaged_cycles(tables))
