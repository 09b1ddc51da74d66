"""The fleet's progress on the client: a rich bar per stream in flight and one for the fleet.

Workers send events (replay.apps.fleet.task, topic TOPIC): `start` (the stream's expected
bytes), then the fields of each `replay.progress.Progress` the parse and the audit report. The
client turns them into bars; a stream's bar goes when its result is in.
"""

from __future__ import annotations

import dataclasses
import threading
from types import TracebackType
from typing import Any

import rich.progress
from rich.console import Console
from rich.progress import BarColumn, TaskID, TaskProgressColumn, TextColumn, TimeElapsedColumn

from replay.progress import Progress

_FIELDS = frozenset(f.name for f in dataclasses.fields(Progress))


class FleetProgress:
    """Bars for the fleet and for each stream being worked on (use as a context manager)."""

    def __init__(self, console: Console, streams: int):
        self.bars = rich.progress.Progress(TextColumn("{task.description}"), BarColumn(), TaskProgressColumn(),
                                           TextColumn("{task.fields[detail]}"), TimeElapsedColumn(),
                                           console=console, transient=False)
        self.fleet = self.bars.add_task("fleet", total=streams, detail="")
        self.streams: dict[str, TaskID] = {}
        self.lock = threading.Lock()  # events arrive on the client's event-loop thread
        self.megabytes = 0.0

    def __enter__(self) -> FleetProgress:
        self.bars.__enter__()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.bars.__exit__(kind, exc, tb)

    def event(self, event: tuple[float, dict[str, Any]]) -> None:
        """One worker event (as `Client.subscribe_topic` hands it over)."""
        _when, fields = event
        msg = dict(fields)
        key = msg.pop("key")
        with self.lock:
            task = self.streams.get(key)
            if "start" in msg:
                if task is not None:  # the task runs again (its worker was lost)
                    self.bars.remove_task(task)
                self.streams[key] = self.bars.add_task(f"  {key}", total=max(msg["start"], 1), detail="parse")
            elif task is not None:
                # only the fields a Progress has: the installed `distributed` may add its own (`worker`)
                self.show(task, Progress(**{k: v for k, v in msg.items() if k in _FIELDS}))

    def show(self, task: TaskID, progress: Progress) -> None:
        """A stream's bar at this progress (a stage without a total keeps the bar where it is)."""
        if progress.total is not None:
            self.bars.update(task, completed=progress.done, total=max(progress.total, 1), detail=progress.text())
        else:
            self.bars.update(task, detail=progress.text())

    def finished(self, key: str, status: str, megabytes: float) -> None:
        """A stream's result is in: its bar goes, the fleet's advances."""
        with self.lock:
            task = self.streams.pop(key, None)
            if task is not None:
                self.bars.remove_task(task)
            self.megabytes += megabytes
            self.bars.update(self.fleet, advance=1, detail=f"{self.megabytes:,.0f} MB parsed, last: {key} {status}")
