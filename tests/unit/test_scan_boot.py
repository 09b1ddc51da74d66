"""The bootstrap records the regexes and handlers read so that lark need not load (and the purges),
against the grammar: the canonical bodies, then Hypothesis over near ones."""

from __future__ import annotations

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from replay.parsing.families import TARGETS
from replay.parsing.family_rows import lark_rows


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
