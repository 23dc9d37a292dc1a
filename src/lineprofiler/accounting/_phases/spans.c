/* The trace: every closed phase entry as an exact span (the same clock reads the totals use),
 * and the links signal()/wait_on() make, each in a fixed-capacity ring, so memory stays flat
 * however long the run; the oldest are overwritten and counted.
 *
 * The block: a header (lp_trace_header: layout and counts), the thread table, the open tables
 * (one per flow of control: its entries still open), the span ring and the link ring. The
 * recorder keeps it in private memory, which the snapshots read; while a live file is attached,
 * a copy of it is a segment of that file (live.c maps it), written at every store and never read
 * back, so the newest spans and the entries open at a SIGKILL are in the page cache. The private
 * block needs no open tables (a snapshot walks the stacks), but has the same layout, so attaching
 * is one copy.
 *
 * The stacks are shared by all recorders and each keeps one open table: that of the recorder
 * that traced on it last. Several recorders may trace at once (their spans are exact); the live
 * files' open tables are exact for one at a time (a profiler is closed before the next starts).
 * The module state's tracer is the one recording that started last: it frees a dead stack's table.
 * The trace as Python objects (trace_snapshot) is spans_snapshot.c's. */
#include "phases.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define LP_TRACE_MAGIC 0x5254504Cu /* "LPTR" */

_Static_assert(sizeof(lp_trace_header) <= LP_TRACE_HEADER, "the trace header outgrew its bytes");
_Static_assert(LP_TRACE_THREADS < 32768, "an open entry keeps its thread in an int16");
_Static_assert((LP_TRACE_THREAD_HASH & (LP_TRACE_THREAD_HASH - 1)) == 0 &&
                   LP_TRACE_THREAD_HASH > LP_TRACE_THREADS,
               "the thread lookup is a power of two with room to spare");

/* ===================================================================== the block */

