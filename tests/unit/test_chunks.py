"""Chunking: loss-free, cut only after a published schedule, and close to the size asked for."""

from __future__ import annotations

import gzip
import weakref
from pathlib import Path

from replay.parsing.chunks import HEADER_START, SCHEDULE_BODY, Chunk, stream_chunks
from replay.parsing.sources import discover
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
