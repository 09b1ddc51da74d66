"""The manifest of a parse directory (`rmreplay parse -o OUT`, and each parse in the cache).

`OUT/manifest.json` is written last, after every table: its presence is what makes a folder a
parse directory, and it says which tables it holds and what input they came from (the files'
names and the content digest of their bytes, `replay.parsing.cache.content_digest`), so a
command given the folder reads it as it would read the log itself.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path

from replay.parsing.sources import InputError

MANIFEST = "manifest.json"
FORMAT = "rmreplay-parse"
VERSION = 1


@dataclass(frozen=True)
class Manifest:
    """What a parse directory holds: its tables, the input's file names and content digest."""

    tables: tuple[str, ...]
    files: tuple[str, ...]
    content: str | None  # None: the input was not hashed
    format: str = FORMAT
    version: int = VERSION


def write_manifest(out: str | Path, manifest: Manifest) -> Path:
    """Write OUT/manifest.json (call it after every table is written)."""
    path = Path(out) / MANIFEST
    data = asdict(manifest)
    data["tables"], data["files"] = list(manifest.tables), list(manifest.files)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def read_manifest(folder: str | Path) -> Manifest | None:
    """The manifest of a parse directory; None when `folder` is no parse directory (InputError when
    it holds tables without a manifest, or a manifest that cannot be read)."""
    root = Path(folder)
    path = root / MANIFEST
    if not root.is_dir():
        return None
    if not path.exists():
        if (root / "cycles.parquet").exists():
            raise InputError(f"{root}: Parquet tables without a {MANIFEST}: the parse was interrupted, or written by "
                             "an older rmreplay; parse the log again (rmreplay parse LOG -o DIR)")
        return None
    try:
        data = json.loads(path.read_text())
        manifest = Manifest(tuple(data["tables"]), tuple(data["files"]), data.get("content"),
                            data["format"], int(data["version"]))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(f"{path}: not a readable rmreplay manifest ({exc}); parse the log again") from None
    if manifest.format != FORMAT or manifest.version > VERSION:
        raise InputError(f"{path}: a {manifest.format} manifest of version {manifest.version}; this rmreplay reads "
                         f"{FORMAT} version {VERSION}: parse the log again")
    missing = [t for t in manifest.tables if not (root / f"{t}.parquet").exists()]
    if missing:
        raise InputError(f"{root}: the manifest lists {', '.join(missing)} but the folder lacks "
                         f"{'it' if len(missing) == 1 else 'them'}; parse the log again")
    return manifest
