/* rmcounter(): RmCounter blocks, one row per entity (see module.c) */
#include "arrow.h"

/* ---- RmCounter blocks ---------------------------------------------------------------------- */

/* apportion_qshares prints each counting pass as a block of lines: "<descr> RmCounter Start",
 * maxorder, entity_names, weights, wantedby.<entity> per entity, vmachines, optionally a
 * "Final apportionment" with "<entity> gbo" rows, "RmCounter End". rmcounter() matches every line
 * with its template and assembles one row per entity, as replay/parsing/tables.py's _rmcounter does from
 * the matched rows: a block starts at its Start line; within a block the last weights, vmachines,
 * maxorder and, per entity, the last wantedby and gbo rows count; entities come from the
 * entity_names rows in order, the i-th weight is the i-th entity's; a block without entities
 * still gives one row. It returns None when any line fails its template (the caller then goes
 * the general way), so its rows are exactly those. */
enum { RC_START, RC_END, RC_MAXORDER, RC_NAMES, RC_WEIGHTS, RC_WANTED, RC_VMACHINES, RC_FINAL, RC_GIVEN,
       RC_VSHARES, RC_NSHARES, RC_KINDS };

typedef struct {
    Op *ops;
    int nops, nfields, entity, maxorder;  /* field slots (-1: none) */
} Kind;

/* per matched line: its field spans and its list items (item spans in one shared array) */
typedef struct { int kind; int32_t f[8]; Py_ssize_t first, count; } Line;

static int same_span(const char *d, const int32_t *a, const int32_t *b)
{
    return a[1] - a[0] == b[1] - b[0] && memcmp(d + a[0], d + b[0], (size_t)(a[1] - a[0])) == 0;
}

/* the values of line `l`'s list, appended to `vals` as int64 (the template checked they are ints) */
static int push_list(const char *d, const Line *l, const int32_t *items, I64s *vals, I32s *offs)
{
    if (!reserve((void **)&vals->v, vals->n, &vals->cap, sizeof(int64_t), l->count))  /* once a list */
        return 0;
    const int32_t *it = items + 2 * l->first;
    for (Py_ssize_t k = 0; k < l->count; k++, it += 2)  /* mostly one digit: the loop of int_at, */
        vals->v[vals->n++] = it[1] - it[0] == 1 ? d[it[0]] - '0' : int_at(d, it[0], it[1]);  /* or none */
    return i32_push(offs, (int32_t)vals->n);
}

/* The last wantedby / gbo line per (kind, entity) of one block, hashed: a block has a line per
 * entity, so looking each up by a scan would be quadratic in the entities of a busy class. */
typedef struct { Py_ssize_t *slot; Py_ssize_t cap; } EntityIndex;

static uint32_t entity_hash(const char *d, const int32_t *span, int kind)
{
    return fnv(FNV_START ^ (uint32_t)kind, d + span[0], span[1] - span[0]);
}

static const int32_t *entity_of(const Line *lines, const Kind *kinds, Py_ssize_t r)
{
    return &lines[r].f[2 * kinds[lines[r].kind].entity];
}

/* index lines [a, b): each (kind, entity) keeps the last line that has it; 0 when out of memory */
static int index_rows(EntityIndex *ix, const Line *lines, const Kind *kinds, const char *d, Py_ssize_t a,
                      Py_ssize_t b)
{
    Py_ssize_t m = 0, cap = 16;
    for (Py_ssize_t r = a; r < b; r++)
        m += lines[r].kind == RC_WANTED || lines[r].kind == RC_GIVEN;
    while (cap < 2 * m + 2) cap *= 2;
    if (cap > ix->cap) {
        Py_ssize_t *slot = PyMem_RawRealloc(ix->slot, (size_t)cap * sizeof(Py_ssize_t));
        if (!slot) return 0;
        ix->slot = slot;
    }
    ix->cap = cap;
    for (Py_ssize_t k = 0; k < cap; k++) ix->slot[k] = -1;
    for (Py_ssize_t r = a; r < b; r++) {
        int rk = lines[r].kind;
        if (rk != RC_WANTED && rk != RC_GIVEN)
            continue;
        const int32_t *key = entity_of(lines, kinds, r);
        Py_ssize_t h = entity_hash(d, key, rk) & (cap - 1);
        while (ix->slot[h] >= 0 && !(lines[ix->slot[h]].kind == rk && same_span(d, key, entity_of(lines, kinds, ix->slot[h]))))
            h = (h + 1) & (cap - 1);
        ix->slot[h] = r;  /* a later line replaces an earlier one: the last counts */
    }
    return 1;
}

/* the index of the last `kind` line for `name` in the indexed block, or -1 */
static Py_ssize_t last_row(const EntityIndex *ix, const Line *lines, const Kind *kinds, const char *d, int kind,
                           const int32_t *name)
{
    Py_ssize_t h = entity_hash(d, name, kind) & (ix->cap - 1);
    for (; ix->slot[h] >= 0; h = (h + 1) & (ix->cap - 1))
        if (lines[ix->slot[h]].kind == kind && same_span(d, name, entity_of(lines, kinds, ix->slot[h])))
            return ix->slot[h];
    return -1;
}

