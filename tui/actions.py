"""The TUI's one action registry: every key, what it runs and where it is shown.

The App's and the Jobs table's BINDINGS, the footer, the `?` help screen, the command palette and
the README's key table are all generated from `ACTIONS` (tests/tui/test_actions.py holds the
README to it), so a key is named, bound and described in one place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from textual.app import App, SystemCommand
from textual.binding import Binding, BindingType

FOOTER, HELP, PALETTE = "footer", "help", "palette"  # where an action is shown
APP, JOBS_TABLE, TEXTUAL = "app", "jobs-table", "textual"  # who binds the key (TEXTUAL: Textual itself)
TABS = ("jobs", "nodes", "defrag", "log", "diff")
# the timeline's markers: (mark, style, what the cycle has)
MARKS = (("!", "bold red", "divergence"), ("N", "yellow", "needy jobs"), ("X", "magenta", "node death"))
_KEY_TEXT = {"slash": "/", "question_mark": "?"}


@dataclass(frozen=True)
class Action:
    """One key: the action it runs, its footer label and palette title, its description, and where it is shown."""

    key: str  # Textual's key name
    action: str  # the action it runs, as Textual writes it ("tab('jobs')")
    label: str  # the footer's word
    description: str  # the help screen's and the README's
    shown: frozenset[str]
    title: str = ""  # the command palette's (with PALETTE)
    scope: str = APP

    @property
    def key_text(self) -> str:
        """The key as a person types it."""
        return _KEY_TEXT.get(self.key, self.key)


def _a(key: str, action: str, label: str, description: str, *shown: str, title: str = "", scope: str = APP) -> Action:
    return Action(key, action, label, description, frozenset(shown), title, scope)


ACTIONS: tuple[Action, ...] = (
    _a("n", "go('next')", "Next", "next cycle", FOOTER, HELP, PALETTE, title="Next cycle"),
    _a("p", "go('prev')", "Prev", "previous cycle", FOOTER, HELP, PALETTE, title="Previous cycle"),
    _a("d", "go('next_div')", "Next div", "next cycle with a divergence (rmref and the log disagree)",
       FOOTER, HELP, PALETTE, title="Next divergence"),
    _a("D", "go('prev_div')", "Prev div", "previous cycle with a divergence", FOOTER, HELP, PALETTE,
       title="Previous divergence"),
    _a("g", "goto", "Go to", "go to a cycle number, an RM epoch (e118) or a time (HH:MM[:SS], YYYY-MM-DD "
       "HH:MM:SS), typed in the status line, then enter", FOOTER, HELP, PALETTE, title="Go to cycle or time"),
    _a("slash", "filter", "Filter", "filter rows: words match job, user, class or host; job:12 user:alice "
       "class:normal host:node1", FOOTER, HELP, PALETTE, title="Filter rows"),
    _a("escape", "clear_filter", "Back",
       "back (close the job history or the help, cancel g, or clear the filter)", FOOTER, HELP),
    _a("question_mark", "help", "Help", "help: every key and the timeline's marks", FOOTER, HELP, PALETTE,
       title="Keys"),
    _a("q", "quit", "Quit", "quit", FOOTER, HELP),
    *(_a(str(i + 1), f"tab('{t}')", t.title(), f"{t.title()} tab", HELP, PALETTE, title=f"Show {t.title()} tab")
      for i, t in enumerate(TABS)),
    _a("enter", "select_cursor", "Open job", "open the job under the cursor: its history and the explanation "
       "of this cycle", FOOTER, HELP, scope=JOBS_TABLE),
    _a("ctrl+p", "command_palette", "Palette", "command palette (every action, the tabs, \"Open job N\" for "
       "this cycle's jobs)", HELP, scope=TEXTUAL),
)


def bindings(scope: str) -> list[BindingType]:
    """The BINDINGS of the App (APP) or a widget (its scope), in the registry's order."""
    return [Binding(a.key, a.action, a.label, show=FOOTER in a.shown) for a in ACTIONS if a.scope == scope]


def help_rows() -> list[tuple[str, str]]:
    """(key, description) of every key the help screen lists."""
    return [(a.key_text, a.description) for a in ACTIONS if HELP in a.shown]


def readme_table() -> list[str]:
    """The README's key table, as markdown lines."""
    return ["| key | does |", "|---|---|", *(f"| `{key}` | {what} |" for key, what in help_rows())]


def palette(app: App[Any], jobs: Iterable[tuple[int, str, str]],
            open_job: Callable[[int], object]) -> Iterator[SystemCommand]:
    """The command palette's entries: the registry's actions, then "Open job N" for each (job, user, class)."""
    for a in ACTIONS:
        if PALETTE in a.shown:
            yield SystemCommand(a.title, f"{a.key_text}: {a.description}", partial(app.run_action, a.action))
    for job, user, cls in jobs:
        yield SystemCommand(f"Open job {job}", f"{user} / {cls}: history and explanation", partial(open_job, job))

