"""Stream the input as chunks of whole scheduling cycles, so memory stays bounded on big logs.

A chunk ends right after a published schedule (the `createState` structure and the header line
that follows it), so no cycle, multi-line record or per-cycle table spans two chunks. A chunk may
span files: a rolled set is one stream, and a record cut by rotation continues in the next file.
"""

from __future__ import annotations

import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import groupby

from replay.sources import InputError, Source

HEADER_START = re.compile(rb"\n\d\d [A-Z][a-z][a-z] \d\d\d\d \d\d:\d\d:\d\d,\d\d\d ")
SCHEDULE_BODY = b" createState  \n"
SNIFF_BYTES = 1 << 20
LONG_STRETCH = 64 << 20


@dataclass(frozen=True)
class Piece:
    """Whole lines of one file: its index, the 1-based number of its first line, the bytes."""

    file: int
    first_line: int
    data: bytes


@dataclass(frozen=True)
class Chunk:
    """Consecutive pieces holding whole cycles; `last` marks the end of the input."""

    pieces: list[Piece]
    last: bool

    @property
    def size(self) -> int:
        """Bytes in the chunk."""
        return sum(len(p.data) for p in self.pieces)


def read_blocks(source: Source, block: int) -> Iterator[bytes]:
    """The file's bytes in blocks, gunzipped on the fly when it starts with the gzip magic."""
    try:
        with open(source.path, "rb") as fh:
            magic = fh.read(2)
            fh.seek(0)
            stream = gzip.GzipFile(fileobj=fh, mode="rb") if magic == b"\x1f\x8b" else fh
            while data := stream.read(block):
                yield data
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(f"{source.path}: damaged gzip file ({exc}); re-copy it or gunzip what can be saved") from exc
    except OSError as exc:
        raise InputError(f"{source.path}: cannot read ({exc.strerror or exc}); check the path and permissions") from exc


def sniff(source: Source) -> bool:
    """Whether the start of the file holds a DUCC log header (False: blank or not an rm.log)."""
    head = b"\n"
    for data in read_blocks(source, SNIFF_BYTES):
        head += data
        break
    if not head.strip():
        return False
    if not HEADER_START.search(head):
        raise InputError(
            f"{source.path}: not an rm.log: no line has the DUCC log header "
            "'dd Mon yyyy hh:mm:ss,SSS LEVEL RM.Class - JID T[tid] METHOD ...'"
        )
    return True


def _cycle_cut(data: bytes) -> int | None:
    """Offset just after the last complete published schedule in `data` (None: there is none)."""
    at = data.rfind(SCHEDULE_BODY)
    while at >= 0:
        nxt = HEADER_START.search(data, at + len(SCHEDULE_BODY) - 1)
        if nxt:  # the structure ended where the next record header begins
            return nxt.start() + 1
        at = data.rfind(SCHEDULE_BODY, 0, at)
    return None


def stream_chunks(sources: list[Source], chunk_bytes: int) -> Iterator[Chunk]:
    """Chunks of about `chunk_bytes` (at least one whole cycle each), oldest first."""
    pending: list[Piece] = []
    size = 0
    # read in quarters of a chunk, so a chunk overshoots its size by at most a quarter (the first
    # chunk's working set sets the peak memory of the whole parse)
    block_bytes = max(chunk_bytes // 4, 1 << 16)
    for idx, src in enumerate(sources):
        line_no, carry = 1, b""
        for block in read_blocks(src, block_bytes):
            data = carry + block
            end = data.rfind(b"\n") + 1
            data, carry = data[:end], data[end:]
            if not data:
                continue
            cut = _cycle_cut(data) if size + len(data) + len(carry) >= chunk_bytes else None
            if cut is None and size + len(data) >= max(4 * chunk_bytes, LONG_STRETCH):
                # no published schedule for a long stretch (an RM that never got to schedule):
                # cut at a record boundary anyway, so memory stays bounded
                m = None
                for m in HEADER_START.finditer(data):
                    pass
                cut = m.start() + 1 if m else None
            if cut is None:
                pending.append(Piece(idx, line_no, data))
                line_no += data.count(b"\n")
                size += len(data)
                continue
            head, tail = data[:cut], data[cut:]
            pending.append(Piece(idx, line_no, head))
            line_no += head.count(b"\n")
            chunk = Chunk(_merged(pending), last=False)
            pending, size = [Piece(idx, line_no, tail)], len(tail)
            line_no += tail.count(b"\n")
            # hold no other copy of the chunk's bytes while it is parsed
            del head, tail, data, block
            yield chunk
        if carry:  # a last line without its newline (a file cut mid-line)
            pending.append(Piece(idx, line_no, carry))
            size += len(carry)
    yield Chunk(_merged([p for p in pending if p.data]), last=True)


def _merged(pieces: list[Piece]) -> list[Piece]:
    """Consecutive pieces of one file as one (they are contiguous: the scanner then sees whole
    cycles in one block)."""
    out: list[Piece] = []
    for _, same_file in groupby(pieces, key=lambda p: p.file):
        run = list(same_file)
        out.append(run[0] if len(run) == 1 else Piece(run[0].file, run[0].first_line, b"".join(p.data for p in run)))
    return out
