"""Parsing on several threads gives the single-thread parse's tables, byte for byte.

Chunks assemble on their own (their cycles counted from 1, evictions' share orders from the
chunk) and are stitched in log order; these tests cut every bundled log into many small chunks,
parse them on 1 to 4 threads, and require the one-thread, one-chunk tables."""

from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from replay import parse
from replay.cli import main
from replay.parsing.limits import DEFAULT_CHUNK_BYTES
from replay.parsing.tables import SCHEMAS
from tests.helpers import LOGS, log_path


@lru_cache(maxsize=None)
def _whole(name: str, level: str) -> dict[str, pl.DataFrame]:
    """One chunk (the whole log), one thread."""
    return parse([log_path(name, level)], chunk_bytes=1 << 30).tables


def _same(got: dict[str, pl.DataFrame], want: dict[str, pl.DataFrame]) -> None:
    for table in SCHEMAS:
        try:
            assert_frame_equal(got[table], want[table], check_exact=True)
        except AssertionError as exc:
            raise AssertionError(f"table {table}: {exc}") from None


@pytest.mark.parametrize(("name", "level"), LOGS, ids=[f"{n}/{lv}" for n, lv in LOGS])
def test_small_chunks_on_threads_give_the_whole_parse(name, level):
    got = parse([log_path(name, level)], chunk_bytes=256 << 10, workers=3)
    want = _whole(name, level)
    assert got.summary.cycles == want["cycles"].height
    _same(got.tables, want)


@settings(max_examples=12)
@given(chunk_kb=st.integers(64, 1024), workers=st.integers(1, 4),
       log=st.sampled_from([("d_fragmentation", "rm.log"), ("f_node_failure", "rm-debug.log"),
                            ("g_reservations_services", "rm.log")]))
def test_any_chunking_on_any_threads_gives_the_same_tables(chunk_kb, workers, log):
    # evictions whose share order only an earlier chunk shows, cycles numbered across chunks
    _same(parse([log_path(*log)], chunk_bytes=chunk_kb << 10, workers=workers).tables, _whole(*log))


def test_the_command_writes_the_same_bytes_on_every_thread_count(tmp_path, capsys):
    log = str(log_path("h_mega15", "rm-debug.log"))
    for jobs in ("1", "2", "4"):
        assert main(["parse", log, "-o", str(tmp_path / jobs), "-j", jobs, "--chunk-mb", "1"]) == 0
    capsys.readouterr()
    for table in SCHEMAS:
        one, two, four = ((tmp_path / jobs / f"{table}.parquet").read_bytes() for jobs in ("1", "2", "4"))
        assert one == two == four, table


def test_the_default_chunks_are_the_same_bytes_on_every_thread_count(tmp_path, capsys):
    """Without --chunk-mb, the files do not depend on -j (whose default is the machine's cores):
    h_mega15's DEBUG log (6.5 MB), written over until it passes the default chunk, is cut into more
    than one chunk, at the same places on 1, 2 and 3 threads."""
    data = gzip.decompress(log_path("h_mega15", "rm-debug.log").read_bytes())
    log = str(tmp_path / "rm-debug.log")
    Path(log).write_bytes(data * (DEFAULT_CHUNK_BYTES // len(data) + 1))
    for jobs in ("1", "2", "3"):
        assert main(["parse", log, "-o", str(tmp_path / jobs), "-j", jobs]) == 0
    capsys.readouterr()
    assert pq.ParquetFile(tmp_path / "1" / "schedule.parquet").metadata.num_row_groups > 1  # more than one chunk
    for table in SCHEMAS:
        one, two, three = ((tmp_path / jobs / f"{table}.parquet").read_bytes() for jobs in ("1", "2", "3"))
        assert one == two == three, table
