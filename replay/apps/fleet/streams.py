"""A fleet's sources: clusters (directories or archives), their RM streams, and a stream's bytes.

A source is one cluster: `name=PATH` or PATH (the cluster is then the directory's or archive's
name). Every rolled set in it (files sharing a log4j base name in one folder: rm.log, rm.log.1,
rm.log.2.gz, ...) is one stream, named by its folder and base name (`rm.log`, `head2/rm.log`).
Archives (.tar, .tar.gz, .tgz, .zip) are read in place, member by member, by the task that
parses the stream, so a remote worker needs only the archive's path.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from replay.parsing import archive
from replay.parsing.archive import ARCHIVES
from replay.parsing.logdir import DAEMONS
from replay.parsing.sources import InputError, log_name, rolled_key, unpacked_size

_CLUSTER_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*$")  # a letter first: hive readers type "2023" as a number


@dataclass(frozen=True)
class Stream:
    """One RM stream of a cluster: its files oldest first, each a path inside `container` (a
    directory, or an archive read in place)."""

    cluster: str
    name: str
    container: str
    members: tuple[str, ...]

    @property
    def key(self) -> str:
        """`cluster/stream`, unique in a fleet."""
        return f"{self.cluster}/{self.name}"

    @property
    def archived(self) -> bool:
        """Whether the files are members of an archive."""
        return self.container.endswith(ARCHIVES)


def cluster_of(source: str) -> tuple[str, Path]:
    """(cluster name, path) of a SOURCES argument: `name=PATH`, or PATH named after itself."""
    name, sep, path = source.partition("=")
    if not sep:
        name, path = "", source
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file or directory; give a cluster's log directory or archive")
    if p.is_file() and not p.name.endswith(ARCHIVES):
        raise InputError(f"{path}: not a directory or an archive ({', '.join(ARCHIVES)}); "
                         "give one cluster's log directory")
    name = name or _strip_archive(p.resolve().name)
    if not _CLUSTER_NAME.match(name):
        raise InputError(f"{source}: cluster name {name!r} must start with a letter, then letters, digits, '.', "
                         "'_' or '-' (it names a dataset folder); give one as NAME=PATH")
    return name, p


def _strip_archive(name: str) -> str:
    return next((name[: -len(ext)] for ext in ARCHIVES if name.endswith(ext)), name)


# the RM's own logs: rm.log, <host>.rm.log (DUCC 2.x), and the DEBUG copy a site may keep beside them
_RM_BASE = re.compile(r"^(?:.+\.)?rm(?:-debug)?\.log$")


@dataclass(frozen=True)
class Skipped:
    """A rolled set of a cluster's folder that is not an RM stream to read, and why."""

    cluster: str
    name: str
    members: tuple[str, ...]
    reason: str


def _not_rm(base: str) -> str | None:
    """Why a rolled set named `base` is not the RM's (None: it is)."""
    if _RM_BASE.match(base):
        return None
    daemon = DAEMONS.get(base.split(".")[0].split("-")[0].upper())
    return f"not the RM's log: {daemon} log" if daemon else "not the RM's log (its name is not rm.log)"


def _twin(folder: str, base: str, bases: set[tuple[str, str]]) -> str | None:
    """The INFO stream a DEBUG rolled set repeats in the same folder (rm-debug.log beside rm.log)."""
    info = base.replace("rm-debug.log", "rm.log")
    return info if info != base and (folder, info) in bases else None


def streams_of(source: str) -> list[Stream]:
    """Every RM stream of one cluster, in name order."""
    return split_streams(source)[0]


