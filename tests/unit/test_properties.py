"""Hypothesis: any mix of real and foreign lines parses without a traceback, every line is
accounted for, and the two engines agree."""

from __future__ import annotations

from functools import lru_cache

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay import InputError, parse
from tests.helpers import log_path


@lru_cache(maxsize=1)
def _real_lines() -> list[str]:
    return log_path("a_tiny").read_text().splitlines()


line = st.one_of(
    st.integers(0, 2015).map(lambda i: _real_lines()[i]),
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=80),
    st.sampled_from(["", "\t", "01 Jan 2015 00:00:00,000  INFO RM.X - N/A T[1] m  b",
                     "01 Jan 2015 00:00:00,000  INFO RM.RmJob - 1 T[19] initJobCap  ???"]),
)


def _write(tmp_path, lines: list[str]):
    f = tmp_path / "rm.log"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return f


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(line, min_size=1, max_size=60))
def test_any_lines_are_accounted_for_and_engines_agree(tmp_path, lines):
    f = _write(tmp_path, lines)
    try:
        fast = parse([f])
    except InputError:
        return  # no header line at all: the one-line error is the answer
    s = fast.summary
    assert s.lines == len(lines) == s.records + s.continuation_lines + s.orphan_lines
    assert fast.tables["unparsed"]["line"].is_unique().all()
    slow = parse([f], engine="lark")
    for name in fast.tables:
        assert_frame_equal(fast.tables[name], slow.tables[name])
