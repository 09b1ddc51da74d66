"""`rmreplay parse`'s plain output (replay.cli.plain) against rich's, the truth it stands in for:
the same characters whenever the plain path prints, rich wherever they could differ."""

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rich.console import Console
from rich.table import Table

from replay.cli import plain

ROOT = Path(__file__).resolve().parents[2]
SPEED = re.compile(r"^speed .*$", re.M)  # the one line that differs run by run


def rich_table(title: str, rows: list[tuple[str, str]], width: int) -> str:
    """What rich prints for the parse summary's table on a stdout that is no terminal."""
    console = Console(file=io.StringIO(), width=width, soft_wrap=True)
    table = Table(title=title, show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert text.endswith("\n")
    return str(text[:-1])


@pytest.fixture(autouse=True)
def _no_rich_env(monkeypatch):
    for key in ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS", "NO_COLOR"):
        monkeypatch.delenv(key, raising=False)


SUMMARY = [("files", "rm.log"), ("input", "0.2 MB, 2,016 lines, 1,756 records"), ("speed", "0.22 s, 1.1 MB/s"),
           ("  bootstrap", "162"), ("cycles", "20"),
           ("time span", "01 Jan 2015 00:00:00,000 .. 01 Jan 2015 00:04:10,000"), ("unparsed lines", "0"),
           ("lines with bad bytes", "3 (replaced by U+FFFD)")]


@pytest.mark.parametrize("width", [80, 76, 120])
def test_the_summary_prints_as_rich_prints_it(width):
    got = plain.plain_table("rmreplay parse", SUMMARY, width)
    assert got is not None and got == rich_table("rmreplay parse", SUMMARY, width)


def test_what_rich_would_change_goes_through_rich():
    for odd in ("[bold]x[/]", "rm.log.é", ":100:", ":smile:", "a\\b", "tab\there", "ends in a space ", " starts"):
        assert plain.plain_table("t", [("files", odd)], 80) is None, odd
    assert plain.plain_table("t", SUMMARY, 60) is None  # rich would wrap the time span
    assert plain.plain_table("a longer title than the table", [("a", "b")], 80) is None
    assert plain.plain_table("t", [], 80) is None


TEXT = st.text(alphabet="ab :,.-()[]\\é0123456789", max_size=30)


@settings(max_examples=500, deadline=None)
@given(rows=st.lists(st.tuples(TEXT, TEXT), min_size=1, max_size=6), width=st.integers(10, 100),
       title=st.sampled_from(["rmreplay parse", "t"]))
def test_whenever_the_plain_table_prints_it_is_riches(rows, width, title):
    got = plain.plain_table(title, rows, width)
    if got is not None:
        assert got == rich_table(title, rows, width)


def test_plain_only_where_rich_would_print_no_codes(monkeypatch):
    class Stream(io.StringIO):
        def __init__(self, tty: bool) -> None:
            super().__init__()
            self.tty = tty

        def isatty(self) -> bool:
            return self.tty

    monkeypatch.setattr(plain, "_STD_STREAMS", ())  # no terminal on any standard stream
    monkeypatch.setattr(sys, "stdout", Stream(False))
    assert plain.plain_width() == 80
    for key, value in (("FORCE_COLOR", "1"), ("TTY_COMPATIBLE", "1"), ("COLUMNS", "100")):
        monkeypatch.setenv(key, value)
        assert plain.plain_width() is None, key
        monkeypatch.delenv(key)
    monkeypatch.setattr(sys, "stdout", Stream(True))
    assert plain.plain_width() is None


def _parse_output(tmp_path: Path, env: dict[str, str]) -> str:
    folder = tmp_path / "logs"
    folder.mkdir(exist_ok=True)
    (folder / "rm.log").write_bytes((ROOT / "fixtures" / "a_tiny" / "rm.log").read_bytes())
    (folder / "or.log").write_text("not the RM's\n")  # a note on stderr, between the table and the last line
    code = ("import sys; from replay.cli.process import main; rc = main(sys.argv[1:]); "
            "print('rich' in sys.modules); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code, "parse", str(folder), "-o", str(tmp_path / "out"), "--force"],
                          cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, env={**os.environ, **env})
    assert done.returncode == 0, done.stdout
    return SPEED.sub("speed", done.stdout)


def test_parse_prints_the_same_lines_without_rich(tmp_path, monkeypatch):
    """The whole command, piped (stdout and stderr into one pipe): plain, and through rich
    (TTY_COMPATIBLE=0 makes the plain path step aside, and tells rich what it finds anyway)."""
    plain_out = _parse_output(tmp_path, {})
    rich_out = _parse_output(tmp_path, {"TTY_COMPATIBLE": "0"})
    assert plain_out.endswith("False\n") and rich_out.endswith("True\n")  # whether rich was loaded
    assert plain_out.removesuffix("False\n") == rich_out.removesuffix("True\n")
    assert "ignored or.log" in plain_out and plain_out.index("ignored or.log") < plain_out.index("tables written")


def test_parse_on_a_terminal_draws_through_rich(tmp_path):
    """FORCE_COLOR makes rich treat the pipe as a terminal: the progress bar and the coloured table
    go through rich, which takes the console itself (not the console made on first use)."""
    out = _parse_output(tmp_path, {"FORCE_COLOR": "1"})
    assert out.endswith("True\n") and "\x1b[" in out and "rmreplay parse" in out
