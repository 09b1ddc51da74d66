"""The registry of compiled table builders (replay.parsing.builders): one owner per bucket."""

from __future__ import annotations

from collections import Counter

import polars as pl
import pytest

from replay.parsing import assemble, builders, columns, columns_text
from replay.parsing.scan import RawRows, fill_plan


def test_every_compiled_bucket_has_one_builder():
    owners = Counter(bucket for b in builders.BUILDERS for bucket in b.buckets)
    assert [bucket for bucket, n in owners.items() if n > 1] == []
    # every bucket the compiled readers may leave unframed; the unparsed lines are the pipeline's own
    assert set(owners) == set(columns.COMPILED_TABLES) - {columns_text.UNEXPECTED}


def test_a_bucket_no_builder_owns_is_an_error(monkeypatch):
    bucket = fill_plan()[0][0]
    monkeypatch.setattr(builders, "BUILDERS", ())
    records = pl.DataFrame({"rec": [0], "ts": [None], "file": [0], "line": [1], "tid": [1], "_job": [None],
                            "_mc": [0], "_code": [-1]}, schema={
        "rec": pl.UInt32, "ts": pl.Datetime("ms"), "file": pl.UInt16, "line": pl.UInt32, "tid": pl.UInt32,
        "_job": pl.Int64, "_mc": pl.UInt8, "_code": pl.Int32})
    raw = {bucket.table: [RawRows(bucket, (b"", b"", ()), b"", records["rec"].to_numpy(), records["rec"].to_numpy(),
                                  records["_code"].to_numpy())]}
    with pytest.raises(ValueError, match="no compiled table builder owns"):
        assemble.assemble_chunk({}, records, ["rm.log"], pl.DataFrame(), True, raw)