static size_t lp_round(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static void lp_trace_layout(lp_trace_header *h, int64_t capacity, int64_t link_capacity)
{
    memset(h, 0, sizeof *h);
    h->magic = LP_TRACE_MAGIC;
    h->header_bytes = LP_TRACE_HEADER;
    h->span_bytes = sizeof(lp_span);
    h->link_bytes = sizeof(lp_link);
    h->thread_bytes = sizeof(lp_trace_thread);
    h->stack_bytes = sizeof(lp_open_stack);
    h->span_capacity = (uint32_t)capacity;
    h->link_capacity = (uint32_t)link_capacity;
    h->thread_capacity = LP_TRACE_THREADS;
    h->stack_capacity = LP_TRACE_STACKS;
    h->open_depth = LP_TRACE_OPEN_DEPTH;
    h->text_bytes = LP_TRACE_TEXT;
    h->thread_name_bytes = LP_TRACE_THREAD_NAME;
    h->pair_capacity = LP_TRACE_PAIRS;
    size_t off = LP_TRACE_HEADER;
    h->off_threads = off;
    off += lp_round(LP_TRACE_THREADS * sizeof(lp_trace_thread), 64);
    h->off_stacks = off;
    off += lp_round(LP_TRACE_STACKS * sizeof(lp_open_stack), 64);
    h->off_spans = off;
    off += lp_round((size_t)capacity * sizeof(lp_span), 64);
    h->off_links = off;
}

static size_t lp_trace_size(const lp_trace_header *h)
{
    return (size_t)h->off_links + lp_round((size_t)h->link_capacity * sizeof(lp_link), 64);
}

size_t lp_trace_block_bytes(lp_RecorderObject *rec)
{
    return rec->trace != NULL ? rec->trace->bytes : 0;
}

/* The header's counts into the blocks (the private counts are the only ones read). */
static void lp_trace_publish(lp_trace *tr)
{
    memcpy(tr->mem, &tr->h, sizeof tr->h);
    if (tr->file != NULL) {
        lp_trace_header *f = (lp_trace_header *)tr->file;
        memcpy((char *)f + sizeof(uint32_t), (char *)&tr->h + sizeof(uint32_t),
               sizeof tr->h - sizeof(uint32_t));
        __atomic_store_n(&f->magic, LP_TRACE_MAGIC, __ATOMIC_RELEASE);
    }
}

static void *lp_trace_map(size_t bytes)
{
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? NULL : m;
}

void lp_trace_free(lp_RecorderObject *rec)
{
    lp_trace *tr = rec->trace;
    if (tr == NULL) {
        return;
    }
    rec->trace = NULL;
    if (rec->st != NULL && rec->st->tracer == rec) {
        rec->st->tracer = NULL;
    }
    (void)munmap(tr->mem, tr->bytes);
    PyMem_Free(tr);
}

/* The open tables start over: every stack claims a table again at its next traced entry. */
void lp_trace_forget_stacks(lp_RecorderObject *rec)
{
    lp_trace *tr = rec->trace;
    if (tr == NULL) {
        return;
    }
    tr->epoch = ++rec->st->trace_epochs;
    if (tr->file != NULL) {
        /* only the tables claimed: the others are zero already (a stack's table is cleared when
         * it dies), and an untouched page of the file stays a hole */
        lp_open_stack *tables = (lp_open_stack *)(tr->file + tr->h.off_stacks);
        for (int i = 0; i < LP_TRACE_STACKS; i++) {
            if (tr->stack_used[i]) {
                __atomic_store_n(&tables[i].depth, 0, __ATOMIC_RELEASE);
                tables[i].in_use = 0;
            }
        }
    }
    memset(tr->stack_used, 0, sizeof tr->stack_used);
    tr->stack_hint = 0;
}

/* The parts of a block that hold records (the header, the thread rows in use, the ring slots
 * written), copied from `src`, or zeroed where `src` is NULL: a block's other pages were never
 * written, and touching them would give a sparse live file disk blocks it does not need. The
 * open tables are the stacks' to write (lp_trace_stack_sync, lp_trace_forget_stacks). */
static void lp_trace_used_parts(const lp_trace *tr, char *dst, const char *src)
{
    const lp_trace_header *h = &tr->h;
    int64_t spans = h->recorded < tr->capacity ? h->recorded : tr->capacity;
    int64_t links = h->links_recorded < tr->link_capacity ? h->links_recorded : tr->link_capacity;
    size_t parts[4][2] = {
        {0, LP_TRACE_HEADER},
        {(size_t)h->off_threads, (size_t)h->n_threads * sizeof(lp_trace_thread)},
        {(size_t)h->off_spans, (size_t)spans * sizeof(lp_span)},
        {(size_t)h->off_links, (size_t)links * sizeof(lp_link)},
    };
    for (int p = 0; p < 4; p++) {
        if (src != NULL) {
            memcpy(dst + parts[p][0], src + parts[p][0], parts[p][1]);
        } else {
            memset(dst + parts[p][0], 0, parts[p][1]);
        }
    }
}

static void lp_trace_pair_into(lp_trace *tr);

/* Empties the rings and the thread table (reset(), and a fork child's first act). */
void lp_trace_reset(lp_RecorderObject *rec)
{
    lp_trace *tr = rec->trace;
    if (tr == NULL) {
        return;
    }
    lp_trace_forget_stacks(rec);
    if (tr->file != NULL) {
        lp_trace_used_parts(tr, tr->file, NULL);
    }
    /* the private pages back to the kernel: they read as zero, and cost nothing until written */
    if (madvise(tr->mem, tr->bytes, MADV_DONTNEED) != 0) {
        memset(tr->mem, 0, tr->bytes);
    }
    lp_trace_layout(&tr->h, tr->capacity, tr->link_capacity);
    tr->next = tr->next_link = 0;
    tr->tkey = 0;
    tr->tidx = -1;
    memset(tr->thread_keys, 0, sizeof tr->thread_keys);
    memset(tr->thread_hash, 0, sizeof tr->thread_hash);
    lp_trace_pair_into(tr);
    lp_trace_publish(tr);
}

/* Attached: the block's copy in the live file, from now on written at every store. Every stack
 * shows its open entries there at once. */
void lp_trace_to_file(lp_RecorderObject *rec, char *block)
{
    lp_trace *tr = rec->trace;
    if (tr == NULL) {
        return;
    }
    /* the magic stays zero until lp_trace_publish: a reader never takes a block half copied */
    uint32_t magic = ((lp_trace_header *)tr->mem)->magic;
    ((lp_trace_header *)tr->mem)->magic = 0;
    lp_trace_used_parts(tr, block, tr->mem);
    ((lp_trace_header *)tr->mem)->magic = magic;
    tr->file = block;
    lp_trace_forget_stacks(rec);
    for (lp_StackObject *ts = rec->st->stacks; ts != NULL; ts = ts->next) {
        lp_trace_stack_sync(rec, ts, 1);
    }
    lp_trace_publish(tr);
}

/* Detached: the copy is let go (the private block always had everything). */
void lp_trace_from_file(lp_RecorderObject *rec)
{
    if (rec->trace != NULL) {
        rec->trace->file = NULL;
    }
}

/* ===================================================================== threads */

/* The thread's name as threading knows it (its Thread's _name: a plain attribute, no code runs),
 * or nothing for a thread threading never saw. */
static void lp_thread_name(lp_trace_thread *t, unsigned long ident)
{
    PyObject *saved = lp_err_take();
    PyObject *modules = PyImport_GetModuleDict();
    PyObject *threading = modules != NULL ? PyDict_GetItemString(modules, "threading") : NULL;
    PyObject *active = threading != NULL ? PyObject_GetAttrString(threading, "_active") : NULL;
    PyObject *key = PyLong_FromUnsignedLong(ident);
    PyObject *thread =
        active != NULL && key != NULL && PyDict_Check(active) ? PyDict_GetItemWithError(active, key) : NULL;
    PyObject *name = thread != NULL ? PyObject_GetAttrString(thread, "_name") : NULL;
    Py_ssize_t n = 0;
    const char *utf8 = name != NULL && PyUnicode_Check(name) ? PyUnicode_AsUTF8AndSize(name, &n) : NULL;
    if (utf8 != NULL) {
        if (n > LP_TRACE_THREAD_NAME) {
            n = LP_TRACE_THREAD_NAME;
            while (n > 0 && ((unsigned char)utf8[n] & 0xC0) == 0x80) {
                n--;
            }
        }
        memcpy(t->name, utf8, (size_t)n);
        t->name_len = (uint32_t)n;
    }
    Py_XDECREF(name);
    Py_XDECREF(key);
    Py_XDECREF(active);
    PyErr_Clear();
    lp_err_restore(saved);
}

static void lp_thread_store(lp_trace *tr, int32_t i, const lp_trace_thread *t)
{
    size_t off = (size_t)tr->h.off_threads + (size_t)i * sizeof(lp_trace_thread);
    memcpy(tr->mem + off, t, sizeof *t);
    if (tr->file != NULL) {
        lp_trace_thread *f = (lp_trace_thread *)(tr->file + off);
        uint32_t seq = f->seq;
        __atomic_store_n(&f->seq, seq | 1u, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        f->ident = t->ident;
        f->native_id = t->native_id;
        f->name_len = t->name_len;
        memcpy(f->name, t->name, sizeof f->name);
        __atomic_store_n(&f->seq, (seq | 1u) + 1, __ATOMIC_RELEASE);
    }
}

/* A thread not seen last: found in the table (a hash of its key: thousands of threads switch in
 * turn), or added to it. */
int32_t lp_trace_thread_slow(lp_RecorderObject *rec, PyThreadState *tstate)
{
    lp_trace *tr = rec->trace;
    uint64_t key = (uint64_t)tstate->id + 1;
    uint32_t mask = LP_TRACE_THREAD_HASH - 1;
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & mask;
    int32_t i = -1;
    while (tr->thread_hash[h] != 0) {
        if (tr->thread_keys[tr->thread_hash[h] - 1] == key) {
            i = tr->thread_hash[h] - 1;
            break;
        }
        h = (h + 1) & mask;
    }
    if (i < 0) {
        if (tr->h.n_threads == LP_TRACE_THREADS) {
            return -1; /* the table never fills the lookup, so the probe above ended */
        }
        /* the row is the thread's before its name is read: reading it may run code that enters
         * a phase on this thread, which must find this row, not add another */
        i = tr->h.n_threads;
        tr->thread_hash[h] = i + 1;
        tr->thread_keys[i] = key;
        tr->h.n_threads = i + 1;
        lp_trace_thread t;
        memset(&t, 0, sizeof t);
        unsigned long ident = PyThread_get_thread_ident();
        t.ident = (int64_t)ident;
        t.native_id = (int64_t)PyThread_get_thread_native_id();
        lp_thread_name(&t, ident);
        lp_thread_store(tr, i, &t);
        lp_trace_publish(tr);
    }
    tr->tkey = key;
    tr->tidx = i;
    return i;
}

/* Names given or changed since a thread's first span, from threading (at each snapshot). */
void lp_trace_rename_threads(lp_trace *tr)
{
    for (int32_t i = 0; i < tr->h.n_threads; i++) {
        lp_trace_thread *old = (lp_trace_thread *)(tr->mem + tr->h.off_threads) + i;
        lp_trace_thread t = *old;
        t.name_len = 0;
        memset(t.name, 0, sizeof t.name);
        lp_thread_name(&t, (unsigned long)t.ident);
        if (t.name_len != 0 && (t.name_len != old->name_len || memcmp(t.name, old->name, t.name_len) != 0)) {
            lp_thread_store(tr, i, &t);
        }
    }
}

/* ===================================================================== open tables */

static int32_t lp_claim_table(lp_trace *tr)
{
    for (int k = 0; k < LP_TRACE_STACKS; k++) {
        int32_t i = (tr->stack_hint + k) % LP_TRACE_STACKS;
        if (!tr->stack_used[i]) {
            tr->stack_used[i] = 1;
            tr->stack_hint = (i + 1) % LP_TRACE_STACKS;
            return i;
        }
    }
    tr->h.stacks_unshown++;
    return -1;
}

static void lp_open_store(lp_open_stack *os, int32_t level, const lp_frame *f, int inherited)
{
    if (level < LP_TRACE_OPEN_DEPTH) {
        lp_open_entry *e = &os->entries[level];
        e->start_ns = f->t0;
        e->phase_id = f->node_id;
        e->thread = (int16_t)f->tthread;
        e->inherited = (int16_t)inherited;
    }
}

/* The stack's open table written whole from its frames, and each live frame's level set: after
 * a repair moved frames, and when the stack first claims a table in this epoch (may_claim). */
void lp_trace_stack_sync(lp_RecorderObject *rec, lp_StackObject *ts, int may_claim)
{
    lp_trace *tr = rec->trace;
    if (tr == NULL) {
        return;
    }
    if (ts->trace_epoch != tr->epoch) {
        if (!may_claim) {
            return;
        }
        ts->trace_epoch = tr->epoch;
        ts->trace_slot = tr->file != NULL ? lp_claim_table(tr) : -1;
    }
    lp_open_stack *os =
        ts->trace_slot >= 0 ? (lp_open_stack *)(tr->file + tr->h.off_stacks) + ts->trace_slot : NULL;
    int32_t level = 0;
    for (int32_t i = 0; i < ts->depth; i++) {
        lp_frame *f = &ts->frames[i];
        if (f->phase->rec != rec || f->gen != rec->gen) {
            continue;
        }
        f->tlevel = level;
        if (os != NULL) {
            lp_open_store(os, level, f, i < ts->n_base);
        }
        level++;
    }
    if (os != NULL) {
        os->in_use = 1;
        __atomic_store_n(&os->depth, level, __ATOMIC_RELEASE);
    }
}

/* A traced entry opened in frame `idx` (its t0 read) on `thread` (its index, looked up before the
 * frame was pushed): its level and its open entry. Runs no Python code. */
void lp_trace_enter(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int32_t parent_idx,
                    int32_t thread)
{
    lp_trace *tr = rec->trace;
    lp_frame *f = &ts->frames[idx];
    f->tthread = thread;
    if (LP_UNLIKELY(f->tthread < 0)) {
        tr->h.spans_unthreaded++; /* a thread past the table: its entry is counted, not kept */
    }
    if (LP_UNLIKELY(ts->trace_epoch != tr->epoch)) {
        lp_trace_stack_sync(rec, ts, 1);
        return;
    }
    int32_t level = parent_idx >= 0 ? ts->frames[parent_idx].tlevel + 1 : 0;
    f->tlevel = level;
    if (ts->trace_slot >= 0) {
        lp_open_stack *os = (lp_open_stack *)(tr->file + tr->h.off_stacks) + ts->trace_slot;
        lp_open_store(os, level, f, 0);
        __atomic_store_n(&os->depth, level + 1, __ATOMIC_RELEASE);
    }
}

void lp_trace_stack_gone(lp_state *st, lp_StackObject *ts)
{
    lp_RecorderObject *rec = st->tracer;
    if (rec == NULL || rec->trace == NULL || ts->trace_epoch != rec->trace->epoch || ts->trace_slot < 0) {
        return;
    }
    lp_trace *tr = rec->trace;
    tr->stack_used[ts->trace_slot] = 0;
    if (tr->file != NULL) {
        lp_open_stack *os = (lp_open_stack *)(tr->file + tr->h.off_stacks) + ts->trace_slot;
        __atomic_store_n(&os->depth, 0, __ATOMIC_RELEASE);
        os->in_use = 0;
    }
    ts->trace_slot = -1;
}

/* ===================================================================== clocks and links */

static void lp_trace_pair_into(lp_trace *tr)
{
    int64_t m0 = lp_monotonic_ns();
    int64_t real = lp_realtime_ns();
    int64_t m1 = lp_monotonic_ns();
    int32_t n = tr->h.n_pairs;
    /* the first pair stays; the newest overwrite the rest in turn */
    int32_t slot = n < LP_TRACE_PAIRS ? n : 1 + (n - 1) % (LP_TRACE_PAIRS - 1);
    tr->h.pairs[slot][0] = m0 + (m1 - m0) / 2;
    tr->h.pairs[slot][1] = real;
    tr->h.pairs[slot][2] = m1 - m0;
    tr->h.n_pairs = n + 1;
}

/* trace_clock_pair(): CLOCK_MONOTONIC and CLOCK_REALTIME read back to back, kept in the block. */
PyObject *lp_recorder_trace_clock_pair(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->trace != NULL) {
        lp_trace_pair_into(self->trace);
        lp_trace_publish(self->trace);
    }
    Py_RETURN_NONE;
}

/* UTF-8 of `text`, cut at a character boundary to LP_TRACE_TEXT bytes; returns 1 when cut. */
static int lp_link_text(char *dst, uint8_t *len, PyObject *text)
{
    Py_ssize_t n = 0;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
    if (utf8 == NULL) {
        PyErr_Clear(); /* a lone surrogate */
        dst[0] = '?';
        *len = 1;
        return 1;
    }
    int cut = n > LP_TRACE_TEXT;
    if (cut) {
        n = LP_TRACE_TEXT;
        while (n > 0 && ((unsigned char)utf8[n] & 0xC0) == 0x80) {
            n--;
        }
    }
    memcpy(dst, utf8, (size_t)n);
    *len = (uint8_t)n;
    return cut;
}

static void lp_link_store(lp_link *dst, const lp_link *l)
{
    __atomic_store_n(&dst->seq, 0u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy((char *)dst + sizeof(int64_t) + sizeof(uint32_t),
           (const char *)l + sizeof(int64_t) + sizeof(uint32_t),
           sizeof *l - sizeof(int64_t) - sizeof(uint32_t));
    dst->t_ns = l->t_ns;
    __atomic_store_n(&dst->seq, l->seq, __ATOMIC_RELEASE);
}

/* trace_link(kind, channel, key): a signal (0), the end of a wait (1), or a lifecycle's begin (2),
 * mark (3) or end (4), now, on this thread, under its innermost open phase. Never raises for the
 * user's values: the caller made them str. */
PyObject *lp_recorder_trace_link(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyLong_Check(args[0]) || !PyUnicode_Check(args[1]) || !PyUnicode_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "trace_link(kind, channel, key) takes an int and two str");
        return NULL;
    }
    lp_trace *tr = self->trace;
    if (tr == NULL || !self->active || tr->link_capacity == 0) {
        Py_RETURN_NONE;
    }
    long kind = PyLong_AsLong(args[0]);
    if (kind < 0 || kind >= LP_LINK_KINDS) {
        if (!PyErr_Occurred()) {
            PyErr_SetString(PyExc_ValueError,
                            "trace_link kind is 0 (signal), 1 (wait), 2 (begin), 3 (mark) or 4 (end)");
        }
        return NULL;
    }
    PyThreadState *tstate = PyThreadState_Get();
    lp_link l;
    memset(&l, 0, sizeof l);
    l.t_ns = lp_wall(self);
    l.thread = lp_trace_thread_of(self, tstate);
    lp_StackObject *ts = lp_stack_view(self->st);
    int32_t top = ts != NULL && ts->depth > 0 ? lp_find_live(ts, self, ts->depth - 1) : -1;
    l.phase_id = top >= 0 ? ts->frames[top].node_id : -1;
    l.kind = (uint8_t)kind;
    l.cut = (uint8_t)(lp_link_text(l.channel, &l.channel_len, args[1]) |
                      (lp_link_text(l.key, &l.key_len, args[2]) << 1));
    if (l.cut) {
        tr->h.links_truncated++;
    }
    if (l.thread < 0) {
        tr->h.links_unthreaded++; /* kept, with no thread to place it on: a reader counts it */
    }
    int64_t n = tr->h.links_recorded + 1;
    l.seq = (uint32_t)n;
    size_t off = (size_t)tr->h.off_links + (size_t)tr->next_link * sizeof(lp_link);
    tr->next_link = tr->next_link + 1 == tr->link_capacity ? 0 : tr->next_link + 1;
    lp_link_store((lp_link *)(tr->mem + off), &l);
    if (tr->file != NULL) {
        lp_link_store((lp_link *)(tr->file + off), &l);
    }
    tr->h.links_recorded = n;
    /* the two counts a link changes, not the whole header */
    lp_trace_header *blocks[2] = {(lp_trace_header *)tr->mem, (lp_trace_header *)tr->file};
    for (int b = 0; b < 2; b++) {
        if (blocks[b] != NULL) {
            blocks[b]->links_truncated = tr->h.links_truncated;
            blocks[b]->links_unthreaded = tr->h.links_unthreaded;
            __atomic_store_n(&blocks[b]->links_recorded, n, __ATOMIC_RELEASE);
        }
    }
    Py_RETURN_NONE;
}

