/* match_plain(), match_values(), read_ops(): token templates over record bodies (see module.c and fill.c) */
#include "scan.h"

/* A template (compiled by replay/parsing/templates.py) is a tuple of ops, one per blank-separated token
 * of a single-line body; a blank in the body is one or more spaces, as the grammar's %ignore.
 * Each op is (code, literal, prefix, suffix, field, kind, minimum):
 *   T_LIT     the token equals `literal`;
 *   T_FIELD   the token is prefix + VALUE + suffix, VALUE non-empty and of `kind` (any token, an
 *             integer, digits, a UUID, an NQM such as 2Q4, a number); VALUE's span goes to `field`;
 *   T_TYPED   a typed job id "[JSMRA?]_*digits": the letter to `field`, the digits to `field + 1`;
 *   T_REF     a typed reference "[JSMRA?].digits", split the same way;
 *   T_SHARE   a share "host.digits": the host to `field`, the digits after the last dot to `field + 1`;
 *   T_RUN     a run of `minimum` or more of the literal's one byte (the grammar's DASHES);
 *   T_LIST    every remaining token (integers if kind=K_INT), at least `minimum` of them; with a
 *             prefix and suffix, the rest of the body is prefix + tokens + suffix (glued or not);
 *   T_REST    the rest of the body, non-empty, to `field`;
 *   T_LABEL   the text up to the body's first ':' (blanks inside kept, trailing ones dropped, at least
 *             one byte) to `field`, the ':' consumed with it (the grammar's PROP_KEY ":");
 *   T_PHRASE  one of the literal's '|'-separated phrases, its words one space apart (a terminal
 *             with a blank inside); its span to `field`. With minimum 0 it may be absent.
 * A body matches when the ops consume every token. Bodies with other blanks (tabs) or non-ASCII
 * bytes never match: the caller hands those to the regex and lark paths. */

static int all_digits(const char *p, Py_ssize_t n)
{
    if (n < 1)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
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
    *digits = i;
    return all_digits(p + i, n - i);
}

static int is_typed_ref(const char *p, Py_ssize_t n)
{
    return n >= 3 && strchr("JSMRA?", p[0]) && p[1] == '.' && all_digits(p + 2, n - 2);
}

/* "host.digits": the offset of the last dot (a host of at least one byte before it), or -1 */
static Py_ssize_t share_dot(const char *p, Py_ssize_t n)
{
    Py_ssize_t dot = n - 1;
    while (dot >= 0 && p[dot] != '.') dot--;
    return dot >= 1 && all_digits(p + dot + 1, n - dot - 1) ? dot : -1;
}

static int is_uuid(const char *p, Py_ssize_t n)
{
    if (n < 8)
        return 0;
    for (Py_ssize_t i = 0; i < n; i++)
        if (!(is_digit(p[i]) || (p[i] >= 'a' && p[i] <= 'f') || (p[i] >= 'A' && p[i] <= 'F') || p[i] == '-'))
            return 0;
    return 1;
}

static int is_nqm(const char *p, Py_ssize_t n)
{
    const char *q = memchr(p, 'Q', (size_t)n);
    return q && all_digits(p, q - p) && all_digits(q + 1, n - (q - p) - 1);
}

/* Any token, but those the grammar's lexer may read as another terminal where its LALR states
 * merge (a run of '=' or ':' alone, "wantedby.X"): a user or host never looks like them, and the
 * reference paths decide. */
static int is_word(const char *p, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n && (p[i] == '=' || p[i] == ':')) i++;
    return n > 0 && i < n && !(n > 9 && memcmp(p, "wantedby.", 9) == 0);
}

static int has_kind(const char *p, Py_ssize_t n, int kind)
{
    switch (kind) {
    case K_INT: return is_int(p, n);
    case K_NUM: return is_num(p, n);
    case K_NOMINUS: return is_word(p, n) && (p[0] != '-' || is_int(p, n));
    case K_UINT: return all_digits(p, n) && n <= 18;
    case K_UUID: return is_uuid(p, n);
    case K_NQM: return is_nqm(p, n);
    default: return is_word(p, n);
    }
}

static Py_ssize_t next_token(const char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t *tok_end)
{
    while (pos < end && d[pos] == ' ') pos++;  /* blanks are short runs: a byte loop */
    *tok_end = find_space(d, pos, end);  /* tokens run to tens of bytes: a word at a time */
    return pos;
}

/* the end of the token at t (it runs to the next ' ' or `end`) when it is an integer (is_int), else
 * -1: read in one pass, where finding its end and then checking its digits would read it twice */
