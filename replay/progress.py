"""How far a long command has got: one record and one callback type for every command and the TUI.

parse, audit, whatif, simulate, anonymize and fleet call an `OnProgress` with `Progress` records;
the CLI draws them with one rich helper (`replay.cli.show.progress_display`), the TUI's loading screens
with a bar. Nothing parses a progress message back into numbers: the numbers are the record.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar


@dataclass(frozen=True)
class Progress:
    """One stage of a long command: `done` of `total` (None: not known ahead) `unit`s."""

    stage: str  # what is being done, as the user reads it: "parsing", "auditing", "hashing the input"
    done: int = 0
    total: int | None = None
    unit: str = ""  # what `done` counts: "bytes", "cycles", "lines" ("": a stage without a count)

    @property
    def fraction(self) -> float | None:
        """done / total, within 0..1 (None when the total is not known)."""
        if self.total is None:
            return None
        return min(max(self.done / max(self.total, 1), 0.0), 1.0)

    def text(self) -> str:
        """The stage and its count in words, e.g. "auditing: 1,200 of 5,000 cycles"."""
        if not self.unit:
            return self.stage
        if self.unit == "bytes":
            done = f"{self.done / 1e6:,.0f}"
            return f"{self.stage}: {done} of {self.total / 1e6:,.0f} MB" if self.total else f"{self.stage}: {done} MB"
        of = f" of {self.total:,}" if self.total is not None else ""
        return f"{self.stage}: {self.done:,}{of} {self.unit}"


OnProgress = Callable[[Progress], None]
T = TypeVar("T")


def quiet(_progress: Progress) -> None:
    """An `OnProgress` that shows nothing (the default of every long function)."""


def counted(items: Iterable[T], total: int, on_progress: OnProgress | None, stage: str, unit: str = "cycles",
            step: int = 50) -> Iterator[T]:
    """`items`, telling `on_progress` before the first, after every `step`-th and after the last
    (so `done` rises from 0 to `total`)."""
    say = on_progress or quiet
    say(Progress(stage, 0, total, unit))
    done = 0
    for item in items:
        yield item
        done += 1
        if done % step == 0 or done == total:
            say(Progress(stage, done, total, unit))
