/* fill(): the single-line families' rows, matched by their templates, gathered by table (see module.c) */
#include "arrow.h"

/* fill(data, starts, ends, families, plan) reads every record body whose family has templates
 * (replay/parsing/templates.py) and appends its fields to the rows of that family's table ("bucket"),
 * in input order, so a table's rows of a chunk come out of one pass instead of a pass per family.
 *
 * plan = (families, buckets):
 *   families[code] is None (no template: the record is left alone) or (bucket, alternatives),
 *     each alternative (ops, slots, list_column): the template's ops, the bucket column of each
 *     of its field slots (int32, -1: matched, not kept), the bucket list column of its list (-1);
 *   buckets[b] is (columns, list kinds): how many string columns, and per list column whether it
 *     holds integers (K_INT: int64 values) or words (spans).
 * Returns (status, rows): status u8 per record, 0 no template, 1 taken, 2 no template matched (the
 * caller hands those on to the regex and lark paths); rows per bucket (records i32[m], spans
 * i32[m, columns, 2] with -1 for a field the row lacks, and per list column (counts i32[m], -1 for
 * a row without that list, values)). */

typedef struct {
    Op *ops;
    int nops, nfields, list_col;
    int32_t *slots;  /* field slot -> bucket column */
} Alt;

typedef struct {
    int bucket, nalts;
    Alt *alts;
} Family;

typedef struct {
    I32s counts, spans;
    I64s ints;
} ListCol;

typedef struct {
    int ncols, nlists;
    char *list_int;
    I32s recs, spans;
    ListCol *lists;
} Bucket;

typedef struct {
    Family *fams;
    Py_ssize_t nfams;
    Bucket *buckets;
    Py_ssize_t nbuckets;
    int maxfields;
} Plan;

static void free_plan(Plan *p)
{
    for (Py_ssize_t f = 0; f < p->nfams; f++) {
        for (int a = 0; a < p->fams[f].nalts; a++)
            PyMem_RawFree(p->fams[f].alts[a].ops), PyMem_RawFree(p->fams[f].alts[a].slots);
        PyMem_RawFree(p->fams[f].alts);
    }
    for (Py_ssize_t b = 0; b < p->nbuckets; b++) {
        Bucket *bk = &p->buckets[b];
        for (int l = 0; l < bk->nlists; l++)
            PyMem_RawFree(bk->lists[l].counts.v), PyMem_RawFree(bk->lists[l].spans.v), PyMem_RawFree(bk->lists[l].ints.v);
        PyMem_RawFree(bk->lists), PyMem_RawFree(bk->list_int), PyMem_RawFree(bk->recs.v), PyMem_RawFree(bk->spans.v);
    }
    PyMem_RawFree(p->fams), PyMem_RawFree(p->buckets);
}

static int fail(const char *msg) { return PyErr_SetString(PyExc_ValueError, msg), 0; }

static int read_bucket(PyObject *item, Bucket *bk)
{
    const char *kinds;
    Py_ssize_t nkinds;
    if (!PyArg_ParseTuple(item, "iy#", &bk->ncols, &kinds, &nkinds))
        return 0;
    bk->list_int = PyMem_RawCalloc((size_t)nkinds + 1, 1);
    bk->lists = PyMem_RawCalloc((size_t)nkinds + 1, sizeof(ListCol));
    if (!bk->list_int || !bk->lists)
        return PyErr_NoMemory(), 0;
    bk->nlists = (int)nkinds;  /* only now: free_plan() walks what is counted */
    for (Py_ssize_t l = 0; l < nkinds; l++)
        bk->list_int[l] = kinds[l] == K_INT;
    return bk->ncols >= 0 || fail("fill: a bucket with fewer than no columns");
}

static int read_alt(PyObject *item, const Bucket *bk, Alt *alt, int *maxfields)
{
    PyObject *ops;
    const char *slots;
    Py_ssize_t nslots;
    if (!PyArg_ParseTuple(item, "Oy#i", &ops, &slots, &nslots, &alt->list_col)
        || !read_ops(ops, &alt->ops, &alt->nops, &alt->nfields))
        return 0;
    if (nslots != alt->nfields * (Py_ssize_t)sizeof(int32_t) || alt->list_col >= bk->nlists)
        return fail("fill: a template's slots do not fit its fields or its bucket");
    alt->slots = PyMem_RawMalloc((size_t)nslots + 4);
    if (!alt->slots)
        return PyErr_NoMemory(), 0;
    memcpy(alt->slots, slots, (size_t)nslots);
    for (int f = 0; f < alt->nfields; f++)
        if (alt->slots[f] >= bk->ncols)
            return fail("fill: a template field beyond its bucket's columns");
    if (alt->nfields > *maxfields)
        *maxfields = alt->nfields;
    return 1;
}

