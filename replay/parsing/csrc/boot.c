/* The two bootstrap families the templates cannot spell (replay.parsing.boot_scan): a pool's node list
 * under its "Node File:" line (np_nodes, "<None>" or node names over one or more lines) and the JD
 * host line (jd_host_class, one terminal with a blank inside). Only the canonical shapes are taken
 * (printable ASCII, blank-separated tokens the grammar's lexer reads whole); any other record is
 * refused and goes to the polars handler or regex (replay/parsing/fast.py _np_nodes, REGEXES), then
 * to the grammar, which decides.
 */
#include "scan.h"

typedef struct {
    I32s rec, counts, items;
} NodeRows;

typedef struct {
    I32s rec, span;
} JdRows;

/* a token the grammar's nodes_list reads as one WORD or INT (fast.py _NODE_TOKEN): an integer, or a
 * token that starts with neither a digit nor '-' followed by a digit ("12," would be INT and WORD) */
static int node_token(const char *d, int32_t s, int32_t e)
{
    int32_t i = s + (d[s] == '-');
    if (i == e || !is_digit(d[i]))
        return 1;
    for (; i < e; i++)
        if (!is_digit(d[i]))
            return 0;
    return 1;
}

/* one np_nodes record, its body's line then its continuation lines [a, b): 1 taken, 0 refused (its
 * items taken back), -1 out of memory */
static int nodes_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b,
                        int32_t rec, void *rows)
{
    NodeRows *out = rows;
    RowMarks marks = MARK_ROWS(out);
    int32_t count = 0;
    for (Py_ssize_t i = a; i < b; i++) {
        for (int32_t k = s[i]; k < e[i];) {
            if (d[k] < 0x20 || d[k] > 0x7e) /* a tab, CR or any byte the handler's lexing may split otherwise */
                goto refuse;
            if (d[k] == ' ') {
                k++;
                continue;
            }
            int32_t t = k;
            while (k < e[i] && d[k] > 0x20 && d[k] <= 0x7e)
                k++;
            if (k < e[i] && d[k] != ' ')
                goto refuse;
            if (i == a && count == 0 && k - t >= 6 && memcmp(d + t, "<None>", 6) == 0) {
                if (k - t > 6) /* "<None>x": the grammar's "<None>" then a word */
                    goto refuse;
                count = -1; /* "<None>": a row with no list, if nothing follows */
                continue;
            }
            if (count < 0 || !node_token(d, t, k))
                goto refuse;
            if (!i32_push(&out->items, t) || !i32_push(&out->items, k))
                return -1;
            count++;
        }
        if (i == a && count == 0) /* a first line with no token: the list starts on a later one */
            goto refuse;
    }
    return i32_push(&out->rec, rec) && i32_push(&out->counts, count) ? 1 : -1;
refuse:
    rewind_rows(out, &marks);
    return 0;
}

/* one jd_host_class body "jd.host.class=X jd.host.user=Y" (the grammar's JD_HOST: X and Y one or more
 * non-blank bytes, one space between): 1 taken, 0 refused, -1 out of memory */
static int jd_record(const char *d, const int32_t *s, const int32_t *e, Py_ssize_t a, Py_ssize_t b, int32_t rec,
                     void *rows)
{
    static const char CLASS[] = "jd.host.class=", USER[] = "jd.host.user=";
    JdRows *out = rows;
    if (b - a != 1)
        return 0;
    int32_t i = s[a], end = e[a], space = -1;
    for (int32_t k = i; k < end; k++) {
        if (d[k] < 0x20 || d[k] > 0x7e)
            return 0;
        if (d[k] == ' ') {
            if (space >= 0)
                return 0;
            space = k;
        }
    }
    int32_t nc = (int32_t)sizeof(CLASS) - 1, nu = (int32_t)sizeof(USER) - 1;
    if (space < i + nc + 1 || memcmp(d + i, CLASS, (size_t)nc) != 0 || end < space + 1 + nu + 1
        || memcmp(d + space + 1, USER, (size_t)nu) != 0)
        return 0;
    return i32_push(&out->rec, rec) && i32_push(&out->span, i) && i32_push(&out->span, end) ? 1 : -1;
}

_Static_assert(sizeof(NodeRows) == 3 * sizeof(I32s), "NodeRows: I32s columns only (read_records)");
_Static_assert(sizeof(JdRows) == 2 * sizeof(I32s), "JdRows: I32s columns only (read_records)");

PyObject *node_rows(PyObject *self, PyObject *args)
{
    NodeRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "nodes", nodes_record, (I32s *)&out, 3);
}

PyObject *jd_host_rows(PyObject *self, PyObject *args)
{
    JdRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "jd_host", jd_record, (I32s *)&out, 2);
}
