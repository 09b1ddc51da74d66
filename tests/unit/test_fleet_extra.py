"""`rmreplay fleet` without its extra: Dask is optional (`pip install 'rmreplay[fleet]'`), so a missing
`distributed` is one line naming the install command, exit 2, and nothing else imports it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# `sys.modules[name] = None` is how Python marks a module as not importable: find_spec gives None
# and `import distributed` raises, as on an install without the extra
WITHOUT_DASK = """
import sys
sys.modules["distributed"] = None
sys.modules["dask"] = None
from replay.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_fleet_without_dask_is_one_line_and_exit_2(tmp_path):
    out = tmp_path / "fleet"
    run = subprocess.run([sys.executable, "-c", WITHOUT_DASK, "fleet", str(ROOT / "fixtures" / "a_tiny"), "-o",
                          str(out)], capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.splitlines() == [
        "rmreplay: fleet runs on Dask, which is not installed: pip install 'rmreplay[fleet]'"]
    assert not out.exists()


def test_the_other_commands_do_not_need_dask(tmp_path):
    """The audit of the sample, as the Quick start runs it, with Dask absent."""
    run = subprocess.run([sys.executable, "-c", WITHOUT_DASK, "audit", str(ROOT / "fixtures" / "a_tiny" / "rm.log"),
                          "-o", str(tmp_path / "a")], capture_output=True, text=True, cwd=ROOT, timeout=600,
                         check=False, env={**os.environ, "RMREPLAY_CACHE": str(tmp_path / "cache")})
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "a" / "report.json").is_file()
