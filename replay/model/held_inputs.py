"""What a replay of every cycle reads off the log besides its tables (`Reads`), those reads held
from the threshold inference for the replay after it (`HeldInputs`), and the two of them every part
of a start reads alike, read once (`ReadOnce`).

The fragmentation threshold is settled before the first cycle is replayed, from every cycle's
input (replay.model.threshold): where the caller replays every cycle next, the inputs the
inference assembled are held and handed over, rather than assembled a second time (on a
mid-stream INFO log that second assembly was about a fifth of the audit's time). Only the
configuration's threshold parts them from the inputs the settled start assembles: the assembly
reads the threshold nowhere else (replay.model.assembly).

The removals taken as decided before a mid-stream log began (replay.model.leaving) are read by the
assembly of every cycle's input, by the logged decisions and by the start's assumption, and the
logged decisions by the machines' inference, the threshold's and the replay: `ReadOnce` reads each
once for a start, and every one of them is handed that reading.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

import polars as pl

from replay.model.bootstrap import Bootstrap
from replay.model.leaving import removals_before_the_log
from replay.model.logged import Logged, logged_decisions
from replay.model.stale import StaleFree
from rmref.model import Config, CycleInput


@dataclass(frozen=True)
class Reads:
    """The RM's logged decisions, the unschedulable machines' model (its `notes` filled as the
    inputs are read) and every cycle's input, in order: what a replay of the cycles reads."""

    logged: Logged
    stale: StaleFree
    inputs: Iterator[CycleInput]


class HeldInputs:
    """Every cycle's input as the threshold inference read it (on `boot`, the threshold open),
    with its logged decisions and model, handed over once (`take`): held no longer than that."""

    def __init__(self, boot: Bootstrap, inputs: list[CycleInput], logged: Logged, stale: StaleFree) -> None:
        self._boot = boot
        self._held: tuple[list[CycleInput], Logged, StaleFree] | None = (inputs, logged, stale)

    def take(self, boot: Bootstrap, cycles: range | None = None) -> Reads | None:
        """The reads of the cycles (those in `cycles`) on `boot`'s settings, the first time it is
        asked; None after, or where `boot` is not the one held but for its threshold."""
        if self._held is None or not _alike(self._boot, boot):
            return None
        inputs, logged, stale = self._held
        self._held = None
        return Reads(logged, stale, _handed(inputs, boot.config, cycles))

    def drop(self) -> None:
        """Let the inputs go untaken (the caller found its replay done: a stored audit read)."""
        self._held = None


class ReadOnce:
    """The removals taken as decided before a mid-stream log began (`before`, read at once: it is
    cheap) and the RM's logged decisions (`logged()`, read when first asked for, then kept)
    of one start's tables."""

    def __init__(self, tables: Mapping[str, pl.DataFrame]) -> None:
        self._tables = tables
        self.before = removals_before_the_log(tables)
        self._logged: Logged | None = None

    def logged(self) -> Logged:
        """The RM's logged decisions (replay.model.logged), read the first time they are asked for."""
        if self._logged is None:
            self._logged = logged_decisions(self._tables, self.before)
        return self._logged


def _alike(held: Bootstrap, boot: Bootstrap) -> bool:
    """Whether inputs assembled on `held` are `boot`'s once their configuration is `boot`'s."""
    return (replace(held.config, fragmentation_threshold=boot.config.fragmentation_threshold) == boot.config
            and held.classes == boot.classes and held.nodepools == boot.nodepools)


def _handed(inputs: list[CycleInput], config: Config, cycles: range | None) -> Iterator[CycleInput]:
    """`inputs` (those in `cycles`) on `config`, each let go as it is handed over (the list is emptied)."""
    inputs.reverse()
    while inputs:
        inp = inputs.pop()
        if cycles is None or inp.cycle in cycles:
            yield replace(inp, config=config)
