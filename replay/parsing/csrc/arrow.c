/* Arrow column buffers the C module fills and owns (see arrow.h): a Python object exposing each
 * buffer without a copy (pyarrow.py_buffer wraps it; the memory is freed when the last Arrow
 * array over it goes), and the builders of int64, float64, bool and large_string columns with
 * their validity bitmaps. The builders use only PyMem_Raw*: they run with the GIL released. */
#include <float.h>
#include <stdlib.h>
#include "arrow.h"

/* ---- the owned buffer --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    void *p;
    Py_ssize_t n;
} Buf;

static void buf_dealloc(Buf *self)
{
    PyMem_RawFree(self->p);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int buf_get(Buf *self, Py_buffer *view, int flags)
{
    static char empty[8];
    return PyBuffer_FillInfo(view, (PyObject *)self, self->p ? self->p : empty, self->n, 1, flags);
}

static PyBufferProcs buf_procs = {(getbufferproc)buf_get, NULL};

static Py_ssize_t buf_len(Buf *self) { return self->n; }

static PySequenceMethods buf_seq = {.sq_length = (lenfunc)buf_len};  /* len() in bytes, as of a bytes object */

static PyTypeObject BufType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "replay.parsing._scan.Buffer",
    .tp_basicsize = sizeof(Buf),
    .tp_dealloc = (destructor)buf_dealloc,
    .tp_as_buffer = &buf_procs,
    .tp_as_sequence = &buf_seq,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory the scanner filled, read through the buffer protocol and freed with the object.",
};

int arrow_ready(PyObject *module)
{
    if (PyType_Ready(&BufType) < 0)
        return -1;
    Py_INCREF(&BufType);
    return PyModule_AddObject(module, "Buffer", (PyObject *)&BufType);
}

/* a Python object owning p[0, n) (p is taken over, freed here on failure); NULL with an error set */
PyObject *own_buffer(void *p, Py_ssize_t n)
{
    Buf *b = PyObject_New(Buf, &BufType);
    if (!b) {
        PyMem_RawFree(p);
        return NULL;
    }
    b->p = p, b->n = n;
    return (PyObject *)b;
}

/* the first n bytes of the growable vector *v as a Buffer, without a copy (its spare capacity given
 * back; *v is taken over and set to NULL); NULL with an error set */
PyObject *owned_vector(void **v, Py_ssize_t n)
{
    void *p = *v;
    *v = NULL;
    if (p && n) {
        void *q = PyMem_RawRealloc(p, (size_t)n);  /* shrinks in place */
        p = q ? q : p;
    } else if (p) {
        PyMem_RawFree(p), p = NULL;
    }
    return own_buffer(p, n);
}

/* ---- column builders ---------------------------------------------------------------------- */

int col_init(Col *c, int type, Py_ssize_t n)
{
    memset(c, 0, sizeof(*c));
    c->type = type, c->n = n;
    /* a string column keeps its values in offs and data: no 8 bytes a row to zero for nothing */
    Py_ssize_t width = type == COL_BOOL ? (n + 7) / 8 : type == COL_STR ? 0 : 8 * n;
    c->valid = PyMem_RawCalloc((size_t)(n + 7) / 8 + 1, 1);
    c->vals = PyMem_RawCalloc((size_t)width + 8, 1);
    if (type == COL_STR)
        c->offs = PyMem_RawCalloc((size_t)n + 1, sizeof(int64_t));
    return c->valid && c->vals && (type != COL_STR || c->offs);
}

void col_free(Col *c)
{
    PyMem_RawFree(c->valid), PyMem_RawFree(c->vals), PyMem_RawFree(c->offs), PyMem_RawFree(c->data);
    memset(c, 0, sizeof(*c));
}

static void set_valid(Col *c, Py_ssize_t i) { c->valid[i >> 3] |= (uint8_t)(1u << (i & 7)); }

void col_null(Col *c, Py_ssize_t i)
{
    c->nulls++;
    if (c->type == COL_STR)
        c->offs[i + 1] = c->dlen;
}

