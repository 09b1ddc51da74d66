"""The TUI's screens besides the browser: loading, an input it cannot open, the help, a job's history."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Footer, Label, ProgressBar, Sparkline, Static

from replay import InputError
from replay.progress import Progress
from tui.actions import MARKS, help_rows
from tui.widgets.status import epoch_note

if TYPE_CHECKING:  # (polars loads after a first screen drawn from its summary: tui.summary)
    from tui.data import Browse
    from tui.opening import Opened, Opening  # noqa: F401 (Opened: in a string, the base class's argument)


def _n(v: object) -> str:
    return "-" if v is None else str(v)


class LoadingScreen(Screen["Opened"]):
    """Shows what is happening and how far while the input opens (`tui.opening`, on a thread of its
    own since the app was made); dismissed with (loaded, browse), or with the reason the input
    cannot be browsed."""

    def __init__(self, opening: Opening) -> None:
        super().__init__()
        self.opening = opening

    def compose(self) -> ComposeResult:
        with Vertical(id="loading-box"):
            yield Label("rmreplay", id="loading-title")
            yield Label("opening", id="loading-message")
            yield ProgressBar(total=None, show_eta=False, id="loading-progress")

    def on_mount(self) -> None:
        """Wait for the input."""
        self._wait()

    def show(self, progress: Progress) -> None:
        """Say the stage, and how far it has got (a stage without a total: an indeterminate bar)."""
        self.query_one("#loading-progress", ProgressBar).update(total=progress.total, progress=progress.done)
        self.query_one("#loading-message", Label).update(progress.text())

    @work(thread=True, exclusive=True, group="load")
    def _wait(self) -> None:
        self.opening.listen(lambda progress: self.app.call_from_thread(self.show, progress))
        result = self.opening.result()
        self.app.call_from_thread(self.dismiss, result)


class ErrorScreen(Screen[None]):
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


class HelpScreen(ModalScreen[None]):
    """The key table and the timeline's markers."""

    BINDINGS = [Binding("escape,question_mark,q", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        keys = Table(title="rmreplay keys", show_header=False, box=None, pad_edge=False)
        keys.add_column(style="bold cyan")
        keys.add_column()
        for k, what in help_rows():
            keys.add_row(k, what)
        keys.add_row("", "")
        for mark, style, what in MARKS:
            keys.add_row(Text(mark, style=style), f"timeline: cycle with {what}")
        with Vertical(id="help-box"):
            yield Static(keys)
            yield Label("escape closes", id="help-hint")


class HistoryScreen(Screen[None]):
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
                          f"class {first.get('class') or '-'}  order {first.get('order_shown') or '?'}   {span}   "
                          f"Cycle {self.cycle}/{self.browse.total}{epoch_note(self.browse.epoch(self.cycle))}"),
                     id="header")
        if first.get("order_note"):  # an order the log never prints: unknown, or assumed and said so
            yield Label(first["order_note"], id="order-note")
        held = rows["held"].to_list() if rows.height else [0]
        yield Label(f"shares held per cycle (max {max(held)})", classes="section")
        yield Sparkline(held, id="history-spark")
        with Horizontal(id="history-body"):
            table: DataTable[Text] = DataTable(id="history-table", cursor_type="row", zebra_stripes=True)
            yield table
            with VerticalScroll(id="explain-scroll"):
                yield Static("explaining…" if self.explain else "", id="explain-text")
        yield Footer()

    def on_mount(self) -> None:
        """Fill the table of the cycles where the job's numbers changed."""
        import polars as pl

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
        from replay.apps.explain import render
        from replay.apps.explain.scope import explain_stored

        try:
            # the stored audit re-enters the cycle from its checkpoint: no replay from the log's start
            loaded = getattr(self.app, "loaded", None)
            text = render(explain_stored(self.browse.tables, self.job_id, self.cycle,
                                         lambda: loaded.audited() if loaded is not None else None))
        except InputError as exc:
            text = f"no explanation: {exc}"
        except Exception as exc:  # noqa: BLE001 - a story that cannot be told must not end the session
            text = f"no explanation: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._explained, text)

    def _explained(self, text: str) -> None:
        self.query_one("#explain-text", Static).update(Text(text))
        self.explained = True
