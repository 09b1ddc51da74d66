"""The fleet's progress on the client: a rich bar per stream in flight and one for the fleet.

Workers send events (replay.apps.fleet.task, topic TOPIC): `start` (the stream's expected
bytes), `parse` (bytes done), `audit` (cycles done, first with the total), `end`. The client
turns them into bars; a stream's bar goes when its result is in.
"""

from __future__ import annotations

import threading

from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn


class FleetProgress:
    """Bars for the fleet and for each stream being worked on (use as a context manager)."""

    def __init__(self, console: Console, streams: int):
        self.bars = Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                             TextColumn("{task.fields[detail]}"), TimeElapsedColumn(), console=console,
                             transient=False)
        self.fleet = self.bars.add_task("fleet", total=streams, detail="")
        self.streams: dict[str, TaskID] = {}
        self.lock = threading.Lock()  # events arrive on the client's event-loop thread
        self.megabytes = 0.0

    def __enter__(self) -> FleetProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bars.__exit__(*exc)

    def event(self, event: tuple[float, dict]) -> None:
        """One worker event (as `Client.subscribe_topic` hands it over)."""
        _when, msg = event
        key, phase, done, total = msg["key"], msg["phase"], msg["done"], msg.get("total")
        with self.lock:
            task = self.streams.get(key)
            if phase == "start":
                if task is not None:  # the task runs again (its worker was lost)
                    self.bars.remove_task(task)
                self.streams[key] = self.bars.add_task(f"  {key}", total=max(total or 0, 1), detail="parse")
            elif task is not None and phase == "parse":
                self.bars.update(task, completed=done, detail=f"parse {done / 1e6:,.0f} MB")
            elif task is not None and phase == "audit":
                if total is not None:
                    self.bars.reset(task, total=max(total, 1), detail="audit")
                else:
                    self.bars.update(task, completed=done, detail=f"audit cycle {done:,}")

    def finished(self, key: str, status: str, megabytes: float) -> None:
        """A stream's result is in: its bar goes, the fleet's advances."""
        with self.lock:
            task = self.streams.pop(key, None)
            if task is not None:
                self.bars.remove_task(task)
            self.megabytes += megabytes
            self.bars.update(self.fleet, advance=1, detail=f"{self.megabytes:,.0f} MB parsed, last: {key} {status}")
