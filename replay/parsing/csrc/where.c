/* where(): the per-record columns every compiled table takes (time, cycle, line), gathered for its
 * rows in one pass (see module.c) */
#include "arrow.h"

/* the record number of row i of `rec` (4- or 8-byte integers; a negative one reads as too large) */
static inline uint64_t rec_at(const void *rec, int width, Py_ssize_t i)
{
    return width == 8 ? (uint64_t)((const int64_t *)rec)[i] : (uint64_t)((const uint32_t *)rec)[i];
}

PyObject *where_rows(PyObject *self, PyObject *args)
{
    Py_buffer rb, tb, cb, lb;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*", &rb, &width, &tb, &cb, &lb))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = width > 0 ? rb.len / width : 0, nrec = tb.len / 8, nulls = 0;
    int64_t *ts = NULL;
    uint32_t *cyc = NULL, *line = NULL;
    uint8_t *valid = NULL;
    int status = 1;  /* 1 done, -1 out of memory, -2 a record number outside the records */
    if ((width != 4 && width != 8) || cb.len != 4 * nrec || lb.len != 4 * nrec) {
        PyErr_SetString(PyExc_ValueError, "where: 4- or 8-byte record numbers, and a cycle and line per time");
        goto done;
    }
    ts = PyMem_RawMalloc((size_t)(8 * n + 8)), cyc = PyMem_RawMalloc((size_t)(4 * n + 4));
    line = PyMem_RawMalloc((size_t)(4 * n + 4)), valid = PyMem_RawCalloc((size_t)(n + 7) / 8 + 1, 1);
    if (!ts || !cyc || !line || !valid) {
        status = -1;
    } else {
        Py_BEGIN_ALLOW_THREADS
        const int64_t *t = tb.buf;
        const uint32_t *c = cb.buf, *l = lb.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t r = rec_at(rb.buf, width, i);
            if (r >= (uint64_t)nrec) {
                status = -2;
                break;
            }
            ts[i] = t[r], cyc[i] = c[r], line[i] = l[r];
            if (c[r])  /* cycle 0: the record has none (null) */
                valid[i >> 3] |= (uint8_t)(1u << (i & 7));
            else
                nulls++;
        }
        Py_END_ALLOW_THREADS
    }
    if (status == -1)
        PyErr_NoMemory();
    else if (status == -2)
        PyErr_SetString(PyExc_ValueError, "where: a record number outside the records");
    else {
        PyObject *bt = own_buffer(ts, 8 * n), *bc = own_buffer(cyc, 4 * n), *bl = own_buffer(line, 4 * n);
        ts = NULL, cyc = NULL, line = NULL;
        PyObject *bv = nulls ? own_buffer(valid, (n + 7) / 8) : Py_NewRef(Py_None);
        if (nulls)
            valid = NULL;
        if (bt && bc && bl && bv)
            out = Py_BuildValue("(OOOnO)", bt, bc, bv, nulls, bl);
        Py_XDECREF(bt), Py_XDECREF(bc), Py_XDECREF(bl), Py_XDECREF(bv);
    }
done:
    PyMem_RawFree(ts), PyMem_RawFree(cyc), PyMem_RawFree(line), PyMem_RawFree(valid);
    PyBuffer_Release(&rb), PyBuffer_Release(&tb), PyBuffer_Release(&cb), PyBuffer_Release(&lb);
    return out;
}

/* cycles(codes, sent, state, last, unread) -> uint32 per record: its cycle as
 * replay/parsing/assemble.py's record_cycles numbers it (the count of published schedules, code
 * `sent`, before it, and one more unless it is the createState, code `state`, building that one;
 * 0 for none), in one pass where numpy took ten over the chunk's records */
PyObject *record_cycles(PyObject *self, PyObject *args)
{
    Py_buffer cb;
    int sent, state, last, unread;
    if (!PyArg_ParseTuple(args, "y*iipp", &cb, &sent, &state, &last, &unread))
        return NULL;
    Py_ssize_t n = cb.len / 4;
    const int32_t *code = cb.buf;
    uint32_t *out = PyMem_RawMalloc((size_t)(4 * n + 4));
    if (!out) {
        PyBuffer_Release(&cb);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    int64_t total = 0, before = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        total += code[i] == sent;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t cyc = before + (code[i] != state);
        /* the log's last chunk has no cycle after its last published schedule; a chunk cut
         * elsewhere continues into the next */
        int valid = (code[i] >= 0 || unread) && cyc >= 1 && (cyc <= total || !last);
        out[i] = valid ? (uint32_t)cyc : 0;
        before += code[i] == sent;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cb);
    return own_buffer(out, 4 * n);
}

/* first_spans(spans, ncols, cols) -> int32 (start, end) per row: of a row's span columns `cols`
 * (int32 indexes into its ncols), the first it has (start -1 where it has none of them), as a
 * table column that takes the first of several fields a row gives */
PyObject *first_spans(PyObject *self, PyObject *args)
{
    Py_buffer sb, cb;
    int ncols;
    if (!PyArg_ParseTuple(args, "y*iy*", &sb, &ncols, &cb))
        return NULL;
    Py_ssize_t n = ncols > 0 ? sb.len / (8 * (Py_ssize_t)ncols) : 0, k = cb.len / 4;
    const int32_t *sp = sb.buf, *cols = cb.buf;
    int32_t *out = NULL;
    PyObject *got = NULL;
    for (Py_ssize_t j = 0; j < k; j++)
        if (cols[j] < 0 || cols[j] >= ncols) {
            PyErr_SetString(PyExc_ValueError, "first_spans: a column outside the spans");
            goto done;
        }
    if (!(out = PyMem_RawMalloc((size_t)(8 * n + 8)))) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < n; r++, sp += 2 * (Py_ssize_t)ncols) {
        out[2 * r] = -1, out[2 * r + 1] = -1;
        for (Py_ssize_t j = 0; j < k; j++)
            if (sp[2 * cols[j]] >= 0) {
                out[2 * r] = sp[2 * cols[j]], out[2 * r + 1] = sp[2 * cols[j] + 1];
                break;
            }
    }
    Py_END_ALLOW_THREADS
    got = own_buffer(out, 8 * n);
    out = NULL;
done:
    PyMem_RawFree(out);
    PyBuffer_Release(&sb), PyBuffer_Release(&cb);
    return got;
}
