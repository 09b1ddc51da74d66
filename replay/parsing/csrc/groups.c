/* read_each_record(): a block's multi-line records, checked, then read one by one with the GIL released */
#include "scan.h"

int read_each_record(const char *what, const Py_buffer *in, const Py_buffer *rc, const Py_buffer *st,
                const Py_buffer *en, RecordReader reader, void *rows, I32s *refused)
{
    Py_ssize_t n = st->len / (Py_ssize_t)sizeof(int32_t);
    const int32_t *rec = rc->buf, *s = st->buf, *e = en->buf;
    if (rc->len != st->len || en->len != st->len) {
        PyErr_Format(PyExc_ValueError, "%s: as many records and ends as starts", what);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in->len || (i && rec[i] < rec[i - 1])) {
            PyErr_Format(PyExc_ValueError, "%s: a span outside the block, or records out of order", what);
            return -1;
        }
    int oom = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t a = 0; a < n && !oom;) {
        Py_ssize_t b = a;
        while (b < n && rec[b] == rec[a]) b++;  /* one record's lines */
        int got = reader(in->buf, s, e, a, b, rec[a], rows);
        oom = got < 0 || (!got && !i32_push(refused, rec[a]));
        a = b;
    }
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}
