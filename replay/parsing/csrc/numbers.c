/* numbers(): per record header, the numbers the tables read from it (see module.c) */
#include "scan.h"

enum { N_NULL = 0, N_VALUE = 1, N_UNDECIDED = 2 };  /* N_UNDECIDED: polars' cast decides */

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

/* numbers(data, header_spans, methods) -> (jid int64[n], jid state u8[n], tid uint32[n], tid state u8[n],
 * method int8[n]): the JID as an integer ("N/A": null), the thread id, and the index of the METHOD in
 * `methods` (a tuple of bytes; -1: none of them). A JID or thread id of another shape is left to polars
 * (state 2), so both read the same numbers. */
PyObject *header_numbers(PyObject *self, PyObject *args)
{
    Py_buffer in, hd;
    PyObject *methods, *out = NULL;
    if (!PyArg_ParseTuple(args, "y*y*O!", &in, &hd, &PyTuple_Type, &methods))
        return NULL;
    Py_ssize_t n = hd.len / (Py_ssize_t)(NCOL * sizeof(int32_t)), nm = PyTuple_GET_SIZE(methods);
    const char *names[64];
    Py_ssize_t lens[64];
    PyObject *jid = NULL, *jst = NULL, *tid = NULL, *tst = NULL, *meth = NULL;
    if (nm > 64) {
        PyErr_SetString(PyExc_ValueError, "numbers: at most 64 methods");
        goto done;
    }
    for (Py_ssize_t m = 0; m < nm; m++) {
        PyObject *name = PyTuple_GET_ITEM(methods, m);
        if (!PyBytes_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "numbers: methods must be bytes");
            goto done;
        }
        names[m] = PyBytes_AS_STRING(name), lens[m] = PyBytes_GET_SIZE(name);
    }
    jid = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    jst = PyBytes_FromStringAndSize(NULL, n);
    tid = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(uint32_t));
    tst = PyBytes_FromStringAndSize(NULL, n);
    meth = PyBytes_FromStringAndSize(NULL, n);
    if (!jid || !jst || !tid || !tst || !meth)
        goto done;
    const char *d = in.buf;
    const int32_t *col = hd.buf;
    int64_t *jv = (int64_t *)PyBytes_AS_STRING(jid);
    uint32_t *tv = (uint32_t *)PyBytes_AS_STRING(tid);
    uint8_t *js = (uint8_t *)PyBytes_AS_STRING(jst), *ts = (uint8_t *)PyBytes_AS_STRING(tst);
    int8_t *mv = (int8_t *)PyBytes_AS_STRING(meth);
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++, col += NCOL) {
        uint64_t x;
        jv[i] = 0, tv[i] = 0, mv[i] = -1;
        if (col[9] < 0 || col[10] > in.len || col[12] > in.len || col[14] > in.len || col[10] < col[9]
            || col[12] < col[11] || col[14] < col[13]) {
            bad = 1;
            break;
        }
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
        for (Py_ssize_t m = 0; m < nm; m++)
            if (lens[m] == len && memcmp(names[m], d + col[13], (size_t)len) == 0) {
                mv[i] = (int8_t)m;
                break;
            }
    }
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
