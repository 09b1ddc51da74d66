/* The DEBUG pretty-printed schedule (replay.parsing.scan.section_rows): sections (Expanded,
 * Shrunken, Stable, Dormant, Reserved), each "<none>" or a header and job rows. Only the canonical
 * shape is taken (printable ASCII, blank-separated tokens, the grammar's order of lines); any other
 * record is refused and goes to the polars handler (replay/parsing/fast.py _sched_sections).
 */
#include "scan.h"

enum { SF_N = 15 }; /* section, then the 14 fields of a job row */
enum { MAX_TOK = 20 };
enum { S_START, S_SECTION, S_NONE, S_HEADER, S_ROW, S_BLANK };

typedef struct {
    I32s rec, span;
} SectRows;

static const char *const SECTIONS[] = {"Expanded", "Shrunken", "Stable", "Dormant", "Reserved"};
static const char *const JOB_HEADER[] = {"ID", "JobName", "User", "Class", "Shares", "Order", "QShares", "NTh",
                                         "Memory", "nQuest", "Ques", "Rem", "InitWait", "Max", "P/Nst"};

/* the section's name span when the line is "<name>:" or "<name> :", else 0 */
static int section_line(const char *d, const int32_t *ts, const int32_t *te, int n, int32_t *ns, int32_t *ne)
{
    int32_t s = ts[0], e = te[0];
    if (n == 1 && e - s > 1 && d[e - 1] == ':')
        e--;
    else if (!(n == 2 && is_lit(d, ts[1], te[1], ":")))
        return 0;
    for (int i = 0; i < 5; i++)
        if (is_lit(d, s, e, SECTIONS[i])) {
            *ns = s, *ne = e;
            return 1;
        }
    return 0;
}

/* a job row (13 tokens): its 14 field spans (type letter, digits, then the other tokens) in f; 0 not
 * a row, -1 a row the grammar's lexer may read otherwise (the whole record is refused) */
static int job_row(const char *d, const int32_t *ts, const int32_t *te, int n, int32_t *f)
{
    if (n != 13 || !strchr("JSMRA?", d[ts[0]]))
        return 0;
    int32_t k = ts[0] + 1;
    while (k < te[0] && d[k] == '_') k++;
    if (k == te[0])
        return 0;
    for (int32_t i = k; i < te[0]; i++)
        if (!is_digit(d[i]))
            return 0;
    for (int i = 4; i < 11; i++)
        if (!is_int(d + ts[i], te[i] - ts[i]))
            return 0;
    if (!is_int(d + ts[12], te[12] - ts[12]))
        return 0;
    if (not_a_word(d, ts[1], te[1]) || not_a_word(d, ts[2], te[2]) || not_a_word(d, ts[3], te[3]) ||
        not_a_word(d, ts[11], te[11]))
        return -1;
    f[0] = ts[0], f[1] = ts[0] + 1, f[2] = k, f[3] = te[0];
    for (int i = 1; i < 13; i++)
        f[2 + 2 * i] = ts[i], f[3 + 2 * i] = te[i];
    return 1;
}

/* the steps the grammar allows from one line's shape to the next (fast.py _SECTION_STEPS) */
static int step_ok(int from, int to)
{
    switch (from) {
    case S_START: return to == S_SECTION;
    case S_SECTION: return to == S_NONE || to == S_HEADER;
    case S_NONE: return to == S_BLANK || to == S_SECTION;
    case S_HEADER: return to == S_ROW || to == S_BLANK || to == S_SECTION;
    case S_ROW: return to == S_ROW || to == S_BLANK || to == S_SECTION;
    case S_BLANK: return to == S_BLANK || to == S_SECTION;
    }
    return 0;
}

static int push_row(SectRows *out, int32_t rec, int32_t ns, int32_t ne, const int32_t *f)
{
    if (!i32_push(&out->rec, rec) || !i32_push(&out->span, ns) || !i32_push(&out->span, ne))
        return 0;
    for (int i = 0; i < 2 * (SF_N - 1); i++)
        if (!i32_push(&out->span, f ? f[i] : -1))
            return 0;
    return 1;
}

/* one record's lines [a, b): 1 taken, 0 refused (its rows taken back), -1 out of memory */
static int section_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                          int32_t rec, void *rows)
{
    SectRows *out = rows;
    RowMarks marks = MARK_ROWS(out);
    int32_t ts[MAX_TOK], te[MAX_TOK], f[2 * (SF_N - 1)], ns = -1, ne = -1, cs, ce;
    while (b > a && blank_line(d, s[b - 1], e[b - 1]))
        b--;
    if (b == a)
        return 0;
    int prev = S_START;
    for (Py_ssize_t i = a; i < b; i++) {
        int shape, n = blank_line(d, s[i], e[i]) ? 0 : ascii_tokens(d, s[i], e[i], MAX_TOK, ts, te);
        if (n < 0)
            goto refuse;
        if (n == 0)
            shape = S_BLANK;
        else if (section_line(d, ts, te, n, &cs, &ce))
            shape = S_SECTION;
        else if (n == 1 && is_lit(d, ts[0], te[0], "<none>"))
            shape = S_NONE;
        else if (n == 15) {
            for (int k = 0; k < 15; k++)
                if (!is_lit(d, ts[k], te[k], JOB_HEADER[k]))
                    goto refuse;
            shape = S_HEADER;
        } else {
            int got = job_row(d, ts, te, n, f);
            if (got != 1)
                goto refuse;
            shape = S_ROW;
        }
        if (!step_ok(prev, shape))
            goto refuse;
        /* a header is a row of its own only when no job row follows it */
        if (prev == S_HEADER && shape != S_ROW && !push_row(out, rec, ns, ne, NULL))
            return -1;
        if (shape == S_SECTION)
            ns = cs, ne = ce;
        if ((shape == S_ROW || shape == S_NONE) && !push_row(out, rec, ns, ne, shape == S_ROW ? f : NULL))
            return -1;
        prev = shape;
    }
    if (prev != S_NONE && prev != S_HEADER && prev != S_ROW)
        goto refuse;
    if (prev == S_HEADER && !push_row(out, rec, ns, ne, NULL))
        return -1;
    return 1;
refuse:
    rewind_rows(out, &marks);
    return 0;
}

_Static_assert(sizeof(SectRows) == 2 * sizeof(I32s), "SectRows: I32s columns only (read_records)");

PyObject *section_rows(PyObject *self, PyObject *args)
{
    SectRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "sections", section_record, (I32s *)&out, 2);
}
