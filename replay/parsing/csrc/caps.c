/* caps(): the job_caps table's typed columns, from the templated rows of its four families (see
 * module.c). replay/parsing/steps.py's `caps` is the reference: every initJobCap row, with the
 * fields of the getPrjCap line (predicted or cannot-predict) its job logged last before it in the
 * cycle, and whether the job logged "Initialization time is 0" anywhere in the cycle; a job is
 * its job_id (null is one job) and a cycle its number (null is one cycle). Values are typed by
 * col_put (arrow.c); a value it refuses makes the chunk go to the polars step (None). */
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

/* the value of span field k of row r into row i of column c (null where the row has none): 1, 0
 * refused, -1 out of memory */
static int put(Col *c, int k, const char *d, const int32_t *sp, Py_ssize_t r, int ncols, const int32_t *slots,
               Py_ssize_t i)
{
    if (r < 0 || slots[k] < 0) {
        col_null(c, i);
        return 1;
    }
    return col_put(c, i, d, sp[(r * ncols + slots[k]) * 2], sp[(r * ncols + slots[k]) * 2 + 1]);
}

typedef struct { Py_ssize_t last; int zero; } Group;

/* the output columns of the n rows; 1 done, 0 refused, -1 out of memory */
static int fill_caps(const char *d, const int32_t *sp, int ncols, Py_ssize_t n, const int32_t *code,
                     const uint32_t *cyc, const int64_t *job, const uint8_t *ok, const int32_t *slots,
                     const int *fam, Col *cols, I32s *rows)
{
    Group *g = NULL;
    int32_t *gid = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    Py_ssize_t m = 0, i = 0, groups = gid ? group_ids(n, cyc, job, ok, gid) : -1;
    int status = 1;
    if (groups < 0 || !(g = PyMem_RawCalloc((size_t)groups + 1, sizeof(Group)))) {
        PyMem_RawFree(gid);
        return -1;
    }
    for (Py_ssize_t k = 0; k < groups; k++)
        g[k].last = -1;
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
        for (int k = 0; k < NSPAN && status == 1; k++)  /* its own user, order and caps; the rest from */
            status = put(&cols[k], k, d, sp, k <= S_ACTUAL ? r : gr->last, ncols, slots, i);  /* its getPrjCap */
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
