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

from replay.parsing.sources import InputError, Source

HEADER_START = re.compile(rb"\n\d\d [A-Z][a-z][a-z] \d\d\d\d \d\d:\d\d:\d\d,\d\d\d ")
SCHEDULE_BODY = b" createState  \n"
SNIFF_BYTES = 1 << 20
LONG_STRETCH = 64 << 20


@dataclass(frozen=True)
class Piece:
    """Whole lines of one file: its index, the 1-based number of its first line, the bytes (a
    bytearray from the reader, never changed once handed out: views into it outlive the call)."""

    file: int
    first_line: int
    data: bytes | bytearray


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


def _cycle_cut(buf: bytearray, lo: int, hi: int) -> int | None:
    """Offset just after the last complete published schedule in buf[lo:hi] (None: there is none)."""
    at = buf.rfind(SCHEDULE_BODY, lo, hi)
    while at >= 0:
        nxt = HEADER_START.search(buf, at + len(SCHEDULE_BODY) - 1, hi)
        if nxt:  # the structure ended where the next record header begins
            return nxt.start() + 1
        at = buf.rfind(SCHEDULE_BODY, lo, at)
    return None


def _last_header(buf: bytearray, lo: int, hi: int) -> int | None:
    """Offset of the last record header that starts in buf[lo:hi] (None: there is none)."""
    m = None
    for m in HEADER_START.finditer(buf, lo, hi):
        pass
    return m.start() + 1 if m else None


def stream_chunks(sources: list[Source], chunk_bytes: int) -> Iterator[Chunk]:
    """Chunks of about `chunk_bytes` (at least one whole cycle each), oldest first."""
    done: list[Piece] = []  # whole earlier files of the chunk being gathered
    size = 0  # bytes in `done`
    # read in quarters of a chunk, so a chunk overshoots its size by at most a quarter (the first
    # chunk's working set sets the peak memory of the whole parse)
    block_bytes = max(chunk_bytes // 4, 1 << 16)
    for idx, src in enumerate(sources):
        # this file's bytes not yet handed out, in one buffer: each byte is copied in once, and a
        # chunk's bytes leave as the buffer itself (only the lines after the cut are copied, to a
        # new buffer); deleting a chunk from the front would keep its whole allocation alive
        buf, line_no, seen = bytearray(), 1, 0  # seen: buf[:seen] is whole lines already searched
        for block in read_blocks(src, block_bytes):
            buf += block
            del block
            end = buf.rfind(b"\n", seen) + 1
            if end <= seen:
                continue
            cut = _cycle_cut(buf, seen, end) if size + len(buf) >= chunk_bytes else None
            if cut is None and size + end >= max(4 * chunk_bytes, LONG_STRETCH):
                # no published schedule for a long stretch (an RM that never got to schedule):
                # cut at a record boundary anyway, so memory stays bounded
                cut = _last_header(buf, seen, end)
            seen = end
            if cut is None:
                continue
            head, buf = buf, buf[cut:]
            del head[cut:]
            seen -= cut
            chunk = Chunk([*done, Piece(idx, line_no, head)], last=False)
            line_no += head.count(b"\n")
            done, size = [], 0
            # hold no other copy of the chunk's bytes while it is parsed
            del head
            yield chunk
        if buf:  # the file's last lines (the very last one may lack its newline: a file cut mid-line)
            done.append(Piece(idx, line_no, buf))
            size += len(buf)
    yield Chunk(done, last=True)
