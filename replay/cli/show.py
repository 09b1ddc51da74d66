"""What every command prints the same way: its console, errors, notes and a long step's progress."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, cast

from replay.cli.plain import plain_text, plain_width
from replay.progress import OnProgress, Progress, quiet

if TYPE_CHECKING:  # rich loads where a command prints through it (replay.cli.plain: parse may not)
    from rich.console import Console


def stdout_console() -> Console:
    """The console commands print to: word-wrapped on a terminal; piped or redirected, every line
    as long as it is (a file or a pipe gets whole sentences, not 80-column pieces)."""
    from rich.console import Console

    console = Console()
    console.soft_wrap = not console.is_terminal
    return console


class LazyConsole:
    """`stdout_console()`, made when first used: a command that prints plain text (replay.cli.plain)
    never loads rich."""

    def __init__(self) -> None:
        object.__setattr__(self, "_console", None)

    @property
    def made(self) -> bool:
        """Whether the console was made (something printed through rich)."""
        return self._console is not None

    def console(self) -> Console:
        """The rich console."""
        if self._console is None:
            object.__setattr__(self, "_console", stdout_console())
        return cast("Console", self._console)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console(), name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self.console(), name, value)


def print_error(message: object) -> None:
    """One red line on stderr, `rmreplay: ...`."""
    from rich.console import Console

    Console(stderr=True).print(f"rmreplay: {message}", style="red", markup=False, highlight=False, soft_wrap=True)


def print_input_note(note: str | None) -> None:
    """What the log folders given held besides the RM's log: one line on stderr."""
    if not note:
        return
    line = f"rmreplay: {note}"
    if plain_width(stderr=True) is not None and plain_text(line):  # what rich would print (replay.cli.plain)
        print(line, file=sys.stderr, flush=True)
        return
    from rich.console import Console

    Console(stderr=True).print(line, markup=False, highlight=False, soft_wrap=True)


def print_note(console: Console, note: str | None) -> None:
    """A command's bootstrap note (replay.cli.inputs.open_tables), if any."""
    if note:
        console.print(note, markup=False, highlight=False)


@contextmanager
def progress_display(console: Console, stage: str) -> Iterator[OnProgress]:
    """Show a long step's progress on one line while it runs: its stage, and a bar with the count
    when the total is known. Drawn only on a terminal and cleared when done, so piped output
    holds the results alone."""
    if not console.is_terminal:  # rich would still end each display with a blank line
        yield quiet
        return
    import rich.progress  # here: piped or redirected, a command draws no bar and need not load it
    from rich.progress import BarColumn, SpinnerColumn, TaskProgressColumn, TextColumn

    bars = rich.progress.Progress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                  TaskProgressColumn(), console=console, transient=True)
    with bars:
        task = bars.add_task(stage, total=None)

        def show(progress: Progress) -> None:
            bars.update(task, description=progress.text(), total=progress.total, completed=progress.done)

        yield show
