"""What to read: the RM's log files out of the paths given, a DUCC log folder included.

`$DUCC_HOME/logs` holds every daemon's logs side by side (rm.log*, or.log*, pm.log*, sm.log*,
ws.log*, …, or `<host>.rm.log*` in newer releases). A folder is read as the RM's rolled set only
(`rm.log`, `rm.log.N`, `.gz` of either; log4j order: the highest N is the oldest); every other
file is named as ignored, with what it is. Each file is told by its records, not by its name: the
logger of every log4j header names the daemon (`RM.Scheduler`, `OR.OrchestratorComponent`, …).
What cannot be read as one stream is refused: two RM logs that are not one rolled set (rm.log
beside rm-debug.log), a member present twice with different content (rm.log.2 and rm.log.2.gz),
a file that cannot be read. Time order across files is checked while reading
(`replay.parsing.chunks.stream_chunks`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from replay.parsing.archive import is_archive, unpack
from replay.parsing.chunks import SNIFF_BYTES, read_blocks
from replay.parsing.manifest import MANIFEST, input_record_of, parse_dir_manifest, read_manifest
from replay.parsing.sources import InputError, Source, discover, rolled_key

# the RM's rolled set: rm.log, rm.log.3, rm.log.3.gz, rm.log.gz, and <host>.rm.log… (DUCC 2.x)
RM_SET = re.compile(r"^(?:(?P<host>.+)\.)?rm\.log(?:\.(?P<n>\d+))?(?P<gz>\.gz)?$")
_LOGGER = re.compile(rb"^\d\d [A-Z][a-z][a-z] \d{4} \d\d:\d\d:\d\d,\d{3} +(?:TRACE|DEBUG|INFO|WARN|ERROR|FATAL) +"
                     rb"(\S*)\.[^\s.]+ +- ", re.MULTILINE)
_HEADER = re.compile(rb"^\d\d [A-Z][a-z][a-z] \d{4} \d\d:\d\d:\d\d,\d{3} ", re.MULTILINE)
# the COMPONENT of DUCC's log4j layout, per daemon (DuccLogger.getLogger(..., "OR") and kin)
DAEMONS = {
    "OR": "the Orchestrator's", "PM": "the Process Manager's", "SM": "the Service Manager's",
    "WS": "the Web Server's", "JD": "a Job Driver's", "JP": "a job process's", "DB": "the database's",
    "AG": "an Agent's", "Agent": "an Agent's", "CLI": "a DUCC command's",
}


@dataclass(frozen=True)
class Ignored:
    """A file of a folder that is not read, and what it is."""

    path: Path
    what: str


@dataclass(frozen=True)
class Inputs:
    """The RM's files to read, oldest first, and what was left out of the folders given."""

    sources: list[Source]
    ignored: list[Ignored]
    missing: list[str]  # rolled members absent from the middle of a set (a gap in the stream)

    def note(self) -> str | None:
        """One line on what was left out (None: nothing was)."""
        parts = []
        if self.ignored:
            parts.append("ignored " + ", ".join(f"{i.path.name} ({i.what})" for i in self.ignored))
        if self.missing:
            parts.append(f"missing from the rolled set: {', '.join(self.missing)} (the stream has a gap there)")
        return "; ".join(parts) or None


@dataclass(frozen=True)
class Head:
    """What the start of a file says about it."""

    empty: bool
    headers: bool  # it has DUCC log4j header lines
    daemon: str | None  # the most common COMPONENT of its headers; "RM" as soon as one is the RM's


def head(source: Source) -> Head:
    """Classify a file by its first megabyte (InputError when it cannot be read)."""
    return head_of(next(read_blocks(source, SNIFF_BYTES), b""))


def head_of(data: bytes) -> Head:
    """Classify a file by its first megabyte, read (and gunzipped)."""
    if not data.strip():
        return Head(True, False, None)
    components: Counter[str] = Counter()
    for m in _LOGGER.finditer(data):
        component = m.group(1).decode("ascii", "replace")
        if component == "RM":  # the RM's log: nothing further changes the answer (a megabyte's scan: 8 ms)
            return Head(False, True, "RM")
        components[component] += 1
    daemon = components.most_common(1)[0][0] if components else None
    return Head(False, bool(components) or bool(_HEADER.search(data)), daemon)


