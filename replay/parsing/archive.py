"""Archives of log folders (.tar, .tar.gz/.tgz, .zip): listed, opened member by member, and the
RM's files of one unpacked, so every command reads an archive exactly as the folder it packs.

A support bundle is often `tar czf logs.tgz logs/`: the folder is the archive's only top-level
directory (or its root). Its files are classified as a folder's are (`replay.parsing.logdir`):
the RM's rolled set is copied out as stored (a gzip member stays gzipped: the reader gunzips it
as it does in a folder), every other member is named and skipped, unread past its first
megabyte. The copy lives in the cache (`$RMREPLAY_CACHE/archives/`, keyed by the archive's path,
size, modification time and inode, as the parse cache's digests are), so it is made once.
`fleet` reads its archives through the same functions (`members`, `open_members`, `sizes`).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
import uuid
import zipfile
import zlib
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import IO

from replay.parsing.chunks import SNIFF_BYTES
from replay.parsing.digest import cache_root, stat_key
from replay.parsing.sources import InputError

ARCHIVES = (".tar.gz", ".tgz", ".tar", ".zip")
_READ_ERRORS = (OSError, tarfile.TarError, zipfile.BadZipFile, EOFError, zlib.error)
_DONE = "archive.json"  # written last in an unpacked copy: the members skipped, and why


def is_archive(path: str | Path) -> bool:
    """Whether `path` is a file named as an archive this reader opens."""
    p = Path(path)
    return p.name.endswith(ARCHIVES) and p.is_file()


def members(path: str | Path) -> list[str]:
    """The regular files of an archive, by name (InputError when it cannot be read)."""
    try:
        if str(path).endswith(".zip"):
            with zipfile.ZipFile(path) as zf:
                return sorted(i.filename for i in zf.infolist() if not i.is_dir())
        with tarfile.open(path) as tf:
            return sorted(m.name for m in tf.getmembers() if m.isfile())
    except _READ_ERRORS as exc:
        raise InputError(f"{path}: cannot read the archive ({exc}); re-copy it or unpack it") from exc


def open_members(archive: str | Path, names: Sequence[str]) -> Iterator[tuple[str, IO[bytes]]]:
    """(member, binary file object) of each of `names`, in that order."""
    if str(archive).endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            for name in names:
                with zf.open(name) as zipped:
                    yield name, zipped
        return
    with tarfile.open(archive) as tf:
        for name in names:
            tarred = tf.extractfile(name)
            if tarred is None:
                raise InputError(f"{archive}: {name} is not a regular file")
            with tarred:
                yield name, tarred


def sizes(archive: str | Path) -> dict[str, int]:
    """Each member's size as stored."""
    if str(archive).endswith(".zip"):
        with zipfile.ZipFile(archive) as zf:
            return {i.filename: i.file_size for i in zf.infolist()}
    with tarfile.open(archive) as tf:
        return {m.name: m.size for m in tf.getmembers()}


def _root(names: Sequence[str]) -> str:
    """The folder the archive packs: its only top-level directory, or its root ("")."""
    tops = {PurePosixPath(n).parts[0] for n in names}
    if len(tops) == 1 and all(len(PurePosixPath(n).parts) > 1 for n in names):
        return next(iter(tops)) + "/"
    return ""


def _sniff(fh: IO[bytes]) -> tuple[bytes, bytes]:
    """(the raw bytes read, the first megabyte of the text): a gzip member is gunzipped as far as it goes."""
    raw = fh.read(SNIFF_BYTES)
    if raw[:2] != b"\x1f\x8b":
        return raw, raw
    try:
        return raw, zlib.decompressobj(31).decompress(raw, SNIFF_BYTES)
    except zlib.error:
        return raw, b""


Classify = Callable[[str, bytes], str | None]  # (file name, first megabyte) -> why it is skipped (None: the RM's)


def unpack(archive: Path, classify: Classify) -> tuple[Path, list[tuple[str, str]], int]:
    """The folder holding the RM's files of `archive` (made once, in the cache), the members
    skipped (name, what it is) and the subfolders not read."""
    key = hashlib.sha256(json.dumps([str(archive.resolve()), *stat_key(archive)]).encode()).hexdigest()[:32]
    home = cache_root() / "archives" / key
    if (home / _DONE).exists():
        done = json.loads((home / _DONE).read_text())
        return home / "files", [(str(a), str(b)) for a, b in done["skipped"]], done["subfolders"]
    tmp = home.with_name(f"{key}.{uuid.uuid4().hex}.tmp")
    try:
        skipped, subfolders = _copy_out(archive, classify, tmp / "files")
        (tmp / _DONE).write_text(json.dumps({"archive": str(archive), "skipped": skipped, "subfolders": subfolders}))
        try:
            os.replace(tmp, home)
        except OSError:  # another process made it first: theirs is the same
            shutil.rmtree(tmp, ignore_errors=True)
    except _READ_ERRORS as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise InputError(f"{archive}: cannot read the archive ({exc}); re-copy it or unpack it") from exc
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return home / "files", [(a, b) for a, b in skipped], subfolders


def _copy_out(archive: Path, classify: Classify, dest: Path) -> tuple[list[list[str]], int]:
    """Copy the RM's files of the archive's folder into `dest`; the others named, the subfolders counted."""
    dest.mkdir(parents=True)
    names = members(archive)
    root = _root(names)
    folder = [n for n in names if n.startswith(root) and "/" not in n[len(root):]]
    subfolders = len({n[len(root):].split("/")[0] for n in names if n.startswith(root) and "/" in n[len(root):]})
    skipped = []
    for name, fh in open_members(archive, folder):
        leaf = PurePosixPath(name).name
        raw, text = _sniff(fh)
        why = classify(leaf, text)
        if why is not None:
            skipped.append([leaf, why])
            continue
        with open(dest / leaf, "wb") as out:
            out.write(raw)
            shutil.copyfileobj(fh, out, 1 << 20)
    skipped.sort()
    return skipped, subfolders
