/* Shared by the scanner's C files (replay/parsing/csrc/): what a line's spans are, small byte tests,
 * the template ops, growable arrays, and the entry points module.c registers. */
#ifndef RMREPLAY_SCAN_H
#define RMREPLAY_SCAN_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* int32 columns per line (lines()): start, end, kind, then (start, end) of level, component, cls,
 * jid, tid, method, body */
enum { NCOL = 17 };

/* a line's kind (column 2): K_MAYBE, a line Python's general regex decides (not ASCII, or a date
 * but not the canonical header layout) */
enum { K_CONT = 0, K_HEADER = 1, K_MAYBE = 2 };
#define TS_NONE INT64_MIN  /* a header's timestamp left to polars (unusual values) */

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }
/* "dd Mon yyyy " with ASCII digits and letters: the start every header shares (records.STAMPED) */
static inline int has_date_prefix(const char *p, Py_ssize_t n)
{
    return n >= 12 && is_digit(p[0]) && is_digit(p[1]) && p[2] == ' ' && p[3] >= 'A' && p[3] <= 'Z'
           && p[4] >= 'a' && p[4] <= 'z' && p[5] >= 'a' && p[5] <= 'z' && p[6] == ' ' && is_digit(p[7])
           && is_digit(p[8]) && is_digit(p[9]) && is_digit(p[10]) && p[11] == ' ';
}
static inline int is_blank(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); } /* Rust's ASCII whitespace */

/* an integer token: an optional '-' and at most 18 digits (longer: the reference paths decide) */
static inline int is_int(const char *p, Py_ssize_t n)
{
    Py_ssize_t i = p[0] == '-';
    if (i >= n || n - i > 18)
        return 0;
    for (; i < n; i++)
        if (!is_digit(p[i]))
            return 0;
    return 1;
}

/* the value of an integer span is_int() accepted */
static inline int64_t int_at(const char *d, int32_t s, int32_t e)
{
    int neg = d[s] == '-';
    int64_t x = 0;
    for (int32_t k = s + neg; k < e; k++)
        x = x * 10 + (d[k] - '0');
    return neg ? -x : x;
}

/* is_int() and int_at() in one pass over the digits (the typed columns read each value once):
 * 1 and the value in *x, or 0 */
static inline int int_value(const char *p, Py_ssize_t n, int64_t *x)
{
    Py_ssize_t i = n > 0 && p[0] == '-';
    if (i >= n || n - i > 18)
        return 0;
    int64_t v = 0;
    for (Py_ssize_t k = i; k < n; k++) {
        unsigned dig = (unsigned char)p[k] - (unsigned)'0';  /* one unsigned compare for '0'..'9' */
        if (dig > 9)
            return 0;
        v = v * 10 + dig;
    }
    *x = i ? -v : v;
    return 1;
}

/* ---- eight bytes at a time ---- */
/* Bodies are scanned a word (8 bytes) at a time where a byte loop was the cost: the classic bit
 * tricks below flag the bytes of a word that are zero or below a bound, without a branch per byte. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

static inline uint64_t load8(const char *p)
{
    uint64_t w;
    memcpy(&w, p, 8);  /* an unaligned load; compilers emit one instruction */
    return w;
}

/* nonzero when some byte of w is below n (n <= 128); the lowest flagged byte is the first such byte */
static inline uint64_t bytes_below(uint64_t w, unsigned n) { return (w - ONES * n) & ~w & HIGHS; }

/* nonzero when some byte of w equals c; the lowest flagged byte is the first such byte */
static inline uint64_t bytes_equal(uint64_t w, unsigned char c) { return bytes_below(w ^ (ONES * c), 1); }

/* Exact per-byte flags (the high bit of each byte), unlike bytes_below's, whose flags above the
 * first may be false: a byte's low seven bits plus a bound never carry into the next byte. */
#define LOWS (~HIGHS)
static inline uint64_t digit_bytes(uint64_t w)  /* the bytes '0'..'9' */
{
    uint64_t low = w & LOWS;
    return ~w & (low + ONES * (0x80 - '0')) & ~(low + ONES * (0x80 - '9' - 1)) & HIGHS;
}

static inline uint64_t blank_bytes(uint64_t w)  /* the bytes ' ' */
{
    uint64_t x = w ^ (ONES * ' ');
    return ~(((x & LOWS) + LOWS) | x) & HIGHS;
}

