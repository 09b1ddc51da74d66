"""The parse lets go of each chunk before it takes the next: a chunk's working set, not two, is the peak."""

from __future__ import annotations

import weakref
from collections.abc import Iterator, Mapping

import pytest

from replay.parsing import pipeline
from replay.parsing.chunks import Chunk, stream_chunks
from replay.parsing.sources import Source
from replay.parsing.tables import Frame
from tests.helpers import log_path


@pytest.mark.parametrize("workers", [1, 2])
def test_no_chunk_is_held_once_its_tables_are_taken(monkeypatch: pytest.MonkeyPatch, workers: int) -> None:
    # The one-core loop kept the chunk it had parsed (its bytes, as large as the chunk) while the
    # sink took its tables and the next chunk was read: the peak of a parse held two chunks' bytes.
    handed: list[weakref.ref[Chunk]] = []
    def watched(sources: list[Source], chunk_bytes: int) -> Iterator[Chunk]:
        for chunk in stream_chunks(sources, chunk_bytes):
            handed.append(weakref.ref(chunk))
            ready = [chunk]
            del chunk  # (this watcher must not hold it either)
            yield ready.pop()

    held: list[int] = []

    class Sink:
        def add(self, tables: Mapping[str, Frame]) -> None:
            # the chunks whose tables the sink has: every one of them parsed and let go
            held.append(sum(ref() is not None for ref in handed[:len(held) + 1]))

    monkeypatch.setattr(pipeline, "stream_chunks", watched)
    summary = pipeline.run([str(log_path("h_mega15"))], Sink(), chunk_bytes=256 << 10, workers=workers)
    assert summary.cycles and len(handed) > 3
    assert held[:len(handed)] == [0] * len(handed)
