"""The command registry: every command once, the TUI added from its own package, allocators before polars."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.skipif(not Path("/proc/self/task").is_dir() or (os.cpu_count() or 1) < 2,
                    reason="counts the process's threads in /proc; OpenBLAS starts none on one core")
def test_numpy_loads_without_blas_threads_in_a_command():
    """No command does floating-point linear algebra: numpy's OpenBLAS, tuned before it loads,
    starts no thread of its own (left alone it starts one per core, which spins while it waits)."""
    code = ("import os, replay.cli.process as p; p.tune_allocators('parse'); import numpy; "
            "print(len(os.listdir('/proc/self/task')))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENBLAS_", "OMP_"))}
    got = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert got.stdout.strip() == "1"


def test_only_the_streaming_commands_let_the_allocators_keep_pages():
    assert not holding("parse") and not holding("anonymize") and not holding(None)
    assert all(holding(c) for c in ("audit", "explain", "report", "whatif", "check", "simulate", "fleet", "tui"))


def test_a_command_named_first_builds_only_its_own_parser():
    parser = build_parser("parse")
    assert parser.parse_args(["parse", "x.log", "-j", "1"]).func.__module__ == "replay.cli.parse"
    assert list(parser._subparsers._group_actions[0].choices) == ["parse"]  # type: ignore[union-attr]
    # an added command (the TUI's entry point) named first: its own parser alone too; a name no
    # command has: every parser (argparse then says which there are)
    assert list(build_parser("tui")._subparsers._group_actions[0].choices) == ["tui"]  # type: ignore[union-attr]
    assert len(build_parser("nosuch")._subparsers._group_actions[0].choices) > len(BUILT_IN)  # type: ignore[union-attr]


def test_the_tui_command_line_loads_neither_polars_nor_rmref():
    """`rmreplay tui DIR` reaches the TUI without polars, numpy or rmref (its first screen, when
    kept, draws without them: tui.summary); `--rm-release`'s help still lists the releases."""
    code = ("import sys; from replay.cli.parser import build_parser; "
            "build_parser('tui').parse_args(['tui', 'x', '--rm-release', '2.2.2']); import tui.app; "
            "sys.exit(any(m.split('.')[0] in ('polars', 'numpy', 'pyarrow', 'rmref') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True).returncode == 0
    shown = subprocess.run([sys.executable, "-m", "replay.cli", "tui", "--help"], cwd=ROOT, capture_output=True,
                           text=True)
    assert "2.2.2" in shown.stdout and "trunk" in shown.stdout


def test_parse_loads_only_what_a_parse_uses(tmp_path):
    """`rmreplay parse` starts with what a parse needs (docs/benchmarks.md, start-up): not the
    reference RM (0.1 s), the model, the other commands' layers, pyarrow.compute (0.07 s), which no
    step of a parse calls, nor rich off a terminal; lark only for a record only the grammar reads
    (a_tiny has none). On the console script's own path (the collector off while the command
    loads), for a log, a DEBUG log (.gz), a log folder and an archive, to Parquet and to the screen;
    and the parse the cache makes for another command."""
    unused = ("rmref", "replay.model", "replay.apps", "tui", "rich", "textual", "lark", "duckdb", "dask",
              "distributed", "pyarrow.compute")
    code = ("import sys; from replay.cli.process import main; sys.argv[0] = 'rmreplay'; rc = main(); "
            f"sys.exit(rc or 10 * any(m.startswith({unused!r}) for m in sys.modules))")
    # each of these makes rich (so the summary) treat the pipe as a terminal; the environment is
    # passed whole, as a library may have set one below os.environ
    env = {k: v for k, v in os.environ.items()
           if k not in ("TTY_COMPATIBLE", "FORCE_COLOR", "COLUMNS", "JUPYTER_COLUMNS", "JUPYTER_LINES")}
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(ROOT / "fixtures" / "a_tiny" / "rm.log", folder / "rm.log")
    archive = shutil.make_archive(str(tmp_path / "logs"), "gztar", tmp_path, "logs")
    fixtures = ROOT / "fixtures"
    for args in ([str(fixtures / "a_tiny" / "rm.log"), "-o", str(tmp_path / "out"), "-j", "1"],
                 [str(fixtures / "a_tiny" / "rm-debug.log.gz"), "-o", str(tmp_path / "debug"), "-j", "2"],
                 [str(folder), "-o", str(tmp_path / "folder")], [archive], [str(fixtures / "a_tiny" / "rm.log")]):
        done = subprocess.run([sys.executable, "-c", code, "parse", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        assert done.returncode == 0, (args, done.returncode, done.stderr[-2000:])
    # the parse another command makes of a log before it replays it (the cache's): the same modules
    code = ("import sys; from replay.parsing.cache import open_input; open_input(sys.argv[1:]); "
            f"sys.exit(10 * any(m.startswith({unused!r}) for m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code, str(folder)], cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]


def test_lark_loads_only_for_a_record_only_the_grammar_reads(tmp_path):
    """a_tiny, from its RM start (the nodepool, class table, properties, JD host) to its last cycle,
    parses without loading lark, every record read; a log cut mid-stream too. A node list with a
    token the grammar's lexer splits ("12,": an INT and a WORD; read by the grammar alone) loads
    it, and still parses."""
    lines = (ROOT / "fixtures" / "a_tiny" / "rm.log").read_text().splitlines(keepends=True)
    assert "<None>" in lines[4] and any("jd.host.class=" in line for line in lines[:200])
    (tmp_path / "rm.log").write_text("".join(lines[699:]))
    code = ("import sys; from replay.parsing import pipeline; r = pipeline.parse(sys.argv[1:]); "
            "sys.exit(10 * ('lark' in sys.modules) + (r.summary.unparsed != 0) + (r.summary.cycles == 0))")
    for log in (ROOT / "fixtures" / "a_tiny" / "rm.log", tmp_path / "rm.log"):
        assert subprocess.run([sys.executable, "-c", code, str(log)], cwd=ROOT).returncode == 0, log
    (tmp_path / "nodes.log").write_text("".join(lines[:4] + [lines[4].replace("<None>", "node01 12, node02")]
                                                + lines[5:]))
    code = ("import sys; from replay.parsing import pipeline; r = pipeline.parse(sys.argv[1:]); "
            "sys.exit(10 * ('lark' not in sys.modules) + (r.summary.unparsed != 0))")
    assert subprocess.run([sys.executable, "-c", code, str(tmp_path / "nodes.log")], cwd=ROOT).returncode == 0