def split_streams(source: str) -> tuple[list[Stream], list[Skipped]]:
    """Every RM stream of one cluster, in name order, and the rolled sets left out (other daemons'
    logs; a DEBUG copy of an RM stream read at INFO), each with the reason."""
    cluster, path = cluster_of(source)
    members = _archive_members(path) if path.is_file() else _dir_members(path)
    families: dict[tuple[str, str], list[str]] = {}
    for member in members:
        folder, leaf = str(PurePosixPath(member).parent), PurePosixPath(member).name
        if log_name(leaf):
            families.setdefault((folder, rolled_key(leaf)[0]), []).append(member)
    if not families:
        raise InputError(f"{path}: holds no *.log, *.log.N or *.log.gz file; give a cluster's log directory")
    out, left = [], []
    for (folder, base), files in sorted(families.items()):
        files.sort(key=lambda m: rolled_key(PurePosixPath(m).name)[1])  # oldest first
        name = base if folder == "." else f"{folder}/{base}"
        twin = _twin(folder, base, set(families))
        why = _not_rm(base) or (f"the same RM stream as {twin}, logged at DEBUG: {twin} is read" if twin else None)
        if why:
            left.append(Skipped(cluster, name, tuple(files), why))
        else:
            out.append(Stream(cluster, name, str(path.resolve()), tuple(files)))
    if not out:
        raise InputError(f"{path}: holds no RM log (rm.log, rm.log.N, .gz) among its *.log files; give a cluster's "
                         "log directory")
    return out, left


def fleet_streams(sources: list[str]) -> list[Stream]:
    """The streams of every source; two sources may not share a cluster name."""
    return fleet_sources(sources)[0]


def fleet_sources(sources: list[str]) -> tuple[list[Stream], list[Skipped]]:
    """The streams of every source and the rolled sets left out; two sources may not share a cluster name."""
    out: list[Stream] = []
    left: list[Skipped] = []
    seen: dict[str, str] = {}
    for source in sources:
        cluster, _ = cluster_of(source)
        if cluster in seen:
            raise InputError(f"{source}: cluster {cluster!r} is also {seen[cluster]}; name one NAME=PATH")
        seen[cluster] = source
        streams, skipped = split_streams(source)
        out += streams
        left += skipped
    return out, left


def _dir_members(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root).as_posix()) for p in root.rglob("*") if p.is_file())


def _archive_members(path: Path) -> list[str]:
    return archive.members(path)


def open_members(stream: Stream) -> Iterator[tuple[str, IO[bytes]]]:
    """(member, binary file object) of each of the stream's files, oldest first."""
    if not stream.archived:
        for member in stream.members:
            with open(Path(stream.container) / member, "rb") as fh:
                yield member, fh
        return
    yield from archive.open_members(stream.container, stream.members)


def content_hash(stream: Stream) -> str:
    """A hash of the stream's bytes, file by file, as stored (BLAKE2b, 128 bits, hex)."""
    h = hashlib.blake2b(digest_size=16)
    for _member, fh in open_members(stream):
        size = 0
        while block := fh.read(1 << 20):
            h.update(block)
            size += len(block)
        h.update(size.to_bytes(8, "little"))  # file boundaries count: a byte moved between files is a change
    return h.hexdigest()


def local_files(stream: Stream, scratch: Path) -> list[Path]:
    """The stream's files on this machine: in place for a directory, unpacked under `scratch` for
    an archive (member names kept, so the rolled order and .gz reading still apply)."""
    if not stream.archived:
        return [Path(stream.container) / m for m in stream.members]
    out = []
    scratch.mkdir(parents=True, exist_ok=True)
    for member, fh in open_members(stream):
        dest = scratch / PurePosixPath(member).name  # one folder's files: their names differ
        with open(dest, "wb") as out_fh:
            shutil.copyfileobj(fh, out_fh, 1 << 20)
        out.append(dest)
    return out


def expected_bytes(stream: Stream) -> int:
    """About the stream's size once unpacked, for a progress bar: each file's
    (`unpacked_size`); an archive's members as stored."""
    if stream.archived:
        return sum(_archive_sizes(stream.container).get(m, 0) for m in stream.members)
    return sum(unpacked_size(Path(stream.container) / member) for member in stream.members)


def _archive_sizes(path: str) -> dict[str, int]:
    return archive.sizes(path)
