"""The keys of the parse cache and of the stored audit, computed with the standard library alone:
the code's fingerprint, an input's cache slot, a `--config` folder's digest, a parse's tables'
digest and rmreplay's version. (The TUI's first screen finds its summary by them before polars
loads: `tui.summary`.)"""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from importlib.util import find_spec
from pathlib import Path

from replay.parsing.digest import cache_root
from replay.parsing.manifest import parse_dir_manifest
from replay.parsing.sources import InputError

_SOURCE_SUFFIXES = (".py", ".c", ".h", ".lark")
# the stored audit's format (replay.apps.stored): 2: verified choices, damage, conflicts and the release
# kept; 3: the baseline
AUDIT_FORMAT = "rmreplay-audit/3"


def source_files() -> list[tuple[str, Path]]:
    """(name, path) of every source file the tables and the audit come from: Python (subpackages
    too), the scanner's C, the grammar."""
    files = []
    for pkg in ("grammars", "replay", "rmref"):
        spec = find_spec(pkg)
        assert spec is not None and spec.origin is not None
        root = Path(spec.origin).parent
        files += [(f"{root.name}/{p.relative_to(root).as_posix()}", p)
                  for p in sorted(root.rglob("*")) if p.suffix in _SOURCE_SUFFIXES]
    return files


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """Digest of the code that turns a log into tables and audits it."""
    h = hashlib.sha256()
    for name, path in source_files():
        h.update(name.encode() + b"\0")
        h.update(path.read_bytes())
    return h.hexdigest()


def slot_of(content: str) -> Path:
    """The cache slot of an input with this content digest (for this code)."""
    return cache_root() / hashlib.sha256(f"{code_fingerprint()}\0{content}".encode()).hexdigest()[:40]


def config_digest(folder: str | Path | None) -> str | None:
    """Digest of a `--config` folder's files (None: no folder), for what depends on it."""
    if folder is None:
        return None
    h = hashlib.sha256()
    root = Path(folder)
    for p in sorted(root.rglob("*")) if root.is_dir() else []:
        if p.is_file():
            h.update(f"{p.relative_to(root).as_posix()}\0".encode())
            h.update(p.read_bytes())
    return h.hexdigest()[:16]


def tables_id(root: Path) -> str:
    """The digest of a parse's tables: their files' digests, from its manifest."""
    manifest = parse_dir_manifest(root)
    if manifest is None:
        raise InputError(f"{root}: not a parse directory")
    return hashlib.sha256(json.dumps(manifest.get("files", {}), sort_keys=True).encode()).hexdigest()


def audit_stored(folder: Path, key: str) -> bool:
    """Is an audit of key `key` stored whole in `folder` (a slot's `audits/`)? Its manifest, written
    last before the folder was renamed into place, says so (`replay.apps.stored`)."""
    try:
        manifest = json.loads((folder / key / "manifest.json").read_text())
    except (OSError, ValueError):
        return False
    return isinstance(manifest, dict) and manifest.get("format") == AUDIT_FORMAT and manifest.get("key") == key
