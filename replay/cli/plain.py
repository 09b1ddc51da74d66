"""A command's output as plain text, the same characters rich prints when stdout is no terminal,
for a command whose whole output is a short table and a few lines (parse): loading rich and
rendering through it took about 35 ms of CPU, a tenth of a small log's parse.

Only what rich would print unchanged is printed here: text without markup or emoji codes, in a
table narrower than the console, on a stdout rich would not colour; anything else goes through
rich (`plain_width` None, or `plain_table` None). tests/unit/test_plain.py holds the two to each
other.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence

# rich's emoji code (rich._emoji_replace): `:name:` becomes an emoji when `name` is one
_EMOJI = re.compile(r"(:(\S*?)(?:(?:\-)(emoji|text))?:)")
# rich's environment: each makes it treat stdout as a terminal, or not, whatever it is
_RICH_ENV = ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS", "JUPYTER_COLUMNS", "JUPYTER_LINES")
_STD_STREAMS = (0, 1, 2)


def plain_width(stderr: bool = False) -> int | None:
    """The width rich gives a console on stdout (or stderr) when it prints no escape codes there
    (the stream no terminal, nothing in the environment that says otherwise, not Windows); None
    otherwise."""
    stream = sys.stderr if stderr else sys.stdout
    if sys.platform.startswith("win") or any(key in os.environ for key in _RICH_ENV):
        return None
    try:
        if stream is None or stream.isatty():
            return None
    except ValueError:  # a closed stdout: rich's own checks decide
        return None
    for fd in _STD_STREAMS:  # rich's size: the first standard stream that is a terminal
        try:
            width = os.get_terminal_size(fd).columns
        except (AttributeError, ValueError, OSError):
            continue
        return width or 80
    return 80


def plain_text(text: str) -> bool:
    """Whether rich prints `text` as it is: printable ASCII, no markup, no emoji code."""
    if not text.isascii() or not text.isprintable() or any(c in text for c in "[]\\"):
        return False
    return all(m.group(2).isdigit() and len(m.group(2)) <= 2 for m in _EMOJI.finditer(text))


def plain_table(title: str, rows: Sequence[tuple[str, str]], width: int) -> str | None:
    """A two-column table (left-aligned names, right-aligned values; no box, no header, no edge
    padding) as rich prints it on a plain stdout `width` wide; None when rich would do more (wrap
    a cell, read markup, a title wider than the table)."""
    cells = [title, *(c for row in rows for c in row)]
    if not rows or not all(plain_text(c) for c in cells):
        return None
    # rich strips the spaces that end a cell, and those that start a right-aligned one
    if any(c != c.rstrip() for c in cells) or any(v != v.lstrip() for _, v in rows):
        return None
    left = max(len(name) for name, _ in rows)
    right = max(len(value) for _, value in rows)
    if left + 2 + right > width or len(title) > left + 2 + right:
        return None
    return "\n".join([title, *(f"{name:<{left}}  {value:>{right}}" for name, value in rows)])
