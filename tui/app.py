"""The rmreplay TUI: walk an rm.log cycle by cycle (Textual).

Parsing and the audit run in worker threads; the browser opens as soon as the parse is in, and
the reference columns, divergence markers and the Diff tab fill in when the audit finishes.
Showing a cycle slices the precomputed frames of `tui.data.Browse` and refills only the tab on
screen; the other tabs are refilled when they are opened. The tables (`tui.grid.Grid`) and the Log
view draw only their visible lines, and nothing on a cycle switch re-lays the screen out.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable

import polars as pl
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import events, on, work
from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.geometry import Region, Size
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widget import Widget
from textual.screen import ModalScreen, Screen
from textual.widgets import (DataTable, Footer, Input, Label, ProgressBar, Sparkline, Static, TabbedContent,
                             TabPane)

from replay import InputError
from tui.data import Browse, build, line_style, matches
from tui.grid import Grid
from tui.load import Loaded, load, run_audit, save_audit

# The key table: footer, `?` help and the README show the same words.
KEYS = [
    ("n / p", "next / previous cycle"),
    ("d / D", "next / previous cycle with a divergence (rmref and the log disagree)"),
    ("g", "go to a cycle number, an RM epoch (e118) or a time (HH:MM[:SS], YYYY-MM-DD HH:MM:SS), typed in the "
          "status line"),
    ("/", "filter rows: words match job, user, class or host; job:12 user:alice class:normal host:node1"),
    ("enter", "open the job under the cursor: its history and the explanation of this cycle"),
    ("escape", "back (close the job history or the help, cancel g, or clear the filter)"),
    ("1-5", "Jobs, Nodes, Defrag, Log, Diff tab"),
    ("ctrl+p", "command palette"),
    ("?", "this help"),
    ("q", "quit"),
]
MARKS = [("!", "bold red", "divergence"), ("N", "yellow", "needy jobs"), ("X", "magenta", "node death")]
TABS = ("jobs", "nodes", "defrag", "log", "diff")
# Fixed column widths: a row is laid out without measuring the others, and only visible rows are drawn.
COLUMNS = {
    # one cell per row: scrolling the timeline re-renders one cell a line, not six
    "timeline": [(" cycle time     jobs  +   -  !NX", 34)],
    "jobs-table": [("job", 6), ("type", 11), ("user", 10), ("class", 10), ("ord", 3), ("cap", 5), ("ref", 5),
                   ("counted", 7), ("ref", 5), ("held", 4), ("+add", 4), ("-rm", 4), ("state", 8), ("div", 3),
                   ("reason", 80)],
    "nodes-table": [("nodepool", 12), ("host", 18), ("ord", 3), ("used / free", 24), ("used", 4), ("free", 4),
                    ("jobs", 24), ("status", 24)],
    "defrag-table": [("what", 17), ("job", 6), ("user", 10), ("class", 10), ("host", 18), ("donor", 6),
                     ("counted", 7), ("needed", 6), ("detail", 60)],
    "diff-table": [("job", 6), ("decision", 10), ("logged", 24), ("rmref", 24), ("explanation", 200)],
}
FILTER_COLUMNS = {
    "jobs": {"job": "job_id", "user": "user", "class": "class", "host": "hosts"},
    "nodes": {"host": "host", "job": "jobs", "class": "nodepool"},
    "defrag": {"job": "job_id", "user": "user", "class": "class", "host": "host"},
    "diff": {"job": "job_id"},
}


def _n(v: object) -> str:
    return "-" if v is None else str(v)


def _ts(v) -> str:
    return v.strftime("%Y-%m-%d %H:%M:%S") if v is not None else "-"


def _epoch(epoch: int | None) -> str:
    """' (epoch 118)' after a cycle number: the RM's own name for the cycle, the same in any copy of the log."""
    return f" (epoch {epoch})" if epoch is not None else ""