static int read_plan(PyObject *families, PyObject *buckets, Plan *p)
{
    if (!PyTuple_Check(families) || !PyTuple_Check(buckets))
        return fail("fill: the plan is (families, buckets), two tuples");
    p->nbuckets = PyTuple_GET_SIZE(buckets);
    p->buckets = PyMem_RawCalloc((size_t)p->nbuckets + 1, sizeof(Bucket));
    p->nfams = PyTuple_GET_SIZE(families);
    p->fams = PyMem_RawCalloc((size_t)p->nfams + 1, sizeof(Family));
    if (!p->buckets || !p->fams)
        return PyErr_NoMemory(), 0;
    for (Py_ssize_t b = 0; b < p->nbuckets; b++)
        if (!read_bucket(PyTuple_GET_ITEM(buckets, b), &p->buckets[b]))
            return 0;
    for (Py_ssize_t f = 0; f < p->nfams; f++) {
        PyObject *item = PyTuple_GET_ITEM(families, f), *alts;
        Family *fam = &p->fams[f];
        fam->bucket = -1;
        if (item == Py_None)
            continue;
        if (!PyArg_ParseTuple(item, "iO", &fam->bucket, &alts) || !PyTuple_Check(alts))
            return fail("fill: a family's plan is (bucket, alternatives)");
        if (fam->bucket < 0 || fam->bucket >= p->nbuckets)
            return fail("fill: a family's bucket is out of range");
        fam->alts = PyMem_RawCalloc((size_t)PyTuple_GET_SIZE(alts) + 1, sizeof(Alt));
        if (!fam->alts)
            return PyErr_NoMemory(), 0;
        fam->nalts = (int)PyTuple_GET_SIZE(alts);
        for (int a = 0; a < fam->nalts; a++)
            if (!read_alt(PyTuple_GET_ITEM(alts, a), &p->buckets[fam->bucket], &fam->alts[a], &p->maxfields))
                return 0;
    }
    return 1;
}

/* Append record `rec`'s matched row to its bucket; 0 when out of memory. */
static int add_row(Bucket *bk, const Alt *alt, Py_ssize_t rec, const int32_t *fspans, const char *d,
                   const int32_t *items, Py_ssize_t nitems)
{
    if (!i32_push(&bk->recs, (int32_t)rec))
        return 0;
    Py_ssize_t at = bk->spans.n;  /* the row's spans in one step, all -1 (bytes 0xff) to begin with */
    if (!reserve((void **)&bk->spans.v, at, &bk->spans.cap, sizeof(int32_t), 2 * bk->ncols))
        return 0;
    memset(bk->spans.v + at, 0xff, (size_t)(2 * bk->ncols) * sizeof(int32_t));
    bk->spans.n += 2 * bk->ncols;
    for (int f = 0; f < alt->nfields; f++)
        if (alt->slots[f] >= 0 && fspans[2 * f] >= 0) {
            bk->spans.v[at + 2 * alt->slots[f]] = fspans[2 * f];
            bk->spans.v[at + 2 * alt->slots[f] + 1] = fspans[2 * f + 1];
        }
    for (int l = 0; l < bk->nlists; l++) {
        ListCol *lc = &bk->lists[l];
        if (l != alt->list_col) {
            if (!i32_push(&lc->counts, -1))
                return 0;
            continue;
        }
        if (!i32_push(&lc->counts, (int32_t)nitems))
            return 0;
        if (bk->list_int[l]) {  /* room for the whole list at once, then no check per item */
            if (!reserve((void **)&lc->ints.v, lc->ints.n, &lc->ints.cap, sizeof(int64_t), nitems))
                return 0;
            for (Py_ssize_t k = 0; k < nitems; k++)
                lc->ints.v[lc->ints.n++] = int_at(d, items[2 * k], items[2 * k + 1]);
        } else {
            if (!reserve((void **)&lc->spans.v, lc->spans.n, &lc->spans.cap, sizeof(int32_t), 2 * nitems))
                return 0;
            memcpy(lc->spans.v + lc->spans.n, items, (size_t)(2 * nitems) * sizeof(int32_t));
            lc->spans.n += 2 * nitems;
        }
    }
    return 1;
}

/* Room for each bucket's rows at once, a row per record of its families (the few no template takes
 * leave theirs unused): its vectors grew by doubling before, each step a copy beside the old buffer,
 * and the largest passing need of a chunk after `_scan.rmcounter`'s. The lists' values still grow. */
