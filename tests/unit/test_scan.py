"""The compiled scanner (replay._scan) against the polars path it replaces and the regexes and
grammar its templates stand for: hand-worked lines, then Hypothesis over generated ones."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay import fast
from replay.chunks import Piece
from replay.records import find_records, split_lines
from replay.scan import scan_records, template_rows
from replay.templates import TEMPLATES, compile_template

HEADER = "01 Jan 2015 00:01:00,000  INFO RM.NodepoolScheduler - N/A T[19] apportion_qshares   countClassShares RmCounter Start  "


def _both(text: str):
    pieces = [Piece(0, 1, text.encode())]
    polars_lines = split_lines(pieces)
    return (polars_lines, find_records(polars_lines)), scan_records(pieces)


def _same(text: str) -> None:
    (l1, r1), (l2, r2) = _both(text)
    assert_frame_equal(l1.frame, l2.frame)
    assert l1.bad_utf8_lines == l2.bad_utf8_lines
    assert_frame_equal(r1.records, r2.records.drop("_piece", "_bs", "_be"), check_exact=True)
    assert_frame_equal(r1.continuations, r2.continuations)
    assert_frame_equal(r1.orphans, r2.orphans)


def test_a_log4j_header_is_split_into_its_fields():
    _, (lines, recs) = _both(HEADER + "\n  more text\n")
    row = recs.records.row(0, named=True)
    assert (row["level"], row["component"], row["cls"], row["jid"], row["tid"], row["method"], row["body"]) == (
        "INFO", "RM", "NodepoolScheduler", "N/A", 19, "apportion_qshares", "countClassShares RmCounter Start")
    assert str(row["ts"]) == "2015-01-01 00:01:00" and row["ts_text"] == "01 Jan 2015 00:01:00,000"
    assert recs.continuations["text"].to_list() == ["  more text"]


def test_odd_lines_are_read_as_the_polars_path_reads_them():
    _same("\n".join([
        "continuation before any header",
        HEADER,
        "01 Jan 2015 00:01:00,000   INFO RM.X - N/A  T[1] m body",  # other padding: the general regex
        "01 Jan 2015 00:01:00,000  INFO RM.X - N/A T[1] m b\u00e9dy  ",  # non-ASCII
        "01 Jan 2015 00:01:00,000  INFO RM.X - N/A T[1] methodonly",
        "01 Jan 2015 00:01:00,000  INFO RM.X - N/A T[1]  m",  # a blank where METHOD starts: no header
        "31 Feb 2015 00:01:00,000  INFO RM.X - N/A T[1] m no such day",
        "01 Jan 2015 24:01:00,000  INFO RM.X - N/A T[1] m no such hour",
        "01 Jan 2015 00:01:00,000  INFO RMX - N/A T[1] m no class",
        "01 Jan 2015 00:01:00,000 INFO RM.X - N/A T[1] m short level",
        "01 Jan 2015 00:01:00,000  INFO RM.X - N/A T[1] m\ttab\r",
        "\t", "", "cut mid-li",
    ]))


dates = st.tuples(
    st.integers(0, 39), st.sampled_from(["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov",
                                         "Dec", "Foo"]),
    st.integers(0, 9999), st.integers(0, 29), st.integers(0, 69), st.integers(0, 69), st.integers(0, 999))


@settings(max_examples=300)
@given(st.lists(dates, min_size=1, max_size=20))
def test_timestamps_are_the_ones_polars_reads(stamps):
    _same("\n".join(f"{d:02d} {m} {y:04d} {h:02d}:{mi:02d}:{s:02d},{ms:03d}  INFO RM.X - N/A T[1] m b"
                    for d, m, y, h, mi, s, ms in stamps) + "\n")


def _part(bodies: list[str]) -> tuple[pl.DataFrame, tuple[bytes, ...]]:
    data = "\n".join(bodies).encode()
    starts, at = [], 0
    for b in bodies:
        starts.append(at)
        at += len(b.encode()) + 1
    part = pl.DataFrame({
        "rec": pl.Series(range(len(bodies)), dtype=pl.UInt32), "body": bodies,
        "_piece": pl.Series([0] * len(bodies), dtype=pl.UInt16),
        "_bs": pl.Series(starts, dtype=pl.Int32), "_be": pl.Series([s + len(b.encode()) for s, b in zip(starts, bodies)], dtype=pl.Int32),
    })
    return part, (data,)


def _agrees_with_regex(family: str, bodies: list[str]) -> set[int]:
    """Every body the template takes, the family's regex takes too, with the same fields; the
    records the template took."""
    part, blocks = _part(bodies)
    rows, failed = template_rows(family, part, blocks)
    expected, _ = fast.fast_rows(family, part.join(rows.select("rec"), on="rec", how="semi"), pl.DataFrame())
    assert_frame_equal(rows.select(expected.columns), expected, check_dtypes=False)
    assert rows.height + failed.height == len(bodies)
    return set(rows["rec"].to_list())


def test_templates_take_the_canonical_bodies_and_leave_the_rest_to_the_regexes():
    took = _agrees_with_regex("frag_row", [
        "--default-- bob 3 2 2 1 1",
        "--default--   bob  3 2 2 1 1 POTENTIALLY NEEDY",
        "--default-- bob 3 2 2 1 1 POTENTIALLY  NEEDY",  # the terminal has one blank inside
        "--default-- bob 3 2 x 1 1",
        "--default-- bob 3 2 2 1",
        "--default-- bob 3 2 2 1 1 1",
        "--default--\tbob 3 2 2 1 1",  # a tab: the regex and grammar decide
        "--default-- b\u00f6b 3 2 2 1 1",
        "--default-- bob 3 2 2 1 12345678901234567890",  # beyond int64: the reference paths decide
    ])
    assert took == {0, 1}
    assert _agrees_with_regex("how_much_fair_share", [
        "Scheduling job in class normal : J_____7 job7 bob normal 0 2 0 4 15 10 10 true 3",
        "Scheduling job in class normal : X7 job7 bob normal 0 2 0 4 15 10 10 true 3",
        "Scheduling job in class normal : J_ job7 bob normal 0 2 0 4 15 10 10 true 3",
    ]) == {0}
    assert _agrees_with_regex("rmc_wanted", [
        "countUserShares wantedby.bob = 0 1 2",
        "countUserShares wantedby.bob =",
        "countUserShares wantedby. = 1",
        "countUserShares wantedby.bob = 1 a",
    ]) == {0, 1}
    assert _agrees_with_regex("evict_header", [
        "Counted Current Needed Order (--default--)", "Counted Current Needed Order ()",
        "Counted Current Needed Order ((x))",
    ]) == {0, 2}


_WORDS = st.sampled_from(["0", "1", "-3", "12", "bob", "x.y", "=", "(a)", "J_4", "POTENTIALLY", "NEEDY", "a\tb", "é"])


@settings(max_examples=200)
@given(st.sampled_from(sorted(TEMPLATES)), st.data())
def test_any_body_a_template_takes_the_regex_takes_alike(family, data):
    tokens = []
    for op in compile_template(TEMPLATES[family]).ops:
        code, pre, suf = op[0], op[1].decode(), op[2].decode()
        if code == 0:
            tokens.append(data.draw(st.one_of(st.just(pre), _WORDS)))
        elif code == 3:
            tokens.extend(data.draw(st.lists(_WORDS, max_size=4)))
        elif code == 4:
            tokens.extend(data.draw(st.sampled_from([[], pre.split(" "), ["NEEDY"]])))
        else:
            tokens.append(pre + data.draw(_WORDS) + suf)
    gaps = data.draw(st.lists(st.sampled_from([" ", "  ", " \t"]), min_size=len(tokens), max_size=len(tokens)))
    body = "".join(g + t for g, t in zip(gaps, tokens)).strip()
    _agrees_with_regex(family, [body])
