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
    int ints;  /* its list holds integers: read as values (match_values), not as tokens */
} Kind;

/* per matched line of the block at hand: its field spans and its list, from `first` in the
 * block's values (a list of integers) or its item spans (the entity names) */
typedef struct { int kind; int32_t f[8]; Py_ssize_t first, count; } Line;

/* The block at hand, matched: its lines and their lists. Reused block after block, so it holds
 * one block at a time (a few kB; a busy class's block, a few hundred) where the matches of all a
 * chunk's lines were held at once before (12 MB at 8 MB chunks of i_mega24, at its highest). */
typedef struct {
    Line *line;
    int32_t *items;  /* (start, end) per name */
    int64_t *vals;
    Py_ssize_t n, nitems, nvals, line_cap, items_cap, vals_cap;
} Block;

static int same_span(const char *d, const int32_t *a, const int32_t *b)
{
    return a[1] - a[0] == b[1] - b[0] && memcmp(d + a[0], d + b[0], (size_t)(a[1] - a[0])) == 0;
}

/* match line [s, e) of `kind` as the block's next line: 1, 0 when it fails its template, -1 out of memory */
static int match_line(Block *b, const Kind *kinds, const char *d, int32_t s, int32_t e, int kind)
{
    Py_ssize_t most = (e - s) / 2 + 2;  /* a list has at most a token per two bytes */
    if (!reserve((void **)&b->line, b->n, &b->line_cap, sizeof(Line), 1)
        || !reserve((void **)&b->items, 2 * b->nitems, &b->items_cap, sizeof(int32_t), 2 * most)
        || !reserve((void **)&b->vals, b->nvals, &b->vals_cap, sizeof(int64_t), most))
        return -1;
    const Kind *k = &kinds[kind];
    Line *l = &b->line[b->n];
    int32_t count = 0;
    l->kind = kind, l->first = k->ints ? b->nvals : b->nitems;
    for (int f = 0; f < 8; f++) l->f[f] = -1;
    if (!match_values(d, s, e, k->ops, k->nops, l->f, b->items, &b->nitems, b->vals, &b->nvals, &count))
        return 0;
    l->count = count;
    b->n++;
    return 1;
}

/* line `l`'s list of integers appended to `vals` and its end to `offs` */
static int push_list(const Block *b, const Line *l, I64s *vals, I32s *offs)
{
    if (!reserve((void **)&vals->v, vals->n, &vals->cap, sizeof(int64_t), l->count))  /* once a list */
        return 0;
    memcpy(vals->v + vals->n, b->vals + l->first, (size_t)l->count * sizeof(int64_t));
    vals->n += l->count;
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

/* the rows of the call, one per entity of each block (see rmcounter_rows' result) */
typedef struct {
    I32s blk_line, descr, row_blk, row_entity, wanted_off, given_off, vm_off;
    I64s weight, wanted, given, vm, maxorder;
    I32s weight_ok, wanted_ok, given_ok, vm_ok, maxorder_ok;
} Rows;

/* the tokens of d[s, e): the bytes that are not ' ' and follow one that is, or s (the names lines
 * are short and few: a byte loop) */
static Py_ssize_t tokens_in(const char *d, int32_t s, int32_t e)
{
    Py_ssize_t n = 0;
    for (int32_t k = s; k < e; k++)
        n += d[k] != ' ' && (k == s || d[k - 1] == ' ');
    return n;
}

/* the runs of digits in d[s, e), at least the values of an integer list there: read 64 bytes at a
 * time as the list's values are (digit_bits), a run starting at a digit after a byte that is not one */
static Py_ssize_t digit_runs(const char *d, int32_t s, int32_t e)
{
    Py_ssize_t n = 0;
    int32_t k = s;
    int last = 0;  /* the byte before k is a digit */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; k + 64 <= e; k += 64) {
        uint64_t dig;
        digit_bits(d + k, &dig);  /* its other bytes are no digit: whether it has any does not matter here */
        n += __builtin_popcountll(dig & ~((dig << 1) | (uint64_t)last));
        last = (int)(dig >> 63);
    }
#endif
    for (; k < e; k++) {
        int digit = is_digit(d[k]);
        n += digit && !last;
        last = digit;
    }
    return n;
}

/* Room for every row and list at once, so that no vector is copied as it grows (they grew by
 * doubling before, each step a copy beside the old buffer): the rows from the names lines' tokens,
 * the lists from their lines' runs of digits. A bound from the lines' lengths alone (a value per two
 * bytes) reserved twice what i_mega24's lists hold and measured slower: buffers that large are
 * mapped afresh at each call. A list used by two rows (an entity named twice in a block) can pass
 * the count: then they grow. */
