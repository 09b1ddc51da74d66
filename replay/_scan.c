/* _scan: the byte loops of the rm.log front end, compiled (see replay/scan.py).
 *
 * Python decides what a record means; this module does the byte loops:
 *   lines(data)                  -> every line's span, whether it is a record header, the spans of
 *                                   the header's fields and its timestamp in epoch milliseconds;
 *   views(data, starts, ends)    -> Arrow string views over `data` (zero-copy string columns);
 *   route(data, headers, table, g) -> each record's family, from its class, METHOD and body prefix
 *                                   (the route regexes compiled by replay/prefixes.py);
 *   match(data, starts, ends, t) -> the fields of a token template (replay/templates.py) per body;
 *   ints(data, spans)            -> the integers the templates found, as int64;
 *   rmcounter(...)               -> the RmCounter blocks of a chunk, one row per entity;
 *   schedule(...)                -> the rows of createState structures of the canonical shape.
 * Each of them takes only what it is sure of and hands the rest back; the pure-polars path in
 * replay/records.py and replay/fast.py gives the same tables without any of it, and
 * tests/integration/test_engines.py and tests/unit/test_scan.py hold the two to identical output.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* ---- lines ------------------------------------------------------------------------------ */

enum { K_CONT = 0, K_HEADER = 1, K_MAYBE = 2 };  /* K_MAYBE: Python's general regex decides */
/* int32 columns per line: start, end, kind, then (start, end) of level, component, cls, jid,
 * tid, method, body */
enum { NCOL = 17 };
#define TS_NONE INT64_MIN  /* a timestamp left to polars (unusual values) */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); } /* Rust's ASCII whitespace */

static int two(const char *p) { return (p[0] - '0') * 10 + (p[1] - '0'); }

/* days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil) */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

static int is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* "dd Mon yyyy hh:mm:ss,SSS" -> ms since the epoch; TS_NONE for anything a strict reader would
 * question (polars then decides, so both paths agree on odd dates) */
static int64_t parse_ts(const char *p)
{
    static const char *months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int month = 0;
    for (int i = 0; i < 12; i++)
        if (memcmp(p + 3, months + 3 * i, 3) == 0) { month = i + 1; break; }
    int64_t year = two(p + 7) * 100 + two(p + 9);
    int day = two(p), hh = two(p + 12), mm = two(p + 15), ss = two(p + 18);
    int ms = two(p + 21) * 10 + (p[23] - '0');
    if (!month || day < 1 || hh > 23 || mm > 59 || ss > 59)
        return TS_NONE;
    if (day > mdays[month - 1] + (month == 2 && is_leap(year)))
        return TS_NONE;
    return ((days_from_civil(year, month, day) * 24 + hh) * 60 + mm) * 60000LL + ss * 1000LL + ms;
}

/* "dd Mon yyyy " with ASCII digits and letters: the start every header shares */
static int has_date_prefix(const char *p, Py_ssize_t n)
{
    return n >= 12 && is_digit(p[0]) && is_digit(p[1]) && p[2] == ' ' && p[3] >= 'A' && p[3] <= 'Z'
           && p[4] >= 'a' && p[4] <= 'z' && p[5] >= 'a' && p[5] <= 'z' && p[6] == ' ' && is_digit(p[7])
           && is_digit(p[8]) && is_digit(p[9]) && is_digit(p[10]) && p[11] == ' ';
}

static int has_timestamp(const char *p, Py_ssize_t n)
{
    static const int digits[] = {12, 13, 15, 16, 18, 19, 21, 22, 23};
    if (n < 25 || !has_date_prefix(p, n) || p[14] != ':' || p[17] != ':' || p[20] != ',' || p[24] != ' ')
        return 0;
    for (int i = 0; i < 9; i++)
        if (!is_digit(p[digits[i]]))
            return 0;
    return 1;
}

static int has_level(const char *p)
{
    static const char *levels[] = {"TRACE", "DEBUG", " INFO", " WARN", "ERROR", "FATAL"};
    for (int i = 0; i < 6; i++)
        if (memcmp(p, levels[i], 5) == 0)
            return 1;
    return 0;
}

/* The layout log4j writes: "<ts> <%5p> <logger> - <jid> +T[<tid>] <METHOD>[ <body>]", ASCII only.
 * Fills the field spans (absolute offsets) and returns 1, or returns 0 (not this layout). */