/* ===================================================================== enable */

/* trace_enable(capacity, links_capacity): from now on every closed entry is a span. Before a
 * live file is attached (its segment is laid out at the attach). */
PyObject *lp_recorder_trace_enable(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "trace_enable(capacity, links_capacity) takes two ints");
        return NULL;
    }
    long long capacity = PyLong_AsLongLong(args[0]);
    long long links = PyLong_AsLongLong(args[1]);
    if (PyErr_Occurred()) {
        return NULL;
    }
    if (capacity < 1 || capacity > LP_TRACE_MAX_SPANS || links < 0 || links > LP_TRACE_MAX_LINKS) {
        PyErr_Format(PyExc_ValueError, "trace capacity must be within 1..%d and links capacity within 0..%d",
                     LP_TRACE_MAX_SPANS, LP_TRACE_MAX_LINKS);
        return NULL;
    }
    if (self->trace != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "tracing is already on");
        return NULL;
    }
    if (lp_live_mine(self)) {
        PyErr_SetString(PyExc_RuntimeError, "trace_enable() must come before live_attach()");
        return NULL;
    }
    lp_trace *tr = PyMem_Calloc(1, sizeof *tr);
    if (tr == NULL) {
        return PyErr_NoMemory();
    }
    lp_trace_layout(&tr->h, capacity, links);
    tr->bytes = lp_trace_size(&tr->h);
    tr->mem = lp_trace_map(tr->bytes);
    if (tr->mem == NULL) {
        PyMem_Free(tr);
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    tr->capacity = capacity;
    tr->link_capacity = links;
    /* Entries open now were pushed untraced (their tthread never set): they close without a span. */
    for (lp_StackObject *ts = self->st->stacks; ts != NULL; ts = ts->next) {
        for (int32_t i = 0; i < ts->depth; i++) {
            if (ts->frames[i].phase->rec == self) {
                ts->frames[i].tthread = -1;
            }
        }
    }
    tr->tidx = -1;
    tr->epoch = ++self->st->trace_epochs;
    self->trace = tr;
    self->st->tracer = self;
    lp_trace_pair_into(tr);
    lp_trace_publish(tr);
    Py_RETURN_NONE;
}

PyObject *lp_recorder_get_tracing(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->trace != NULL);
}