static int reserve_rows(Rows *r, const char *d, const int32_t *s, const int32_t *e, const int32_t *kind, Py_ssize_t n)
{
    Py_ssize_t blocks = 0, names = 0, wanted = 0, given = 0, vm = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        switch (kind[i]) {
        case RC_START: blocks++; break;
        case RC_NAMES: names += tokens_in(d, s[i], e[i]); break;
        case RC_WANTED: wanted += digit_runs(d, s[i], e[i]); break;
        case RC_GIVEN: given += digit_runs(d, s[i], e[i]); break;
        case RC_VMACHINES: vm += digit_runs(d, s[i], e[i]); break;
        default: break;
        }
    }
    Py_ssize_t rows = names + blocks;
    I32s *per_row[] = {&r->row_blk, &r->wanted_off, &r->given_off, &r->weight_ok, &r->wanted_ok, &r->given_ok};
    I32s *per_blk[] = {&r->blk_line, &r->vm_off, &r->vm_ok, &r->maxorder_ok};
    for (size_t k = 0; k < sizeof per_row / sizeof *per_row; k++)
        if (!reserve_exact((void **)&per_row[k]->v, &per_row[k]->cap, sizeof(int32_t), rows))
            return 0;
    for (size_t k = 0; k < sizeof per_blk / sizeof *per_blk; k++)
        if (!reserve_exact((void **)&per_blk[k]->v, &per_blk[k]->cap, sizeof(int32_t), blocks))
            return 0;
    return reserve_exact((void **)&r->row_entity.v, &r->row_entity.cap, sizeof(int32_t), 2 * rows)
           && reserve_exact((void **)&r->descr.v, &r->descr.cap, sizeof(int32_t), 2 * blocks)
           && reserve_exact((void **)&r->weight.v, &r->weight.cap, sizeof(int64_t), rows)
           && reserve_exact((void **)&r->maxorder.v, &r->maxorder.cap, sizeof(int64_t), blocks)
           && reserve_exact((void **)&r->wanted.v, &r->wanted.cap, sizeof(int64_t), wanted)
           && reserve_exact((void **)&r->given.v, &r->given.cap, sizeof(int64_t), given)
           && reserve_exact((void **)&r->vm.v, &r->vm.cap, sizeof(int64_t), vm);
}

/* the rows of block `b` (matched; its Start line is line b0 of the call) appended to `r`; 0 out of memory */
static int block_rows(Rows *r, const Block *b, Py_ssize_t b0, const Kind *kinds, const char *d, EntityIndex *per)
{
    const Line *lines = b->line;
    Py_ssize_t last_w = -1, last_vm = -1, last_mo = -1;
    for (Py_ssize_t j = 1; j < b->n; j++) {
        if (lines[j].kind == RC_WEIGHTS) last_w = j;
        else if (lines[j].kind == RC_VMACHINES) last_vm = j;
        else if (lines[j].kind == RC_MAXORDER) last_mo = j;
    }
    int32_t blk = (int32_t)r->blk_line.n;
    if (!i32_push(&r->blk_line, (int32_t)b0) || !i32_push(&r->descr, lines[0].f[0]) || !i32_push(&r->descr, lines[0].f[1]))
        return 0;
    if (last_vm >= 0 ? !push_list(b, &lines[last_vm], &r->vm, &r->vm_off) : !i32_push(&r->vm_off, (int32_t)r->vm.n))
        return 0;
    if (!i32_push(&r->vm_ok, last_vm >= 0))
        return 0;
    const Line *mo = last_mo >= 0 ? &lines[last_mo] : NULL;
    int mslot = kinds[RC_MAXORDER].maxorder;
    if (!i64_push(&r->maxorder, mo ? int_at(d, mo->f[2 * mslot], mo->f[2 * mslot + 1]) : 0)
        || !i32_push(&r->maxorder_ok, mo != NULL))
        return 0;
    if (!index_rows(per, lines, kinds, d, 1, b->n))
        return 0;
    Py_ssize_t rows_before = r->row_blk.n;
    for (Py_ssize_t j = 1; j < b->n; j++) {
        if (lines[j].kind != RC_NAMES)
            continue;
        for (Py_ssize_t t = 0; t < lines[j].count; t++) {
            const int32_t *name = &b->items[2 * (lines[j].first + t)];
            if (!i32_push(&r->row_blk, blk) || !i32_push(&r->row_entity, name[0]) || !i32_push(&r->row_entity, name[1]))
                return 0;
            int has_w = last_w >= 0 && t < lines[last_w].count;
            if (!i64_push(&r->weight, has_w ? b->vals[lines[last_w].first + t] : 0) || !i32_push(&r->weight_ok, has_w))
                return 0;
            Py_ssize_t last_wanted = last_row(per, lines, kinds, d, RC_WANTED, name);
            Py_ssize_t last_given = last_row(per, lines, kinds, d, RC_GIVEN, name);
            if (last_wanted >= 0 ? !push_list(b, &lines[last_wanted], &r->wanted, &r->wanted_off)
                                 : !i32_push(&r->wanted_off, (int32_t)r->wanted.n))
                return 0;
            if (last_given >= 0 ? !push_list(b, &lines[last_given], &r->given, &r->given_off)
                                : !i32_push(&r->given_off, (int32_t)r->given.n))
                return 0;
            if (!i32_push(&r->wanted_ok, last_wanted >= 0) || !i32_push(&r->given_ok, last_given >= 0))
                return 0;
        }
    }
    if (r->row_blk.n == rows_before)  /* no entities: the block still gives a row */
        return i32_push(&r->row_blk, blk) && i32_push(&r->row_entity, -1) && i32_push(&r->row_entity, -1)
               && i64_push(&r->weight, 0) && i32_push(&r->weight_ok, 0) && i32_push(&r->wanted_off, (int32_t)r->wanted.n)
               && i32_push(&r->given_off, (int32_t)r->given.n) && i32_push(&r->wanted_ok, 0) && i32_push(&r->given_ok, 0);
    return 1;
}

