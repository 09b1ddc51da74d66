/* Arrow columns filled in C (arrow.c): owned buffers handed to pyarrow without a copy. */
#ifndef RMREPLAY_ARROW_H
#define RMREPLAY_ARROW_H

#include "scan.h"

enum { COL_I64, COL_F64, COL_BOOL, COL_STR };

/* one column of n rows: values (8 bytes a row; bits for bool), validity bits, and for strings
 * int64 offsets and the bytes they index; rows are set in order, each once */
typedef struct {
    int type;
    Py_ssize_t n, nulls, dlen, dcap;
    uint8_t *valid;
    void *vals;
    int64_t *offs;
    char *data;
} Col;

int arrow_ready(PyObject *module);  /* registers the Buffer type */
PyObject *own_buffer(void *p, Py_ssize_t n);
PyObject *owned_vector(void **v, Py_ssize_t n);  /* a vector's first n bytes as a Buffer, no copy */
int col_init(Col *c, int type, Py_ssize_t n);  /* 0 when out of memory (col_free it still) */
void col_free(Col *c);
void col_null(Col *c, Py_ssize_t i);
void col_i64(Col *c, Py_ssize_t i, int64_t x);
void col_f64(Col *c, Py_ssize_t i, double x);
void col_bool(Col *c, Py_ssize_t i, int x);
int col_str(Col *c, Py_ssize_t i, const char *p, Py_ssize_t n);  /* 0 when out of memory */
int col_put(Col *c, Py_ssize_t i, const char *d, int32_t s, int32_t e);  /* 1, 0 refused, -1 */
PyObject *col_to_python(Col *c);
PyObject *typed_columns(PyObject *self, PyObject *args);
PyObject *where_rows(PyObject *self, PyObject *args);  /* where.c */
PyObject *record_cycles(PyObject *self, PyObject *args);  /* where.c */
PyObject *first_spans(PyObject *self, PyObject *args);  /* where.c */
PyObject *name_column(PyObject *self, PyObject *args);  /* names.c */
PyObject *schedule_keep(PyObject *self, PyObject *args);  /* schedule.c */
/* rows grouped by (job, cycle) (keys.c): dense numbers into gid; the number of groups, -1 out of memory */
Py_ssize_t group_ids(Py_ssize_t n, const uint32_t *cyc, const int64_t *job, const uint8_t *ok, int32_t *gid);

#endif