def _settle_heap() -> None:
    """Move the loaded log's objects out of the garbage collector's sight.

    A big log leaves millions of long-lived objects; every full (generation 2) collection walked
    them all, 30-50 ms in the middle of a key press, several times per hundred cycle switches.
    Frozen, they are no longer walked (they live as long as the app anyway)."""
    gc.collect()
    gc.freeze()


class LogView(ScrollView, can_focus=True):
    """The raw lines of one cycle, rendered line by line (only the visible lines are drawn)."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.lines: list[tuple[str, str]] = []  # (text, style)
        self._strips: dict[int, Strip] = {}  # line -> its rendering, until the lines change
        self._base: Style | None = None

    def set_lines(self, lines: list[tuple[str, str]]) -> None:
        """Show these lines from the top."""
        self.lines = lines
        self._strips.clear()
        width = max((len(t) for t, _ in lines), default=0)
        size = Size(width, len(lines))
        if size != self.virtual_size:
            # the virtual size is a layout reactive; the view's own size does not change, so skip the re-layout
            self.set_reactive(Widget.virtual_size, size)
            self._scroll_update(size)
        self.scroll_to(0, 0, animate=False, immediate=True)
        self.refresh()

    def text(self) -> str:
        """Every line, as plain text."""
        return "\n".join(t for t, _ in self.lines)

    def render_lines(self, crop: Region) -> list[Strip]:
        """Look the widget's style up once for all the lines of this paint."""
        self._base = self.rich_style
        try:
            return super().render_lines(crop)
        finally:
            self._base = None

    def render_line(self, y: int) -> Strip:
        """One visible line, cropped to the view."""
        scroll_x, scroll_y = self.scroll_offset
        base = self._base or self.rich_style
        i = scroll_y + y
        if i >= len(self.lines):
            return Strip.blank(self.size.width, base)
        strip = self._strips.get(i)
        if strip is None:
            text, style = self.lines[i]
            strip = self._strips[i] = Strip(list(Text(text, style=style, no_wrap=True).render(self.app.console)))
        strip = strip.crop(scroll_x, scroll_x + self.size.width)
        return strip.extend_cell_length(self.size.width).apply_style(base)


class JobsTable(Grid):
    """The Jobs tab's table: enter opens the job's history."""

    BINDINGS = [Binding("enter", "select_cursor", "Open job", show=True)]


class LoadingScreen(Screen):
    """Shown while the input is parsed: what is happening and how far."""

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Label("rmreplay", id="loading-title")
            yield Label("opening", id="loading-message")
            yield ProgressBar(total=100, show_eta=False, id="loading-progress")

    def show(self, fraction: float, message: str) -> None:
        """Advance the bar."""
        self.query_one("#loading-progress", ProgressBar).update(progress=round(fraction * 100))
        self.query_one("#loading-message", Label).update(message)


class ErrorScreen(Screen):
    """The input cannot be browsed: say why (no traceback)."""

    BINDINGS = [Binding("q", "app.quit", "Quit"), Binding("escape", "app.quit", "Quit", show=False)]

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def compose(self) -> ComposeResult:
        with Vertical(id="error-box"):
            yield Label("rmreplay cannot open this input", id="error-title")
            yield Static(Text(self.reason), id="error-reason")
            yield Label("press q to quit", id="error-hint")
        yield Footer()


