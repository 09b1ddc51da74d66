"""Temporary files and folders named after the process that writes them, so that what a killed
process left behind can be told from what a live one is still writing, and removed."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def temp_name(prefix: str, suffix: str = "") -> str:
    """`<prefix><pid>-<random><suffix>`: a name `remove_left` can trace to this process."""
    return f"{prefix}{os.getpid()}-{uuid.uuid4().hex[:12]}{suffix}"


def remove_left(folder: Path, prefix: str) -> None:
    """Remove the entries of `folder` named by `temp_name(prefix, ...)` whose process is gone."""
    try:
        entries = [p for p in folder.iterdir() if p.name.startswith(prefix)]
    except OSError:
        return
    for path in entries:
        pid = path.name[len(prefix):].split("-", 1)[0]
        if not pid.isdigit() or int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
