"""A log parsed with the tables' compiled builders and the reference way, for tests that hold one to
the other: which calls of a builder built something, and both parses' tables."""

from __future__ import annotations

from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from replay.parsing import columns
from replay.parsing.pipeline import parse


@dataclass(frozen=True)
class Both:
    """The tables of one log parsed with the compiled builders and without any (the reference)."""

    compiled: dict[str, pl.DataFrame]
    reference: dict[str, pl.DataFrame]
    built: list[bool]  # per call of the spied builder: whether it built something (not None)

    def table(self, name: str) -> tuple[pl.DataFrame, pl.DataFrame, int]:
        """One table both ways, and how many calls built it."""
        return self.compiled[name], self.reference[name], sum(self.built)


def both_ways(paths: Sequence[str | Path], owner: Any, name: str, chunk_bytes: int | None = None) -> Both:
    """Parse `paths` with the compiled builders, spying on `owner.name` (or `owner[name]`, a
    mapping), then with none (columns.COMPILED_TABLES empty: the polars steps and the grammar)."""
    built: list[bool] = []
    mapping = isinstance(owner, MutableMapping)
    real: Callable[..., Any] = owner[name] if mapping else getattr(owner, name)

    def spy(*args: Any) -> Any:
        got = real(*args)
        built.append(got is not None)
        return got

    files = [str(p) for p in paths]
    with pytest.MonkeyPatch.context() as m:
        (m.setitem if mapping else m.setattr)(owner, name, spy)
        compiled = parse(files, chunk_bytes=chunk_bytes).tables
        m.setattr(columns, "COMPILED_TABLES", {})
        reference = parse(files, chunk_bytes=chunk_bytes).tables
    return Both(compiled, reference, built)
