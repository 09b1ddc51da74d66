"""The compiled scanner (replay.parsing._scan) against the polars path it replaces and the regexes and
grammar its templates stand for: hand-worked lines, then Hypothesis over generated ones."""

from __future__ import annotations

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing.chunks import Piece
from replay.parsing.families import FAMILY_CODE, GENERIC, ROUTES, TARGETS
from replay.parsing.family_rows import lark_rows
from replay.parsing.pipeline import parse
from replay.parsing.routing import route
from replay.parsing.prefixes import Unsupported, compile_prefix
from replay.parsing.records import find_records, split_lines
from replay.parsing.scan import fill_rows, occupancy_rows, rmcounter_rows, section_rows, templated
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


# -- routing: the compiled prefixes against polars' regexes -------------------------------------

_GROUPS = sorted(ROUTES)


def _routed(lines: list[str]) -> tuple[list, list]:
    """(compiled, polars) family of each header line's record."""
    _, recs = scan_records([Piece(0, 1, "\n".join(lines).encode())])
    compiled = route(recs.records, recs)["family"].to_list()
    by_polars = route(full_records(recs).drop("_fam"))["family"].to_list()
    return compiled, by_polars


def _line(group: tuple[str, str], body: str) -> str:
    return f"01 Jan 2015 00:01:00,000  INFO RM.{group[0]} - N/A T[1] {group[1]} {body}"


def test_every_route_prefix_is_in_the_compiled_subset():
    for routes in ROUTES.values():
        for one in routes:
            compile_prefix(one.prefix)


def test_syntax_outside_the_subset_is_refused_not_guessed():
    for regex in (r"\bword", r"(?P<x>a)", r"a{2,x}", r"(a*)*", "caf\u00e9", r"[\d-z]"):
        with pytest.raises(Unsupported):
            compile_prefix(regex)


def test_hand_worked_bodies_route_alike():
    cases = [
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares RmCounter Start"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares  wantedby.J12 = 1 2"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares A 1 2 3"),
        (("NodepoolScheduler", "apportion_qshares"), "countJobShares A 1 2 x"),
        (("NodepoolScheduler", "doEvictions"), "-1   0 3 4"),
        (("NodepoolScheduler", "doEvictions"), "1 0 3 -4"),
        (("NodepoolScheduler", "detectFragmentation"), "np  bob -1 2 3 4 5 POTENTIALLY NEEDY"),
        (("NodePool", "disable"), "Nodepool: np Host offline: h1 purge: true"),
        (("Scheduler", "initClasses"), "----"), (("Scheduler", "initClasses"), "---"),
        (("Scheduler", "initClasses"), "fair FIXED_SHARE 1"), (("Scheduler", "schedule"), "-----"),
        (("Scheduler", "findNodepoolByRule"), "3 host short 10.0.0.1"),
        (("Scheduler", "findNodepoolByRule"), "3 host short 10.0.0.1 extra"),
        (("JobManagerConverter", "eventArrives"), "[S] State: x"),
        (("NoSuchClass", "method"), "anything"),
    ]
    compiled, by_polars = _routed([_line(g, b) for g, b in cases])
    assert compiled == by_polars
    assert compiled[:4] == ["rmc_start", None, "rmc_before_bonus_row", None]  # one space after \S+, not two
    assert compiled[-1] == GENERIC


_ASCII = st.characters(min_codepoint=32, max_codepoint=126) | st.just("\t")


@st.composite
def _near_route(draw) -> tuple[tuple[str, str], str]:
    """A (class, METHOD) and a body that matches one of its prefixes, often then damaged."""
    group = draw(st.sampled_from(_GROUPS))
    prefix = draw(st.sampled_from([r.prefix for r in ROUTES[group]]))
    body = draw(st.from_regex(prefix, alphabet=_ASCII)).strip(" \t")
    edit = draw(st.sampled_from(["keep", "cut", "change", "grow"]))
    at = draw(st.integers(0, max(len(body) - 1, 0)))
    if edit == "cut":
        body = body[:at] + body[at + 1:]
    elif edit == "change":
        body = body[:at] + draw(st.sampled_from(list(" -1x*:[")) ) + body[at + 1:]
    elif edit == "grow":
        body = body + draw(st.text(alphabet=" 1-ab", max_size=6))
    return group, body.strip(" \t")


@settings(max_examples=400)
@given(st.lists(_near_route(), min_size=1, max_size=10))
def test_any_body_routes_as_polars_routes_it(cases):
    compiled, by_polars = _routed([_line(group, body) for group, body in cases])
    assert compiled == by_polars


# -- RmCounter blocks: the scanner's assembly against the general one ---------------------------

_NAMES = ["low", "high", "J7", "bob", "42"]
_RMC = "01 Jan 2015 00:01:00,000  INFO RM.NodepoolScheduler - N/A T[19] apportion_qshares  "
_SENT = "01 Jan 2015 00:01:00,000  INFO RM.JobManagerConverter - N/A T[19] createState  Schedule sent to Orchestrator"
_ints = st.lists(st.integers(-5, 99), max_size=5).map(lambda xs: " ".join(f"{x:3d}" for x in xs))
_rmc_line = st.one_of(
    st.just("RmCounter Start"), st.just("RmCounter End"), st.just("Final apportionment:"),
    st.integers(0, 90).map(lambda n: f"maxorder =  {n}"),
    st.lists(st.sampled_from(_NAMES), max_size=4).map(lambda ns: "entity_names =  " + " ".join(ns) + " "),
    _ints.map(lambda v: f"weights      =  {v} "), _ints.map(lambda v: f"vmachines = {v}"),
    st.tuples(st.sampled_from(_NAMES), _ints).map(lambda t: f"wantedby.{t[0]} = {t[1]}"),
    st.tuples(st.sampled_from(_NAMES), _ints).map(lambda t: f"{t[0]} gbo {t[1]}"),
    _ints.map(lambda v: f"vshares {v}"), _ints.map(lambda v: f"nshares {v}"),
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.tuples(st.sampled_from(["countClassShares", "countJobShares"]), _rmc_line),
                          st.just(("", "sent")), st.just(("countJobShares", "weights = 1 x"))),
                min_size=1, max_size=40),
       st.booleans())
def test_rmcounter_blocks_the_scanner_assembles_are_the_general_ones(tmp_path_factory, lines, canonical):
    if canonical:  # mostly lines every template takes; else now and then one it refuses
        lines = [ln for ln in lines if ln[1] != "weights = 1 x"]
    text = "\n".join([*(_SENT if body == "sent" else f"{_RMC}{descr} {body}" for descr, body in lines), _SENT]) + "\n"
    log = tmp_path_factory.mktemp("rmc") / "rm.log"
    log.write_text(text)
    fast_tables = parse(str(log), engine="fast").tables
    general = parse(str(log), engine="polars").tables
    assert_frame_equal(fast_tables["rmcounter"], general["rmcounter"])
    assert_frame_equal(fast_tables["unparsed"], general["unparsed"])


def test_the_scanner_assembles_rmcounter_blocks_itself():
    """A hand-worked block: the scanner's path is the one taken, and its rows are right."""
    body = ["countJobShares RmCounter Start", "countJobShares maxorder =  3", "countJobShares entity_names =  a b a ",
            "countJobShares weights      =  5   7 ", "countJobShares wantedby.a =    1   2",
            "countJobShares wantedby.a =    3", "countJobShares vmachines =   0   4", "countJobShares RmCounter End"]
    text = "\n".join(_RMC + b for b in body) + "\n"
    _, recs = scan_records([Piece(0, 1, text.encode())])
    rows = rmcounter_rows(route(recs.records), recs.blocks)
    assert rows is not None
    assert rows.select("entity", "weight", "wanted", "vmachines", "maxorder", "given").rows() == [
        ("a", 5, [3], [0, 4], 3, None), ("b", 7, None, [0, 4], 3, None), ("a", None, [3], [0, 4], 3, None)]


# -- the published schedule: the scanner's reading against the general one ---------------------

_STATE = "01 Jan 2015 00:01:00,000  INFO RM.JobManagerConverter - N/A T[19] createState  "
_share = st.tuples(st.sampled_from(["h1", "sys2-15", "a.b.c"]), st.integers(0, 30), st.integers(0, 9999),
                   st.booleans()).map(lambda t: f"{t[0]}.{t[1]}^{t[2]}" + ("^P" if t[3] else ""))
_shares = st.lists(_share, max_size=3).map(" ".join)
_job = st.tuples(st.sampled_from(["Reservation", "Job", "Service"]), st.integers(1, 99), st.integers(1, 64),
                 st.sampled_from(["", " ", "  waiting for defrag", " Refused: no room"]))
_canonical_job = st.one_of(
    _job.flatmap(lambda j: st.tuples(_shares, _shares, _shares, _shares).map(lambda s: [
        f"{j[0]} {j[1]} {j[2]}GB{j[3]} ", f"\tExisting[{len(s[0].split())}]: {s[0]} ",
        f"\tAdditions[1]: {s[1]}", *([f"\t   {s[3]}"] if s[3] else []), f"\tRemovals[0]: {s[2]}", ""])),
    st.tuples(st.sampled_from(["Job", "Reservation"]), st.integers(1, 99), st.sampled_from(["no room", "x  y"])).map(
        lambda t: [f"{t[0]} {t[1]} ", f"\tRefused: {t[2]}", ""]),
)
_odd_line = st.sampled_from(["\tExisting[1]:h.1^0", "\tAdditions[1]: h.1^0x", "Job  5 2GB", "\t\th.1^0", "\tRefused:",
                             "Job 5 2GBx", "\t h.1^0", "\tRemovals[0]: junk h.2^0", "Job 7", "\tExisting[1]: h^1.2^0"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_canonical_job, max_size=3),
                          st.lists(st.tuples(st.integers(0, 12), _odd_line), max_size=2)), min_size=1, max_size=4))
def test_schedules_the_scanner_reads_are_the_general_ones(tmp_path_factory, records):
    text = []
    for jobs, odd in records:
        lines = [ln for job in jobs for ln in job]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_STATE + "Schedule sent to Orchestrator", _STATE, *lines]
    log = tmp_path_factory.mktemp("sched") / "rm.log"
    log.write_text("\n".join(text) + "\n")
    fast_tables = parse(str(log), engine="fast").tables
    general = parse(str(log), engine="polars").tables
    assert_frame_equal(fast_tables["schedule"], general["schedule"])
    assert_frame_equal(fast_tables["unparsed"], general["unparsed"])


def test_a_block_of_many_entities_is_assembled_as_the_general_path_does(tmp_path):
    """Thousands of entities (a busy class), wantedby and gbo lines out of order and repeated."""
    names = [f"J{i}" for i in range(1500)]
    order = names[::-1] + names[::7]
    body = (["countJobShares RmCounter Start", "countJobShares maxorder =  3",
             "countJobShares entity_names =  " + " ".join(names),
             "countJobShares weights      =  " + " ".join(str(i % 9 + 1) for i in range(1400))]
            + [f"countJobShares wantedby.{n} =    {i % 5}   {i % 3}" for i, n in enumerate(order)]
            + ["countJobShares vmachines =   0   4", "countJobShares Final apportionment:"]
            + [f"countJobShares {n} gbo  {i}" for i, n in enumerate(names[::3])] + ["countJobShares RmCounter End"])
    log = tmp_path / "rm.log"
    log.write_text("\n".join([*(_RMC + b for b in body), _SENT]) + "\n")
    fast_tables, general = parse(str(log), engine="fast").tables, parse(str(log), engine="polars").tables
    assert fast_tables["rmcounter"].height == 1500
    assert_frame_equal(fast_tables["rmcounter"], general["rmcounter"])


