/* The accounting layer's engine: phases, counters, histograms and exact per-phase I/O.
 *
 * A Recorder owns one phase tree (per process: a fork child resets it). A Phase is a cached
 * C context manager, one per (name, io, sync), so steady state allocates nothing per `with`.
 * Each thread has one stack of open frames (a TStack object kept in the thread-state dict and
 * cached in a TSS slot); frames of several recorders may interleave on it. Every mutation
 * happens with the GIL held, so the tree needs no lock; the sampler thread reads only the
 * atomics published through the capsule (see _phases_capi.h).
 *
 * Generations: a recorder's `gen` changes at stop, start and reset (the fork child). A frame
 * remembers the generation it was pushed in; a frame of an older generation is stale and is
 * popped without being recorded, which is what gives a fork child a clean phase stack without
 * touching the (copied) stacks of threads that no longer exist. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_clock.h"
#include "_common.h"
#include "_procio.h"
#include "accounting/_phases_capi.h"

/* ===================================================================== constants */

/* The histogram scheme of runfiles/histogram.py: EDGES[k] = round(1000 * 2**(k/8)). */
#define LP_BUCKETS_PER_DOUBLING 8
#define LP_MIN_NS               1000
#define LP_LAST_EDGE            266
#define LP_N_BUCKETS            (LP_LAST_EDGE + 2)

#define LP_DEFAULT_MAX_PATHS    10000
#define LP_DEFAULT_MAX_COUNTERS 10000
#define LP_MAX_ERRORS           32     /* error strings kept; the rest are only counted */
#define LP_MAX_DEPTH            100000 /* frames per thread stack before entries are dropped */
#define LP_NODE_CHUNK           64     /* nodes per allocation: node pointers never move */
#define LP_NAME_CACHE           64     /* direct-mapped name -> canonical name cache */
#define LP_PHASE_CACHE          128    /* direct-mapped (name, flags) -> Phase cache */
#define LP_ROOT                 0
#define LP_OVERFLOW             1

/* A frame's t0 until its entry clock has been read: a snapshot that runs in between (possible
 * only while a test clock runs Python code) must not take the slot's old value for a start. */
#define LP_T0_PENDING INT64_MIN

#define LP_FLAG_IO   1
#define LP_FLAG_SYNC 2

/* ===================================================================== compatibility */

#if PY_VERSION_HEX < 0x030C0000
/* 3.11 has only the (type, value, traceback) triple; these keep one exception object. */
static PyObject *lp_err_get(void)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
}

static void lp_err_set(PyObject *exc)
{
    if (exc == NULL) {
        return;
    }
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(type, exc, tb);
}
#define PyErr_GetRaisedException lp_err_get
#define PyErr_SetRaisedException lp_err_set
#endif

/* ===================================================================== fork statics */

/* The one piece of process-wide mutable state: a pthread_atfork child handler bumps it, so the
 * kept-open /proc/self/io descriptor (which names the parent) is reopened in any fork child,
 * including forks that bypass Python's os.register_at_fork. */
static atomic_uint lp_fork_generation;
static pthread_once_t lp_atfork_once = PTHREAD_ONCE_INIT;

static void lp_atfork_child(void)
{
    atomic_fetch_add_explicit(&lp_fork_generation, 1u, memory_order_relaxed);
}

static void lp_atfork_install(void)
{
    (void)pthread_atfork(NULL, NULL, lp_atfork_child);
}

/* ===================================================================== types */

typedef struct lp_node {
    int32_t id;
    int32_t parent;
    PyObject *name; /* borrowed: the canonical name, owned by the recorder's names dict */
    PyObject *path; /* owned, built lazily */
    int64_t entries;
    int64_t wall_ns;
    int64_t self_ns;
    int64_t cpu_ns;
    int64_t cpu_missing; /* entries whose thread-CPU clock could not be read */
    int64_t min_ns;
    int64_t max_ns;
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    int64_t io_delta[LP_IO_FIELDS];
    int64_t io_measured;
    int64_t io_failed;
    /* Entries still open, filled by each snapshot from every thread's stack (never added to
     * the totals above, which an entry joins only when it closes). */
    int64_t open_entries;
    int64_t open_ns;
    int64_t open_self_ns;
    uint64_t hist[LP_N_BUCKETS];
} lp_node;

typedef struct {
    int32_t parent;
    int32_t node; /* -1: empty slot */
    PyObject *name;
} lp_child_slot;

typedef struct {
    int32_t node;
    PyObject *name; /* borrowed canonical name */
    int64_t total;
} lp_counter;

typedef struct {
    PyObject *key;   /* strong: keeps the pointer from being reused by another object */
    PyObject *canon; /* borrowed from the names dict */
} lp_name_slot;

typedef struct {
    PyObject *key; /* strong */
    int flags;
    PyObject *phase; /* strong */
} lp_phase_slot;

struct RecorderObject;
struct TStackObject;

typedef struct lp_state {
    PyTypeObject *recorder_type;
    PyTypeObject *phase_type;
    PyTypeObject *noop_type;
    PyTypeObject *noop_phase_type;
    PyTypeObject *tstack_type;
    PyObject *noop_phase; /* the one disabled phase object */
    PyObject *tdict_key;
    Py_tss_t *tss;
    int64_t edges[LP_LAST_EDGE + 1];
    int16_t bucket_start[64 * 8]; /* first candidate bucket per (log2, 3 mantissa bits) cell */
    _Atomic int32_t main_thread_phase;
    _Atomic int64_t own_io[LP_IO_FIELDS];
    lp_phases_capi capi;
    int io_fd;
    unsigned io_fork_generation;
    char io_path[256];
    unsigned long main_ident;
    struct RecorderObject *primary; /* borrowed; cleared by the recorder's dealloc */
    /* Every live thread stack (borrowed; each unlinks itself in its dealloc), so a snapshot
     * taken from another thread can see the entries still open. Changed only under the GIL. */
    struct TStackObject *stacks;
    PyObject *overflow_name; /* "(overflow)": the node and counter past the caps */
    PyObject *slash;
    PyObject *underscore;
} lp_state;

typedef struct PhaseObject {
    PyObject_HEAD
    struct RecorderObject *rec; /* strong */
    PyObject *name;             /* the user's name as given (strong) */
    PyObject *canon;            /* canonical name (strong) */
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    uint8_t watched;
    uint8_t slow; /* anything beyond the plain path: io, hooks, test clocks */
    uint64_t cache_gen;
    int32_t cache_parent;
    lp_node *cache_node;
} PhaseObject;

typedef struct RecorderObject {
    PyObject_HEAD
    lp_state *st;
    PyObject *module; /* strong: keeps st alive */
    int active;
    uint64_t gen;
    int measure_cpu;
    int32_t max_paths;
    int32_t max_counters;
    /* the tree */
    lp_node **chunks;
    int32_t n_chunks;
    int32_t chunk_cap;
    int32_t n_nodes;
    lp_child_slot *child;
    uint32_t child_mask;
    int32_t child_used;
    /* counters */
    lp_counter *counters;
    int32_t n_counters;
    int32_t counters_cap;
    int32_t *counter_slots; /* index + 1; 0 is empty */
    uint32_t counter_mask;
    /* names and phase objects */
    PyObject *names;     /* dict: user name -> canonical name */
    PyObject *phases[4]; /* dicts per flags: user name -> Phase */
    Py_ssize_t n_phases;
    PyObject *overflow_phase[4];
    lp_name_slot name_cache[LP_NAME_CACHE];
    lp_phase_slot phase_cache[LP_PHASE_CACHE];
    /* hooks (see set_sync / set_annotate / set_watch) */
    PyObject *sync_fn;
    PyObject *annotate_enter;
    PyObject *annotate_exit;
    PyObject *watch_name;
    PyObject *watch_fn;
    int64_t watch_count;
    /* injectable clocks, for tests that check the arithmetic exactly */
    PyObject *clock_fn;
    PyObject *cpu_clock_fn;
    /* health */
    int64_t mismatched_exits;
    int64_t stale_exits;
    int64_t paths_overflowed;
    int64_t counters_overflowed;
    int64_t dropped_entries;
    int64_t callback_errors;
    int64_t errors_dropped;
    PyObject *errors; /* list of str, at most LP_MAX_ERRORS */
    int64_t own_subtracted[LP_IO_FIELDS];
} RecorderObject;

typedef struct {
    PhaseObject *phase; /* strong */
    lp_node *node;
    uint64_t gen;
    int32_t parent; /* index of the frame of the same recorder below, -1 none */
    int32_t node_id;
    int32_t scratch; /* used only while repairing a stack */
    int64_t t0;
    int64_t cpu0;
    int64_t child_ns;
    int64_t snap_child; /* a snapshot's scratch: open time of the direct child frames */
    int io_ok;
    lp_io_counters io0;
    int64_t own0[LP_IO_FIELDS];
} lp_frame;

typedef struct TStackObject {
    PyObject_HEAD
    lp_state *st;
    lp_frame *frames;
    int32_t depth;
    int32_t cap;
    int is_main;
    int64_t dropped;           /* entries refused (depth cap, no memory); their exits are not mismatches */
    struct TStackObject *prev; /* the module state's list of live stacks */
    struct TStackObject *next;
} TStackObject;

typedef struct {
    PyObject_HEAD
    PyObject *phase; /* Noop: the module's one NoopPhase (strong); NoopPhase: NULL */
} NoopObject;

static struct PyModuleDef lp_module;

static inline lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
}

/* ===================================================================== histogram */

static void lp_init_edges(lp_state *st)
{
    for (int k = 0; k <= LP_LAST_EDGE; k++) {
        /* The same IEEE operations as histogram.py, so the tables are equal (tested). */
        double v = (double)LP_MIN_NS * pow(2.0, (double)k / (double)LP_BUCKETS_PER_DOUBLING);
        st->edges[k] = (int64_t)floor(v + 0.5);
    }
    /* For each cell (floor(log2 ns), next 3 bits) the bucket of the cell's lowest value: the
     * cell spans a ratio of at most 9/8, less than two bucket widths, so from there the exact
     * bucket is at most two edge comparisons away. */
    for (int l = 0; l < 64; l++) {
        for (int m = 0; m < 8; m++) {
            int start;
            if (l >= 62) {
                start = LP_LAST_EDGE + 1;
            } else {
                int64_t low = ((int64_t)1 << l) + (l >= 3 ? ((int64_t)m << (l - 3)) : 0);
                int b = 0;
                while (b <= LP_LAST_EDGE && st->edges[b] <= low) {
                    b++;
                }
                start = b;
            }
            st->bucket_start[l * 8 + m] = (int16_t)start;
        }
    }
}

/* bisect_right(EDGES, ns): the number of edges <= ns. */
LP_INLINE int lp_bucket(const lp_state *st, int64_t ns)
{
    if (ns < st->edges[0]) {
        return 0;
    }
    if (ns >= st->edges[LP_LAST_EDGE]) {
        return LP_LAST_EDGE + 1;
    }
    int l = 63 - __builtin_clzll((unsigned long long)ns);
    int m = (int)(((uint64_t)ns >> (l - 3)) & 7u); /* ns >= 1000, so l >= 9 */
    int b = st->bucket_start[l * 8 + m];
    while (b <= LP_LAST_EDGE && ns >= st->edges[b]) {
        b++;
    }
    return b;
}

/* ===================================================================== errors */

