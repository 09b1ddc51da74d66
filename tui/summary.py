"""The TUI's first screen, kept: what it showed of a parse directory whose audit is stored, read
back by the next `tui` of that directory with the standard library alone (polars, numpy and
pyarrow load after it is drawn, with the whole views, on a thread: tui.app).

A summary is written once a first screen has been drawn from the whole views with the stored
audit's columns filled: the values it drew (the header's, every timeline line, the first cycle's
rows of the jobs view and the status line), taken from those views as drawn, never computed
again. It lives in the input's cache slot, `<slot>/tui/<key>.json`, the key hashing what the
screen depends on besides the tables: their files' digests (`replay.parsing.keys.tables_id`), the
`--config` folder's files, `--rm-release`, rmreplay's version and source (replay, rmref, the
grammars), the TUI's source, polars' version and the directory's name (the header shows it). The
file names the stored audit it shows (`audit`: its key), and is read only while that audit is
stored whole; the audit's key is itself a function of the same inputs, so the summary of another
configuration, release or code is another file, never read in its place. It is written to a
hidden sibling and renamed into place: a reader sees the whole file or none, and a file it cannot
read whole (damaged, another format) is ignored and today's path taken.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from replay.parsing.leftovers import remove_left, temp_name
from replay.parsing.keys import audit_stored, code_fingerprint, config_digest, slot_of, tables_id
from replay.parsing.manifest import rmreplay_version
from replay.parsing.manifest import content_of, parse_dir_manifest
from replay.parsing.sources import InputError

_TMP = ".tmp-"  # a first screen being written: `.tmp-<pid>-<random>.json`, renamed into place

FORMAT = "rmreplay-tui-first/1"
# an audit `rmreplay audit DIR -o DIR` wrote into the parse directory itself: the TUI shows it in
# place of the stored one (tui.load), so such a directory has no summary
AUDIT_FRAMES = ("ref_caps", "ref_counts", "ref_placements", "ref_evictions", "ref_defrag", "divergences", "skipped")


@dataclass(frozen=True)
class FirstScreen:
    """What a first screen showed: the header's cycle, the timeline, the first cycle's jobs, the status."""

    name: str  # the input, as the header names it
    cycle: int  # the first cycle
    total: int  # how many cycles
    epoch: int | None
    when: str  # the cycle's time as the header shows it (tui.widgets.status.stamp)
    timeline: list[str]  # every cycle's line (tui.widgets.tables.timeline_lines)
    columns: list[str]  # the jobs view's columns kept (tui.widgets.tables.JOB_CELL_COLUMNS)
    jobs: list[list[Any]]  # the first cycle's rows of the jobs view, the audit's columns joined in
    status: str  # the status line (tui.data.audit_status)
    audit: str  # the key of the stored audit shown

    def job_rows(self) -> list[dict[str, Any]]:
        """The first cycle's rows of the jobs view, by column."""
        return [dict(zip(self.columns, row)) for row in self.jobs]


def beside(root: Path) -> bool:
    """Does the parse directory hold an audit of its own (`rmreplay audit DIR -o DIR`)?"""
    return all((root / f"{n}.parquet").exists() for n in AUDIT_FRAMES)


@lru_cache(maxsize=1)
def tui_fingerprint() -> str:
    """Digest of the TUI's own source (what the first screen draws, and how)."""
    root = Path(__file__).parent
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.suffix in (".py", ".tcss"):
            h.update(f"{p.relative_to(root).as_posix()}\0".encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def _polars_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("polars")
    except PackageNotFoundError:
        return ""


def summary_path(paths: Sequence[str], use_cache: bool, config: str | None, rm_release: str | None) -> Path | None:
    """Where the first screen of this input is kept (None: an input that has none: logs, no cache,
    a parse directory with an audit of its own)."""
    if not use_cache or len(paths) != 1:
        return None
    root = Path(paths[0])
    try:
        manifest = parse_dir_manifest(root)
        content = content_of(manifest) if manifest is not None else None
        if content is None or beside(root):
            return None
        h = hashlib.sha256()
        # the directory's name too: the header names the input by it
        for part in (FORMAT, rmreplay_version(), code_fingerprint(), tui_fingerprint(), _polars_version(),
                     tables_id(root), root.name, config_digest(config) or "", rm_release or ""):
            h.update(part.encode() + b"\0")
    except (InputError, OSError):
        return None
    return slot_of(content) / "tui" / f"{h.hexdigest()[:40]}.json"


def read(path: Path | None) -> FirstScreen | None:
    """The first screen kept at `path` (`summary_path`); None when it is not there whole, or the
    audit it shows is no longer stored."""
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.pop("format") != FORMAT or data.pop("key") != path.stem:
            return None
        first = FirstScreen(**data)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    # the slot's audits/ (the path is <slot>/tui/<key>.json)
    return first if audit_stored(path.parent.parent / "audits", first.audit) else None


def write(path: Path, first: FirstScreen) -> None:
    """Keep a first screen at `path`, whole or not at all (a hidden sibling renamed into place);
    a cache that cannot be written is left as it is."""
    data: Mapping[str, Any] = {"format": FORMAT, "key": path.stem, **first.__dict__}
    text = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"
    tmp = path.with_name(temp_name(_TMP, ".json"))
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        remove_left(path.parent, _TMP)  # what a process killed between writing and renaming left
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass
