"""The scanner's word-at-a-time loops and shortcuts (replay/parsing/csrc: scan.h, templates.c,
route.c, lines.c) against the references they stand for: a tab, a non-ASCII or a control byte at
every offset of a templated body, tokens on either side of an 8-byte word, literal words with more
glued on, route prefixes rejected by their first bytes, and timestamps that share a date."""

from __future__ import annotations

import numpy as np
import pytest

from replay.parsing.families import GENERIC
from tests.unit.test_scan import _agrees_with_grammar, _same
from tests.unit.test_scan_routes import _line, _routed

FRAG = "--default-- bobsmithjones 3 2 2 1 1"  # longer than two words, tokens over their edges


@pytest.mark.parametrize("byte", ["\t", "\u00e9", "\x0b", "\r"])
def test_a_blank_other_than_space_or_a_non_ascii_byte_anywhere_leaves_the_body_to_the_reference(byte):
    # the templates read printable ASCII and spaces only (templates.c); the regexes and lark the rest
    bodies = [FRAG] + [FRAG[:at] + byte + FRAG[at + 1:] for at in range(len(FRAG))]
    assert _agrees_with_grammar("frag_row", bodies) == {0}


def test_a_control_byte_other_than_a_blank_is_read_as_the_grammar_reads_it():
    # \x01 is not a blank: a word holding one is looked at byte by byte, and the body is still read
    bodies = [FRAG[:at] + "\x01" + FRAG[at + 1:] for at in range(len(FRAG))]
    _agrees_with_grammar("frag_row", bodies)


def test_tokens_of_every_length_around_a_word_are_split_where_the_grammar_splits_them():
    hosts = ["h" * n for n in range(1, 21)]
    bodies = [f"Process 1234 {h}.5 State: Starting -> Running 10 20" for h in hosts]
    assert _agrees_with_grammar("proc_state", bodies) == set(range(len(hosts)))
    users = [f"--default-- {'u' * n} 3 2 2 1 1" for n in range(1, 21)]
    assert _agrees_with_grammar("frag_row", users) == set(range(len(users)))


def test_a_literal_word_with_more_glued_on_is_not_the_literal():
    assert _agrees_with_grammar("fixed_counting", [
        "Counting shares for J.7",
        "Counting shares for J.7 in class fixed",
        "Counting sharesx for J.7",
        "Countingshares for J.7",
        "Counting shares for J.7 in classfixed",
        "Counting shares fo J.7",
        "Counting shares for J.7 in class fixed x",
    ]) == {0, 1}


def test_prefixes_after_a_leading_word_route_as_polars_routes_them():
    # "^\S+ maxorder =" and its siblings: the first word measured once, then each prefix's literal
    group = ("NodepoolScheduler", "apportion_qshares")
    bodies = ["countClassShares maxorder =  79", "countClassShares  maxorder =  79", "c maxorder = 1",
              "countClassSharesmaxorder = 1", "countClassShares maxorde", "countClassShares", "x",
              "countUserShares wantedby.bob =    1   0", "countJobShares vmachines =   1   0",
              "countJobShares weights      =  1", "countJobShares RmCounter End", "countJobShares RmCounter",
              "a-very-long-first-word-of-many-bytes-indeed Final apportionment:", "countJobShares  bob gbo 3"]
    compiled, by_polars = _routed([_line(group, b) for b in bodies])
    assert compiled == by_polars
    assert compiled[0] == "rmc_maxorder" and compiled[3] != "rmc_maxorder"
    assert _routed([_line(("NoSuchClass", "m"), "x")])[0] == [GENERIC]


def test_timestamps_that_share_a_date_or_come_back_to_one():
    head = "  INFO RM.X - N/A T[1] m b"
    _same("\n".join(f"{stamp}{head}" for stamp in [
        "01 Jan 2015 00:01:00,000", "01 Jan 2015 23:59:59,999", "01 Jan 2015 24:00:00,000",
        "29 Feb 2015 00:00:00,000", "29 Feb 2015 00:00:01,000", "29 Feb 2016 00:00:00,000",
        "01 Jan 2015 00:00:02,000", "31 Dec 1969 23:59:59,999", "31 Dec 1969 00:00:00,000", "31 Dec 1970 00:00:00,000",
        "01 Foo 2015 00:00:00,000", "01 Foo 2015 00:00:00,000", "01 Jan 2015 00:00:03,000",
    ]) + "\n")


def test_a_span_outside_its_block_is_a_clear_error_from_every_checked_reader():
    # the readers check their spans with the GIL released, then raise once they hold it again
    from replay.parsing import _scan
    from replay.parsing.scan import _rmcounter_templates

    def i32(*values: int) -> bytes:
        return np.array(values, dtype=np.int32).tobytes()

    data = b"countClassShares RmCounter Start\n"
    with pytest.raises(ValueError, match="fill: a span lies outside the block"):
        _scan.fill(data, i32(0), i32(99), i32(0), ((), ()))
    with pytest.raises(ValueError, match="rmcounter: a span outside the block or an unknown kind"):
        _scan.rmcounter(data, i32(0), i32(99), i32(0), _rmcounter_templates())
    with pytest.raises(ValueError, match="rmcounter: a span outside the block or an unknown kind"):
        _scan.rmcounter(data, i32(0), i32(5), i32(99), _rmcounter_templates())
    with pytest.raises(ValueError, match="schedule: a span outside the block, or records out of order"):
        _scan.schedule(data, i32(0), i32(0), i32(99))
    with pytest.raises(ValueError, match="sections: a span outside the block, or records out of order"):
        _scan.sections(data, i32(1, 0), i32(0, 0), i32(5, 5))
    assert _scan.rmcounter(data, i32(0), i32(len(data) - 1), i32(0), _rmcounter_templates())["nrows"] == 1
