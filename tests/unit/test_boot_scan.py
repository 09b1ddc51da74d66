"""The two bootstrap families read by the compiled scanner (replay.parsing.boot_scan, csrc/boot.c):
a pool's node list (np_nodes) and the JD host line (jd_host_class). Hand-worked rows from the log
text, one test per way the reader refuses (the handler, regex or grammar then decides, and the
bucket goes the reference way), the reader held to the grammar on generated bodies, and a bundled
log whose boot rows are all typed in C (so that path cannot go dead unnoticed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.parsing import _scan, boot_scan, columns_boot, pipeline
from replay.parsing.chunks import Piece
from replay.parsing.family_rows import lark_rows
from replay.parsing.pipeline import parse
from replay.parsing.routing import route
from replay.parsing.scanned import scan_records, with_strings
from tests.unit.test_columns_boot import _both as typed_and_reference
from tests.unit.test_columns_boot import _write

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
POOL = "01 Jan 2015 00:00:00,000  INFO RM.Config - N/A T[1] printNodepool  "
JD = "01 Jan 2015 00:00:00,000  INFO RM.ResourceClass - N/A T[1] ResourceClass  "
JD_BODY = "jd.host.class=JobDriver jd.host.user=System"
BOOT = ("config", "classes", "nodepools", "unparsed")


def _log(nodes: list[str], jd: str = JD_BODY) -> list[str]:
    """Two pools, the second with the node list `nodes` (its first line a record, the rest continuation
    lines), then the JD host line; line numbers: the JD line is the last."""
    return [POOL + "   Nodepool --default--", POOL + "      Scheduling quantum: 4", POOL + "      Node File: None",
            POOL + "                 <None>", POOL + "      Classes: normal", POOL + "      Subpools: big",
            POOL + "      Nodepool big", POOL + "         Node File: big.nodes", POOL + nodes[0], *nodes[1:],
            POOL + "         Classes: normal-big", POOL + "         No subpools.", JD + jd]


def _both(paths: list[Path]) -> tuple[dict[str, pl.DataFrame], list[bool], dict[str, list[bool]]]:
    """The boot tables (and unparsed) with the compiled readers, checked equal to the reference's;
    per bucket block whether columns_boot typed it in C; per family whether the reader read it."""
    read: dict[str, list[bool]] = {}
    real_read = boot_scan.read
    with pytest.MonkeyPatch.context() as m:
        m.setattr(boot_scan, "read", lambda family, *a: read.setdefault(family, []).append(
            (got := real_read(family, *a)) is not None) or got)
        compiled, built = typed_and_reference(paths, BOOT)
    return compiled, built, read


def test_node_lists_and_the_jd_host_line_typed_in_c(tmp_path):
    lines = _log(["                n01 n02 7 ", "                n03 -x "])
    tables, built, read = _both([_write(tmp_path, lines)])
    assert read == {"np_nodes": [True], "jd_host_class": [True]}
    assert built == [True, True]  # _config_lines, _nodepool_lines: every row from the scanner
    # "<None>" under --default--'s Node File; big's names over its record's line and the next
    assert tables["nodepools"].select("name", "parent", "node_file", "classes", "subpools", "nodes", "line").rows() == [
        ("--default--", None, "None", ["normal"], ["big"], None, 1),
        ("big", "--default--", "big.nodes", ["normal-big"], None, ["n01", "n02", "7", "n03", "-x"], 7)]
    assert tables["config"].filter(pl.col("key") == "jd.host").select("value", "file", "line").rows() == [
        (JD_BODY, "rm.log", 13)]
    assert tables["unparsed"].is_empty()


def test_rows_of_a_bucket_with_no_templated_row(tmp_path):
    # the JD host line and a node list alone: their buckets' rows are the readers' only
    tables, built, read = _both([_write(tmp_path, [POOL + "   n01 n02", JD + JD_BODY])])
    assert read == {"np_nodes": [True], "jd_host_class": [True]} and built == [True, True]
    assert tables["config"].select("key", "value", "line").rows() == [("jd.host", JD_BODY, 2)]
    assert tables["nodepools"].is_empty()  # a node list under no pool's name makes no pool


def _spans(text: bytes, lines: list[tuple[int, bytes]]) -> list[np.ndarray]:
    """(rec, start, end) int32 columns of `lines` (record, line text) found in order in `text`."""
    out, at = [], 0
    for rec, line in lines:
        start = text.index(line, at)
        out.append((rec, start, start + len(line)))
        at = start + len(line)
    return [np.array(col, dtype=np.int32) for col in zip(*out)]


def test_the_readers_spans_by_hand():
    data = b"x   n01 n02 7 \n   n03 -x\n\n<None>\njd.host.class=JobDriver jd.host.user=System\n"
    lines = [(0, b"  n01 n02 7 "), (0, b"   n03 -x"), (0, b""), (1, b"<None>")]
    rec, counts, items, refused = _scan.nodes(data, *_spans(data, lines))
    spans = np.frombuffer(items, dtype=np.int32).reshape(-1, 2)
    assert np.frombuffer(rec, dtype=np.int32).tolist() == [0, 1] and not refused
    assert np.frombuffer(counts, dtype=np.int32).tolist() == [5, -1]  # "<None>": no list
    assert [data[s:e].decode() for s, e in spans] == ["n01", "n02", "7", "n03", "-x"]
    rec, values, refused = _scan.jd_host(data, *_spans(data, [(4, JD_BODY.encode())]))
    (s, e), = np.frombuffer(values, dtype=np.int32).reshape(-1, 2)
    assert np.frombuffer(rec, dtype=np.int32).tolist() == [4] and data[s:e].decode() == JD_BODY and not refused


# (the node list's lines, the JD body, what the reference way gives: big's nodes, config's jd.host, unparsed rows)
REFUSED = {
    "a token the grammar lexes as two": (["  n01 12, n02"], JD_BODY, ["n01", "12", ",", "n02"], JD_BODY, 0),
    "another blank (a tab)": (["  n01\tn02"], JD_BODY, ["n01", "n02"], JD_BODY, 0),
    "a first line with no token": (["", "     n05 n06"], JD_BODY, ["n05", "n06"], JD_BODY, 0),
    "<None> with more after it": (["  <None> n01"], JD_BODY, None, JD_BODY, 1),
    "a token glued to <None>": (["  <None>x"], JD_BODY, None, JD_BODY, 1),
    "a byte beyond ASCII": (["  n\u00f6de n01"], JD_BODY, ["n\u00f6de", "n01"], JD_BODY, 0),
    "the JD line beyond ASCII": (["  n01"], "jd.host.class=J\u00f6bDriver jd.host.user=System", ["n01"],
                                 "jd.host.class=J\u00f6bDriver jd.host.user=System", 0),
    "the JD line with two blanks": (["  n01"], "jd.host.class=JobDriver  jd.host.user=System", ["n01"], None, 1),
    "the JD line without a class": (["  n01"], "jd.host.class= jd.host.user=System", ["n01"], None, 1),
    "the JD line with more after it": (["  n01"], JD_BODY + " x", ["n01"], None, 1),
}


@pytest.mark.parametrize("way", sorted(REFUSED))
def test_a_record_the_reader_refuses_goes_the_reference_way(tmp_path, way):
    nodes, jd, want_nodes, want_jd, unparsed = REFUSED[way]
    tables, built, read = _both([_write(tmp_path, _log(nodes, jd))])
    refused = "jd_host_class" if jd != JD_BODY else "np_nodes"
    assert read[refused] == [False] and read["jd_host_class" if refused == "np_nodes" else "np_nodes"] == [True]
    assert built == [True]  # the other bucket only: this one's rows came from a handler, regex or the grammar
    big = tables["nodepools"].filter(pl.col("name") == "big")
    assert big["nodes"].to_list() == [want_nodes]
    config = dict(tables["config"].select("key", "value").rows())
    assert config.get("jd.host") == want_jd
    assert tables["unparsed"].height == unparsed


def test_records_in_two_blocks_go_the_reference_way(tmp_path):
    lines = _log(["  n01"])
    first = _write(tmp_path, [*lines[:9], JD + "jd.host.class=Old jd.host.user=System"], "rm.log.1")
    second = _write(tmp_path, lines[9:], "rm.log")
    tables, built, read = _both([first, second])
    assert read["jd_host_class"] == [False]  # a JD line in each file: the regex reads both
    assert dict(tables["config"].select("key", "value").rows())["jd.host"] == JD_BODY  # the last one
    assert tables["nodepools"].filter(pl.col("name") == "big")["nodes"].to_list() == [["n01"]]


_NODE_TOKENS = ["n01", "<None>", "<none>", "None", "7", "-5", "12,", "--", "-x", "5-", "<None>x", "a.b", "n\u00f6de",
                "==", "-", "12.5", "a:b"]
_JD_TOKENS = ["jd.host.class=JobDriver", "jd.host.user=System", "jd.host.class=", "jd.host.user=",
              "jd.host.class=a=b", "x", "jd.host.class=J\u00f6b", JD_BODY]
_GAPS = [" ", " ", "  ", "\t", ""]


def _line(tokens: list[str], gaps: list[str]) -> str:
    return "".join(g + t for g, t in zip(gaps, tokens))


@st.composite
def _body(draw, alphabet: list[str], max_tokens: int = 4) -> str:
    tokens = draw(st.lists(st.sampled_from(alphabet), max_size=max_tokens))
    return _line(tokens, draw(st.lists(st.sampled_from(_GAPS), min_size=len(tokens), max_size=len(tokens))))


def _reader_and_grammar(family: str, lines: list[str]) -> tuple[boot_scan.Read | None, pl.DataFrame, pl.DataFrame]:
    """The reader's rows of the family's records in `lines`, and the grammar's (rows, refused)."""
    _, recs = scan_records([Piece(0, 1, ("\n".join(lines) + "\n").encode())])
    part = route(recs.records, recs).filter(pl.col("family") == family)
    got = boot_scan.read(family, part, recs)
    expected, refused = lark_rows(family, with_strings(recs, part, ["body"]), recs.continuations)
    return got, expected, refused


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["np_nodes", "jd_host_class"]), st.data())
def test_what_the_reader_takes_the_grammar_reads_the_same(family, data):
    if family == "np_nodes":
        first = data.draw(st.one_of(_body(_NODE_TOKENS), st.sampled_from(["   <None>", "   n01 n02 7 "])))
        lines = [POOL + first, *data.draw(st.lists(_body(_NODE_TOKENS + ["   "]), max_size=3))]
    else:
        lines = [JD + data.draw(st.one_of(_body(_JD_TOKENS, 3), st.just(JD_BODY)))]
    got, expected, refused = _reader_and_grammar(family, lines)
    if got is None:
        return
    assert refused.is_empty(), f"taken but the grammar rejects: {lines}"
    text = lambda s, e: bytes(got.data[s:e]).decode()  # noqa: E731
    if family == "jd_host_class":
        assert [text(s, e) for s, e in got.spans] == expected["value"].to_list()
        return
    items = iter(got.spans.tolist())
    rows = [None if n < 0 else [text(*next(items)) for _ in range(n)] for n in got.counts.tolist()]
    assert rows == (expected["nodes_list"].to_list() if "nodes_list" in expected.columns else [None])


