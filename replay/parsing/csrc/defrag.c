/* defrag_class(): the `class` of the defrag table's rows (see module.c), as replay/parsing/steps.py's
 * `defrag` gives it: detectFragmentation prints a `Class:` header, then that class's rows, which
 * take the class of the last header of their cycle (a header its own); every row naming a job then
 * takes the first class any row of its job was given in the cycle, and a row naming none keeps
 * its own (null but for headers and their rows). Classes are spans into the chunk's bytes. */
#include "arrow.h"

enum { ROLE_OTHER, ROLE_HEADER, ROLE_ROW };

/* out[2r], out[2r+1]: row r's class span (-1: null); -1 when out of memory */
static int carry_class(Py_ssize_t n, const int32_t *own, const uint8_t *role, const uint32_t *cyc,
                       const int64_t *job, const uint8_t *ok, int32_t *out)
{
    int32_t *cg = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    int32_t *jg = PyMem_RawMalloc((size_t)(n ? n : 1) * sizeof(int32_t));
    int32_t *last = NULL, *first = NULL;
    Py_ssize_t ncg = cg ? group_ids(n, cyc, NULL, NULL, cg) : -1;
    Py_ssize_t njg = jg ? group_ids(n, cyc, job, ok, jg) : -1;
    int status = -1;
    if (ncg < 0 || njg < 0 || !(last = PyMem_RawMalloc((size_t)(2 * ncg + 2) * sizeof(int32_t)))
        || !(first = PyMem_RawMalloc((size_t)(2 * njg + 2) * sizeof(int32_t))))
        goto done;
    memset(last, 0xff, (size_t)(2 * ncg + 2) * sizeof(int32_t));  /* -1: none yet */
    memset(first, 0xff, (size_t)(2 * njg + 2) * sizeof(int32_t));
    for (Py_ssize_t r = 0; r < n; r++) {
        int32_t *l = &last[2 * cg[r]], *f = &first[2 * jg[r]];
        if (role[r] == ROLE_HEADER && own[2 * r] >= 0)  /* forward_fill: a null header carries the last */
            l[0] = own[2 * r], l[1] = own[2 * r + 1];
        int has = role[r] != ROLE_OTHER && l[0] >= 0;
        out[2 * r] = has ? l[0] : -1, out[2 * r + 1] = has ? l[1] : -1;
        if (has && f[0] < 0)
            f[0] = l[0], f[1] = l[1];
    }
    for (Py_ssize_t r = 0; r < n; r++)
        if (ok[r])
            out[2 * r] = first[2 * jg[r]], out[2 * r + 1] = first[2 * jg[r] + 1];
    status = 0;
done:
    PyMem_RawFree(cg), PyMem_RawFree(jg), PyMem_RawFree(last), PyMem_RawFree(first);
    return status;
}

PyObject *defrag_class(PyObject *self, PyObject *args)
{
    Py_buffer own, role, cy, jb, ok;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &own, &role, &cy, &jb, &ok))
        return NULL;
    Py_ssize_t n = role.len;
    PyObject *out = NULL;
    int32_t *spans = NULL;
    int status = -1;
    if (own.len != 8 * n || cy.len != 4 * n || jb.len != 8 * n || ok.len != n)
        PyErr_SetString(PyExc_ValueError, "defrag_class: the row arrays disagree in length");
    else if ((spans = PyMem_RawMalloc((size_t)(2 * n + 2) * sizeof(int32_t))) == NULL)
        PyErr_NoMemory();
    else {
        Py_BEGIN_ALLOW_THREADS
        status = carry_class(n, own.buf, role.buf, cy.buf, jb.buf, ok.buf, spans);
        Py_END_ALLOW_THREADS
        if (status < 0)
            PyErr_NoMemory();
        else
            out = bytes_of(spans, 8 * n);
    }
    PyMem_RawFree(spans);
    PyBuffer_Release(&own), PyBuffer_Release(&role), PyBuffer_Release(&cy), PyBuffer_Release(&jb);
    PyBuffer_Release(&ok);
    return out;
}