def input_record(paths: Sequence[str | Path]) -> dict[str, Any] | None:
    """A manifest's `input`: every input file, as the commands read them, with its size and sha256
    (a parse directory given as input: the input its own manifest names)."""
    paths = list(paths)
    if not paths:
        return None
    if len(paths) == 1 and Path(paths[0]).is_dir() and (Path(paths[0]) / MANIFEST).exists():
        return (read_manifest(paths[0]) or {}).get("input")
    return input_record_of(find_inputs(paths).sources)


def whose(daemon: str | None) -> str:
    """'the Orchestrator's' for OR, and so on."""
    return DAEMONS.get(daemon or "", f"DUCC component {daemon}'s" if daemon else "no DUCC daemon's")


def find_inputs(paths: Sequence[str | Path]) -> Inputs:
    """The RM's files among `paths` (files or DUCC log folders), oldest first.

    InputError (one line, naming the files) for a file that is another daemon's log, a folder
    with no RM log or with two RM logs that are not one rolled set, a member present twice with
    different content, a file that cannot be read."""
    files: list[Path] = []
    heads: dict[Path, Head] = {}  # every file's, read once
    from_folders: set[Path] = set()  # classified with their folder
    ignored: list[Ignored] = []
    missing: list[str] = []
    for raw in paths:
        p = Path(raw)
        if is_archive(p):
            found, left, gaps = _archive(p, heads)
            files += found
            from_folders.update(found)
            ignored += left
            missing += gaps
            continue
        if p.is_dir() and parse_dir_manifest(p) is not None:
            raise InputError(f"{p}: a `rmreplay parse -o` directory, already parsed: give it to audit, explain, "
                             "whatif, check, report or tui in place of the log")
        if p.is_dir():
            found, left, gaps = _folder(p, heads)
            files += found
            from_folders.update(found)
            ignored += left
            missing += gaps
        else:
            files += [s.path for s in discover([p])]
    sources = discover(files)
    for src in sources:
        if src.path not in heads:
            heads[src.path] = head(src)
        h = heads[src.path]
        if src.path in from_folders or h.empty:
            continue
        if not h.headers:
            raise InputError(f"{src.path}: not an rm.log: no line has the DUCC log header "
                             "'dd Mon yyyy hh:mm:ss,SSS LEVEL RM.Class - JID T[tid] METHOD ...'")
        if h.daemon not in (None, "RM"):
            raise InputError(f"{src.path}: this is {whose(h.daemon)} log ({src.name}), not the RM's; give the "
                             "RM's log (rm.log, rm.log.N, .gz) or the folder that holds it")
    if all(heads[s.path].empty for s in sources):
        raise InputError(f"{', '.join(str(s.path) for s in sources)}: empty input (no log lines); "
                         "check that the right file was given")
    return Inputs(sources, ignored, missing)


def _folder(folder: Path, heads: dict[Path, Head]) -> tuple[list[Path], list[Ignored], list[str]]:
    """The RM's rolled set in a folder, what else is there, and the members missing from the set
    (`heads`: each file's, filled in)."""
    streams: dict[str, list[Path]] = {}  # RM logs by rolled base name (rm.log, head.rm.log, rm-debug.log)
    ignored: list[Ignored] = []
    subfolders = 0
    for p in sorted(folder.iterdir()):
        if p.is_dir():
            subfolders += 1
            continue
        if not p.is_file():
            if p.is_symlink():
                raise InputError(f"{p}: a broken link in the folder; cannot tell whether it is part of the RM's "
                                 "log: mend or remove it, or name the RM's files")
            ignored.append(Ignored(p, "not a regular file"))
            continue
        try:
            h = heads[p] = head(Source(p, p.name))
        except InputError as exc:
            raise InputError(f"{exc} (in the log folder {folder}: cannot tell whether it is the RM's; fix it, "
                             "move it out, or name the RM's files)") from None
        _named_but_not(p, h)
        what = skipped_as(p.name, h)
        if what is None:  # an empty rm.log: just rolled over
            streams.setdefault(_base(p.name), []).append(p)
        else:
            ignored.append(Ignored(p, what))
    return _rolled_set(folder, streams, ignored, subfolders)


def skipped_as(name: str, h: Head) -> str | None:
    """What a folder's file is when it is not the RM's log (None: it is, or is named so)."""
    if h.daemon == "RM" or RM_SET.match(name):
        return None
    if h.empty:
        return "empty"
    if h.daemon is None:
        return "a DUCC log naming no daemon" if h.headers else "not a DUCC log"
    return f"{whose(h.daemon)} log"


