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

from replay.parsing.scan import COMPILED
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
