"""Content digests of input files: each file's sha256, memoised by path, size, modification time
and inode (`digests.json` in the cache folder, as git's index does), so only a file that changed is
hashed again. One digest names an input everywhere: the cache's slot key and the manifests'
`input.sha256` are the same number."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

from replay.parsing.sources import Source

_MEMO = "digests.json"
_MEMO_ENTRIES = 512


def cache_root() -> Path:
    """Where parses are cached."""
    return Path(os.environ.get("RMREPLAY_CACHE") or Path.home() / ".cache" / "rmreplay")


def stat_key(path: Path) -> list[int]:
    """What tells a file changed without reading it: size, modification time, inode."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def file_digest(path: Path) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    h = hashlib.sha256()  # SHA-NI: twice blake2b's speed on this project's machine
    with open(path, "rb") as fh:
        while block := fh.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def _load_memo() -> dict[str, list[Any]]:
    try:
        memo: dict[str, list[Any]] = json.loads((cache_root() / _MEMO).read_text())
        return memo
    except (OSError, ValueError):
        return {}


def _save_memo(memo: dict[str, list[Any]]) -> None:
    try:
        root = cache_root()
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f"{_MEMO}.{uuid.uuid4().hex}"
        tmp.write_text(json.dumps(dict(list(memo.items())[-_MEMO_ENTRIES:])))
        tmp.replace(root / _MEMO)
    except OSError:
        pass  # a read-only home: files are hashed every time


def file_digests(sources: list[Source]) -> list[tuple[str, str]]:
    """(name, sha256) of each input file, in reading order (memoised by stat)."""
    memo = _load_memo()
    parts, changed = [], False
    for src in sources:
        path, before = str(src.path.resolve()), stat_key(src.path)
        entry = memo.get(path)
        if entry is None or entry[:3] != before:
            digest = file_digest(src.path)
            if stat_key(src.path) == before:  # not written to while it was read
                memo.pop(path, None)
                memo[path] = [*before, digest]
                changed = True
            entry = [*before, digest]
        parts.append((src.name, entry[3]))
    if changed:
        _save_memo(memo)
    return parts


def content_digest(sources: list[Source]) -> str:
    """Digest of the input: each file's name and bytes, in reading order."""
    return combine(file_digests(sources))


def combine(parts: list[tuple[str, str]]) -> str:
    """The digest of named file digests, in order."""
    h = hashlib.sha256()
    for name, digest in parts:
        h.update(f"{name}\0{digest}\n".encode())
    return h.hexdigest()
