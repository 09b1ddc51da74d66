"""Data a parse derives from rmreplay's own code (the route prefixes compiled for the scanner),
kept on disk so that each process need not derive it again.

An entry lives in `<cache root>/derived/<name>-<key>.marshal`. The key is a sha256 its caller
computes over everything the data is built from (the builder's source, the inputs it compiles,
the byte order), so an edited builder or input names another file and a stale entry is never
read. A file holds a magic, the key, the sha256 of the payload and the payload (`marshal`: plain
tuples, bytes, ints, None); it is written under a name of its own and renamed into place, so a
reader sees a whole file or none, and two processes writing the same entry at once each write
the same bytes. Anything unreadable (a damaged file, a payload of the wrong shape, a read-only
or missing cache folder) is rebuilt, never trusted and never an error.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import Any, TypeVar, cast

from replay.parsing.digest import cache_root
from replay.parsing.leftovers import remove_left, temp_name

_MAGIC = b"rmreplay-derived/1\n"
_KEEP = 16  # entries kept per name: older builds' entries go (a developer's edits make many)

T = TypeVar("T")


def entry_path(name: str, key: str) -> Path:
    """Where the entry `name` built from what `key` digests is kept."""
    return cache_root() / "derived" / f"{name}-{key}.marshal"


def derived(name: str, key: str, build: Callable[[], T], valid: Callable[[object], bool]) -> T:
    """The data `build()` gives, read from its entry when there is a sound one (`valid` of it true),
    else built and stored for the next process."""
    path = entry_path(name, key)
    got = _read(path, key)
    if got is not None and valid(got[0]):
        return cast(T, got[0])  # `valid` vouched for its shape
    value = build()
    _write(path, key, value)
    return value


def _read(path: Path, key: str) -> tuple[object] | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    head = _MAGIC + key.encode() + b"\n"
    digest, payload = raw[len(head):len(head) + 32], raw[len(head) + 32:]
    if not raw.startswith(head) or hashlib.sha256(payload).digest() != digest:
        return None
    try:
        return (marshal.loads(payload),)
    except (EOFError, ValueError, TypeError):
        return None


def _write(path: Path, key: str, value: Any) -> None:
    try:
        payload = marshal.dumps(value)
    except ValueError:  # not plain data: nothing to keep
        return
    data = _MAGIC + key.encode() + b"\n" + hashlib.sha256(payload).digest() + payload
    tmp = path.with_name(temp_name(".tmp-", ".marshal"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_left(path.parent, ".tmp-")  # what a process killed while writing left
        tmp.write_bytes(data)
        os.replace(tmp, path)
        _prune(path)
    except OSError:  # a read-only or full cache: the next process builds it again
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def _prune(path: Path) -> None:
    """Keep the newest _KEEP entries of `path`'s name (never `path` itself)."""
    name = path.name.rsplit("-", 1)[0]
    others = [p for p in path.parent.glob(f"{name}-*.marshal") if p != path]
    if len(others) < _KEEP:
        return
    for old in sorted(others, key=_age)[:len(others) - _KEEP + 1]:
        old.unlink(missing_ok=True)


def _age(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another process
        return 0.0


def source_key(*parts: bytes | str) -> str:
    """The hex sha256 of `parts` (each length-prefixed, so no two lists of parts give the same bytes)."""
    h = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)
    return h.hexdigest()
