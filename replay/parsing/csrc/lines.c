/* lines(), views(): every line, its header fields and timestamp; Arrow string views (see module.c) */
#include "scan.h"

/* ---- lines ------------------------------------------------------------------------------ */



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

/* the days since the epoch of "dd Mon yyyy" at p into *days; 0 when there is no such date */
static int date_days(const char *p, int64_t *days)
{
    static const char *months = "JanFebMarAprMayJunJulAugSepOctNovDec";
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int month = 0;
    for (int i = 0; i < 12; i++)
        if (memcmp(p + 3, months + 3 * i, 3) == 0) { month = i + 1; break; }
    int64_t year = two(p + 7) * 100 + two(p + 9);
    int day = two(p);
    if (!month || day < 1 || day > mdays[month - 1] + (month == 2 && is_leap(year)))
        return 0;
    *days = days_from_civil(year, month, day);
    return 1;
}

/* The date of the last header read: a log's lines share their date for hours, so the month name
 * and the calendar are worked out once a day, not once a line. */
typedef struct { char text[11]; int64_t days; int ok, valid; } LastDate;

/* "dd Mon yyyy hh:mm:ss,SSS" -> ms since the epoch; TS_NONE for anything a strict reader would
 * question (polars then decides, so both paths agree on odd dates) */
static int64_t parse_ts(const char *p, LastDate *last)
{
    if (!last->valid || memcmp(last->text, p, 11) != 0) {
        memcpy(last->text, p, 11);
        last->ok = date_days(p, &last->days), last->valid = 1;
    }
    int hh = two(p + 12), mm = two(p + 15), ss = two(p + 18);
    int ms = two(p + 21) * 10 + (p[23] - '0');
    if (!last->ok || hh > 23 || mm > 59 || ss > 59)
        return TS_NONE;
    return ((last->days * 24 + hh) * 60 + mm) * 60000LL + ss * 1000LL + ms;
}

/* no byte of p[0, n) has its high bit set (eight at a time) */
static int all_ascii(const char *p, Py_ssize_t n)
{
    uint64_t acc = 0, w;
    Py_ssize_t k = 0;
    for (; k + 8 <= n; k += 8) {
        memcpy(&w, p + k, 8);
        acc |= w;
    }
    for (; k < n; k++)
        acc |= (unsigned char)p[k];
    return (acc & 0x8080808080808080ULL) == 0;
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

Py_ssize_t count_lines(const char *d, Py_ssize_t size)
{
    Py_ssize_t n = 0;
    for (const char *q = d, *end = d + size; (q = memchr(q, '\n', (size_t)(end - q))) != NULL; q++)
        n++;
    return n + (size && d[size - 1] != '\n');  /* a last line without its newline (a file cut mid-line) */
}

/* the n lines of d[0, size): NCOL spans a line into col (lines()), the headers' timestamps into ts */
static void scan_block(const char *d, Py_ssize_t size, Py_ssize_t n, int32_t *col, int64_t *ts)
{
    Py_ssize_t s = 0;
    LastDate last = {{0}, 0, 0, 0};
    for (Py_ssize_t li = 0; li < n; li++, col += NCOL) {
        const char *nl = memchr(d + s, '\n', (size_t)(size - s));
        Py_ssize_t next = nl ? nl - d + 1 : size, e = nl ? nl - d : size;
        while (e > s && d[e - 1] == '\r') e--;
        memset(col, 0, NCOL * sizeof(int32_t));
        col[0] = (int32_t)s, col[1] = (int32_t)e;
        ts[li] = TS_NONE;
        int ascii = all_ascii(d + s, e - s);
        if (ascii && split_header(d, s, e, col)) {
            col[2] = K_HEADER;
            ts[li] = parse_ts(d + s, &last);
        } else if (!ascii || has_date_prefix(d + s, e - s)) {
            col[2] = K_MAYBE;
        }
        s = next;
    }
}

Py_ssize_t scan_headers(const char *d, Py_ssize_t size, Py_ssize_t n, int32_t *ls, int32_t *le, uint8_t *kind,
                        int32_t *heads, int64_t *ts)
{
    Py_ssize_t s = 0, headers = 0;
    LastDate last = {{0}, 0, 0, 0};
    for (Py_ssize_t li = 0; li < n; li++) {
        const char *nl = memchr(d + s, '\n', (size_t)(size - s));
        Py_ssize_t next = nl ? nl - d + 1 : size, e = nl ? nl - d : size;
        while (e > s && d[e - 1] == '\r') e--;
        ls[li] = (int32_t)s, le[li] = (int32_t)e, kind[li] = K_CONT;
        int ascii = all_ascii(d + s, e - s);
        int32_t *col = heads + headers * NCOL;  /* a line that is no header leaves it to the next */
        if (ascii && split_header(d, s, e, col)) {
            col[0] = (int32_t)s, col[1] = (int32_t)e, col[2] = K_HEADER;
            kind[li] = K_HEADER;
            ts[headers++] = parse_ts(d + s, &last);
        } else if (!ascii || has_date_prefix(d + s, e - s)) {
            kind[li] = K_MAYBE;
        }
        s = next;
    }
    return headers;
}

PyObject *scan_lines(PyObject *self, PyObject *args)
{
    Py_buffer in;
    if (!PyArg_ParseTuple(args, "y*", &in))
        return NULL;
    const char *d = in.buf;
    Py_ssize_t size = in.len, n;
    if (size >= INT32_MAX) {
        PyBuffer_Release(&in);
        return PyErr_Format(PyExc_ValueError, "block of %zd bytes: the scanner takes under 2 GiB", size);
    }
    n = count_lines(d, size);
    PyObject *cols = PyBytes_FromStringAndSize(NULL, n * NCOL * (Py_ssize_t)sizeof(int32_t));
    PyObject *stamps = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!cols || !stamps) {
        Py_XDECREF(cols), Py_XDECREF(stamps), PyBuffer_Release(&in);
        return NULL;
    }
    int32_t *col = (int32_t *)PyBytes_AS_STRING(cols);
    int64_t *ts = (int64_t *)PyBytes_AS_STRING(stamps);
    Py_BEGIN_ALLOW_THREADS
    scan_block(d, size, n, col, ts);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    return Py_BuildValue("(nNN)", n, cols, stamps);
}

/* ---- Arrow string views ------------------------------------------------------------------ */

/* One 16-byte Arrow view per (start, end): the bytes inline when they fit in 12, else a 4-byte
 * prefix, buffer 0 and the offset, so polars reads the columns without copying the text. */
PyObject *make_views(PyObject *self, PyObject *args)
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
    int bad = 0;
    Py_BEGIN_ALLOW_THREADS  /* only the buffers are touched: other parse threads run meanwhile */
    for (Py_ssize_t i = 0; i < n; i++, v += 16) {
        int32_t len = e[i] - s[i];
        if (s[i] < 0 || len < 0 || (Py_ssize_t)e[i] > in.len) {
            bad = 1;
            break;
        }
        write_view(v, d, s[i], len, 0);
    }
    Py_END_ALLOW_THREADS
    if (bad) {
        Py_CLEAR(out);
        PyErr_SetString(PyExc_ValueError, "views: a span lies outside the block");
    }
done:
    PyBuffer_Release(&in), PyBuffer_Release(&st), PyBuffer_Release(&en);
    return out;
}