/* Records the pending Python exception as a string in the recorder's errors, and clears it:
 * the profiler never lets its own failures reach user code. */
static void lp_record_error(RecorderObject *rec, const char *where)
{
    PyObject *exc = PyErr_GetRaisedException();
    rec->callback_errors++;
    if (rec->errors == NULL || PyList_GET_SIZE(rec->errors) >= LP_MAX_ERRORS) {
        rec->errors_dropped++;
        Py_XDECREF(exc);
        return;
    }
    PyObject *text = NULL;
    if (exc != NULL) {
        PyObject *s = PyObject_Str(exc);
        if (s == NULL) {
            PyErr_Clear();
        }
        text = PyUnicode_FromFormat("%s: %s: %U", where, Py_TYPE(exc)->tp_name, s ? s : Py_None);
        Py_XDECREF(s);
    } else {
        text = PyUnicode_FromString(where);
    }
    if (text == NULL || PyList_Append(rec->errors, text) < 0) {
        PyErr_Clear();
        rec->errors_dropped++;
    }
    Py_XDECREF(text);
    Py_XDECREF(exc);
}

/* Calls fn(*args) for a hook; any exception is recorded, never raised. The exception state
 * of the caller (for example the one __exit__ is handling) is kept intact. */
static void lp_call_hook(RecorderObject *rec, PyObject *fn, PyObject *arg, const char *where)
{
    PyObject *saved = PyErr_GetRaisedException();
    PyObject *result = arg ? PyObject_CallOneArg(fn, arg) : PyObject_CallNoArgs(fn);
    if (result == NULL) {
        lp_record_error(rec, where);
    } else {
        Py_DECREF(result);
    }
    PyErr_SetRaisedException(saved);
}

/* ===================================================================== clocks */

static int64_t lp_py_clock(RecorderObject *rec, PyObject *fn, const char *where)
{
    PyObject *saved = PyErr_GetRaisedException();
    int64_t value = -1;
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r != NULL) {
        value = PyLong_AsLongLong(r);
        Py_DECREF(r);
    }
    if (PyErr_Occurred()) {
        lp_record_error(rec, where);
        value = -1;
    }
    PyErr_SetRaisedException(saved);
    return value;
}

LP_INLINE int64_t lp_wall(RecorderObject *rec)
{
    if (LP_UNLIKELY(rec->clock_fn != NULL)) {
        int64_t v = lp_py_clock(rec, rec->clock_fn, "clock");
        return v >= 0 ? v : lp_monotonic_ns();
    }
    return lp_monotonic_ns();
}

/* Thread CPU time: CLOCK_THREAD_CPUTIME_ID is a real system call (about 530 ns here, more on a
 * busy host), so it is read only when measure_cpu is on. A perf_event task-clock read from its
 * mmap page was measured as an alternative: this kernel does not set cap_user_time, and
 * extrapolating between context switches drifted from the real clock by up to 7 % (steal and
 * IRQ time), so it was not kept (see docs/accounting.md). */
LP_INLINE int64_t lp_cpu(RecorderObject *rec)
{
    if (LP_UNLIKELY(rec->cpu_clock_fn != NULL)) {
        return lp_py_clock(rec, rec->cpu_clock_fn, "cpu_clock");
    }
    return lp_thread_cpu_ns();
}

/* ===================================================================== /proc/self/io */

/* Reads the process's I/O counters through the kept-open descriptor, reopening it in a fork
 * child (the old one would still name the parent). Called with the GIL held. Returns the bytes
 * read (> 0) or -1. The read itself moves rchar: with count_own, its size is added to own_io
 * *after* the read, as the kernel does, so a caller that loads own_io before reading sees the
 * same window in both. */
static int lp_io_now(lp_state *st, lp_io_counters *out, int count_own)
{
    unsigned g = atomic_load_explicit(&lp_fork_generation, memory_order_relaxed);
    if (st->io_fd < 0 || st->io_fork_generation != g) {
        if (st->io_fd >= 0) {
            close(st->io_fd);
        }
        st->io_fd = lp_procio_open(st->io_path);
        st->io_fork_generation = g;
    }
    if (st->io_fd < 0) {
        return -1;
    }
    char buf[512];
    ssize_t n = lp_proc_pread(st->io_fd, buf, sizeof buf);
    if (n < 0) {
        return -1;
    }
    if (count_own) {
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    if (lp_procio_parse(buf, out) < 0) {
        return -1;
    }
    return (int)n;
}

static void lp_own_io_load(lp_state *st, int64_t *out)
{
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        out[i] = atomic_load_explicit(&st->own_io[i], memory_order_relaxed);
    }
}

static inline void lp_io_to_array(const lp_io_counters *c, int64_t *a)
{
    a[0] = c->rchar;
    a[1] = c->wchar;
    a[2] = c->read_bytes;
    a[3] = c->write_bytes;
    a[4] = c->cancelled_write_bytes;
}

/* ===================================================================== the tree */

static inline lp_node *lp_node_at(RecorderObject *rec, int32_t id)
{
    return &rec->chunks[id / LP_NODE_CHUNK][id % LP_NODE_CHUNK];
}

/* Returns the new node, or NULL when out of memory (no exception set). */
static lp_node *lp_node_new(RecorderObject *rec, int32_t parent, PyObject *name)
{
    int32_t id = rec->n_nodes;
    if (id / LP_NODE_CHUNK >= rec->n_chunks) {
        if (rec->n_chunks == rec->chunk_cap) {
            int32_t cap = rec->chunk_cap ? rec->chunk_cap * 2 : 16;
            lp_node **chunks = realloc(rec->chunks, (size_t)cap * sizeof *chunks);
            if (chunks == NULL) {
                return NULL;
            }
            rec->chunks = chunks;
            rec->chunk_cap = cap;
        }
        lp_node *chunk = calloc(LP_NODE_CHUNK, sizeof *chunk);
        if (chunk == NULL) {
            return NULL;
        }
        rec->chunks[rec->n_chunks++] = chunk;
    }
    lp_node *node = lp_node_at(rec, id);
    memset(node, 0, sizeof *node);
    node->id = id;
    node->parent = parent;
    node->name = name;
    node->min_ns = INT64_MAX;
    rec->n_nodes++;
    return node;
}

static inline uint32_t lp_hash2(int32_t a, const void *p)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)a * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(h >> 32);
}