def _rolled_set(folder: Path, streams: dict[str, list[Path]], ignored: list[Ignored],
                subfolders: int) -> tuple[list[Path], list[Ignored], list[str]]:
    """The folder's one rolled set, oldest first, what else it holds, and the members missing."""
    if subfolders:
        ignored.append(Ignored(folder / f"{subfolders} folder(s)", "not read: name them to read them"))
    if not streams:
        held = [f"{i.path.name} ({i.what})" for i in ignored]
        more = f" and {len(held) - 10} more" if len(held) > 10 else ""
        seen = f"; it holds {', '.join(held[:10])}{more}" if held else ""
        raise InputError(f"{folder}: no RM log here (rm.log, rm.log.N or .gz of either, holding RM records){seen}")
    if len(streams) > 1:
        names = " and ".join(f"{base}{_more(len(m))}" for base, m in sorted(streams.items()))
        raise InputError(f"{folder}: two RM logs that are not one rolled set: {names}; they cannot be read as one "
                         "stream: name the files of one of them")
    members, copies = _dedupe(next(iter(streams.values())))
    ordered = [s.path for s in discover(members)]
    return ordered, ignored + copies, _gaps(ordered)


def _archive(archive: Path, heads: dict[Path, Head]) -> tuple[list[Path], list[Ignored], list[str]]:
    """An archive of a log folder, read as the folder (replay.parsing.archive): its RM files
    (copied out once, each classified again as a folder's), the members skipped, the rolled
    members missing."""
    folder, skipped, subfolders = unpack(archive, lambda name, data: skipped_as(name, head_of(data)))
    streams: dict[str, list[Path]] = {}
    try:
        for p in sorted(folder.iterdir()):
            h = heads[p] = head(Source(p, p.name))
            _named_but_not(p, h)
            streams.setdefault(_base(p.name), []).append(p)
        return _rolled_set(archive, streams, [Ignored(archive / n, what) for n, what in skipped], subfolders)
    except InputError as exc:  # name the archive, not the copy
        raise InputError(str(exc).replace(str(folder), str(archive))) from None


def _named_but_not(p: Path, h: Head) -> None:
    """InputError for a file named as the RM's log that holds another daemon's or none."""
    if RM_SET.match(p.name) and not h.empty and h.daemon != "RM":
        what = f"it is {whose(h.daemon)} log" if h.daemon else "it holds no RM record"
        raise InputError(f"{p}: named as the RM's log but {what}; move it out of the folder, or name the "
                         "RM's files")


def _base(name: str) -> str:
    """The rolled set a file belongs to: rm.log for rm.log.3.gz, rm-debug.log for rm-debug.log.1."""
    return rolled_key(name)[0].removesuffix(".gz")


def _more(n: int) -> str:
    return f" (+{n - 1} rolled)" if n > 1 else ""


def _dedupe(members: list[Path]) -> tuple[list[Path], list[Ignored]]:
    """One file per rolled member: a plain file and its .gz read the same are one (the plain one is
    read); read differently, they are two streams and refused."""
    by_member: dict[str, list[Path]] = {}
    for p in members:
        by_member.setdefault(p.name.removesuffix(".gz"), []).append(p)
    keep, copies = [], []
    for same in by_member.values():
        same.sort(key=lambda p: p.name.endswith(".gz"))
        first, *others = same
        for other in others:
            if not _same_content(first, other):
                raise InputError(f"{first} and {other} hold different logs: they cannot both be the RM's "
                                 f"{first.name}; remove one, or name the files to read")
            copies.append(Ignored(other, f"the same as {first.name}"))
        keep.append(first)
    return keep, copies


def _same_content(a: Path, b: Path) -> bool:
    """Whether two files (either gzipped) hold the same bytes."""
    left, right = read_blocks(Source(a, a.name), 1 << 20), read_blocks(Source(b, b.name), 1 << 20)
    x = y = b""
    while True:
        if not x:
            x = next(left, b"")
        if not y:
            y = next(right, b"")
        if not x or not y:
            return not x and not y
        n = min(len(x), len(y))
        if x[:n] != y[:n]:
            return False
        x, y = x[n:], y[n:]


def _gaps(ordered: list[Path]) -> list[str]:
    """Rolled members absent between the oldest one present and rm.log."""
    have = {int(m.group("n") or 0) for p in ordered if (m := RM_SET.match(p.name))}
    if not have:
        return []
    base = ordered[-1].name.removesuffix(".gz")
    base = re.sub(r"\.\d+$", "", base)
    return [f"{base}.{n}" for n in range(1, max(have)) if n not in have]