/* The digits of p[0, 64) as a bit per byte (bit i: p[i]; little-endian only) into *dig; 0 when a
 * byte is neither a digit nor ' ' (a '-', or a byte no integer list has). With SSE2 (every x86-64),
 * 16 bytes a step and a byte's flag to its bit by movemask; else a word a step, a byte's flag moved
 * to bit 56 + its place in the word by one multiplication, every partial product on a bit of its own. */
static inline int digit_bits(const char *p, uint64_t *dig)
{
#ifdef __SSE2__
    uint64_t bits = 0, known = 0;
    const __m128i zero = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9), blank = _mm_set1_epi8(' ');
    for (int i = 0; i < 4; i++) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i)), y = _mm_sub_epi8(x, zero);
        __m128i digits = _mm_cmpeq_epi8(_mm_min_epu8(y, nine), y);  /* x - '0' is 0..9 */
        bits |= (uint64_t)(uint16_t)_mm_movemask_epi8(digits) << (16 * i);
        known |= (uint64_t)(uint16_t)_mm_movemask_epi8(_mm_or_si128(digits, _mm_cmpeq_epi8(x, blank))) << (16 * i);
    }
    *dig = bits;
    return known == ~0ULL;
#else
    uint64_t bits = 0, other = 0;
    for (int w = 0; w < 8; w++) {
        uint64_t x = load8(p + 8 * w), digits = digit_bytes(x);
        other |= ~(digits | blank_bytes(x)) & HIGHS;
        bits |= (((digits >> 7) * 0x0102040810204080ULL) >> 56) << (8 * w);
    }
    *dig = bits;
    return !other;
#endif
}

/* the first ' ' in d[i, end), or end */
static inline Py_ssize_t find_space(const char *d, Py_ssize_t i, Py_ssize_t end)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    for (; i + 8 <= end; i += 8) {  /* the lowest flagged byte is the first in memory on little-endian */
        uint64_t hit = bytes_equal(load8(d + i), ' ');
        if (hit)
            return i + (__builtin_ctzll(hit) >> 3);
    }
#endif
    while (i < end && d[i] != ' ') i++;
    return i;
}

/* the whole token is the grammar's NUM, [-+]?(\d+(\.\d*)?([eE][-+]?\d+)?|NaN|Infinity) (an INT is one):
 * the templates' K_NUM fields, and the numbers arrow.c types */
static inline int is_num(const char *p, Py_ssize_t n)
{
    Py_ssize_t i = n > 0 && (p[0] == '-' || p[0] == '+'), start;
    if ((n - i == 3 && memcmp(p + i, "NaN", 3) == 0) || (n - i == 8 && memcmp(p + i, "Infinity", 8) == 0))
        return 1;
    for (start = i; i < n && is_digit(p[i]); i++) {}
    if (i == start)
        return 0;
    if (i < n && p[i] == '.')
        for (i++; i < n && is_digit(p[i]); i++) {}
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i += i + 1 < n && (p[i + 1] == '-' || p[i + 1] == '+');
        for (start = ++i; i < n && is_digit(p[i]); i++) {}
        if (i == start)
            return 0;
    }
    return i == n;
}

/* ---- token templates (templates.c) ---- */
/* op codes and field kinds, numbered as replay/parsing/templates.py numbers them */
enum { T_LIT = 0, T_FIELD, T_TYPED, T_LIST, T_PHRASE, T_REF, T_SHARE, T_RUN, T_REST, T_LABEL };
enum { K_ANY = 0, K_INT, K_UINT, K_UUID, K_NQM, K_NUM, K_NOMINUS };

typedef struct {
    int code, field, kind, minimum;
    int lit_word;  /* a T_LIT of one or more bytes and no ' ': compared in place (match_plain) */
    const char *lit, *pre, *suf;
    Py_ssize_t nlit, npre, nsuf;
} Op;

int read_ops(PyObject *tmpl, Op **ops, int *nops, int *nfields);
/* the body has only the bytes a template reads (no byte >= 0x80, no tab or other \t..\r blank) */
int plain_body(const char *d, Py_ssize_t s, Py_ssize_t e);
/* Match one body plain_body() accepted (fill.c checks a body once for all its templates): spans get
 * (start, end) per field, list tokens are appended to `items` */
int match_plain(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
                int32_t *items, Py_ssize_t *nitems, int32_t *count);
/* plain_body() and match_plain() of one body, but a K_INT list's values go to vals (from *nvals; room
 * for one per two bytes of the body) in place of its tokens' spans to items (rmcounter.c) */
