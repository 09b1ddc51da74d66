"""The compiled scanner (replay.parsing._scan): its lines and records against the polars path it
replaces, its templates against the grammar they stand for: hand-worked lines, then Hypothesis over
generated ones. Routing, the multi-line blocks and the bootstrap records: test_scan_routes.py,
test_scan_blocks.py, test_scan_boot.py."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing.chunks import Piece
from replay.parsing.families import FAMILY_CODE, TARGETS
from replay.parsing.family_rows import lark_rows
from replay.parsing.records import find_records, split_lines
from replay.parsing.scan import fill_rows, templated
from replay.parsing.scanned import full_records, scan_records
from replay.parsing.templates import (K_ANY, K_INT, K_NOMINUS, K_NQM, K_NUM, K_UINT, K_UUID, T_LABEL, T_LIST, T_LIT,
                                       T_PHRASE, T_REF, T_REST, T_RUN, T_SHARE, T_TYPED, TEMPLATES, compile_template,
                                       templates_of)

HEADER = ("01 Jan 2015 00:01:00,000  INFO RM.NodepoolScheduler - N/A T[19] apportion_qshares   "
          "countClassShares RmCounter Start  ")


def _both(text: str):
    pieces = [Piece(0, 1, text.encode())]
    polars_lines = split_lines(pieces)
    return (polars_lines, find_records(polars_lines)), scan_records(pieces)


def _same(text: str) -> None:
    (l1, r1), (l2, r2) = _both(text)
    assert_frame_equal(l1.frame, l2.frame.drop("_s", "_e", "_piece"))
    assert l1.bad_utf8_lines == l2.bad_utf8_lines
    scanned = full_records(r2).drop("_piece", "_bs", "_be", "_fam", "_job", "_mc", strict=False)
    assert_frame_equal(r1.records, scanned, check_exact=True)
    assert_frame_equal(r1.continuations, r2.continuations.drop("_s", "_e", "_piece"))
    assert_frame_equal(r1.orphans, r2.orphans)


def test_a_log4j_header_is_split_into_its_fields():
    _, (lines, recs) = _both(HEADER + "\n  more text\n")
    row = full_records(recs).row(0, named=True)
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


def _records(family: str, bodies: list[str]) -> tuple[pl.DataFrame, tuple[bytes, ...]]:
    """Routed records of `family`, one per body, their spans in one block (as scan_records gives)."""
    data = "\n".join(bodies).encode()
    starts, at = [], 0
    for b in bodies:
        starts.append(at)
        at += len(b.encode()) + 1
    records = pl.DataFrame({
        "rec": pl.Series(range(len(bodies)), dtype=pl.UInt32), "body": bodies,
        "family": [family] * len(bodies), "_code": pl.Series([FAMILY_CODE[family]] * len(bodies), dtype=pl.Int32),
        "_piece": pl.Series([0] * len(bodies), dtype=pl.UInt16), "_bs": pl.Series(starts, dtype=pl.Int32),
        "_be": pl.Series([s + len(b.encode()) for s, b in zip(starts, bodies)], dtype=pl.Int32),
    })
    return records, (data,)


def _agrees_with_grammar(family: str, bodies: list[str]) -> set[int]:
    """Every body the family's templates take, the grammar takes too, with the same fields (and
    the template's other columns null); the records the templates took."""
    records, blocks = _records(family, bodies)
    filled, taken, _ = fill_rows(records, blocks)
    assert len(filled) <= 1 and sum(f.height for f in filled.values()) == taken.sum()
    if not taken.any():
        return set()
    rows = next(iter(filled.values()))
    expected, failed = lark_rows(family, records.filter(pl.Series(taken)).select("rec", "body"), pl.DataFrame())
    assert failed.is_empty(), f"a template took what the grammar rejects: {failed.to_dicts()}"
    consts = {k for t in TARGETS[family] for k in t.consts}
    for col in rows.columns:
        if col in ("rec", "_family") or col in consts:
            continue
        got = rows[col]
        if col not in expected.columns:
            assert got.null_count() == got.len(), f"{col}: the template fills a field the grammar has not"
        elif got.dtype == pl.List(pl.Int64):
            assert got.to_list() == expected[col].cast(pl.List(pl.Int64)).to_list(), col
        else:
            assert got.to_list() == expected[col].to_list(), col
    assert (rows["_family"] == family).all()
    return set(rows["rec"].to_list())


