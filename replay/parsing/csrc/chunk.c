/* chunk(): the scan of a chunk's pieces in one call, the GIL released throughout (see module.c).
 *
 * lines(), numbers() and route() of every piece, then the records and their lines stitched as
 * replay/parsing/scanned.py stitches them (each other line goes to the header before it, the lines
 * before the chunk's first header are orphans), as Arrow buffers the Python side only wraps. A line
 * the scanner is not sure of (K_MAYBE) is taken as a continuation line and its row listed: Python's
 * general regex then says whether it is (scanned.py). A timestamp or a number it leaves to polars
 * makes the call answer None: the chunk then takes the Python path, which reads those. */
#include "arrow.h"

typedef struct {
    Py_buffer buf;
    int held, file;
    uint32_t first;  /* the number of its first line */
    Py_ssize_t n, line0, head0, heads;  /* its lines, its first line's row, its first header's, its headers */
} Part;

/* the chunk's outputs: per line (n), per record (r), per continuation line (c), per orphan (o) */
typedef struct {
    uint16_t *l_file, *l_piece;
    uint32_t *l_line;
    int32_t *l_s, *l_e;
    char *l_views;
    uint16_t *r_file, *r_piece;
    uint32_t *r_line, *tid;
    int64_t *job, *ts;
    uint8_t *tid_ok, *job_ok, *mc;
    int32_t *bs, *be, *fam, *heads;
    uint32_t *c_rec, *c_line;
    uint16_t *c_file, *c_piece;
    int32_t *c_s, *c_e;
    char *c_views;
    uint16_t *o_file;
    uint32_t *o_line;
    char *o_views;
} Out;

/* the buffers of *o in declaration order, with the size of each (0 before they are sized) */
enum { NBUF = 32 };
static int buffers(Out *o, Py_ssize_t n, Py_ssize_t r, Py_ssize_t c, Py_ssize_t k, void ***ptr, Py_ssize_t *size)
{
    void **p[NBUF] = {
        (void **)&o->l_file, (void **)&o->l_piece, (void **)&o->l_line, (void **)&o->l_s, (void **)&o->l_e,
        (void **)&o->l_views, (void **)&o->r_file, (void **)&o->r_piece, (void **)&o->r_line, (void **)&o->tid,
        (void **)&o->job, (void **)&o->ts, (void **)&o->tid_ok, (void **)&o->job_ok, (void **)&o->mc,
        (void **)&o->bs, (void **)&o->be, (void **)&o->fam, (void **)&o->heads, (void **)&o->c_rec,
        (void **)&o->c_line, (void **)&o->c_file, (void **)&o->c_piece, (void **)&o->c_s, (void **)&o->c_e,
        (void **)&o->c_views, (void **)&o->o_file, (void **)&o->o_line, (void **)&o->o_views,
    };
    Py_ssize_t bits = (r + 7) / 8;
    Py_ssize_t s[NBUF] = {2 * n, 2 * n, 4 * n, 4 * n, 4 * n, 16 * n, 2 * r, 2 * r, 4 * r, 4 * r, 8 * r, 8 * r,
                          bits, bits, r, 4 * r, 4 * r, 4 * r, 4 * NCOL * r, 4 * c, 4 * c, 2 * c, 2 * c, 4 * c,
                          4 * c, 16 * c, 2 * k, 4 * k, 16 * k};
    int count = 0;
    for (; count < NBUF && p[count]; count++) {
        ptr[count] = p[count];
        size[count] = s[count];
    }
    return count;
}

static void free_out(Out *o)
{
    void **ptr[NBUF];
    Py_ssize_t size[NBUF];
    int count = buffers(o, 0, 0, 0, 0, ptr, size);
    for (int i = 0; i < count; i++) {
        PyMem_RawFree(*ptr[i]);
        *ptr[i] = NULL;
    }
}

/* the buffers of the first `upto` outputs (lines: 6; all: NBUF) not yet allocated; 0 out of memory */
static int alloc_out(Out *o, Py_ssize_t n, Py_ssize_t r, Py_ssize_t c, Py_ssize_t k, int upto)
{
    void **ptr[NBUF];
    Py_ssize_t size[NBUF];
    int count = buffers(o, n, r, c, k, ptr, size);
    for (int i = 0; i < count && i < upto; i++)
        if (!*ptr[i] && !(*ptr[i] = PyMem_RawMalloc((size_t)size[i] + 1)))
            return 0;
    return 1;
}

