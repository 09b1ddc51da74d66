"""The rmreplay TUI: walk an rm.log cycle by cycle (Textual). The parse and the audit run in
workers (the browser opens once the parse is in; rmref's columns fill in after the audit); each
widget fills itself from `tui.data.Browse` (tui.widgets); keys come from one registry (tui.actions)."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from typing import Any

import polars as pl
from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input

from replay import InputError
from replay.model.damage import damaged_cycles
from tui.actions import APP, bindings, palette
from tui.data import Browse, build
from tui.load import Loaded, settle_heap
from tui.opening import Opening
from tui.widgets.filter import FilterBox
from tui.widgets.screens import ErrorScreen, HelpScreen, HistoryScreen, LoadingScreen
from tui.widgets.status import CycleHeader, StatusLine
from tui.widgets.tables import JobsTable, Timeline
from tui.widgets.tabs import CycleTabs


class RmReplayApp(App[None]):
    """Browse a DUCC Resource Manager log cycle by cycle."""

    CSS_PATH = "rmreplay.tcss"
    TITLE = "rmreplay"
    BINDINGS = bindings(APP)

    def __init__(self, paths: list[str] | None = None, loaded: Loaded | None = None, use_cache: bool = True,
                 explain: bool = True, config: str | None = None, rm_release: str | None = None) -> None:
        # what is loaded by now (the modules, mostly) lives as long as the app: out of the collector's
        # sight, the collections while the first screen is built do not walk it (given back on unmount)
        gc.freeze()
        super().__init__()
        self.paths, self.loaded, self.use_cache, self.explain = list(paths or []), loaded, use_cache, explain
        self.rm_release = rm_release  # --rm-release: the DUCC release to replay as (replay.model.release)
        self.config = config  # the DUCC resources folder for a log without its bootstrap (--config)
        self.browse: Browse | None = None
        self.cycle, self.filter_text = 0, ""
        self.ready = False  # the first cycle is on screen
        self.error: str | None = None
        # the input opens from now on, while Textual starts (LoadingScreen shows how far it got)
        self.opening = Opening(self.paths, use_cache, config, rm_release) if loaded is None else None

    @property
    def status(self) -> StatusLine:
        """The status line."""
        return self.query_one(StatusLine)

    @property
    def audit_done(self) -> bool:
        """The audit has finished (or failed)."""
        return self.ready and self.status.audit_done

    def compose(self) -> ComposeResult:
        yield CycleHeader(" rmreplay", id="header")
        with Horizontal(id="body"):
            yield Timeline(id="timeline")
            yield CycleTabs(id="tabs")
        yield FilterBox(id="filter")
        yield StatusLine(id="status")
        yield Footer()

    def on_unmount(self) -> None:
        """Give the frozen heap back to the collector (tests run many apps in one process)."""
        gc.unfreeze()

    def on_mount(self) -> None:
        """Open the input given, or load it (LoadingScreen)."""
        if self.loaded is not None:
            self._opened(self.loaded)
        else:
            assert self.opening is not None
            self.push_screen(LoadingScreen(self.opening), self._loaded)

    def _loaded(self, result: tuple[Loaded, Browse] | str | None) -> None:
        if isinstance(result, tuple):
            self._opened(*result)
        else:
            self.show_error(result or "nothing loaded")

    def show_error(self, reason: str) -> None:
        """Replace everything by the error screen."""
        self.error = reason
        self.push_screen(ErrorScreen(reason))

    def _opened(self, loaded: Loaded, browse: Browse | None = None) -> None:
        browse = browse or build(loaded.name, loaded.tables, loaded.lines, loaded.nodes())  # (given loaded, not paths)
        self.browse, self.loaded = browse.with_audit(loaded.audit) if loaded.audit is not None else browse, loaded
        self.query_one(Timeline).fill(self.browse)
        self.show_cycle(browse.cycle_list[0])
        self.ready = True
        self.query_one("#jobs-table").focus()
        if loaded.note:
            self.notify(loaded.note, title="left out of the log folder", timeout=10)
        if loaded.audit is not None:
            self._show_audit(loaded.audit)
        else:
            self.status.audit(loaded, browse.boot)
        self.call_after_refresh(self._drawn)

    def _drawn(self) -> None:
        """The first screen is drawn: the heap settled, the whole views (tui.data.Deferred) built."""
        settle_heap()
        if self.browse is not None:
            self.browse.go_on()

    @on(StatusLine.Audited)
    def _audited(self, event: StatusLine.Audited) -> None:
        self._show_audit(event.frames)
        settle_heap()

    def _show_audit(self, frames: dict[str, pl.DataFrame]) -> None:
        assert self.browse is not None
        if not self.browse.audited:
            self.browse = self.browse.with_audit(frames)
            self.query_one(Timeline).fill(self.browse)
            self.show_cycle(self.cycle)
        boot = self.browse.boot
        self.status.audited(frames, self.browse.total, damaged_cycles(self.browse.tables),
                            boot.release if boot else None)

    def show_cycle(self, cycle: int) -> None:
        """Show one cycle: header, timeline cursor, and the tab on screen (the others when opened)."""
        b = self.browse
        i = b.index(cycle) if b is not None else None
        if b is None or i is None:
            return
        self.cycle = cycle
        self.query_one(CycleHeader).show(b, cycle)
        self.query_one(Timeline).move_cursor(i)
        self.query_one(CycleTabs).show(b, cycle, self.filter_text)

    @on(Timeline.Highlighted, "#timeline")
    def _timeline_moved(self, event: Timeline.Highlighted) -> None:
        # only the user's moves send Highlighted; one that is not where the cursor is now was overtaken
        b, row = self.browse, event.cursor_row
        if b is not None and row == event.grid.cursor_row and 0 <= row < b.total and b.cycle_list[row] != self.cycle:
            self.show_cycle(b.cycle_list[row])

    @on(JobsTable.Selected, "#jobs-table")
    def _job_selected(self, event: JobsTable.Selected) -> None:
        job = event.grid.key_at(event.cursor_row)  # type: ignore[attr-defined]
        if job is not None:
            self.open_job(int(job))

    def open_job(self, job_id: int) -> None:
        """The job's history screen."""
        if self.browse is not None:
            self.push_screen(HistoryScreen(self.browse, job_id, self.cycle, explain=self.explain))

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self.status.show_filter(self.filter_text)
        self.show_cycle(self.cycle)

    async def on_event(self, event: events.Event) -> None:
        """While `g` is asking for a cycle, keys on the main screen edit the answer (tui.widgets.status)."""
        if (isinstance(event, events.Key) and self.ready and self.status.goto is not None
                and not event.is_forwarded and self.screen is self.screen_stack[0]):
            answer = self.status.type_key(event)
            if answer and self.browse is not None:
                try:
                    self.show_cycle(self.browse.cycle_for(answer, self.cycle))
                except InputError as exc:
                    self.notify(str(exc), severity="warning", timeout=4)
            return
        await super().on_event(event)

    def action_go(self, where: str) -> None:
        """Move to the next or previous cycle, or cycle with a divergence (tui.data.Browse.move)."""
        if self.browse is not None:
            cycle, why = self.browse.move(where, self.cycle)
            if cycle is None:
                self.notify(why, timeout=3)
            elif cycle != self.cycle:
                self.show_cycle(cycle)

    def action_goto(self) -> None:
        """Ask for a cycle number, epoch or time in the status line."""
        if self.browse is not None:
            self.status.ask()

    def action_filter(self) -> None:
        """Show the filter box."""
        self.query_one(FilterBox).open()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter."""
        if self.query_one(FilterBox).close():
            self.filter_text = ""
            self.show_cycle(self.cycle)
            self.query_one(CycleTabs).widget().focus()

    def action_help(self) -> None:
        """The key table."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_tab(self, tab: str) -> None:
        """Switch tab."""
        self.query_one(CycleTabs).active = tab
        self.query_one(CycleTabs).widget().focus()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The command palette: rmreplay's actions (tui.actions) and the jobs of this cycle."""
        yield from super().get_system_commands(screen)
        if self.browse is not None:
            yield from palette(self, self.browse.jobs.at(self.cycle).select("job_id", "user", "class").iter_rows(),
                               self.open_job)
