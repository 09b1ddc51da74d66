/* What the multi-line readers (schedule, occupancy, sections) share: the checked loop over a block's
 * records, with the GIL released, and the tokens of a line */
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
    int oom = 0, bad = 0;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !bad; i++)
        bad = s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in->len || (i && rec[i] < rec[i - 1]);
    for (Py_ssize_t a = 0; a < n && !oom && !bad;) {
        Py_ssize_t b = a;
        while (b < n && rec[b] == rec[a]) b++;  /* one record's lines */
        int got = reader(in->buf, s, e, a, b, rec[a], rows);
        oom = got < 0 || (!got && !i32_push(refused, rec[a]));
        a = b;
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        PyErr_Format(PyExc_ValueError, "%s: a span outside the block, or records out of order", what);
        return -1;
    }
    if (oom) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

PyObject *read_records(PyObject *args, const char *what, RecordReader reader, I32s *cols, int ncols)
{
    Py_buffer in, rc, st, en;
    PyObject *result = NULL;
    I32s refused = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &in, &rc, &st, &en))
        return NULL;
    if (read_each_record(what, &in, &rc, &st, &en, reader, cols, &refused) == 0
        && (result = PyTuple_New(ncols + 1)) != NULL)
        for (int i = 0; i <= ncols; i++) {
            const I32s *col = i < ncols ? &cols[i] : &refused;
            PyObject *b = bytes_of(col->v, col->n * 4);
            if (b == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyTuple_SET_ITEM(result, i, b);
        }
    for (int i = 0; i < ncols; i++)
        PyMem_RawFree(cols[i].v);
    PyMem_RawFree(refused.v);
    PyBuffer_Release(&in), PyBuffer_Release(&rc), PyBuffer_Release(&st), PyBuffer_Release(&en);
    return result;
}

RowMarks mark_rows(const void *rows, int ncols)
{
    const I32s *col = rows;
    RowMarks m = {ncols < MAX_ROW_COLS ? ncols : MAX_ROW_COLS, {0}};
    for (int i = 0; i < m.ncols; i++)
        m.n[i] = col[i].n;
    return m;
}

void rewind_rows(void *rows, const RowMarks *marks)
{
    I32s *col = rows;
    for (int i = 0; i < marks->ncols; i++)
        col[i].n = marks->n[i];
}

int ascii_tokens(const char *d, int32_t s, int32_t e, int max, int32_t *ts, int32_t *te)
{
    int n = 0;
    for (int32_t i = s; i < e;) {
        if (d[i] == ' ') {
            i++;
            continue;
        }
        if (n == max)
            return -1;
        ts[n] = i;
        while (i < e && d[i] != ' ') {
            if (d[i] < 0x21 || d[i] > 0x7e)
                return -1;
            i++;
        }
        te[n++] = i;
    }
    return n;
}

int is_lit(const char *d, int32_t s, int32_t e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) == n && memcmp(d + s, lit, n) == 0;
}

int not_a_word(const char *d, int32_t s, int32_t e)
{
    if (e - s > 9 && memcmp(d + s, "wantedby.", 9) == 0)
        return 1;
    for (int32_t i = s; i < e; i++)
        if (d[i] != '=' && d[i] != ':')
            return 0;
    return 1;
}

int blank_line(const char *d, int32_t s, int32_t e)
{
    for (int32_t i = s; i < e; i++)
        if (!is_blank(d[i]))
            return 0;
    return 1;
}
