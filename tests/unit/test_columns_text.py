"""The messages table typed in C (replay.parsing.columns_text, csrc/texts.c) against its reference
(records.full_bodies, rows_of, conform), on hand-worked and Hypothesis-generated logs."""

from __future__ import annotations

import tempfile
from datetime import datetime
from pathlib import Path

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns, columns_text
from replay.parsing.pipeline import parse
from tests.compiled import both_ways

_HEAD = "01 Jan 2015 00:00:{s:02d},000  {level} RM.{cls} - {jid} T[{tid}] {method}  {body}"
_SENT = _HEAD.format(s=9, level="INFO", cls="JobManagerConverter", jid="N/A", tid=4, method="createState",
                     body="Schedule sent to Orchestrator")


def _msg(s: int, body: str, jid: str = "7", tid: int = 19, level: str = "INFO") -> str:
    return _HEAD.format(s=s, level=level, cls="Foo", jid=jid, tid=tid, method="bar", body=body)


def _both(paths: list[Path]) -> tuple[pl.DataFrame, pl.DataFrame, list[bool]]:
    """The messages table built in C and the reference way, and per chunk whether C built it."""
    both = both_ways(paths, columns_text, "messages")
    compiled, reference = both.compiled["messages"], both.reference["messages"]
    assert_frame_equal(compiled, reference, check_exact=True)
    return compiled, reference, both.built


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode())
    return path


def test_a_generic_record_keeps_its_header_and_its_whole_text(tmp_path):
    log = _write(tmp_path / "rm.log", "\n".join([
        _msg(1, "Starting   the thing", level="WARN"),
        "  first continuation",
        "\tsecond\tline",
        "",  # a blank line at the end of the record: trimmed away
        _SENT,
        _msg(10, " padded body", jid="N/A", tid=3),
    ]) + "\n")
    compiled, _, built = _both([log])
    assert built == [True]
    assert compiled.select("ts", "cycle", "level", "component", "cls", "jid", "tid", "method", "text", "file",
                           "line").rows() == [
        (datetime(2015, 1, 1, 0, 0, 1), 1, "WARN", "RM", "Foo", "7", 19, "bar",
         "Starting   the thing\n  first continuation\n\tsecond\tline", "rm.log", 1),
        (datetime(2015, 1, 1, 0, 0, 10), None, "INFO", "RM", "Foo", "N/A", 3, "bar", "padded body", "rm.log", 6),
    ]


def test_a_body_with_trailing_blanks_before_its_continuation_goes_the_reference_way(tmp_path):
    # the body's span ends before its blanks: body, newline, lines is no longer one span of the bytes
    log = _write(tmp_path / "rm.log", _msg(1, "hello  ") + "\n  more \n")
    compiled, _, built = _both([log])
    assert built == [False] and compiled["text"].to_list() == ["hello\n  more"]


def test_a_text_ending_in_a_non_ascii_letter_goes_the_reference_way(tmp_path):
    # the C trim reads ASCII blanks only; polars' strip_chars trims Unicode ones (U+00A0...) too
    log = _write(tmp_path / "rm.log", _msg(1, "x") + "\n  caf\u00e9\n" + _msg(2, "y") + "\n  caf\u00e9 ok\n")
    compiled, _, built = _both([log])
    assert built == [False] and compiled["text"].to_list() == ["x\n  caf\u00e9", "y\n  caf\u00e9 ok"]


def test_records_in_two_files_of_one_chunk_go_the_reference_way(tmp_path):
    # rm.log.1 is the older file of the rolled set: its record comes first
    older = _write(tmp_path / "rm.log.1", _msg(1, "x") + "\n")
    newer = _write(tmp_path / "rm.log", _msg(2, "y") + "\n  z\n")
    compiled, _, built = _both([newer, older])
    assert built == [False]
    assert compiled.select("text", "file", "line").rows() == [("x", "rm.log.1", 1), ("y\n  z", "rm.log", 1)]


