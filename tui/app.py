"""The rmreplay TUI: walk an rm.log cycle by cycle (Textual). The parse and the audit run in
workers (the browser opens once the parse is in; rmref's columns fill in after the audit); each
widget fills itself from `tui.data.Browse` (tui.widgets); keys come from one registry (tui.actions).

A parse directory whose first screen was kept (tui.summary) shows it at once, drawn from the
summary with the standard library and Textual alone; polars loads and the views are built on a
thread after it is drawn, and take its place, alike, once they are in."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual import events, on
from textual.app import App, ComposeResult, SystemCommand
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Footer, Input

from replay import InputError
from tui import summary
from tui.actions import APP, bindings, palette
from tui.widgets.filter import FilterBox
from tui.widgets.screens import ErrorScreen, HelpScreen, HistoryScreen, LoadingScreen
from tui.widgets.status import CycleHeader, StatusLine, stamp
from tui.widgets.tables import JOB_CELL_COLUMNS, JobsTable, Timeline
from tui.widgets.tabs import CycleTabs

if TYPE_CHECKING:  # (polars loads after a first screen drawn from its summary)
    import polars as pl

    from tui.data import Browse
    from tui.load import Loaded
    from tui.opening import Opening


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
        self.shown: str | None = None  # what the first screen was drawn from: "summary" or "views"
        self.opening: Opening | None = None
        self.summary_at = summary.summary_path(self.paths, use_cache, config, rm_release) if loaded is None else None
        self.kept = summary.read(self.summary_at)  # the first screen kept (tui.summary), if any
        if loaded is None and self.kept is None:
            # the input opens from now on, while Textual starts (LoadingScreen shows how far it got)
            self.opening = self._open()

    def _open(self) -> Opening:
        from tui.opening import Opening

        return Opening(self.paths, self.use_cache, self.config, self.rm_release)

    @property
    def status(self) -> StatusLine:
        """The status line."""
        return self.query_one(StatusLine)

    @property
    def audit_done(self) -> bool:
        """The audit has finished (or failed)."""
        return self.ready and self.status.audit_done

    @property
    def first_audited(self) -> bool:
        """The first screen is on, the audit's columns filled (from the kept summary, or the views)."""
        return self.shown == "summary" or (self.ready and self.browse is not None and self.browse.audited)

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
        elif self.kept is not None:
            self._show_kept(self.kept)
        else:
            assert self.opening is not None
            self.push_screen(LoadingScreen(self.opening), self._loaded)

    def _show_kept(self, kept: summary.FirstScreen) -> None:
        """The first screen as kept (tui.summary); the input opens once it is drawn."""
        self.cycle = kept.cycle
        self.query_one(CycleHeader).show_cycle(kept.name, kept.cycle, kept.total, kept.epoch, kept.when)
        timeline = self.query_one(Timeline)
        timeline.show_lines(kept.timeline)
        timeline.move_cursor(0)
        jobs = self.query_one("#jobs-table", JobsTable)
        jobs.show_rows(kept.job_rows(), audited=True)
        jobs.focus()
        self.status.say(kept.status)
        self.shown = "summary"
        self.call_after_refresh(self._open_views)

    def _open_views(self) -> None:
        """The views of a first screen drawn from its summary: polars loads and the input opens, off
        the screen's thread; they take the screen over once built. A daemon: quitting before they
        are in does not wait for them."""
        threading.Thread(target=self._views_opened, name="views-open", daemon=True).start()

    def _views_opened(self) -> None:
        self.opening = self._open()
        result = self.opening.result()
        try:
            self.call_from_thread(self._loaded, result)
        except RuntimeError:  # the app is gone meanwhile
            pass

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
        from tui.data import build

        browse = browse or build(loaded.name, loaded.tables, loaded.lines, loaded.nodes())  # (given loaded, not paths)
        self.browse, self.loaded = browse.with_audit(loaded.audit) if loaded.audit is not None else browse, loaded
        self.query_one(Timeline).fill(self.browse)
        self.show_cycle(browse.cycle_list[0])
        if self.shown is None:  # (after a kept first screen the focus stays where the user put it)
            self.query_one("#jobs-table").focus()
        self.ready, self.shown = True, self.shown or "views"
        if loaded.note:
            self.notify(loaded.note, title="left out of the log folder", timeout=10)
        if loaded.audit is not None:
            self._show_audit(loaded.audit)
        else:
            self.status.audit(loaded, browse.boot)
        self.call_after_refresh(self._drawn)

    def _drawn(self) -> None:
        """The first screen is drawn: the heap settled, the whole views (tui.data.Deferred) built."""
        from tui.load import settle_heap

        settle_heap()
        if self.browse is not None:
            self.browse.go_on()

    @on(StatusLine.Audited)
    def _audited(self, event: StatusLine.Audited) -> None:
        from tui.load import settle_heap

        self._show_audit(event.frames)
        settle_heap()

    def _show_audit(self, frames: dict[str, pl.DataFrame]) -> None:
        assert self.browse is not None and self.loaded is not None
        if not self.browse.audited:
            self.browse = self.browse.with_audit(frames)
            self.query_one(Timeline).fill(self.browse)
            self.show_cycle(self.cycle)
        boot = self.browse.boot
        self.status.audited(frames, self.browse.total, self.loaded.damage(),
                            boot.release if boot else None)
        if self.shown == "views" and self.summary_at is not None:
            self._keep_first_screen(self.summary_at)

    def _keep_first_screen(self, path: Path) -> None:
        """Keep what the first screen shows, the stored audit's columns filled (tui.summary): the
        values the widgets drew and the first cycle's rows of the jobs view (known at once: the
        first cycle's are computed before the whole view, tui.data.build), once it is on screen."""
        loaded, browse = self.loaded, self.browse
        if loaded is None or loaded.place is None or browse is None or not browse.cycle_list:
            return
        from replay.parsing.keys import audit_stored

        if not audit_stored(loaded.place.folder, loaded.place.key):
            return  # not stored (a full disk): a summary would name an audit no one can read
        first = browse.cycle_list[0]
        rows = browse.jobs.at(first).select(JOB_CELL_COLUMNS).rows()
        kept = summary.FirstScreen(browse.name, first, browse.total, browse.epoch(first), stamp(browse.ts(first)),
                                   list(self.query_one(Timeline).lines), list(JOB_CELL_COLUMNS),
                                   [list(r) for r in rows], self.status.message, loaded.place.key)
        self.call_after_refresh(summary.write, path, kept)

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
        else:
            self._not_yet()

    def _not_yet(self) -> None:
        """Say why a key does nothing on a first screen drawn from its summary (the views are not in yet)."""
        if self.shown == "summary":
            self.notify("the log's cycles are still opening: a moment", timeout=2)

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
        if self.browse is None:
            self._not_yet()
            return
        cycle, why = self.browse.move(where, self.cycle)
        if cycle is None:
            self.notify(why, timeout=3)
        elif cycle != self.cycle:
            self.show_cycle(cycle)

    def action_goto(self) -> None:
        """Ask for a cycle number, epoch or time in the status line."""
        if self.browse is not None:
            self.status.ask()
        else:
            self._not_yet()

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
