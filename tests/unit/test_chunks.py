"""Chunking: loss-free, cut only after a published schedule, and close to the size asked for."""

from __future__ import annotations

import gzip
import io
import random
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from replay.parsing import chunks as chunks_module
from replay.parsing.chunks import HEADER_START, SCHEDULE_BODY, Chunk, newlines, stream_chunks
from replay.parsing.sources import Source, discover
from tests.helpers import log_path

HEAD = "01 Jan 2015 00:00:{:02d},000  INFO RM.{} - N/A T[19] {}"


def _cycle_log(cycles: int, filler: int) -> bytes:
    """A small rm.log: per cycle, `filler` INFO lines, then a published createState structure."""
    out = []
    for c in range(cycles):
        s = c % 60
        out += [HEAD.format(s, "Scheduler", f"schedule  filler line {i} of cycle {c}") for i in range(filler)]
        out.append(HEAD.format(s, "JobManagerConverter", "createState  Schedule sent to Orchestrator"))
        out += [HEAD.format(s, "JobManagerConverter", "createState  "), f"Fair-Share {c} 2GB ", "\tExisting[0]: ", ""]
    return ("\n".join(out) + "\n").encode()


def _chunks(tmp_path: Path, data: bytes, size: int) -> list[Chunk]:
    (tmp_path / "rm.log").write_bytes(data)
    return list(stream_chunks(discover([str(tmp_path / "rm.log")]), chunk_bytes=size))


def test_chunks_are_loss_free_and_end_after_a_schedule(tmp_path: Path) -> None:
    data = _cycle_log(cycles=400, filler=20)
    chunks = _chunks(tmp_path, data, 64 << 10)
    assert len(chunks) > 10
    assert b"".join(p.data for c in chunks for p in c.pieces) == data
    assert [c.last for c in chunks] == [False] * (len(chunks) - 1) + [True]
    line = 1
    for chunk in chunks:
        assert chunk.pieces[0].first_line == line
        line += sum(p.data.count(b"\n") for p in chunk.pieces)
    for chunk in chunks[:-1]:
        body = b"\n" + b"".join(p.data for p in chunk.pieces)
        # the last record of the chunk is a whole createState structure: the cut is never inside a cycle
        last = list(HEADER_START.finditer(body))[-1]
        assert body[last.start():].split(b"\n", 2)[1].endswith(SCHEDULE_BODY.rstrip(b"\n"))
        assert body.endswith(b"\tExisting[0]: \n\n")


def test_no_chunk_overshoots_by_more_than_a_read_block_and_a_cycle(tmp_path: Path) -> None:
    # The first chunk used to be twice the size asked for (the first read fell a partial line short
    # of it), and the biggest chunk sets the peak memory of a parse.
    data = gzip.decompress(log_path("h_mega15").read_bytes())
    size = 1 << 20
    chunks = _chunks(tmp_path, data, size)
    longest_cycle = max(len(c) for c in data.split(SCHEDULE_BODY))
    sizes = [c.size for c in chunks]
    assert sum(sizes) == len(data)
    assert max(sizes) <= size + size // 4 + longest_cycle
    assert len(chunks) >= len(data) // (size + size // 4 + longest_cycle)


def test_the_reader_holds_no_chunk_it_handed_out(tmp_path: Path) -> None:
    # A chunk's bytes are the largest buffer of its parse: the reader kept the last chunk it handed
    # out until it cut the next one, so a one-core parse held two chunks' bytes while it read.
    (tmp_path / "rm.log").write_bytes(_cycle_log(cycles=400, filler=20))
    stream = stream_chunks(discover([str(tmp_path / "rm.log")]), chunk_bytes=64 << 10)
    first = next(stream)
    handed = weakref.ref(first)
    del first
    assert handed() is None
    assert sum(1 for _ in stream) > 1  # the stream goes on from where it was


def test_the_reader_reads_each_block_in_place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Each block was read into a bytes object of its own and then appended to the chunk's buffer:
    # every byte of the log copied twice, through a temporary as large as the block.
    data = gzip.decompress(log_path("h_mega15").read_bytes())
    (tmp_path / "rm.log").write_bytes(data)
    copied = {"read": 0, "readinto": 0}

    class Counted(io.BufferedReader):
        def read(self, size: int | None = -1, /) -> bytes:
            out = super().read(size)
            copied["read"] += len(out)
            return out

        def readinto(self, buffer: "memoryview", /) -> int:  # type: ignore[override]
            got = super().readinto(buffer)
            copied["readinto"] += got
            return got

    @contextmanager
    def counted(source: Source) -> Iterator[io.BufferedIOBase]:
        with Counted(io.FileIO(source.path, "rb")) as stream:
            yield stream

    monkeypatch.setattr(chunks_module, "_opened", counted)
    got = list(stream_chunks(discover([str(tmp_path / "rm.log")]), chunk_bytes=256 << 10))
    assert len(got) > 3 and b"".join(p.data for c in got for p in c.pieces) == data
    assert copied == {"read": 0, "readinto": len(data)}


@pytest.mark.parametrize("compiled", [True, False])
def test_chunks_are_the_same_with_or_without_the_scanner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         compiled: bool) -> None:
    # without the compiled scanner the reader's buffer is zero-filled before each read, and the
    # lines are counted by numpy: the same chunks, lines and line numbers
    monkeypatch.setattr(chunks_module, "COMPILED", compiled and chunks_module.COMPILED)
    data = _cycle_log(cycles=300, filler=25)
    chunks = _chunks(tmp_path, data, 48 << 10)
    assert len(chunks) > 5 and b"".join(p.data for c in chunks for p in c.pieces) == data
    starts = [c.pieces[0].first_line for c in chunks]
    assert starts == [1 + data[:sum(len(p.data) for c in chunks[:i] for p in c.pieces)].count(b"\n")
                      for i in range(len(chunks))]


@pytest.mark.parametrize("compiled", [True, False])
def test_newlines_counts_every_newline(monkeypatch: pytest.MonkeyPatch, compiled: bool) -> None:
    # the compiled count goes 16 bytes a step in runs of 4080: lengths around both, newlines dense
    # and sparse, every byte value beside them
    monkeypatch.setattr(chunks_module, "COMPILED", compiled and chunks_module.COMPILED)
    rng = random.Random(7)
    cases = [bytearray(rng.randbytes((1 << 20) + 3)), bytearray(b"\n" * 9000)]  # about one newline in 256; all
    for n in (0, 1, 15, 16, 17, 4079, 4080, 4081, 3 * 4080 + 5):
        for share in (0.0, 0.01, 0.5, 1.0):
            data = bytearray(rng.randbytes(n))
            for at in rng.sample(range(n), int(n * share)):
                data[at] = 10
            cases.append(data)
    for data in cases:
        assert newlines(data) == data.count(b"\n"), len(data)
