/* schedule(): the rows of createState structures (see module.c) */
#include "arrow.h"

/* ---- the published schedule --------------------------------------------------------------- */

/* createState's Orchestrator structure follows its header as continuation lines, per job:
 *   "<work_type> <job_id> <memory>GB[ <reason>]"   then three share lists, each
 *   "\t(Existing|Additions|Removals)[<n>]: <host>.<share>^<init>[^P] ..."  (maybe wrapped on
 *   "\t <share> ..." lines), or "<work_type> <job_id>" then "\tRefused: <reason>".
 * schedule() takes the records whose every line has exactly these shapes (printable ASCII, one
 * space inside the job header, every share token whole) and gives the rows replay/parsing/fast.py's
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
                           int32_t rec, void *rows)
{
    SchedRows *out = rows;
    static const char *kinds[] = {"Existing[", "Additions[", "Removals["};
    RowMarks marks = MARK_ROWS(out);
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
    rewind_rows(out, &marks);
    return 0;
}

_Static_assert(sizeof(SchedRows) == 4 * sizeof(I32s), "SchedRows: I32s columns only (read_records)");

PyObject *schedule_rows(PyObject *self, PyObject *args)
{
    SchedRows out;
    (void)self;
    memset(&out, 0, sizeof(out));
    return read_records(args, "schedule", schedule_record, (I32s *)&out, 4);
}

/* ---- the schedule table's rows ------------------------------------------------------------- */

/* schedule_keep(data, spans, rec) -> (keep int32, job int64) or None: of schedule()'s rows (their
 * SF_N spans, their records), the ones the schedule table keeps, as replay/parsing/steps.py's
 * `schedule` keeps them: per record and job (a job typed from its span, 0 where it has none), its
 * rows with a share, else its first row; and every row's job. None: a job that is no integer. */
PyObject *schedule_keep(PyObject *self, PyObject *args)
{
    Py_buffer in, sp, rb;
    if (!PyArg_ParseTuple(args, "y*y*y*", &in, &sp, &rb))
        return NULL;
    Py_ssize_t n = rb.len / 4, kept = 0, groups = 0;
    PyObject *out = NULL;
    int64_t *job = PyMem_RawMalloc((size_t)(n + 1) * sizeof(int64_t));
    int32_t *gid = PyMem_RawMalloc((size_t)(n + 1) * sizeof(int32_t)), *keep = PyMem_RawMalloc((size_t)(n + 1) * 4);
    int32_t *first = NULL;
    uint8_t *ok = PyMem_RawMalloc((size_t)(n + 1)), *shared = NULL;
    int status = 1;  /* 1 done, 0 a job refused, -1 out of memory */
    if (sp.len != n * SF_N * 8) {
        PyErr_SetString(PyExc_ValueError, "schedule_keep: a row of spans per record number");
        goto done;
    }
    if (!job || !gid || !keep || !ok) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const char *d = in.buf;
    const int32_t *s = sp.buf;
    for (Py_ssize_t r = 0; r < n && status == 1; r++) {
        const int32_t *j = s + r * 2 * SF_N + 2 * SF_JOB;
        ok[r] = 1, job[r] = 0;
        if (j[0] >= 0 && !int_value(d + j[0], j[1] - j[0], &job[r]))
            status = 0;
    }
    if (status == 1 && (groups = group_ids(n, rb.buf, job, ok, gid)) < 0)
        status = -1;
    if (status == 1 && (!(first = PyMem_RawMalloc((size_t)(groups + 1) * 4))
                        || !(shared = PyMem_RawCalloc((size_t)groups + 1, 1))))
        status = -1;
    if (status == 1) {
        memset(first, 0xff, (size_t)(groups + 1) * 4);  /* -1: no row yet */
        for (Py_ssize_t r = 0; r < n; r++) {
            shared[gid[r]] |= s[r * 2 * SF_N + 2 * SF_HOST] >= 0;
            if (first[gid[r]] < 0)
                first[gid[r]] = (int32_t)r;
        }
        for (Py_ssize_t r = 0; r < n; r++)
            if (s[r * 2 * SF_N + 2 * SF_HOST] >= 0 || (!shared[gid[r]] && first[gid[r]] == r))
                keep[kept++] = (int32_t)r;
    }
    Py_END_ALLOW_THREADS
    if (status == -1)
        PyErr_NoMemory();
    else if (status == 0)
        out = Py_NewRef(Py_None);
    else {
        PyObject *k = bytes_of(keep, 4 * kept), *j = own_buffer(job, 8 * n);
        job = NULL;
        if (k && j)
            out = PyTuple_Pack(2, k, j);
        Py_XDECREF(k), Py_XDECREF(j);
    }
done:
    PyMem_RawFree(job), PyMem_RawFree(gid), PyMem_RawFree(keep), PyMem_RawFree(first), PyMem_RawFree(ok);
    PyMem_RawFree(shared);
    PyBuffer_Release(&in), PyBuffer_Release(&sp), PyBuffer_Release(&rb);
    return out;
}
