/* doExpansion bodies ("NP: <nodepool> Expansions in this order: <job>:found|notfound ..."): one row
 * per listed job, one row with no job when the list is empty (replay.parsing.columns_expansions).
 * Only printable ASCII with single-space words is taken; any other body is refused and goes to the
 * polars handler (replay/parsing/fast.py _explode_expansions), which decides.
 */
#include "scan.h"

enum { EF_N = 3 }; /* nodepool, job_id, found */

typedef struct {
    I32s rec, span;
} ExpRows;

static int push_row(ExpRows *out, int32_t rec, int32_t ps, int32_t pe, int32_t js, int32_t je, int32_t fs,
                    int32_t fe)
{
    return i32_push(&out->rec, rec) && i32_push(&out->span, ps) && i32_push(&out->span, pe) &&
           i32_push(&out->span, js) && i32_push(&out->span, je) && i32_push(&out->span, fs) &&
           i32_push(&out->span, fe);
}

/* the entry "<digits>:found|notfound" at d[i, e), ending at a space or e: its end, or -1 */
static int32_t entry(const char *d, int32_t i, int32_t e, int32_t *js, int32_t *je, int32_t *fs)
{
    *js = i;
    while (i < e && is_digit(d[i]))
        i++;
    if (i == *js || i >= e || d[i] != ':')
        return -1;
    *je = i++;
    *fs = i;
    int32_t end = i;
    while (end < e && d[end] != ' ')
        end++;
    if (!is_lit(d, i, end, "found") && !is_lit(d, i, end, "notfound"))
        return -1;
    return end;
}

/* one record's body (its only "line"): 1 taken, 0 refused (its rows taken back), -1 out of memory */
static int expansion_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                            int32_t rec, void *rows)
{
    ExpRows *out = rows;
    RowMarks marks = MARK_ROWS(out);
    static const char ORDER[] = " Expansions in this order:";
    if (b - a != 1)
        return 0;
    int32_t i = s[a], end = e[a];
    for (int32_t k = i; k < end; k++)
        if (d[k] < 0x20 || d[k] > 0x7e) /* a tab, CR or any byte polars' \S or \d may read otherwise */
            return 0;
    if (end - i < 4 || memcmp(d + i, "NP: ", 4) != 0)
        return 0;
    i += 4;
    while (i < end && d[i] == ' ')
        i++;
    int32_t ps = i;
    while (i < end && d[i] != ' ')
        i++;
    int32_t pe = i;
    int32_t n = (int32_t)(sizeof(ORDER) - 1);
    if (pe == ps || end - i < n || memcmp(d + i, ORDER, (size_t)n) != 0)
        return 0;
    i += n;
    int listed = 0;
    for (;;) {
        int32_t spaces = i;
        while (i < end && d[i] == ' ')
            i++;
        if (i == end)
            break;
        int32_t js, je, fs;
        int32_t stop = i == spaces ? -1 : entry(d, i, end, &js, &je, &fs);
        if (stop < 0)
            goto refuse;
        if (!push_row(out, rec, ps, pe, js, je, fs, stop))
            return -1;
        listed = 1, i = stop;
    }
    if (!listed && !push_row(out, rec, ps, pe, -1, -1, -1, -1))
        return -1;
    return 1;
refuse:
    rewind_rows(out, &marks);
    return 0;
}

_Static_assert(sizeof(ExpRows) == 2 * sizeof(I32s), "ExpRows: I32s columns only (read_records)");

PyObject *expansion_rows(PyObject *self, PyObject *args)
{
    ExpRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "expansions", expansion_record, (I32s *)&out, 2);
}