int match_values(const char *d, Py_ssize_t s, Py_ssize_t e, const Op *ops, int nops, int32_t *spans,
                 int32_t *items, Py_ssize_t *nitems, int64_t *vals, Py_ssize_t *nvals, int32_t *count);

/* ---- growable arrays ---- */
typedef struct { int64_t *v; Py_ssize_t n, cap; } I64s;
typedef struct { int32_t *v; Py_ssize_t n, cap; } I32s;

/* room for one more element of `size` bytes in *v (n used of *cap); 0 when out of memory */
static inline int grow(void **v, Py_ssize_t n, Py_ssize_t *cap, size_t size)
{
    if (n < *cap)
        return 1;
    Py_ssize_t more = *cap ? 2 * *cap : 1024;
    void *p = PyMem_RawRealloc(*v, (size_t)more * size);
    if (!p)
        return 0;
    *v = p, *cap = more;
    return 1;
}

/* room for `more` elements past n in *v at once (a row's items written without a check each) */
static inline int reserve(void **v, Py_ssize_t n, Py_ssize_t *cap, size_t size, Py_ssize_t more)
{
    if (n + more <= *cap)
        return 1;
    Py_ssize_t want = *cap ? 2 * *cap : 1024;
    while (want < n + more) want *= 2;
    void *p = PyMem_RawRealloc(*v, (size_t)want * size);
    if (!p)
        return 0;
    *v = p, *cap = want;
    return 1;
}

/* room for exactly `count` elements of `size` bytes in the empty vector *v (reserve() rounds up to a
 * power of two), for a vector whose length is known or bounded before it is filled */
static inline int reserve_exact(void **v, Py_ssize_t *cap, size_t size, Py_ssize_t count)
{
    if (count <= 0)
        return 1;
    *v = PyMem_RawMalloc((size_t)count * size);
    *cap = *v ? count : 0;
    return *v != NULL;
}

static inline int i64_push(I64s *a, int64_t x)
{
    if (!grow((void **)&a->v, a->n, &a->cap, sizeof(int64_t)))
        return 0;
    a->v[a->n++] = x;
    return 1;
}

static inline int i32_push(I32s *a, int32_t x)
{
    if (!grow((void **)&a->v, a->n, &a->cap, sizeof(int32_t)))
        return 0;
    a->v[a->n++] = x;
    return 1;
}

/* FNV-1a over n bytes, continuing from h (start from FNV_START) */
#define FNV_START 2166136261u
static inline uint32_t fnv(uint32_t h, const char *p, Py_ssize_t n)
{
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ (unsigned char)p[i]) * 16777619u;
    return h;
}

static inline PyObject *bytes_of(const void *p, Py_ssize_t n) { return PyBytes_FromStringAndSize(p ? p : "", n); }

/* ---- the scan of lines (lines.c) and its readers of headers (numbers.c, route.c), for chunk.c ---- */
/* the lines of d[0, size): every newline, and a last line without one */
Py_ssize_t count_lines(const char *d, Py_ssize_t size);
/* the n lines of d[0, size): each line's start, end and kind, and each header's NCOL spans (offsets
 * in d) and timestamp (TS_NONE: left to polars), the headers' rows one after another from `heads`
 * and `ts` (room for n); the number of headers */
Py_ssize_t scan_headers(const char *d, Py_ssize_t size, Py_ssize_t n, int32_t *ls, int32_t *le, uint8_t *kind,
                        int32_t *heads, int64_t *ts);

/* one 16-byte Arrow string view of d[s, s + len): the bytes inline when they fit in 12, else a
 * 4-byte prefix, the buffer index and the offset */
static inline void write_view(char *v, const char *d, int32_t s, int32_t len, int32_t buffer)
{
    memset(v, 0, 16);
    memcpy(v, &len, 4);
    if (len <= 12) {
        memcpy(v + 4, d + s, (size_t)len);
    } else {
        memcpy(v + 4, d + s, 4);
        memcpy(v + 8, &buffer, 4);
        memcpy(v + 12, &s, 4);
    }
}

