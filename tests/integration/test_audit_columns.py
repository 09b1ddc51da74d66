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


RULE_LOGS = ["releases/3.0.0/pool_rule/rm.log.gz", "releases/3.0.0/pool_rule/rm-debug.log.gz",
             "cuts/rule_taken/rm.log.gz", "cuts/rule_taken/rm-debug.log.gz"]


@pytest.mark.parametrize("path", RULE_LOGS)
def test_node_rule_logs(path, tmp_path):
    """A node rule's rounds name a host by its short name, and a cut 3.0.0 log is told by a message's
    text (getNodepoolByName's `add by rule`): the release inferred, and so every decision, are the
    same on the audit's columns as on every table whole."""
    log = FIXTURES / path
    config = read_resources(log.parent / "resources") if (log.parent / "resources").is_dir() else None
    tables = parse([log]).tables
    _same_audit(dict(tables), tmp_path / "t", config)
    # a first, uncached run holds the audit's columns in memory (replay.parsing.pipeline.MemorySink)
    whole, kept = dict(tables), _audit_columns_only(tables)
    if config:
        whole.update(config)
        kept.update(config)
    assert audit(kept).report() == audit(whole).report()


def _audit_columns_only(tables: dict) -> dict:
    """The tables as a first run holds them for an audit: only the columns `audit_columns` lists."""
    return {name: tables[name].select(cols) for name, cols in audit_columns().items() if name in tables}


def test_config_conflicts_on_the_audit_columns(tmp_path):
    """--config's node files and rules are weighed against the log's mapping on the audit's columns
    (a cached parse) as on every table whole: no conflict under 3.0.0, whose last rule's pool takes
    the hosts no rule matches, as the real RM did (truth.jsonl: every host in rx)."""
    from replay.model.conflicts import conflicts
    from rmref.behaviours import for_release

    tables = parse([FIXTURES / "cuts/rule_taken/rm.log.gz"]).tables
    sink = ParquetSink(tmp_path / "t")
    sink.add(tables)
    sink.close()
    lazy = ParquetTables(tmp_path / "t", audit_columns())
    config = read_resources(FIXTURES / "cuts/rule_taken/resources")
    for release, expected in (("3.0.0", []), ("trunk", None)):
        whole = conflicts(tables, config, for_release(release))
        assert conflicts(lazy, config, for_release(release)) == whole
        assert conflicts(_audit_columns_only(tables), config, for_release(release)) == whole
        if expected is not None:
            assert whole == expected
