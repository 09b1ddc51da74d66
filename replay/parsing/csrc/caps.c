/* caps(): the job_caps table's typed columns, from the templated rows of its four families (see
 * module.c). replay/parsing/steps.py's `caps` is the reference: every initJobCap row, with the
 * fields of the getPrjCap line (predicted or cannot-predict) its job logged last before it in the
 * cycle, and whether the job logged "Initialization time is 0" anywhere in the cycle; a job is
 * its job_id (null is one job) and a cycle its number (null is one cycle). Integers are read as
 * polars casts them (the templates let only `-?\d{1,18}` through), numbers with strtod (polars'
 * cast gives the same correctly rounded double, and the same NaN and infinities); a number too
 * long for its buffer makes it refuse the chunk (None): the polars step then assembles it. */
#include <stdlib.h>
#include "arrow.h"

/* the span fields, in the order of the `slots` argument */
enum { S_USER, S_ORDER, S_BASE, S_EXPECTED, S_POTENTIAL, S_ACTUAL, S_T, S_NTH, S_TI, S_TR, S_R, S_QR, S_P, S_F,
       S_ST, S_RETURN, S_INIT_WAIT, S_PER_ITEM, NSPAN };
/* the output columns: the spans', then prj_kind and init_time_zero */
enum { C_KIND = NSPAN, C_ZERO, NCOLS };
enum { F_INIT, F_PRJ, F_CANNOT, F_ZERO };

static int col_type(int k)
{
    switch (k) {
    case S_USER: case C_KIND: return COL_STR;
    case S_TR: case S_R: case S_PER_ITEM: return COL_F64;
    case S_INIT_WAIT: case C_ZERO: return COL_BOOL;
    default: return COL_I64;
    }
}

/* a NUM token (the template's: [-+]?(\d+(\.\d*)?([eE][-+]?\d+)?|NaN|Infinity)) into *x, as polars'
 * cast reads it: correctly rounded, NaN and Infinity with their sign; 0 when too long to copy */
static int number_at(const char *d, int32_t s, int32_t e, double *x)
{
    char buf[64];
    if (e - s <= 0 || e - s >= (int32_t)sizeof buf)
        return 0;
    memcpy(buf, d + s, (size_t)(e - s));
    buf[e - s] = 0;
    char *end;
    *x = strtod(buf, &end);
    return end == buf + (e - s);
}

/* the value of span field k of row r into row i of column c: 1, or 0 when refused / out of memory */
static int put(Col *c, int k, const char *d, const int32_t *sp, Py_ssize_t r, int ncols, const int32_t *slots,
               Py_ssize_t i)
{
    if (r < 0 || slots[k] < 0 || sp[(r * ncols + slots[k]) * 2] < 0) {
        col_null(c, i);
        return 1;
    }
    int32_t s = sp[(r * ncols + slots[k]) * 2], e = sp[(r * ncols + slots[k]) * 2 + 1];
    double x;
    switch (c->type) {
    case COL_STR: return col_str(c, i, d + s, e - s);
    case COL_I64: col_i64(c, i, int_at(d, s, e)); return 1;
    case COL_BOOL: col_bool(c, i, (e - s == 4 && !memcmp(d + s, "true", 4)) || (e - s == 5 && !memcmp(d + s, "found", 5)));
        return 1;
    default:
        if (!number_at(d, s, e, &x))
            return 0;
        col_f64(c, i, x);
        return 1;
    }
}

typedef struct { int64_t job; uint32_t cycle; int ok; Py_ssize_t last; int zero; int used; } Group;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* each row's group (job, cycle) into gid; -1 when out of memory */
static Py_ssize_t group_rows(Py_ssize_t n, const uint32_t *cyc, const int64_t *job, const uint8_t *ok, Group **out,
                             Py_ssize_t *gid)
{
    Py_ssize_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    Group *g = PyMem_RawCalloc((size_t)cap, sizeof(Group));
    if (!g)
        return -1;
    for (Py_ssize_t r = 0; r < n; r++) {
        int64_t j = ok[r] ? job[r] : 0;
        Py_ssize_t h = (Py_ssize_t)(mix((uint64_t)j * 31 + cyc[r] * 2 + ok[r]) & (uint64_t)(cap - 1));
        while (g[h].used && !(g[h].job == j && g[h].cycle == cyc[r] && g[h].ok == ok[r]))
            h = (h + 1) & (cap - 1);
        if (!g[h].used)
            g[h] = (Group){j, cyc[r], ok[r], -1, 0, 1};
        gid[r] = h;
    }
    *out = g;
    return cap;
}

