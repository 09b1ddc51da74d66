/* match(), ints(): token templates over record bodies (see module.c) */
#include "scan.h"

/* ---- token templates ------------------------------------------------------------------- */

/* A template (compiled by replay/templates.py) is a tuple of ops, one per blank-separated token
 * of a single-line body; a blank in the body is one or more spaces, as the grammar's %ignore.
 * Each op is (code, prefix, suffix, field, kind):
 *   T_LIT    the token equals `prefix`;
 *   T_FIELD  the token is prefix + VALUE + suffix, VALUE non-empty (and an integer if kind=K_INT);
 *            VALUE's span goes to `field`;
 *   T_TYPED  a typed job id "[JSMRA?]_*digits": the letter to `field`, the digits to `field + 1`;
 *   T_LIST   every remaining token (integers if kind=K_INT) is one element of the list;
 *   T_OPT    the remaining tokens, if any, are the words of `prefix` one space apart (a terminal
 *            with a blank inside, as in the grammar); the span to `field`.
 * A body matches when the ops consume every token. Bodies with other blanks (tabs) or non-ASCII
 * bytes never match: the caller hands those to the regex and lark paths. */
static int is_typed_id(const char *p, Py_ssize_t n, Py_ssize_t *digits)
{
    if (n < 2 || !strchr("JSMRA?", p[0]))
        return 0;
    Py_ssize_t i = 1;
    while (i < n && p[i] == '_') i++;
    if (i == n)
        return 0;
    *digits = i;
    for (; i < n; i++)
        if (!is_digit(p[i]))
            return 0;
    return 1;
}

static Py_ssize_t next_token(const char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *tok_end)
{
    while (pos < end && d[pos] == ' ') pos++;
    Py_ssize_t e = pos;
    while (e < end && d[e] != ' ') e++;
    *tok_end = e;
    return pos;
}

/* Match one body; spans get (start, end) per field; list tokens are appended to `items`. */
int match_one(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
                     int32_t *items, Py_ssize_t *nitems, int32_t *count)
{
    for (Py_ssize_t k = s; k < e; k++)
        if ((unsigned char)d[k] >= 0x80 || (d[k] >= '\t' && d[k] <= '\r'))
            return 0;
    Py_ssize_t pos = s, te;
    for (int o = 0; o < nops; o++) {
        const Op *op = &ops[o];
        if (op->code == T_LIST) {
            Py_ssize_t first = *nitems;
            for (Py_ssize_t t = next_token(d, pos, e, &te); t < e; t = next_token(d, te, e, &te)) {
                if (op->kind == K_INT && !is_int(d + t, te - t)) {
                    *nitems = first;
                    return 0;
                }
                items[2 * *nitems] = (int32_t)t, items[2 * *nitems + 1] = (int32_t)te;
                (*nitems)++;
            }
            *count = (int32_t)(*nitems - first);
            pos = e;
            continue;
        }
        if (op->code == T_OPT) {
            Py_ssize_t t = next_token(d, pos, e, &te), start = t;
            if (t == e)
                continue;  /* absent */
            for (Py_ssize_t w = 0; w < op->npre;) {  /* present: word for word, one space apart */
                Py_ssize_t wl = 0, prev = te;
                while (w + wl < op->npre && op->pre[w + wl] != ' ') wl++;
                if (w > 0 && ((t = next_token(d, te, e, &te)) == e || t != prev + 1))
                    return 0;
                if (te - t != wl || memcmp(d + t, op->pre + w, (size_t)wl) != 0)
                    return 0;
                w += wl + 1;
            }
            spans[2 * op->field] = (int32_t)start, spans[2 * op->field + 1] = (int32_t)te;
            pos = te;
            continue;
        }
        Py_ssize_t t = next_token(d, pos, e, &te), n = te - t;
        if (t == e)
            return 0;
        pos = te;
        if (op->code == T_LIT) {
            if (n != op->npre || memcmp(d + t, op->pre, (size_t)n) != 0)
                return 0;
        } else if (op->code == T_TYPED) {
            Py_ssize_t digits;
            if (!is_typed_id(d + t, n, &digits))
                return 0;
            spans[2 * op->field] = (int32_t)t, spans[2 * op->field + 1] = (int32_t)(t + 1);
            spans[2 * op->field + 2] = (int32_t)(t + digits), spans[2 * op->field + 3] = (int32_t)te;
        } else {
            Py_ssize_t vs = t + op->npre, ve = te - op->nsuf;
            if (ve <= vs || memcmp(d + t, op->pre, (size_t)op->npre) != 0
                || memcmp(d + ve, op->suf, (size_t)op->nsuf) != 0)
                return 0;
            if (op->kind == K_INT && !is_int(d + vs, ve - vs))
                return 0;
            spans[2 * op->field] = (int32_t)vs, spans[2 * op->field + 1] = (int32_t)ve;
        }
    }
    return next_token(d, pos, e, &te) == e;  /* nothing left over */
}