static int lp_child_grow(RecorderObject *rec)
{
    uint32_t new_cap = rec->child ? (rec->child_mask + 1) * 2 : 64;
    lp_child_slot *slots = malloc(new_cap * sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (uint32_t i = 0; i < new_cap; i++) {
        slots[i].node = -1;
    }
    if (rec->child) {
        for (uint32_t i = 0; i <= rec->child_mask; i++) {
            lp_child_slot *s = &rec->child[i];
            if (s->node < 0) {
                continue;
            }
            uint32_t j = lp_hash2(s->parent, s->name) & (new_cap - 1);
            while (slots[j].node >= 0) {
                j = (j + 1) & (new_cap - 1);
            }
            slots[j] = *s;
        }
        free(rec->child);
    }
    rec->child = slots;
    rec->child_mask = new_cap - 1;
    return 0;
}

/* The node for `canon` under `parent`, created if new; the overflow node once the cap is hit
 * (or memory runs out). Never NULL. */
static lp_node *lp_child_lookup(RecorderObject *rec, int32_t parent, PyObject *canon)
{
    if (parent == LP_OVERFLOW) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    if (rec->child == NULL || (uint32_t)(rec->child_used + 1) * 2 > rec->child_mask + 1) {
        if (lp_child_grow(rec) < 0 && rec->child == NULL) {
            return lp_node_at(rec, LP_OVERFLOW);
        }
    }
    uint32_t j = lp_hash2(parent, canon) & rec->child_mask;
    while (rec->child[j].node >= 0) {
        if (rec->child[j].parent == parent && rec->child[j].name == canon) {
            return lp_node_at(rec, rec->child[j].node);
        }
        j = (j + 1) & rec->child_mask;
    }
    /* the cap counts real paths: root and overflow are not paths */
    if (rec->n_nodes - 2 >= rec->max_paths || (uint32_t)(rec->child_used + 1) * 2 > rec->child_mask + 1) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    lp_node *node = lp_node_new(rec, parent, canon);
    if (node == NULL) {
        return lp_node_at(rec, LP_OVERFLOW);
    }
    rec->child[j].parent = parent;
    rec->child[j].name = canon;
    rec->child[j].node = node->id;
    rec->child_used++;
    return node;
}

/* Frees the tree and the counters (lp_tree_init makes root and overflow again). */
static void lp_tree_free(RecorderObject *rec)
{
    for (int32_t c = 0; c < rec->n_chunks; c++) {
        lp_node *chunk = rec->chunks[c];
        for (int32_t i = 0; i < LP_NODE_CHUNK; i++) {
            int32_t id = c * LP_NODE_CHUNK + i;
            if (id < rec->n_nodes) {
                Py_CLEAR(chunk[i].path);
            }
        }
        free(chunk);
    }
    free(rec->chunks);
    rec->chunks = NULL;
    rec->n_chunks = rec->chunk_cap = rec->n_nodes = 0;
    free(rec->child);
    rec->child = NULL;
    rec->child_mask = 0;
    rec->child_used = 0;
    free(rec->counters);
    rec->counters = NULL;
    rec->n_counters = rec->counters_cap = 0;
    free(rec->counter_slots);
    rec->counter_slots = NULL;
    rec->counter_mask = 0;
}

static int lp_tree_init(RecorderObject *rec)
{
    lp_node *root = lp_node_new(rec, -1, NULL);
    lp_node *over = root ? lp_node_new(rec, LP_ROOT, rec->st->overflow_name) : NULL;
    if (over == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    over->overflow = 1;
    return 0;
}

/* ===================================================================== thread stacks */

static TStackObject *lp_tstack_create(lp_state *st)
{
    PyObject *dict = PyThreadState_GetDict();
    if (dict == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "no thread state dict");
        return NULL;
    }
    TStackObject *ts = PyObject_New(TStackObject, st->tstack_type);
    if (ts == NULL) {
        return NULL;
    }
    ts->st = st;
    ts->frames = NULL;
    ts->depth = ts->cap = 0;
    ts->dropped = 0;
    ts->is_main = PyThread_get_thread_ident() == st->main_ident;
    /* Linked before anything can fail: the dealloc below unlinks in every case. */
    ts->prev = NULL;
    ts->next = st->stacks;
    if (st->stacks != NULL) {
        st->stacks->prev = ts;
    }
    st->stacks = ts;
    if (PyDict_SetItem(dict, st->tdict_key, (PyObject *)ts) < 0) {
        Py_DECREF(ts);
        return NULL;
    }
    /* The thread dict owns it; the TSS slot is a borrowed shortcut, cleared by dealloc. */
    Py_DECREF(ts);
    if (PyThread_tss_set(st->tss, ts) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot set thread-specific storage");
        return NULL;
    }
    return ts;
}

LP_INLINE TStackObject *lp_tstack(lp_state *st)
{
    TStackObject *ts = (TStackObject *)PyThread_tss_get(st->tss);
    if (LP_LIKELY(ts != NULL)) {
        return ts;
    }
    return lp_tstack_create(st);
}

static void tstack_dealloc(TStackObject *ts)
{
    PyTypeObject *tp = Py_TYPE(ts);
    lp_state *st = ts->st;
    if (PyThread_tss_get(st->tss) == (void *)ts) {
        (void)PyThread_tss_set(st->tss, NULL);
    }
    if (ts->prev != NULL) {
        ts->prev->next = ts->next;
    } else if (st->stacks == ts) {
        st->stacks = ts->next;
    }
    if (ts->next != NULL) {
        ts->next->prev = ts->prev;
    }
    ts->prev = ts->next = NULL;
    lp_frame *frames = ts->frames;
    int32_t depth = ts->depth;
    ts->frames = NULL;
    ts->depth = 0;
    for (int32_t i = 0; i < depth; i++) {
        Py_DECREF(frames[i].phase);
    }
    free(frames);
    PyObject_Free(ts);
    Py_DECREF(tp);
}

static PyType_Slot tstack_slots[] = {
    {Py_tp_dealloc, tstack_dealloc},
    {Py_tp_doc, "A thread's stack of open phases (internal)."},
    {0, NULL},
};

static PyType_Spec tstack_spec = {
    .name = "lineprofiler.accounting._phases._ThreadStack",
    .basicsize = sizeof(TStackObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = tstack_slots,
};

/* Index of the innermost live frame of `rec` at or below `from`, or -1. */
static inline int32_t lp_find_live(TStackObject *ts, RecorderObject *rec, int32_t from)
{
    for (int32_t i = from; i >= 0; i--) {
        if (ts->frames[i].phase->rec == rec && ts->frames[i].gen == rec->gen) {
            return i;
        }
    }
    return -1;
}

/* ===================================================================== phases: enter */

static void lp_publish_main(RecorderObject *rec, TStackObject *ts, int32_t node_id)
{
    if (rec->st->primary == rec && ts->is_main) {
        atomic_store_explicit(&rec->st->main_thread_phase, node_id, memory_order_relaxed);
    }
}

static int lp_grow_frames(TStackObject *ts)
{
    int32_t cap = ts->cap ? ts->cap * 2 : 32;
    if (cap > LP_MAX_DEPTH) {
        cap = LP_MAX_DEPTH;
    }
    if (cap <= ts->cap) {
        return -1;
    }
    lp_frame *frames = realloc(ts->frames, (size_t)cap * sizeof *frames);
    if (frames == NULL) {
        return -1;
    }
    ts->frames = frames;
    ts->cap = cap;
    return 0;
}

static void lp_enter_hooks(PhaseObject *self, RecorderObject *rec)
{
    if (self->watched && rec->watch_fn != NULL) {
        PyObject *fn = Py_NewRef(rec->watch_fn);
        PyObject *n = PyLong_FromLongLong(++rec->watch_count);
        if (n == NULL) {
            lp_record_error(rec, "watch");
        } else {
            lp_call_hook(rec, fn, n, "watch");
            Py_DECREF(n);
        }
        Py_DECREF(fn);
    }
    if (rec->annotate_enter != NULL) {
        PyObject *fn = Py_NewRef(rec->annotate_enter);
        lp_call_hook(rec, fn, self->canon, "annotate enter");
        Py_DECREF(fn);
    }
    if (self->sync && rec->sync_fn != NULL) {
        PyObject *fn = Py_NewRef(rec->sync_fn);
        lp_call_hook(rec, fn, NULL, "sync");
        Py_DECREF(fn);
    }
}

static PyObject *phase_enter(PhaseObject *self, PyObject *Py_UNUSED(ignored))
{
    RecorderObject *rec = self->rec;
    if (LP_UNLIKELY(!rec->active)) {
        return Py_NewRef(self);
    }
    if (LP_UNLIKELY(self->slow)) {
        /* Hooks run Python code, before anything is pushed or timed, so their cost is not
         * billed to the phase and whatever they do to the stack is seen below. */
        lp_enter_hooks(self, rec);
        if (!rec->active) {
            return Py_NewRef(self);
        }
    }
    lp_state *st = rec->st;
    TStackObject *ts = lp_tstack(st);
    if (LP_UNLIKELY(ts == NULL)) {
        lp_record_error(rec, "thread stack");
        rec->dropped_entries++;
        return Py_NewRef(self);
    }
    if (LP_UNLIKELY(ts->depth == ts->cap) && lp_grow_frames(ts) < 0) {
        rec->dropped_entries++;
        ts->dropped++;
        return Py_NewRef(self);
    }
    int32_t top = ts->depth - 1;
    int32_t parent_idx;
    if (LP_LIKELY(top >= 0 && ts->frames[top].phase->rec == rec && ts->frames[top].gen == rec->gen)) {
        parent_idx = top;
    } else {
        parent_idx = top >= 0 ? lp_find_live(ts, rec, top) : -1;
    }
    int32_t parent_id = parent_idx >= 0 ? ts->frames[parent_idx].node_id : LP_ROOT;
    lp_node *node;
    if (LP_LIKELY(self->cache_gen == rec->gen && self->cache_parent == parent_id)) {
        node = self->cache_node;
    } else {
        node = self->overflow ? lp_node_at(rec, LP_OVERFLOW) : lp_child_lookup(rec, parent_id, self->canon);
        self->cache_gen = rec->gen;
        self->cache_parent = parent_id;
        self->cache_node = node;
    }
    if (LP_UNLIKELY(node->overflow)) {
        rec->paths_overflowed++;
    }
    lp_frame *f = &ts->frames[ts->depth++];
    f->phase = (PhaseObject *)Py_NewRef(self);
    f->node = node;
    f->node_id = node->id;
    f->gen = rec->gen;
    f->parent = parent_idx;
    f->child_ns = 0;
    f->t0 = LP_T0_PENDING;
    f->io_ok = 0;
    if (LP_UNLIKELY(self->io)) {
        /* Read before the clock, so the read's own cost is not part of the phase's time. */
        lp_io_counters c;
        lp_own_io_load(st, f->own0); /* before the read: see lp_io_now */
        if (lp_io_now(st, &c, 1) > 0) {
            f->io_ok = 1;
            f->io0 = c;
        }
    }
    /* Wall first, CPU second (and the reverse at exit): the CPU window lies inside the wall
     * window, so wait = wall - cpu never goes negative from the clock reads themselves. */
    f->t0 = lp_wall(rec);
    f->cpu0 = rec->measure_cpu ? lp_cpu(rec) : 0;
    lp_publish_main(rec, ts, node->id);
    return Py_NewRef(self);
}

/* ===================================================================== phases: exit */

/* Adds the entry in frame `idx` (ending at t1/cpu1) to its node and its parent frame. */
static void lp_close_frame(RecorderObject *rec, TStackObject *ts, int32_t idx, int64_t t1, int64_t cpu1,
                           int io1_ok, const lp_io_counters *io1, const int64_t *own1)
{
    lp_frame *f = &ts->frames[idx];
    lp_node *node = f->node;
    int64_t d = t1 - f->t0;
    if (d < 0) {
        d = 0;
    }
    int64_t self_ns = d - f->child_ns;
    node->entries++;
    node->wall_ns += d;
    node->self_ns += self_ns > 0 ? self_ns : 0;
    if (d < node->min_ns) {
        node->min_ns = d;
    }
    if (d > node->max_ns) {
        node->max_ns = d;
    }
    node->hist[lp_bucket(rec->st, d)]++;
    if (rec->measure_cpu) {
        if (f->cpu0 >= 0 && cpu1 >= 0) {
            int64_t c = cpu1 - f->cpu0;
            /* a thread cannot run longer than the wall time; clamp clock-granularity noise */
            node->cpu_ns += c < 0 ? 0 : (c > d ? d : c);
        } else {
            node->cpu_missing++;
        }
    }
    if (LP_UNLIKELY(f->phase->io)) {
        node->io = 1;
        if (f->io_ok && io1_ok) {
            int64_t a0[LP_IO_FIELDS], a1[LP_IO_FIELDS];
            lp_io_to_array(&f->io0, a0);
            lp_io_to_array(io1, a1);
            for (int i = 0; i < LP_IO_FIELDS; i++) {
                int64_t raw = a1[i] - a0[i];
                int64_t own = own1[i] - f->own0[i];
                if (raw < 0) {
                    raw = 0;
                }
                if (own < 0) {
                    own = 0;
                }
                /* Subtract the profiler's own writes that happened while this phase was open;
                 * never below zero (another thread's own write can straddle the boundary). */
                int64_t sub = own < raw ? own : raw;
                node->io_delta[i] += raw - sub;
                rec->own_subtracted[i] += sub;
            }
            node->io_measured++;
        } else {
            node->io_failed++;
        }
    }
    if (f->phase->sync) {
        node->sync = 1;
    }
    if (f->parent >= 0) {
        ts->frames[f->parent].child_ns += d;
    }
}

static void lp_exit_hooks(PhaseObject *self, RecorderObject *rec)
{
    if (rec->annotate_exit != NULL) {
        PyObject *fn = Py_NewRef(rec->annotate_exit);
        lp_call_hook(rec, fn, self->canon, "annotate exit");
        Py_DECREF(fn);
    }
}

/* The rare exits: out of order, another thread's, stale (before a stop/reset), or with io. */
static void lp_exit_slow(PhaseObject *self, RecorderObject *rec, TStackObject *ts, int64_t t1, int64_t cpu1)
{
    int32_t idx = -1;
    /* stale frames of this recorder on top are dropped silently: they belong to an older
     * generation (the profiler was stopped or this is a fork child) */
    while (ts->depth > 0) {
        lp_frame *top = &ts->frames[ts->depth - 1];
        if (top->phase->rec == rec && top->gen != rec->gen) {
            int is_self = top->phase == self;
            PhaseObject *p = top->phase;
            ts->depth--;
            rec->stale_exits++;
            Py_DECREF(p);
            if (is_self) {
                return;
            }
            continue;
        }
        break;
    }
    if (!rec->active) {
        return;
    }
    for (int32_t i = ts->depth - 1; i >= 0; i--) {
        lp_frame *f = &ts->frames[i];
        if (f->phase == self && f->gen == rec->gen) {
            idx = i;
            break;
        }
    }
    if (idx < 0) {
        if (ts->dropped > 0) {
            ts->dropped--; /* the exit of an entry that was refused */
        } else {
            rec->mismatched_exits++; /* exited in another thread, or twice */
        }
        return;
    }
    int need_io = 0;
    for (int32_t i = idx; i < ts->depth; i++) {
        if (ts->frames[i].gen == rec->gen && ts->frames[i].phase->rec == rec && ts->frames[i].phase->io) {
            need_io = 1;
        }
    }
    lp_io_counters io1;
    int64_t own1[LP_IO_FIELDS] = {0};
    int io1_ok = 0;
    if (need_io) {
        lp_own_io_load(rec->st, own1);
        io1_ok = lp_io_now(rec->st, &io1, 1) > 0;
    }
    /* Frames opened above this one and never closed (a suspended generator, a manual
     * __enter__): closed here at the same time, each counted as a repaired exit. */
    int32_t old_depth = ts->depth;
    for (int32_t i = old_depth - 1; i >= idx; i--) {
        lp_frame *f = &ts->frames[i];
        if (f->phase->rec == rec && f->gen == rec->gen) {
            if (i != idx) {
                rec->mismatched_exits++;
            }
            lp_close_frame(rec, ts, i, t1, cpu1, io1_ok, &io1, own1);
        }
    }
    /* Frames of other recorders above idx stay open: they move down over the closed ones.
     * Their parent indexes (always a frame of their own recorder) are remapped first, while
     * the array is intact, then the frames are moved. */
    int32_t w = idx;
    for (int32_t i = idx; i < old_depth; i++) {
        ts->frames[i].scratch = ts->frames[i].phase->rec == rec ? -1 : w++;
    }
    for (int32_t i = idx; i < old_depth; i++) {
        lp_frame *f = &ts->frames[i];
        if (f->scratch >= 0 && f->parent >= idx) {
            f->parent = ts->frames[f->parent].scratch;
        }
    }
    PhaseObject *to_release[64];
    int n_release = 0;
    for (int32_t i = idx; i < old_depth; i++) {
        lp_frame *f = &ts->frames[i];
        if (f->scratch < 0) {
            if (n_release < 64) {
                to_release[n_release++] = f->phase;
            } else {
                Py_DECREF(f->phase); /* `self` is also held by the caller: never its last ref */
            }
        } else {
            ts->frames[f->scratch] = *f;
        }
    }
    ts->depth = w;
    int32_t live = lp_find_live(ts, rec, ts->depth - 1);
    lp_publish_main(rec, ts, live >= 0 ? ts->frames[live].node_id : -1);
    for (int i = 0; i < n_release; i++) {
        Py_DECREF(to_release[i]);
    }
}

static PyObject *phase_exit(PhaseObject *self, PyObject *const *Py_UNUSED(args), Py_ssize_t Py_UNUSED(nargs))
{
    RecorderObject *rec = self->rec;
    lp_state *st = rec->st;
    if (LP_UNLIKELY(self->slow) && self->sync && rec->sync_fn != NULL && rec->active) {
        /* Drain the device before reading the clock, so the phase's time includes its work. */
        PyObject *fn = Py_NewRef(rec->sync_fn);
        lp_call_hook(rec, fn, NULL, "sync");
        Py_DECREF(fn);
    }
    TStackObject *ts = (TStackObject *)PyThread_tss_get(st->tss);
    if (LP_UNLIKELY(ts == NULL || ts->depth == 0)) {
        if (rec->active) {
            rec->mismatched_exits++;
        }
        Py_RETURN_FALSE;
    }
    int64_t cpu1 = (rec->measure_cpu && rec->active) ? lp_cpu(rec) : 0;
    int64_t t1 = lp_wall(rec);
    int32_t top = ts->depth - 1;
    lp_frame *f = &ts->frames[top];
    if (LP_LIKELY(f->phase == self && f->gen == rec->gen && !self->io)) {
        lp_close_frame(rec, ts, top, t1, cpu1, 0, NULL, NULL);
        ts->depth = top;
        int32_t parent = f->parent;
        lp_publish_main(rec, ts, parent >= 0 ? ts->frames[parent].node_id : -1);
        Py_DECREF(self); /* the frame's reference; the caller still holds one */
    } else {
        lp_exit_slow(self, rec, ts, t1, cpu1);
    }
    if (LP_UNLIKELY(self->slow) && rec->active) {
        lp_exit_hooks(self, rec);
    }
    Py_RETURN_FALSE;
}

static int phase_traverse(PhaseObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->rec);
    return 0;
}

static int phase_clear(PhaseObject *self)
{
    Py_CLEAR(self->rec);
    return 0;
}

static void phase_dealloc(PhaseObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    (void)phase_clear(self);
    Py_CLEAR(self->name);
    Py_CLEAR(self->canon);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *phase_repr(PhaseObject *self)
{
    return PyUnicode_FromFormat("<Phase %R io=%d sync=%d>", self->name, self->io, self->sync);
}

static PyObject *phase_get_name(PhaseObject *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->name);
}

static PyObject *phase_get_io(PhaseObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->io);
}

