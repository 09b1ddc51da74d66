"""The eviction and allotment tables typed in C (replay.parsing.columns_events, columns.plain_table)
against the polars reference, on hand-worked logs (expected rows read off the lines) and
Hypothesis-generated ones, chunk by chunk and across chunks (stitch's share orders)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay.parsing import columns
from replay.parsing.pipeline import parse
from tests.unit.test_columns import _SENT, _both, _log
from tests.compiled import both_ways

_NS = "NodepoolScheduler"
_HEADER = (_NS, "N/A", "doEvictions", "Counted Current Needed Order ({p})")


def _header(pool: str) -> tuple[str, str, str, str]:
    return (*_HEADER[:3], _HEADER[3].format(p=pool))


def _row(jid: str, body: str) -> tuple[str, str, str, str]:
    return (_NS, jid, "doEvictions", body)


# 64 KB of generic messages: the chunker reads 64 KB at a time and cuts after the last published
# structure read (createState's record), so a log with this ahead of every cycle is cut into a
# chunk per cycle
_FILLER = [("Filler", "N/A", "pad", "x" * 100)] * 520
_STRUCTURE = ("JobManagerConverter", "N/A", "createState", "")


def _padded(records: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """`records` with `_FILLER` ahead of every cycle."""
    out = list(_FILLER)
    for record in records:
        out.append(record)
        if record == _SENT:
            out.extend([_STRUCTURE, *_FILLER])
    return out


def _chunked(path: str, table: str, chunk_bytes: int | None) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """`_both` with the log cut into chunks of about `chunk_bytes` (None: one chunk)."""
    return both_ways([path], columns._BUILDERS, table, chunk_bytes).table(table)


def test_eviction_rows_take_the_nodepool_before_them_and_count_their_cycles_headers(tmp_path):
    path = _log(tmp_path, [
        _header("--default--"),
        _row("7", "3 2 1 4"),
        _row("8", "5 5 0 1"),
        _header("np2"),
        (_NS, "N/A", "doEvictions", "Recurse to np2.child"),  # neither a header nor a row
        _row("N/A", "1 0 1 2"),
        _SENT,
        _row("9", "2 2 -1 3"),  # a new cycle before its header: the last nodepool, no header yet
        _header("np3"),
        _row("9", "4 4 0 1"),
        _SENT,
    ])
    compiled, reference, built = _both(path, "eviction_counts")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("cycle", "job_id", "nodepool", "block", "counted", "current", "needed", "order").rows() == [
        (1, 7, "--default--", 1, 3, 2, 1, 4), (1, 8, "--default--", 1, 5, 5, 0, 1), (1, None, "np2", 2, 1, 0, 1, 2),
        (2, 9, "np2", 0, 2, 2, -1, 3), (2, 9, "np3", 1, 4, 4, 0, 1)]


@pytest.mark.parametrize("odd", [
    ("N/A", "doEvictions", "Recurse to"),  # no text: the template refuses it, the grammar decides
    ("7", "doEvictions", "--default-- 3 2 1 4"),  # 2.0.x print the nodepool first: the regex reads it
    ("7", "doEvictions", "12345678901234567890 2 1 4"),  # beyond int64: the template refuses it
])
def test_an_eviction_count_line_the_templates_do_not_take_sends_the_chunk_the_reference_way(tmp_path,
                                                                                              odd):
    path = _log(tmp_path, [_header("--default--"), _row("7", "3 2 1 4"), (_NS, *odd), _SENT])
    compiled, reference, built = _both(path, "eviction_counts")
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)


def test_headers_without_a_row_give_no_table_in_c(tmp_path):
    path = _log(tmp_path, [_header("--default--"), _SENT])
    compiled, reference, built = _both(path, "eviction_counts")
    assert built == 0 and compiled.is_empty()
    assert_frame_equal(compiled, reference, check_exact=True)


_PLACE = ("NodePool", "{j}", "connectShare", "share {s} order {o} machine h1 false 4 2 2 8192 <none>")


def _placed(jid: str, share: str, order: int) -> tuple[str, str, str, str]:
    return (_PLACE[0], jid, _PLACE[2], _PLACE[3].format(s=share, o=order))


_EVICTIONS = [
    _placed("7", "h1.3", 2),
    ("RmJob", "7", "shrinkBy", "Removing share h1.3"),  # no order: the placement's
    # placed in the next cycle: a chunk's placements all count, a later chunk's do not
    ("RmJob", "7", "shrinkByOne", "Job schedules h1.4 for removal."),
    _SENT,
    _placed("7", "h1.4", 3),
    ("RmJob", "7", "removeShare", "Job removes h1.4 reduces from 2 to 1."),
    ("RmJob", "8", "shrinkBy", "Removing share h2.1"),  # never placed: null
    _SENT,
    ("RmJob", "7", "shrinkBy", "Removing share h1.3"),  # placed two cycles before (another chunk, cut small)
    _SENT,
]


@pytest.mark.parametrize("chunk_bytes", [None, 100])
def test_evictions_take_their_share_order_from_the_first_placement_in_this_chunk_or_before(tmp_path,
                                                                                            chunk_bytes):
    path = _log(tmp_path, _EVICTIONS if chunk_bytes is None else _padded(_EVICTIONS))
    compiled, reference, built = _chunked(path, "evictions", chunk_bytes)
    assert built == (1 if chunk_bytes is None else 3)  # a chunk a cycle
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("cycle", "job_id", "host", "share_id", "order", "reason").rows() == [
        (1, 7, "h1", 3, 2, "shrink"), (1, 7, "h1", 4, 3 if chunk_bytes is None else None, "schedule_removal"),
        (2, 7, "h1", 4, 3, "share_removed"), (2, 8, "h2", 1, None, "shrink"), (3, 7, "h1", 3, 2, "shrink")]


@pytest.mark.parametrize("odd", [
    ("RmJob", "7", "shrinkBy", "Removing share h1.007"),  # keyed by its text, which its number does not give
    ("NodePool", "7", "setupPreemptions", "Found non-preemptable share 7.1 of job 3"),  # the template refuses it
    ("RmJob", "7", "shrinkBy", "Removing share\th1.3"),  # a tab: the template refuses it
])
def test_an_eviction_the_c_code_does_not_take_sends_the_chunk_the_reference_way(tmp_path, odd):
    path = _log(tmp_path, [_placed("7", "h1.007", 5), ("RmJob", "7", "shrinkBy", "Removing share h1.3"), odd, _SENT])
    compiled, reference, built = _both(path, "evictions")
    assert built == 0
    assert_frame_equal(compiled, reference, check_exact=True)
    if odd[3].endswith("007"):
        assert compiled["order"].to_list() == [None, 5]


def test_reservation_evictions_name_a_machine_and_no_share(tmp_path):
    path = _log(tmp_path, [
        ("NodePool", "N/A", "setupPreemptions", "Clearing h1 from preemptable list for reservations."),
        ("NodePool", "N/A", "countFreeableMachines", "Setting up h2 for eviction"),
        ("NodePool", "N/A", "countFreeableMachines", "Setting up h3 to clear for reservation"),  # 2.0.x
        _SENT,
    ])
    compiled, reference, built = _both(path, "evictions")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("host", "share_id", "order", "reason").rows() == [
        ("h1", None, None, "clear_for_reservation"), ("h2", None, None, "setup_for_reservation"),
        ("h3", None, None, "setup_for_reservation")]


_ALLOT = (_NS, "7", "getAllotmentForJob")


def test_allotment_rows_are_their_lines_typed(tmp_path):
    path = _log(tmp_path, [
        (*_ALLOT, "Job cap 2Q4"),
        (*_ALLOT, "Current NP allocation for user 12 qshares 48 GB user_allotment 100 user_allotment in GB 400"),
        (*_ALLOT, "Additional Nshares allowed for request: 6Q24"),
        (*_ALLOT, "Deferred because allotment of 32 GB is exceeded."),
        (_NS, "8", "validAllotment", "Deferred because allotment of 64GB is exceeded by user lou"),
        (*_ALLOT, "Allotment of 32 GB caps request. Return with 8 qshares allocated."),
        (*_ALLOT, "Capping job on allotment: 16 GB. Remaining allowed nshares [ 3 ] wanted [ 5 ]"),
        (*_ALLOT, "Allowed 6Q24 wanted 1Q4"),
        _SENT,
    ])
    compiled, reference, built = _both(path, "allotments")
    assert built == 1
    assert_frame_equal(compiled, reference, check_exact=True)
    assert compiled.select("job_id", "kind", "nqm", "wanted_nqm", "qshares", "memory_gb", "allotment_qshares",
                           "allotment_gb", "user", "count").rows() == [
        (7, "job_cap", "2Q4", None, None, None, None, None, None, None),
        (7, "current", None, None, 12, 48, 100, 400, None, None),
        (7, "additional", "6Q24", None, None, None, None, None, None, None),
        (7, "deferred", None, None, None, None, None, 32, None, None),
        (8, "deferred_user", None, None, None, None, None, 64, "lou", None),
        (7, "caps", None, None, 8, None, None, 32, None, None),
        (7, "capping", None, None, None, None, None, 16, None, 3),
        (7, "allowed", "6Q24", "1Q4", None, None, None, None, None, None)]


def test_an_allotment_line_the_templates_refuse_sends_the_chunk_the_reference_way(tmp_path):
    path = _log(tmp_path, [(*_ALLOT, "Job cap 2Q4"),
                           (*_ALLOT, "Capping job on allotment: 16 GB. Remaining allowed nshares [3] wanted [5]"),
                           _SENT])
    compiled, reference, built = _both(path, "allotments")
    assert built == 0 and compiled["count"].to_list() == [None, 3]
    assert_frame_equal(compiled, reference, check_exact=True)


_HOST = st.sampled_from(["h1", "h2", "sys2-15"])
_SMALL = st.integers(-3, 40).map(str)


@st.composite
def _eviction_record(draw):
    share = f"{draw(_HOST)}.{draw(st.integers(0, 4))}"
    jid = draw(st.sampled_from(["N/A", "1", "2"]))
    n = [draw(_SMALL) for _ in range(3)]
    return draw(st.sampled_from([
        _SENT, _header(draw(st.sampled_from(["--default--", "np2"]))),
        _row(jid, f"{n[0]} {n[1]} {n[2]} {draw(st.integers(0, 9))}"),
        _row("N/A", draw(st.sampled_from(["Recurse to np2", "Return from np2"]))),
        ("NodePool", jid, "setupPreemptions", f"Found non-preemptable share {n[0]} fixed: false"),
        _placed(jid, share, draw(st.integers(0, 9))),
        ("RmJob", jid, "shrinkBy", f"Removing share {share}"),
        ("RmJob", jid, "shrinkByOne", f"Job schedules {share} for removal."),
        ("RmJob", jid, "removeShare", f"Job removes {share} reduces from 3 to 2."),
    ]))


@settings(max_examples=40, deadline=None)
@given(st.lists(_eviction_record(), min_size=1, max_size=40), st.sampled_from([None, 100]))
def test_generated_eviction_records_give_the_reference_tables(records, chunk_bytes):
    with tempfile.TemporaryDirectory() as tmp:
        path = _log(Path(tmp), records if chunk_bytes is None else _padded(records))
        # doEvictions' header and recursion lines are no rows (shrinkBy's "Removing share" is one)
        methods = {m: any(r[2] == m and not (m == "doEvictions" and r[3].startswith(("Counted", "Re")))
                          for r in records)
                   for m in ("doEvictions", "shrinkBy", "shrinkByOne", "removeShare", "setupPreemptions")}
        for table, some in (("evictions", methods["shrinkBy"] or methods["shrinkByOne"] or methods["removeShare"]
                             or methods["setupPreemptions"]),
                            ("eviction_counts", methods["doEvictions"])):
            compiled, reference, built = _chunked(path, table, chunk_bytes)
            assert_frame_equal(compiled, reference, check_exact=True)
            assert (built >= 1) == some  # every line templated: the C code builds each chunk with rows


def test_the_eviction_allotment_and_expansion_templates_read_what_the_grammar_reads():
    # tests/unit/test_scan.py holds every template to the grammar on generated bodies; these are
    # the bodies each template must take, and near misses it must leave to the regexes and lark
    from tests.unit.test_scan import _agrees_with_grammar

    cases = {
        "schedule_removal": (["Job schedules sys292-40.56 for removal.", "Job schedules  a.b.7  for  removal.",
                              "Job schedules sys292-40 for removal.", "Job schedules h.1 for removal"], {0, 1}),
        "evict_recurse": (["Recurse to np2 with 3", "Return from  np2", "Recurse to", "Recurse  to np2"], {0, 1}),
        "non_preemptable": (["Found non-preemptable share 7 fixed: false j.NShares 3 j.NSharesGiven 2",
                             "Found non-preemptable share 7", "Found non-preemptable share 7.1 of"], {0}),
        "clear_for_reservation": (["Clearing h1 from preemptable list for reservations.",
                                   "Clearing h1 from preemptable list for reservations"], {0}),
        "freeable_evict": (["Setting up h1 for eviction", "Setting up h1 to clear for reservation",
                            "Setting up h1 for"], {0, 1}),
        "allot_deferred_user": (["Deferred because allotment of 32GB is exceeded by user lou",
                                 "Deferred because allotment of 32 GB is exceeded by user lou",
                                 "Deferred because allotment of -32GB is exceeded by user lou"], {0}),
        "allot_capping": (["Capping job on allotment: 32 GB. Remaining allowed nshares [ 3 ] wanted [ 5 ]",
                           "Capping job on allotment: 32 GB. Remaining allowed nshares [3] wanted [5]"], {0}),
        "allot_allowed": (["Allowed 6Q24 wanted 1Q4", "Allowed 6Q24 wanted 1"], {0}),
        "fixed_assign": (["Assign(H): 2Q4", "Assign(V): 10Q0", "Assign: 2Q4", "Assign(X): 2Q4", "Assign:2Q4",
                          "Assign(H): 2"], {0, 1, 2}),
        "freeable_order": (["Machines to search in order: h1 h2", "Machines to search: h1",
                            "Machines to search in order:"], {0, 1, 2}),
        "freeable_giving": (["Giving h1 because it is free", "Giving h1 because it is freeable",
                             "Giving h1 because it is busy"], {0, 1}),
        "freeable_enter": (["Enter nodepool np1 preemptables.size() = 3",
                            "Enter nodepool np1 preemptables.size()=3"], {0}),
    }
    for family, (bodies, taken) in cases.items():
        assert _agrees_with_grammar(family, bodies) == taken, family


_ACROSS = [
    _placed("7", "h1.3", 2),  # the share's first placement
    _SENT,
    _placed("7", "h1.3", 6),  # placed again, a chunk later: the first placement's order still wins
    ("RmJob", "7", "shrinkBy", "Removing share h1.3"),  # no order: 2, from the first chunk
    _placed("7", "h2.5", 4),
    _SENT,
    ("RmJob", "7", "shrinkBy", "Removing share h2.5"),  # no order: 4, from the chunk before
    ("RmJob", "8", "shrinkBy", "Removing share h3.1"),  # never placed: null
    _SENT,
]


@pytest.mark.parametrize("tables", [None, {}])  # the table built in C, and the polars reference
def test_a_share_placed_in_one_chunk_gives_its_order_to_an_eviction_chunks_later(tmp_path, monkeypatch, tables):
    if tables is not None:
        monkeypatch.setattr(columns, "COMPILED_TABLES", tables)
    got = parse([_log(tmp_path, _padded(_ACROSS))], chunk_bytes=100).tables["evictions"]
    assert got.select("cycle", "job_id", "host", "share_id", "order", "reason").rows() == [
        (2, 7, "h1", 3, 2, "shrink"), (3, 7, "h2", 5, 4, "shrink"), (3, 8, "h3", 1, None, "shrink")]
