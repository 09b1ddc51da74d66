"""Stream the input as chunks of whole scheduling cycles, so memory stays bounded on big logs.

A chunk ends right after a published schedule (the `createState` structure and the header line
that follows it), so no cycle, multi-line record or per-cycle table spans two chunks. A chunk may
span files: a rolled set is one stream, and a record cut by rotation continues in the next file.
"""

from __future__ import annotations

import gzip
import io
import re
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from replay.parsing.compiled import COMPILED
from replay.parsing.sources import InputError, Source

HEADER_START = re.compile(rb"\n\d\d [A-Z][a-z][a-z] \d\d\d\d \d\d:\d\d:\d\d,\d\d\d ")
SCHEDULE_BODY = b" createState  \n"
SNIFF_BYTES = 1 << 20
LONG_STRETCH = 64 << 20
_TS = re.compile(rb"^(\d\d [A-Z][a-z][a-z] \d{4} \d\d:\d\d:\d\d,\d{3}) ", re.MULTILINE)
# log4j stamps an event before it takes the appender's lock, so a busy thread can write an
# earlier time just after a roll; a file that begins further back than this overlaps the last
ROLL_SKEW = timedelta(seconds=5)


Bytes = bytes | bytearray  # a piece's bytes: the reader's bytearray, or bytes once invalid UTF-8 is repaired


@dataclass(frozen=True)
class Piece:
    """Whole lines of one file: its index, the 1-based number of its first line, the bytes (a
    bytearray from the reader, never changed once handed out: views into it outlive the call)."""

    file: int
    first_line: int
    data: Bytes


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
    with _opened(source) as stream:
        while data := stream.read(block):
            yield data


@contextmanager
def _opened(source: Source) -> Iterator[io.BufferedIOBase]:
    """The file's stream of bytes, gunzipped on the fly when it starts with the gzip magic; its
    read errors as InputError."""
    try:
        with open(source.path, "rb") as fh:
            magic = fh.read(2)
            fh.seek(0)
            yield gzip.GzipFile(fileobj=fh, mode="rb") if magic == b"\x1f\x8b" else fh
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise InputError(f"{source.path}: damaged gzip file ({exc}); re-copy it or gunzip what can be saved") from exc
    except OSError as exc:
        raise InputError(f"{source.path}: cannot read ({exc.strerror or exc}); check the path and permissions") from exc


def newlines(data: Bytes) -> int:
    """How many newlines `data` holds, counted without the GIL (the reader runs beside the parsing
    threads): by the compiled scanner, or by numpy a megabyte at a time (three times the speed of
    bytearray.count)."""
    if COMPILED:
        from replay.parsing import _scan

        return _scan.newlines(data, 0, len(data))
    import numpy as np  # here, not above: the TUI's first screen reaches this module and loads no numpy

    view = np.frombuffer(data, dtype=np.uint8)
    return sum(int(np.count_nonzero(view[lo:lo + _COUNT_STEP] == 10)) for lo in range(0, len(view), _COUNT_STEP))


_COUNT_STEP = 1 << 20


def _grower() -> Callable[[bytearray, int], None]:
    """How the reader sizes its buffer before a read: the compiled scanner leaves the new bytes
    unfilled (the read writes each byte once, and faults its pages in itself); without it they are
    zero-filled first."""
    if COMPILED:
        from replay.parsing import _scan

        return _scan.grow

    def zero_filled(buf: bytearray, size: int) -> None:
        if size < len(buf):
            del buf[size:]
        else:
            buf.extend(bytes(size - len(buf)))

    return zero_filled


def _read_into(stream: io.BufferedIOBase, buf: bytearray, at: int, size: int) -> int:
    """Bytes read from `stream` into buf[at:at + size] (0: the end), buf already that long."""
    with memoryview(buf) as whole, whole[at:at + size] as room:
        return stream.readinto(room) or 0


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


