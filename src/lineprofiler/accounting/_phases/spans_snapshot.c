/* The trace as Python objects (trace_snapshot): the spans kept in the ring, sorted by start (as a
 * list of tuples or as little-endian columns), the links, the threads, the entries still open
 * and the clock pairs. The block itself is spans.c's. */
#include "phases.h"

#include <stdlib.h>
#include <string.h>

/* trace_snapshot(columns=True): start_ns, end_ns, cpu_ns (8 bytes each), phase_id, thread (4) */
#define LP_SPAN_COLUMN_BYTES 32

/* The columns are little-endian whatever the host, as the live file's reader expects. */
static int64_t lp_le64(int64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (int64_t)__builtin_bswap64((uint64_t)v);
#else
    return v;
#endif
}

static int32_t lp_le32(int32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    return (int32_t)__builtin_bswap32((uint32_t)v);
#else
    return v;
#endif
}

static int lp_span_cmp(const void *a, const void *b)
{
    const lp_span *x = a, *y = b;
    if (x->start_ns != y->start_ns) {
        return x->start_ns < y->start_ns ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The ring's records whose seq is their number's, sorted by start: a malloc'd copy (NULL with
 * *kept 0 when there are none; NULL with an exception set when out of memory). */
static lp_span *lp_spans_sorted(lp_trace *tr, size_t *kept)
{
    int64_t recorded = tr->h.recorded;
    int64_t first = recorded > tr->capacity ? recorded - tr->capacity : 0;
    lp_span *ring = (lp_span *)(tr->mem + tr->h.off_spans);
    size_t n = (size_t)(recorded - first);
    *kept = 0;
    if (n == 0) {
        return NULL;
    }
    lp_span *copy = malloc(n * sizeof *copy);
    if (copy == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    size_t k = 0;
    for (int64_t i = first; i < recorded; i++) {
        lp_span *s = &ring[i % tr->capacity];
        if (s->seq == (uint32_t)(i + 1)) {
            copy[k++] = *s;
        }
    }
    if (k > 1) {
        qsort(copy, k, sizeof *copy, lp_span_cmp);
    }
    *kept = k;
    return copy;
}

/* The spans as a list of [start_ns, end_ns, phase_id, thread, cpu_ns] lists. */
static PyObject *lp_spans_list(const lp_span *copy, size_t k)
{
    PyObject *out = PyList_New((Py_ssize_t)k);
    for (size_t i = 0; out != NULL && i < k; i++) {
        /* built directly, not with Py_BuildValue: a full ring is a million numbers */
        PyObject *item = PyList_New(5);
        int64_t v[5] = {copy[i].start_ns, copy[i].end_ns, copy[i].phase_id, copy[i].thread, copy[i].cpu_ns};
        for (Py_ssize_t f = 0; item != NULL && f < 5; f++) {
            PyObject *n = PyLong_FromLongLong((long long)v[f]);
            if (n == NULL) {
                Py_CLEAR(item);
                break;
            }
            PyList_SET_ITEM(item, f, n);
        }
        if (item == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, (Py_ssize_t)i, item);
    }
    return out;
}

/* The spans as one bytes object of five little-endian columns, one after the other: start_ns,
 * end_ns and cpu_ns (int64), phase_id and thread (int32): 32 bytes a span, one copy, no object
 * per span (the report reads it with array.frombytes). */
static PyObject *lp_spans_columns(const lp_span *copy, size_t k)
{
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(k * LP_SPAN_COLUMN_BYTES));
    if (out == NULL) {
        return NULL;
    }
    /* memcpy, not stores through int64_t pointers: a bytes object's data need not be aligned */
    char *start = PyBytes_AS_STRING(out), *end = start + 8 * k, *cpu = end + 8 * k;
    char *phase = cpu + 8 * k, *thread = phase + 4 * k;
    for (size_t i = 0; i < k; i++) {
        int64_t wide[3] = {lp_le64(copy[i].start_ns), lp_le64(copy[i].end_ns), lp_le64(copy[i].cpu_ns)};
        int32_t narrow[2] = {lp_le32(copy[i].phase_id), lp_le32(copy[i].thread)};
        memcpy(start + 8 * i, &wide[0], 8);
        memcpy(end + 8 * i, &wide[1], 8);
        memcpy(cpu + 8 * i, &wide[2], 8);
        memcpy(phase + 4 * i, &narrow[0], 4);
        memcpy(thread + 4 * i, &narrow[1], 4);
    }
    return out;
}

/* A link's kind as the worker file spells it: "signal", "wait", "begin", "end", or "mark:NAME"
 * for a mark, whose channel text holds "channel\x1fNAME" (*channel_len is cut to the channel). */
static PyObject *lp_link_kind(const lp_link *l, Py_ssize_t *channel_len)
{
    static const char *const names[LP_LINK_KINDS] = {"signal", "wait", "begin", "mark", "end"};
    if (l->kind != LP_LINK_MARK) {
        return PyUnicode_FromString(l->kind < LP_LINK_KINDS ? names[l->kind] : "signal");
    }
    const char *sep = memchr(l->channel, LP_MARK_SEPARATOR, l->channel_len);
    Py_ssize_t at = sep != NULL ? sep - l->channel : l->channel_len;
    *channel_len = at;
    const char *name = sep != NULL ? sep + 1 : "";
    Py_ssize_t name_len = sep != NULL ? (Py_ssize_t)l->channel_len - at - 1 : 0;
    PyObject *text = PyUnicode_DecodeUTF8(name, name_len, "replace");
    if (text == NULL) {
        return NULL;
    }
    PyObject *kind = PyUnicode_FromFormat("mark:%U", text);
    Py_DECREF(text);
    return kind;
}

static PyObject *lp_links_list(lp_trace *tr, Py_ssize_t *kept)
{
    int64_t recorded = tr->h.links_recorded;
    int64_t first = recorded > tr->link_capacity ? recorded - tr->link_capacity : 0;
    lp_link *ring = (lp_link *)(tr->mem + tr->h.off_links);
    PyObject *out = PyList_New(0);
    for (int64_t i = first; out != NULL && i < recorded; i++) {
        lp_link copy = ring[i % tr->link_capacity]; /* building objects may run a finalizer's link */
        lp_link *l = &copy;
        if (l->seq != (uint32_t)(i + 1)) {
            continue;
        }
        Py_ssize_t channel_len = l->channel_len;
        PyObject *kind = lp_link_kind(l, &channel_len);
        PyObject *item =
            kind == NULL ? NULL
                         : Py_BuildValue("[Ns#s#Lii]", kind, l->channel, channel_len, l->key,
                                         (Py_ssize_t)l->key_len, (long long)l->t_ns, l->thread, l->phase_id);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    *kept = out != NULL ? PyList_GET_SIZE(out) : 0;
    return out;
}

static PyObject *lp_threads_list(lp_trace *tr)
{
    PyObject *out = PyList_New(0);
    lp_trace_thread *table = (lp_trace_thread *)(tr->mem + tr->h.off_threads);
    for (int32_t i = 0; out != NULL && i < tr->h.n_threads; i++) {
        lp_trace_thread t = table[i];
        PyObject *name = PyUnicode_DecodeUTF8(t.name, (Py_ssize_t)t.name_len, "replace");
        PyObject *item = name == NULL ? NULL
                                      : Py_BuildValue("{s:L,s:L,s:O}", "ident", (long long)t.ident,
                                                      "native_id", (long long)t.native_id, "name", name);
        Py_XDECREF(name);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    return out;
}

/* The entries still open on every stack (their own frames, not the copies a flow inherited). */
static PyObject *lp_open_list(lp_RecorderObject *rec)
{
    /* Gathered first: building objects can run a finalizer that enters a phase (and moves frames). */
    size_t n = 0, cap = 0;
    int64_t(*open)[3] = NULL;
    for (lp_StackObject *ts = rec->st->stacks; ts != NULL; ts = ts->next) {
        for (int32_t i = ts->n_base; i < ts->depth; i++) {
            lp_frame *f = &ts->frames[i];
            if (f->phase->rec != rec || f->gen != rec->gen || f->tthread < 0 || f->t0 == LP_T0_PENDING) {
                continue;
            }
            if (n == cap) {
                cap = cap ? 2 * cap : 64;
                int64_t(*more)[3] = realloc(open, cap * sizeof *open);
                if (more == NULL) {
                    free(open);
                    return PyErr_NoMemory();
                }
                open = more;
            }
            open[n][0] = f->t0;
            open[n][1] = f->node_id;
            open[n][2] = f->tthread;
            n++;
        }
    }
    PyObject *out = PyList_New(0);
    for (size_t k = 0; out != NULL && k < n; k++) {
        PyObject *item =
            Py_BuildValue("[LLL]", (long long)open[k][0], (long long)open[k][1], (long long)open[k][2]);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    free(open);
    if (out != NULL && PyList_Sort(out) < 0) {
        Py_CLEAR(out);
    }
    return out;
}

static PyObject *lp_pairs_list(lp_trace *tr)
{
    int32_t n = tr->h.n_pairs;
    int32_t kept = n < LP_TRACE_PAIRS ? n : LP_TRACE_PAIRS;
    PyObject *out = PyList_New(0);
    for (int32_t k = 0; out != NULL && k < kept; k++) {
        /* oldest first: the first pair, then the ring from its oldest slot */
        int32_t slot = k == 0 || n <= LP_TRACE_PAIRS
                           ? k
                           : 1 + ((n - 1) % (LP_TRACE_PAIRS - 1) + k - 1) % (LP_TRACE_PAIRS - 1);
        PyObject *item = Py_BuildValue("[LLL]", (long long)tr->h.pairs[slot][0],
                                       (long long)tr->h.pairs[slot][1], (long long)tr->h.pairs[slot][2]);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_CLEAR(out);
            break;
        }
        Py_DECREF(item);
    }
    return out;
}

/* trace_snapshot(columns=False) -> the worker document's "trace" section, or None when tracing is
 * off. Its "spans" are a list of rows, or with columns=True one bytes object (lp_spans_columns). */
PyObject *lp_recorder_trace_snapshot(lp_RecorderObject *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"columns", NULL};
    int columns = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:trace_snapshot", keywords, &columns)) {
        return NULL;
    }
    lp_trace *tr = self->trace;
    if (tr == NULL) {
        Py_RETURN_NONE;
    }
    lp_trace_rename_threads(tr);
    Py_ssize_t n_spans = 0, n_links = 0;
    PyObject *pairs = lp_pairs_list(tr);
    PyObject *threads = lp_threads_list(tr);
    size_t kept = 0;
    lp_span *sorted = lp_spans_sorted(tr, &kept);
    PyObject *spans = NULL;
    if (sorted != NULL || !PyErr_Occurred()) {
        spans = columns ? lp_spans_columns(sorted, kept) : lp_spans_list(sorted, kept);
        n_spans = (Py_ssize_t)kept;
    }
    free(sorted);
    PyObject *open = lp_open_list(self);
    PyObject *links = lp_links_list(tr, &n_links);
    PyObject *out = NULL;
    if (pairs && threads && spans && open && links) {
        out = Py_BuildValue(
            "{s:s,s:O,s:L,s:L,s:L,s:O,s:O,s:O,s:L,s:L,s:L,s:O,s:L,s:L,s:L,s:L}", "clock", "monotonic",
            "clock_pairs", pairs, "capacity", (long long)tr->capacity, "recorded", (long long)tr->h.recorded,
            "dropped", (long long)(tr->h.recorded - n_spans), "threads", threads, "spans", spans, "open",
            open, "links_capacity", (long long)tr->link_capacity, "links_recorded",
            (long long)tr->h.links_recorded, "links_dropped", (long long)(tr->h.links_recorded - n_links),
            "links", links, "links_truncated", (long long)tr->h.links_truncated, "spans_unthreaded",
            (long long)tr->h.spans_unthreaded, "open_unshown", (long long)tr->h.stacks_unshown,
            "links_unthreaded", (long long)tr->h.links_unthreaded);
    }
    Py_XDECREF(pairs);
    Py_XDECREF(threads);
    Py_XDECREF(spans);
    Py_XDECREF(open);
    Py_XDECREF(links);
    return out;
}