/* bit i of a little-endian bitmap of the states `st` (n of them): set where a value was read; the nulls */
static Py_ssize_t validity(const uint8_t *st, Py_ssize_t n, uint8_t *bits)
{
    Py_ssize_t nulls = 0;
    memset(bits, 0, (size_t)(n + 7) / 8);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (st[i] == N_VALUE)
            bits[i >> 3] |= (uint8_t)(1u << (i & 7));
        else
            nulls++;
    }
    return nulls;
}

/* the scan itself, without the GIL: 1 done, 0 a line or value the Python path reads, -1 out of memory */
static int scan_parts(Part *parts, Py_ssize_t np, Router *router, const Methods *methods, const uint8_t *classes,
                      int generic, Out *o, I32s *maybe, I32s *stamped, int64_t **counts, Py_ssize_t *dims,
                      Py_ssize_t *nulls)
{
    Py_ssize_t n = 0, r = 0, first = -1;
    uint8_t *kind = NULL, *jst = NULL, *tst = NULL;
    int8_t *meth = NULL;
    int ok = -1;
    for (Py_ssize_t p = 0; p < np; p++) {
        parts[p].line0 = n;
        parts[p].n = count_lines(parts[p].buf.buf, parts[p].buf.len);
        n += parts[p].n;
    }
    /* room for a header a line: only the rows the headers fill are touched, then the rest is given back */
    kind = PyMem_RawMalloc((size_t)n + 1);
    o->heads = PyMem_RawMalloc((size_t)(n * NCOL) * sizeof(int32_t) + 1);
    o->ts = PyMem_RawMalloc((size_t)n * sizeof(int64_t) + 1);
    if (!kind || !o->heads || !o->ts || !alloc_out(o, n, 0, 0, 0, 6))
        goto done;
    for (Py_ssize_t p = 0; p < np; p++) {
        Part *pt = &parts[p];
        const char *d = pt->buf.buf;
        Py_ssize_t i0 = pt->line0, i1 = pt->line0 + pt->n;
        pt->head0 = r;
        pt->heads = scan_headers(d, pt->buf.len, pt->n, o->l_s + i0, o->l_e + i0, kind + i0, o->heads + r * NCOL,
                                 o->ts + r);
        r += pt->heads;
        for (Py_ssize_t h = pt->head0; h < r; h++)
            if (o->ts[h] == TS_NONE) {
                ok = 0;
                goto done;
            }
        for (Py_ssize_t i = i0; i < i1; i++) {
            if (kind[i] == K_MAYBE && !i32_push(maybe, (int32_t)i))
                goto done;
            if (kind[i] == K_HEADER && first < 0)
                first = i;
            o->l_file[i] = (uint16_t)pt->file, o->l_piece[i] = (uint16_t)p;
            o->l_line[i] = pt->first + (uint32_t)(i - i0);
            write_view(o->l_views + 16 * i, d, o->l_s[i], o->l_e[i] - o->l_s[i], (int32_t)p);
        }
    }
    Py_ssize_t k = first < 0 ? n : first, c = n - r - k;  /* orphans, continuation lines */
    void *fit = PyMem_RawRealloc(o->heads, (size_t)(r * NCOL) * sizeof(int32_t) + 1);  /* shrinks in place */
    o->heads = fit ? fit : o->heads;
    fit = PyMem_RawRealloc(o->ts, (size_t)r * sizeof(int64_t) + 1);
    o->ts = fit ? fit : o->ts;
    if (!alloc_out(o, n, r, c, k, NBUF))
        goto done;
    jst = PyMem_RawMalloc((size_t)r + 1), tst = PyMem_RawMalloc((size_t)r + 1), meth = PyMem_RawMalloc((size_t)r + 1);
    if (!jst || !tst || !meth)
        goto done;
    Py_ssize_t ri = 0, ci = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (kind[i] == K_HEADER) {
            const int32_t *col = o->heads + ri * NCOL;
            o->r_file[ri] = o->l_file[i], o->r_piece[ri] = o->l_piece[i], o->r_line[ri] = o->l_line[i];
            o->bs[ri] = col[15], o->be[ri] = col[16];
            ri++;
        } else if (i < k) {
            o->o_file[i] = o->l_file[i], o->o_line[i] = o->l_line[i];
            memcpy(o->o_views + 16 * i, o->l_views + 16 * i, 16);
        } else {
            o->c_rec[ci] = (uint32_t)(ri - 1);
            o->c_file[ci] = o->l_file[i], o->c_piece[ci] = o->l_piece[i], o->c_line[ci] = o->l_line[i];
            o->c_s[ci] = o->l_s[i], o->c_e[ci] = o->l_e[i];
            memcpy(o->c_views + 16 * ci, o->l_views + 16 * i, 16);
            /* a date-led line is never K_CONT (lines.c): only the lines Python checks again need the test */
            if (kind[i] == K_MAYBE && has_date_prefix((const char *)parts[o->l_piece[i]].buf.buf + o->l_s[i],
                                                      o->l_e[i] - o->l_s[i])
                && !i32_push(stamped, (int32_t)ci))
                goto done;
            ci++;
        }
    }
    for (Py_ssize_t p = 0; p < np; p++) {
        Part *pt = &parts[p];
        const int32_t *head = o->heads + pt->head0 * NCOL;
        Py_ssize_t h = pt->head0;
        if (read_numbers(pt->buf.buf, pt->buf.len, head, pt->heads, methods, o->job + h, jst + h, o->tid + h,
                         tst + h, meth + h) < 0) {
            ok = 0;
            goto done;
        }
        route_heads(router, pt->buf.buf, pt->buf.len, head, pt->heads, generic, o->fam + h);
    }
    /* the records per family code + 2 (R_UNDECIDED first, then no family): the chunk's family counts */
    int32_t top = -1;
    for (Py_ssize_t i = 0; i < r; i++)
        top = o->fam[i] > top ? o->fam[i] : top;
    dims[4] = (Py_ssize_t)top + 3;
    if (!(*counts = PyMem_RawCalloc((size_t)dims[4], sizeof(int64_t))))
        goto done;
    for (Py_ssize_t i = 0; i < r; i++)
        (*counts)[o->fam[i] + 2]++;
    for (Py_ssize_t i = 0; i < r; i++) {
        if (jst[i] == N_UNDECIDED || tst[i] == N_UNDECIDED) {
            ok = 0;
            goto done;
        }
        o->mc[i] = meth[i] < 0 ? 0 : classes[meth[i]];
    }
    nulls[0] = validity(tst, r, o->tid_ok), nulls[1] = validity(jst, r, o->job_ok);
    dims[0] = n, dims[1] = r, dims[2] = c, dims[3] = k;
    ok = 1;