static Py_ssize_t int_token_end(const char *d, Py_ssize_t t, Py_ssize_t end)
{
    Py_ssize_t from = t + (d[t] == '-'), k = from;
    while (k < end && is_digit(d[k])) k++;
    return k > from && k - from <= 18 && (k == end || d[k] == ' ') ? k : -1;
}

/* The end of `phrase` (words one space apart) spelled from token start t, or -1. */
static Py_ssize_t phrase_at(const char *d, Py_ssize_t t, Py_ssize_t e, const char *phrase, Py_ssize_t n)
{
    if (t + n > e || memcmp(d + t, phrase, (size_t)n) != 0)
        return -1;
    return t + n == e || d[t + n] == ' ' ? t + n : -1;  /* it ends where a token ends */
}

/* The longest of the op's phrases spelled from the next token: its (start, end), or 0. */
static int match_phrase(const char *d, Py_ssize_t pos, Py_ssize_t e, const Op *op, Py_ssize_t *ps, Py_ssize_t *pe)
{
    Py_ssize_t te, t = next_token(d, pos, e, &te), best = -1;
    if (t == e)
        return 0;
    for (const char *p = op->lit, *end = op->lit + op->nlit; p < end;) {
        const char *bar = memchr(p, '|', (size_t)(end - p));
        Py_ssize_t n = (bar ? bar : end) - p, got = phrase_at(d, t, e, p, n);
        if (got > best)
            best = got;
        p += n + 1;
    }
    if (best < 0)
        return 0;
    *ps = t, *pe = best;
    return 1;
}

static int plain_byte(char c) { return (unsigned char)c < 0x80 && !(c >= '\t' && c <= '\r'); }