/* int64 values of integer spans the templates checked (at most 18 digits, an optional '-') */
PyObject *parse_ints(PyObject *self, PyObject *args)
{
    Py_buffer in, sp;
    if (!PyArg_ParseTuple(args, "y*y*", &in, &sp))
        return NULL;
    Py_ssize_t n = sp.len / (Py_ssize_t)(2 * sizeof(int32_t));
    PyObject *out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (out) {
        const int32_t *span = sp.buf;
        const char *d = in.buf;
        int64_t *v = (int64_t *)PyBytes_AS_STRING(out);
        for (Py_ssize_t i = 0; i < n; i++) {
            int32_t s = span[2 * i], e = span[2 * i + 1];
            if (s < 0 || e < s || (Py_ssize_t)e > in.len || !is_int(d + s, e - s)) {
                Py_CLEAR(out);
                PyErr_SetString(PyExc_ValueError, "ints: a span is not an integer within the block");
                break;
            }
            int neg = d[s] == '-';
            int64_t x = 0;
            for (int32_t k = s + neg; k < e; k++)
                x = x * 10 + (d[k] - '0');
            v[i] = neg ? -x : x;
        }
    }
    PyBuffer_Release(&in), PyBuffer_Release(&sp);
    return out;
}

int read_ops(PyObject *tmpl, Op **ops, int *nops, int *nfields)
{
    if (!PyTuple_Check(tmpl))
        return PyErr_SetString(PyExc_TypeError, "match: the template must be a tuple of ops"), 0;
    *nops = (int)PyTuple_GET_SIZE(tmpl);
    *ops = PyMem_Calloc((size_t)*nops + 1, sizeof(Op));
    if (!*ops)
        return PyErr_NoMemory(), 0;
    *nfields = 0;
    for (int i = 0; i < *nops; i++) {
        Op *op = &(*ops)[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tmpl, i), "iy#y#ii", &op->code, &op->pre, &op->npre, &op->suf,
                              &op->nsuf, &op->field, &op->kind))
            return 0;
        int last = op->field + (op->code == T_TYPED);
        if (op->code != T_LIT && op->code != T_LIST && last + 1 > *nfields)
            *nfields = last + 1;
    }
    return 1;
}

PyObject *match_template(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en;
    PyObject *tmpl, *result = NULL, *ok = NULL, *spans = NULL, *items = NULL, *counts = NULL;
    Op *ops = NULL;
    int nops, nfields;
    if (!PyArg_ParseTuple(args, "y*y*y*O", &in, &st, &en, &tmpl))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t), total = 0;
    if (!read_ops(tmpl, &ops, &nops, &nfields))
        goto done;
    if (en.len != st.len) {
        PyErr_SetString(PyExc_ValueError, "match: starts and ends differ in length");
        goto done;
    }
    const int32_t *s = st.buf, *e = en.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len) {
            PyErr_SetString(PyExc_ValueError, "match: a span lies outside the block");
            goto done;
        }
        total += (e[i] - s[i]) / 2 + 1;  /* at most this many tokens */
    }
    ok = PyBytes_FromStringAndSize(NULL, n);
    spans = PyBytes_FromStringAndSize(NULL, n * (nfields ? nfields : 1) * 2 * (Py_ssize_t)sizeof(int32_t));
    counts = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    int32_t *buf = PyMem_Malloc((size_t)total * 2 * sizeof(int32_t) + 8);
    if (!ok || !spans || !counts || !buf) {
        PyMem_Free(buf);
        PyErr_NoMemory();
        goto done;
    }
    char *okp = PyBytes_AS_STRING(ok);
    int32_t *sp = (int32_t *)PyBytes_AS_STRING(spans), *cnt = (int32_t *)PyBytes_AS_STRING(counts);
    Py_ssize_t nitems = 0;
    for (Py_ssize_t i = 0; i < n; i++, sp += 2 * nfields) {
        for (int f = 0; f < 2 * nfields; f++)
            sp[f] = -1;
        cnt[i] = 0;
        okp[i] = (char)match_one(in.buf, s[i], e[i], ops, nops, sp, buf, &nitems, &cnt[i]);
        if (!okp[i]) {
            nitems -= cnt[i];
            cnt[i] = 0;
        }
    }
    items = PyBytes_FromStringAndSize((const char *)buf, nitems * 2 * (Py_ssize_t)sizeof(int32_t));
    PyMem_Free(buf);
    if (items)
        result = Py_BuildValue("(OOOO)", ok, spans, counts, items);
done:
    Py_XDECREF(ok), Py_XDECREF(spans), Py_XDECREF(counts), Py_XDECREF(items);
    PyMem_Free(ops);
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en);
    return result;
}