static int split_header(const char *base, Py_ssize_t s, Py_ssize_t e, int32_t *col)
{
    const char *p = base + s;
    Py_ssize_t n = e - s, i, dot = -1;
    if (n < 32 || !has_timestamp(p, n) || !has_level(p + 25) || p[30] != ' ')
        return 0;
    col[3] = (int32_t)(s + 25 + (p[25] == ' '));  /* level, right-aligned in five columns */
    col[4] = (int32_t)(s + 30);
    for (i = 31; i < n && !is_blank(p[i]); i++)  /* the logger: component.Class */
        if (p[i] == '.')
            dot = i;
    if (dot < 0 || dot + 1 >= i || i + 3 >= n || p[i + 1] != '-' || p[i + 2] != ' ' || p[i] != ' ')
        return 0;
    col[5] = (int32_t)(s + 31), col[6] = (int32_t)(s + dot);
    col[7] = (int32_t)(s + dot + 1), col[8] = (int32_t)(s + i);
    Py_ssize_t j = i + 3, jid_end;
    if (is_blank(p[j]))
        return 0;
    for (; j < n && !is_blank(p[j]); j++) {}
    jid_end = j;
    for (; j < n && p[j] == ' '; j++) {}
    if (j == jid_end || j + 2 > n || p[j] != 'T' || p[j + 1] != '[')
        return 0;
    col[9] = (int32_t)(s + i + 3), col[10] = (int32_t)(s + jid_end);
    Py_ssize_t t = j + 2;
    for (j = t; j < n && is_digit(p[j]); j++) {}
    if (j + 2 >= n || p[j] != ']' || p[j + 1] != ' ' || is_blank(p[j + 2]))
        return 0;
    col[11] = (int32_t)(s + t), col[12] = (int32_t)(s + j);
    Py_ssize_t m = j + 2;
    for (j = m; j < n && p[j] != ' '; j++) {}  /* METHOD ends at the first blank (a space) */
    col[13] = (int32_t)(s + m), col[14] = (int32_t)(s + j);
    Py_ssize_t b = j, be = n;
    while (b < be && is_blank(p[b])) b++;
    while (be > b && is_blank(p[be - 1])) be--;
    col[15] = (int32_t)(s + b), col[16] = (int32_t)(s + be);
    return 1;
}

static PyObject *scan_lines(PyObject *self, PyObject *args)
{
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*", &in))
        return NULL;
    const char *d = in.buf;
    Py_ssize_t size = in.len, n = 0, k;
    if (size >= INT32_MAX) {
        PyBuffer_Release(&in);
        return PyErr_Format(PyExc_ValueError, "block of %zd bytes: the scanner takes under 2 GiB", size);
    }
    for (k = 0; k < size; k++)
        n += d[k] == '\n';
    if (size && d[size - 1] != '\n')
        n++;  /* a last line without its newline (a file cut mid-line) */
    PyObject *cols = PyBytes_FromStringAndSize(NULL, n * NCOL * (Py_ssize_t)sizeof(int32_t));
    PyObject *stamps = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!cols || !stamps) {
        Py_XDECREF(cols), Py_XDECREF(stamps), PyBuffer_Release(&in);
        return NULL;
    }
    int32_t *col = (int32_t *)PyBytes_AS_STRING(cols);
    int64_t *ts = (int64_t *)PyBytes_AS_STRING(stamps);
    Py_BEGIN_ALLOW_THREADS
    Py_ssize_t s = 0;
    for (Py_ssize_t li = 0; li < n; li++, col += NCOL) {
        const char *nl = memchr(d + s, '\n', (size_t)(size - s));
        Py_ssize_t next = nl ? nl - d + 1 : size, e = nl ? nl - d : size;
        while (e > s && d[e - 1] == '\r') e--;
        memset(col, 0, NCOL * sizeof(int32_t));
        col[0] = (int32_t)s, col[1] = (int32_t)e;
        ts[li] = TS_NONE;
        int ascii = 1;
        for (k = s; k < e; k++)
            if ((unsigned char)d[k] >= 0x80) { ascii = 0; break; }
        if (ascii && split_header(d, s, e, col)) {
            col[2] = K_HEADER;
            ts[li] = parse_ts(d + s);
        } else if (!ascii || has_date_prefix(d + s, e - s)) {
            col[2] = K_MAYBE;
        }
        s = next;
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return Py_BuildValue("(nNN)", n, cols, stamps);
}

/* ---- Arrow string views ------------------------------------------------------------------ */

/* One 16-byte Arrow view per (start, end): the bytes inline when they fit in 12, else a 4-byte
 * prefix, buffer 0 and the offset, so polars reads the columns without copying the text. */
