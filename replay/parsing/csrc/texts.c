/* trim(): text spans trimmed as polars' str.strip_chars() trims them (replay/parsing/records.py's
 * full_bodies), for the messages table's text (replay/parsing/columns_text.py). Only ASCII
 * whitespace is trimmed here: a span whose trimmed text starts or ends with a non-ASCII byte (it may
 * be Unicode whitespace polars would trim too) is refused, and its chunk goes the reference way. */
#include "arrow.h"

static int is_space(unsigned char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r');  /* \t \n \v \f \r: Rust's ASCII White_Space */
}

/* spans[2r], spans[2r+1] trimmed in place; 0 done, 1 refused */
static int trim_all(Py_ssize_t n, const unsigned char *d, int32_t *spans)
{
    for (Py_ssize_t r = 0; r < n; r++) {
        int32_t s = spans[2 * r], e = spans[2 * r + 1];
        while (s < e && is_space(d[s]))
            s++;
        while (e > s && is_space(d[e - 1]))
            e--;
        if (s < e && (d[s] >= 0x80 || d[e - 1] >= 0x80))
            return 1;
        spans[2 * r] = s, spans[2 * r + 1] = e;
    }
    return 0;
}

PyObject *trim_spans(PyObject *self, PyObject *args)
{
    Py_buffer data, sp;
    if (!PyArg_ParseTuple(args, "y*y*", &data, &sp))
        return NULL;
    Py_ssize_t n = sp.len / 8;
    PyObject *out = NULL;
    int32_t *spans = NULL;
    int refused = 0;
    const int32_t *in = sp.buf;
    int bad = sp.len % 8 != 0;
    for (Py_ssize_t i = 0; !bad && i < 2 * n; i += 2)  /* every span inside the data: read without checks below */
        bad = in[i] < 0 || in[i] > in[i + 1] || in[i + 1] > data.len;
    if (bad)
        PyErr_SetString(PyExc_ValueError, "trim: spans must be (start, end) pairs inside the data");
    else if ((spans = PyMem_RawMalloc((size_t)(2 * n + 2) * sizeof(int32_t))) == NULL)
        PyErr_NoMemory();
    else {
        memcpy(spans, in, (size_t)(2 * n) * sizeof(int32_t));
        Py_BEGIN_ALLOW_THREADS
        refused = trim_all(n, data.buf, spans);
        Py_END_ALLOW_THREADS
        if (refused) {
            out = Py_None;
            Py_INCREF(out);
        } else
            out = bytes_of(spans, 8 * n);
    }
    PyMem_RawFree(spans);
    PyBuffer_Release(&data), PyBuffer_Release(&sp);
    return out;
}
