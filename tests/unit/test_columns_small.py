"""The small tables typed in C (replay.parsing.columns_small) against the reference path (the
rows framed by polars, conformed by assemble): hand-worked rows read off the log text, and one
test per way a chunk goes the reference way."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import assemble, columns, columns_small, pipeline
from replay.parsing.pipeline import parse
from tests.unit.test_pools import _RESET, _RULE, _SENT, _block  # the Scheduling Tables lines, hand-written there
from tests.compiled import both_ways

def _both(tmp_path, lines: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """pool_tables built in C and the reference way, and how many chunks C built."""
    path = tmp_path / "rm.log"
    path.write_text("\n".join(lines) + "\n")
    return both_ways([path], columns_small, "pool_table").table("pool_tables")


def test_pool_tables_rows_are_typed_in_c(tmp_path):
    compiled, reference, built = _both(tmp_path, [
        _RESET.format(body="Scheduling Tables:"), _RULE, *_block("--default--", 0), *_block("nd1", 1), _RULE, "",
        _SENT])
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    # read off the log text: per nodepool block, its three rows under the Order header and their numbers
    assert compiled.select("nodepool", "depth", "table_row", "values").rows() == [
        ("--default--", 0, "nMachinesByOrder", [0, 0, 2, 1]), ("--default--", 0, "vMachinesByOrder", [0, 0, 0, 0]),
        ("--default--", 0, "nSharesByOrder", [0, 5, 2, 1]), ("nd1", 1, "nMachinesByOrder", [0, 0, 2, 1]),
        ("nd1", 1, "vMachinesByOrder", [0, 0, 0, 0]), ("nd1", 1, "nSharesByOrder", [0, 5, 2, 1])]
    assert set(compiled["line"].to_list()) == {1} and set(compiled["cycle"].to_list()) == {1}
    assert compiled["ts"][0].isoformat() == "2015-01-01T00:01:00"


def test_a_record_the_grammar_reads_sends_the_table_the_reference_way(tmp_path):
    # "Scheduling Tables: more": a body with more on its line is the grammar's; the chunk's records
    # are not all the scanner's, so C builds nothing
    compiled, reference, built = _both(tmp_path, [
        _RESET.format(body="Scheduling Tables:"), _RULE, *_block("a", 0), _RULE, "",
        _RESET.format(body="Scheduling Tables: more"), _RULE, *_block("b", 0), _RULE, "", _SENT])
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)


def test_a_value_c_will_not_type_sends_the_table_the_reference_way(tmp_path):
    # a depth beyond int64: `_scan.typed` refuses it, the reference's cast gives null
    compiled, reference, built = _both(tmp_path, [
        _RESET.format(body="Scheduling Tables:"), _RULE, *_block("a", 99999999999999999999), _RULE, "", _SENT])
    assert_frame_equal(compiled, reference, check_exact=True)
    assert built == 0


def test_a_record_without_a_time_sends_the_table_the_reference_way(tmp_path):
    lines = [_RESET.format(body="Scheduling Tables:"), _RULE, *_block("a", 0), _RULE, "", _SENT]
    compiled, reference, built = _both(tmp_path, [lines[0].replace("00:01:00,000", "00:01:99,000"), *lines[1:]])
    assert_frame_equal(compiled, reference, check_exact=True)
    assert built == 0


_AT = "01 Jan 2015 00:{m:02d}:{s:02d},000  INFO RM.{cls} - N/A T[19] {method}  {body}"
_DASH = "-" * 8


def _loop(epoch: str, what: str) -> tuple[str, str, str]:
    return "ResourceManagerComponent", "runScheduler", f"{_DASH} {epoch} {_DASH} {what} {_DASH}"


def _cycle(epoch: str, arrivals: str = "9", new: str = "2") -> list[tuple[str, str, str]]:
    return [_loop(epoch, "Entering scheduling loop"), ("Scheduler", "nodeArrives", f"Total arrivals: {arrivals}"),
            ("Scheduler", "schedule", f"Scheduling {new}  new jobs.  Existing jobs: 3"),
            ("JobManagerConverter", "createState", "Schedule sent to Orchestrator"),
            _loop(epoch, "Scheduling loop returns ")]


def _cycles(tmp_path, records: list[tuple[str, str, str]]) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """cycles from rows typed in C and from rows framed the reference way, and how many chunks C typed."""
    path = tmp_path / "rm.log"
    path.write_text("\n".join(_AT.format(m=i // 60, s=i % 60, cls=c, method=m, body=b)
                              for i, (c, m, b) in enumerate(records)) + "\n")
    return both_ways([path], columns_small, "cycle_rows").table("cycles")


def test_cycles_rows_are_typed_in_c(tmp_path):
    compiled, reference, typed = _cycles(tmp_path, [*_cycle("6"), *_cycle("7", arrivals="10", new="0")])
    assert typed == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    # read off the log: a cycle per schedule sent, its loop's epoch, entry (started) and return times
    assert compiled.select("cycle", "epoch", "total_arrivals", "new_jobs", "existing_jobs", "started",
                           "line").rows() == [(1, 6, 9, 2, 3, True, 1), (2, 7, 10, 0, 3, True, 6)]
    assert [t.second for t in compiled["ts_start"]] == [0, 5] and [t.second for t in compiled["ts_end"]] == [4, 9]


@pytest.mark.parametrize("unread", [None, 200])
def test_cycles_rows_of_many_chunks_are_joined_in_log_order(tmp_path, unread):
    # 400 cycles read in 64 KB blocks: several chunks (each ends after a published schedule, the
    # createState structure, here without jobs), each's rows an Arrow table until the end of the
    # parse (assemble_final joins them); `unread`: that cycle's arrivals beyond int64 send its chunk
    # the reference way, so the last step joins Arrow and polars parts
    records = []
    for i in range(400):
        cycle = _cycle(str(1000 + i), arrivals="99999999999999999999" if i == unread else str(i))
        records += [*cycle[:4], ("JobManagerConverter", "createState", ""), cycle[4]]
    path = tmp_path / "rm.log"
    path.write_text("\n".join(_AT.format(m=(i // 60) % 60, s=i % 60, cls=c, method=m, body=b).replace(
        "00:", f"{i // 3600:02d}:", 1) for i, (c, m, b) in enumerate(records)) + "\n")
    kinds: list[set[str]] = []
    joined = assemble._joined
    with pytest.MonkeyPatch.context() as m:
        m.setattr(assemble, "_joined", lambda parts: kinds.append({type(p).__name__ for p in parts}) or joined(parts))
        compiled, reference, typed = both_ways([path], columns_small, "cycle_rows", chunk_bytes=1).table("cycles")
    # Arrow parts of several chunks (and with `unread`, a polars one)
    assert typed > 1 and ({"Table", "DataFrame"} if unread else {"Table"}) in kinds
    assert_frame_equal(compiled, reference, check_exact=True)
    # read off the log: cycle n is the n-th loop, its epoch 999 + n, its arrivals n - 1
    assert compiled["cycle"].to_list() == list(range(1, 401))
    assert compiled["epoch"].to_list() == [1000 + i for i in range(400)]
    assert compiled["total_arrivals"].to_list() == [None if i == unread else i for i in range(400)]


def test_a_cycle_value_c_will_not_type_sends_the_rows_the_reference_way(tmp_path):
    # arrivals beyond int64: `_scan.typed` refuses them, the reference's cast gives null
    compiled, reference, typed = _cycles(tmp_path, [*_cycle("6", arrivals="99999999999999999999")])
    assert typed == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled["total_arrivals"].to_list() == [None]


def test_cycle_rows_without_a_time_go_the_reference_way(tmp_path):
    records = _cycle("6")
    path_lines = [_AT.format(m=0, s=i, cls=c, method=m, body=b) for i, (c, m, b) in enumerate(records)]
    path_lines[1] = path_lines[1].replace("00:00:01,000", "00:00:99,000")
    path = tmp_path / "rm.log"
    path.write_text("\n".join(path_lines) + "\n")
    got = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(columns_small, "cycle_rows", lambda *a: got.append(a))
        compiled = parse([str(path)]).tables["cycles"]
        m.setattr(columns, "COMPILED_TABLES", {})
        reference = parse([str(path)]).tables["cycles"]
    assert got == []
    assert_frame_equal(compiled, reference, check_exact=True)


def _unparsed(tmp_path, lines: list[str]) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """unparsed built from spans and the reference way, and how many chunks were built from spans."""
    path = tmp_path / "rm.log"
    path.write_bytes(("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    return both_ways([path], pipeline, "unexpected_table").table("unparsed")


_ARRIVALS = _AT.format(m=0, s=0, cls="Scheduler", method="nodeArrives", body="Total arrivals: 9")
_SENT_AT = _AT.format(m=0, s=5, cls="JobManagerConverter", method="createState", body="Schedule sent to Orchestrator")


def test_lines_inside_a_single_line_record_are_built_from_spans(tmp_path):
    compiled, reference, built = _unparsed(tmp_path, [_ARRIVALS, "%%%% corrupted %%%%", "   ", "]]]]}}}}", _SENT_AT,
                                                      _ARRIVALS, "xxxx"])
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    why = "unexpected line inside a Scheduler.nodeArrives record (interleaved or wrapped output)"
    # the blank line is no news; the stray line after the last schedule has no cycle
    assert compiled.rows() == [("rm.log", 2, "%%%% corrupted %%%%", why, 1), ("rm.log", 4, "]]]]}}}}", why, 1),
                               ("rm.log", 7, "xxxx", why, None)]


def test_another_unparsed_line_sends_the_table_the_reference_way(tmp_path):
    # a line before the first record header: not a line inside a record, the reference joins them all
    compiled, reference, built = _unparsed(tmp_path, ["orphan text", _ARRIVALS, "%%%% corrupted %%%%", _SENT_AT])
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled["line"].to_list() == [1, 3]


def test_bad_utf8_sends_the_unparsed_table_the_reference_way(tmp_path):
    compiled, reference, built = _unparsed(tmp_path, [_ARRIVALS, "caf\udce9 corrupted", _SENT_AT])
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled["text"].to_list() == ["caf\ufffd corrupted"]


# stray lines of text, blanks and a non-ASCII letter (at an edge the blank test goes the reference way)
_STRAY = st.text(st.sampled_from(" \t%@]x9\u00e9"), max_size=8)


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.lists(_STRAY, max_size=3)), min_size=1, max_size=5))
def test_generated_stray_lines_give_the_reference_unparsed_table(records):
    lines = []
    for sent, strays in records:
        lines += [_SENT_AT if sent else _ARRIVALS, *strays]
    with tempfile.TemporaryDirectory() as tmp:
        compiled, reference, _ = _unparsed(Path(tmp), lines)
    assert_frame_equal(compiled, reference, check_exact=True)