done:
    PyMem_RawFree(kind), PyMem_RawFree(jst), PyMem_RawFree(tst), PyMem_RawFree(meth);
    return ok;
}

/* chunk(blocks, files, first_lines, methods, classes, table, generic) -> dict of buffers, or None */
PyObject *scan_chunk(PyObject *self, PyObject *args)
{
    PyObject *blocks, *files, *firsts, *methods, *table, *out = NULL;
    const char *classes;
    Py_ssize_t nclasses;
    int generic, got = -1;
    Methods m;
    Out o;
    I32s maybe = {NULL, 0, 0};  /* the rows of the K_MAYBE lines */
    I32s stamped = {NULL, 0, 0};  /* the continuation lines that begin with a date (records.STAMPED) */
    int64_t *counts = NULL;  /* the records per family code (scan_parts) */
    memset(&o, 0, sizeof o);
    if (!PyArg_ParseTuple(args, "O!O!O!O!y#Oi", &PyTuple_Type, &blocks, &PyTuple_Type, &files, &PyTuple_Type,
                          &firsts, &PyTuple_Type, &methods, &classes, &nclasses, &table, &generic))
        return NULL;
    Py_ssize_t np = PyTuple_GET_SIZE(blocks);
    if (PyTuple_GET_SIZE(files) != np || PyTuple_GET_SIZE(firsts) != np || np > 65535)
        return PyErr_Format(PyExc_ValueError, "chunk: %zd blocks, files and first lines differ, or over 65535", np);
    if (!read_methods(methods, &m))
        return NULL;
    if (nclasses < m.n)
        return PyErr_Format(PyExc_ValueError, "chunk: a class for each of the %zd methods", m.n);
    Part *parts = PyMem_RawCalloc((size_t)np + 1, sizeof(Part));
    Router *router = router_open(table);
    if (!parts || !router) {
        if (!parts)
            PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t p = 0; p < np; p++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(blocks, p), &parts[p].buf, PyBUF_SIMPLE) < 0)
            goto done;
        parts[p].held = 1;
        long file = PyLong_AsLong(PyTuple_GET_ITEM(files, p));
        long long line = PyLong_AsLongLong(PyTuple_GET_ITEM(firsts, p));
        if (PyErr_Occurred())
            goto done;
        if (parts[p].buf.len >= INT32_MAX || file < 0 || file > 65535 || line < 0 || line > UINT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "chunk: a block over 2 GiB, or a file or line number out of range");
            goto done;
        }
        parts[p].file = (int)file, parts[p].first = (uint32_t)line;
    }
    Py_ssize_t dims[5] = {0}, nulls[2] = {0};
    Py_BEGIN_ALLOW_THREADS  /* the blocks are held and the router is plain memory: nothing Python is touched */
    got = scan_parts(parts, np, router, &m, (const uint8_t *)classes, generic, &o, &maybe, &stamped, &counts, dims,
                     nulls);
    Py_END_ALLOW_THREADS
    if (got < 0) {
        PyErr_NoMemory();
        goto done;
    }
    if (got == 0) {
        out = Py_NewRef(Py_None);
        goto done;
    }
    void **ptr[NBUF];
    Py_ssize_t size[NBUF];
    static const char *names[] = {"l_file", "l_piece", "l_line", "l_s", "l_e", "l_views", "r_file", "r_piece",
                                  "r_line", "tid", "job", "ts", "tid_ok", "job_ok", "mc", "bs", "be", "fam",
                                  "heads", "c_rec", "c_line", "c_file", "c_piece", "c_s", "c_e", "c_views",
                                  "o_file", "o_line", "o_views"};
    int count = buffers(&o, dims[0], dims[1], dims[2], dims[3], ptr, size);
    PyObject *dict = PyDict_New();
    if (!dict)
        goto done;
    for (int i = 0; i < count; i++) {
        int absent = (i == 12 && !nulls[0]) || (i == 13 && !nulls[1]);  /* no null: no bitmap */
        PyObject *buf;
        if (absent) {
            PyMem_RawFree(*ptr[i]);
            buf = Py_NewRef(Py_None);
        } else {
            buf = own_buffer(*ptr[i], size[i]);
        }
        *ptr[i] = NULL;  /* taken over (or freed) */
        if (!buf || PyDict_SetItemString(dict, names[i], buf) < 0) {
            Py_XDECREF(buf), Py_DECREF(dict);
            goto done;
        }
        Py_DECREF(buf);
    }
    I32s *lists[] = {&maybe, &stamped};
    static const char *list_names[] = {"maybe", "c_stamped"};
    for (int i = 0; i < 2; i++) {
        PyObject *rows = owned_vector((void **)&lists[i]->v, lists[i]->n * (Py_ssize_t)sizeof(int32_t));
        if (!rows || PyDict_SetItemString(dict, list_names[i], rows) < 0) {
            Py_XDECREF(rows), Py_DECREF(dict);
            goto done;
        }
        Py_DECREF(rows);
    }
    PyObject *per_code = own_buffer(counts, dims[4] * (Py_ssize_t)sizeof(int64_t));
    counts = NULL;  /* taken over (or freed) */
    if (!per_code || PyDict_SetItemString(dict, "fam_counts", per_code) < 0) {
        Py_XDECREF(per_code), Py_DECREF(dict);
        goto done;
    }
    Py_DECREF(per_code);
    static const char *sizes[] = {"n", "r", "c", "o", "tid_nulls", "job_nulls"};
    Py_ssize_t values[] = {dims[0], dims[1], dims[2], dims[3], nulls[0], nulls[1]};
    for (int i = 0; i < 6; i++) {
        PyObject *v = PyLong_FromSsize_t(values[i]);
        if (!v || PyDict_SetItemString(dict, sizes[i], v) < 0) {
            Py_XDECREF(v), Py_DECREF(dict);
            goto done;
        }
        Py_DECREF(v);
    }
    out = dict;
done:
    PyMem_RawFree(maybe.v), PyMem_RawFree(stamped.v), PyMem_RawFree(counts);
    free_out(&o);
    router_close(router);
    for (Py_ssize_t p = 0; parts && p < np; p++)
        if (parts[p].held)
            PyBuffer_Release(&parts[p].buf);
    PyMem_RawFree(parts);
    return out;
}
