"""`_scan.fill`'s rows sized before they are written (replay/parsing/csrc/fill.c): the call holds
little more than the rows it returns, which are those of hand-built records of known fields."""

from __future__ import annotations

import tracemalloc

import numpy as np

from replay.parsing import _scan
from replay.parsing.families import FAMILY_CODE
from replay.parsing.scan import fill_plan


def test_the_call_holds_little_more_than_the_rows_it_returns():
    # its tables' vectors grew by doubling, each step a copy beside the old buffer: twice and more
    # what it returned at its highest
    bodies = [f"{k} {k % 7} {k % 5} {k % 90}" for k in range(40_000)]  # evict_row: four integers
    data = "\n".join(bodies).encode()
    ends = np.cumsum([len(b) + 1 for b in bodies], dtype=np.int32) - 1
    starts = ends - np.array([len(b) for b in bodies], dtype=np.int32)
    codes = np.full(len(bodies), FAMILY_CODE["evict_row"], dtype=np.int32)
    plan = fill_plan()[1]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        status, rows = _scan.fill(data, starts, ends, codes, plan)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert (np.frombuffer(status, dtype=np.uint8) == 1).all()
    taken = [got for got in rows if len(got[0])]
    assert len(taken) == 1
    recs, spans, lists = taken[0]
    assert np.frombuffer(recs, dtype=np.int32).tolist() == list(range(len(bodies)))
    fields = np.frombuffer(spans, dtype=np.int32).reshape(len(bodies), -1, 2)
    assert [data[a:b].decode() for a, b in fields[123] if a >= 0] == ["123", "4", "3", "33"]
    returned = len(status) + len(recs) + len(spans) + sum(len(c) + len(v) for got in rows for c, v in got[2])
    assert kept - before >= returned
    assert peak - before <= 1.2 * returned + (256 << 10)
