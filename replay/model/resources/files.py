"""Finding and reading the files a DUCC configuration names."""

from __future__ import annotations

from pathlib import Path

from replay.parsing.sources import InputError


def resolve_file(root: Path, name: str) -> Path | None:
    """A file the configuration names: relative to the resources directory; an absolute path from
    the production host falls back to the same file name inside the directory."""
    path = Path(name)
    for cand in ((path, root / path.name) if path.is_absolute() else (root / path,)):
        if cand.is_file():
            return cand
    return None


def read_text(path: Path) -> str:
    """The file's text; InputError naming it when it cannot be read."""
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror or exc}); check the path and permissions") from exc