#define OWN(vec, size) owned_vector((void **)&(vec).v, (vec).n * (size))

PyObject *rmcounter_rows(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en, kd;
    PyObject *kinds_arg, *result = NULL;
    Kind kinds[RC_KINDS];
    memset(kinds, 0, sizeof(kinds));
    Line *lines = NULL;
    int32_t *items = NULL;
    EntityIndex per = {0};
    I32s blk_line = {0}, row_blk = {0}, row_entity = {0}, wanted_off = {0}, given_off = {0}, vm_off = {0};
    I64s weight = {0}, wanted = {0}, given = {0}, vm = {0}, maxorder = {0};
    I32s weight_ok = {0}, wanted_ok = {0}, given_ok = {0}, vm_ok = {0}, maxorder_ok = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*O", &in, &st, &en, &kd, &kinds_arg))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t), nitems = 0, items_cap = 0;
    const int32_t *s = st.buf, *e = en.buf, *kind = kd.buf;
    const char *d = in.buf;
    if (!PyTuple_Check(kinds_arg) || PyTuple_GET_SIZE(kinds_arg) != RC_KINDS || en.len != st.len || kd.len != st.len) {
        PyErr_SetString(PyExc_ValueError, "rmcounter: one template per kind, and as many ends and kinds as starts");
        goto done;
    }
    for (int k = 0; k < RC_KINDS; k++) {
        PyObject *ops;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(kinds_arg, k), "Oii", &ops, &kinds[k].entity, &kinds[k].maxorder)
            || !read_ops(ops, &kinds[k].ops, &kinds[k].nops, &kinds[k].nfields))
            goto done;
        if (kinds[k].nfields > 4) {
            PyErr_SetString(PyExc_ValueError, "rmcounter: at most four fields per template");
            goto done;
        }
    }
    if (kinds[RC_MAXORDER].maxorder < 0 || kinds[RC_WANTED].entity < 0 || kinds[RC_GIVEN].entity < 0) {
        PyErr_SetString(PyExc_ValueError, "rmcounter: the maxorder, wantedby and gbo templates must name their fields");
        goto done;
    }
    /* from here to `unlocked` only C memory is touched: other parse threads run meanwhile */
    int status = 1;  /* 1 rows, 0 a line fails its template, -1 out of memory, -2 a bad span or kind */
    I32s descr = {0};
    PyThreadState *save = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len || kind[i] < 0 || kind[i] >= RC_KINDS) {
            status = -2;
            goto unlocked;
        }
    }
    lines = PyMem_RawCalloc((size_t)n + 1, sizeof(Line));
    if (!lines)
        goto nomem;
    for (Py_ssize_t i = 0; i < n; i++) {  /* every line must match its template */
        Line *l = &lines[i];
        /* room for the most items a line can hold (one per two bytes), grown as the lines are matched:
         * reserved for all the lines at once, the bound was 4 bytes per byte of the RmCounter lines,
         * the largest buffer of a chunk (27 MB for 16 MB of i_mega24, of which about a third is used) */
        if (!reserve((void **)&items, 2 * nitems, &items_cap, sizeof(int32_t), 2 * ((e[i] - s[i]) / 2 + 1) + 2))
            goto nomem;
        const Kind *k = &kinds[kind[i]];
        int32_t count = 0;
        l->kind = kind[i], l->first = nitems;
        for (int f = 0; f < 8; f++) l->f[f] = -1;
        if (!match_one(d, s[i], e[i], k->ops, k->nops, l->f, items, &nitems, &count)) {
            status = 0;
            goto unlocked;
        }
        l->count = count;
    }
    Py_ssize_t i = 0;
    while (i < n && lines[i].kind != RC_START) i++;  /* lines before the chunk's first block belong to none */
    while (i < n) {
        Py_ssize_t b0 = i++, last_w = -1, last_vm = -1, last_mo = -1;
        while (i < n && lines[i].kind != RC_START) {
            if (lines[i].kind == RC_WEIGHTS) last_w = i;
            else if (lines[i].kind == RC_VMACHINES) last_vm = i;
            else if (lines[i].kind == RC_MAXORDER) last_mo = i;
            i++;
        }
        int32_t blk = (int32_t)blk_line.n;
        if (!i32_push(&blk_line, (int32_t)b0))
            goto nomem;
        if (last_vm >= 0 ? !push_list(d, &lines[last_vm], items, &vm, &vm_off) : !i32_push(&vm_off, (int32_t)vm.n))
            goto nomem;
        if (!i32_push(&vm_ok, last_vm >= 0))
            goto nomem;
        const Line *mo = last_mo >= 0 ? &lines[last_mo] : NULL;
        int mslot = kinds[RC_MAXORDER].maxorder;
        if (!i64_push(&maxorder, mo ? int_at(d, mo->f[2 * mslot], mo->f[2 * mslot + 1]) : 0) || !i32_push(&maxorder_ok, mo != NULL))
            goto nomem;
        if (!index_rows(&per, lines, kinds, d, b0 + 1, i))
            goto nomem;
        Py_ssize_t rows_before = row_blk.n;
        for (Py_ssize_t j = b0 + 1; j < i; j++) {
            if (lines[j].kind != RC_NAMES)
                continue;
            for (Py_ssize_t t = 0; t < lines[j].count; t++) {
                const int32_t *name = &items[2 * (lines[j].first + t)];
                if (!i32_push(&row_blk, blk) || !i32_push(&row_entity, name[0]) || !i32_push(&row_entity, name[1]))
                    goto nomem;
                int has_w = last_w >= 0 && t < lines[last_w].count;
                const int32_t *w = has_w ? &items[2 * (lines[last_w].first + t)] : NULL;
                if (!i64_push(&weight, has_w ? int_at(d, w[0], w[1]) : 0) || !i32_push(&weight_ok, has_w))
                    goto nomem;
                Py_ssize_t last_wanted = last_row(&per, lines, kinds, d, RC_WANTED, name);
                Py_ssize_t last_given = last_row(&per, lines, kinds, d, RC_GIVEN, name);
                if (last_wanted >= 0 ? !push_list(d, &lines[last_wanted], items, &wanted, &wanted_off)
                                     : !i32_push(&wanted_off, (int32_t)wanted.n))
                    goto nomem;
                if (last_given >= 0 ? !push_list(d, &lines[last_given], items, &given, &given_off)
                                    : !i32_push(&given_off, (int32_t)given.n))
                    goto nomem;
                if (!i32_push(&wanted_ok, last_wanted >= 0) || !i32_push(&given_ok, last_given >= 0))
                    goto nomem;
            }
        }
        if (row_blk.n == rows_before) {  /* no entities: the block still gives a row */
            if (!i32_push(&row_blk, blk) || !i32_push(&row_entity, -1) || !i32_push(&row_entity, -1)
                || !i64_push(&weight, 0) || !i32_push(&weight_ok, 0) || !i32_push(&wanted_off, (int32_t)wanted.n)
                || !i32_push(&given_off, (int32_t)given.n) || !i32_push(&wanted_ok, 0) || !i32_push(&given_ok, 0))
                goto nomem;
        }
    }
    for (Py_ssize_t b = 0; b < blk_line.n; b++) {  /* descr is every template's first field */
        const Line *l = &lines[blk_line.v[b]];
        if (!i32_push(&descr, l->f[0]) || !i32_push(&descr, l->f[1]))
            goto nomem;
    }
    goto unlocked;
