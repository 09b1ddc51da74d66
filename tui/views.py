"""A view: a frame sorted by cycle and sliced per cycle, and the views whose whole frame is computed on
a thread once the first screen is up (only the cycles that screen shows are known at once)."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future

import numpy as np
import polars as pl


class Sliced:
    """A frame sorted by cycle, sliced per cycle by binary search (no copy, no filter)."""

    def __init__(self, frame: pl.DataFrame):
        self._frame = frame.sort("cycle", maintain_order=True) if frame.height else frame
        self._keys = self._frame["cycle"].cast(pl.Int64).to_numpy() if frame.height else np.zeros(0, np.int64)

    @property
    def frame(self) -> pl.DataFrame:
        """Every row, sorted by cycle."""
        return self._frame

    def at(self, cycle: int) -> pl.DataFrame:
        """The rows of one cycle."""
        lo = int(np.searchsorted(self._keys, cycle, "left"))
        hi = int(np.searchsorted(self._keys, cycle, "right"))
        return self._frame.slice(lo, hi - lo)

    def then(self, change: Callable[[pl.DataFrame], pl.DataFrame]) -> Sliced:
        """The view with its frame changed."""
        return Sliced(change(self.frame))


class Later:
    """The thread that computes one log's views' whole frames, one after the other, once its first
    screen is up (`go_on`) or something waits for them: before, they would take the cores the first
    screen needs. A daemon, gone when it has nothing left to do: quitting does not wait for views
    nobody will see, and another log's views never wait behind these."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.queue: deque[tuple[Future[Sliced], Callable[[], Sliced]]] = deque()
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def go_on(self) -> None:
        """Let the thread start (the first screen is shown, or a view is waited for)."""
        self.gate.set()

    def submit(self, work: Callable[[], Sliced]) -> Future[Sliced]:
        """The future of `work()`, run on the thread in turn."""
        future: Future[Sliced] = Future()
        with self.lock:
            self.queue.append((future, work))
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="views", daemon=True)
                self.thread.start()
        return future

    def _run(self) -> None:
        self.gate.wait()
        while True:
            with self.lock:
                if not self.queue:
                    self.thread = None
                    return
                future, work = self.queue.popleft()
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as exc:  # noqa: BLE001 - handed to whoever waits for the view
                    future.set_exception(exc)
            del future, work  # the view a change was made from is not kept alive by the thread


class Deferred(Sliced):
    """A view of which the rows of a few cycles (those the first screen shows) are known at once,
    and the whole frame is computed on its log's `Later` thread; asking for any other cycle, or for
    the whole frame, before it is done waits for it."""

    def __init__(self, now: pl.DataFrame, cycles: frozenset[int], later: Future[Sliced], thread: Later):
        self._now, self._cycles, self._later, self._thread = Sliced(now), cycles, later, thread

    def _whole(self) -> Sliced:
        self._thread.go_on()  # what waits for a view lets the thread start
        return self._later.result()

    @property
    def frame(self) -> pl.DataFrame:
        """Every row, sorted by cycle (waits for the thread)."""
        return self._whole().frame

    def at(self, cycle: int) -> pl.DataFrame:
        """The rows of one cycle."""
        if cycle in self._cycles and not self._later.done():
            return self._now.at(cycle)
        return self._whole().at(cycle)

    def then(self, change: Callable[[pl.DataFrame], pl.DataFrame]) -> Sliced:
        """The view with its frame changed: the known rows at once, the whole after the frame's own."""
        now = change(self._now.frame) if self._cycles else self._now.frame  # (no rows known: never shown)
        return Deferred(now, self._cycles, self._thread.submit(lambda: self._later.result().then(change)),
                        self._thread)


def deferred(now: pl.DataFrame, cycles: frozenset[int], whole: Callable[[], pl.DataFrame], thread: Later) -> Deferred:
    """A view known at once for `cycles` (`now`), its whole frame `whole()` computed on `thread`."""
    return Deferred(now, cycles, thread.submit(lambda: Sliced(whole())), thread)