# -- the DEBUG tables: the vectorised readers against the grammar ------------------------------

_QUERY = "01 Jan 2015 00:01:00,000  INFO RM.NodePool - N/A T[19] queryMachines  "
_SCHEDULE = "01 Jan 2015 00:01:00,000 DEBUG RM.Scheduler - N/A T[19] schedule  "
_OCC_HEADER = "                 Name  Blacklisted Order Active Shares Unused Shares Memory (MB) Jobs"
_OCC_RULE = "-------------------- ------------ ----- ------------- ------------- ----------- ------ ..."
_machine = st.tuples(st.sampled_from(["sys290-14", "nodeB.sim.ducc", "h.1"]), st.sampled_from(["false", "true"]),
                     st.integers(0, 80), st.integers(0, 80), st.lists(st.integers(1, 99), max_size=3),
                     st.sampled_from(["", "[3]", " [12]"])).map(
    lambda m: f"{m[0]:>20} {m[1]:>12} {m[2]:5d} {m[3]:13d} {m[3]:13d} {m[2] * 1024:11d} "
              + (" ".join(map(str, m[4])) or "<none>") + m[5])
_odd_occ = st.sampled_from(["", "   ", "\tsys1\tfalse\t4\t0\t4\t4096\t<none>", " h false 4 0 4 4096",
                            "= false 4 0 4 4096 <none>", " h false 4 0 4 4096 <none>[x]", " h false -4 0 4 4096 1 -2",
                            _OCC_HEADER, "----- ...",
                            # the shapes the compiled reader refuses and leaves to the polars handler
                            " h false 4 0 4 4096 1 2[3]", " h false 4 0 4 4096 <none> 1", " h false 4 0 4 4096 [3]",
                            " wantedby.x false 4 0 4 4096 <none>", " h := 4 0 4 4096 <none>",
                            " h false 4 0 4 4096 <none>\r", " h false 4 0 4 4096 1 [2] [3]",
                            " h false 4 0 4 4096 " + " ".join(str(i) for i in range(1, 70)) + " [1]",
                            " h false 4 0 4 1234567890123456789 <none>", " h false 4 0 4 4096 <none> [3] ",
                            " h\u00e9 false 4 0 4 4096 <none>", "- ...", "-- -x ..."])
_JOB_HEADER = ("            ID                        JobName       User      Class Shares Order QShares NTh Memory "
               "nQuest Ques Rem InitWait Max P/Nst")
_job_row = st.tuples(st.sampled_from(["J", "R", "S"]), st.integers(1, 999), st.sampled_from(["job7", "Job_Driver"]),
                     st.sampled_from(["bob", "System"]), st.integers(0, 60)).map(
    lambda j: f"   {j[0]}{'_' * 9}{j[1]} {j[2]:>30} {j[3]:>10} {'normal':>10} {j[4]:6d}     2       2   0      "
              f"2      0        0        0         1")
_section = st.tuples(st.sampled_from(["Expanded", "Shrunken", "Stable", "Dormant", "Reserved"]),
                     st.one_of(st.just(None), st.lists(_job_row, max_size=3))).map(
    lambda s: [f"{s[0]}:", "   <none>"] if s[1] is None else [f"{s[0]}:", _JOB_HEADER, *s[1]])
_odd_sched = st.sampled_from(["", "Stable :", "   <none>", _JOB_HEADER, "Other:", "   J_5 job bob normal 1 2",
                              "   X_5 job bob normal 0 2 2 0 2 0 0 0 1",
                              # the shapes the compiled reader refuses and leaves to the polars handler
                              "Stable: :", "Stable::", "   J_ job bob normal 0 2 2 0 2 0 0 0 1",
                              "   J_5 job == normal 0 2 2 0 2 0 0 0 1", "   J_5 job bob normal 0 2 2 0 2 0 0 x 1",
                              "   J_5 job bob normal 0 2 2 0 2 0 0 wantedby.x 1", "\tStable:", "Stable:\r",
                              "   J_5 job bob normal 0 2 2 0 2 0 0 0 1 extra", "   <none> x",
                              "   ?5 job b\u00e9b normal 0 2 2 0 2 0 0 0 1", "   R5 job bob normal 0 2 2 0 2 0 0 0 -1"])


