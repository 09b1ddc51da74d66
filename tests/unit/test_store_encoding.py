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


def test_each_tables_arrow_schema_is_the_one_polars_exports():
    """store.arrow_schema maps the types itself; polars' export of the empty table is the truth."""
    from replay.parsing.store import arrow_schema
    from replay.parsing.tables import SCHEMAS

    for name, schema in SCHEMAS.items():
        assert arrow_schema(name).equals(pl.DataFrame(schema=schema).to_arrow().schema, check_metadata=True), name


def test_a_type_the_map_lacks_falls_back_to_polars_export(monkeypatch):
    from replay.parsing import store
    from replay.parsing.tables import SCHEMAS

    monkeypatch.setitem(SCHEMAS, "_odd", {"a": pl.Int8, "b": pl.Datetime("us", "UTC"), "c": pl.List(pl.Int16)})
    assert store._arrow_type(pl.Int8) is None
    expected = pl.DataFrame(schema=SCHEMAS["_odd"]).to_arrow().schema
    assert store.arrow_schema.__wrapped__("_odd").equals(expected, check_metadata=True)


def test_the_manifest_counts_the_rows_its_writer_wrote(tmp_path):
    """parse_to's manifest takes the row counts from the writer (store.ParquetSink.rows), not the
    files' footers: both must agree, and a table the writer did not count is read from its footer."""
    from pathlib import Path

    from replay.parsing.cache import parse_to
    from replay.parsing.manifest import build_manifest, read_manifest
    from replay.parsing.tables import SCHEMAS

    out = tmp_path / "out"
    log = Path(__file__).resolve().parents[2] / "fixtures" / "a_tiny" / "rm.log"
    parse_to([log], out, workers=1)
    manifest = read_manifest(out)
    assert manifest is not None
    footers = {name: pq.ParquetFile(out / f"{name}.parquet").metadata.num_rows for name in SCHEMAS}
    assert manifest["tables"] == footers and footers["cycles"] == 20  # a_tiny's 20 "Schedule sent" lines
    partial = {"cycles": footers["cycles"]}
    assert build_manifest(out, "parse", rows=partial)["tables"] == footers


def test_every_parse_directory_records_the_columns_its_files_have(tmp_path):
    """The manifest's `columns` (read in place of the footers: store.require_columns) are each
    file's own, as its footer gives them, from every writer of a parse directory: `parse -o`,
    `write_tables`, and the cache's slot."""
    from pathlib import Path

    from replay import parse
    from replay.parsing.cache import open_input, parse_to
    from replay.parsing.manifest import read_manifest
    from replay.parsing.store import write_tables
    from replay.parsing.tables import SCHEMAS

    log = Path(__file__).resolve().parents[2] / "fixtures" / "a_tiny" / "rm.log"
    parse_to([log], tmp_path / "parsed", workers=1)
    write_tables(parse([log]).tables, tmp_path / "written")
    slot = open_input([log]).slot  # the tests' own cache (conftest)
    assert slot is not None
    for root in (tmp_path / "parsed", tmp_path / "written", slot / "tables"):
        manifest = read_manifest(root)
        assert manifest is not None
        footers = {name: pq.read_schema(root / f"{name}.parquet").names for name in SCHEMAS}
        assert manifest["columns"] == footers, root
