"""Types of the compiled scanner (csrc/module.c): byte loops over a chunk's bytes and int32 spans into it."""

from typing import Any

import numpy as np

Data = bytes | bytearray
Int32s = np.ndarray  # a C-contiguous int32 array

def lines(data: Data, /) -> tuple[int, bytes, bytes]:
    """(n, int32[n*17] spans, int64[n] ms): every line, its kind and header fields."""

def chunk(blocks: tuple[Data, ...], files: tuple[int, ...], first_lines: tuple[int, ...], methods: tuple[bytes, ...],
          classes: bytes, table: Any, generic: int, /) -> dict[str, Any] | None:
    """A chunk's lines, records, continuation lines and orphans as buffers (csrc/chunk.c), with the
    rows of the lines it took for continuation lines unsure ("maybe") and of the continuation lines
    that begin with a date ("c_stamped"), the records per family code + 2 ("fam_counts", int64), or
    None: a timestamp or number the scanner leaves to polars."""

def views(data: Data, starts: Int32s, ends: Int32s, /) -> bytes:
    """One 16-byte Arrow string view per int32 (start, end)."""

def fill(data: Data, starts: Int32s, ends: Int32s, families: Int32s, plan: Any, /) -> tuple[bytes, list[Any]]:
    """(status u8[n], rows per bucket): templated rows by table."""

def rmcounter(data: Data, starts: Int32s, ends: Int32s, kinds: Int32s, templates: Any, /) -> dict[str, Any] | None:
    """The RmCounter blocks' row columns, or None when a line fails."""

def schedule(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """(rec, kind, purged, spans, refused): createState's rows."""

def schedule_keep(data: Data, spans: Int32s, rec: Int32s, /) -> tuple[bytes, Any] | None:
    """(keep int32, job int64): the schedule table's rows of schedule()'s, and every row's job; None: a job refused."""

def occupancy(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """(rec, spans, job counts, job spans, refused): the DEBUG occupancy tables' rows."""

def sections(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes]:
    """(rec, spans, refused): the DEBUG pretty-printed schedule's rows."""

def expansions(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes]:
    """(rec, spans, refused): doExpansion's rows, one per listed job."""

def pools(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """(rec, spans, value counts, value spans, refused): the Scheduling Tables' rows."""

def nodes(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes, bytes]:
    """(rec, node counts (-1: "<None>"), node spans, refused): printNodepool's node lists."""

def jd_host(data: Data, recs: Int32s, starts: Int32s, ends: Int32s, /) -> tuple[bytes, bytes, bytes]:
    """(rec, value spans, refused): the jd.host.class lines."""

def numbers(data: Data, header_spans: Int32s, methods: tuple[bytes, ...],
            /) -> tuple[bytes, bytes, bytes, bytes, bytes]:
    """(jid i64, jid state u8, tid u32, tid state u8, method i8) per record (state 0 null, 1 read, 2 polars reads)."""

def route(data: Data, header_spans: Int32s, table: Any, generic: int, /) -> bytes:
    """int32[n]: each record's family code (-1 no route, -2 undecided)."""

def caps(data: Data, spans: Int32s, ncols: int, codes: Int32s, cycles: Any, jobs: Any, job_ok: Any, slots: Int32s,
         families: tuple[int, int, int, int], /) -> list[Any] | None:
    """[int32 rows, *columns]: the job_caps table's typed columns as Arrow buffers, or None (refused)."""

def typed(data: Data, spans: Int32s, ncols: int, types: bytes, take: Int32s = ..., /) -> list[Any] | None:
    """A column per type, typed as Arrow buffers (types: csrc/arrow.h COL_* codes; `take`: the span
    column each reads, -1 for nulls; without it, one per span column), or None (refused)."""

def where(rec: Any, width: int, ts: Any, cycle: Any, line: Any, /) -> tuple[Any, Any, Any | None, int, Any]:
    """(ts, cycle, cycle validity or None, its nulls, line) of the records `rec`: a cycle 0 is null."""

def cycles(codes: Int32s, sent: int, state: int, last: bool, unread: bool, /) -> Any:
    """uint32 per record (a Buffer): its cycle in the chunk, 0 for none (assemble.record_cycles)."""

def first_spans(spans: Int32s, ncols: int, cols: Int32s, /) -> Any:
    """int32 (start, end) per row (a Buffer): the first of its span columns `cols` it has, -1 for none."""

def names(at: Any, width: int, starts: Any, blob: bytes, known: Any, /) -> tuple[int, Any | None, Any, Any]:
    """(nulls, validity or None, int64 offsets, bytes): the large_string column names[at], name k
    being blob[starts[k]:starts[k + 1]] (null where not known[k])."""

def defrag_class(own: Int32s, roles: Any, cycles: Any, jobs: Any, job_ok: Any, /) -> bytes:
    """int32 (start, end) per row: the defrag table's class of each row."""

def share_match(data: Data, sched_spans: Int32s, sched_cycles: Any, adds: Any, place_spans: Int32s,
                place_cycles: Any, roles: Any, /) -> tuple[Any, Any, Any]:
    """(uint8 is_new, int32 schedule row or -1, uint8 first of its share) per placement row: placements' joins."""
def trim(data: Data, spans: Int32s, /) -> bytes | None:
    """int32 (start, end) per span, ASCII whitespace trimmed; None: a trimmed edge is not ASCII."""

def grow(buf: bytearray, size: int, /) -> None:
    """The bytearray resized to `size`, the bytes it gains unfilled (the reader reads over them)."""

def newlines(data: Data, lo: int, hi: int, /) -> int:
    """The newlines in data[lo:hi], counted without the GIL."""
