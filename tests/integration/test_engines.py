"""The three engines give identical tables on every fixture.

This is how lark tests its own two parsers: the grammar is the specification, and every fast
path must agree with it. `fast` is the compiled scanner (replay.parsing._scan: lines, headers, token
templates) with the polars regexes behind it; `polars` is the pure-Python vectorised path (what
runs where no C compiler was available at install); `lark` parses every header and body with
the grammar.
"""

from __future__ import annotations

import pytest
from polars.testing import assert_frame_equal

from replay.parsing.compiled import COMPILED
from tests.helpers import parsed


def _same_tables(a, b) -> None:
    assert a.keys() == b.keys()
    for name in a:
        try:
            assert_frame_equal(a[name], b[name], check_exact=True)
        except AssertionError as exc:
            raise AssertionError(f"table {name}: {exc}") from None


def test_the_compiled_scanner_is_built():
    # `pip install` builds it (setup.py); without it the suite would test only the polars path
    assert COMPILED, "replay.parsing._scan is missing: reinstall with a C compiler (pip install -e .)"


@pytest.mark.parametrize("engine", ["fast", "polars"])
def test_engine_equals_lark_engine(fixture_log, engine):
    _same_tables(parsed(*fixture_log, engine=engine).tables, parsed(*fixture_log, engine="lark").tables)


@pytest.mark.parametrize("engine", ["fast", "polars"])
def test_engines_agree_on_a_debug_log_of_rule_pools(engine):
    # findNodepoolByRule's DEBUG misses (3.0.0 on), which no top-level fixture has
    log = ("cuts/rule_taken", "rm-debug.log")
    _same_tables(parsed(*log, engine=engine).tables, parsed(*log, engine="lark").tables)


def test_compiled_tables_equal_their_reference_steps(fixture_log, monkeypatch):
    # the tables the scanner types in C (replay.parsing.columns) against the polars steps they
    # replace, on the same scan; the lark comparison above holds both to the grammar
    from replay.parsing import columns
    from replay.parsing.pipeline import parse
    from tests.helpers import log_path

    compiled = parsed(*fixture_log).tables
    monkeypatch.setattr(columns, "COMPILED_TABLES", {})
    reference = parse([log_path(*fixture_log)]).tables
    _same_tables(compiled, reference)



@pytest.mark.parametrize("odd_header", [False, True])
def test_records_without_text_give_the_tables_the_polars_path_gives(tmp_path, odd_header):
    # a chunk the scanner reads whole (records without text, built where read) and one with a
    # header only polars reads (every text column at once): messages, counts, jobs, unparsed lines
    from replay.parsing.pipeline import parse
    from tests.helpers import log_path

    text = log_path("a_tiny").read_text(encoding="utf-8")
    if odd_header:
        text = text.replace("  INFO RM.", "   INFO RM.", 1)  # other padding on the first header
    text += "01 Jan 2030 00:00:00,000  INFO RM.NodepoolScheduler - 17 T[3] apportion_qshares no such shape\n"
    log = tmp_path / "rm.log"
    log.write_text(text, encoding="utf-8")
    fast = parse([str(log)], engine="fast")
    assert fast.tables["unparsed"].height and fast.tables["messages"].height
    _same_tables(fast.tables, parse([str(log)], engine="polars").tables)
