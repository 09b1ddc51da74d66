"""A DUCC release named on the command line (`--rm-release R`, `--rm java:R`): the release rmreplay
replays it as. Reads no table and loads neither polars nor rmref's scheduler, so a command checks
its options before loading them (the TUI's kept first screen).
"""

from __future__ import annotations

import re

from rmref.releases import RELEASES, Release


def _version_key(text: str) -> tuple[int, ...] | None:
    """A sortable key of a DUCC version ("3.0.1-SNAPSHOT" sorts just before "3.0.1"), None if not one."""
    m = re.fullmatch(r"(\d+)\.(\d+)(?:\.(\d+))?(-\S+)?", text.strip())
    if not m:
        return None
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0), 0 if m.group(4) else 1


def resolve(version: str) -> tuple[Release, str | None]:
    """The release a version is replayed as, and a note when it is not on the list (None when it is).

    Raises ValueError for text that is neither a release name nor a version."""
    for r in RELEASES:
        if version in (r.name, r.banner):
            return r, None
    key = _version_key(version)
    if key is None:
        raise ValueError(f"{version!r} is not a DUCC release; known: {', '.join(r.name for r in RELEASES)}")
    earlier = [r for r in RELEASES if (_version_key(r.banner) or ()) <= key]
    if not earlier:
        return RELEASES[0], (f"{version} is older than every release rmreplay knows: replayed as "
                             f"{RELEASES[0].name}, the oldest")
    chosen = max(earlier, key=lambda r: _version_key(r.banner) or ())
    return chosen, f"{version} is not a release rmreplay knows: replayed as {chosen.name}, the nearest earlier one"
