"""The command registry: every command once, the TUI added from its own package, allocators before polars."""

import subprocess
import sys
from pathlib import Path

from replay.cli.parser import build_parser
from replay.cli.registry import BUILT_IN, commands, holding

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_once_and_the_tui_from_its_entry_point():
    names = [c.name for c in commands()]
    assert len(names) == len(set(names))
    assert names[: len(BUILT_IN)] == list(BUILT_IN) and "tui" in names[len(BUILT_IN):]
    assert build_parser().parse_args(["tui", "x.log"]).func.__module__ == "tui.command"


def test_importing_the_entry_point_loads_no_polars_or_pyarrow():
    """The allocators are tuned before polars and pyarrow load (replay.cli.process.tune_allocators)."""
    code = "import sys, replay.cli; sys.exit(any(m.split('.')[0] in ('polars', 'pyarrow') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == 0


def test_only_the_streaming_commands_let_the_allocators_keep_pages():
    assert not holding("parse") and not holding("anonymize") and not holding(None)
    assert all(holding(c) for c in ("audit", "explain", "report", "whatif", "check", "simulate", "fleet", "tui"))
