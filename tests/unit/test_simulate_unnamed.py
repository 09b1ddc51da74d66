"""The class of work no line of the job table names (replay.apps.simulate.unnamed), on hand-worked
lines: a class another line names is read; else the configuration's classes of the policy the
counting lines show, in the pool doEvictions shows, narrow it, and the note says how."""

from __future__ import annotations

import polars as pl

from replay.apps.simulate.unnamed import UNNAMED, unnamed_classes
from replay.parsing.tables import SCHEMAS, conform
from rmref.model import ClassDef

CLASSES = (ClassDef("fair", "FAIR_SHARE", 10, 100, "--default--"),
           ClassDef("rsva", "RESERVE", 2, 1, "--default--"), ClassDef("rsvb", "RESERVE", 2, 1, "--default--"),
           ClassDef("rsvc", "RESERVE", 5, 1, "np1"), ClassDef("rsvd", "RESERVE", 3, 1, "np1"),
           ClassDef("fixa", "FIXED_SHARE", 7, 1, "np1"))


def _tables(counts: list[dict], evictions: list[dict] = (), defrag: list[dict] = ()) -> dict[str, pl.DataFrame]:
    def frame(rows, name):
        rows = [dict(r, line=i + 1) for i, r in enumerate(rows)]
        framed = conform(pl.DataFrame(rows) if rows else pl.DataFrame(), SCHEMAS[name])
        return framed.filter(pl.col("line").is_not_null())  # (an empty frame conforms to one row of nulls)
    return {"counts": frame(counts, "counts"), "eviction_counts": frame(list(evictions), "eviction_counts"),
            "defrag": frame(list(defrag), "defrag")}


def test_a_class_another_line_names_is_read():
    tables = _tables([{"job_id": 1, "policy": "RESERVE"},
                      {"job_id": 2, "reason": "Deferred because there are no hosts of the correct size in class rsvd"}],
                     defrag=[{"job_id": 1, "class": "rsvb"}])
    got = unnamed_classes(tables, CLASSES, [1, 2])
    assert {j: c for j, (c, _n) in got.items()} == {1: "rsvb", 2: "rsvd"}
    assert "detectFragmentation" in got[1][1] and "deferral" in got[2][1]


def test_the_policy_and_pool_narrow_it():
    tables = _tables([{"job_id": 1, "policy": "FIXED_SHARE"}, {"job_id": 2, "policy": "RESERVE"},
                      {"job_id": 3, "policy": "RESERVE"}, {"job_id": 4, "policy": "RESERVE"}],
                     evictions=[{"job_id": 2, "nodepool": "--default--"}, {"job_id": 3, "nodepool": "np1"}])
    got = unnamed_classes(tables, CLASSES, [1, 2, 3, 4, 5])
    assert {j: c for j, (c, _n) in got.items()} == {1: "fixa", 2: "rsva", 3: "rsvc", 4: "rsva"}
    assert all(n.startswith(UNNAMED) for _c, n in got.values())
    assert "the configuration's only FIXED_SHARE class" in got[1][1]
    assert "rsva, rsvb" in got[2][1] and got[2][1].endswith("they are alike but for the name")  # (priority 2 both)
    assert got[3][1].endswith("they schedule differently and no line tells which it is")  # rsvc 5, rsvd 3
    assert "rsva, rsvb, rsvc, rsvd" in got[4][1]  # no pool shown: every RESERVE class