def test_a_header_only_polars_reads_leaves_the_chunk_to_the_reference(tmp_path):
    # other padding before the level: the records carry their text columns, nothing is left unframed
    log = _write(tmp_path / "rm.log", _msg(1, "a").replace("  INFO", "   INFO") + "\n" + _msg(2, "b") + "\n")
    compiled, _, built = _both([log])
    assert built == [] and compiled["text"].to_list() == ["a", "b"]


_LINE = st.text(alphabet=" \t\x0b\x0cab\u00e9\u00a0\u2003", max_size=6)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.text(alphabet=" \tab", min_size=0, max_size=5), st.lists(_LINE, max_size=3)),
                min_size=1, max_size=4))
def test_texts_built_in_c_equal_the_reference(records):
    # ASCII bodies, continuation lines of blanks (ASCII and Unicode) and letters: whatever C builds
    # equals full_bodies' text, and every chunk it refuses goes the reference way
    with tempfile.TemporaryDirectory() as tmp:
        lines = [line for i, (body, more) in enumerate(records) for line in (_msg(i, body), *more)]
        log = _write(Path(tmp) / "rm.log", "\n".join(lines) + "\n")
        compiled = parse([str(log)]).tables["messages"]
        saved = columns.COMPILED_TABLES
        columns.COMPILED_TABLES = {}
        try:
            reference = parse([str(log)]).tables["messages"]
        finally:
            columns.COMPILED_TABLES = saved
        assert_frame_equal(compiled, reference, check_exact=True)


def _unparsed(path: Path, monkeypatch) -> tuple[pl.DataFrame, list[bool]]:
    """The unparsed table with the blank lines read from spans, per call whether they were, and
    the same table the reference way (strip_chars over the lines' frame)."""
    read: list[bool] = []
    real = columns_text.blank_lines
    monkeypatch.setattr(columns_text, "blank_lines", lambda *a: read.append((got := real(*a)) is not None) or got)
    compiled = parse([str(path)]).tables["unparsed"]
    calls = list(read)
    with monkeypatch.context() as m:
        m.setattr(columns, "COMPILED_TABLES", {})
        assert_frame_equal(compiled, parse([str(path)]).tables["unparsed"], check_exact=True)
    return compiled, calls


_STRAY = "unexpected line inside a JobManagerConverter.createState record (interleaved or wrapped output)"


def test_blank_lines_inside_a_single_line_record_are_no_news(tmp_path, monkeypatch):
    # "Schedule sent" is one line: of the three lines after it only the one with text is reported
    log = _write(tmp_path / "rm.log", _SENT + "\n\n  \t\n stray text \n\x0b\n")
    compiled, read = _unparsed(log, monkeypatch)
    assert read == [True]
    # inside the "Schedule sent" record, which closes cycle 1
    assert compiled.rows() == [("rm.log", 4, " stray text ", _STRAY, 1)]


def test_a_stray_line_ending_in_a_non_ascii_letter_is_read_the_reference_way(tmp_path, monkeypatch):
    log = _write(tmp_path / "rm.log", _SENT + "\n\t\n  caf\u00e9\n")
    compiled, read = _unparsed(log, monkeypatch)
    assert read == [False]
    assert compiled.rows() == [("rm.log", 3, "  caf\u00e9", _STRAY, 1)]


def test_a_record_without_a_time_leaves_the_chunk_to_the_reference(tmp_path):
    # 31 Feb is no day: the record is read with a null time, which the compiled tables do not take
    log = _write(tmp_path / "rm.log", _msg(1, "x") + "\n" + _msg(2, "y").replace("01 Jan", "31 Feb") + "\n  z\n")
    compiled, _, built = _both([log])
    assert built == []
    assert compiled.select("ts", "text", "line").rows() == [(datetime(2015, 1, 1, 0, 0, 1), "x", 1),
                                                            (None, "y\n  z", 2)]
