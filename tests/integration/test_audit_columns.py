"""The audit on only the columns `replay.model.reads` lists, read back from Parquet on use (as
`rmreplay audit` reads a cached parse), decides exactly what it decides on every table whole:
on every bundled log, INFO and DEBUG, whole and cut mid-stream."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from replay import parse
from replay.apps.audit import audit, result_frames
from replay.model.reads import audit_columns
from replay.model.resources import read_resources
from replay.parsing.store import ParquetSink, ParquetTables
from tests.helpers import CORPUS, FIXTURES, log_path
from rmref import Phases, how_much
from tests.midstream import classes_only, cut

NAMES = sorted(p.name for p in FIXTURES.iterdir() if (p / "truth.jsonl.gz").exists() and p.name != "i_mega24")


def _same_audit(tables: dict, folder: Path, config: dict | None = None, phases: Phases = Phases()) -> None:
    sink = ParquetSink(folder)
    sink.add(tables)
    sink.close()
    lazy = ParquetTables(folder, audit_columns())
    if config:
        tables.update(config)
        lazy.update(config)
    whole, pruned = audit(tables, phases=phases), audit(lazy, phases=phases)
    assert pruned.report() == whole.report()
    for name, frame in result_frames(whole).items():
        assert result_frames(pruned)[name].equals(frame), name


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
@pytest.mark.parametrize("name", NAMES)
def test_whole_logs(name, level, tmp_path):
    _same_audit(parse([log_path(name, level)]).tables, tmp_path / "t")


@pytest.mark.parametrize("name", CORPUS)
def test_the_oracle_corpus(name, tmp_path):
    """The shrunk scenarios exercise rules the bundled logs do not (stale free space, purges)."""
    _same_audit(parse([log_path(name, "rm.log")]).tables, tmp_path / "t")


@pytest.mark.parametrize("name", ["a_tiny", "d_fragmentation", "h_mega15"])
def test_logs_cut_mid_stream(name, tmp_path):
    """A cut log's nodes are solved for from the RmCounter vectors: those columns must be kept."""
    tables = parse([cut(name, "rm.log", "counter", tmp_path / "cut.log", at=0.6)]).tables
    config = read_resources(classes_only(name, tmp_path / "config"))
    _same_audit(tables, tmp_path / "t", config)


def _one_more(*args, **kwargs):
    """How Much, with one more process for the first job counted: a divergence to explain."""
    decided = how_much(*args, **kwargs)
    first = min(decided.counts, default=None)
    return decided if first is None else replace(decided, counts={**decided.counts, first: decided.counts[first] + 1})


@pytest.mark.parametrize("name", ["b_classes", "g_reservations_services"])
def test_divergences_are_explained_from_the_same_columns(name, tmp_path):
    """A divergence's explanation reads more of the log (the RmCounter blocks' weights, wants and gifts)."""
    tables = parse([log_path(name, "rm.log")]).tables
    _same_audit(tables, tmp_path / "t", phases=Phases(how_much=_one_more))
