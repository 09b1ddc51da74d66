/* numbers(): per record header, the numbers the tables read from it (see module.c) */
#include "scan.h"

/* a run of 1..digits ASCII digits: its value in *x */
static int digits_value(const char *p, Py_ssize_t n, int digits, uint64_t *x)
{
    if (n < 1 || n > digits)
        return 0;
    uint64_t v = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (!is_digit(p[i]))
            return 0;
        v = v * 10 + (uint64_t)(p[i] - '0');
    }
    *x = v;
    return 1;
}

int read_methods(PyObject *methods, Methods *m)
{
    m->n = PyTuple_GET_SIZE(methods);
    if (m->n > 64)
        return PyErr_SetString(PyExc_ValueError, "numbers: at most 64 methods"), 0;
    for (Py_ssize_t k = 0; k < m->n; k++) {
        PyObject *name = PyTuple_GET_ITEM(methods, k);
        if (!PyBytes_Check(name))
            return PyErr_SetString(PyExc_TypeError, "numbers: methods must be bytes"), 0;
        m->name[k] = PyBytes_AS_STRING(name), m->len[k] = PyBytes_GET_SIZE(name);
    }
    return 1;
}

int read_numbers(const char *d, Py_ssize_t size, const int32_t *col, Py_ssize_t n, const Methods *m,
                 int64_t *jv, uint8_t *js, uint32_t *tv, uint8_t *ts, int8_t *mv)
{
    for (Py_ssize_t i = 0; i < n; i++, col += NCOL) {
        uint64_t x;
        jv[i] = 0, tv[i] = 0, mv[i] = -1;
        if (col[9] < 0 || col[10] > size || col[12] > size || col[14] > size || col[10] < col[9]
            || col[12] < col[11] || col[14] < col[13])
            return -1;
        const char *p = d + col[9];
        Py_ssize_t len = col[10] - col[9];
        if (len == 3 && memcmp(p, "N/A", 3) == 0)
            js[i] = N_NULL;
        else if (digits_value(p, len, 18, &x))
            js[i] = N_VALUE, jv[i] = (int64_t)x;
        else
            js[i] = N_UNDECIDED;
        len = col[12] - col[11];  /* T[<digits>]: empty, or digits */
        if (len == 0)
            ts[i] = N_NULL;
        else if (digits_value(d + col[11], len, 9, &x))
            ts[i] = N_VALUE, tv[i] = (uint32_t)x;
        else
            ts[i] = N_UNDECIDED;
        len = col[14] - col[13];
        for (Py_ssize_t k = 0; k < m->n; k++)
            if (m->len[k] == len && memcmp(m->name[k], d + col[13], (size_t)len) == 0) {
                mv[i] = (int8_t)k;
                break;
            }
    }
    return 0;
}

/* numbers(data, header_spans, methods) -> (jid int64[n], jid state u8[n], tid uint32[n], tid state u8[n],
 * method int8[n]): the JID as an integer ("N/A": null), the thread id, and the index of the METHOD in
 * `methods` (a tuple of bytes; -1: none of them). A JID or thread id of another shape is left to polars
 * (state 2), so both read the same numbers. */
PyObject *header_numbers(PyObject *self, PyObject *args)
{
    Py_buffer in, hd;
    PyObject *methods, *out = NULL;
    Methods m;
    if (!PyArg_ParseTuple(args, "y*y*O!", &in, &hd, &PyTuple_Type, &methods))
        return NULL;
    Py_ssize_t n = hd.len / (Py_ssize_t)(NCOL * sizeof(int32_t));
    PyObject *jid = NULL, *jst = NULL, *tid = NULL, *tst = NULL, *meth = NULL;
    if (!read_methods(methods, &m))
        goto done;
    jid = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    jst = PyBytes_FromStringAndSize(NULL, n);
    tid = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t));
    tst = PyBytes_FromStringAndSize(NULL, n);
    meth = PyBytes_FromStringAndSize(NULL, n);
    if (!jid || !jst || !tid || !tst || !meth)
        goto done;
    int bad;
    Py_BEGIN_ALLOW_THREADS
    bad = read_numbers(in.buf, in.len, hd.buf, n, &m, (int64_t *)PyBytes_AS_STRING(jid),
                       (uint8_t *)PyBytes_AS_STRING(jst), (uint32_t *)PyBytes_AS_STRING(tid),
                       (uint8_t *)PyBytes_AS_STRING(tst), (int8_t *)PyBytes_AS_STRING(meth));
    Py_END_ALLOW_THREADS
    if (bad)
        PyErr_SetString(PyExc_ValueError, "numbers: a header span lies outside the block");
    else
        out = PyTuple_Pack(5, jid, jst, tid, tst, meth);
done:
    Py_XDECREF(jid), Py_XDECREF(jst), Py_XDECREF(tid), Py_XDECREF(tst), Py_XDECREF(meth);
    PyBuffer_Release(&in), PyBuffer_Release(&hd);
    return out;
}
