"""Opening the TUI's input on a thread of its own, started as the app is made: the input is read
and the first screen's views built while Textual starts (the loading screen shows how far it got)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future

from replay import InputError
from replay.progress import Progress
from tui.data import Browse, build
from tui.load import Loaded, load

Opened = tuple[Loaded, Browse] | str  # the input and its views, or why it cannot be browsed


class Opening:
    """`load` then `build` (the first screen's views) on a daemon thread, from construction on;
    `result()` waits for them. The progress goes to whoever listens, the last one kept for a
    listener that comes late (the loading screen, once it is up)."""

    def __init__(self, paths: list[str], use_cache: bool, config: str | None, rm_release: str | None) -> None:
        self.paths, self.use_cache, self.config, self.rm_release = paths, use_cache, config, rm_release
        self.future: Future[Opened] = Future()
        self._lock = threading.Lock()
        self._listener: Callable[[Progress], None] | None = None
        self._last: Progress | None = None
        threading.Thread(target=self._run, name="opening", daemon=True).start()

    def listen(self, listener: Callable[[Progress], None]) -> None:
        """Send the progress to `listener` from now on (the last one at once, if any)."""
        with self._lock:  # (held while it is called: the listener sees the progress in its order)
            self._listener = listener
            if self._last is not None:
                listener(self._last)

    def result(self) -> Opened:
        """The input and its views, or why it cannot be browsed (waits for them)."""
        return self.future.result()

    def _progress(self, progress: Progress) -> None:
        with self._lock:
            self._last = progress
            if self._listener is not None:
                self._listener(progress)

    def _run(self) -> None:
        result: Opened
        try:
            loaded = load(self.paths, progress=self._progress, use_cache=self.use_cache, config=self.config,
                          rm_release=self.rm_release)
            self._progress(Progress("rebuilding every cycle's machines"))
            # what the first screen shows, the rest on the views' thread once it is drawn
            result = loaded, build(loaded.name, loaded.tables, loaded.lines, loaded.nodes(), loaded.boot, later=True)
        except InputError as exc:
            result = str(exc)
        except Exception as exc:  # noqa: BLE001 - any unreadable input ends on the error screen
            result = f"{type(exc).__name__}: {exc}"
        self.future.set_result(result)
