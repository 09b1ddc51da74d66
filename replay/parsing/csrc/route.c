/* route(): each record's family, by its class, METHOD and body prefix (see module.c) */
#include "scan.h"

/* ---- routing ----------------------------------------------------------------------------- */

/* A record's family is decided by its (class, METHOD) and the first route prefix its body matches
 * (replay/parsing/families.py). The prefixes are regexes; replay/parsing/prefixes.py compiles each into a program
 * of int32 instructions [op, x, y, set] run here by a backtracking matcher (explicit stack, a step
 * budget): OP_SET consumes one byte of a 256-bit set, OP_SPLIT tries x then y, OP_JMP goes to x,
 * OP_BOL / OP_EOL assert the start / end of the body, OP_MATCH accepts, OP_SPAN consumes the
 * longest run of set bytes (at least x of them) with no way back (the compiler emits it only where
 * backtracking into the run could not help). */
enum { OP_SET = 0, OP_SPLIT = 1, OP_JMP = 2, OP_BOL = 3, OP_EOL = 4, OP_MATCH = 5, OP_SPAN = 6 };
enum { R_UNKNOWN_BODY = -1, R_UNDECIDED = -2 };  /* no route took the body; polars decides */
enum { CHAIN = 8, LEADS = 16 };  /* SET ops a program's straight start keeps; distinct leading sets */
#define STEP_BUDGET 200000
#define STACK_CAP 4096

typedef struct {
    const int32_t *code;
    const unsigned char *sets;
    Py_ssize_t ncode, nsets;
    int anchored, family;
    /* its straight start (prefilter): a leading SPAN's set (or NULL) and least run, then SET sets */
    const unsigned char *lead, *chain[CHAIN];
    int lead_min, nchain;
    Py_ssize_t after;  /* the pc past the straight start (its ops, one step each, then taken already) */
} Prog;

typedef struct {
    const char *key;
    Py_ssize_t nkey;
    Prog *progs;
    int nprogs;  /* -1: the group's prefixes are outside the compiled subset */
} Group;

/* 1 match, 0 none, -1 gave up (the stack or the step budget ran out). The first start runs from
 * pc `pc0` at `pos0` (past the straight start may_match took: pc 0 at s when it took none). */
static int run_prog(const Prog *p, const char *d, Py_ssize_t s, Py_ssize_t e, Py_ssize_t *stack, Py_ssize_t pc0,
                    Py_ssize_t pos0)
{
    long budget = STEP_BUDGET - pc0;  /* the straight start's steps, one an op */
    Py_ssize_t last = p->anchored ? s : e;
    for (Py_ssize_t start = s; start <= last; start++) {
        Py_ssize_t top = 0;
        stack[top++] = start == s ? pc0 : 0, stack[top++] = start == s ? pos0 : start;
        while (top) {
            Py_ssize_t pos = stack[--top], pc = stack[--top];
            for (;;) {
                if (--budget < 0 || pc < 0 || pc >= p->ncode)
                    return -1;
                const int32_t *ins = p->code + 4 * pc;
                if (ins[0] == OP_SET) {
                    if (pos >= e || ins[3] < 0 || ins[3] >= p->nsets)
                        break;
                    unsigned char b = (unsigned char)d[pos];
                    if (!((p->sets[32 * ins[3] + (b >> 3)] >> (b & 7)) & 1))
                        break;
                    pos++, pc++;
                } else if (ins[0] == OP_SPAN) {
                    if (ins[3] < 0 || ins[3] >= p->nsets)
                        break;
                    const unsigned char *set = p->sets + 32 * ins[3];
                    Py_ssize_t from = pos;
                    while (pos < e && ((set[(unsigned char)d[pos] >> 3] >> ((unsigned char)d[pos] & 7)) & 1))
                        pos++;
                    if (pos - from < ins[1])
                        break;
                    pc++;
                } else if (ins[0] == OP_SPLIT) {
                    if (top + 2 > STACK_CAP)
                        return -1;
                    stack[top++] = ins[2], stack[top++] = pos;
                    pc = ins[1];
                } else if (ins[0] == OP_JMP) {
                    pc = ins[1];
                } else if (ins[0] == OP_BOL) {
                    if (pos != s)
                        break;
                    pc++;
                } else if (ins[0] == OP_EOL) {
                    if (pos != e)
                        break;
                    pc++;
                } else {
                    return 1;
                }
            }
        }
    }
    return 0;
}

/* A group of a dozen prefixes tried in order spends most of its time failing early: "^\S+ maxorder ="
 * spans the first word, then fails on the "m" of a "wantedby" line, and so on for each prefix. So
 * the straight start of each anchored program is kept aside (prefilter): its leading SPAN, if any,
 * then the byte sets of the SET ops that follow. route() checks a body against them first, with
 * the leading span measured once a body for every prefix that starts with the same set, and skips
 * a program they reject: with no SPLIT before them, that program could only fail there, in a few
 * steps, and run_prog would have answered "no match". */
typedef struct { const unsigned char *set; Py_ssize_t end; } SpanMemo;  /* a body's leading run */