def _same_as_grammar(tmp_path_factory, text: str, tables: tuple[str, ...]) -> None:
    log = tmp_path_factory.mktemp("debug") / "rm.log"
    log.write_text(text)
    fast_tables, general = parse(str(log), engine="fast").tables, parse(str(log), engine="lark").tables
    for name in (*tables, "unparsed"):
        assert_frame_equal(fast_tables[name], general[name])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_machine, max_size=4), st.lists(st.tuples(st.integers(0, 6), _odd_occ), max_size=2),
                          st.booleans()), min_size=1, max_size=3))
def test_occupancy_tables_read_as_the_grammar_reads_them(tmp_path_factory, tables):
    text = []
    for rows, odd, with_header in tables:
        lines = [*([_OCC_HEADER, _OCC_RULE] if with_header else []), *rows, ""]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_QUERY, *lines]
    _same_as_grammar(tmp_path_factory, "\n".join(text) + "\n", ("occupancy",))


def _occupancy_scan(lines: list[str]):
    _, recs = scan_records([Piece(0, 1, "\n".join([_QUERY, *lines, ""]).encode())])
    return occupancy_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)


def test_the_scanner_reads_canonical_schedule_sections_itself():
    """A hand-worked pretty-printed schedule: the compiled reader takes it, with these rows (a
    header with no job row is a row of its own, with its section), and refuses another shape."""
    _, recs = scan_records([Piece(0, 1, "\n".join([
        _SCHEDULE, "Expanded:", "   <none>", "", "Stable :", _JOB_HEADER,
        "   J_________17 job7 bob normal 60 2 2 0 2 0 0 0 1", "   S_3 Job_Driver System normal -1 2 2 0 2 0 0 0 1",
        "Dormant:", _JOB_HEADER, "", ""]).encode())])
    rows, failed = section_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)
    assert failed.is_empty()
    none = [None] * 14
    assert rows.rows() == [
        (0, "Expanded", *none),
        (0, "Stable", "J", "17", "job7", "bob", "normal", "60", "2", "2", "0", "2", "0", "0", "0", "1"),
        (0, "Stable", "S", "3", "Job_Driver", "System", "normal", "-1", "2", "2", "0", "2", "0", "0", "0", "1"),
        (0, "Dormant", *none)]
    _, recs = scan_records([Piece(0, 1, "\n".join([_SCHEDULE, "Stable:", _JOB_HEADER, "Other:", ""]).encode())])
    rows, failed = section_rows(route(recs.records).select("rec"), recs.continuations, recs.blocks)
    assert rows.is_empty() and failed["rec"].to_list() == [0]


def test_the_scanner_reads_canonical_occupancy_tables_itself():
    """Hand-worked tables: the compiled reader takes the canonical ones, with these fields, and
    leaves any other shape to the polars handler (the Hypothesis test above holds both to the grammar)."""
    rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE, "   sys1  false  79  0  79  80896 <none>[79]",
                                    "   sys2  true  31  30  1  31744 1 2 [1]", "   sys3  false  -4  0  4  4096 7",
                                    "", " "])
    assert failed.is_empty()
    assert rows.rows() == [
        (0, "sys1", "false", "79", "0", "79", "80896", None, "79"),
        (0, "sys2", "true", "31", "30", "1", "31744", ["1", "2"], "1"),
        (0, "sys3", "false", "-4", "0", "4", "4096", ["7"], None)]
    assert rows.columns == ["rec", "m_host", "m_blacklisted", "m_order", "m_active", "m_unused", "memory_mb",
                            "m_jobs_list", "free"]
    rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE])  # a table with no machine: one row, no fields
    assert failed.is_empty() and rows.rows() == [(0, *[None] * 8)]
    for odd in (" h false 4 0 4 4096 1 2[3]", "\th false 4 0 4 4096 <none>", " h false 4 0 4 4096", ""):
        rows, failed = _occupancy_scan([_OCC_HEADER, _OCC_RULE, odd, " h false 4 0 4 4096 <none>"])
        assert rows.is_empty() and failed["rec"].to_list() == [0], odd


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(_section, min_size=1, max_size=5),
                          st.lists(st.tuples(st.integers(0, 12), _odd_sched), max_size=2)),
                min_size=1, max_size=3))