int plain_body(const char *d, Py_ssize_t s, Py_ssize_t e)
{
    Py_ssize_t k = s;
    for (; k + 8 <= e; k += 8) {  /* a word at a time; only a word with a byte >= 0x80 or < 0x20 is */
        uint64_t w = load8(d + k);  /* looked at byte by byte (the other control bytes are plain) */
        if ((w | bytes_below(w, 0x20)) & HIGHS)
            for (int b = 0; b < 8; b++)
                if (!plain_byte(d[k + b]))
                    return 0;
    }
    for (; k < e; k++)
        if (!plain_byte(d[k]))
            return 0;
    return 1;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define WORDWISE 1
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define WORDWISE 0
#define ALWAYS_INLINE inline
#endif

/* The tokens of d[t, le) as integers (int_token_end's: an optional '-' and 1 to 18 digits, then a
 * ' ' or le), their values appended to vals from *n; 0 when one is not. */
static int int_values_bytewise(const char *d, Py_ssize_t t, Py_ssize_t le, int64_t *vals, Py_ssize_t *n)
{
    Py_ssize_t k = *n;
    for (;;) {
        while (t < le && d[t] == ' ') t++;
        if (t == le)
            break;
        Py_ssize_t te = int_token_end(d, t, le);
        if (te < 0)
            return 0;
        vals[k++] = int_at(d, (int32_t)t, (int32_t)te), t = te;
    }
    *n = k;
    return 1;
}

/* int_values_bytewise's answer, 64 bytes at a time. The RmCounter lists are mostly blanks and
 * one-digit values ("   0   0  28"): a byte loop over them and a second pass over the tokens'
 * spans for their values were most of `_scan.rmcounter`'s time, and finding each token from the end
 * of the one before (a word at a time) chains every load on the last. Here each 64 bytes become a
 * bit per digit, with no load waiting on another, and the runs of digits are read off the bits. */
static int int_values(const char *d, Py_ssize_t t, Py_ssize_t le, int64_t *vals, Py_ssize_t *n)
{
#if WORDWISE
    Py_ssize_t k = *n;
    uint64_t v = 0;  /* the value of the run of digits open at the end of the last 64 bytes */
    int open = 0;  /* its digits so far (0: none open) */
    char pad[64];
    for (Py_ssize_t p = t; p < le; p += 64) {
        const char *q = d + p;
        if (le - p < 64) {  /* the last bytes, blanks after them */
            memset(pad, ' ', sizeof pad);
            memcpy(pad, q, (size_t)(le - p));
            q = pad;
        }
        uint64_t dig;
        if (!digit_bits(q, &dig))
            return int_values_bytewise(d, t, le, vals, n);
        uint64_t starts = dig & ~(dig << 1), ends = dig & ~(dig >> 1) & ~(1ULL << 63);
        if (open && !(dig & 1)) {  /* the open run ended with the last 64 bytes */
            vals[k++] = (int64_t)v;
            open = 0;
        } else if (open) {
            starts &= starts - 1;  /* bit 0 goes on with the open run */
        }
        for (; ends; ends &= ends - 1) {
            int a = 0, b = __builtin_ctzll(ends) + 1;
            if (!open) {
                a = __builtin_ctzll(starts), v = 0;
                starts &= starts - 1;
            }
            if (open + b - a > 18)
                return 0;
            for (int j = a; j < b; j++) v = v * 10 + (uint64_t)(q[j] - '0');
            vals[k++] = (int64_t)v;
            open = 0;
        }
        if (dig >> 63) {  /* a run reaches the end of these 64 bytes: it stays open */
            int a = 0;
            if (!open) {
                a = __builtin_ctzll(starts), v = 0;
            }
            if (open + 64 - a > 18)
                return 0;
            for (int j = a; j < 64; j++) v = v * 10 + (uint64_t)(q[j] - '0');
            open += 64 - a;
        }
    }
    if (open)
        vals[k++] = (int64_t)v;
    *n = k;
    return 1;
#else
    return int_values_bytewise(d, t, le, vals, n);
#endif
}

/* match_plain's work; with `vals`, a K_INT list's values go to vals (from *nvals) in place of its
 * tokens' spans to items, and [*vs, *ve) is the part of the body they were read from */
static ALWAYS_INLINE int match_ops(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops,
                                   int32_t *spans, int32_t *items, Py_ssize_t *nitems, int32_t *count,
                                   int64_t *vals, Py_ssize_t *nvals, Py_ssize_t *vs, Py_ssize_t *ve)
{
    Py_ssize_t pos = s, te;
    for (int o = 0; o < nops; o++) {
        const Op *op = &ops[o];
        int32_t *f = &spans[2 * op->field];
        if (op->code == T_LIST) {
            Py_ssize_t first = *nitems, le = e;
            if (op->npre || op->nsuf) {  /* "[a b ]": the rest opens with the prefix, closes with the suffix */
                Py_ssize_t t = next_token(d, pos, e, &te);
                if (e - t < op->npre + op->nsuf || memcmp(d + t, op->pre, (size_t)op->npre) != 0
                    || memcmp(d + e - op->nsuf, op->suf, (size_t)op->nsuf) != 0)
                    return 0;
                pos = t + op->npre, le = e - op->nsuf;
            }
            if (vals && op->kind == K_INT) {
                Py_ssize_t vfirst = *nvals;
                if (!int_values(d, pos, le, vals, nvals) || *nvals - vfirst < op->minimum) {
                    *nvals = vfirst;
                    return 0;
                }
                *count = (int32_t)(*nvals - vfirst);
                *vs = pos, *ve = le;
                pos = e;
                continue;
            }
            for (Py_ssize_t t = pos;; t = te) {
                while (t < le && d[t] == ' ') t++;  /* a byte loop: runs of blanks are short */
                if (t == le)
                    break;
                te = op->kind == K_INT ? int_token_end(d, t, le) : find_space(d, t, le);
                if (te < 0) {
                    *nitems = first;
                    return 0;
                }
                items[2 * *nitems] = (int32_t)t, items[2 * *nitems + 1] = (int32_t)te;
                (*nitems)++;
            }
            *count = (int32_t)(*nitems - first);
            if (*count < op->minimum) {
                *nitems = first;
                return 0;
            }
            pos = e;
            continue;
        }
        if (op->code == T_PHRASE) {
            Py_ssize_t ps, pe;
            if (match_phrase(d, pos, e, op, &ps, &pe)) {
                f[0] = (int32_t)ps, f[1] = (int32_t)pe;
                pos = pe;
            } else if (op->minimum) {
                return 0;
            }  /* else absent: the field stays null */
            continue;
        }
        if (op->lit_word) {  /* most ops are literal words: compared where they start, no search for */
            Py_ssize_t t = pos, end;  /* the token's end (it ends where the literal does, or not at all) */
            while (t < e && d[t] == ' ') t++;
            end = t + op->nlit;
            if (end > e || d[t] != op->lit[0] || memcmp(d + t, op->lit, (size_t)op->nlit) != 0
                || (end < e && d[end] != ' '))
                return 0;
            pos = end;
            continue;
        }
        Py_ssize_t t = next_token(d, pos, e, &te), n = te - t;
        if (t == e)
            return 0;
        if (op->code == T_LABEL) {
            const char *colon = memchr(d + t, ':', (size_t)(e - t));
            Py_ssize_t ke = colon ? colon - d : t;
            while (ke > t && d[ke - 1] == ' ') ke--;
            if (ke == t)
                return 0;
            f[0] = (int32_t)t, f[1] = (int32_t)ke;
            pos = colon - d + 1;
            continue;
        }
        if (op->code == T_REST) {  /* the body's end is already trimmed of blanks */
            f[0] = (int32_t)t, f[1] = (int32_t)e;
            pos = e;
            continue;
        }
        pos = te;
        switch (op->code) {
        case T_LIT:  /* the first byte tells most literals apart without a call to memcmp */
            if (n != op->nlit || (n && d[t] != op->lit[0]) || memcmp(d + t, op->lit, (size_t)n) != 0)
                return 0;
            break;
        case T_RUN:
            if (n < op->minimum)
                return 0;
            for (Py_ssize_t k = t; k < te; k++)
                if (d[k] != op->lit[0])
                    return 0;
            break;
        case T_TYPED: {
            Py_ssize_t digits;
            if (!is_typed_id(d + t, n, &digits))
                return 0;
            f[0] = (int32_t)t, f[1] = (int32_t)(t + 1), f[2] = (int32_t)(t + digits), f[3] = (int32_t)te;
            break;
        }
        case T_REF:
            if (!is_typed_ref(d + t, n))
                return 0;
            f[0] = (int32_t)t, f[1] = (int32_t)(t + 1), f[2] = (int32_t)(t + 2), f[3] = (int32_t)te;
            break;
        case T_SHARE: {
            Py_ssize_t dot = share_dot(d + t, n);
            if (dot < 0)
                return 0;
            f[0] = (int32_t)t, f[1] = (int32_t)(t + dot), f[2] = (int32_t)(t + dot + 1), f[3] = (int32_t)te;
            break;
        }
        case T_FIELD: {
            Py_ssize_t vs = t + op->npre, ve = te - op->nsuf;
            if (ve <= vs || (op->npre && memcmp(d + t, op->pre, (size_t)op->npre) != 0)  /* most fields are */
                || (op->nsuf && memcmp(d + ve, op->suf, (size_t)op->nsuf) != 0)  /* bare: no call then */
                || !has_kind(d + vs, ve - vs, op->kind))
                return 0;
            f[0] = (int32_t)vs, f[1] = (int32_t)ve;
            break;
        }
        default:
            return 0;
        }
    }
    return next_token(d, pos, e, &te) == e;  /* nothing left over */
}

int match_plain(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
                int32_t *items, Py_ssize_t *nitems, int32_t *count)
{
    return match_ops(d, s, e, ops, nops, spans, items, nitems, count, NULL, NULL, NULL, NULL);
}

/* The bytes an integer list's values were read from are digits, '-' and ' ' (plain), so only the
 * rest of the body is checked for plain bytes, and after the match: the same answer either way. */
int match_values(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
                 int32_t *items, Py_ssize_t *nitems, int64_t *vals, Py_ssize_t *nvals, int32_t *count)
{
    Py_ssize_t vs = e, ve = e;
    return match_ops(d, s, e, ops, nops, spans, items, nitems, count, vals, nvals, &vs, &ve)
           && plain_body(d, s, vs) && plain_body(d, ve, e);
}

/* The ops of one template tuple (see the top of this file); the number of field slots it fills. */
int read_ops(PyObject *tmpl, Op **ops, int *nops, int *nfields)
{
    if (!PyTuple_Check(tmpl))
        return PyErr_SetString(PyExc_TypeError, "templates: a template must be a tuple of ops"), 0;
    *nops = (int)PyTuple_GET_SIZE(tmpl);
    *ops = PyMem_RawCalloc((size_t)*nops + 1, sizeof(Op));
    if (!*ops)
        return PyErr_NoMemory(), 0;
    *nfields = 0;
    for (int i = 0; i < *nops; i++) {
        Op *op = &(*ops)[i];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(tmpl, i), "iy#y#y#iii", &op->code, &op->lit, &op->nlit, &op->pre,
                              &op->npre, &op->suf, &op->nsuf, &op->field, &op->kind, &op->minimum))
            return 0;
        if (op->code < T_LIT || op->code > T_LABEL || op->field < 0 || (op->code == T_RUN && op->nlit != 1))
            return PyErr_SetString(PyExc_ValueError, "templates: an op of unknown code or shape"), 0;
        op->lit_word = op->code == T_LIT && op->nlit > 0 && !memchr(op->lit, ' ', (size_t)op->nlit);
        int pair = op->code == T_TYPED || op->code == T_REF || op->code == T_SHARE;
        int fills = op->code == T_FIELD || op->code == T_PHRASE || op->code == T_REST || op->code == T_LABEL || pair;
        if (fills && op->field + pair + 1 > *nfields)
            *nfields = op->field + pair + 1;
    }
    return 1;
}
