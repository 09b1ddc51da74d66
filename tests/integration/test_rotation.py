"""A log split into a 10 MB rolled set (log4j names, gzipped) parses to the same tables."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from polars.testing import assert_frame_equal

from replay import parse
from replay.parsing.logdir import find_inputs
from replay.parsing.sources import discover
from tests.helpers import log_path

PIECE = 10 * 1024 * 1024


def _roll(data: bytes, folder: Path, piece: int) -> list[Path]:
    """Cut at line ends into pieces; the newest piece is rm.log, older ones rm.log.1 .. rm.log.N (gzipped)."""
    chunks, start = [], 0
    while start < len(data):
        end = data.find(b"\n", min(start + piece, len(data)) - 1)
        end = len(data) if end < 0 else end + 1
        chunks.append(data[start:end])
        start = end
    paths = []
    for age, chunk in enumerate(reversed(chunks)):
        name = "rm.log" if age == 0 else f"rm.log.{age}.gz"
        path = folder / name
        path.write_bytes(chunk if age == 0 else gzip.compress(chunk, mtime=0))
        paths.append(path)
    return paths


def _same_tables(whole, rolled) -> None:
    for name in whole.tables:
        drop = [c for c in ("file", "line") if c in whole.tables[name].columns]
        try:
            assert_frame_equal(whole.tables[name].drop(drop), rolled.tables[name].drop(drop))
        except AssertionError as exc:
            raise AssertionError(f"table {name}: {exc}") from None


def test_rolled_order_is_oldest_first(tmp_path):
    for age, name in enumerate(("rm.log", "rm.log.1", "rm.log.2.gz", "rm.log.10.gz")):
        line = f"01 Jan 2015 00:{59 - age:02}:00,000  INFO RM.Scheduler - N/A T[1] schedule  x\n".encode()
        (tmp_path / name).write_bytes(gzip.compress(line) if name.endswith(".gz") else line)
    assert [s.name for s in find_inputs([tmp_path]).sources] == ["rm.log.10.gz", "rm.log.2.gz", "rm.log.1", "rm.log"]
    assert [s.name for s in discover(list(tmp_path.iterdir()))] == ["rm.log.10.gz", "rm.log.2.gz", "rm.log.1", "rm.log"]


def test_small_pieces_of_h_mega15(tmp_path):
    data = gzip.decompress(log_path("h_mega15", "rm-debug.log").read_bytes())
    paths = _roll(data, tmp_path, 512 * 1024)
    assert len(paths) > 5
    _same_tables(parse([log_path("h_mega15", "rm-debug.log")]), parse([tmp_path]))


@pytest.mark.slow
def test_i_mega24_split_into_10mb_rolled_gz_files(tmp_path):
    src = log_path("i_mega24")
    data = gzip.decompress(src.read_bytes())
    paths = _roll(data, tmp_path, PIECE)
    assert len(paths) == -(-len(data) // PIECE) or len(paths) >= 13
    _same_tables(parse([src]), parse([tmp_path]))


def test_tiny_chunks_give_the_same_tables(fixture_log):
    """Streaming in chunks of whole cycles is invisible in the tables (file and line included)."""
    whole = parse([log_path(*fixture_log)])
    chunked = parse([log_path(*fixture_log)], chunk_bytes=200_000)
    for name in whole.tables:
        try:
            assert_frame_equal(whole.tables[name], chunked.tables[name])
        except AssertionError as exc:
            raise AssertionError(f"table {name}: {exc}") from None