void col_i64(Col *c, Py_ssize_t i, int64_t x) { ((int64_t *)c->vals)[i] = x, set_valid(c, i); }
void col_f64(Col *c, Py_ssize_t i, double x) { ((double *)c->vals)[i] = x, set_valid(c, i); }

void col_bool(Col *c, Py_ssize_t i, int x)
{
    if (x)
        ((uint8_t *)c->vals)[i >> 3] |= (uint8_t)(1u << (i & 7));
    set_valid(c, i);
}

int col_str(Col *c, Py_ssize_t i, const char *p, Py_ssize_t n)
{
    if (c->dlen + n > c->dcap) {
        Py_ssize_t cap = c->dcap ? 2 * c->dcap : 4096;
        while (cap < c->dlen + n) cap *= 2;
        char *d = PyMem_RawRealloc(c->data, (size_t)cap);
        if (!d)
            return 0;
        c->data = d, c->dcap = cap;
    }
    memcpy(c->data + c->dlen, p, (size_t)n);
    c->dlen += n;
    c->offs[i + 1] = c->dlen;
    set_valid(c, i);
    return 1;
}

/* the exact powers of ten a double holds (10^22 is the last) */
static const double exact_tens[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13,
                                    1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* a decimal [-+]?\d+(\.\d*)?([eE][-+]?\d+)? whose digits, leading zeros aside, make an integer m of
 * at most 2^53 and whose scale k is within 22 of the point: m and 10^|k| are exact doubles, so the
 * one multiplication or division IEEE rounds correctly gives the correctly rounded value, as strtod
 * does (strtod cost some 70 ns a value, most of the typing of a table with a float column); 0: not
 * such a number (strtod decides) */
static int exact_decimal(const char *p, Py_ssize_t n, double *x)
{
#if defined(FLT_EVAL_METHOD) && FLT_EVAL_METHOD == 0
    Py_ssize_t i = n > 0 && (p[0] == '-' || p[0] == '+');
    int neg = i && p[0] == '-';
    uint64_t m = 0;
    int digits = 0, scale = 0;
    for (; i < n && is_digit(p[i]); i++)
        if (m || p[i] != '0') {
            if (++digits > 19)
                return 0;
            m = m * 10 + (uint64_t)(p[i] - '0');
        }
    if (i < n && p[i] == '.')
        for (i++; i < n && is_digit(p[i]); i++, scale--)
            if (m || p[i] != '0') {
                if (++digits > 19)
                    return 0;
                m = m * 10 + (uint64_t)(p[i] - '0');
            }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        int eneg = 0, ex = 0;
        i++;
        if (i < n && (p[i] == '-' || p[i] == '+'))
            eneg = p[i++] == '-';
        for (; i < n && is_digit(p[i]); i++)
            if ((ex = ex * 10 + (p[i] - '0')) > 1000)
                return 0;
        scale += eneg ? -ex : ex;
    }
    if (i != n || m > (1ULL << 53) || scale < -22 || scale > 22)
        return 0;
    double v = (double)m;
    v = scale < 0 ? v / exact_tens[-scale] : v * exact_tens[scale];
    *x = neg ? -v : v;
    return 1;
#else
    (void)p, (void)n, (void)x;
    return 0;
#endif
}

/* a NUM token (is_num), read into *x as polars' cast reads it: correctly rounded, NaN and Infinity
 * with their sign; 0 when it is not one */
static int number_at(const char *d, int32_t s, int32_t e, double *x)
{
    char buf[64], *end;
    /* any other shape (a hex float strtod reads, ".5", "inf") is the reference path's to decide */
    if (e - s <= 0 || e - s >= (int32_t)sizeof buf || !is_num(d + s, e - s))
        return 0;
    if (exact_decimal(d + s, e - s, x))
        return 1;
    memcpy(buf, d + s, (size_t)(e - s));
    buf[e - s] = 0;
    *x = strtod(buf, &end);
    return end == buf + (e - s);
}

static int is_lit_span(const char *d, int32_t s, int32_t e, const char *lit)
{
    size_t n = strlen(lit);
    return (size_t)(e - s) == n && memcmp(d + s, lit, n) == 0;
}

