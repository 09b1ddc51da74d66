"""Two shrunk oracle scenarios (the real RM's logs and truth.jsonl) from oracle seed 11010:

* corpus/negative_find_shares: How Much leaves a job's count below zero and findShares prints it
  at DEBUG (`counted -1 current 0 needed -1 ...`). Every such line is read (none unparsed, so no
  cycle is damaged) and the audit's counts are truth's.
* corpus/needy_tally_order: detectFragmentation lists a class's jobs in the class's own job map's
  order and tallies them in a fresh map's, so a class's rows are no evidence of the tally order.
  In cycle 79 the RM found one job needy where the class rows' order would have left only rmref's
  own pick, another job: the audit verifies the RM's verdict among the orders the log leaves open,
  and that verdict is truth's.
"""

from __future__ import annotations

import gzip
import re

import polars as pl
import pytest

from replay.apps.audit import audit
from replay.model.logged import logged_decisions
from tests.damaged import agrees_with_truth
from tests.helpers import log_path, parsed, truth

NEGATIVE = "corpus/negative_find_shares"
TALLY = "corpus/needy_tally_order"
_FIND_SHARES = re.compile(r" (\d+) T\[\d+\] findShares +counted (-?\d+) current (-?\d+) needed (-?\d+) "
                          r"order (\d+) given (-?\d+)$")


def _negative_lines(name: str) -> list[tuple[int, ...]]:
    """(job, counted, current, needed, order, given) of each findShares line with a count below zero,
    read off the log text."""
    with gzip.open(log_path(name, "rm-debug.log"), "rt", encoding="utf-8") as fh:
        rows = [tuple(int(g) for g in m.groups()) for line in fh if (m := _FIND_SHARES.search(line.rstrip("\n")))]
    return [r for r in rows if r[1] < 0]


@pytest.mark.parametrize("engine", ["fast", "polars", "lark"])
def test_every_negative_find_shares_line_is_a_row(engine):
    want = _negative_lines(NEGATIVE)
    assert want, "the fixture no longer shows a negative count"
    tables = parsed(NEGATIVE, "rm-debug.log", engine=engine).tables
    assert tables["unparsed"].height == 0
    got = (tables["expansions"].filter((pl.col("kind") == "find_shares_counted") & (pl.col("counted") < 0))
           .select("job_id", "counted", "current", "needed", "order", "count").rows())
    assert got == want


def test_the_log_with_negative_counts_audits_undamaged_and_agrees_with_truth():
    tables = parsed(NEGATIVE, "rm-debug.log").tables
    result = audit(tables)
    assert result.damaged == {}
    agrees_with_truth(NEGATIVE, tables, result)


@pytest.mark.parametrize("level", ["rm.log", "rm-debug.log"])
def test_a_needy_verdict_the_class_rows_order_would_exclude_is_verified_and_is_truths(level):
    tables = parsed(TALLY, level).tables
    result = audit(tables)
    assert result.divergences == []
    found = [f for f in result.verified if f.decision == "defrag"]
    assert found, "the fixture no longer needs a tally order the log leaves open"
    logged = logged_decisions(tables)
    by_epoch = {r["epoch"]: r for r in truth(TALLY)}
    epochs = dict(tables["cycles"].select("cycle", "epoch").iter_rows())
    rows = tables["defrag"].filter(pl.col("kind") == "analysis")
    for f in found:
        rm = logged.needy[f.cycle]
        assert {int(k): v for k, v in by_epoch[epochs[f.cycle]]["defrag"]["needy"].items()} == rm
        # the class's rows list the job the RM found needy before the one it did not (rmref's pick):
        # read as the tally order, they would leave rmref's verdict the only one (the RM tallied the
        # other first, which the free space then covered)
        listed = rows.filter(pl.col("cycle") == f.cycle)["job_id"].to_list()
        before = [j for j in rm if j != f.job_id and j in listed and f.job_id in listed
                  and listed.index(j) < listed.index(f.job_id)]
        assert before, "the class rows no longer list the two jobs against the RM's tally order"
        assert not any((j, f.job_id) in logged.job_order_known[f.cycle] for j in before)