def _stamp(data: Bytes, last: bool = False, end: int | None = None) -> datetime | None:
    """The time of the first (or last) record header in data[:end] (the last one searched for in the
    final megabyte first, so a big file's tail is not scanned whole)."""
    found = None
    end = len(data) if end is None else end
    for lo in ((max(end - SNIFF_BYTES, 0), 0) if last else (0,)):
        for found in _TS.finditer(data, lo, end):
            if not last:
                break
        if found is not None:
            break
    try:
        return datetime.strptime(found.group(1).decode(), "%d %b %Y %H:%M:%S,%f") if found else None
    except ValueError:  # no such date (the parse reports the line)
        return None


@dataclass
class _TimeOrder:
    """Each file must begin no earlier than the file before it ended (ROLL_SKEW aside): files
    that overlap in time are two logs mixed, or rolled members out of order."""

    previous: tuple[str, datetime] | None = None

    def begins(self, src: Source, buf: bytearray, end: int) -> bool:
        """Check the file's first record, in buf[:end] (False: no header yet, look again in the next block)."""
        first = _stamp(buf, end=end)
        if first is None:
            return False
        if self.previous and first < self.previous[1] - ROLL_SKEW:
            name, ended = self.previous
            raise InputError(f"{name} ends at {ended} but {src.name}, read after it, begins at {first}: the files "
                             "overlap in time, so they are not one rolled log (two logs mixed, or a member out of "
                             "order); name the files of one log, oldest first")
        return True

    def ends(self, src: Source, tail: bytearray) -> None:
        """Remember when the file ended (the last header in its unread tail)."""
        last = _stamp(tail, last=True)
        self.previous = (src.name, last) if last else self.previous


def stream_chunks(sources: list[Source], chunk_bytes: int) -> Iterator[Chunk]:
    """Chunks of about `chunk_bytes` (at least one whole cycle each), oldest first; InputError when
    a file begins before the one read before it ended."""
    order = _TimeOrder()
    done: list[Piece] = []  # whole earlier files of the chunk being gathered
    size = 0  # bytes in `done`
    # read in quarters of a chunk, so a chunk overshoots its size by at most a quarter (the first
    # chunk's working set sets the peak memory of the whole parse)
    block_bytes = max(chunk_bytes // 4, 1 << 16)
    grow = _grower()
    for idx, src in enumerate(sources):
        # this file's bytes not yet handed out, in one buffer read into in place: each byte is copied
        # in once, and a chunk's bytes leave as the buffer itself (only the lines after the cut are
        # copied, to a new buffer); deleting a chunk from the front would keep its whole allocation
        # alive. buf[:got] is what was read, the rest room for the next read
        buf, got, line_no, seen = bytearray(), 0, 1, 0  # seen: buf[:seen] is whole lines already searched
        begun = len(sources) == 1
        with _opened(src) as stream:
            while True:
                grow(buf, got + block_bytes)
                if not (more := _read_into(stream, buf, got, block_bytes)):
                    break
                got += more
                begun = begun or order.begins(src, buf, got)
                end = buf.rfind(b"\n", seen, got) + 1
                if end <= seen:
                    continue
                cut = _cycle_cut(buf, seen, end) if size + got >= chunk_bytes else None
                if cut is None and size + end >= max(4 * chunk_bytes, LONG_STRETCH):
                    # no published schedule for a long stretch (an RM that never got to schedule):
                    # cut at a record boundary anyway, so memory stays bounded
                    cut = _last_header(buf, seen, end)
                seen = end
                if cut is None:
                    continue
                head, buf = buf, bytearray()
                grow(buf, got - cut + block_bytes)  # the next read goes in after the tail, not into a copy of it
                buf[:got - cut] = memoryview(head)[cut:got]
                del head[cut:]
                got -= cut
                seen -= cut
                ready = [Chunk([*done, Piece(idx, line_no, head)], last=False)]
                line_no += newlines(head)
                done, size = [], 0
                # no reference to the chunk stays here while it is parsed, nor after: its bytes go
                # as soon as the parse is done with them, not when the next chunk is cut
                del head
                yield ready.pop()
        del buf[got:]
        if idx + 1 < len(sources):
            order.ends(src, buf)
        if buf:  # the file's last lines (the very last one may lack its newline: a file cut mid-line)
            done.append(Piece(idx, line_no, buf))
            size += len(buf)
    yield Chunk(done, last=True)