/* the text d[s, e) into row i of c, typed as polars' cast from a string gives it (s < 0: null):
 * an integer only of the shape -?\d{1,18}, a number as number_at reads it, a boolean true for
 * replay/parsing/tables.py's TRUE_WORDS; 1 done, 0 refused (another shape: the caller's polars
 * reference decides), -1 out of memory */
int col_put(Col *c, Py_ssize_t i, const char *d, int32_t s, int32_t e)
{
    double x;
    if (s < 0) {
        col_null(c, i);
        return 1;
    }
    switch (c->type) {
    case COL_STR:
        return col_str(c, i, d + s, e - s) ? 1 : -1;
    case COL_I64: {
        int64_t v;
        if (!int_value(d + s, e - s, &v))
            return 0;
        col_i64(c, i, v);
        return 1;
    }
    case COL_BOOL:
        col_bool(c, i, is_lit_span(d, s, e, "true") || is_lit_span(d, s, e, "found")
                           || is_lit_span(d, s, e, "POTENTIALLY NEEDY"));
        return 1;
    default:
        if (!number_at(d, s, e, &x))
            return 0;
        col_f64(c, i, x);
        return 1;
    }
}

/* (null_count, validity or None, values) or, for strings, (null_count, validity or None, offsets,
 * data): each buffer handed over to a Buffer object (the column is left empty) */
PyObject *col_to_python(Col *c)
{
    PyObject *valid, *vals, *offs = NULL, *data = NULL, *out;
    if (c->nulls) {
        valid = own_buffer(c->valid, (c->n + 7) / 8);
    } else {
        PyMem_RawFree(c->valid);
        valid = Py_NewRef(Py_None);
    }
    c->valid = NULL;
    if (c->type == COL_STR) {
        offs = own_buffer(c->offs, 8 * (c->n + 1));
        data = own_buffer(c->data, c->dlen);
        c->offs = NULL, c->data = NULL;
        PyMem_RawFree(c->vals);
        c->vals = NULL;
        out = valid && offs && data ? Py_BuildValue("(nOOO)", c->nulls, valid, offs, data) : NULL;
        Py_XDECREF(offs), Py_XDECREF(data);
    } else {
        vals = own_buffer(c->vals, c->type == COL_BOOL ? (c->n + 7) / 8 : 8 * c->n);
        c->vals = NULL;
        out = valid && vals ? Py_BuildValue("(nOO)", c->nulls, valid, vals) : NULL;
        Py_XDECREF(vals);
    }
    Py_XDECREF(valid);
    return out;
}

/* the nout columns cols of n rows of spans (ncols (start, end) pairs a row), column k typed from the
 * span column from[k] (-1: nulls; cols[k].type < 0: skipped) as col_put types each value, a row at a
 * time: each row's fields lie in one line of the chunk, which a column at a time read once per
 * column (the typing of a table waited mostly on those reads). The strings' bytes are allocated at
 * once (their lengths are in the spans) instead of reallocated as they fill; 1 done, 0 refused,
 * -1 out of memory */
enum { AHEAD = 16 };  /* rows fetched ahead */

