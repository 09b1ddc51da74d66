/* share_match(): the placements table's two joins on (cycle, host, share) (steps.placements), by hash */
#include "arrow.h"

/* a share's key: its cycle (0 for none: nulls match each other, as the reference's join does; no
 * cycles at all: the key is the share alone) and the host and share id text d[s0, e0), d[s1, e1)
 * of `sp` (4 int32 per row) */
typedef struct {
    const char *d;
    const int32_t *sp;
    const uint32_t *cyc;
} Keys;

static uint32_t key_hash(const Keys *k, Py_ssize_t r)
{
    const int32_t *s = k->sp + 4 * r;
    uint32_t h = fnv(FNV_START ^ (k->cyc ? k->cyc[r] : 0), k->d + s[0], s[1] - s[0]);
    return fnv(h * 31u, k->d + s[2], s[3] - s[2]);
}

static int key_same(const Keys *a, Py_ssize_t i, const Keys *b, Py_ssize_t j)
{
    const int32_t *x = a->sp + 4 * i, *y = b->sp + 4 * j;
    return (a->cyc ? a->cyc[i] : 0) == (b->cyc ? b->cyc[j] : 0) && x[1] - x[0] == y[1] - y[0] && x[3] - x[2] == y[3] - y[2]
           && memcmp(a->d + x[0], b->d + y[0], (size_t)(x[1] - x[0])) == 0
           && memcmp(a->d + x[2], b->d + y[2], (size_t)(x[3] - x[2])) == 0;
}

/* the first row of `k` per key among rows with `pick[r]` set, hashed into slot (cap a power of 2) */
static void index_first(const Keys *k, Py_ssize_t n, const uint8_t *pick, uint8_t want, Py_ssize_t *slot,
                        Py_ssize_t cap)
{
    for (Py_ssize_t c = 0; c < cap; c++) slot[c] = -1;
    for (Py_ssize_t r = 0; r < n; r++) {
        if (pick[r] != want)
            continue;
        Py_ssize_t h = key_hash(k, r) & (cap - 1);
        while (slot[h] >= 0 && !key_same(k, slot[h], k, r))
            h = (h + 1) & (cap - 1);
        if (slot[h] < 0)
            slot[h] = r;  /* the first row with the key wins */
    }
}

static Py_ssize_t find(const Keys *k, const Py_ssize_t *slot, Py_ssize_t cap, const Keys *q, Py_ssize_t r)
{
    for (Py_ssize_t h = key_hash(q, r) & (cap - 1); slot[h] >= 0; h = (h + 1) & (cap - 1))
        if (key_same(k, slot[h], q, r))
            return slot[h];
    return -1;
}

/* share_match(data, sched_spans, sched_cycles, sched_adds, place_spans, place_cycles, place_roles)
 *   -> (uint8 is_new, int32 schedule row or -1, uint8 first) per placement row:
 * roles 1 a connect_share row, 2 a connect_new_share row; is_new: a connect_new_share row has its
 * key; the schedule row: the first addition (sched_adds 1) with its key; first: the first
 * connect_share row of its share in any cycle (the share orders stitch carries). */
PyObject *share_match(PyObject *self, PyObject *args)
{
    Py_buffer in, ss, sc, sa, ps, pc, pr;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*y*y*", &in, &ss, &sc, &sa, &ps, &pc, &pr))
        return NULL;
    Py_ssize_t n = sc.len / 4, m = pc.len / 4, cap = 16, most = n > m ? n : m;
    PyObject *out = NULL;
    while (cap < 2 * most + 2) cap *= 2;
    Py_ssize_t *slot = PyMem_RawMalloc((size_t)cap * sizeof(Py_ssize_t));
    uint8_t *is_new = PyMem_RawCalloc((size_t)m + 1, 1);
    int32_t *sched = PyMem_RawMalloc(((size_t)m + 1) * sizeof(int32_t));
    uint8_t *first = PyMem_RawCalloc((size_t)m + 1, 1);
    if (ss.len != 16 * n || sa.len != n || ps.len != 16 * m || pr.len != m) {
        PyErr_SetString(PyExc_ValueError, "share_match: four spans, a cycle and a role per row");
        goto done;
    }
    if (!slot || !is_new || !sched || !first) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    Keys s = {in.buf, ss.buf, sc.buf}, p = {in.buf, ps.buf, pc.buf};
    const uint8_t *roles = pr.buf;
    index_first(&p, m, roles, 2, slot, cap);
    for (Py_ssize_t r = 0; r < m; r++)
        is_new[r] = roles[r] == 1 && find(&p, slot, cap, &p, r) >= 0;
    index_first(&s, n, sa.buf, 1, slot, cap);
    for (Py_ssize_t r = 0; r < m; r++)
        sched[r] = roles[r] == 1 ? (int32_t)find(&s, slot, cap, &p, r) : -1;
    Keys share = {in.buf, ps.buf, NULL};
    index_first(&share, m, roles, 1, slot, cap);
    for (Py_ssize_t r = 0; r < m; r++)
        first[r] = roles[r] == 1 && find(&share, slot, cap, &share, r) == r;
    Py_END_ALLOW_THREADS
    out = Py_BuildValue("(NNN)", own_buffer(is_new, m), own_buffer(sched, 4 * m), own_buffer(first, m));
    is_new = NULL, sched = NULL, first = NULL;
done:
    PyMem_RawFree(slot), PyMem_RawFree(is_new), PyMem_RawFree(sched), PyMem_RawFree(first);
    PyBuffer_Release(&in), PyBuffer_Release(&ss), PyBuffer_Release(&sc), PyBuffer_Release(&sa);
    PyBuffer_Release(&ps), PyBuffer_Release(&pc), PyBuffer_Release(&pr);
    return out;
}
