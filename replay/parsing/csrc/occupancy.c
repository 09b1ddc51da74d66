/* The DEBUG occupancy table (replay.parsing.scan.occupancy_rows): a header line, a rule line, then
 * one row per machine, each row's fields as spans. Only the canonical shape is taken (printable
 * ASCII, blank-separated tokens, "<none>" or job ids, an optional "[free]"); any other record is
 * refused and goes to the polars handler (replay/parsing/fast.py _occupancy_table), which decides.
 */
#include "scan.h"

enum { OF_N = 7 }; /* m_host, m_blacklisted, m_order, m_active, m_unused, memory_mb, free */
enum { MAX_TOKENS = 64 };

typedef struct {
    I32s rec, span, jobs, items;
} OccRows;

static const char *const HEADER[] = {"Name", "Blacklisted", "Order", "Active", "Shares", "Unused", "Shares",
                                      "Memory", "(MB)", "Jobs"};

static int all_digits(const char *d, int32_t s, int32_t e)
{
    if (s >= e)
        return 0;
    for (int32_t i = s; i < e; i++)
        if (!is_digit(d[i]))
            return 0;
    return 1;
}

static int header_line(const char *d, const int32_t *ts, const int32_t *te, int n)
{
    if (n != 10)
        return 0;
    for (int i = 0; i < n; i++)
        if (!is_lit(d, ts[i], te[i], HEADER[i]))
            return 0;
    return 1;
}

static int rule_line(const char *d, const int32_t *ts, const int32_t *te, int n)
{
    if (n < 2 || !is_lit(d, ts[n - 1], te[n - 1], "..."))
        return 0;
    for (int i = 0; i < n - 1; i++) {
        if (te[i] - ts[i] < 2)
            return 0;
        for (int32_t k = ts[i]; k < te[i]; k++)
            if (d[k] != '-')
                return 0;
    }
    return 1;
}

/* "[digits]" from s to e: the span of the digits in *fs, *fe */
static int free_token(const char *d, int32_t s, int32_t e, int32_t *fs, int32_t *fe)
{
    if (e - s < 3 || d[s] != '[' || d[e - 1] != ']' || !all_digits(d, s + 1, e - 1))
        return 0;
    *fs = s + 1, *fe = e - 1;
    return 1;
}

/* one machine row: 1 taken (pushed), 0 not of the canonical shape, -1 out of memory */
static int machine_row(const char *d, const int32_t *ts, const int32_t *te, int n, int32_t rec, OccRows *out)
{
    if (n < 7 || not_a_word(d, ts[0], te[0]) || not_a_word(d, ts[1], te[1]))
        return 0;
    for (int i = 2; i < 6; i++)
        if (!is_int(d + ts[i], te[i] - ts[i]))
            return 0;
    int32_t fs = -1, fe = -1;
    int last = n; /* tokens [6, last) are the jobs */
    if (free_token(d, ts[n - 1], te[n - 1], &fs, &fe))
        last = n - 1;
    int none = 0;
    if (last == 7 && is_lit(d, ts[6], te[6], "<none>"))
        none = 1;
    else if (last == n && n == 7 && te[6] - ts[6] > 6 && memcmp(d + ts[6], "<none>", 6) == 0) {
        if (!free_token(d, ts[6] + 6, te[6], &fs, &fe)) /* "<none>[79]" */
            return 0;
        none = 1, last = 7;
    }
    if (!none) {
        if (last == 6)
            return 0;
        for (int i = 6; i < last; i++)
            if (!all_digits(d, ts[i], te[i]))
                return 0;
    }
    if (!i32_push(&out->rec, rec) || !i32_push(&out->jobs, none ? -1 : last - 6))
        return -1;
    for (int i = 0; i < 6; i++)
        if (!i32_push(&out->span, ts[i]) || !i32_push(&out->span, te[i]))
            return -1;
    if (!i32_push(&out->span, fs) || !i32_push(&out->span, fe))
        return -1;
    for (int i = 6; !none && i < last; i++)
        if (!i32_push(&out->items, ts[i]) || !i32_push(&out->items, te[i]))
            return -1;
    return 1;
}

/* one record's lines [a, b): 1 taken, 0 refused (its rows taken back), -1 out of memory */
static int occupancy_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                            int32_t rec, void *rows)
{
    OccRows *out = rows;
    RowMarks marks = MARK_ROWS(out);
    int32_t ts[MAX_TOKENS], te[MAX_TOKENS];
    while (b > a && blank_line(d, s[b - 1], e[b - 1])) /* trailing blank lines are not the table's */
        b--;
    if (b - a < 2)
        return 0;
    for (Py_ssize_t i = a; i < b; i++) {
        int n = ascii_tokens(d, s[i], e[i], MAX_TOKENS, ts, te);
        int ok = n >= 0 && (i == a ? header_line(d, ts, te, n) : i == a + 1 ? rule_line(d, ts, te, n)
                                                                            : machine_row(d, ts, te, n, rec, out));
        if (ok < 0)
            return -1;
        if (!ok)
            goto refuse;
    }
    if (b - a == 2) { /* a header and a rule: the table has no machine, one row with no fields */
        if (!i32_push(&out->rec, rec) || !i32_push(&out->jobs, -1))
            return -1;
        for (int i = 0; i < 2 * OF_N; i++)
            if (!i32_push(&out->span, -1))
                return -1;
    }
    return 1;
refuse:
    rewind_rows(out, &marks);
    return 0;
}

_Static_assert(sizeof(OccRows) == 4 * sizeof(I32s), "OccRows: I32s columns only (read_records)");

PyObject *occupancy_rows(PyObject *self, PyObject *args)
{
    OccRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "occupancy", occupancy_record, (I32s *)&out, 4);
}