static PyObject *phase_get_sync(PhaseObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->sync);
}

static PyMethodDef phase_methods[] = {
    {"__enter__", (PyCFunction)phase_enter, METH_NOARGS, "Open the phase in this thread."},
    {"__exit__", (PyCFunction)(void (*)(void))phase_exit, METH_FASTCALL,
     "Close the phase; never suppresses an exception."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef phase_getset[] = {
    {"name", (getter)phase_get_name, NULL, "The name given to phase().", NULL},
    {"io", (getter)phase_get_io, NULL, "Whether entries measure /proc/self/io.", NULL},
    {"sync", (getter)phase_get_sync, NULL, "Whether entries call the sync hook.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot phase_slots[] = {
    {Py_tp_dealloc, phase_dealloc},
    {Py_tp_traverse, phase_traverse},
    {Py_tp_clear, phase_clear},
    {Py_tp_repr, phase_repr},
    {Py_tp_methods, phase_methods},
    {Py_tp_getset, phase_getset},
    {Py_tp_doc, "A named phase: a reusable context manager returned by Recorder.phase()."},
    {0, NULL},
};

static PyType_Spec phase_spec = {
    .name = "lineprofiler.accounting._phases.Phase",
    .basicsize = sizeof(PhaseObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = phase_slots,
};

/* ===================================================================== recorder: names */

/* The canonical name for a user's name: "/" would fake nesting in a path and "" would make
 * "a//b", so both are replaced. Returns a borrowed reference, NULL with an exception set, or
 * the state's overflow_name (borrowed) for a new name when may_insert is 0 or the cap is hit. */
static PyObject *lp_canonical(RecorderObject *rec, PyObject *name, int may_insert)
{
    uint32_t slot = (uint32_t)(((uintptr_t)name >> 4) & (LP_NAME_CACHE - 1));
    if (rec->name_cache[slot].key == name) {
        return rec->name_cache[slot].canon;
    }
    PyObject *canon = PyDict_GetItemWithError(rec->names, name);
    if (canon == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        if (!may_insert || PyDict_GET_SIZE(rec->names) >= (Py_ssize_t)rec->max_paths + rec->max_counters) {
            return rec->st->overflow_name;
        }
        PyObject *clean;
        if (PyUnicode_GET_LENGTH(name) == 0) {
            clean = PyUnicode_FromString("(empty)");
        } else if (PyUnicode_FindChar(name, '/', 0, PyUnicode_GET_LENGTH(name), 1) >= 0) {
            clean = PyUnicode_Replace(name, rec->st->slash, rec->st->underscore, -1);
        } else {
            clean = PyUnicode_FromObject(name); /* an exact str, even for a str subclass */
        }
        if (clean == NULL) {
            return NULL;
        }
        PyUnicode_InternInPlace(&clean);
        if (PyDict_SetItem(rec->names, name, clean) < 0) {
            Py_DECREF(clean);
            return NULL;
        }
        canon = clean;
        Py_DECREF(clean); /* the dict holds it */
    }
    Py_XSETREF(rec->name_cache[slot].key, Py_NewRef(name));
    rec->name_cache[slot].canon = canon;
    return canon;
}

/* ===================================================================== recorder: phases */

static void lp_phase_update_flags(PhaseObject *p)
{
    RecorderObject *rec = p->rec;
    p->watched = 0;
    if (rec->watch_name != NULL) {
        int eq = PyObject_RichCompareBool(p->name, rec->watch_name, Py_EQ);
        if (eq < 0) {
            PyErr_Clear();
        }
        p->watched = eq > 0;
    }
    p->slow = p->io || (p->sync && rec->sync_fn != NULL) || p->watched || rec->annotate_enter != NULL ||
              rec->annotate_exit != NULL;
}

/* Recomputes every phase object's slow flag after a hook changed: the plain path then pays
 * exactly one branch for all hooks together. */
static void lp_update_all_flags(RecorderObject *rec)
{
    for (int f = 0; f < 4; f++) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        if (rec->phases[f] != NULL) {
            while (PyDict_Next(rec->phases[f], &pos, &key, &value)) {
                lp_phase_update_flags((PhaseObject *)value);
            }
        }
        if (rec->overflow_phase[f] != NULL) {
            lp_phase_update_flags((PhaseObject *)rec->overflow_phase[f]);
        }
    }
}

static PhaseObject *lp_phase_new(RecorderObject *rec, PyObject *name, PyObject *canon, int flags,
                                 int overflow)
{
    PhaseObject *p = PyObject_GC_New(PhaseObject, rec->st->phase_type);
    if (p == NULL) {
        return NULL;
    }
    p->rec = (RecorderObject *)Py_NewRef(rec);
    p->name = Py_NewRef(name);
    p->canon = Py_NewRef(canon);
    p->io = (flags & LP_FLAG_IO) != 0;
    p->sync = (flags & LP_FLAG_SYNC) != 0;
    p->overflow = (uint8_t)overflow;
    p->cache_gen = UINT64_MAX;
    p->cache_parent = -1;
    p->cache_node = NULL;
    lp_phase_update_flags(p);
    PyObject_GC_Track(p);
    return p;
}

/* Returns a borrowed Phase for (name, flags), creating it once; NULL with an exception. */
static PyObject *lp_phase_lookup(RecorderObject *rec, PyObject *name, int flags)
{
    PyObject *p = PyDict_GetItemWithError(rec->phases[flags], name);
    if (p != NULL || PyErr_Occurred()) {
        return p;
    }
    PyObject *canon = NULL;
    if (rec->n_phases < rec->max_paths) {
        canon = lp_canonical(rec, name, 1);
        if (canon == NULL) {
            return NULL;
        }
    }
    if (canon == NULL || canon == rec->st->overflow_name) {
        /* past the cap: one shared phase per flags whose entries go to the overflow node */
        if (rec->overflow_phase[flags] == NULL) {
            rec->overflow_phase[flags] =
                (PyObject *)lp_phase_new(rec, rec->st->overflow_name, rec->st->overflow_name, flags, 1);
        }
        return rec->overflow_phase[flags];
    }
    PhaseObject *np = lp_phase_new(rec, name, canon, flags, 0);
    if (np == NULL) {
        return NULL;
    }
    if (PyDict_SetItem(rec->phases[flags], name, (PyObject *)np) < 0) {
        Py_DECREF(np);
        return NULL;
    }
    rec->n_phases++;
    Py_DECREF(np); /* the dict holds it */
    return (PyObject *)np;
}

static int lp_truth(PyObject *v, int *out)
{
    int t = PyObject_IsTrue(v);
    if (t < 0) {
        return -1;
    }
    *out = t;
    return 0;
}

/* Parses (name, io=False, sync=False) from a vectorcall; shared by Recorder and Noop. */
static int lp_parse_phase_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **name,
                               int *flags)
{
    PyObject *vals[3] = {NULL, NULL, NULL};
    static const char *const names[3] = {"name", "io", "sync"};
    if (nargs > 3) {
        PyErr_Format(PyExc_TypeError, "phase() takes at most 3 arguments (%zd given)", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        vals[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = 0; j < 3; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                found = j;
                break;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "phase() got an unexpected keyword argument '%U'", key);
            return -1;
        }
        if (vals[found] != NULL) {
            PyErr_Format(PyExc_TypeError, "phase() got multiple values for argument '%s'", names[found]);
            return -1;
        }
        vals[found] = args[nargs + k];
    }
    if (vals[0] == NULL) {
        PyErr_SetString(PyExc_TypeError, "phase() missing required argument 'name'");
        return -1;
    }
    if (!PyUnicode_Check(vals[0])) {
        PyErr_Format(PyExc_TypeError, "phase name must be a str, not %.100s", Py_TYPE(vals[0])->tp_name);
        return -1;
    }
    int io = 0, sync = 0;
    if ((vals[1] && lp_truth(vals[1], &io) < 0) || (vals[2] && lp_truth(vals[2], &sync) < 0)) {
        return -1;
    }
    *name = vals[0];
    *flags = (io ? LP_FLAG_IO : 0) | (sync ? LP_FLAG_SYNC : 0);
    return 0;
}

static PyObject *rec_phase(RecorderObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *name;
    int flags;
    if (LP_LIKELY(kwnames == NULL && nargs == 1 && PyUnicode_Check(args[0]))) {
        name = args[0];
        flags = 0;
    } else if (lp_parse_phase_args(args, nargs, kwnames, &name, &flags) < 0) {
        return NULL;
    }
    uint32_t slot = (uint32_t)((((uintptr_t)name >> 4) ^ (uintptr_t)flags) & (LP_PHASE_CACHE - 1));
    lp_phase_slot *s = &self->phase_cache[slot];
    if (LP_LIKELY(s->key == name && s->flags == flags)) {
        return Py_NewRef(s->phase);
    }
    PyObject *p = lp_phase_lookup(self, name, flags);
    if (p == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            /* the profiler's failure, not the caller's: record it and hand back a no-op */
            lp_record_error(self, "phase");
            return Py_NewRef(self->st->noop_phase);
        }
        return NULL; /* a name whose __hash__/__eq__ raised: the caller's error */
    }
    Py_XSETREF(s->key, Py_NewRef(name));
    s->flags = flags;
    Py_XSETREF(s->phase, Py_NewRef(p));
    return Py_NewRef(p);
}

/* ===================================================================== recorder: counters */

static int lp_counter_grow(RecorderObject *rec)
{
    uint32_t new_cap = rec->counter_slots ? (rec->counter_mask + 1) * 2 : 64;
    int32_t *slots = calloc(new_cap, sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (int32_t i = 0; i < rec->n_counters; i++) {
        uint32_t j = lp_hash2(rec->counters[i].node, rec->counters[i].name) & (new_cap - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (new_cap - 1);
        }
        slots[j] = i + 1;
    }
    free(rec->counter_slots);
    rec->counter_slots = slots;
    rec->counter_mask = new_cap - 1;
    return 0;
}

/* The counter for (node, canon), created if new and allowed; NULL past the cap or when out of
 * memory. */
static lp_counter *lp_counter_get(RecorderObject *rec, int32_t node, PyObject *canon, int create)
{
    if (rec->counter_slots == NULL || (uint32_t)(rec->n_counters + 1) * 2 > rec->counter_mask + 1) {
        if (lp_counter_grow(rec) < 0 && rec->counter_slots == NULL) {
            return NULL;
        }
    }
    uint32_t j = lp_hash2(node, canon) & rec->counter_mask;
    while (rec->counter_slots[j] != 0) {
        lp_counter *c = &rec->counters[rec->counter_slots[j] - 1];
        if (c->node == node && c->name == canon) {
            return c;
        }
        j = (j + 1) & rec->counter_mask;
    }
    if (!create || (uint32_t)(rec->n_counters + 1) * 2 > rec->counter_mask + 1) {
        return NULL;
    }
    if (rec->n_counters == rec->counters_cap) {
        int32_t cap = rec->counters_cap ? rec->counters_cap * 2 : 32;
        lp_counter *counters = realloc(rec->counters, (size_t)cap * sizeof *counters);
        if (counters == NULL) {
            return NULL;
        }
        rec->counters = counters;
        rec->counters_cap = cap;
    }
    lp_counter *c = &rec->counters[rec->n_counters];
    c->node = node;
    c->name = canon;
    c->total = 0;
    rec->counter_slots[j] = ++rec->n_counters;
    return c;
}

static PyObject *rec_count(RecorderObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *name = nargs >= 1 ? args[0] : NULL;
    PyObject *nobj = nargs >= 2 ? args[1] : NULL;
    if (LP_UNLIKELY(kwnames != NULL || nargs < 1 || nargs > 2)) {
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        if (nargs > 2) {
            PyErr_Format(PyExc_TypeError, "count() takes at most 2 arguments (%zd given)", nargs);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, k);
            PyObject **dst = NULL;
            if (PyUnicode_CompareWithASCIIString(key, "name") == 0) {
                dst = &name;
            } else if (PyUnicode_CompareWithASCIIString(key, "n") == 0) {
                dst = &nobj;
            } else {
                PyErr_Format(PyExc_TypeError, "count() got an unexpected keyword argument '%U'", key);
                return NULL;
            }
            if (*dst != NULL) {
                PyErr_Format(PyExc_TypeError, "count() got multiple values for argument '%U'", key);
                return NULL;
            }
            *dst = args[nargs + k];
        }
        if (name == NULL) {
            PyErr_SetString(PyExc_TypeError, "count() missing required argument 'name'");
            return NULL;
        }
    }
    if (LP_UNLIKELY(!PyUnicode_Check(name))) {
        PyErr_Format(PyExc_TypeError, "counter name must be a str, not %.100s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    int64_t n = 1;
    if (nobj != NULL) {
        if (!PyLong_Check(nobj)) {
            PyErr_Format(PyExc_TypeError, "count() n must be an int, not %.100s", Py_TYPE(nobj)->tp_name);
            return NULL;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(nobj, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (overflow) {
            v = overflow > 0 ? INT64_MAX : INT64_MIN;
        }
        n = v;
    }
    if (LP_UNLIKELY(!self->active)) {
        Py_RETURN_NONE;
    }
    int32_t node = LP_ROOT;
    TStackObject *ts = (TStackObject *)PyThread_tss_get(self->st->tss);
    if (ts != NULL && ts->depth > 0) {
        lp_frame *top = &ts->frames[ts->depth - 1];
        if (LP_LIKELY(top->phase->rec == self && top->gen == self->gen)) {
            node = top->node_id;
        } else {
            int32_t i = lp_find_live(ts, self, ts->depth - 1);
            node = i >= 0 ? ts->frames[i].node_id : LP_ROOT;
        }
    }
    /* past the counters cap, a name not seen before is not kept: it can only overflow */
    PyObject *canon = lp_canonical(self, name, self->n_counters < self->max_counters);
    if (LP_UNLIKELY(canon == NULL)) {
        if (!PyErr_ExceptionMatches(PyExc_MemoryError)) {
            return NULL;
        }
        lp_record_error(self, "count");
        canon = self->st->overflow_name;
    }
    lp_counter *c = NULL;
    if (LP_LIKELY(canon != self->st->overflow_name)) {
        c = lp_counter_get(self, node, canon, self->n_counters < self->max_counters);
    }
    if (LP_UNLIKELY(c == NULL)) {
        self->counters_overflowed++;
        c = lp_counter_get(self, LP_ROOT, self->st->overflow_name, 1);
        if (c == NULL) {
            Py_RETURN_NONE; /* out of memory: counted above */
        }
    }
    int64_t sum;
    if (LP_UNLIKELY(__builtin_add_overflow(c->total, n, &sum))) {
        sum = n > 0 ? INT64_MAX : INT64_MIN; /* saturate rather than wrap */
    }
    c->total = sum;
    Py_RETURN_NONE;
}

/* ===================================================================== recorder: paths */

/* The node's path ("a/b/c"), built once and cached on the node. Borrowed; NULL with an
 * exception on memory failure. Parents always have smaller ids, so building in id order never
 * recurses; path_of may ask for any id, hence the walk up. */
static PyObject *lp_node_path(RecorderObject *rec, int32_t id)
{
    lp_node *node = lp_node_at(rec, id);
    if (node->path != NULL) {
        return node->path;
    }
    if (node->parent <= LP_ROOT || id == LP_OVERFLOW) {
        node->path = Py_NewRef(node->name);
        return node->path;
    }
    /* walk up to the nearest ancestor with a path, then build downwards */
    int32_t chain[256];
    int n = 0;
    int32_t cur = id;
    while (cur > LP_ROOT && lp_node_at(rec, cur)->path == NULL && n < 256) {
        chain[n++] = cur;
        cur = lp_node_at(rec, cur)->parent;
    }
    if (n == 256 && cur > LP_ROOT && lp_node_at(rec, cur)->path == NULL) {
        /* deeper than the chain: build the upper part first */
        if (lp_node_path(rec, cur) == NULL) {
            return NULL;
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        lp_node *x = lp_node_at(rec, chain[i]);
        if (x->parent <= LP_ROOT) {
            x->path = Py_NewRef(x->name);
        } else {
            x->path = PyUnicode_FromFormat("%U/%U", lp_node_at(rec, x->parent)->path, x->name);
            if (x->path == NULL) {
                return NULL;
            }
        }
    }
    return node->path;
}

static PyObject *rec_path_of(RecorderObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (id <= LP_ROOT || id >= self->n_nodes) {
        Py_RETURN_NONE;
    }
    PyObject *path = lp_node_path(self, (int32_t)id);
    return path ? Py_NewRef(path) : NULL;
}

static PyObject *rec_current_path(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    TStackObject *ts = (TStackObject *)PyThread_tss_get(self->st->tss);
    if (ts == NULL || ts->depth == 0) {
        Py_RETURN_NONE;
    }
    int32_t i = lp_find_live(ts, self, ts->depth - 1);
    if (i < 0) {
        Py_RETURN_NONE;
    }
    PyObject *path = lp_node_path(self, ts->frames[i].node_id);
    return path ? Py_NewRef(path) : NULL;
}

/* ===================================================================== recorder: snapshot */

static PyObject *lp_io_dict(const int64_t *v)
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "rchar", (long long)v[0], "wchar", (long long)v[1],
                         "read_bytes", (long long)v[2], "write_bytes", (long long)v[3],
                         "cancelled_write_bytes", (long long)v[4]);
}

static PyObject *lp_node_dict(RecorderObject *rec, lp_node *node)
{
    PyObject *path = lp_node_path(rec, node->id);
    if (path == NULL) {
        return NULL;
    }
    PyObject *hist = PyList_New(0);
    if (hist == NULL) {
        return NULL;
    }
    for (int b = 0; b < LP_N_BUCKETS; b++) {
        if (node->hist[b] != 0) {
            PyObject *pair = Py_BuildValue("[iK]", b, (unsigned long long)node->hist[b]);
            if (pair == NULL || PyList_Append(hist, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(hist);
                return NULL;
            }
            Py_DECREF(pair);
        }
    }
    PyObject *cpu = rec->measure_cpu && node->entries > node->cpu_missing ? PyLong_FromLongLong(node->cpu_ns)
                                                                          : Py_NewRef(Py_None);
    PyObject *mn = node->entries ? PyLong_FromLongLong(node->min_ns) : Py_NewRef(Py_None);
    PyObject *mx = node->entries ? PyLong_FromLongLong(node->max_ns) : Py_NewRef(Py_None);
    PyObject *io = Py_None;
    if (node->io) {
        io = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "rchar", (long long)node->io_delta[0], "wchar",
                           (long long)node->io_delta[1], "read_bytes", (long long)node->io_delta[2],
                           "write_bytes", (long long)node->io_delta[3], "cancelled_write_bytes",
                           (long long)node->io_delta[4], "measured_entries", (long long)node->io_measured,
                           "failed_reads", (long long)node->io_failed);
    } else {
        Py_INCREF(io);
    }
    PyObject *d = NULL;
    if (cpu && mn && mx && io) {
        d = Py_BuildValue("{s:i,s:O,s:L,s:L,s:L,s:O,s:L,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:L,s:L,s:L}", "id",
                          node->id, "path", path, "entries", (long long)node->entries, "wall_ns",
                          (long long)node->wall_ns, "self_ns", (long long)node->self_ns, "cpu_ns", cpu,
                          "cpu_missing", (long long)node->cpu_missing, "min_ns", mn, "max_ns", mx, "hist",
                          hist, "io", node->io ? Py_True : Py_False, "sync", node->sync ? Py_True : Py_False,
                          "io_bytes", io, "overflow", node->overflow ? Py_True : Py_False, "open_entries",
                          (long long)node->open_entries, "open_ns", (long long)node->open_ns, "open_self_ns",
                          (long long)node->open_self_ns);
    }
    Py_XDECREF(cpu);
    Py_XDECREF(mn);
    Py_XDECREF(mx);
    Py_XDECREF(io);
    Py_DECREF(hist);
    return d;
}

/* Fills each node's open_* from the frames of this recorder still open on every thread's
 * stack, as of `now`. Pure C, no Python call: the stacks cannot change under it. Per open
 * entry: open_ns is its time so far, open_self_ns that minus its closed children's wall
 * (child_ns) and its open children's time so far, so that adding open_self_ns to self_ns over
 * all nodes never counts a nanosecond twice. Nothing here touches the totals. */
static void lp_open_pass(RecorderObject *self, int64_t now)
{
    for (int32_t id = 0; id < self->n_nodes; id++) {
        lp_node *node = lp_node_at(self, id);
        node->open_entries = node->open_ns = node->open_self_ns = 0;
    }
    if (!self->active) {
        return; /* every frame is stale */
    }
    for (TStackObject *ts = self->st->stacks; ts != NULL; ts = ts->next) {
        for (int32_t i = 0; i < ts->depth; i++) {
            ts->frames[i].snap_child = 0;
        }
        /* Top down: a child frame always lies above its parent, so it is done first. */
        for (int32_t i = ts->depth - 1; i >= 0; i--) {
            lp_frame *f = &ts->frames[i];
            if (f->phase->rec != self || f->gen != self->gen || f->t0 == LP_T0_PENDING) {
                continue;
            }
            int64_t elapsed = now - f->t0;
            if (elapsed < 0) {
                elapsed = 0;
            }
            int64_t own = elapsed - f->child_ns - f->snap_child;
            f->node->open_entries++;
            f->node->open_ns += elapsed;
            f->node->open_self_ns += own > 0 ? own : 0;
            if (f->parent >= 0) {
                ts->frames[f->parent].snap_child += elapsed;
            }
        }
    }
}

static PyObject *rec_snapshot(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    /* The clock first: a test clock runs Python code, which may switch threads. */
    int64_t now = self->active ? lp_wall(self) : 0;
    lp_open_pass(self, now);
    PyObject *phases = PyList_New(0);
    PyObject *counters = PyList_New(0);
    PyObject *result = NULL;
    if (phases == NULL || counters == NULL) {
        goto done;
    }
    for (int32_t id = LP_ROOT + 1; id < self->n_nodes; id++) {
        lp_node *node = lp_node_at(self, id);
        if (node->entries == 0 && node->open_entries == 0) {
            continue; /* never entered in this generation */
        }
        PyObject *d = lp_node_dict(self, node);
        if (d == NULL || PyList_Append(phases, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    for (int32_t i = 0; i < self->n_counters; i++) {
        lp_counter *c = &self->counters[i];
        PyObject *phase = c->node > LP_ROOT ? lp_node_path(self, c->node) : PyUnicode_FromString("");
        if (phase == NULL) {
            goto done;
        }
        if (c->node <= LP_ROOT) {
            /* a new reference from FromString: hand it to the dict below, then drop ours */
        } else {
            Py_INCREF(phase);
        }
        PyObject *d =
            Py_BuildValue("{s:O,s:O,s:L}", "phase", phase, "name", c->name, "total", (long long)c->total);
        Py_DECREF(phase);
        if (d == NULL || PyList_Append(counters, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    PyObject *own = lp_io_dict(self->own_subtracted);
    if (own == NULL) {
        goto done;
    }
    PyObject *errors = PyList_GetSlice(self->errors, 0, PY_SSIZE_T_MAX);
    if (errors == NULL) {
        Py_DECREF(own);
        goto done;
    }
    result = Py_BuildValue(
        "{s:O,s:O,s:{s:i,s:L,s:i,s:L},s:{s:L,s:L,s:L},s:O,s:L,s:L,s:O,s:i}", "phases", phases, "counters",
        counters, "caps", "max_paths", (int)self->max_paths, "paths_overflowed",
        (long long)self->paths_overflowed, "max_counters", (int)self->max_counters, "counters_overflowed",
        (long long)self->counters_overflowed, "repairs", "mismatched_exits",
        (long long)self->mismatched_exits, "stale_exits", (long long)self->stale_exits, "dropped_entries",
        (long long)self->dropped_entries, "errors", errors, "errors_dropped", (long long)self->errors_dropped,
        "callback_errors", (long long)self->callback_errors, "own_io_subtracted", own, "n_nodes",
        (int)self->n_nodes);
    Py_DECREF(own);
    Py_DECREF(errors);
done:
    Py_XDECREF(phases);
    Py_XDECREF(counters);
    return result;
}

/* ===================================================================== recorder: control */

static void lp_clear_health(RecorderObject *self)
{
    self->mismatched_exits = self->stale_exits = self->paths_overflowed = 0;
    self->counters_overflowed = self->dropped_entries = self->callback_errors = self->errors_dropped = 0;
    self->watch_count = 0;
    memset(self->own_subtracted, 0, sizeof self->own_subtracted);
}

static PyObject *rec_reset(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->gen++;
    lp_tree_free(self);
    lp_clear_health(self);
    if (self->errors != NULL && PyList_SetSlice(self->errors, 0, PY_SSIZE_T_MAX, NULL) < 0) {
        return NULL;
    }
    if (lp_tree_init(self) < 0) {
        return NULL;
    }
    if (self->st->primary == self) {
        atomic_store_explicit(&self->st->main_thread_phase, -1, memory_order_relaxed);
    }
    Py_RETURN_NONE;
}

static PyObject *rec_start(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->active) {
        self->gen++;
        self->active = 1;
    }
    Py_RETURN_NONE;
}

static PyObject *rec_stop(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->active) {
        /* frames still open are now stale: their exits pop them without recording */
        self->gen++;
        self->active = 0;
        if (self->st->primary == self) {
            atomic_store_explicit(&self->st->main_thread_phase, -1, memory_order_relaxed);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *rec_make_primary(RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->st->primary = self;
    int32_t node = -1;
    TStackObject *ts = (TStackObject *)PyThread_tss_get(self->st->tss);
    if (ts != NULL && ts->is_main) {
        int32_t i = ts->depth > 0 ? lp_find_live(ts, self, ts->depth - 1) : -1;
        node = i >= 0 ? ts->frames[i].node_id : -1;
    }
    atomic_store_explicit(&self->st->main_thread_phase, node, memory_order_relaxed);
    Py_RETURN_NONE;
}

static int lp_check_callable(PyObject *fn, const char *what)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable or None, not %.100s", what, Py_TYPE(fn)->tp_name);
        return -1;
    }
    return 0;
}

static PyObject *rec_set_sync(RecorderObject *self, PyObject *fn)
{
    if (lp_check_callable(fn, "sync hook") < 0) {
        return NULL;
    }
    Py_XSETREF(self->sync_fn, fn == Py_None ? NULL : Py_NewRef(fn));
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

static PyObject *rec_set_annotate(RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_annotate(enter_fn, exit_fn) takes two arguments");
        return NULL;
    }
    if (lp_check_callable(args[0], "enter_fn") < 0 || lp_check_callable(args[1], "exit_fn") < 0) {
        return NULL;
    }
    Py_XSETREF(self->annotate_enter, args[0] == Py_None ? NULL : Py_NewRef(args[0]));
    Py_XSETREF(self->annotate_exit, args[1] == Py_None ? NULL : Py_NewRef(args[1]));
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

static PyObject *rec_set_watch(RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_watch(name, fn) takes two arguments");
        return NULL;
    }
    PyObject *name = args[0], *fn = args[1];
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "watch name must be a str or None, not %.100s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    if (lp_check_callable(fn, "watch fn") < 0) {
        return NULL;
    }
    if (name == Py_None || fn == Py_None) {
        Py_CLEAR(self->watch_name);
        Py_CLEAR(self->watch_fn);
    } else {
        Py_XSETREF(self->watch_name, Py_NewRef(name));
        Py_XSETREF(self->watch_fn, Py_NewRef(fn));
    }
    self->watch_count = 0;
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

static PyObject *rec_get_active(RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->active);
}

static PyObject *rec_get_measure_cpu(RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->measure_cpu);
}

static PyObject *rec_get_n_nodes(RecorderObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->n_nodes);
}

static PyObject *rec_get_empty(RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->n_nodes <= 2 && lp_node_at(self, LP_OVERFLOW)->entries == 0 &&
                           self->n_counters == 0);
}

static PyObject *rec_get_generation(RecorderObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->gen);
}

/* ===================================================================== recorder: lifetime */

static PyObject *rec_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"measure_cpu", "max_paths", "max_counters", "clock", "cpu_clock", NULL};
    int measure_cpu = 1, max_paths = LP_DEFAULT_MAX_PATHS, max_counters = LP_DEFAULT_MAX_COUNTERS;
    PyObject *clock = Py_None, *cpu_clock = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$piiOO:Recorder", kwlist, &measure_cpu, &max_paths,
                                     &max_counters, &clock, &cpu_clock)) {
        return NULL;
    }
    if (max_paths < 1 || max_counters < 1 || max_paths > 1000000 || max_counters > 1000000) {
        PyErr_SetString(PyExc_ValueError, "max_paths and max_counters must be within 1..1000000");
        return NULL;
    }
    if (lp_check_callable(clock, "clock") < 0 || lp_check_callable(cpu_clock, "cpu_clock") < 0) {
        return NULL;
    }
    PyObject *module = PyType_GetModuleByDef(type, &lp_module);
    if (module == NULL) {
        return NULL;
    }
    RecorderObject *self = (RecorderObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    /* tp_alloc zeroed everything */
    self->module = Py_NewRef(module);
    self->st = lp_get_state(module);
    self->active = 1;
    self->gen = 1;
    self->measure_cpu = measure_cpu;
    self->max_paths = max_paths;
    self->max_counters = max_counters;
    self->clock_fn = clock == Py_None ? NULL : Py_NewRef(clock);
    self->cpu_clock_fn = cpu_clock == Py_None ? NULL : Py_NewRef(cpu_clock);
    self->names = PyDict_New();
    self->errors = PyList_New(0);
    if (self->names == NULL || self->errors == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    for (int f = 0; f < 4; f++) {
        self->phases[f] = PyDict_New();
        if (self->phases[f] == NULL) {
            Py_DECREF(self);
            return NULL;
        }
    }
    if (lp_tree_init(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int rec_traverse(RecorderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->names);
    for (int f = 0; f < 4; f++) {
        Py_VISIT(self->phases[f]);
        Py_VISIT(self->overflow_phase[f]);
    }
    for (int i = 0; i < LP_NAME_CACHE; i++) {
        Py_VISIT(self->name_cache[i].key);
    }
    for (int i = 0; i < LP_PHASE_CACHE; i++) {
        Py_VISIT(self->phase_cache[i].key);
        Py_VISIT(self->phase_cache[i].phase);
    }
    Py_VISIT(self->sync_fn);
    Py_VISIT(self->annotate_enter);
    Py_VISIT(self->annotate_exit);
    Py_VISIT(self->watch_name);
    Py_VISIT(self->watch_fn);
    Py_VISIT(self->clock_fn);
    Py_VISIT(self->cpu_clock_fn);
    Py_VISIT(self->errors);
    return 0;
}

static int rec_clear(RecorderObject *self)
{
    for (int i = 0; i < LP_NAME_CACHE; i++) {
        Py_CLEAR(self->name_cache[i].key);
        self->name_cache[i].canon = NULL;
    }
    for (int i = 0; i < LP_PHASE_CACHE; i++) {
        Py_CLEAR(self->phase_cache[i].key);
        Py_CLEAR(self->phase_cache[i].phase);
    }
    for (int f = 0; f < 4; f++) {
        Py_CLEAR(self->phases[f]);
        Py_CLEAR(self->overflow_phase[f]);
    }
    Py_CLEAR(self->sync_fn);
    Py_CLEAR(self->annotate_enter);
    Py_CLEAR(self->annotate_exit);
    Py_CLEAR(self->watch_name);
    Py_CLEAR(self->watch_fn);
    Py_CLEAR(self->clock_fn);
    Py_CLEAR(self->cpu_clock_fn);
    Py_CLEAR(self->errors);
    /* names is cleared last by dealloc: the tree borrows its strings */
    return 0;
}

static void rec_dealloc(RecorderObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->st != NULL && self->st->primary == self) {
        self->st->primary = NULL;
        atomic_store_explicit(&self->st->main_thread_phase, -1, memory_order_relaxed);
    }
    (void)rec_clear(self);
    lp_tree_free(self);
    Py_CLEAR(self->names);
    Py_CLEAR(self->module);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef rec_methods[] = {
    {"phase", (PyCFunction)(void (*)(void))rec_phase, METH_FASTCALL | METH_KEYWORDS,
     "phase(name, io=False, sync=False) -> Phase: the cached context manager for a named phase."},
    {"count", (PyCFunction)(void (*)(void))rec_count, METH_FASTCALL | METH_KEYWORDS,
     "count(name, n=1): add n to the counter `name` under the phase open in this thread."},
    {"snapshot", (PyCFunction)rec_snapshot, METH_NOARGS,
     "The tree, counters, caps and health as plain Python objects (new each call)."},
    {"reset", (PyCFunction)rec_reset, METH_NOARGS,
     "Forget everything recorded (the fork child's fresh tree); open frames become stale."},
    {"start", (PyCFunction)rec_start, METH_NOARGS, "Record again after stop()."},
    {"stop", (PyCFunction)rec_stop, METH_NOARGS, "Stop recording; phases and counts become no-ops."},
    {"make_primary", (PyCFunction)rec_make_primary, METH_NOARGS,
     "Publish this recorder's main-thread phase through the _C_API capsule."},
    {"path_of", (PyCFunction)rec_path_of, METH_O, "path_of(id) -> str | None: the path of a node id."},
    {"current_path", (PyCFunction)rec_current_path, METH_NOARGS,
     "The path of the innermost phase of this recorder open in this thread, or None."},
    {"set_sync", (PyCFunction)rec_set_sync, METH_O,
     "set_sync(fn | None): fn() runs before the clock at both ends of sync=True phases."},
    {"set_annotate", (PyCFunction)(void (*)(void))rec_set_annotate, METH_FASTCALL,
     "set_annotate(enter_fn | None, exit_fn | None): called with the name around every phase."},
    {"set_watch", (PyCFunction)(void (*)(void))rec_set_watch, METH_FASTCALL,
     "set_watch(name | None, fn | None): fn(n) on the n-th entry into a phase named `name`."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef rec_getset[] = {
    {"active", (getter)rec_get_active, NULL, "Whether phases and counts are recorded.", NULL},
    {"measure_cpu", (getter)rec_get_measure_cpu, NULL, "Whether thread CPU time is read.", NULL},
    {"n_nodes", (getter)rec_get_n_nodes, NULL, "Nodes in the tree, root and overflow included.", NULL},
    {"generation", (getter)rec_get_generation, NULL, "Changes at start, stop and reset.", NULL},
    {"empty", (getter)rec_get_empty, NULL, "True while nothing has been recorded (since the last reset).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot rec_slots[] = {
    {Py_tp_new, rec_new},
    {Py_tp_dealloc, rec_dealloc},
    {Py_tp_traverse, rec_traverse},
    {Py_tp_clear, rec_clear},
    {Py_tp_methods, rec_methods},
    {Py_tp_getset, rec_getset},
    {Py_tp_doc,
     "Recorder(*, measure_cpu=True, max_paths=10000, max_counters=10000, clock=None, cpu_clock=None)\n\n"
     "One process's phase tree and counters."},
    {0, NULL},
};

static PyType_Spec rec_spec = {
    .name = "lineprofiler.accounting._phases.Recorder",
    .basicsize = sizeof(RecorderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = rec_slots,
};

/* ===================================================================== disabled profiler */

static PyObject *noop_phase(NoopObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    if (LP_UNLIKELY(kwnames != NULL || nargs != 1 || !PyUnicode_Check(args[0]))) {
        PyObject *name;
        int flags;
        if (lp_parse_phase_args(args, nargs, kwnames, &name, &flags) < 0) {
            return NULL;
        }
    }
    return Py_NewRef(self->phase);
}

static PyObject *noop_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Noop() takes no arguments");
        return NULL;
    }
    PyObject *module = PyType_GetModuleByDef(type, &lp_module);
    if (module == NULL) {
        return NULL;
    }
    NoopObject *self = (NoopObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->phase = Py_NewRef(lp_get_state(module)->noop_phase);
    return (PyObject *)self;
}

static PyObject *noop_count(NoopObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    if (LP_UNLIKELY(kwnames == NULL && (nargs < 1 || nargs > 2 || !PyUnicode_Check(args[0])))) {
        PyErr_SetString(PyExc_TypeError, "count(name: str, n: int = 1)");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef noop_methods[] = {
    {"phase", (PyCFunction)(void (*)(void))noop_phase, METH_FASTCALL | METH_KEYWORDS,
     "phase(name, io=False, sync=False): the disabled phase (a no-op context manager)."},
    {"count", (PyCFunction)(void (*)(void))noop_count, METH_FASTCALL | METH_KEYWORDS,
     "count(name, n=1): no-op."},
    {NULL, NULL, 0, NULL},
};

static void noop_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(((NoopObject *)self)->phase);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot noop_slots[] = {
    {Py_tp_new, noop_new},
    {Py_tp_dealloc, noop_dealloc},
    {Py_tp_methods, noop_methods},
    {Py_tp_doc, "Noop(): phase() and count() of a disabled profiler."},
    {0, NULL},
};

static PyType_Spec noop_spec = {
    .name = "lineprofiler.accounting._phases.Noop",
    .basicsize = sizeof(NoopObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = noop_slots,
};

/* The disabled phase is one object per module, so its __enter__ and __exit__ are stored on the
 * type as builtin functions already bound to it (not method descriptors): the `with` statement
 * then finds a plain callable and allocates no bound method per use. They ignore their
 * arguments, so type(p).__enter__(p) works too. */
static PyObject *noop_phase_enter(PyObject *self, PyObject *const *Py_UNUSED(args),
                                  Py_ssize_t Py_UNUSED(nargs))
{
    return Py_NewRef(self);
}

static PyObject *noop_phase_exit(PyObject *Py_UNUSED(self), PyObject *const *Py_UNUSED(args),
                                 Py_ssize_t Py_UNUSED(nargs))
{
    Py_RETURN_FALSE;
}

static PyMethodDef noop_enter_def = {"__enter__", (PyCFunction)(void (*)(void))noop_phase_enter,
                                     METH_FASTCALL, "No-op; returns the disabled phase."};
static PyMethodDef noop_exit_def = {"__exit__", (PyCFunction)(void (*)(void))noop_phase_exit, METH_FASTCALL,
                                    "No-op; never suppresses an exception."};

static PyType_Slot noop_phase_slots[] = {
    {Py_tp_dealloc, noop_dealloc},
    {Py_tp_doc, "The phase of a disabled profiler: does nothing."},
    {0, NULL},
};

static PyType_Spec noop_phase_spec = {
    .name = "lineprofiler.accounting._phases.NoopPhase",
    .basicsize = sizeof(NoopObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = noop_phase_slots,
};

/* ===================================================================== module functions */

static PyObject *mod_bucket_edges(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = lp_get_state(module);
    PyObject *t = PyTuple_New(LP_LAST_EDGE + 1);
    if (t == NULL) {
        return NULL;
    }
    for (int k = 0; k <= LP_LAST_EDGE; k++) {
        PyObject *v = PyLong_FromLongLong(st->edges[k]);
        if (v == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, k, v);
    }
    return t;
}

static PyObject *mod_bucket_index(PyObject *module, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLong(lp_bucket(lp_get_state(module), ns));
}

static PyObject *lp_io_tuple(const lp_io_counters *c)
{
    return Py_BuildValue("(LLLLL)", (long long)c->rchar, (long long)c->wchar, (long long)c->read_bytes,
                         (long long)c->write_bytes, (long long)c->cancelled_write_bytes);
}

static PyObject *mod_read_io(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_io_counters c;
    if (lp_io_now(lp_get_state(module), &c, 1) < 0) {
        Py_RETURN_NONE;
    }
    int64_t a[LP_IO_FIELDS];
    lp_io_to_array(&c, a);
    return lp_io_dict(a);
}

/* The profiler's own writes are measured on the writing thread alone (/proc/thread-self/io),
 * so a user thread writing at the same moment keeps its bytes. Where the kernel has no
 * thread-self (before 3.17) it falls back to the process counters. Returns the bytes this read
 * itself added to rchar, or -1. */
static int lp_own_io_now(lp_state *st, lp_io_counters *out, int count_own)
{
    int fd = lp_procio_open("/proc/thread-self/io");
    if (fd < 0) {
        return lp_io_now(st, out, count_own);
    }
    char buf[512];
    ssize_t n = lp_proc_pread(fd, buf, sizeof buf);
    close(fd);
    if (n < 0 || lp_procio_parse(buf, out) < 0) {
        return -1;
    }
    if (count_own) {
        /* this closing read lands in rchar after the values it returned */
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    return (int)n;
}

static PyObject *mod_own_io_begin(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_io_counters c;
    /* this read's own bytes land inside the window, so they are part of `moved` below */
    if (lp_own_io_now(lp_get_state(module), &c, 0) < 0) {
        Py_RETURN_NONE;
    }
    return lp_io_tuple(&c);
}

static PyObject *mod_own_io_end(PyObject *module, PyObject *token)
{
    lp_state *st = lp_get_state(module);
    if (token == Py_None) {
        Py_RETURN_NONE; /* the opening read failed: nothing can be measured */
    }
    long long b[LP_IO_FIELDS];
    if (!PyArg_ParseTuple(token, "LLLLL:own_io_end", &b[0], &b[1], &b[2], &b[3], &b[4])) {
        return NULL;
    }
    lp_io_counters c;
    if (lp_own_io_now(st, &c, 1) < 0) {
        Py_RETURN_NONE;
    }
    int64_t a[LP_IO_FIELDS], moved[LP_IO_FIELDS];
    lp_io_to_array(&c, a);
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        moved[i] = a[i] - b[i] > 0 ? a[i] - b[i] : 0;
        atomic_fetch_add_explicit(&st->own_io[i], moved[i], memory_order_relaxed);
    }
    return lp_io_dict(moved);
}

static PyObject *mod_own_io(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    int64_t v[LP_IO_FIELDS];
    lp_own_io_load(lp_get_state(module), v);
    return lp_io_dict(v);
}

static PyObject *mod_path_of(PyObject *module, PyObject *arg)
{
    lp_state *st = lp_get_state(module);
    if (st->primary == NULL) {
        Py_RETURN_NONE;
    }
    return rec_path_of(st->primary, arg);
}

static PyObject *mod_main_thread_phase(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(
        atomic_load_explicit(&lp_get_state(module)->main_thread_phase, memory_order_relaxed));
}

static PyObject *mod_after_fork_child(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = lp_get_state(module);
    /* The thread that forked is the child's main thread; the others do not exist here. */
    st->main_ident = PyThread_get_thread_ident();
    TStackObject *ts = (TStackObject *)PyThread_tss_get(st->tss);
    if (ts != NULL) {
        ts->is_main = 1;
    }
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        /* the child's /proc/self/io starts from zero, and so do its own writes */
        atomic_store_explicit(&st->own_io[i], 0, memory_order_relaxed);
    }
    atomic_store_explicit(&st->main_thread_phase, -1, memory_order_relaxed);
    Py_RETURN_NONE;
}

static PyObject *mod_thread_cpu_ns(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    LP_UNUSED(module);
    return PyLong_FromLongLong(lp_thread_cpu_ns());
}

static PyObject *mod_cpu_clock_source(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    LP_UNUSED(module);
    return PyUnicode_FromString("clock_gettime");
}

static PyObject *mod_set_io_path(PyObject *module, PyObject *arg)
{
    lp_state *st = lp_get_state(module);
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) {
        return NULL;
    }
    if (strlen(path) >= sizeof st->io_path) {
        PyErr_SetString(PyExc_ValueError, "path too long");
        return NULL;
    }
    strcpy(st->io_path, path);
    if (st->io_fd >= 0) {
        close(st->io_fd);
        st->io_fd = -1;
    }
    Py_RETURN_NONE;
}

/* Runs a deferred callable in the main thread; never lets its exception escape into whatever
 * code the main thread happens to be running. */
static int lp_run_deferred(void *arg)
{
    PyObject *fn = (PyObject *)arg;
    PyObject *saved = PyErr_GetRaisedException();
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL) {
        PyErr_WriteUnraisable(fn);
    }
    Py_XDECREF(r);
    Py_DECREF(fn);
    PyErr_SetRaisedException(saved);
    return 0;
}

static PyObject *mod_defer(PyObject *module, PyObject *fn)
{
    LP_UNUSED(module);
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "defer() needs a callable");
        return NULL;
    }
    Py_INCREF(fn);
    if (Py_AddPendingCall(lp_run_deferred, fn) < 0) {
        Py_DECREF(fn);
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef mod_methods[] = {
    {"defer", mod_defer, METH_O,
     "defer(fn) -> bool: run fn() in the main thread once the current C call returns (a pending call)."},
    {"bucket_edges", mod_bucket_edges, METH_NOARGS, "The histogram's edge table (equals histogram.EDGES)."},
    {"bucket_index", mod_bucket_index, METH_O, "bucket_index(ns): the bucket a duration falls into."},
    {"read_io", mod_read_io, METH_NOARGS, "The /proc/self/io counters as a dict, or None when unreadable."},
    {"own_io_begin", mod_own_io_begin, METH_NOARGS,
     "Read the I/O counters before one of the profiler's own writes; pass the token to own_io_end."},
    {"own_io_end", mod_own_io_end, METH_O,
     "Add what moved since own_io_begin to the process's own-I/O total; returns it, or None."},
    {"own_io", mod_own_io, METH_NOARGS, "The bytes the profiler's own writes moved in this process."},
    {"path_of", mod_path_of, METH_O, "path_of(id): a node id's path in the primary recorder, or None."},
    {"main_thread_phase", mod_main_thread_phase, METH_NOARGS,
     "The node id published for the main thread's innermost phase (-1: none)."},
    {"after_fork_child", mod_after_fork_child, METH_NOARGS, "Reset process-wide state in a fork child."},
    {"thread_cpu_ns", mod_thread_cpu_ns, METH_NOARGS,
     "This thread's CPU time as phases read it (-1: failed)."},
    {"cpu_clock_source", mod_cpu_clock_source, METH_NOARGS, "How thread CPU time is read."},
    {"_set_io_path", mod_set_io_path, METH_O, "Test seam: read I/O counters from another file."},
    {NULL, NULL, 0, NULL},
};

/* ===================================================================== module lifetime */

static int lp_exec(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    (void)pthread_once(&lp_atfork_once, lp_atfork_install);
    st->io_fd = -1;
    strcpy(st->io_path, "/proc/self/io");
    st->io_fork_generation = atomic_load(&lp_fork_generation);
    atomic_init(&st->main_thread_phase, -1);
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        atomic_init(&st->own_io[i], 0);
    }
    st->primary = NULL;
    lp_init_edges(st);

    st->tss = PyThread_tss_alloc();
    if (st->tss == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (PyThread_tss_create(st->tss) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "cannot create thread-specific storage");
        return -1;
    }
    st->tdict_key = PyUnicode_FromFormat("lineprofiler.accounting._phases.stack.%p", (void *)st);
    st->overflow_name = PyUnicode_InternFromString("(overflow)");
    st->slash = PyUnicode_FromString("/");
    st->underscore = PyUnicode_FromString("_");
    if (st->tdict_key == NULL || st->overflow_name == NULL || st->slash == NULL || st->underscore == NULL) {
        return -1;
    }

    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL) {
        return -1;
    }
    PyObject *main = PyObject_CallMethod(threading, "main_thread", NULL);
    Py_DECREF(threading);
    if (main == NULL) {
        return -1;
    }
    PyObject *ident = PyObject_GetAttrString(main, "ident");
    Py_DECREF(main);
    if (ident == NULL) {
        return -1;
    }
    st->main_ident = PyLong_AsUnsignedLong(ident);
    Py_DECREF(ident);
    if (PyErr_Occurred()) {
        return -1;
    }

#define LP_ADD_TYPE(field, spec)                                                                             \
    do {                                                                                                     \
        st->field = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);                           \
        if (st->field == NULL) {                                                                             \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)
    LP_ADD_TYPE(recorder_type, rec_spec);
    LP_ADD_TYPE(phase_type, phase_spec);
    LP_ADD_TYPE(noop_type, noop_spec);
    LP_ADD_TYPE(noop_phase_type, noop_phase_spec);
    LP_ADD_TYPE(tstack_type, tstack_spec);
#undef LP_ADD_TYPE
    if (PyModule_AddType(module, st->recorder_type) < 0 || PyModule_AddType(module, st->phase_type) < 0 ||
        PyModule_AddType(module, st->noop_type) < 0 || PyModule_AddType(module, st->noop_phase_type) < 0) {
        return -1;
    }
    NoopObject *np = (NoopObject *)st->noop_phase_type->tp_alloc(st->noop_phase_type, 0);
    if (np == NULL) {
        return -1;
    }
    np->phase = NULL;
    st->noop_phase = (PyObject *)np;
    PyObject *enter = PyCFunction_NewEx(&noop_enter_def, st->noop_phase, NULL);
    PyObject *exit = enter ? PyCFunction_NewEx(&noop_exit_def, st->noop_phase, NULL) : NULL;
    int set = exit ? PyObject_SetAttrString((PyObject *)st->noop_phase_type, "__enter__", enter) : -1;
    if (set == 0) {
        set = PyObject_SetAttrString((PyObject *)st->noop_phase_type, "__exit__", exit);
    }
    Py_XDECREF(enter);
    Py_XDECREF(exit);
    if (set < 0) {
        return -1;
    }

    st->capi.version = LP_PHASES_CAPI_VERSION;
    st->capi.main_thread_phase = &st->main_thread_phase;
    st->capi.own_io = st->own_io;
    /* The capsule points into this module's state: a user keeps the module alive. */
    PyObject *capsule = PyCapsule_New(&st->capi, LP_PHASES_CAPI_NAME, NULL);
    if (capsule == NULL) {
        return -1;
    }
    int added = PyModule_AddObjectRef(module, "_C_API", capsule);
    Py_DECREF(capsule);
    if (added < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "N_BUCKETS", LP_N_BUCKETS) < 0 ||
        PyModule_AddIntConstant(module, "LAST_EDGE", LP_LAST_EDGE) < 0 ||
        PyModule_AddIntConstant(module, "CAPI_VERSION", LP_PHASES_CAPI_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_MAX_PATHS", LP_DEFAULT_MAX_PATHS) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_MAX_COUNTERS", LP_DEFAULT_MAX_COUNTERS) < 0) {
        return -1;
    }
    return 0;
}

static int lp_traverse(PyObject *module, visitproc visit, void *arg)
{
    lp_state *st = lp_get_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_VISIT(st->recorder_type);
    Py_VISIT(st->phase_type);
    Py_VISIT(st->noop_type);
    Py_VISIT(st->noop_phase_type);
    Py_VISIT(st->tstack_type);
    Py_VISIT(st->noop_phase);
    return 0;
}

static int lp_clear(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_CLEAR(st->noop_phase);
    Py_CLEAR(st->recorder_type);
    Py_CLEAR(st->phase_type);
    Py_CLEAR(st->noop_type);
    Py_CLEAR(st->noop_phase_type);
    Py_CLEAR(st->tstack_type);
    Py_CLEAR(st->tdict_key);
    Py_CLEAR(st->overflow_name);
    Py_CLEAR(st->slash);
    Py_CLEAR(st->underscore);
    return 0;
}

static void lp_free(void *module)
{
    lp_state *st = lp_get_state((PyObject *)module);
    if (st == NULL) {
        return;
    }
    (void)lp_clear((PyObject *)module);
    if (st->io_fd >= 0) {
        close(st->io_fd);
        st->io_fd = -1;
    }
    if (st->tss != NULL) {
        PyThread_tss_delete(st->tss);
        PyThread_tss_free(st->tss);
        st->tss = NULL;
    }
}

static PyModuleDef_Slot lp_slots[] = {
    {Py_mod_exec, lp_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef lp_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "lineprofiler.accounting._phases",
    .m_doc = "The accounting layer's engine: phases, counters, histograms, exact per-phase I/O.",
    .m_size = sizeof(lp_state),
    .m_methods = mod_methods,
    .m_slots = lp_slots,
    .m_traverse = lp_traverse,
    .m_clear = lp_clear,
    .m_free = lp_free,
};

PyMODINIT_FUNC PyInit__phases(void)
{
    return PyModuleDef_Init(&lp_module);
}
