"""The vectorised fast engine and the all-lark engine give identical tables on every fixture.

This is how lark tests its own two parsers: the grammar is the specification; every fast path
(header split, the high-volume families, the createState structure) must agree with it.
"""

from __future__ import annotations

from polars.testing import assert_frame_equal

from tests.conftest import parsed


def test_fast_engine_equals_lark_engine(fixture_log):
    fast = parsed(*fixture_log, engine="fast").tables
    slow = parsed(*fixture_log, engine="lark").tables
    assert fast.keys() == slow.keys()
    for name in fast:
        try:
            assert_frame_equal(fast[name], slow[name], check_exact=True)
        except AssertionError as exc:
            raise AssertionError(f"table {name}: {exc}") from None
