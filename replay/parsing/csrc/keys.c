/* Rows grouped by (job, cycle), as polars' `over("job_id", "cycle")` groups them (a null job is one
 * job, cycle 0 stands for the null cycle): dense group numbers for the compiled tables (caps.c,
 * defrag.c). Runs without the GIL. */
#include "arrow.h"

typedef struct { int64_t job; uint32_t cycle; int32_t id; uint8_t ok, used; } Slot;

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33, x *= 0xff51afd7ed558ccdULL, x ^= x >> 33, x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* each row's group, numbered 0.. in order of first appearance, into gid[n]; the number of groups,
 * or -1 when out of memory. job and ok may be NULL: rows grouped by cycle alone. */
Py_ssize_t group_ids(Py_ssize_t n, const uint32_t *cyc, const int64_t *job, const uint8_t *ok, int32_t *gid)
{
    Py_ssize_t cap = 16, groups = 0;
    while (cap < 2 * n) cap *= 2;
    Slot *t = PyMem_RawCalloc((size_t)cap, sizeof(Slot));
    if (!t)
        return -1;
    for (Py_ssize_t r = 0; r < n; r++) {
        uint8_t o = ok ? ok[r] : 0;
        int64_t j = o ? job[r] : 0;
        Py_ssize_t h = (Py_ssize_t)(mix((uint64_t)j * 31 + (uint64_t)cyc[r] * 2 + o) & (uint64_t)(cap - 1));
        while (t[h].used && !(t[h].job == j && t[h].cycle == cyc[r] && t[h].ok == o))
            h = (h + 1) & (cap - 1);
        if (!t[h].used)
            t[h] = (Slot){j, cyc[r], (int32_t)groups++, o, 1};
        gid[r] = t[h].id;
    }
    PyMem_RawFree(t);
    return groups;
}