def test_debug_schedule_sections_read_as_the_grammar_reads_them(tmp_path_factory, records):
    text = []
    for sections, odd in records:
        lines = [ln for i, sec in enumerate(sections) for ln in ([""] if i else []) + sec]
        lines[0] = " " + lines[0]
        for at, line in odd:
            lines.insert(min(at, len(lines)), line)
        text += [_SCHEDULE, *lines, "", ""]
    _same_as_grammar(tmp_path_factory, "\n".join(text) + "\n", ("jobs",))


# -- the bootstrap records the regexes and handlers read so that lark need not load ---------------

_BOOT_TOKENS = {
    "class_table_title": ["Classes:", "Classes", ":", "Class"],
    "class_table_header": ("Class Name Policy Prio Wgt AbsCap InitCap Dbling Prdct PFudge Shr Enforce Nodepool "
                           "Names -- x").split(),
    "class_table_rule": ["--", "-----", "-", "---x", "x", "-1", "==", "---------"],
    "jd_host_class": ["jd.host.class=JobDriver", "jd.host.user=System", "jd.host.class=", "jd.host.user=",
                      "jd.host.class=a=b", "x", "jd.host.class=JobDriver jd.host.user=System"],
    "rich_retry": ["Could not clear sufficient space from rich candidates.", "Retrying", "with", "all", "candidates.",
                   "x", "Could"],
    "node_purge": ["Nodepool: np2a Host dead: Job purge: n01", "Nodepool: np Purge Service on dead/offline: n02",
                   "Nodepool:", "np2a", "12,", "-5", "Host dead:", "Host", "dead:", "Job", "purge:", "Purge",
                   "on", "dead/offline:", "n01.sim"],
    "defer": ["Deferred", "because", "x", "\u00a0y", "allotment", "-"],
    "res_deferred": ["Deferred because", "Deferred", "because", "insufficient", "x.", "because:"],
    "fixed_deferring": ["Deferring,", "Deferring", ",", "insufficient", "shares."],
    "fixed_out_of_shares": ["Nodepool is out of shares:", "Nodepool", "is", "out", "of", "shares:", "np1"],
    "np_nodes": ["<None>", "node01", "<none>", "None", "7", "-5", "12,", "--", "-x", "5-", "<None>x", "a.b"],
}


def _boot_body(data, family: str) -> str:
    tokens = data.draw(st.lists(st.sampled_from(_BOOT_TOKENS[family]), min_size=1, max_size=4))
    if family == "class_table_header" and data.draw(st.booleans()):
        tokens = _BOOT_TOKENS[family][:13]  # the canonical header, with odd gaps
    gaps = data.draw(st.lists(st.sampled_from([" ", " ", "  ", "\t", " \t"]), min_size=len(tokens) + 1,
                              max_size=len(tokens) + 1))
    return "".join(g + t for g, t in zip(gaps, tokens)) + (gaps[-1] if data.draw(st.booleans()) else "")


