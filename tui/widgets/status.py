"""The header (the cycle on screen) and the status line (the audit, the filter, the `g` prompt)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import ProgressBar, Static

from replay import InputError
from replay.progress import Progress

if TYPE_CHECKING:  # (polars loads after a first screen drawn from its summary: tui.summary)
    import polars as pl

    from replay.apps.audit import AuditResult
    from replay.model.bootstrap import Bootstrap
    from replay.model.damage import Damage
    from replay.model.release import ReleaseChoice
    from tui.data import Browse
    from tui.load import Loaded

GOTO_HINT = "cycle number, epoch (e118) or time (HH:MM[:SS], YYYY-MM-DD HH:MM:SS); enter goes, escape cancels"


def epoch_note(epoch: int | None) -> str:
    """' (epoch 118)' after a cycle number: the RM's own name for the cycle, the same in any copy of the log."""
    return f" (epoch {epoch})" if epoch is not None else ""


def stamp(ts: datetime | None) -> str:
    """A cycle's time as the header shows it."""
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts is not None else "-"


def run_audit(loaded: Loaded, boot: Bootstrap | None, progress: Any) -> tuple[dict[str, pl.DataFrame], AuditResult]:
    """`tui.load.run_audit` (loaded with polars, when an audit is run)."""
    from tui.load import run_audit as run

    return run(loaded, boot, progress)


class CycleHeader(Static):
    """The top line: the log, `Cycle <n>/<total> (epoch <e>)` and the cycle's time."""

    def show(self, browse: Browse, cycle: int) -> None:
        """Name the cycle on screen."""
        self.show_cycle(browse.name, cycle, browse.total, browse.epoch(cycle), stamp(browse.ts(cycle)))

    def show_cycle(self, name: str, cycle: int, total: int, epoch: int | None, when: str) -> None:
        """Name a cycle given as it is (a first screen's summary: tui.summary); `when`: its `stamp`."""
        self.update(Text.assemble(
            (" rmreplay ", "bold"), f" {name}   ", (f"Cycle {cycle}/{total}", "bold"), epoch_note(epoch),
            f"   {when}"), layout=False)


class StatusLine(Horizontal):
    """One line under the tabs. `g` is typed here rather than in a dialog or an input box: opening
    and closing either moves the focus, which makes Textual rebuild the footer and re-lay the
    screen out (100-300 ms on a big log), while this line is repainted in place. It also runs the
    audit, and shows how far it is."""

    class Audited(Message):
        """The audit's frames are in."""

        def __init__(self, frames: dict[str, pl.DataFrame]) -> None:
            super().__init__()
            self.frames = frames

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.audit_done = False
        self.message = ""
        self.filter_text = ""
        self.goto: str | None = None  # what has been typed after `g`, while it is being typed

    def compose(self) -> ComposeResult:
        yield Static("", id="status-text")
        yield ProgressBar(total=None, show_eta=False, id="audit-progress")

    def say(self, message: str, progress: Progress | None = None) -> None:
        """Show a message, and a bar for the progress given (none without)."""
        self.message = message
        self.paint()
        bar = self.query_one("#audit-progress", ProgressBar)
        bar.display = progress is not None
        if progress is not None:
            bar.update(total=progress.total, progress=progress.done)

    @work(thread=True, exclusive=True, group="audit")
    def audit(self, loaded: Loaded, boot: Bootstrap | None) -> None:
        """rmref on every cycle, in a worker; its frames are kept beside the cached parse and posted."""
        self.app.call_from_thread(self.say, "auditing: rmref replays every cycle", Progress("auditing"))
        try:
            frames, loaded.result = run_audit(loaded, boot, progress=lambda p: self.app.call_from_thread(
                self.say, p.text(), p))
        except Exception as exc:  # noqa: BLE001 - browsing the log still works without rmref
            why = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            self.app.call_from_thread(self.say, f"no audit: {why}")
            self.audit_done = True
            return
        self.post_message(self.Audited(frames))

    def audited(self, frames: dict[str, pl.DataFrame], total: int, damaged: Mapping[int, Damage] | None = None,
                release: ReleaseChoice | None = None) -> None:
        """Say how many cycles agree with rmref, of those the audit audited (as `rmreplay audit` does),
        and as which DUCC release (replay.model.release)."""
        from tui.data import audit_status

        self.say(audit_status(frames, total, damaged, release))
        self.audit_done = True

    def show_filter(self, text: str) -> None:
        """Name the filter in force ('' for none)."""
        self.filter_text = text
        self.paint()

    def ask(self) -> None:
        """Start asking where to go."""
        self.goto = ""
        self.paint()

    def type_key(self, event: events.Key) -> str | None:
        """A key typed while asking: the answer once enter is pressed (escape: '', no answer)."""
        text = self.goto or ""
        if event.key in ("enter", "escape"):
            self.goto = None
            self.paint()
            return text if event.key == "enter" else ""
        if event.key == "backspace":
            text = text[:-1]
        elif event.is_printable and event.character:
            text += event.character
        self.goto = text
        self.paint()
        return None

    def paint(self) -> None:
        """The go-to prompt while `g` is asking, else the message and the filter."""
        if self.goto is not None:
            text = Text.assemble(("go to: ", "bold"), (self.goto, "reverse"), " ", (GOTO_HINT, "dim"))
        else:
            text = Text("  ·  ".join([self.message] + ([f"filter: {self.filter_text}"] if self.filter_text else [])))
        self.query_one("#status-text", Static).update(text, layout=False)
