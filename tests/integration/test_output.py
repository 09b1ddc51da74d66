"""Parquet output: byte-identical across runs, readable by polars, duckdb and pandas."""

from __future__ import annotations

import duckdb
import pandas as pd
import polars as pl

from replay import parse
from replay.cli import main
from replay.parsing.store import read_tables
from replay.parsing.tables import SCHEMAS
from tests.helpers import log_path, truth


def test_parquet_is_byte_identical_across_runs(tmp_path, capsys):
    for out in ("a", "b"):
        assert main(["parse", str(log_path("c_nodepools", "rm-debug.log")), "-o", str(tmp_path / out)]) == 0
    capsys.readouterr()
    for name in SCHEMAS:
        first, second = (tmp_path / side / f"{name}.parquet" for side in ("a", "b"))
        assert first.read_bytes() == second.read_bytes(), name


def test_the_chunk_size_changes_nothing_in_the_output(tmp_path, capsys):
    log = str(log_path("h_mega15", "rm.log"))
    assert main(["parse", log, "-o", str(tmp_path / "default")]) == 0
    assert main(["parse", log, "--chunk-mb", "1", "-o", str(tmp_path / "small")]) == 0
    capsys.readouterr()
    default, small = read_tables(tmp_path / "default"), read_tables(tmp_path / "small")
    assert small["cycles"].height > 1 and small["rmcounter"].height  # more than one chunk, and real rows
    for name in SCHEMAS:  # the same rows (only the Parquet row groups follow the chunks)
        assert default[name].equals(small[name]), name


def test_tables_load_in_polars_duckdb_and_pandas(tmp_path, capsys):
    assert main(["parse", str(log_path("a_tiny")), "-o", str(tmp_path)]) == 0
    assert "unparsed lines" in capsys.readouterr().out
    tables = read_tables(tmp_path)
    assert set(tables) == set(SCHEMAS)
    for name, schema in SCHEMAS.items():
        assert dict(tables[name].schema) == schema, name
    n_cycles = duckdb.connect().execute(f"select count(*) from '{tmp_path}/cycles.parquet'").fetchall()[0][0]
    assert n_cycles == len(truth("a_tiny"))
    adds = pd.read_parquet(tmp_path / "schedule.parquet").query("kind == 'addition'")
    assert len(adds) == sum(len(j["added"]) for c in truth("a_tiny") for j in c["jobs"])
    assert pl.read_parquet(tmp_path / "unparsed.parquet").height == 0


def test_a_table_the_log_has_no_message_for_is_empty_with_its_schema(tmp_path, capsys):
    # a_tiny's INFO log has no allotment lines and (INFO) no occupancy table: those tables must
    # come out empty, from the in-memory parse and from the Parquet files alike
    log = str(log_path("a_tiny"))
    assert main(["parse", log, "-o", str(tmp_path)]) == 0
    capsys.readouterr()
    for tables in (parse([log]).tables, read_tables(tmp_path)):
        for name in ("allotments", "occupancy", "unparsed"):
            assert tables[name].height == 0, name
            assert dict(tables[name].schema) == SCHEMAS[name], name