@settings(max_examples=500, deadline=None)
@given(st.sampled_from(sorted(_BOOT_TOKENS)), st.data())
def test_bootstrap_records_read_without_lark_are_read_as_the_grammar_reads_them(family, data):
    """Whatever the regex path or a handler takes, the grammar takes with the same fields (the
    class table's title, header and rule feed no table: only that they parse counts)."""
    from replay.parsing import fast

    bodies = [data.draw(st.sampled_from(_BOOT_TOKENS[family])), _boot_body(data, family), _boot_body(data, family)]
    part = pl.DataFrame({"rec": range(len(bodies)), "body": bodies}, schema={"rec": pl.UInt32, "body": pl.String})
    lines = st.lists(st.sampled_from(["", "  ", "node02", "<None>", "n1 n2", " 3 ", "4,"]), max_size=2)
    more = data.draw(lines) if family == "np_nodes" else []
    cont = pl.DataFrame({"rec": [0] * len(more), "text": more}, schema={"rec": pl.UInt32, "text": pl.String})
    rows, failed = fast.fast_rows(family, part, cont)
    took = set(part["rec"].to_list()) - set(failed["rec"].to_list())
    assert set(rows["rec"].to_list()) == took
    expected, refused = lark_rows(family, part, cont)
    assert not took & set(refused["rec"].to_list()), f"taken but the grammar rejects: {bodies}, {more}"
    if family in TARGETS:
        def fields(frame: pl.DataFrame) -> list[dict]:
            return [{k: v for k, v in row.items() if v is not None} for row in frame.sort("rec").to_dicts()]

        assert fields(rows) == fields(expected.filter(pl.col("rec").is_in(list(took))))


def test_the_canonical_bootstrap_records_are_read_without_lark():
    """The bodies as the RM prints them (fixtures/a_tiny/rm.log): every one taken by the regex path
    or a handler, with the grammar's fields."""
    from replay.parsing import fast

    bodies = {"class_table_title": "Classes:",
              "class_table_header": "Class Name      Policy Prio   Wgt AbsCap InitCap Dbling  Prdct  PFudge   Shr "
                                    "Enforce Nodepool",
              "class_table_rule": "------------ ----------- ---- ----- ------ ------- ------ ------ ------- -----",
              "jd_host_class": "jd.host.class=JobDriver jd.host.user=System",
              "np_nodes": "<None>"}
    no_cont = pl.DataFrame(schema={"rec": pl.UInt32, "text": pl.String})
    for family, body in bodies.items():
        part = pl.DataFrame({"rec": [7], "body": [body]}, schema={"rec": pl.UInt32, "body": pl.String})
        rows, failed = fast.fast_rows(family, part, no_cont)
        assert failed.is_empty() and rows["rec"].to_list() == [7], family
    part = pl.DataFrame({"rec": [7], "body": [bodies["jd_host_class"]]}, schema={"rec": pl.UInt32, "body": pl.String})
    assert fast.fast_rows("jd_host_class", part, no_cont)[0]["value"].to_list() == [bodies["jd_host_class"]]


def test_purges_the_handler_takes_are_the_grammars():
    """node_purge (two tables, so no template): both shapes taken with the grammar's fields; a token
    the grammar lexes as two ("12,": INT and WORD), other blanks or spacing go on to the grammar."""
    from replay.parsing import fast

    bodies = ["Nodepool: np2a Host dead: Job purge: np2a01.sim.ducc",
              "Nodepool: --default-- Purge Service on dead/offline: n02.sim.ducc",
              "Nodepool: 12, Host dead: Job purge: n01", "Nodepool: np Host  dead: Job purge: n01",
              "Nodepool: np Host offline: Job purge: 7,", "Nodepool: np\tPurge Service on dead/offline: n02",
              "Nodepool: -5 Host dead/offline: 3 purge: -x"]
    part = pl.DataFrame({"rec": range(len(bodies)), "body": bodies}, schema={"rec": pl.UInt32, "body": pl.String})
    rows, failed = fast.fast_rows("node_purge", part, pl.DataFrame())
    assert rows["rec"].to_list() == [0, 1, 6] and failed["rec"].to_list() == [2, 3, 4, 5]
    expected, _ = lark_rows("node_purge", part, pl.DataFrame())
    want = expected.filter(pl.col("rec").is_in([0, 1, 6]))
    assert rows.select(want.columns).to_dicts() == want.to_dicts()
