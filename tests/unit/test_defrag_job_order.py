"""The RM's needy-job order as the INFO log shows it (replay.model.logged.defrag_job_order), on rows
written from detectFragmentation lines the real RM printed (oracle seed 11010, scenario 001, epoch 84).

A class's rows iterate the class's own job map; the ACTUALLY NEEDY lines iterate a map
detectFragmentation fills afresh. With 13 jobs in class fair24a (a 32-bucket table) the two listed
jobs 31 and 35 in opposite orders, and the RM tallied 35 first (it found both needy: 35 took the one
free 23-quantum hole that was also 31's only 20-quantum space)."""

from __future__ import annotations

import polars as pl

from replay.model.logged import defrag_job_order

# "Nodepool User PureFS NSh Counted Needed O Class: fair24a" rows, in the RM's order, then the
# "NP: --default-- User: ... ACTUALLY NEEDY" lines
_CLASS_ROWS = (6, 22, 31, 23, 17, 30, 2, 35, 27, 21, 13, 33, 34)
_NEEDY_ROWS = (35, 31)


def _defrag(analysis: tuple[int, ...], needy: tuple[int, ...], cycle: int = 79) -> pl.DataFrame:
    rows = ([(cycle, "analysis", "fair24a", "--default--", j) for j in analysis]
            + [(cycle, "needy", None, "--default--", j) for j in needy])
    return pl.DataFrame(rows, schema={"cycle": pl.UInt32, "kind": pl.String, "class": pl.String,
                                      "nodepool": pl.String, "job_id": pl.Int64}, orient="row")


def test_the_needy_lines_order_is_known_and_the_class_rows_order_is_not():
    order, known = defrag_job_order(_defrag(_CLASS_ROWS, _NEEDY_ROWS))[79]
    assert (35, 31) in known
    assert (31, 35) not in known and (6, 22) not in known  # the class's map: another table size
    assert order.index(35) < order.index(31)


def test_where_the_lines_contradict_the_class_rows_give_way_only_where_they_must():
    order, _ = defrag_job_order(_defrag(_CLASS_ROWS, _NEEDY_ROWS))[79]
    assert order == [6, 22, 23, 17, 30, 2, 35, 31, 27, 21, 13, 33, 34]


def test_where_they_agree_the_order_is_the_class_rows_with_the_needy_lines_known():
    order, known = defrag_job_order(_defrag(_CLASS_ROWS, (31, 35)))[79]
    assert order == list(_CLASS_ROWS)
    assert (31, 35) in known and (35, 31) not in known
