"""The command line's manners: `--version`, whole lines when piped, and a value error of a flag is
one line naming the flag and the form it takes (exit 2), with nothing printed before it."""

from __future__ import annotations

import subprocess
import sys

import pytest

from replay.apps.explain import explain_job, render
from replay.cli import main
from tests.helpers import ROOT, log_path, parsed


def _rmreplay(*args: str) -> subprocess.CompletedProcess:
    """The console script in a child process, its stdout a pipe (not a terminal)."""
    return subprocess.run([sys.executable, "-m", "replay.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600, check=False)


def test_version_is_the_projects():
    """`--version` prints the version pip installed (the package's metadata, built from replay/_version.py)."""
    from importlib.metadata import version as installed

    run = _rmreplay("--version")
    assert (run.returncode, run.stdout, run.stderr) == (0, f"rmreplay {installed('rmreplay')}\n", "")


def test_piped_output_keeps_whole_lines():
    """`explain ... > file` gets the story exactly as rendered: its long sentences are not cut at 80
    columns (as a terminal-less console would)."""
    want = render(explain_job(parsed("h_mega15").tables, 5))
    assert max(map(len, want.splitlines())) > 100
    run = _rmreplay("explain", str(log_path("h_mega15")), "--job", "5")
    assert (run.returncode, run.stdout) == (0, want + "\n")


A_TINY = str(log_path("a_tiny"))


@pytest.mark.parametrize("args, flag, form", [
    (["explain", A_TINY, "--job", "abc"], "--job 'abc'", "a job id, a whole number"),
    (["explain", A_TINY, "--job", "999"], "--job 999", "its jobs are 1-3"),
    (["explain", A_TINY, "--job", "1", "--cycle", "x"], "--cycle 'x'",
     "expected a cycle number (12) or an RM epoch (e118)"),
    (["explain", A_TINY, "--job", "1", "--cycle", "999"], "--job 1 --cycle 999", "the log has cycles 1-20"),
    (["audit", A_TINY, "--cycles", "300:400"], "--cycles '300:400'", "the log has cycles 1 to 20; give A:B"),
    (["audit", A_TINY, "--cycles", "5:x"], "--cycles '5:x'", "expected A:B, A:, :B or N"),
    (["whatif", A_TINY, "--cycles", "21:", "-o", "{out}"], "--cycles '21:'", "the log has cycles 1 to 20"),
    (["whatif", A_TINY, "--set", "class.normal.weight=abc", "-o", "{out}"], "--set class.normal.weight=abc",
     "expected a whole number of 0 or more, got 'abc'"),
    (["whatif", A_TINY, "--set", "class.normal.weight=0", "-o", "{out}"], "--set class.normal",
     "a FAIR_SHARE class needs a weight of 1 or more"),
    (["whatif", A_TINY, "--set", "ducc.rm.share.quantum=0", "-o", "{out}"], "--set ducc.rm.share.quantum=0",
     "expected a whole number of 1 or more"),
    (["whatif", A_TINY, "--set", "class.normal.use-prediction=yes", "-o", "{out}"],
     "--set class.normal.use-prediction=yes", "expected true or false"),
    (["whatif", A_TINY, "--set", "class.normal.nodepool=gpu", "-o", "{out}"], "--set class.normal.nodepool=gpu",
     "no nodepool 'gpu' (nodepools: --default--)"),
    (["check", A_TINY, "--set", "user.ann.max-allotment=-4"], "--set user.ann.max-allotment=-4",
     "expected a whole number of 0 or more"),
])
def test_a_bad_value_is_one_line_naming_the_flag(tmp_path, capsys, args, flag, form):
    code = main([a.replace("{out}", str(tmp_path / "out")) for a in args])
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"rmreplay: {flag}") and form in err and len(err.splitlines()) == 1


def test_an_error_is_all_the_console_script_prints(tmp_path):
    """The short log's cycles are checked before any table: nothing on stdout, one line on stderr
    (the console script in its own process, bootstrap from --config, whose note waits for results)."""
    run = _rmreplay("audit", A_TINY, "--cycles", "300:400", "--config", str(ROOT / "fixtures" / "a_tiny" / "resources"))
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.splitlines() == [("rmreplay: --cycles '300:400': the log has cycles 1 to 20; "
                                        "give A:B, A:, :B or N within them")]
