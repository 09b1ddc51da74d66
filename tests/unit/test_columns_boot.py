"""The boot tables' rows typed in C per chunk (replay.parsing.columns_boot) against the reference
(rows_of, compact, then steps.config / classes / nodepools): hand-worked rows from the fixtures'
bootstrap text, and one test per way a chunk goes the reference way."""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import assemble, builders, columns_boot
from tests.compiled import both_ways

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
BOOT = ("config", "classes", "nodepools")
JD_HOST = "jd.host.class="


def _bootstrap(name: str) -> list[str]:
    """A fixture's log lines, up to the end of its bootstrap."""
    path = FIXTURES / name / "rm.log"
    text = path.read_text() if path.exists() else gzip.open(f"{path}.gz", "rt").read()
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if "reserve overage" in line)
    return lines[:end + 1]


def _write(tmp_path: Path, lines: list[str], name: str = "rm.log") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def _both(paths: list[Path], tables: tuple[str, ...] = BOOT) -> tuple[dict[str, pl.DataFrame], list[bool]]:
    """The boot tables (`tables`) with their rows typed in C, checked equal to the reference's, and
    per block of rows whether C typed it."""
    both = both_ways(paths, columns_boot, "boot_rows")
    for name in tables:
        assert_frame_equal(both.compiled[name], both.reference[name], check_exact=True)
    return both.compiled, both.built


def _line(lines: list[str], text: str) -> int:
    return next(i for i, line in enumerate(lines) if line.endswith(text)) + 1


def test_a_tiny_bootstrap_typed_in_c(tmp_path):
    lines = _bootstrap("a_tiny")
    tables, built = _both([_write(tmp_path, lines)])
    assert built == [True, True]  # _config_lines, _nodepool_lines
    assert tables["nodepools"].rows() == [
        ("--default--", None, 100, 4, "None", None,
         "background low normal high weekly urgent standalone fixed debug JobDriver reserve".split(), None, None,
         "rm.log", 1)]
    config = dict(tables["config"].select("key", "value").rows())
    assert config["default reserve"] == "reserve"
    assert config["scheduler"] == "org.apache.uima.ducc.rm.scheduler.NodepoolScheduler"
    assert config["reserved DRAM"] == "0  GB"
    assert config["jd.host"] == "jd.host.class=JobDriver jd.host.user=System"  # "ResourceClass  jd.host.class=..."
    background = tables["classes"].filter(pl.col("name") == "background").row(0, named=True)
    assert background == {
        "name": "background", "policy": "FAIR_SHARE", "priority": 10, "weight": 1, "nodepool": "--default--",
        "init_cap": 1, "expand_by_doubling": True, "prediction": True, "prediction_fudge": 120000, "enforce": True,
        "max_allotment": None, "cap": "2147483647", "debug": "debug", "authorized_users": None,
        "file": "rm.log", "line": _line(lines, "printClass  Class background")}


def test_b_classes_class_properties_and_table_row(tmp_path):
    lines = _bootstrap("b_classes")
    tables, built = _both([_write(tmp_path, lines)])
    assert built == [True, True]
    high = tables["classes"].filter(pl.col("name") == "high").row(0, named=True)
    # "Weight : 200", "Initialization Cap : 2" and the initClasses row "high FAIR_SHARE 10 200 ..."
    assert (high["policy"], high["priority"], high["weight"], high["init_cap"], high["nodepool"]) == (
        "FAIR_SHARE", 10, 200, 2, "--default--")
    assert high["line"] == _line(lines, "printClass  Class high")
    assert tables["classes"]["name"].to_list() == sorted(
        "background high low normal urgent JobDriver debug fixed reserve".split())


def test_c_nodepools_tree(tmp_path):
    lines = _bootstrap("c_nodepools")
    tables, built = _both([_write(tmp_path, lines)])
    assert built == [True, True]
    pools = {row[0]: row for row in tables["nodepools"].select(
        "name", "parent", "node_file", "classes", "subpools", "nodes").rows()}
    # each pool's node list, the line under its "Node File:" ("big02 big01 ", "gpu01 gpu02 ")
    assert pools["big"] == ("big", "--default--", "big.nodes", ["normal-big", "reserve-big"], ["gpu"],
                            ["big02", "big01"])
    assert pools["gpu"] == ("gpu", "big", "gpu.nodes", ["normal-gpu", "fixed-gpu"], None, ["gpu01", "gpu02"])
    assert pools["--default--"][1:3] == (None, "None") and pools["--default--"][4] == ["big"]