#define OWN(vec, size) owned_vector((void **)&(vec).v, (vec).n * (size))

PyObject *rmcounter_rows(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en, kd;
    PyObject *kinds_arg, *result = NULL;
    Kind kinds[RC_KINDS];
    memset(kinds, 0, sizeof(kinds));
    Block blk = {0};
    EntityIndex per = {0};
    Rows r;
    memset(&r, 0, sizeof(r));
    if (!PyArg_ParseTuple(args, "y*y*y*y*O", &in, &st, &en, &kd, &kinds_arg))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t);
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
        for (int o = 0; o < kinds[k].nops; o++)
            kinds[k].ints |= kinds[k].ops[o].code == T_LIST && kinds[k].ops[o].kind == K_INT;
    }
    if (kinds[RC_MAXORDER].maxorder < 0 || kinds[RC_WANTED].entity < 0 || kinds[RC_GIVEN].entity < 0) {
        PyErr_SetString(PyExc_ValueError, "rmcounter: the maxorder, wantedby and gbo templates must name their fields");
        goto done;
    }
    if (!kinds[RC_WEIGHTS].ints || !kinds[RC_WANTED].ints || !kinds[RC_GIVEN].ints || !kinds[RC_VMACHINES].ints
        || kinds[RC_NAMES].ints) {
        PyErr_SetString(PyExc_ValueError, "rmcounter: the weights, wantedby, gbo and vmachines lists are integers, the names not");
        goto done;
    }
    /* from here to `unlocked` only C memory is touched: other parse threads run meanwhile */
    int status = 1;  /* 1 rows, 0 a line fails its template, -1 out of memory, -2 a bad span or kind */
    PyThreadState *save = PyEval_SaveThread();
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len || kind[i] < 0 || kind[i] >= RC_KINDS) {
            status = -2;
            goto unlocked;
        }
    }
    if (!reserve_rows(&r, d, s, e, kind, n))
        goto nomem;
    /* Each block is matched and its rows made before the next is matched; every line is matched,
     * those before the chunk's first block too (they belong to none): one failing gives None. */
    for (Py_ssize_t i = 0; i < n;) {
        Py_ssize_t b0 = i;
        blk.n = blk.nitems = blk.nvals = 0;
        do {
            int got = match_line(&blk, kinds, d, s[i], e[i], kind[i]);
            if (got <= 0) {
                status = got;
                goto unlocked;
            }
            i++;
        } while (i < n && kind[i] != RC_START);
        if (kind[b0] == RC_START && !block_rows(&r, &blk, b0, kinds, d, &per))
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
            "block_line", OWN(r.blk_line, 4), "descr", OWN(r.descr, 4),
            "row_block", OWN(r.row_blk, 4), "entity", OWN(r.row_entity, 4),
            "weight", OWN(r.weight, 8), "weight_ok", OWN(r.weight_ok, 4),
            "wanted", OWN(r.wanted, 8), "wanted_off", OWN(r.wanted_off, 4),
            "wanted_ok", OWN(r.wanted_ok, 4), "given", OWN(r.given, 8),
            "given_off", OWN(r.given_off, 4), "given_ok", OWN(r.given_ok, 4),
            "vmachines", OWN(r.vm, 8), "vmachines_off", OWN(r.vm_off, 4),
            "vmachines_ok", OWN(r.vm_ok, 4), "maxorder", OWN(r.maxorder, 8),
            "maxorder_ok", OWN(r.maxorder_ok, 4), "nrows", PyLong_FromSsize_t(r.row_blk.n));
done:
    for (int k = 0; k < RC_KINDS; k++) PyMem_RawFree(kinds[k].ops);
    PyMem_RawFree(per.slot);
    PyMem_RawFree(blk.line), PyMem_RawFree(blk.items), PyMem_RawFree(blk.vals);
    PyMem_RawFree(r.blk_line.v), PyMem_RawFree(r.descr.v), PyMem_RawFree(r.row_blk.v), PyMem_RawFree(r.row_entity.v);
    PyMem_RawFree(r.wanted_off.v), PyMem_RawFree(r.given_off.v), PyMem_RawFree(r.vm_off.v), PyMem_RawFree(r.weight.v);
    PyMem_RawFree(r.wanted.v), PyMem_RawFree(r.given.v), PyMem_RawFree(r.vm.v), PyMem_RawFree(r.maxorder.v);
    PyMem_RawFree(r.weight_ok.v), PyMem_RawFree(r.wanted_ok.v), PyMem_RawFree(r.given_ok.v), PyMem_RawFree(r.vm_ok.v);
    PyMem_RawFree(r.maxorder_ok.v);
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en), PyBuffer_Release(&kd);
    return result;
}
