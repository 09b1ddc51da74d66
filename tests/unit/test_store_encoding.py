"""The Parquet encoding of the parsed tables (docs/benchmarks.md, "Parquet encoding") and the
word split that replaced Arrow's kernel in the parse."""

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from replay.parsing.fast import split_words
from replay.parsing.store import write_table

TEXTS = [" a  b ", "a\tb", "a", "", "  ", None, "a \x0b\x0cb\r", "é b", "a\xa0b", "2 1 [4]"]


def test_split_words_splits_as_arrows_ascii_split_whitespace():
    col = pl.Series("m_jobs_list", TEXTS, dtype=pl.String)
    arrow = pl.Series(pc.ascii_split_whitespace(col.to_arrow())).cast(pl.List(pl.String)).to_list()
    # the grammar's list of no words is [] where Arrow gives [""] or ["", ""]
    expected = [[] if text is not None and not text.strip() else words for text, words in zip(TEXTS, arrow)]
    assert split_words(col).to_list() == expected


@pytest.fixture
def written(tmp_path):
    frame = pl.DataFrame({"host": ["n1", "n2", None] * 100, "shares": list(range(300)),
                          "jobs": [[1, 2], [], None] * 100})
    return frame, write_table(frame, tmp_path / "t.parquet")


def test_tables_are_lz4_raw_with_dictionaries_only_on_string_columns(written):
    _, path = written
    meta = pq.ParquetFile(path).metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert {c.compression for c in columns.values()} == {"LZ4"}  # pyarrow's name for LZ4_RAW
    dictionary = {name for name, c in columns.items() if c.has_dictionary_page}
    assert dictionary == {"host"}


def test_the_same_rows_give_the_same_bytes_and_every_reader_reads_them(written, tmp_path):
    import duckdb
    import pandas as pd

    frame, path = written
    again = write_table(frame, tmp_path / "again.parquet")
    assert path.read_bytes() == again.read_bytes()
    assert pl.read_parquet(path).equals(frame)
    assert duckdb.sql(f"select count(*), count(host), sum(shares) from '{path}'").fetchall() == [(300, 200, 44850)]
    assert pd.read_parquet(path)["shares"].tolist() == list(range(300))
    assert pa.types.is_string(pq.read_schema(path).field("host").type) or pa.types.is_large_string(
        pq.read_schema(path).field("host").type)
