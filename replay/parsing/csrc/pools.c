/* The Scheduling Tables an RM prints when it starts (replay.parsing.pools): after the record's
 * "Scheduling Tables:", rule lines and per nodepool a block "Nodepool <name> depth <n>:", an
 * "Order" line and three rows (nMachinesByOrder, vMachinesByOrder, nSharesByOrder), one table row
 * each, its values as spans. Only the canonical shape is taken (printable ASCII, blank-separated
 * tokens); any other record is refused and goes to the grammar (lark), which decides.
 */
#include "scan.h"

enum { PF_N = 3 }; /* nodepool, depth, table_row */
enum { MAX_TOKENS = 512 };

typedef struct {
    I32s rec, span, counts, items;
} PoolRows;

static const char *const ROWS[] = {"nMachinesByOrder", "vMachinesByOrder", "nSharesByOrder"};
/* the grammar's words a nodepool's name might be lexed as: such a name is left to the grammar */
static const char *const KEYWORDS[] = {"Nodepool", "depth", "Order", "nMachinesByOrder", "vMachinesByOrder",
                                       "nSharesByOrder"};

static int int_token(const char *d, int32_t s, int32_t e) /* the grammar's INT, alone in its token */
{
    if (s < e && d[s] == '-')
        s++;
    if (s >= e)
        return 0;
    for (int32_t i = s; i < e; i++)
        if (!is_digit(d[i]))
            return 0;
    return 1;
}

static int rule_line(const char *d, const int32_t *ts, const int32_t *te, int n)
{
    if (n != 1 || te[0] - ts[0] < 2)
        return 0;
    for (int32_t k = ts[0]; k < te[0]; k++)
        if (d[k] != '-')
            return 0;
    return 1;
}

/* "Nodepool <name> depth <n>:" (or "<n> :"): the name's and the depth's spans */
static int block_line(const char *d, const int32_t *ts, const int32_t *te, int n, int32_t *span)
{
    if ((n != 4 && n != 5) || !is_lit(d, ts[0], te[0], "Nodepool") || !is_lit(d, ts[2], te[2], "depth"))
        return 0;
    for (size_t k = 0; k < sizeof(KEYWORDS) / sizeof(*KEYWORDS); k++)
        if (is_lit(d, ts[1], te[1], KEYWORDS[k]))
            return 0;
    for (int32_t k = ts[1]; k < te[1]; k++)
        if (d[k] == ':')
            return 0;
    int32_t de = n == 5 ? te[3] : te[3] - 1;
    if (n == 5 ? !is_lit(d, ts[4], te[4], ":") : d[de] != ':')
        return 0;
    if (!int_token(d, ts[3], de))
        return 0;
    span[0] = ts[1], span[1] = te[1], span[2] = ts[3], span[3] = de;
    return 1;
}

static int ints_after(const char *d, const int32_t *ts, const int32_t *te, int n)
{
    for (int i = 1; i < n; i++)
        if (!int_token(d, ts[i], te[i]))
            return 0;
    return 1;
}

static int table_row(const char *d, const int32_t *ts, const int32_t *te, int n)
{
    if (n < 1 || !ints_after(d, ts, te, n))
        return 0;
    for (int k = 0; k < 3; k++)
        if (is_lit(d, ts[0], te[0], ROWS[k]))
            return 1;
    return 0;
}

static int push_row(PoolRows *out, int32_t rec, const int32_t *span, int32_t count)
{
    if (!i32_push(&out->rec, rec) || !i32_push(&out->counts, count))
        return 0;
    for (int i = 0; i < 2 * PF_N; i++)
        if (!i32_push(&out->span, span[i]))
            return 0;
    return 1;
}

/* one block, its lines [i, i + 5): 1 taken, 0 not of the canonical shape, -1 out of memory */
static int pool_block(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t i, int32_t rec,
                      PoolRows *out)
{
    int32_t ts[MAX_TOKENS], te[MAX_TOKENS], span[2 * PF_N];
    int n = ascii_tokens(d, s[i], e[i], MAX_TOKENS, ts, te);
    if (n < 0 || !block_line(d, ts, te, n, span))
        return 0;
    n = ascii_tokens(d, s[i + 1], e[i + 1], MAX_TOKENS, ts, te);
    if (n < 1 || !is_lit(d, ts[0], te[0], "Order") || !ints_after(d, ts, te, n))
        return 0;
    for (Py_ssize_t k = i + 2; k < i + 5; k++) {
        n = ascii_tokens(d, s[k], e[k], MAX_TOKENS, ts, te);
        if (n < 0 || !table_row(d, ts, te, n))
            return 0;
        span[4] = ts[0], span[5] = te[0];
        if (!push_row(out, rec, span, n - 1))
            return -1;
        for (int t = 1; t < n; t++)
            if (!i32_push(&out->items, ts[t]) || !i32_push(&out->items, te[t]))
                return -1;
    }
    return 1;
}

/* one record's lines [a, b): 1 taken, 0 refused (its rows taken back), -1 out of memory */
static int pools_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b, int32_t rec,
                        void *rows)
{
    PoolRows *out = rows;
    RowMarks marks = MARK_ROWS(out);
    Py_ssize_t rows_before = out->rec.n;
    int32_t ts[MAX_TOKENS], te[MAX_TOKENS];
    while (b > a && blank_line(d, s[b - 1], e[b - 1])) /* trailing blank lines: the body is trimmed */
        b--;
    for (Py_ssize_t i = a; i < b;) {
        int n = ascii_tokens(d, s[i], e[i], MAX_TOKENS, ts, te);
        if (n < 0)
            goto refuse;
        if (rule_line(d, ts, te, n)) {
            i++;
            continue;
        }
        if (b - i < 5)
            goto refuse;
        int got = pool_block(d, s, e, i, rec, out);
        if (got < 0)
            return -1;
        if (!got)
            goto refuse;
        i += 5;
    }
    if (out->rec.n == rows_before) { /* no block: the grammar gives one row with no fields */
        int32_t none[2 * PF_N] = {-1, -1, -1, -1, -1, -1};
        if (!push_row(out, rec, none, -1))
            return -1;
    }
    return 1;
refuse:
    rewind_rows(out, &marks);
    return 0;
}

_Static_assert(sizeof(PoolRows) == 4 * sizeof(I32s), "PoolRows: I32s columns only (read_records)");

PyObject *pool_rows(PyObject *self, PyObject *args)
{
    PoolRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "pools", pools_record, (I32s *)&out, 4);
}