/* the METHOD names numbers() looks a header's METHOD up in (at most 64) */
typedef struct { const char *name[64]; Py_ssize_t len[64]; Py_ssize_t n; } Methods;
int read_methods(PyObject *tuple, Methods *m);  /* 0 with a Python error set */
enum { N_NULL = 0, N_VALUE = 1, N_UNDECIDED = 2 };  /* a number's state; N_UNDECIDED: polars' cast decides */
/* numbers() of the n headers `col` (NCOL a header) of d[0, len); 0, or -1 when a span lies outside */
int read_numbers(const char *d, Py_ssize_t len, const int32_t *col, Py_ssize_t n, const Methods *m,
                 int64_t *jv, uint8_t *js, uint32_t *tv, uint8_t *ts, int8_t *mv);

/* route()'s table of (class, METHOD) groups and their compiled prefixes */
typedef struct Router Router;
Router *router_open(PyObject *table);  /* NULL with a Python error set */
void router_close(Router *r);
/* each of the n headers' family code into fam (route()); runs without the GIL */
void route_heads(Router *r, const char *d, Py_ssize_t len, const int32_t *col, Py_ssize_t n, int generic,
                 int32_t *fam);

/* ---- the functions module.c registers ---- */
/* a reader of one multi-line record (its lines a..b of the spans s, e): 1 taken (its rows appended to
 * `rows`), 0 refused (the caller hands it on to the polars and lark paths), -1 out of memory */
typedef int (*RecordReader)(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                            int32_t rec, void *rows);
/* every record of a block through `reader` (groups.c); 0, or -1 with a Python error set */
int read_each_record(const char *what, const Py_buffer *in, const Py_buffer *rc, const Py_buffer *st,
                const Py_buffer *en, RecordReader reader, void *rows, I32s *refused);
/* The Python entry of a record reader whose rows are `ncols` I32s columns (`cols`: its rows struct,
   made of I32s members only): reads (data, recs, starts, ends), runs `reader` on each record, and
   returns each column's bytes then the refused records', freeing the columns. */
PyObject *read_records(PyObject *args, const char *what, RecordReader reader, I32s *cols, int ncols);

/* A record reader appends its rows as it reads and takes them back when it refuses the record:
 * the length of every column of its rows struct (I32s members only) is marked before the record,
 * and a refusal rewinds each column to its mark (groups.c). */
enum { MAX_ROW_COLS = 8 };
typedef struct { int ncols; Py_ssize_t n[MAX_ROW_COLS]; } RowMarks;
RowMarks mark_rows(const void *rows, int ncols);
void rewind_rows(void *rows, const RowMarks *marks);
#define MARK_ROWS(out) mark_rows((out), (int)(sizeof *(out) / sizeof(I32s)))  /* every column of *out */

/* the blank-separated tokens of d[s, e) into ts, te (at most `max`, else -1); -1 when a byte is not
 * printable ASCII (groups.c) */
int ascii_tokens(const char *d, int32_t s, int32_t e, int max, int32_t *ts, int32_t *te);
int is_lit(const char *d, int32_t s, int32_t e, const char *lit);  /* d[s, e) is exactly `lit` */
/* a token the grammar's lexer may read as another terminal (fast.py _NOT_A_WORD): its record is refused */
int not_a_word(const char *d, int32_t s, int32_t e);
int blank_line(const char *d, int32_t s, int32_t e);  /* only blanks (or nothing) */

PyObject *scan_lines(PyObject *self, PyObject *args);
PyObject *scan_chunk(PyObject *self, PyObject *args);
PyObject *make_views(PyObject *self, PyObject *args);
PyObject *route_records(PyObject *self, PyObject *args);
PyObject *header_numbers(PyObject *self, PyObject *args);
PyObject *rmcounter_rows(PyObject *self, PyObject *args);
PyObject *schedule_rows(PyObject *self, PyObject *args);
PyObject *fill_rows(PyObject *self, PyObject *args);
PyObject *occupancy_rows(PyObject *self, PyObject *args);
PyObject *section_rows(PyObject *self, PyObject *args);
PyObject *expansion_rows(PyObject *self, PyObject *args);
PyObject *pool_rows(PyObject *self, PyObject *args);
PyObject *node_rows(PyObject *self, PyObject *args);
PyObject *jd_host_rows(PyObject *self, PyObject *args);
PyObject *caps_columns(PyObject *self, PyObject *args);
PyObject *defrag_class(PyObject *self, PyObject *args);
PyObject *share_match(PyObject *self, PyObject *args);
PyObject *trim_spans(PyObject *self, PyObject *args);
PyObject *grow_bytes(PyObject *self, PyObject *args);   /* reader.c */
PyObject *newline_count(PyObject *self, PyObject *args);  /* reader.c */

#endif