static int type_rows(Col *cols, int nout, const int *from, const char *d, const int32_t *sp, int ncols, Py_ssize_t n)
{
    Py_ssize_t step = 2 * (Py_ssize_t)ncols;
    for (int k = 0; k < nout; k++) {
        Col *c = &cols[k];
        if (c->type != COL_STR || from[k] < 0)
            continue;
        const int32_t *span = sp + 2 * from[k];
        Py_ssize_t total = 0;
        for (Py_ssize_t r = 0; r < n; r++)
            total += span[r * step] >= 0 ? span[r * step + 1] - span[r * step] : 0;
        if (total > 0 && !(c->data = PyMem_RawMalloc((size_t)total)))
            return -1;
        c->dcap = total;
    }
    for (int k = 0; k < nout; k++)  /* a field the rows lack: as a span column of -1 types it */
        if (cols[k].type >= 0 && from[k] < 0) {
            cols[k].nulls = n;
            if (cols[k].type == COL_STR)
                memset(cols[k].offs, 0, (size_t)(n + 1) * sizeof(int64_t));
        }
    int first = -1;  /* a span column read, whose line is fetched ahead */
    for (int k = 0; k < nout && first < 0; k++)
        if (cols[k].type >= 0 && from[k] >= 0)
            first = from[k];
    for (Py_ssize_t r = 0; r < n; r++, sp += step) {
#if defined(__GNUC__)
        /* a table's rows are scattered over the chunk: each is a cache miss the loop would wait on */
        if (first >= 0 && r + AHEAD < n && sp[AHEAD * step + 2 * first] >= 0) {
            __builtin_prefetch(d + sp[AHEAD * step + 2 * first]);
            __builtin_prefetch(d + sp[AHEAD * step + 2 * first] + 64);
        }
#endif
        for (int k = 0; k < nout; k++) {
            Col *c = &cols[k];
            if (c->type < 0 || from[k] < 0)
                continue;
            int32_t st = sp[2 * from[k]], en = sp[2 * from[k] + 1];
            int64_t v;
            if (st < 0)
                col_null(c, r);
            else if (c->type == COL_STR) {
                if (!col_str(c, r, d + st, en - st))
                    return -1;
            } else if (c->type == COL_I64) {
                if (!int_value(d + st, en - st, &v))
                    return 0;
                col_i64(c, r, v);
            } else {
                int got = col_put(c, r, d, st, en);
                if (got != 1)
                    return got;
            }
        }
    }
    return 1;
}

/* typed(data, spans, ncols, types[, take]) -> [column per type] or None: the bucket's span columns
 * typed (types: a COL_* code per column, 255 to skip it: None in its place) with the GIL released.
 * `take` (int32, one per type): which of the row's ncols span columns each output column types
 * (-1: a column of nulls), so a table's columns are read from the bucket's spans in place rather
 * than gathered into a matrix of their own first */
PyObject *typed_columns(PyObject *self, PyObject *args)
{
    Py_buffer in, sp, ty, tk = {0};
    int ncols, status = 1;
    if (!PyArg_ParseTuple(args, "y*y*iy*|y*", &in, &sp, &ncols, &ty, &tk))
        return NULL;
    Py_ssize_t n = ncols > 0 ? sp.len / (8 * ncols) : 0;
    const uint8_t *types = ty.buf;
    const int32_t *take = tk.buf;
    int nout = tk.buf ? (int)(tk.len / 4) : ncols;
    Col *cols = ty.len == nout && nout > 0 ? PyMem_RawCalloc((size_t)nout, sizeof(Col)) : NULL;
    PyObject *out = NULL;
    if (!cols) {
        status = -2;
        PyErr_SetString(PyExc_ValueError, "typed: a type per column");
    }
    for (int k = 0; take && status == 1 && k < nout; k++)
        if (take[k] >= ncols) {
            status = -2;
            PyErr_SetString(PyExc_ValueError, "typed: a taken column outside the spans");
        }
    if (status == 1) {
        Py_BEGIN_ALLOW_THREADS
        int *from = PyMem_RawMalloc(sizeof(int) * (size_t)nout);
        if (!from)
            status = -1;
        for (int k = 0; k < nout && status == 1; k++) {
            from[k] = take ? take[k] : k;
            if (types[k] == 255)
                cols[k].type = -1;
            else if (!col_init(&cols[k], types[k], n))
                status = -1;
        }
        if (status == 1)
            status = type_rows(cols, nout, from, in.buf, sp.buf, ncols, n);
        PyMem_RawFree(from);
        Py_END_ALLOW_THREADS
    }
    if (status == -1)
        PyErr_NoMemory();
    else if (status == 0)
        out = Py_NewRef(Py_None);
    else if (status == 1 && (out = PyList_New(nout)) != NULL)
        for (int k = 0; k < nout; k++) {
            PyObject *col = types[k] == 255 ? Py_NewRef(Py_None) : col_to_python(&cols[k]);
            if (!col) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, k, col);
        }
    for (int k = 0; cols && k < nout; k++)
        col_free(&cols[k]);
    PyMem_RawFree(cols);
    PyBuffer_Release(&in), PyBuffer_Release(&sp), PyBuffer_Release(&ty);
    if (tk.buf)
        PyBuffer_Release(&tk);
    return out;
}
