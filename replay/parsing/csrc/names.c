/* names(): a large_string column of a few names picked per row (see module.c) */
#include "arrow.h"

/* the name index of row i of `at` (4- or 8-byte integers; a negative one reads as too large) */
static inline uint64_t pick_at(const void *at, int width, Py_ssize_t i)
{
    return width == 8 ? (uint64_t)((const int64_t *)at)[i] : (uint64_t)((const uint32_t *)at)[i];
}

PyObject *name_column(PyObject *self, PyObject *args)
{
    Py_buffer ab, sb, bb, kb;
    int width;
    if (!PyArg_ParseTuple(args, "y*iy*y*y*", &ab, &width, &sb, &bb, &kb))
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = width > 0 ? ab.len / width : 0, m = kb.len, total = 0, nulls = 0;
    const int64_t *starts = sb.buf;
    const uint8_t *known = kb.buf;
    int64_t *offs = NULL;
    char *data = NULL;
    uint8_t *valid = NULL;
    int status = 1;  /* 1 done, -1 out of memory, -2 a name index outside the names */
    if ((width != 4 && width != 8) || sb.len != 8 * (m + 1) || starts[m] > bb.len) {
        PyErr_SetString(PyExc_ValueError, "names: 4- or 8-byte picks, a start per name and one past the last");
        goto done;
    }
    offs = PyMem_RawMalloc((size_t)(8 * (n + 1))), valid = PyMem_RawCalloc((size_t)(n + 7) / 8 + 1, 1);
    if (!offs || !valid) {
        status = -1;
        goto report;
    }
    Py_BEGIN_ALLOW_THREADS
    offs[0] = 0;
    for (Py_ssize_t i = 0; i < n; i++) {  /* the offsets first: the bytes are allocated at once */
        uint64_t k = pick_at(ab.buf, width, i);
        if (k >= (uint64_t)m) {
            status = -2;
            break;
        }
        total += starts[k + 1] - starts[k];
        offs[i + 1] = total;
        if (known[k])
            valid[i >> 3] |= (uint8_t)(1u << (i & 7));
        else
            nulls++;
    }
    if (status == 1 && !(data = PyMem_RawMalloc((size_t)total + 1)))
        status = -1;
    for (Py_ssize_t i = 0; status == 1 && i < n; i++) {
        uint64_t k = pick_at(ab.buf, width, i);
        memcpy(data + offs[i], (const char *)bb.buf + starts[k], (size_t)(starts[k + 1] - starts[k]));
    }
    Py_END_ALLOW_THREADS
report:
    if (status == -1)
        PyErr_NoMemory();
    else if (status == -2)
        PyErr_SetString(PyExc_ValueError, "names: a pick outside the names");
    else {
        PyObject *bo = own_buffer(offs, 8 * (n + 1)), *bd = own_buffer(data, total);
        offs = NULL, data = NULL;
        PyObject *bv = nulls ? own_buffer(valid, (n + 7) / 8) : Py_NewRef(Py_None);
        if (nulls)
            valid = NULL;
        if (bo && bd && bv)
            out = Py_BuildValue("(nOOO)", nulls, bv, bo, bd);
        Py_XDECREF(bo), Py_XDECREF(bd), Py_XDECREF(bv);
    }
done:
    PyMem_RawFree(offs), PyMem_RawFree(data), PyMem_RawFree(valid);
    PyBuffer_Release(&ab), PyBuffer_Release(&sb), PyBuffer_Release(&bb), PyBuffer_Release(&kb);
    return out;
}