nomem:
    status = -1;
unlocked:
    PyEval_RestoreThread(save);
    if (status == -2)
        PyErr_SetString(PyExc_ValueError, "rmcounter: a span outside the block or an unknown kind");
    else if (status < 0)
        PyErr_NoMemory();
    else if (!status)
        result = Py_NewRef(Py_None);
    else  /* each vector handed over as a Buffer, no copy (OWN) */
        result = Py_BuildValue(
            "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
            "block_line", OWN(blk_line, 4), "descr", OWN(descr, 4),
            "row_block", OWN(row_blk, 4), "entity", OWN(row_entity, 4),
            "weight", OWN(weight, 8), "weight_ok", OWN(weight_ok, 4),
            "wanted", OWN(wanted, 8), "wanted_off", OWN(wanted_off, 4),
            "wanted_ok", OWN(wanted_ok, 4), "given", OWN(given, 8),
            "given_off", OWN(given_off, 4), "given_ok", OWN(given_ok, 4),
            "vmachines", OWN(vm, 8), "vmachines_off", OWN(vm_off, 4),
            "vmachines_ok", OWN(vm_ok, 4), "maxorder", OWN(maxorder, 8),
            "maxorder_ok", OWN(maxorder_ok, 4), "nrows", PyLong_FromSsize_t(row_blk.n));
    PyMem_RawFree(descr.v);
done:
    for (int k = 0; k < RC_KINDS; k++) PyMem_RawFree(kinds[k].ops);
    PyMem_RawFree(per.slot);
    PyMem_RawFree(lines), PyMem_RawFree(items);
    PyMem_RawFree(blk_line.v), PyMem_RawFree(row_blk.v), PyMem_RawFree(row_entity.v), PyMem_RawFree(wanted_off.v);
    PyMem_RawFree(given_off.v), PyMem_RawFree(vm_off.v), PyMem_RawFree(weight.v), PyMem_RawFree(wanted.v);
    PyMem_RawFree(given.v), PyMem_RawFree(vm.v), PyMem_RawFree(maxorder.v), PyMem_RawFree(weight_ok.v);
    PyMem_RawFree(wanted_ok.v), PyMem_RawFree(given_ok.v), PyMem_RawFree(vm_ok.v), PyMem_RawFree(maxorder_ok.v);
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en), PyBuffer_Release(&kd);
    return result;
}
