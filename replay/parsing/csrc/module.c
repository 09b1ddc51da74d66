/* replay.parsing._scan: the byte loops of the rm.log front end, compiled (see replay/parsing/scan.py).
 *
 * Python decides what a record means; this module does the byte loops:
 *   lines(data)                  -> every line's span, whether it is a record header, the spans of
 *                                   the header's fields and its timestamp in epoch milliseconds;
 *   views(data, starts, ends)    -> Arrow string views over `data` (zero-copy string columns);
 *   chunk(blocks, ...)           -> lines, numbers and route of a chunk's pieces and its records and
 *                                   their lines stitched, in one call without the GIL (chunk.c);
 *   numbers(data, headers, methods) -> each record's JID and thread id as integers, its METHOD's index;
 *   route(data, headers, table, g) -> each record's family, from its class, METHOD and body prefix
 *                                   (the route regexes compiled by replay/parsing/prefixes.py);
 *   fill(data, starts, ends, fams, plan) -> the single-line families' fields, by token templates
 *                                   (replay/parsing/templates.py), gathered by the table they land in;
 *   rmcounter(...)               -> the RmCounter blocks of a chunk, one row per entity;
 *   schedule(...)                -> the rows of createState structures of the canonical shape;
 *   schedule_keep(...)           -> which of them the schedule table keeps (schedule.c);
 *   occupancy(...)               -> the rows of DEBUG occupancy tables of the canonical shape;
 *   sections(...)                -> the rows of the DEBUG pretty-printed schedule of the canonical shape;
 *   expansions(...)              -> one row per job of doExpansion bodies of the canonical shape;
 *   pools(...)                   -> the rows of the Scheduling Tables of the canonical shape;
 *   nodes(...), jd_host(...)     -> the rows of a pool's node list and of the JD host line (boot.c);
 *   caps(...)                    -> the job_caps table's typed columns, as Arrow buffers (caps.c, arrow.c);
 *   typed(...)                   -> span columns typed as Arrow buffers (arrow.c);
 *   where(...)                   -> the time, cycle and line of a table's rows, by record (where.c);
 *   cycles(...)                  -> each record's cycle in its chunk (where.c);
 *   first_spans(...)             -> per row, the first of several span columns it has (where.c);
 *   names(...)                   -> a string column of a few names picked per row (names.c);
 *   defrag_class(...)            -> the defrag table's class of each row (defrag.c);
 *   share_match(...)             -> the placements table's joins on (cycle, host, share) (shares.c);
 *   trim(...)                    -> text spans trimmed of whitespace, for the messages table (texts.c);
 *   grow(...), newlines(...)     -> the chunk reader's buffer grown unfilled, its lines counted (reader.c).
 * Each of them takes only what it is sure of and hands the rest back; the pure-polars path in
 * replay/parsing/records.py and replay/parsing/fast.py gives the same tables without any of it, and
 * tests/integration/test_engines.py and tests/unit/test_scan.py hold the two to identical output.
 */
#include "arrow.h"

/* ---- module ------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"lines", scan_lines, METH_VARARGS,
     "lines(data) -> (n, int32[n*17] spans, int64[n] ms): every line, its kind and header fields."},
    {"chunk", scan_chunk, METH_VARARGS,
     "chunk(blocks, files, first_lines, methods, classes, table, generic) -> dict of buffers (lines, records, "
     "continuations, orphans, the unsure lines' rows), or None: a timestamp or number left to polars."},
    {"views", make_views, METH_VARARGS,
     "views(data, starts, ends) -> bytes: one 16-byte Arrow string view per int32 (start, end)."},
    {"fill", fill_rows, METH_VARARGS,
     "fill(data, starts, ends, families, plan) -> (status u8[n], rows per bucket): templated rows by table."},
    {"rmcounter", rmcounter_rows, METH_VARARGS,
     "rmcounter(data, starts, ends, kinds, templates) -> dict of row columns, or None when a line fails."},
    {"schedule", schedule_rows, METH_VARARGS,
     "schedule(data, recs, starts, ends) -> (rec, kind, purged, spans, refused): createState's rows."},
    {"schedule_keep", schedule_keep, METH_VARARGS,
     "schedule_keep(data, spans, rec) -> (keep int32, job int64) or None: the schedule table's rows, every row's job."},
    {"occupancy", occupancy_rows, METH_VARARGS,
     "occupancy(data, recs, starts, ends) -> (rec, spans, job counts, job spans, refused): occupancy rows."},
    {"sections", section_rows, METH_VARARGS,
     "sections(data, recs, starts, ends) -> (rec, spans, refused): the DEBUG schedule sections' rows."},
    {"expansions", expansion_rows, METH_VARARGS,
     "expansions(data, recs, starts, ends) -> (rec, spans, refused): doExpansion's rows, one per job."},
    {"pools", pool_rows, METH_VARARGS,
     "pools(data, recs, starts, ends) -> (rec, spans, value counts, value spans, refused): Scheduling Tables."},
    {"nodes", node_rows, METH_VARARGS,
     "nodes(data, recs, starts, ends) -> (rec, node counts, node spans, refused): printNodepool's node lists."},
    {"jd_host", jd_host_rows, METH_VARARGS,
     "jd_host(data, recs, starts, ends) -> (rec, spans, refused): the jd.host.class lines' values."},
    {"caps", caps_columns, METH_VARARGS,
     "caps(data, spans, ncols, codes, cycles, jobs, job_ok, slots, families) -> [rows, *columns] or None."},
    {"typed", typed_columns, METH_VARARGS,
     "typed(data, spans, ncols, types[, take]) -> [column or None per type] or None (a value refused)."},
    {"where", where_rows, METH_VARARGS,
     "where(rec, width, ts, cycle, line) -> (ts i64, cycle u32, cycle validity or None, nulls, line u32) of the rows."},
    {"cycles", record_cycles, METH_VARARGS,
     "cycles(codes, sent, state, last, unread) -> uint32 per record: its cycle in the chunk, 0 for none."},
    {"first_spans", first_spans, METH_VARARGS,
     "first_spans(spans, ncols, cols) -> int32 (start, end) per row: the first of the span columns cols it has."},
    {"names", name_column, METH_VARARGS,
     "names(at, width, starts, blob, known) -> (nulls, validity or None, int64 offsets, bytes): names[at]."},
    {"defrag_class", defrag_class, METH_VARARGS,
     "defrag_class(own_spans, roles, cycles, jobs, job_ok) -> int32 class span per row."},
    {"share_match", share_match, METH_VARARGS,
     "share_match(data, sched_spans, sched_cycles, adds, place_spans, place_cycles, roles) -> (is_new, sched_row, first)."},
    {"numbers", header_numbers, METH_VARARGS,
     "numbers(data, header_spans, methods) -> (jid i64, jid state u8, tid u32, tid state u8, method i8) per record."},
    {"route", route_records, METH_VARARGS,
     "route(data, header_spans, table, generic) -> int32[n]: each record's family code (-1 no route, -2 undecided)."},
    {"trim", trim_spans, METH_VARARGS,
     "trim(data, spans) -> int32 (start, end) per span, whitespace trimmed, or None (a non-ASCII edge)."},
    {"grow", grow_bytes, METH_VARARGS, "grow(buf, size): the bytearray resized to size, the bytes it gains unfilled."},
    {"newlines", newline_count, METH_VARARGS, "newlines(data, lo, hi) -> the newlines in data[lo:hi], counted without the GIL."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Compiled byte loops of the rm.log front end.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__scan(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m && arrow_ready(m) < 0)
        Py_CLEAR(m);
    return m;
}
