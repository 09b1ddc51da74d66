"""Which input a command was given, and whether it can be read, without reading its tables.

A command's input is a parse directory (`rmreplay parse -o`), the output folder of an `audit`,
`whatif` or `simulate` (read as the log it was made from, through the parse cache), or logs. Telling
them apart takes the manifests and the file names alone, so this module loads neither polars nor
pyarrow: the TUI checks its input with it before it takes over the terminal, and a first screen
kept from an earlier run (tui.summary) is then drawn before polars loads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from replay.parsing.keys import slot_of
from replay.parsing.logdir import find_inputs
from replay.parsing.manifest import content_of, parse_dir_manifest, read_manifest
from replay.parsing.sources import InputError

# the commands whose output folder holds results, not logs: their manifest names the input by digest
_RESULTS = ("audit", "whatif", "simulate")


def results_manifest(path: str | Path) -> dict[str, Any] | None:
    """The manifest of an `audit`, `whatif` or `simulate` output folder; None for anything else."""
    manifest = read_manifest(path) if Path(path).is_dir() else None
    return manifest if manifest is not None and manifest.get("command") in _RESULTS else None


def read_manifest_quietly(folder: Path) -> dict[str, Any] | None:
    """The manifest of a cache slot's tables; None when the slot is absent or damaged (parsed again)."""
    try:
        return parse_dir_manifest(folder)
    except InputError:
        return None


def results_slot(paths: Sequence[str | Path], manifest: Mapping[str, Any], use_cache: bool) -> Path:
    """The cache slot holding the parse of a results folder's input (`paths`: the folder alone); an
    InputError saying what to give instead when the cache no longer holds it (another rmreplay, a
    cleared cache, `--no-cache`)."""
    if len(paths) > 1:
        raise InputError(f"{_not_a_log(paths[0], manifest)}: give it alone, not with other input")
    content = content_of(manifest)
    slot = slot_of(content) if content and use_cache else None
    if slot is None or not read_manifest_quietly(slot / "tables"):
        why = "" if slot is None else ", and its parse is not in the cache"
        raise InputError(f"{_not_a_log(paths[0], manifest)}{why}: give {input_names(manifest)} itself, "
                         "or its `rmreplay parse -o` folder")
    return slot


def input_names(manifest: Mapping[str, Any]) -> str:
    """The input files a manifest names, for a message."""
    record = manifest.get("input")
    files = record.get("files", []) if isinstance(record, dict) else []
    return ", ".join(str(f.get("name")) for f in files if isinstance(f, dict)) or "the log it read"


def _not_a_log(folder: str | Path, manifest: Mapping[str, Any]) -> str:
    return f"{folder} is the output of `rmreplay {manifest['command']}` of {input_names(manifest)}, not a log"


def check_readable(paths: Sequence[str | Path], use_cache: bool = True) -> None:
    """Raise InputError (one line, what to give instead) unless `replay.parsing.cache.open_input`
    can read `paths`; nothing is parsed."""
    if not paths or parse_dir_manifest(paths[0]) is not None:
        return
    made = results_manifest(paths[0])
    if made is None:
        find_inputs(list(paths))
    else:
        results_slot(paths, made, use_cache)
