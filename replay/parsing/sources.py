"""Input files in reading order (rolled sets oldest first), and the input error every command reports."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

_ROLLED = re.compile(r"^(?P<base>.+?)(?:\.(?P<n>\d+))?(?:\.gz)?$")
_LOG_NAME = re.compile(r"\.log(\.\d+)?(\.gz)?$")


class InputError(Exception):
    """A problem with the input files that the user must fix (one line, says what to do)."""


@dataclass(frozen=True)
class Source:
    """One input file, in the order it is read (oldest first)."""

    path: Path
    name: str


def rolled_key(name: str) -> tuple[str, int]:
    """(base name, age key) of a log file name: sorting by it puts a rolled set oldest first."""
    # log4j RollingFileAppender: rm.log is current, rm.log.1 the newest backup, .5 the oldest.
    m = _ROLLED.match(name)
    assert m is not None
    return m.group("base"), -int(m.group("n") or 0)


def log_name(name: str) -> bool:
    """Whether a file name is a log's (*.log, *.log.N, *.log.gz, *.log.N.gz)."""
    return bool(_LOG_NAME.search(name))


def discover(paths: Sequence[str | Path]) -> list[Source]:
    """Files in reading order: each rolled family oldest first (higher suffix = older), families in
    the order given. Folders are `replay.parsing.logdir.find_inputs`'s to read."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_file():
            files.append(p)
        elif p.is_dir():
            raise InputError(f"{p}: a folder; read it with replay.parsing.logdir.find_inputs")
        else:
            raise InputError(f"{p}: no such file or directory")
    bases: dict[str, int] = {}
    for f in files:
        bases.setdefault(rolled_key(f.name)[0], len(bases))
    ordered = sorted(dict.fromkeys(files), key=lambda f: (bases[rolled_key(f.name)[0]], rolled_key(f.name)[1]))
    return [Source(f, f.name) for f in ordered]


def unpacked_size(path: Path) -> int:
    """About the bytes the parser reads from a file, for a progress bar: its size, or for a gzip
    file the size its trailer records (modulo 4 GiB; a trailer below the packed size has wrapped
    past it, and a typical ratio is guessed)."""
    size = path.stat().st_size
    if size < 18:  # shorter than a gzip header and trailer
        return size
    with open(path, "rb") as fh:
        if fh.read(2) != b"\x1f\x8b":
            return size
        fh.seek(-4, 2)
        recorded = int.from_bytes(fh.read(4), "little")
    return recorded if recorded >= size else size * 8