static PyObject *make_views(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en;
    if (!PyArg_ParseTuple(args, "y*y*y*", &in, &st, &en))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t);
    PyObject *out = NULL;
    if (en.len != st.len || in.len >= INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "views: starts and ends differ in length, or the block is over 2 GiB");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * 16);
    if (!out)
        goto done;
    const int32_t *s = st.buf, *e = en.buf;
    const char *d = in.buf;
    char *v = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++, v += 16) {
        int32_t len = e[i] - s[i], zero = 0;
        if (s[i] < 0 || len < 0 || (Py_ssize_t)e[i] > in.len) {
            Py_CLEAR(out);
            PyErr_SetString(PyExc_ValueError, "views: a span lies outside the block");
            goto done;
        }
        memset(v, 0, 16);
        memcpy(v, &len, 4);
        if (len <= 12) {
            memcpy(v + 4, d + s[i], (size_t)len);
        } else {
            memcpy(v + 4, d + s[i], 4);
            memcpy(v + 8, &zero, 4);
            memcpy(v + 12, &s[i], 4);
        }
    }
done:
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en);
    return out;
}

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
enum { T_LIT = 0, T_FIELD = 1, T_TYPED = 2, T_LIST = 3, T_OPT = 4 };
enum { K_ANY = 0, K_INT = 1 };

typedef struct {
    int code, field, kind;
    const char *pre, *suf;
    Py_ssize_t npre, nsuf;
} Op;

