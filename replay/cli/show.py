"""What every command prints the same way: its console, errors, notes and a long step's progress."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from replay.progress import OnProgress, Progress, quiet


def stdout_console() -> Console:
    """The console commands print to: word-wrapped on a terminal; piped or redirected, every line
    as long as it is (a file or a pipe gets whole sentences, not 80-column pieces)."""
    console = Console()
    console.soft_wrap = not console.is_terminal
    return console


def print_error(message: object) -> None:
    """One red line on stderr, `rmreplay: ...`."""
    Console(stderr=True).print(f"rmreplay: {message}", style="red", markup=False, highlight=False, soft_wrap=True)


def print_input_note(note: str | None) -> None:
    """What the log folders given held besides the RM's log: one line on stderr."""
    if note:
        Console(stderr=True).print(f"rmreplay: {note}", markup=False, highlight=False, soft_wrap=True)


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