def test_every_template_is_read_by_the_scanner():
    # a family with templates but not one table would silently fall back to the regexes
    assert all(templated(family) for family in TEMPLATES)


def test_templates_take_the_canonical_bodies_and_leave_the_rest_to_the_regexes():
    took = _agrees_with_grammar("frag_row", [
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
    assert _agrees_with_grammar("how_much_fair_share", [
        "Scheduling job in class normal : J_____7 job7 bob normal 0 2 0 4 15 10 10 true 3",
        "Scheduling job in class normal : X7 job7 bob normal 0 2 0 4 15 10 10 true 3",
        "Scheduling job in class normal : J_ job7 bob normal 0 2 0 4 15 10 10 true 3",
    ]) == {0}
    assert _agrees_with_grammar("rmc_wanted", [
        "countUserShares wantedby.bob = 0 1 2",
        "countUserShares wantedby.bob =",
        "countUserShares wantedby. = 1",
        "countUserShares wantedby.bob = 1 a",
    ]) == {0, 1}
    assert _agrees_with_grammar("evict_header", [
        "Counted Current Needed Order (--default--)", "Counted Current Needed Order ()",
        "Counted Current Needed Order ((x))",
        "--default-- Counted Current Needed Order",  # 2.0.0-2.1.0 print the pool first
        "--default-- Counted Current Needed Order (x)",
    ]) == {0, 2, 3}


def test_the_counts_and_event_families_lark_alone_read_before():
    """Bodies as the RM prints them (fixtures/releases, fixtures/unsettled), and near misses."""
    cases = {
        "fixed_available": (["available shares of order 2 in np: 14", "available shares of order 2 in np: x",
                             "available shares of order 2 in np:14"], {0}),
        "res_counting": (["Counting full machines for R.7", "Counting full machines for R_7",
                          "Counting full machines for J.7 now"], {0}),
        "res_granted": (["Request is granted a machine for reservation.",
                         "Request is granted a machine for reservation"], {0}),
        "ev_no_state": (["No state from Orchestrator", "No state from Orchestrator yet"], {0}),
        "ev_gone": (["Gone", "Gone away"], {0}),
        "job_refused": (["Refusal: Job 7 is not authorized", "Too many processes"], {0, 1}),
        "freeable_bypass": (["Bypass because machine n01 is not free", "Bypass because machine n01"], {0}),
    }
    for family, (bodies, want) in cases.items():
        assert _agrees_with_grammar(family, bodies) == want, family


def test_alternative_templates_and_the_other_token_kinds():
    assert _agrees_with_grammar("proc_state", [
        "Process 1234 sys1.5 State: Starting -> Running 10 20",
        "Process 1234 <none> State: Starting -> Running 10 20",
        "Process 1234 sys1 State: Starting -> Running 10 20",  # no share id
        "Process 1234 .5 State: Starting -> Running 10 20",  # no host
        "Process 1234 a.b.17 State: Starting -> Running 10 20",  # the last dot splits
    ]) == {0, 1, 4}
    assert _agrees_with_grammar("fixed_counting", [
        "Counting shares for J.7", "Counting shares for J.7 in class fixed", "Counting shares for J_7",
        "Counting shares for J.7 in class", "Counting shares for X.7",
    ]) == {0, 1}
    assert _agrees_with_grammar("loop_enter", [
        "-------- 12 ------- Entering scheduling loop --------", "- 12 - Entering scheduling loop -",
        "-------- 12 ------- Entering scheduling loop", "--x 12 -- Entering scheduling loop --",
    ]) == {0}
    assert _agrees_with_grammar("rich_satisfied", [
        "Satisfied needs of job by taking from the rich.", "Satisfied needs of job by taking from all candidates.",
        "Satisfied needs of job by taking from the  rich.", "Satisfied needs of job by taking from the",
    ]) == {0, 1}
    assert _agrees_with_grammar("connect_share", [
        "share h1.3 order 2 machine h1 false 4 2 2 8192 <none>",
        "share h1.3 order 2 machine h1 false 4 2 2 8192 7 9",
        "share h1.3 order 2 machine h1 false 4 2 2 8192",  # the jobs or <none> are not optional
        "share h1.3 order 2 machine h1 false 4 2 2 8192 7 x",
    ]) == {0, 1}
    assert _agrees_with_grammar("job_completion_signal", [
        "Job completion signal.", "Job completion signal: all  done now", "Job completion signal:",
    ]) == {0, 1}
    assert _agrees_with_grammar("share_removed", [
        "Job removes  sys293-53.58  reduces from  56  to  55.", "Job removes h.1 reduces from 2 to -1.",
        "Job removes h.1 reduces from 2 to 1",
    ]) == {0}
    assert _agrees_with_grammar("needy_expand", [
        "NP[ --default-- Expand needy jobs. [4 ]", "NP[ np Expand needy fixed. [4 17]", "NP[ np Expand needy jobs. []",
        "NP[ np Expand needy jobs. [ ]", "NP[ np Expand needy jobs. NONE", "NP[ np Expand needy jobs. [4 x ]",
        "NP[ np Expand needy jobs. [4", "NP[ np Expand needy jobs. 4 ]", "NP[ np Expand needy jobs. [4]]",
        "NP[ np Expand needy jobs. [4.5 ]",
    ]) == {0, 1, 2, 3, 4}
    assert _agrees_with_grammar("ev_state", [
        "[R] State:  WaitingForResources -> Assigned", "[SPR] State: Assigned -> Completed",
        "[X] State: a -> b", "[R]State: a -> b", "[R] State: a ->",
    ]) == {0, 1}
    assert _agrees_with_grammar("job_max_shares", [
        "Max shares adjusted from 10 to 2147483647 (incoming) 0", "Max shares adjusted from 10 to 3 (incoming)",
        "Max shares adjusted from x to 3 (incoming)", "Max shares adjusted from 10 to 3",
    ]) == {0, 1}
    assert _agrees_with_grammar("job_recovered_nodes", [
        "Recovered[ 0 ] nodes from OR state.", "Recovered[0 ] nodes from OR state.",
        "Recovered[ x ] nodes from OR state.",
    ]) == {0}
    assert _agrees_with_grammar("node_added", [
        "Nodepool: --default-- Host added: --default-- :  sys534-1 Nodefile: <null> shares 31 total   31:"
        "             sys534-1        false    31             0            31       31744 <none>",
        "Nodepool: np Host added: np : h1 Nodefile: f shares 2 total 62: h1 false 2 1 1 2048 7 9",
        "Nodepool: np Host added: np : h1 Nodefile: f shares 2 total 62 : h1 false 2 1 1 2048 <none>",
        "Nodepool: np Host added: np : h1 Nodefile: f shares 2 total 62: h1 false 2 1 1 2048",
    ]) == {0, 1}
    assert _agrees_with_grammar("class_row", [
        "background   FAIR_SHARE   10   1   2147483647   1   true   true   120000   0   false   --default--",
        "normal  FAIR_SHARE   10   100     -1       1   true   true  120000     0    true --default--",
        "normal FAIR_SHARE 10 x -1 1 true true 120000 0 true --default--",
        "normal FAIR_SHARE 10 100 -1 1 true true 120000 0 true",
    ]) == {0, 1}
    assert _agrees_with_grammar("np_subpools", ["Subpools: a 2", "Subpools:"]) == {0}  # at least one
    assert _agrees_with_grammar("np_classes", ["Classes: background low 3", "Classes:"]) == {0, 1}
    assert _agrees_with_grammar("np_node_file", ["Node File: /home/ducc/nodes  x", "Node File:"]) == {0}
    assert _agrees_with_grammar("node_heartbeat", [  # after a host the lexer reads a leading '-' as "-"
        "3 host short 10.0.0.1", "3 host -3 10.0.0.1", "3 host --- 10.0.0.1", "3 host -x 10.0.0.1",
    ]) == {0, 1}
    assert _agrees_with_grammar("property", [
        "Policy              : FAIR_SHARE", "Expand By Doubling  : true", "Cap :", "Cap:2", "a:b : c", ": x",
        "Node File           :  /home/ducc/nodes  x", "no colon",
    ]) == {0, 1, 2, 3, 4, 6}
    assert _agrees_with_grammar("node_blacklist", [
        "h1 7 0a1b2c3d-4e procs 2 shares left 3 / 4", "h1 7 0a1b2c3g procs 2 shares left 3 / 4",
        "h1 7 0a1b procs 2 shares left 3 / 4",
    ]) == {0}


_WORDS = st.sampled_from(["0", "1", "-3", "12", "007", "bob", "x.y", "h.12", "a.b.7", "=", "(a)", "J_4", "J.4",
                          "2Q4", "--", "-", "0a1b2c3d", "POTENTIALLY", "NEEDY", "the", "rich.", "<none>",
                          "a\tb", "\u00e9", "5.", "[3]"])


# words a field of any token takes, and some the grammar's lexer may read as another terminal
_FIELD_WORDS = {K_ANY: ["bob", "x.y", "J_4", "h.12", "2Q4", "5.", "[3]", "(a)", "0a1b2c3d", "=", "==", ":", "->",
                        "wantedby.x", "jd.host.class=x", "h.1^2", "---"],
                K_INT: ["0", "12", "-3", "007"], K_UINT: ["0", "12", "007"],
                K_UUID: ["0a1b2c3d", "0a1b-2c3d-4e"], K_NQM: ["2Q4", "10Q0"],
                K_NUM: ["0", "-3", "1.5", "2.", "1.0E10", "3e-2", "NaN", "-Infinity", "1e", "x"],
                K_NOMINUS: ["bob", "x-", "-3", "-x", "---", "->", "-3x"]}


def _token_for(op: tuple, data) -> list[str]:
    """Tokens for one op: mostly what it asks for (so most bodies match), now and then not."""
    code, lit, pre, suf, kind = op[0], op[1].decode(), op[2].decode(), op[3].decode(), op[5]
    if not data.draw(st.integers(0, 29)):
        return data.draw(st.lists(_WORDS, max_size=2))
    if code == T_LIT:
        return [lit]
    if code == T_LIST:
        words = _FIELD_WORDS[kind] if kind == K_INT else [*_FIELD_WORDS[K_ANY], "7"]
        items = data.draw(st.lists(st.sampled_from(words), min_size=op[6], max_size=4))
        if not (pre or suf):
            return items
        # "[4 5 ]", "[ 4]", "[]": the brackets glued to the items or not
        gaps = data.draw(st.lists(st.sampled_from(["", " "]), min_size=2, max_size=2))
        return [pre + gaps[0] + " ".join(items) + gaps[1] + suf]
    if code == T_LABEL:  # a key of one or more words, padded or not, then ':'
        key = data.draw(st.lists(st.sampled_from(["Policy", "Expand", "By", "x.y", "=", "-1", "(a)", "a:b", "::"]),
                                 min_size=1, max_size=3))
        return [" ".join(key) + data.draw(st.sampled_from(["", " ", "   "])) + ":"]
    if code == T_REST:
        return data.draw(st.lists(st.sampled_from(["all", "done", "x.y", "(p)"]), min_size=1, max_size=4))
    if code == T_PHRASE:
        phrases = [p.split(" ") for p in lit.split("|")]
        return data.draw(st.sampled_from([*phrases, *([[]] if not op[6] else [])]))
    if code == T_RUN:
        return [lit * data.draw(st.integers(op[6], 9))]
    if code == T_TYPED:
        return [data.draw(st.sampled_from(["J_4", "R_____17", "?9", "S3"]))]
    if code == T_REF:
        return [data.draw(st.sampled_from(["J.4", "R.17"]))]
    if code == T_SHARE:
        return [data.draw(st.sampled_from(["h.12", "a.b.7", "sys2-15.3"]))]
    return [pre + data.draw(st.sampled_from(_FIELD_WORDS[kind])) + suf]


@settings(max_examples=400)
@given(st.sampled_from(sorted(TEMPLATES)), st.data())
def test_any_body_a_template_takes_the_grammar_takes_alike(family, data):
    text = data.draw(st.sampled_from(templates_of(family)))
    tokens = [t for op in compile_template(text).ops for t in _token_for(op, data)]
    gap = st.sampled_from([" "] * 12 + ["  ", "   ", " \t"])
    gaps = data.draw(st.lists(gap, min_size=len(tokens), max_size=len(tokens)))
    body = "".join(g + t for g, t in zip(gaps, tokens)).strip()
    _agrees_with_grammar(family, [body])