class HelpScreen(ModalScreen):
    """The key table and the timeline's markers."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        keys = Table(title="rmreplay keys", show_header=False, box=None, pad_edge=False)
        keys.add_column(style="bold cyan")
        keys.add_column()
        for k, what in KEYS:
            keys.add_row(k, what)
        keys.add_row("", "")
        for mark, style, what in MARKS:
            keys.add_row(Text(mark, style=style), f"timeline: cycle with {what}")
        with Vertical(id="help-box"):
            yield Static(keys)
            yield Label("escape closes", id="help-hint")


class HistoryScreen(Screen):
    """One job over the whole log: shares held (sparkline), caps, counts, and this cycle's explanation."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back"), Binding("q", "app.quit", "Quit"),
                Binding("question_mark", "app.help", "Help")]

    def __init__(self, browse: Browse, job_id: int, cycle: int, explain: bool = True) -> None:
        super().__init__()
        self.browse, self.job_id, self.cycle, self.explain = browse, job_id, cycle, explain
        self.explained = not explain  # the explanation is on screen

    def compose(self) -> ComposeResult:
        rows = self.browse.history(self.job_id)
        first = rows.row(0, named=True) if rows.height else {}
        last = rows.row(-1, named=True) if rows.height else {}
        span = f"cycles {first.get('cycle')}..{last.get('cycle')}" if rows.height else "never published"
        yield Static(Text(f" Job {self.job_id}  {first.get('type') or ''}  user {first.get('user') or '-'}  "
                          f"class {first.get('class') or '-'}  order {_n(first.get('order'))}   {span}   "
                          f"Cycle {self.cycle}/{self.browse.total}{_epoch(self.browse.epoch(self.cycle))}"),
                     id="header")
        held = rows["held"].to_list() if rows.height else [0]
        yield Label(f"shares held per cycle (max {max(held)})", classes="section")
        yield Sparkline(held, id="history-spark")
        with Horizontal(id="history-body"):
            table = DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            yield table
            with VerticalScroll(id="explain-scroll"):
                yield Static("explaining…" if self.explain else "", id="explain-text")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the table of the cycles where the job's numbers changed."""
        table = self.query_one("#history-table", DataTable)
        table.add_columns("cycle", "held", "+", "-", "cap", "ref cap", "counted", "ref", "state", "div")
        rows = self.browse.history(self.job_id)
        keys = ["held", "added", "removed", "cap", "counted", "ref_cap", "ref_counted", "state", "divergences"]
        changed = rows.filter(pl.any_horizontal(pl.col(k).ne_missing(pl.col(k).shift(1)) for k in keys)
                              | (pl.col("cycle") == self.cycle))
        for r in changed.iter_rows(named=True):
            style = "bold red" if r["divergences"] else ("reverse" if r["cycle"] == self.cycle else "")
            table.add_row(*[Text(v, style=style) for v in (
                str(r["cycle"]), str(r["held"]), str(r["added"]), str(r["removed"]), _n(r["cap"]), _n(r["ref_cap"]),
                _n(r["counted"]), _n(r["ref_counted"]), r["state"], str(r["divergences"] or ""))], key=str(r["cycle"]))
        if str(self.cycle) in table.rows:
            table.move_cursor(row=table.get_row_index(str(self.cycle)))
        table.focus()
        if self.explain:
            self._explain()

    @work(thread=True, exclusive=True, group="explain")
    def _explain(self) -> None:
        from replay.apps.explain import explain_job, render

        try:
            text = render(explain_job(self.browse.tables, self.job_id, self.cycle))
        except InputError as exc:
            text = f"no explanation: {exc}"
        except Exception as exc:  # noqa: BLE001 - a story that cannot be told must not end the session
            text = f"no explanation: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._explained, text)

    def _explained(self, text: str) -> None:
        self.query_one("#explain-text", Static).update(Text(text))
        self.explained = True