def test_rows_from_the_regex_path_send_the_chunk_the_reference_way(tmp_path):
    # a JD host line the compiled reader refuses (beyond ASCII) and the regex reads
    lines = [line.replace("=JobDriver", "=J\u00f6bDriver") if JD_HOST in line else line
             for line in _bootstrap("a_tiny")]
    tables, built = _both([_write(tmp_path, lines)])
    assert built == [True]  # the nodepools' rows only: the config's went the reference way
    config = dict(tables["config"].select("key", "value").rows())
    assert config["jd.host"] == "jd.host.class=J\u00f6bDriver jd.host.user=System"


def test_rows_in_two_blocks_go_the_reference_way(tmp_path, monkeypatch):
    lines = _bootstrap("a_tiny")
    half = _line(lines, "printClass  Class JobDriver") - 1
    first, second = _write(tmp_path, lines[:half], "rm.log.1"), _write(tmp_path, lines[half:], "rm.log")
    seen: list[tuple[int, int]] = []
    spy = lambda raw, *a: seen.append(  # noqa: E731
        (len(raw.get("_config_lines", ())), len(raw.get("_nodepool_lines", ())))) or columns_boot.build(raw, *a)
    monkeypatch.setattr(builders, "BUILDERS", tuple(replace(b, build=spy) if b.buckets == columns_boot.BUCKETS else b
                                                    for b in builders.BUILDERS))
    tables, built = _both([first, second])
    # each file is a block: both buckets have rows in both (the pools' classes are created after
    # the class section), so neither is typed in C
    assert seen[0] == (2, 2) and built == []
    assert tables["classes"]["name"].to_list() == sorted(
        "background low normal high weekly urgent standalone fixed debug JobDriver reserve".split())


def test_a_span_typed_in_c_refuses_goes_the_reference_way(tmp_path, monkeypatch):
    monkeypatch.setattr(columns_boot, "typed_spans", lambda *a: None)
    tables, built = _both([_write(tmp_path, _bootstrap("a_tiny"))])
    assert built == [False, False]
    assert tables["nodepools"]["name"].to_list() == ["--default--"]


def test_records_without_a_time_go_the_reference_way(tmp_path, monkeypatch):
    monkeypatch.setattr(assemble, "record_columns", lambda *a: None)
    tables, built = _both([_write(tmp_path, _bootstrap("a_tiny"))])
    assert built == []
    # the init lines "reserved DRAM :  0  GB" ... "reserve overage :  0  GB", in log order, then the JD host
    assert tables["config"]["key"].to_list() == [
        "reserved DRAM", "DRAM override", "scheduler", "default threads", "default tasks", "default memory",
        "default fairshare class", "default reserve", "reserve overage", "jd.host"]


_HEAD = "01 Jan 2015 00:00:00,000  INFO RM.Config - N/A T[1] "
_NAME = st.text("abcdefghijklmnopqrstuvwxyz0123456789-", min_size=1, max_size=12).filter(lambda s: s[0].isalpha())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(classes=st.dictionaries(_NAME, st.tuples(st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=6),
       nodes=st.lists(_NAME, max_size=7))
def test_generated_classes_and_pool(tmp_path, classes, nodes):
    # the node list three names a line, as the RM wraps it (the first line the record's, the rest
    # continuation lines), or "<None>"
    wrapped = [" ".join(nodes[i:i + 3]) + " " for i in range(0, len(nodes), 3)] or ["<None>"]
    lines = [_HEAD + "printNodepool     Nodepool --default--", _HEAD + "printNodepool        Scheduling quantum: 4",
             _HEAD + "printNodepool        Node File: pool.nodes", _HEAD + "printNodepool              " + wrapped[0],
             *["                  " + line for line in wrapped[1:]],
             _HEAD + "printNodepool        Classes: " + " ".join(classes), _HEAD + "printNodepool        No subpools."]
    for name, (priority, weight) in classes.items():
        lines += [_HEAD + f"printClass  Class {name}",
                  _HEAD + f"printProperty     Priority            : {priority}",
                  _HEAD + f"printProperty     Weight              : {weight}", _HEAD + "printClass  "]
    tables, built = _both([_write(tmp_path, lines)])
    assert built == [True, True]
    assert tables["classes"].select("name", "priority", "weight").rows() == sorted(
        (name, p, w) for name, (p, w) in classes.items())
    assert tables["nodepools"].select("name", "quantum", "classes", "nodes").rows() == [
        ("--default--", 4, list(classes), nodes or None)]
