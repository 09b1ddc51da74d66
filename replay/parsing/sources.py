"""Find, order and read rm.log files: plain or gzipped, single, rolled sets, directories."""

from __future__ import annotations

import re
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


def _rolled_key(path: Path) -> tuple[str, int]:
    return rolled_key(path.name)


def rolled_key(name: str) -> tuple[str, int]:
    """(base name, age key) of a log file name: sorting by it puts a rolled set oldest first."""
    # log4j RollingFileAppender: rm.log is current, rm.log.1 the newest backup, .5 the oldest.
    m = _ROLLED.match(name)
    assert m is not None
    return m.group("base"), -int(m.group("n") or 0)


def log_name(name: str) -> bool:
    """Whether a file name is a log's (*.log, *.log.N, *.log.gz, *.log.N.gz)."""
    return bool(_LOG_NAME.search(name))


def discover(paths: list[str | Path]) -> list[Source]:
    """Expand directories, then order each rolled family oldest first (higher suffix = older)."""
    files: list[Path] = []
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found = sorted(q for q in p.iterdir() if q.is_file() and _LOG_NAME.search(q.name))
            if not found:
                raise InputError(f"{p}: directory holds no *.log, *.log.N or *.log.gz file; name the log files")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            raise InputError(f"{p}: no such file or directory")
    bases: dict[str, int] = {}
    for f in files:
        bases.setdefault(_rolled_key(f)[0], len(bases))
    ordered = sorted(dict.fromkeys(files), key=lambda f: (bases[_rolled_key(f)[0]], _rolled_key(f)[1]))
    return [Source(f, f.name) for f in ordered]