static int reserve_buckets(Plan *p, const int32_t *fam, Py_ssize_t n)
{
    Py_ssize_t *rows = PyMem_RawCalloc((size_t)p->nbuckets + 1, sizeof(Py_ssize_t));
    if (!rows)
        return PyErr_NoMemory(), 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (fam[i] >= 0 && fam[i] < p->nfams && p->fams[fam[i]].bucket >= 0)
            rows[p->fams[fam[i]].bucket]++;
    int ok = 1;
    for (Py_ssize_t b = 0; b < p->nbuckets && ok; b++) {
        Bucket *bk = &p->buckets[b];
        if (!rows[b])
            continue;
        ok = reserve_exact((void **)&bk->recs.v, &bk->recs.cap, sizeof(int32_t), rows[b])
             && reserve_exact((void **)&bk->spans.v, &bk->spans.cap, sizeof(int32_t), 2 * bk->ncols * rows[b]);
        for (int l = 0; l < bk->nlists && ok; l++)
            ok = reserve_exact((void **)&bk->lists[l].counts.v, &bk->lists[l].counts.cap, sizeof(int32_t), rows[b]);
    }
    PyMem_RawFree(rows);
    return ok || (PyErr_NoMemory(), 0);
}

/* the bucket's vectors handed over as Buffers, without a copy (the bucket keeps none) */
static PyObject *bucket_result(Bucket *bk)
{
    PyObject *lists = PyTuple_New(bk->nlists);
    if (!lists)
        return NULL;
    for (int l = 0; l < bk->nlists; l++) {
        ListCol *lc = &bk->lists[l];
        PyObject *vals = bk->list_int[l] ? owned_vector((void **)&lc->ints.v, lc->ints.n * 8)
                                         : owned_vector((void **)&lc->spans.v, lc->spans.n * 4);
        PyObject *pair = vals ? Py_BuildValue("(NN)", owned_vector((void **)&lc->counts.v, lc->counts.n * 4), vals) : NULL;
        if (!pair) {
            Py_DECREF(lists);
            return NULL;
        }
        PyTuple_SET_ITEM(lists, l, pair);
    }
    return Py_BuildValue("(NNN)", owned_vector((void **)&bk->recs.v, bk->recs.n * 4),
                         owned_vector((void **)&bk->spans.v, bk->spans.n * 4), lists);
}

PyObject *fill_rows(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en, fm;
    PyObject *families, *buckets, *status = NULL, *result = NULL;
    Plan plan = {0};
    int32_t *fspans = NULL, *items = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*(OO)", &in, &st, &en, &fm, &families, &buckets))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t), longest = 0;
    const int32_t *s = st.buf, *e = en.buf, *fam = fm.buf;
    const char *d = in.buf;
    if (en.len != st.len || fm.len != st.len) {
        fail("fill: as many ends and families as starts");
        goto done;
    }
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS  /* a pass over the spans alone: other parse threads run meanwhile */
    for (Py_ssize_t i = 0; i < n && !bad; i++) {
        bad = s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len;
        if (e[i] - s[i] > longest)
            longest = e[i] - s[i];
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        fail("fill: a span lies outside the block");
        goto done;
    }
    if (!read_plan(families, buckets, &plan))
        goto done;
    if (!reserve_buckets(&plan, fam, n))
        goto done;
    status = PyBytes_FromStringAndSize(NULL, n);
    fspans = PyMem_RawMalloc(((size_t)plan.maxfields + 1) * 2 * sizeof(int32_t));
    items = PyMem_RawMalloc(((size_t)longest / 2 + 2) * 2 * sizeof(int32_t));  /* at most this many tokens */
    if (!status || !fspans || !items) {
        PyErr_NoMemory();
        goto done;
    }
    char *st_out = PyBytes_AS_STRING(status);
    int oom = 0;
    /* the plan's ops point into the templates' bytes, which the call's arguments keep alive */
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n && !oom; i++) {
        const Family *f = fam[i] >= 0 && fam[i] < plan.nfams ? &plan.fams[fam[i]] : NULL;
        st_out[i] = 0;
        if (!f || f->bucket < 0)
            continue;
        st_out[i] = 2;
        if (!plain_body(d, s[i], e[i]))  /* once per body, not once per template tried */
            continue;
        for (int a = 0; a < f->nalts; a++) {
            const Alt *alt = &f->alts[a];
            Py_ssize_t nitems = 0;
            int32_t count = 0;
            for (int k = 0; k < 2 * alt->nfields; k++)
                fspans[k] = -1;
            if (!match_plain(d, s[i], e[i], alt->ops, alt->nops, fspans, items, &nitems, &count))
                continue;
            if (!add_row(&plan.buckets[f->bucket], alt, i, fspans, d, items, nitems)) {
                oom = 1;
                break;
            }
            st_out[i] = 1;
            break;
        }
    }
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    PyObject *rows = PyTuple_New(plan.nbuckets);
    if (!rows)
        goto done;
    for (Py_ssize_t b = 0; b < plan.nbuckets; b++) {
        PyObject *one = bucket_result(&plan.buckets[b]);
        if (!one) {
            Py_DECREF(rows);
            goto done;
        }
        PyTuple_SET_ITEM(rows, b, one);
    }
    result = Py_BuildValue("(ON)", status, rows);
done:
    Py_XDECREF(status);
    PyMem_RawFree(fspans), PyMem_RawFree(items);
    free_plan(&plan);
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en), PyBuffer_Release(&fm);
    return result;
}