static int in_set(const unsigned char *set, unsigned char b) { return (set[b >> 3] >> (b & 7)) & 1; }

static int valid_set(const Prog *p, int set) { return set >= 0 && set < p->nsets; }

/* `leads`: the distinct leading span sets seen so far (the same set is one pointer, for SpanMemo) */
static void prefilter(Prog *p, const unsigned char **leads, int *nleads)
{
    Py_ssize_t pc = 0;
    p->lead = NULL, p->nchain = 0, p->after = 0;
    if (!p->anchored)
        return;  /* tried at every start under one step budget: skipping would change the budget */
    while (pc < p->ncode && p->code[4 * pc] == OP_BOL) pc++;  /* holds where an anchored program runs */
    if (pc < p->ncode && p->code[4 * pc] == OP_SPAN) {
        if (!valid_set(p, p->code[4 * pc + 3]))
            return;
        const unsigned char *own = p->sets + 32 * p->code[4 * pc + 3];
        p->lead = own, p->lead_min = p->code[4 * pc + 1];
        for (int k = 0; k < *nleads && p->lead == own; k++)
            if (memcmp(leads[k], own, 32) == 0)
                p->lead = leads[k];
        if (p->lead == own && *nleads < LEADS)
            leads[(*nleads)++] = own;
        pc++;
    }
    for (; p->nchain < CHAIN && pc < p->ncode && p->code[4 * pc] == OP_SET; pc++) {
        if (!valid_set(p, p->code[4 * pc + 3]))
            break;
        p->chain[p->nchain++] = p->sets + 32 * p->code[4 * pc + 3];
    }
    p->after = pc;
}

/* -1 when the program's straight start rejects the body d[s, e) (it cannot match), else the
 * position past it (where run_prog goes on from pc p->after) */
static Py_ssize_t may_match(const Prog *p, const char *d, Py_ssize_t s, Py_ssize_t e, SpanMemo *memo)
{
    Py_ssize_t q = s;
    if (p->lead) {
        if (memo->set != p->lead) {
            for (q = s; q < e && in_set(p->lead, (unsigned char)d[q]); q++) {}
            memo->set = p->lead, memo->end = q;
        }
        q = memo->end;
        if (q - s < p->lead_min)
            return -1;
    }
    for (int j = 0; j < p->nchain; j++, q++)
        if (q >= e || !in_set(p->chain[j], (unsigned char)d[q]))
            return -1;
    return q;
}

/* a name as one word for the hash: up to 8 bytes, or the first and last 8 (no byte loop) */
static uint64_t name_word(const char *p, Py_ssize_t n)
{
    uint64_t w = (uint64_t)n;
    if (n >= 8)
        return w ^ load8(p) ^ (load8(p + n - 8) * 0x9e3779b97f4a7c15ULL);
    for (Py_ssize_t i = 0; i < n; i++)
        w = w << 8 ^ (unsigned char)p[i];
    return w;
}

/* the hash of a (class, METHOD) key (a different key may share it: the names are compared too) */
static uint32_t key_hash(const char *cls, Py_ssize_t ncls, const char *meth, Py_ssize_t nmeth)
{
    uint64_t x = name_word(cls, ncls) * 0xff51afd7ed558ccdULL ^ name_word(meth, nmeth);
    x *= 0xc4ceb9fe1a85ec53ULL;
    return (uint32_t)(x >> 32);  /* the high bits, which every byte of the names reached */
}

static int read_groups(PyObject *table, Group **groups, Py_ssize_t *ngroups)
{
    const unsigned char *leads[LEADS];
    int nleads = 0;
    if (!PyTuple_Check(table))
        return PyErr_SetString(PyExc_TypeError, "route: the table must be a tuple"), 0;
    *ngroups = PyTuple_GET_SIZE(table);
    *groups = PyMem_RawCalloc((size_t)*ngroups + 1, sizeof(Group));
    if (!*groups)
        return PyErr_NoMemory(), 0;
    for (Py_ssize_t g = 0; g < *ngroups; g++) {
        Group *gr = &(*groups)[g];
        PyObject *routes;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(table, g), "y#O", &gr->key, &gr->nkey, &routes))
            return 0;
        if (routes == Py_None) {
            gr->nprogs = -1;
            continue;
        }
        if (!PyTuple_Check(routes))
            return PyErr_SetString(PyExc_TypeError, "route: routes must be a tuple or None"), 0;
        gr->nprogs = (int)PyTuple_GET_SIZE(routes);
        gr->progs = PyMem_RawCalloc((size_t)gr->nprogs + 1, sizeof(Prog));
        if (!gr->progs)
            return PyErr_NoMemory(), 0;
        for (int r = 0; r < gr->nprogs; r++) {
            Prog *p = &gr->progs[r];
            const char *code, *sets;
            Py_ssize_t ncode, nsets;
            if (!PyArg_ParseTuple(PyTuple_GET_ITEM(routes, r), "y#y#ii", &code, &ncode, &sets, &nsets,
                                  &p->anchored, &p->family))
                return 0;
            p->code = (const int32_t *)code, p->ncode = ncode / 16;
            p->sets = (const unsigned char *)sets, p->nsets = nsets / 32;
            prefilter(p, leads, &nleads);
        }
    }
    return 1;
}

