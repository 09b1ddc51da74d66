"""`--config DIR`: the DUCC resources folder checked against the log, and filling a bootstrap it lacks."""

from __future__ import annotations

from collections.abc import MutableMapping
from pathlib import Path

import polars as pl

from replay.model.conflicts import CONFLICTS, belongs, conflicts, with_log_values
from replay.model.release import choose
from replay.model.resources import read_resources
from replay.parsing.sources import InputError
from rmref.behaviours import for_release


def apply_config(tables: MutableMapping[str, pl.DataFrame], config: str | None, force: bool = False) -> str | None:
    """Check `--config DIR` against the log and fill the bootstrap tables from it when the log has
    none (the log's value wins wherever the two differ: replay.model.conflicts); what was done, in
    words, one line per contradiction. InputError when the config is another cluster's, unless `force`."""
    if not config:
        return None
    theirs = read_resources(Path(config))
    foreign = belongs(tables, theirs).foreign()
    if foreign and not force:
        raise InputError(f"--config {config}: this config does not belong to this log: {foreign}; give the "
                         "log's own resources folder, or add --force to use it anyway")
    found = conflicts(tables, theirs, for_release(choose(tables).release.name))
    tables[CONFLICTS] = pl.DataFrame([c.row() for c in found], schema=dict.fromkeys(
        ("setting", "log", "config", "where"), pl.String))
    lines = [f"--config {config} used although it does not belong to this log (--force): {foreign}"] if foreign else []
    lines += [c.text() for c in found]
    if tables["classes"].is_empty() or tables["nodepools"].is_empty():
        tables.update(with_log_values(theirs, tables))
        return "\n".join([*lines, f"bootstrap: from {config} (the log has none)"])
    return "\n".join([*lines, "bootstrap: from the log (it has one; --config not needed)"])