class RmReplayApp(App):
    """Browse a DUCC Resource Manager log cycle by cycle."""

    CSS_PATH = "rmreplay.tcss"
    TITLE = "rmreplay"
    BINDINGS = [
        Binding("n", "next_cycle", "Next"),
        Binding("p", "prev_cycle", "Prev"),
        Binding("d", "next_divergence", "Next div"),
        Binding("D", "prev_divergence", "Prev div"),
        Binding("g", "goto", "Go to"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Back", show=True),
        Binding("question_mark", "help", "Help"),
        Binding("q", "quit", "Quit"),
        *[Binding(str(i + 1), f"tab('{t}')", t.title(), show=False) for i, t in enumerate(TABS)],
    ]

    def __init__(self, paths: list[str] | None = None, loaded: Loaded | None = None, use_cache: bool = True,
                 explain: bool = True, config: str | None = None) -> None:
        super().__init__()
        self.paths = list(paths or [])
        self.loaded = loaded
        self.use_cache = use_cache
        self.config = config  # the DUCC resources folder for a log without its bootstrap (--config)
        self.explain = explain
        self.browse: Browse | None = None
        self.cycle = 0
        self.filter_text = ""
        self.ready = False  # the first cycle is on screen
        self.audit_done = False
        self.error: str | None = None
        self._stale: set[str] = set()
        self._row_keys: dict[str, list[str]] = {}
        self._loading: LoadingScreen | None = None
        self._goto_text: str | None = None  # what has been typed after `g`, while it is being typed

    # ------------------------------------------------------------------ layout
    def compose(self) -> ComposeResult:
        yield Static(" rmreplay", id="header")
        with Horizontal(id="body"):
            yield Grid(COLUMNS["timeline"], id="timeline")
            with TabbedContent(id="tabs", initial="jobs"):
                with TabPane("Jobs", id="jobs"):
                    yield JobsTable(COLUMNS["jobs-table"], id="jobs-table")
                with TabPane("Nodes", id="nodes"):
                    yield Grid(COLUMNS["nodes-table"], id="nodes-table")
                with TabPane("Defrag", id="defrag"):
                    yield Grid(COLUMNS["defrag-table"], id="defrag-table")
                with TabPane("Log", id="log"):
                    yield LogView(id="log-view")
                with TabPane("Diff", id="diff"):
                    yield Grid(COLUMNS["diff-table"], id="diff-table")
        yield Input(id="filter", placeholder="filter: words match job, user, class or host (user:alice host:n1)")
        with Horizontal(id="status"):
            yield Static("", id="status-text")
            yield ProgressBar(total=100, show_eta=False, id="audit-progress")
        yield Footer()

    def on_unmount(self) -> None:
        """Give the frozen heap back to the collector (tests run many apps in one process)."""
        gc.unfreeze()

    def on_mount(self) -> None:
        """Start loading."""
        self.query_one("#filter", Input).display = False
        if self.loaded is not None:
            self._opened(self.loaded)
        else:
            self._loading = LoadingScreen()
            self.push_screen(self._loading)
            self._load()

    # ------------------------------------------------------------------ loading
    @work(thread=True, exclusive=True, group="load")
    def _load(self) -> None:
        def progress(fraction: float, message: str) -> None:
            if self._loading is not None:
                self.call_from_thread(self._loading.show, fraction, message)

        try:
            loaded = load(self.paths, progress=progress, use_cache=self.use_cache, config=self.config)
            progress(1.0, "rebuilding every cycle's machines")
            browse = build(loaded.name, loaded.tables, loaded.lines)  # here, off the screen's thread
        except InputError as exc:
            self.call_from_thread(self.show_error, str(exc))
            return
        except Exception as exc:  # noqa: BLE001 - any unreadable input ends on the error screen
            self.call_from_thread(self.show_error, f"{type(exc).__name__}: {exc}")
            return
        self.call_from_thread(self._opened, loaded, browse)

    def show_error(self, reason: str) -> None:
        """Replace everything by the error screen."""
        self.error = reason
        if self._loading is not None and self.screen is self._loading:
            self.pop_screen()
        self._loading = None
        self.push_screen(ErrorScreen(reason))

    def _opened(self, loaded: Loaded, browse: Browse | None = None) -> None:
        if browse is None:
            try:
                browse = build(loaded.name, loaded.tables, loaded.lines)
            except Exception as exc:  # noqa: BLE001
                self.show_error(f"{type(exc).__name__}: {exc}")
                return
        if loaded.audit is not None:
            browse = browse.with_audit(loaded.audit)
        self.browse = browse
        self.loaded = loaded
        if self._loading is not None:
            self.pop_screen()
            self._loading = None
        self._fill_timeline()
        self.show_cycle(browse.cycle_list[0])
        self.ready = True
        self.query_one("#jobs-table").focus()
        if loaded.note:
            self.notify(loaded.note, title="left out of the log folder", timeout=10)
        if loaded.audit is not None:
            self._audited(loaded.audit, cached=loaded.from_cache)
        else:
            self._set_status("auditing: rmref replays every cycle", progress=0)
            self._audit()
        _settle_heap()

    @work(thread=True, exclusive=True, group="audit")
    def _audit(self) -> None:
        assert self.loaded is not None
        try:
            frames = run_audit(self.loaded.tables, self.browse.boot if self.browse else None,
                               progress=lambda f, m: self.call_from_thread(
                self._set_status, m, round(f * 100)))
        except InputError as exc:
            self.call_from_thread(self._set_status, f"no audit: {exc}")
            self.audit_done = True
            return
        except Exception as exc:  # noqa: BLE001 - browsing the log still works without rmref
            self.call_from_thread(self._set_status, f"no audit: {type(exc).__name__}: {exc}")
            self.audit_done = True
            return
        save_audit(self.loaded.cache, frames)
        self.call_from_thread(self._audited, frames)

    def _audited(self, frames: dict[str, pl.DataFrame], cached: bool = False) -> None:
        assert self.browse is not None
        if not self.browse.audited:
            self.browse = self.browse.with_audit(frames)
            self._fill_timeline()
            self.show_cycle(self.cycle)
        n = frames["divergences"].height
        bad = frames["divergences"]["cycle"].n_unique()
        self._set_status(f"audit: {self.browse.total - bad:,} of {self.browse.total:,} cycles agree with rmref, "
                         f"{n:,} divergence{'s' if n != 1 else ''}" + ("" if n == 0 else " (d / D to visit)"))
        self.audit_done = True
        _settle_heap()

    def _set_status(self, message: str, progress: int | None = None) -> None:
        self._status = message
        self._paint_status()
        bar = self.query_one("#audit-progress", ProgressBar)
        bar.display = progress is not None
        if progress is not None:
            bar.update(progress=progress)

    def _paint_status(self) -> None:
        """The status line: the go-to prompt while `g` is asking, else the status and the filter."""
        if self._goto_text is not None:
            text = Text.assemble(("go to: ", "bold"), (self._goto_text, "reverse"), " ", (
                "cycle number, epoch (e118) or time (HH:MM[:SS], YYYY-MM-DD HH:MM:SS); enter goes, escape cancels",
                "dim"))
        else:
            text = Text("  ·  ".join([getattr(self, "_status", "")] + ([f"filter: {self.filter_text}"]
                                                                      if self.filter_text else [])))
        self.query_one("#status-text", Static).update(text, layout=False)

    # ------------------------------------------------------------------ showing a cycle
    def _fill_timeline(self) -> None:
        assert self.browse is not None
        rows = []
        for c, ts, jobs, exp, shr, needy, deaths, div in self.browse.timeline.select(
                "cycle", "ts", "jobs", "expanded", "shrunken", "needy", "deaths", "divergences").iter_rows():
            line = Text(f"{c:>6} {ts.strftime('%H:%M:%S') if ts else '-':8} {jobs:>4} {exp or '':>3} {shr or '':>3}  ")
            for on_, (mark, style, _what) in zip((div, needy, deaths), MARKS):
                line.append(mark if on_ else " ", style=style)
            rows.append((line,))
        self.query_one("#timeline", Grid).set_rows(rows)

    def show_cycle(self, cycle: int) -> None:
        """Show one cycle: header, timeline cursor, and the tab on screen (the others when opened)."""
        b = self.browse
        if b is None:
            return
        i = b.index(cycle)
        if i is None:
            return
        self.cycle = cycle
        self.query_one("#header", Static).update(Text.assemble(
            (" rmreplay ", "bold"), f" {b.name}   ", (f"Cycle {cycle}/{b.total}", "bold"), _epoch(b.epoch(cycle)),
            f"   {_ts(b.ts(cycle))}"),
            layout=False)
        self.query_one("#timeline", Grid).move_cursor(i)
        self._stale = set(TABS)
        self._refresh_tab(self.query_one("#tabs", TabbedContent).active or "jobs")

    def _refresh_tab(self, tab: str) -> None:
        if tab not in self._stale or self.browse is None:
            return
        self._stale.discard(tab)
        getattr(self, f"_fill_{tab}")()

    def _filtered(self, tab: str, frame: pl.DataFrame) -> pl.DataFrame:
        return matches(frame, self.filter_text, FILTER_COLUMNS[tab]) if self.filter_text else frame

    def _refill(self, table: Grid, rows: Iterable[tuple], keys: Iterable[str] | None = None) -> None:
        """Put a cycle's rows in a table (drawn when on screen); `keys` (the job or host of each row) are kept aside."""
        self._row_keys[table.id or ""] = list(keys) if keys is not None else []
        table.set_rows(list(rows))

    def row_key(self, table_id: str, row: int) -> str | None:
        """The job (or host) shown on a row of a tab's table."""
        keys = self._row_keys.get(table_id, [])
        return keys[row] if 0 <= row < len(keys) else None

    def _fill_jobs(self) -> None:
        assert self.browse is not None
        audited = self.browse.audited
        frame = self._filtered("jobs", self.browse.jobs.at(self.cycle))
        rows, keys = [], []
        for r in frame.iter_rows(named=True):
            div = r["divergences"]
            base = "bold red" if div else ""
            cap_bad = audited and r["ref_cap"] is not None and r["ref_cap"] != r["cap"]
            cnt_bad = audited and r["ref_counted"] is not None and r["ref_counted"] != (r["counted"] or 0)
            pending = "…" if not audited else "-"
            state_style = {"Expanded": "green", "Shrunken": "yellow", "Dormant": "dim", "Reserved": "cyan"}.get(
                r["state"], "")
            rows.append((
                Text(str(r["job_id"]), style=base), r["type"] or "-", r["user"] or "-", r["class"] or "-",
                _n(r["order"]), _n(r["cap"]),
                Text(_n(r["ref_cap"]) if r["ref_cap"] is not None else pending, style="bold red" if cap_bad else "dim"),
                _n(r["counted"]),
                Text(_n(r["ref_counted"]) if r["ref_counted"] is not None else pending,
                     style="bold red" if cnt_bad else "dim"),
                str(r["held"]), Text(f"+{r['added']}" if r["added"] else "", style="green"),
                Text(f"-{r['removed']}" if r["removed"] else "", style="yellow"), Text(r["state"], style=state_style),
                Text(str(div) if div else "", style=base), Text(r["reason"] or "", style="italic"),
            ))
            keys.append(str(r["job_id"]))
        self._refill(self.query_one("#jobs-table", Grid), rows, keys)

    def _fill_nodes(self) -> None:
        assert self.browse is not None
        frame = self._filtered("nodes", self.browse.nodes.at(self.cycle))
        width = 24
        top = max(frame["order"].max() or 1, 1) if frame.height else 1
        rows, keys = [], []
        for r in frame.iter_rows(named=True):
            order, used = r["order"] or 0, r["used"] or 0
            n_used = round(width * used / top)
            n_free = max(round(width * order / top) - n_used, 0)
            down = r["status"] != "online"
            bar = Text("█" * n_used, style="red" if down else "green") + Text("░" * n_free, style="grey50")
            status = r["status"] + (" blacklisted" if r["blacklisted"] else "")
            rows.append((r["nodepool"] or "-", Text(r["host"], style="bold red" if down else ""), str(order), bar,
                         str(used), str(r["free"]), r["jobs"],
                         Text(status, style="bold red" if down or r["blacklisted"] else "green")))
            keys.append(r["host"])
        if not rows and self.browse.nodes_note:
            rows = [("", Text(self.browse.nodes_note, style="italic"), "", "", "", "", "", "")]
        self._refill(self.query_one("#nodes-table", Grid), rows, keys)

    def _fill_defrag(self) -> None:
        assert self.browse is not None
        frame = self._filtered("defrag", self.browse.defrag.at(self.cycle))
        rows = []
        styles = {"needy": "bold yellow", "needy_detected": "yellow", "taken": "bold red", "rmref taken": "red",
                  "failed": "red", "satisfied": "green"}
        for r in frame.iter_rows(named=True):
            rows.append((Text(r["kind"], style=styles.get(r["kind"], "")), _n(r["job_id"]), r["user"] or "",
                         r["class"] or "", r["host"] or "", _n(r["donor_job"]) if r["donor_job"] is not None else "",
                         _n(r["counted"]) if r["counted"] is not None else "",
                         _n(r["needed"]) if r["needed"] is not None else "", r["detail"] or ""))
        self._refill(self.query_one("#defrag-table", Grid), rows)

    def _fill_diff(self) -> None:
        assert self.browse is not None
        frame = self._filtered("diff", self.browse.diff.at(self.cycle))
        rows = [(Text(_n(r["job_id"]), style="bold red"), r["decision"], r["logged"], r["reference"], r["explanation"])
                for r in frame.iter_rows(named=True)]
        if not rows and not self.browse.audited:
            rows = [("", "", "", "", Text("the audit is still running", style="italic"))]
        self._refill(self.query_one("#diff-table", Grid), rows)

    def _fill_log(self) -> None:
        assert self.browse is not None
        lines, total = self.browse.log_at(self.cycle)
        shown: list[tuple[str, str]] = []
        if self.browse.lines is None:
            shown.append(("raw lines are not available: the input was a parse output directory", "italic"))
        words = [w.lower() for w in self.filter_text.split() if ":" not in w]
        for line in lines:
            if words and not all(w in line.lower() for w in words):
                continue
            shown.append((line, line_style(line)))
        if total > len(lines):
            shown.append((f"… {total - len(lines):,} more lines in this cycle", "italic"))
        self.query_one("#log-view", LogView).set_lines(shown)

    # ------------------------------------------------------------------ events
    @on(TabbedContent.TabActivated)
    def _tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._refresh_tab(event.pane.id or "")

    @on(Grid.Highlighted, "#timeline")
    def _timeline_moved(self, event: Grid.Highlighted) -> None:
        # only the user's moves send Highlighted; one that is not where the cursor is now was overtaken
        if event.cursor_row != event.grid.cursor_row:
            return
        if self.browse is not None and 0 <= event.cursor_row < self.browse.total:
            cycle = self.browse.cycle_list[event.cursor_row]
            if cycle != self.cycle:
                self.show_cycle(cycle)

    @on(Grid.Selected, "#jobs-table")
    def _job_selected(self, event: Grid.Selected) -> None:
        job = self.row_key("jobs-table", event.cursor_row)
        if job is not None:
            self.open_job(int(job))

    def open_job(self, job_id: int) -> None:
        """The job's history screen."""
        if self.browse is not None:
            self.push_screen(HistoryScreen(self.browse, job_id, self.cycle, explain=self.explain))

    @on(Input.Changed, "#filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._paint_status()
        self.show_cycle(self.cycle)

    @on(Input.Submitted, "#filter")
    def _filter_done(self, event: Input.Submitted) -> None:
        self._focus_tab()

    def _focus_tab(self) -> None:
        tab = self.query_one("#tabs", TabbedContent).active
        target = {"jobs": "#jobs-table", "nodes": "#nodes-table", "defrag": "#defrag-table", "diff": "#diff-table",
                  "log": "#log-view"}.get(tab or "jobs", "#jobs-table")
        self.query_one(target).focus()

    # ------------------------------------------------------------------ actions
    def _step(self, delta: int) -> None:
        if self.browse is None:
            return
        i = self.browse.index(self.cycle) or 0
        j = min(max(i + delta, 0), self.browse.total - 1)
        if j != i:
            self.show_cycle(self.browse.cycle_list[j])

    def action_next_cycle(self) -> None:
        """Next cycle."""
        self._step(1)

    def action_prev_cycle(self) -> None:
        """Previous cycle."""
        self._step(-1)

    def _divergence(self, forward: bool) -> None:
        if self.browse is None:
            return
        if not self.browse.audited:
            self.notify("the audit is still running: divergences are not known yet", timeout=3)
            return
        target = self.browse.next_divergence(self.cycle, forward)
        if target is None:
            self.notify(f"no {'later' if forward else 'earlier'} cycle with a divergence", timeout=3)
            return
        self.show_cycle(target)

    def action_next_divergence(self) -> None:
        """Next cycle where rmref and the log disagree."""
        self._divergence(True)

    def action_prev_divergence(self) -> None:
        """Previous cycle where rmref and the log disagree."""
        self._divergence(False)

    def action_goto(self) -> None:
        """Ask for a cycle number or time."""
        if self.browse is not None:
            self._goto_text = ""
            self._paint_status()

    # `g` is typed into the status line rather than a dialog or an input box: opening and closing
    # either moves the focus, which makes Textual rebuild the footer and re-lay the screen out
    # (100-300 ms on a big log), while the status line is repainted in place.
    async def on_event(self, event: events.Event) -> None:
        """While `g` is asking for a cycle, keys on the main screen edit the answer."""
        if (self._goto_text is not None and isinstance(event, events.Key) and not event.is_forwarded
                and self.screen is self.screen_stack[0]):
            self._goto_key(event)
            return
        await super().on_event(event)

    def _goto_key(self, event: events.Key) -> None:
        text = self._goto_text or ""
        if event.key in ("enter", "escape"):
            self._goto_text = None
            self._paint_status()
            if event.key == "enter":
                self.goto(text)
            return
        if event.key == "backspace":
            text = text[:-1]
        elif event.is_printable and event.character:
            text += event.character
        self._goto_text = text
        self._paint_status()

    def goto(self, value: str | None) -> None:
        """Go to a cycle number or the last cycle begun at or before a time."""
        if not value or self.browse is None:
            return
        value = value.strip()
        if value.isdigit() or (value[:1] in "eE" and value[1:].isdigit()):
            try:
                cycle = self.browse.cycle_named(value)
            except InputError as exc:
                self.notify(str(exc), severity="warning", timeout=4)
                return
        else:
            found = self.browse.cycle_at_time(value, self.cycle)
            if found is None:
                self.notify(f"{value!r}: not a cycle number, an epoch (e118) or a time", severity="warning", timeout=3)
                return
            cycle = found
        self.show_cycle(cycle)

    def action_filter(self) -> None:
        """Show the filter box."""
        box = self.query_one("#filter", Input)
        box.display = True
        box.focus()

    def action_clear_filter(self) -> None:
        """Clear and hide the filter."""
        box = self.query_one("#filter", Input)
        if box.display or self.filter_text:
            box.value = ""
            box.display = False
            self.filter_text = ""
            self.show_cycle(self.cycle)
            self._focus_tab()

    def action_help(self) -> None:
        """The key table."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_tab(self, tab: str) -> None:
        """Switch tab."""
        self.query_one("#tabs", TabbedContent).active = tab
        self._focus_tab()

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """The command palette: rmreplay's actions, its tabs and the jobs of this cycle."""
        yield from super().get_system_commands(screen)
        if self.browse is None:
            return
        yield SystemCommand("Next cycle", "n", self.action_next_cycle)
        yield SystemCommand("Previous cycle", "p", self.action_prev_cycle)
        yield SystemCommand("Next divergence", "d: next cycle where rmref disagrees", self.action_next_divergence)
        yield SystemCommand("Previous divergence", "D", self.action_prev_divergence)
        yield SystemCommand("Go to cycle or time", "g", self.action_goto)
        yield SystemCommand("Filter rows", "/: job, user, class or host", self.action_filter)
        yield SystemCommand("Keys", "?", self.action_help)
        for t in TABS:
            yield SystemCommand(f"Show {t.title()} tab", f"the {t} of this cycle", lambda t=t: self.action_tab(t))
        for job, user, cls in self.browse.jobs.at(self.cycle).select("job_id", "user", "class").iter_rows():
            yield SystemCommand(f"Open job {job}", f"{user} / {cls}: history and explanation",
                                lambda job=job: self.open_job(job))