def test_the_canonical_bodies_are_the_readers():
    """The reader is not vacuous: the shapes the RM prints are taken (the Hypothesis test above
    only checks what it takes)."""
    for family, lines in (("np_nodes", [POOL + "      <None>"]), ("np_nodes", [POOL + "   n01 n02 ", "   n03 "]),
                          ("jd_host_class", [JD + JD_BODY])):
        got, expected, refused = _reader_and_grammar(family, lines)
        assert got is not None and refused.is_empty(), lines


@pytest.mark.parametrize("log", ["rm.log.gz", "rm-debug.log.gz"])
def test_every_chunk_of_a_bundled_log_types_its_boot_rows_in_c(monkeypatch, log):
    """fixtures/h_mega15, INFO and DEBUG (cut in small chunks): every chunk's boot rows come from the
    scanner and are typed in C, none framed the reference way."""
    seen: list[tuple[bool, bool]] = []
    real = pipeline.assemble_chunk

    def spy(buckets, *args):
        tables, carry = real(buckets, *args)
        boot = {b: rows for b, rows in carry.spanning.items() if b in columns_boot.BUCKETS}
        if boot or any(b in buckets for b in columns_boot.BUCKETS):
            seen.append((not any(b in buckets for b in columns_boot.BUCKETS),
                         all(isinstance(rows, pa.Table) for rows in boot.values())))
        return tables, carry

    monkeypatch.setattr(pipeline, "assemble_chunk", spy)
    tables = parse([str(FIXTURES / "h_mega15" / log)], chunk_bytes=1 << 16).tables
    assert seen and all(framed_none and typed for framed_none, typed in seen), seen
    assert tables["nodepools"].height and tables["config"].filter(pl.col("key") == "jd.host").height == 1