/* the output columns of the n rows; 1 done, 0 refused, -1 out of memory */
static int fill_caps(const char *d, const int32_t *sp, int ncols, Py_ssize_t n, const int32_t *code,
                     const uint32_t *cyc, const int64_t *job, const uint8_t *ok, const int32_t *slots,
                     const int *fam, Col *cols, I32s *rows)
{
    Group *g = NULL;
    Py_ssize_t *gid = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(Py_ssize_t)), m = 0, i = 0;
    int status = 1;
    if (!gid || group_rows(n, cyc, job, ok, &g, gid) < 0) {
        PyMem_RawFree(gid);
        return -1;
    }
    for (Py_ssize_t r = 0; r < n; r++) {
        g[gid[r]].zero |= code[r] == fam[F_ZERO];
        m += code[r] == fam[F_INIT];
    }
    for (int k = 0; k < NCOLS; k++)
        if (!col_init(&cols[k], col_type(k), m))
            status = -1;
    for (Py_ssize_t r = 0; r < n && status == 1; r++) {
        Group *gr = &g[gid[r]];
        if (code[r] == fam[F_PRJ] || code[r] == fam[F_CANNOT])
            gr->last = r;
        if (code[r] != fam[F_INIT])
            continue;
        if (!i32_push(rows, (int32_t)r))
            status = -1;
        for (int k = 0; k < NSPAN && status == 1; k++) {
            /* the row's own user, order and caps; the others from its last getPrjCap line */
            Py_ssize_t from = k <= S_ACTUAL ? r : gr->last;
            status = put(&cols[k], k, d, sp, from, ncols, slots, i);
        }
        if (status != 1)
            break;
        if (gr->last < 0)
            col_null(&cols[C_KIND], i);
        else if (!(code[gr->last] == fam[F_PRJ] ? col_str(&cols[C_KIND], i, "predicted", 9)
                                                : col_str(&cols[C_KIND], i, "cannot_predict", 14)))
            status = -1;
        col_bool(&cols[C_ZERO], i, gr->zero);
        i++;
    }
    PyMem_RawFree(gid), PyMem_RawFree(g);
    return status;
}

PyObject *caps_columns(PyObject *self, PyObject *args)
{
    Py_buffer in, sp, cd, cy, jb, ok, sl;
    int ncols, fam[4];
    if (!PyArg_ParseTuple(args, "y*y*iy*y*y*y*y*(iiii)", &in, &sp, &ncols, &cd, &cy, &jb, &ok, &sl, &fam[0],
                          &fam[1], &fam[2], &fam[3]))
        return NULL;
    Py_ssize_t n = cd.len / 4;
    PyObject *out = NULL;
    Col cols[NCOLS];
    memset(cols, 0, sizeof cols);
    I32s rows = {0};
    int status = -2;
    if (sp.len != n * ncols * 8 || cy.len != n * 4 || jb.len != n * 8 || ok.len != n || sl.len != NSPAN * 4)
        PyErr_SetString(PyExc_ValueError, "caps: the row arrays disagree in length");
    else {
        Py_BEGIN_ALLOW_THREADS
        status = fill_caps(in.buf, sp.buf, ncols, n, cd.buf, cy.buf, jb.buf, ok.buf, sl.buf, fam, cols, &rows);
        Py_END_ALLOW_THREADS
    }
    if (status == -1)
        PyErr_NoMemory();
    else if (status == 0)
        out = Py_NewRef(Py_None);
    else if (status == 1 && (out = PyList_New(NCOLS + 1)) != NULL) {
        PyObject *at = bytes_of(rows.v, rows.n * 4);
        if (!at)
            Py_CLEAR(out);
        else
            PyList_SET_ITEM(out, 0, at);
        for (int k = 0; k < NCOLS && out; k++) {
            PyObject *col = col_to_python(&cols[k]);
            if (!col) {
                Py_CLEAR(out);
                break;
            }
            PyList_SET_ITEM(out, k + 1, col);
        }
    }
    for (int k = 0; k < NCOLS; k++)
        col_free(&cols[k]);
    PyMem_RawFree(rows.v);
    PyBuffer_Release(&in), PyBuffer_Release(&sp), PyBuffer_Release(&cd), PyBuffer_Release(&cy);
    PyBuffer_Release(&jb), PyBuffer_Release(&ok), PyBuffer_Release(&sl);
    return out;
}
