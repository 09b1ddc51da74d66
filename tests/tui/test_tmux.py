"""The installed `rmreplay tui` in a real terminal: tmux starts it, sends keys, reads the screen, sees it quit."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.helpers import log_path, truth

TMUX = shutil.which("tmux")
pytestmark = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (apt-get install tmux): "
                                "the real-terminal test needs it")


def _rmreplay() -> str:
    beside = Path(sys.executable).with_name("rmreplay")
    found = str(beside) if beside.exists() else shutil.which("rmreplay")
    if not found:
        pytest.skip("the rmreplay console script is not installed (pip install -e .)")
    return found


class Tmux:
    """One tmux server on a private socket (the user's sessions are never touched)."""

    def __init__(self) -> None:
        self.socket = f"rmreplay-test-{uuid.uuid4().hex[:8]}"

    def __call__(self, *args: str) -> str:
        return subprocess.run([TMUX, "-L", self.socket, *args], check=True, capture_output=True, text=True).stdout

    def screen(self) -> str:
        return self("capture-pane", "-p", "-t", "tui")

    def wait_for(self, pattern: str, timeout: float = 60.0) -> re.Match:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(pattern, self.screen())
            if m:
                return m
            time.sleep(0.1)
        raise AssertionError(f"{pattern!r} never appeared; the screen:\n{self.screen()}")

    def kill(self) -> None:
        subprocess.run([TMUX, "-L", self.socket, "kill-server"], capture_output=True)


def test_rmreplay_tui_in_tmux(tmp_path):
    """Open a_tiny, move three cycles with n, read `Cycle 4/20 (epoch 9)` in the header (truth's epoch), quit
    with q: exit status 0."""
    total = len(truth("a_tiny"))
    tmux = Tmux()
    cmd = (f"RMREPLAY_CACHE={tmp_path} {_rmreplay()} tui {log_path('a_tiny')}; "
           f"echo RMREPLAY-EXIT=$?; sleep 60")
    try:
        tmux("new-session", "-d", "-s", "tui", "-x", "150", "-y", "40", cmd)
        tmux.wait_for(rf"Cycle 1/{total}")
        tmux.wait_for(r"cycles agree")  # the audit finished: nothing left running
        for _ in range(3):
            tmux("send-keys", "-t", "tui", "n")
        header = r"Cycle (\d+)/(\d+) \(epoch (\d+)\)\s+\S+ (\d\d:\d\d:\d\d)"
        m = tmux.wait_for(header, timeout=10)
        deadline = time.monotonic() + 10
        while m.group(1) != "4" and time.monotonic() < deadline:
            time.sleep(0.1)
            m = tmux.wait_for(header)
        assert (int(m.group(1)), int(m.group(2)), int(m.group(3))) == (4, total, truth("a_tiny")[3]["epoch"])
        assert truth("a_tiny")[3]["time"].endswith(m.group(4) + ",000")
        tmux("send-keys", "-t", "tui", "q")
        tmux.wait_for(r"RMREPLAY-EXIT=0", timeout=15)
        assert "Traceback" not in tmux.screen()
    finally:
        tmux.kill()