static void free_groups(Group *groups, Py_ssize_t ngroups)
{
    for (Py_ssize_t g = 0; groups && g < ngroups; g++)
        PyMem_RawFree(groups[g].progs);
    PyMem_RawFree(groups);
}

struct Router {
    Group *groups;
    Py_ssize_t ngroups;
    int32_t slots[1024];  /* an open-addressing table of (class, METHOD) -> group (-1: empty) */
    Py_ssize_t *stack;    /* run_prog's */
};

void router_close(Router *r)
{
    if (!r)
        return;
    PyMem_RawFree(r->stack);
    free_groups(r->groups, r->ngroups);
    PyMem_RawFree(r);
}

Router *router_open(PyObject *table)
{
    Router *r = PyMem_RawCalloc(1, sizeof(Router));
    if (!r)
        return PyErr_NoMemory(), NULL;
    if (!read_groups(table, &r->groups, &r->ngroups))
        goto fail;
    if (r->ngroups > 512) {
        PyErr_SetString(PyExc_ValueError, "route: at most 512 (class, METHOD) groups");
        goto fail;
    }
    for (int i = 0; i < 1024; i++) r->slots[i] = -1;
    for (Py_ssize_t g = 0; g < r->ngroups; g++) {
        const char *zero = memchr(r->groups[g].key, 0, (size_t)r->groups[g].nkey);
        if (!zero) {
            PyErr_SetString(PyExc_ValueError, "route: a key is class NUL method");
            goto fail;
        }
        Py_ssize_t nc = zero - r->groups[g].key;
        uint32_t h = key_hash(r->groups[g].key, nc, zero + 1, r->groups[g].nkey - nc - 1) & 1023;
        while (r->slots[h] >= 0) h = (h + 1) & 1023;
        r->slots[h] = (int32_t)g;
    }
    r->stack = PyMem_RawMalloc(STACK_CAP * sizeof(Py_ssize_t));
    if (!r->stack) {
        PyErr_NoMemory();
        goto fail;
    }
    return r;
fail:
    router_close(r);
    return NULL;
}

void route_heads(Router *r, const char *d, Py_ssize_t len, const int32_t *col, Py_ssize_t n, int generic,
                 int32_t *fam)
{
    for (Py_ssize_t i = 0; i < n; i++, col += NCOL) {
        if (col[7] < 0 || col[14] > len || col[16] > len || col[8] < col[7] || col[14] < col[13] || col[16] < col[15]) {
            fam[i] = R_UNDECIDED;
            continue;
        }
        const char *cls = d + col[7], *meth = d + col[13];
        Py_ssize_t ncls = col[8] - col[7], nmeth = col[14] - col[13];
        uint32_t h = key_hash(cls, ncls, meth, nmeth) & 1023;
        const Group *gr = NULL;
        for (; r->slots[h] >= 0; h = (h + 1) & 1023) {
            const Group *c = &r->groups[r->slots[h]];
            if (c->nkey == ncls + 1 + nmeth && memcmp(c->key, cls, (size_t)ncls) == 0
                && memcmp(c->key + ncls + 1, meth, (size_t)nmeth) == 0) {
                gr = c;
                break;
            }
        }
        if (!gr) {
            fam[i] = generic;
            continue;
        }
        fam[i] = gr->nprogs < 0 ? R_UNDECIDED : R_UNKNOWN_BODY;
        SpanMemo memo = {NULL, 0};
        for (int k = 0; k < gr->nprogs; k++) {
            const Prog *p = &gr->progs[k];
            Py_ssize_t past = may_match(p, d, col[15], col[16], &memo);
            if (past < 0)
                continue;
            int got = run_prog(p, d, col[15], col[16], r->stack, p->after, past);
            if (got) {
                fam[i] = got > 0 ? p->family : R_UNDECIDED;
                break;
            }
        }
    }
}

PyObject *route_records(PyObject *self, PyObject *args)
{
    Py_buffer in, hd;
    PyObject *table, *out = NULL;
    int generic;
    if (!PyArg_ParseTuple(args, "y*y*Oi", &in, &hd, &table, &generic))
        return NULL;
    Py_ssize_t n = hd.len / (Py_ssize_t)(NCOL * sizeof(int32_t));
    Router *r = router_open(table);
    if (r)
        out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    if (out) {
        int32_t *fam = (int32_t *)PyBytes_AS_STRING(out);
        /* the groups point into the table's bytes, which the call's arguments keep alive */
        Py_BEGIN_ALLOW_THREADS
        route_heads(r, in.buf, in.len, hd.buf, n, generic, fam);
        Py_END_ALLOW_THREADS
    }
    router_close(r);
    PyBuffer_Release(&in), PyBuffer_Release(&hd);
    return out;
}