static int is_int(const char *p, Py_ssize_t n)
{
    Py_ssize_t i = p[0] == '-';
    if (i >= n || n - i > 18)  /* longer numbers: let the reference paths decide */
        return 0;
    for (; i < n; i++)
        if (!is_digit(p[i]))
            return 0;
    return 1;
}

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
static int match_one(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
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
static PyObject *parse_ints(PyObject *self, PyObject *args)
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

static int read_ops(PyObject *tmpl, Op **ops, int *nops, int *nfields)
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

static PyObject *match_template(PyObject *self, PyObject *args)
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

/* ---- RmCounter blocks ---------------------------------------------------------------------- */

/* apportion_qshares prints each counting pass as a block of lines: "<descr> RmCounter Start",
 * maxorder, entity_names, weights, wantedby.<entity> per entity, vmachines, optionally a
 * "Final apportionment" with "<entity> gbo" rows, "RmCounter End". rmcounter() matches every line
 * with its template and assembles one row per entity, as replay/tables.py's _rmcounter does from
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

typedef struct { int64_t *v; Py_ssize_t n, cap; } I64s;
typedef struct { int32_t *v; Py_ssize_t n, cap; } I32s;

static int i64_push(I64s *a, int64_t x)
{
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 1024;
        int64_t *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(int64_t));
        if (!v) return 0;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = x;
    return 1;
}

static int i32_push(I32s *a, int32_t x)
{
    if (a->n == a->cap) {
        Py_ssize_t cap = a->cap ? 2 * a->cap : 1024;
        int32_t *v = PyMem_Realloc(a->v, (size_t)cap * sizeof(int32_t));
        if (!v) return 0;
        a->v = v, a->cap = cap;
    }
    a->v[a->n++] = x;
    return 1;
}

static int64_t int_at(const char *d, int32_t s, int32_t e)
{
    int neg = d[s] == '-';
    int64_t x = 0;
    for (int32_t k = s + neg; k < e; k++)
        x = x * 10 + (d[k] - '0');
    return neg ? -x : x;
}

/* per matched line: its field spans and its list items (item spans in one shared array) */
typedef struct { int kind; int32_t f[8]; Py_ssize_t first, count; } Line;

static int same_span(const char *d, const int32_t *a, const int32_t *b)
{
    return a[1] - a[0] == b[1] - b[0] && memcmp(d + a[0], d + b[0], (size_t)(a[1] - a[0])) == 0;
}

/* the values of line `l`'s list, appended to `vals` as int64 (the template checked they are ints) */
static int push_list(const char *d, const Line *l, const int32_t *items, I64s *vals, I32s *offs)
{
    for (Py_ssize_t k = 0; k < l->count; k++)
        if (!i64_push(vals, int_at(d, items[2 * (l->first + k)], items[2 * (l->first + k) + 1])))
            return 0;
    return i32_push(offs, (int32_t)vals->n);
}

static PyObject *bytes_of(const void *p, Py_ssize_t n) { return PyBytes_FromStringAndSize(p ? p : "", n); }

static PyObject *rmcounter_rows(PyObject *self, PyObject *args)
{
    Py_buffer in, st, en, kd;
    PyObject *kinds_arg, *result = NULL;
    Kind kinds[RC_KINDS];
    memset(kinds, 0, sizeof(kinds));
    Line *lines = NULL;
    int32_t *items = NULL;
    I32s blk_line = {0}, row_blk = {0}, row_entity = {0}, wanted_off = {0}, given_off = {0}, vm_off = {0};
    I64s weight = {0}, wanted = {0}, given = {0}, vm = {0}, maxorder = {0};
    I32s weight_ok = {0}, wanted_ok = {0}, given_ok = {0}, vm_ok = {0}, maxorder_ok = {0};
    if (!PyArg_ParseTuple(args, "y*y*y*y*O", &in, &st, &en, &kd, &kinds_arg))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t), total = 0, nitems = 0;
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
    for (Py_ssize_t i = 0; i < n; i++) {
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len || kind[i] < 0 || kind[i] >= RC_KINDS) {
            PyErr_SetString(PyExc_ValueError, "rmcounter: a span outside the block or an unknown kind");
            goto done;
        }
        total += (e[i] - s[i]) / 2 + 1;
    }
    lines = PyMem_Calloc((size_t)n + 1, sizeof(Line));
    items = PyMem_Malloc((size_t)total * 2 * sizeof(int32_t) + 8);
    if (!lines || !items) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++) {  /* every line must match its template */
        Line *l = &lines[i];
        const Kind *k = &kinds[kind[i]];
        int32_t count = 0;
        l->kind = kind[i], l->first = nitems;
        for (int f = 0; f < 8; f++) l->f[f] = -1;
        if (!match_one(d, s[i], e[i], k->ops, k->nops, l->f, items, &nitems, &count)) {
            Py_INCREF(Py_None);
            result = Py_None;
            goto done;
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
                Py_ssize_t last_wanted = -1, last_given = -1;
                for (Py_ssize_t r = b0 + 1; r < i; r++) {
                    int rk = lines[r].kind;
                    if (rk != RC_WANTED && rk != RC_GIVEN)
                        continue;
                    int es = kinds[rk].entity;
                    if (!same_span(d, name, &lines[r].f[2 * es]))
                        continue;
                    if (rk == RC_WANTED) last_wanted = r; else last_given = r;
                }
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
    {
        int dslot = 0;  /* descr is every template's first field */
        I32s descr = {0};
        for (Py_ssize_t b = 0; b < blk_line.n; b++) {
            const Line *l = &lines[blk_line.v[b]];
            if (!i32_push(&descr, l->f[2 * dslot]) || !i32_push(&descr, l->f[2 * dslot + 1])) {
                PyMem_Free(descr.v);
                goto nomem;
            }
        }
        result = Py_BuildValue(
            "{s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N,s:N}",
            "block_line", bytes_of(blk_line.v, blk_line.n * 4), "descr", bytes_of(descr.v, descr.n * 4),
            "row_block", bytes_of(row_blk.v, row_blk.n * 4), "entity", bytes_of(row_entity.v, row_entity.n * 4),
            "weight", bytes_of(weight.v, weight.n * 8), "weight_ok", bytes_of(weight_ok.v, weight_ok.n * 4),
            "wanted", bytes_of(wanted.v, wanted.n * 8), "wanted_off", bytes_of(wanted_off.v, wanted_off.n * 4),
            "wanted_ok", bytes_of(wanted_ok.v, wanted_ok.n * 4), "given", bytes_of(given.v, given.n * 8),
            "given_off", bytes_of(given_off.v, given_off.n * 4), "given_ok", bytes_of(given_ok.v, given_ok.n * 4),
            "vmachines", bytes_of(vm.v, vm.n * 8), "vmachines_off", bytes_of(vm_off.v, vm_off.n * 4),
            "vmachines_ok", bytes_of(vm_ok.v, vm_ok.n * 4), "maxorder", bytes_of(maxorder.v, maxorder.n * 8),
            "maxorder_ok", bytes_of(maxorder_ok.v, maxorder_ok.n * 4), "nrows", PyLong_FromSsize_t(row_blk.n));
        PyMem_Free(descr.v);
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    for (int k = 0; k < RC_KINDS; k++) PyMem_Free(kinds[k].ops);
    PyMem_Free(lines), PyMem_Free(items);
    PyMem_Free(blk_line.v), PyMem_Free(row_blk.v), PyMem_Free(row_entity.v), PyMem_Free(wanted_off.v);
    PyMem_Free(given_off.v), PyMem_Free(vm_off.v), PyMem_Free(weight.v), PyMem_Free(wanted.v);
    PyMem_Free(given.v), PyMem_Free(vm.v), PyMem_Free(maxorder.v), PyMem_Free(weight_ok.v);
    PyMem_Free(wanted_ok.v), PyMem_Free(given_ok.v), PyMem_Free(vm_ok.v), PyMem_Free(maxorder_ok.v);
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en), PyBuffer_Release(&kd);
    return result;
}

/* ---- the published schedule --------------------------------------------------------------- */

/* createState's Orchestrator structure follows its header as continuation lines, per job:
 *   "<work_type> <job_id> <memory>GB[ <reason>]"   then three share lists, each
 *   "\t(Existing|Additions|Removals)[<n>]: <host>.<share>^<init>[^P] ..."  (maybe wrapped on
 *   "\t <share> ..." lines), or "<work_type> <job_id>" then "\tRefused: <reason>".
 * schedule() takes the records whose every line has exactly these shapes (printable ASCII, one
 * space inside the job header, every share token whole) and gives the rows replay/fast.py's
 * _schedule_state gives for them; any other record is left to that function, which decides. */
enum { SF_WORK, SF_JOB, SF_MEM, SF_REASON, SF_HOST, SF_SHARE, SF_INIT, SF_N };

typedef struct {
    I32s rec, kind, purged, span;  /* span: 2 * SF_N per row, -1 when null */
} SchedRows;

static Py_ssize_t digits_at(const char *d, Py_ssize_t p, Py_ssize_t e)
{
    Py_ssize_t q = p;
    while (q < e && is_digit(d[q])) q++;
    return q;
}

/* a share token "<host>.<digits>^<digits>[^P]", host without '^': fills host/share/init spans */
static int share_token(const char *d, Py_ssize_t s, Py_ssize_t e, int32_t *sp, int *purged)
{
    Py_ssize_t caret = -1;
    for (Py_ssize_t k = s; k < e; k++)
        if (d[k] == '^') { caret = k; break; }
    if (caret < 0)
        return 0;
    Py_ssize_t dot = caret - 1;
    while (dot > s && is_digit(d[dot])) dot--;
    if (dot <= s || d[dot] != '.' || dot + 1 == caret)  /* host non-empty, share digits non-empty */
        return 0;
    Py_ssize_t ie = digits_at(d, caret + 1, e);
    if (ie == caret + 1)
        return 0;
    *purged = 0;
    if (ie != e) {
        if (e - ie != 2 || d[ie] != '^' || d[ie + 1] != 'P')
            return 0;
        *purged = 1;
    }
    sp[2 * SF_HOST] = (int32_t)s, sp[2 * SF_HOST + 1] = (int32_t)dot;
    sp[2 * SF_SHARE] = (int32_t)(dot + 1), sp[2 * SF_SHARE + 1] = (int32_t)caret;
    sp[2 * SF_INIT] = (int32_t)(caret + 1), sp[2 * SF_INIT + 1] = (int32_t)ie;
    return 1;
}

static int push_row(SchedRows *out, int32_t rec, int32_t kind, int32_t purged, const int32_t *sp)
{
    if (!i32_push(&out->rec, rec) || !i32_push(&out->kind, kind) || !i32_push(&out->purged, purged))
        return 0;
    for (int f = 0; f < 2 * SF_N; f++)
        if (!i32_push(&out->span, sp[f]))
            return 0;
    return 1;
}

/* the share tokens of [p, e) as rows (at least one: an empty list still gives a row); -1 on a bad token */
static int share_rows(const char *d, Py_ssize_t p, Py_ssize_t e, int32_t rec, int kind, const int32_t *item,
                      SchedRows *out, int empty_row)
{
    int n = 0;
    while (p < e) {
        Py_ssize_t t = p;
        while (t < e && d[t] != ' ') t++;
        int32_t sp[2 * SF_N];
        int purged;
        memcpy(sp, item, sizeof(sp));
        if (!share_token(d, p, t, sp, &purged))
            return -1;
        if (!push_row(out, rec, kind, purged, sp))
            return -2;
        n++;
        p = t;
        while (p < e && d[p] == ' ') p++;
    }
    if (!n && empty_row) {
        int32_t sp[2 * SF_N];
        memcpy(sp, item, sizeof(sp));
        sp[2 * SF_HOST] = sp[2 * SF_HOST + 1] = sp[2 * SF_SHARE] = sp[2 * SF_SHARE + 1] = -1;
        sp[2 * SF_INIT] = sp[2 * SF_INIT + 1] = -1;
        if (!push_row(out, rec, kind, -1, sp))
            return -2;
    }
    return 0;
}

/* One record's lines [a, b): 1 taken (rows appended), 0 not this shape (rows rolled back), -1 no memory */
static int schedule_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                           int32_t rec, SchedRows *out)
{
    static const char *kinds[] = {"Existing[", "Additions[", "Removals["};
    Py_ssize_t mark = out->rec.n;
    int head = 0, lists = 0, refusals = 0, kind = -1;  /* head: 0 none yet, 1 job, 2 refused job */
    int32_t item[2 * SF_N];
    for (Py_ssize_t i = a; i < b; i++) {
        Py_ssize_t p = s[i], q = e[i], k;
        while (q > p && (d[q - 1] == ' ' || d[q - 1] == '\r')) q--;
        int blank = 1;
        for (k = p; k < q; k++) {
            unsigned char c = (unsigned char)d[k];
            if (c >= 0x7f || (c < 0x20 && !(c == '\t' && k == p)))
                goto refuse;
            blank &= c == ' ' || c == '\t';
        }
        if (blank)
            continue;
        if (d[p] != '\t') {  /* a job: "<work_type> <job_id> <memory>GB[ <reason>]" or "<work_type> <job_id>" */
            if (head == 1 && lists != 3) goto refuse;
            if (head == 2 && refusals != 1) goto refuse;
            Py_ssize_t w = p;
            while (w < q && d[w] != ' ') w++;
            if (w == p || w + 1 >= q || d[w + 1] == ' ')
                goto refuse;
            Py_ssize_t j = digits_at(d, w + 1, q);
            if (j == w + 1)
                goto refuse;
            for (int f = 0; f < 2 * SF_N; f++) item[f] = -1;
            item[2 * SF_WORK] = (int32_t)p, item[2 * SF_WORK + 1] = (int32_t)w;
            item[2 * SF_JOB] = (int32_t)(w + 1), item[2 * SF_JOB + 1] = (int32_t)j;
            lists = refusals = 0, kind = -1;
            if (j == q) {
                head = 2;
                continue;
            }
            Py_ssize_t m = digits_at(d, j + 1, q);
            if (d[j] != ' ' || m == j + 1 || m + 2 > q || d[m] != 'G' || d[m + 1] != 'B')
                goto refuse;
            item[2 * SF_MEM] = (int32_t)(j + 1), item[2 * SF_MEM + 1] = (int32_t)m;
            Py_ssize_t r = m + 2;
            if (r < q) {
                if (d[r] != ' ')
                    goto refuse;
                while (r < q && d[r] == ' ') r++;
                item[2 * SF_REASON] = (int32_t)r, item[2 * SF_REASON + 1] = (int32_t)q;
            }
            head = 1;
            continue;
        }
        if (q - p >= 10 && memcmp(d + p, "\tRefused: ", 10) == 0) {
            if (head != 2 || refusals)
                goto refuse;
            Py_ssize_t r = p + 10;
            while (r < q && d[r] == ' ') r++;
            int32_t sp[2 * SF_N];
            memcpy(sp, item, sizeof(sp));
            sp[2 * SF_REASON] = (int32_t)r, sp[2 * SF_REASON + 1] = (int32_t)q;
            if (!push_row(out, rec, -1, -1, sp))
                return -1;
            refusals++;
            continue;
        }
        int got = -1;
        for (int c = 0; c < 3 && got < 0; c++) {
            size_t n = strlen(kinds[c]);
            if ((size_t)(q - p - 1) > n && memcmp(d + p + 1, kinds[c], n) == 0)
                got = c;
        }
        if (got >= 0) {  /* "\t<Kind>[<n>]: shares..." */
            if (head != 1 || lists == 3)
                goto refuse;
            Py_ssize_t c = p + 1 + (Py_ssize_t)strlen(kinds[got]);
            Py_ssize_t c2 = digits_at(d, c, q);
            if (c2 == c || c2 + 2 > q || d[c2] != ']' || d[c2 + 1] != ':')
                goto refuse;
            Py_ssize_t r = c2 + 2;
            if (r < q && d[r] != ' ')
                goto refuse;  /* a share glued to the colon: the general path reads that its own way */
            while (r < q && d[r] == ' ') r++;
            kind = got, lists++;
            int rc = share_rows(d, r, q, rec, kind, item, out, 1);
            if (rc == -2) return -1;
            if (rc < 0) goto refuse;
            continue;
        }
        /* a wrapped list: "\t <share> ..." */
        if (kind < 0 || head != 1)
            goto refuse;
        Py_ssize_t r = p + 1;
        while (r < q && d[r] == ' ') r++;
        int rc = share_rows(d, r, q, rec, kind, item, out, 0);
        if (rc == -2) return -1;
        if (rc < 0) goto refuse;
    }
    if ((head == 1 && lists != 3) || (head == 2 && refusals != 1))
        goto refuse;
    return 1;
refuse:
    out->rec.n = out->kind.n = out->purged.n = mark;
    out->span.n = mark * 2 * SF_N;
    return 0;
}

