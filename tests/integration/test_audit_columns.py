"""The audit on only the columns `replay.model.reads` lists, read back from Parquet on use (as
`rmreplay audit` reads a cached parse), decides exactly what it decides on every table whole:
on every bundled log, INFO and DEBUG, whole and cut mid-stream."""

from __future__ import annotations

from pathlib import Path

import pytest

from replay import parse
from replay.apps.audit import audit, result_frames
from replay.model.reads import audit_columns
from replay.model.resources import read_resources
from replay.parsing.store import ParquetSink, ParquetTables
from tests.conftest import FIXTURES, log_path
from tests.midstream import classes_only, cut

NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "truth.jsonl.gz").exists() and p.name != "i_mega24")


def _same_audit(tables: dict, folder: Path, config: dict | None = None) -> None:
    sink = ParquetSink(folder)
    sink.add(tables)
    sink.close()
    lazy = ParquetTables(folder, audit_columns())
    if config:
        tables.update(config)
        lazy.update(config)
    whole, pruned = audit(tables), audit(lazy)
    assert pruned.report() == whole.report()
    for name, frame in result_frames(whole).items():
        assert result_frames(pruned)[name].equals(frame), name


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("name", NAMES)
def test_whole_logs(name, level, tmp_path):
    _same_audit(parse([log_path(name, level)]).tables, tmp_path / "t")


@pytest.mark.parametrize("name", ["a_tiny", "d_fragmentation", "h_mega15"])
def test_logs_cut_mid_stream(name, tmp_path):
    """A cut log's nodes are solved for from the RmCounter vectors: those columns must be kept."""
    tables = parse([cut(name, "rm.log", "counter", tmp_path / "cut.log", at=0.6)]).tables
    config = read_resources(classes_only(name, tmp_path / "config"))
    _same_audit(tables, tmp_path / "t", config)
