/* The chunk reader's two byte-level steps (replay/parsing/chunks.py):
 *   grow(buf, size)           -> the bytearray resized to `size` without filling the bytes it gains, so
 *                                that a file read into it in place (readinto) is copied once, and the
 *                                pages of a read block are touched first by the read itself;
 *   newlines(data, lo, hi)    -> how many newlines data[lo:hi] holds, counted without the GIL (the
 *                                reader runs beside the parsing threads).
 * Python's bytearray(n) and bytearray.extend fill every byte first: a pass over the block, its pages
 * faulted in by the fill, and the read's copy after it. */
#include "scan.h"

PyObject *grow_bytes(PyObject *self, PyObject *args)
{
    PyObject *buf;
    Py_ssize_t size;
    if (!PyArg_ParseTuple(args, "O!n", &PyByteArray_Type, &buf, &size))
        return NULL;
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "grow: negative size");
        return NULL;
    }
    /* the new bytes are whatever the allocator hands out: the caller reads over them before it
     * looks at them, and cuts the buffer to what it read */
    if (PyByteArray_Resize(buf, size) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* newlines in p[0, n): in runs of 4080 bytes, each of 16 byte-wide counters takes one byte of every
 * 16 (at most 255 each, no overflow), which the compiler turns into vector compares; about twice the
 * speed of a memchr per line, and of numpy's compare and count (two passes and a temporary) */
static Py_ssize_t count_newlines(const unsigned char *p, Py_ssize_t n)
{
    enum { LANES = 16, RUN = 255 * LANES };
    Py_ssize_t count = 0;
    for (Py_ssize_t i = 0; i < n; i += RUN) {
        Py_ssize_t m = n - i < RUN ? n - i : RUN, k = 0;
        unsigned char lane[LANES] = {0};
        for (; k + LANES <= m; k += LANES)
            for (int j = 0; j < LANES; j++)
                lane[j] += p[i + k + j] == '\n';
        for (; k < m; k++)
            count += p[i + k] == '\n';
        for (int j = 0; j < LANES; j++)
            count += lane[j];
    }
    return count;
}

PyObject *newline_count(PyObject *self, PyObject *args)
{
    Py_buffer data;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "y*nn", &data, &lo, &hi))
        return NULL;
    if (lo < 0 || hi > data.len || lo > hi) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "newlines: span out of the data");
        return NULL;
    }
    Py_ssize_t count;
    Py_BEGIN_ALLOW_THREADS
    count = count_newlines((const unsigned char *)data.buf + lo, hi - lo);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&data);
    return PyLong_FromSsize_t(count);
}