static PyObject *schedule_rows(PyObject *self, PyObject *args)
{
    Py_buffer in, rc, st, en;
    PyObject *result = NULL;
    SchedRows out;
    I32s refused = {0};
    memset(&out, 0, sizeof(out));
    if (!PyArg_ParseTuple(args, "y*y*y*y*", &in, &rc, &st, &en))
        return NULL;
    Py_ssize_t n = st.len / (Py_ssize_t)sizeof(int32_t);
    const int32_t *rec = rc.buf, *s = st.buf, *e = en.buf;
    if (rc.len != st.len || en.len != st.len) {
        PyErr_SetString(PyExc_ValueError, "schedule: as many records and ends as starts");
        goto done;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        if (s[i] < 0 || e[i] < s[i] || (Py_ssize_t)e[i] > in.len || (i && rec[i] < rec[i - 1])) {
            PyErr_SetString(PyExc_ValueError, "schedule: a span outside the block, or records out of order");
            goto done;
        }
    for (Py_ssize_t a = 0; a < n;) {
        Py_ssize_t b = a;
        while (b < n && rec[b] == rec[a]) b++;
        int got = schedule_record(in.buf, s, e, a, b, rec[a], &out);
        if (got < 0 || (!got && !i32_push(&refused, rec[a]))) {
            PyErr_NoMemory();
            goto done;
        }
        a = b;
    }
    result = Py_BuildValue("(NNNNN)", bytes_of(out.rec.v, out.rec.n * 4), bytes_of(out.kind.v, out.kind.n * 4),
                           bytes_of(out.purged.v, out.purged.n * 4), bytes_of(out.span.v, out.span.n * 4),
                           bytes_of(refused.v, refused.n * 4));
done:
    PyMem_Free(out.rec.v), PyMem_Free(out.kind.v), PyMem_Free(out.purged.v), PyMem_Free(out.span.v);
    PyMem_Free(refused.v);
    PyBuffer_Release(&in), PyBuffer_Release(&rc), PyBuffer_Release(&st), PyBuffer_Release(&en);
    return result;
}

/* ---- routing ----------------------------------------------------------------------------- */

/* A record's family is decided by its (class, METHOD) and the first route prefix its body matches
 * (replay/families.py). The prefixes are regexes; replay/prefixes.py compiles each into a program
 * of int32 instructions [op, x, y, set] run here by a backtracking matcher (explicit stack, a step
 * budget): OP_SET consumes one byte of a 256-bit set, OP_SPLIT tries x then y, OP_JMP goes to x,
 * OP_BOL / OP_EOL assert the start / end of the body, OP_MATCH accepts, OP_SPAN consumes the
 * longest run of set bytes (at least x of them) with no way back (the compiler emits it only where
 * backtracking into the run could not help). */
enum { OP_SET = 0, OP_SPLIT = 1, OP_JMP = 2, OP_BOL = 3, OP_EOL = 4, OP_MATCH = 5, OP_SPAN = 6 };
enum { R_UNKNOWN_BODY = -1, R_UNDECIDED = -2 };  /* no route took the body; polars decides */
#define STEP_BUDGET 200000
#define STACK_CAP 4096

typedef struct {
    const int32_t *code;
    const unsigned char *sets;
    Py_ssize_t ncode, nsets;
    int anchored, family;
} Prog;

typedef struct {
    const char *key;
    Py_ssize_t nkey;
    Prog *progs;
    int nprogs;  /* -1: the group's prefixes are outside the compiled subset */
} Group;

/* 1 match, 0 none, -1 gave up (the stack or the step budget ran out) */
static int run_prog(const Prog *p, const char *d, Py_ssize_t s, Py_ssize_t e, Py_ssize_t *stack)
{
    long budget = STEP_BUDGET;
    Py_ssize_t last = p->anchored ? s : e;
    for (Py_ssize_t start = s; start <= last; start++) {
        Py_ssize_t top = 0;
        stack[top++] = 0, stack[top++] = start;
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

static uint32_t fnv(const char *a, Py_ssize_t na, const char *b, Py_ssize_t nb)
{
    uint32_t h = 2166136261u;
    for (Py_ssize_t i = 0; i < na; i++) h = (h ^ (unsigned char)a[i]) * 16777619u;
    h = (h ^ 0u) * 16777619u;
    for (Py_ssize_t i = 0; i < nb; i++) h = (h ^ (unsigned char)b[i]) * 16777619u;
    return h;
}

static int read_groups(PyObject *table, Group **groups, Py_ssize_t *ngroups)
{
    if (!PyTuple_Check(table))
        return PyErr_SetString(PyExc_TypeError, "route: the table must be a tuple"), 0;
    *ngroups = PyTuple_GET_SIZE(table);
    *groups = PyMem_Calloc((size_t)*ngroups + 1, sizeof(Group));
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
        gr->progs = PyMem_Calloc((size_t)gr->nprogs + 1, sizeof(Prog));
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
        }
    }
    return 1;
}

static void free_groups(Group *groups, Py_ssize_t ngroups)
{
    for (Py_ssize_t g = 0; groups && g < ngroups; g++)
        PyMem_Free(groups[g].progs);
    PyMem_Free(groups);
}

static PyObject *route_records(PyObject *self, PyObject *args)
{
    Py_buffer in, hd;
    PyObject *table, *out = NULL;
    int generic;
    Group *groups = NULL;
    Py_ssize_t ngroups = 0, *stack = NULL;
    int32_t slots[1024];
    if (!PyArg_ParseTuple(args, "y*y*Oi", &in, &hd, &table, &generic))
        return NULL;
    Py_ssize_t n = hd.len / (Py_ssize_t)(NCOL * sizeof(int32_t));
    if (!read_groups(table, &groups, &ngroups))
        goto done;
    if (ngroups > 512) {
        PyErr_SetString(PyExc_ValueError, "route: at most 512 (class, METHOD) groups");
        goto done;
    }
    for (int i = 0; i < 1024; i++) slots[i] = -1;
    for (Py_ssize_t g = 0; g < ngroups; g++) {
        const char *zero = memchr(groups[g].key, 0, (size_t)groups[g].nkey);
        if (!zero) {
            PyErr_SetString(PyExc_ValueError, "route: a key is class NUL method");
            goto done;
        }
        Py_ssize_t nc = zero - groups[g].key;
        uint32_t h = fnv(groups[g].key, nc, zero + 1, groups[g].nkey - nc - 1) & 1023;
        while (slots[h] >= 0) h = (h + 1) & 1023;
        slots[h] = (int32_t)g;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t));
    stack = PyMem_Malloc(STACK_CAP * sizeof(Py_ssize_t));
    if (!out || !stack) {
        Py_CLEAR(out);
        PyErr_NoMemory();
        goto done;
    }
    const char *d = in.buf;
    const int32_t *col = hd.buf;
    int32_t *fam = (int32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++, col += NCOL) {
        if (col[7] < 0 || col[14] > in.len || col[16] > in.len || col[8] < col[7] || col[14] < col[13] || col[16] < col[15]) {
            fam[i] = R_UNDECIDED;
            continue;
        }
        const char *cls = d + col[7], *meth = d + col[13];
        Py_ssize_t ncls = col[8] - col[7], nmeth = col[14] - col[13];
        uint32_t h = fnv(cls, ncls, meth, nmeth) & 1023;
        const Group *gr = NULL;
        for (; slots[h] >= 0; h = (h + 1) & 1023) {
            const Group *c = &groups[slots[h]];
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
        for (int r = 0; r < gr->nprogs; r++) {
            int got = run_prog(&gr->progs[r], d, col[15], col[16], stack);
            if (got) {
                fam[i] = got > 0 ? gr->progs[r].family : R_UNDECIDED;
                break;
            }
        }
    }
done:
    PyMem_Free(stack);
    free_groups(groups, ngroups);
    PyBuffer_Release(&in), PyBuffer_Release(&hd);
    return out;
}

/* ---- module ------------------------------------------------------------------------------ */

static PyMethodDef methods[] = {
    {"lines", scan_lines, METH_VARARGS,
     "lines(data) -> (n, int32[n*17] spans, int64[n] ms): every line, its kind and header fields."},
    {"views", make_views, METH_VARARGS,
     "views(data, starts, ends) -> bytes: one 16-byte Arrow string view per int32 (start, end)."},
    {"match", match_template, METH_VARARGS,
     "match(data, starts, ends, template) -> (ok u8[n], spans i32[n,2f], counts i32[n], items i32[m,2])."},
    {"ints", parse_ints, METH_VARARGS,
     "ints(data, spans) -> int64[n]: the integer in each int32 (start, end) span."},
    {"rmcounter", rmcounter_rows, METH_VARARGS,
     "rmcounter(data, starts, ends, kinds, templates) -> dict of row columns, or None when a line fails."},
    {"schedule", schedule_rows, METH_VARARGS,
     "schedule(data, recs, starts, ends) -> (rec, kind, purged, spans, refused): createState's rows."},
    {"route", route_records, METH_VARARGS,
     "route(data, header_spans, table, generic) -> int32[n]: each record's family code (-1 no route, -2 undecided)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_scan", "Compiled byte loops of the rm.log front end.",
                                    -1, methods};

PyMODINIT_FUNC PyInit__scan(void) { return PyModule_Create(&module); }
