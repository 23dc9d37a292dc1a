/* lineprofiler.lines._tracer: the line tracer behind LineProfiler, in C.
 *
 * What it records: for each code object of the project, hits and time per
 * line. A line's time runs from its LINE event to the next event that ends it
 * in the same frame (the next line, a return, a yield, an unwind), so callees
 * are included. The time this module spends in its own callbacks is removed
 * from every open line, the caller's included (see lp_leave()).
 *
 * How it hears events:
 *  - 3.12+: sys.monitoring. The Python layer registers the Hook objects made
 *    here (vectorcall callables, no Python frame) for LINE, PY_START,
 *    PY_RESUME, PY_RETURN, PY_YIELD, PY_UNWIND and PY_THROW. Code outside the
 *    project gets DISABLE back wherever the event allows it, so it runs at
 *    full speed after its first event per location.
 *  - 3.11: a C trace function (Py_tracefunc), installed per thread. Each
 *    thread gets its own Hook as the trace object, which carries that
 *    thread's state, so the hot path needs no thread lookup.
 *
 * Data layout: one lp_code_t per project code object with a flat array of
 * {hits, ticks} indexed by line - base; a pointer-keyed open-addressing map
 * from code object to record; per thread, a stack of open frames. No Python
 * object is created per event; Python objects are built once, in collect().
 *
 * Failure policy: a callback never raises. The first error is kept, the
 * tracer stops recording ("broken"), and the Python layer raises the kept
 * error from disable() or get_stats(). What was recorded before stays.
 *
 * Thread safety: everything here runs with the GIL held (callbacks, methods).
 * The module does not declare Py_MOD_GIL_NOT_USED, so a free-threaded build
 * re-enables the GIL when it is imported.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#endif

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "_clock.h"
#include "_common.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#define LP_HAVE_TSC 1
#else
#define LP_HAVE_TSC 0
#endif

#if PY_VERSION_HEX >= 0x030C0000
#define LP_MONITORING 1
#else
#define LP_MONITORING 0
#endif

#if PY_VERSION_HEX >= 0x030C0000
#define LP_T_PYSSIZET Py_T_PYSSIZET
#define LP_READONLY   Py_READONLY
#else
#define LP_T_PYSSIZET T_PYSSIZET
#define LP_READONLY   READONLY
#endif

/* ======================================================================
 * Module state
 * ====================================================================== */

enum { LP_CLOCK_TSC = 0, LP_CLOCK_MONOTONIC = 1, LP_CLOCK_TEST = 2 };

typedef struct {
    PyTypeObject *tracer_type;
    PyTypeObject *hook_type;
    /* The started tracer, or NULL (strong). Only one tracer records at a
     * time: sys.monitoring events and the 3.11 trace hook are per process. */
    PyObject *active;
    int default_clock;
    /* TSC calibration origin: ticks are scaled to ns against CLOCK_MONOTONIC
     * over the whole interval from import to the report. */
    int64_t cal_tsc0;
    int64_t cal_ns0;
    /* Test-only clock (_set_test_clock): reads return test_now; the read at
     * the end of every callback first adds test_cost, standing in for the
     * callback's own work, so tests can check exactly that it is not billed. */
    int test_clock;
    int64_t test_now;
    int64_t test_cost;
    /* Foreign decisions are only a cache: past this many, drop them all
     * (_set_foreign_limit() lowers it for tests). */
    Py_ssize_t foreign_limit;
    /* Size line arrays from co_lines() (0 only in tests: forces growth). */
    int presize;
} lp_state;

static lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
}

/* ======================================================================
 * Records: per code object, per thread
 * ====================================================================== */

typedef struct {
    uint64_t hits;
    int64_t ticks;
} lp_line_t;

typedef struct {
    PyObject *code; /* strong: the address cannot be reused while we hold it */
    int first_lineno;
    int is_gen; /* generator, coroutine or async generator */
    int base;   /* line number of lines[0] */
    int n;      /* slots in lines[] */
    lp_line_t *lines;
    int resume_key; /* one-entry cache: resume offset (3.12) -> line */
    int resume_line;
} lp_code_t;

#define LP_NO_LINE (-1)

typedef struct {
    PyObject *code;  /* borrowed; identifies the frame's code (3.12) */
    void *frame;     /* borrowed; identifies the frame (3.11), else NULL */
    lp_code_t *rec;  /* NULL: a frame outside the project (3.11 only) */
    lp_line_t *open; /* the open line's slot in rec->lines, or NULL */
    int64_t vstart;  /* virtual time at which the open line started */
} lp_frame_t;

typedef struct {
    PyThreadState *tstate;
    uint64_t tid;
    lp_frame_t *stack;
    Py_ssize_t depth;
    Py_ssize_t cap;
    /* Ticks spent inside this module's callbacks on this thread. Virtual time
     * (clock - ovh) stops while a callback runs, so open lines never pay for
     * it. */
    int64_t ovh;
    PyObject *last_code; /* one-entry cache for PY_START: code -> project record */
    lp_code_t *last_rec;
#if !LP_MONITORING
    Py_tracefunc prev_func; /* the trace function we replaced on start() */
    PyObject *prev_obj;     /* strong */
#endif
} lp_thread_t;

/* ======================================================================
 * A pointer-keyed open-addressing map (linear probing, no deletion: it is
 * rebuilt to drop entries).
 * ====================================================================== */

typedef struct {
    uintptr_t key; /* 0: empty */
    void *val;
    PyObject *aux; /* strong or NULL: see lp_tracer.codes */
} lp_slot_t;

typedef struct {
    lp_slot_t *slots;
    size_t mask; /* capacity - 1; capacity is a power of two */
    size_t used;
} lp_map_t;

LP_INLINE size_t lp_hash(uintptr_t key)
{
    /* Objects are 16-byte aligned: drop the low bits, then mix (Fibonacci). */
    uint64_t h = (uint64_t)(key >> 4) * UINT64_C(0x9E3779B97F4A7C15);
    return (size_t)(h ^ (h >> 29));
}

LP_INLINE lp_slot_t *lp_map_find(lp_map_t *m, uintptr_t key)
{
    if (m->slots == NULL) {
        return NULL;
    }
    size_t i = lp_hash(key) & m->mask;
    for (;;) {
        lp_slot_t *s = &m->slots[i];
        if (s->key == key) {
            return s;
        }
        if (s->key == 0) {
            return NULL;
        }
        i = (i + 1) & m->mask;
    }
}

/* Returns the slot for key, inserting an empty one ({key, NULL, NULL}) if
 * absent. NULL with MemoryError set on failure. */
static lp_slot_t *lp_map_insert(lp_map_t *m, uintptr_t key)
{
    if (m->slots == NULL || (m->used + 1) * 2 > m->mask + 1) {
        size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
        lp_slot_t *slots = PyMem_Calloc(cap, sizeof(lp_slot_t));
        if (slots == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        if (m->slots != NULL) {
            for (size_t j = 0; j <= m->mask; j++) {
                lp_slot_t *o = &m->slots[j];
                if (o->key == 0) {
                    continue;
                }
                size_t i = lp_hash(o->key) & (cap - 1);
                while (slots[i].key != 0) {
                    i = (i + 1) & (cap - 1);
                }
                slots[i] = *o;
            }
            PyMem_Free(m->slots);
        }
        m->slots = slots;
        m->mask = cap - 1;
    }
    size_t i = lp_hash(key) & m->mask;
    for (;;) {
        lp_slot_t *s = &m->slots[i];
        if (s->key == key) {
            return s;
        }
        if (s->key == 0) {
            s->key = key;
            s->val = NULL;
            s->aux = NULL;
            m->used++;
            return s;
        }
        i = (i + 1) & m->mask;
    }
}

/* ======================================================================
 * The Tracer object
 * ====================================================================== */

typedef struct {
    PyObject_HEAD
    lp_state *st;      /* the module's state; the type keeps the module alive */
    PyObject *filter;  /* callable(code) -> bool: is this code in the project? */
    PyObject *disable; /* sys.monitoring.DISABLE (3.12+), else NULL */
    int on;            /* started and not broken: the one flag the hot path reads */
    int started;
    int broken;
    int clock; /* LP_CLOCK_*, fixed for the life of the recorded data */
    int has_data;
    /* code object -> lp_code_t* (project, val) or LP_FOREIGN (aux holds a
     * strong ref to the co_filename it was decided for: a freed and reused
     * address with a different filename object is decided again, and since
     * the decision is a function of the filename alone, the same filename
     * object means the same answer). */
    lp_map_t codes;
    Py_ssize_t n_foreign;
    lp_code_t **recs; /* project records, in discovery order */
    Py_ssize_t n_recs;
    Py_ssize_t cap_recs;
    lp_map_t threads;       /* PyThreadState* -> lp_thread_t* */
    pthread_t last_pthread; /* one-entry cache for lp_thread() */
    int has_last;
    lp_thread_t *last_thread;
    PyObject *error; /* the first deferred exception, or NULL */
} lp_tracer;

#define LP_FOREIGN     ((lp_code_t *)(uintptr_t)1)
#define LP_MAX_FOREIGN 65536

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    lp_tracer *tracer;   /* strong */
    lp_thread_t *thread; /* 3.11 per-thread hooks; owned by the tracer */
    int kind;
} lp_hook;

enum {
    LP_HOOK_LINE,
    LP_HOOK_START,
    LP_HOOK_RESUME,
    LP_HOOK_RETURN,
    LP_HOOK_YIELD,
    LP_HOOK_UNWIND,
    LP_HOOK_THROW,
    LP_HOOK_THREAD,
    LP_HOOK_COUNT
};

static const char *const lp_hook_names[LP_HOOK_COUNT] = {
    "line", "start", "resume", "return", "yield", "unwind", "throw", "thread",
};

/* ----------------------------------------------------------------------
 * Clock
 * ---------------------------------------------------------------------- */

LP_INLINE int64_t lp_clock(lp_tracer *tr, int leaving)
{
#if LP_HAVE_TSC
    if (LP_LIKELY(tr->clock == LP_CLOCK_TSC)) {
        return (int64_t)__rdtsc();
    }
#endif
    if (tr->clock == LP_CLOCK_MONOTONIC) {
        return lp_monotonic_ns();
    }
    if (leaving) {
        tr->st->test_now += tr->st->test_cost;
    }
    return tr->st->test_now;
}

#if LP_HAVE_TSC
/* The TSC may stand in for a clock only when it ticks at a constant rate in
 * every power state (CPUID 0x80000007 EDX bit 8, "invariant TSC"), and the
 * kernel has not demoted it to an unreliable clocksource. */
static int lp_tsc_usable(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) {
        return 0;
    }
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8))) {
        return 0;
    }
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f != NULL) {
        char buf[64] = {0};
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* The kernel falls back to these when it found the TSC unstable. */
        if (strncmp(buf, "hpet", 4) == 0 || strncmp(buf, "acpi_pm", 7) == 0 ||
            strncmp(buf, "jiffies", 7) == 0) {
            return 0;
        }
    }
    return 1;
}
#endif

/* Reads (tsc, ns) as close together as it can: the TSC is read on both sides
 * of the monotonic read and the midpoint kept. */
static void lp_clock_pair(int64_t *tsc, int64_t *ns)
{
#if LP_HAVE_TSC
    int64_t a = (int64_t)__rdtsc();
    *ns = lp_monotonic_ns();
    int64_t b = (int64_t)__rdtsc();
    *tsc = a + (b - a) / 2;
#else
    *ns = lp_monotonic_ns();
    *tsc = *ns;
#endif
}

/* Nanoseconds per tick of the tracer's clock. For the TSC this is measured
 * against CLOCK_MONOTONIC from import to now, and waits (GIL released) until
 * that interval is at least 20 ms, so the scale is good to a few ppm. */
static double lp_ns_per_tick(lp_tracer *tr)
{
    if (tr->clock != LP_CLOCK_TSC) {
        return 1.0;
    }
    lp_state *st = tr->st;
    int64_t tsc, ns;
    lp_clock_pair(&tsc, &ns);
    if (ns - st->cal_ns0 < 20000000) {
        struct timespec req;
        int64_t wait = 20000000 - (ns - st->cal_ns0);
        req.tv_sec = (time_t)(wait / 1000000000);
        req.tv_nsec = (long)(wait % 1000000000);
        Py_BEGIN_ALLOW_THREADS
        while (nanosleep(&req, &req) != 0 && errno == EINTR) {
        }
        Py_END_ALLOW_THREADS
        lp_clock_pair(&tsc, &ns);
    }
    if (tsc <= st->cal_tsc0) {
        return 1.0;
    }
    return (double)(ns - st->cal_ns0) / (double)(tsc - st->cal_tsc0);
}

static const char *lp_clock_name(int clock)
{
    switch (clock) {
    case LP_CLOCK_TSC:
        return "tsc";
    case LP_CLOCK_MONOTONIC:
        return "monotonic";
    default:
        return "test";
    }
}

/* ----------------------------------------------------------------------
 * Deferred errors
 * ---------------------------------------------------------------------- */

/* Called with an exception set, from inside a callback: keeps the first
 * exception for disable()/get_stats() and stops recording. Leaves no
 * exception set. */
static void lp_fail(lp_tracer *tr)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyObject *exc = PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    PyObject *exc = value;
#endif
    if (tr->error == NULL) {
        tr->error = exc; /* may be NULL if nothing was set: still broken */
    } else {
        Py_XDECREF(exc);
    }
    tr->broken = 1;
    tr->on = 0;
}

/* ----------------------------------------------------------------------
 * Code records
 * ---------------------------------------------------------------------- */

static void lp_code_free(lp_code_t *rec)
{
    Py_XDECREF(rec->code);
    PyMem_Free(rec->lines);
    PyMem_Free(rec);
}

/* Makes lines[] cover `line`. Returns 0, or -1 with MemoryError set. The
 * old array is handed to *old (the caller frees it once open frames no
 * longer point into it). */
static int lp_code_grow(lp_code_t *rec, int line, lp_line_t **old)
{
    *old = NULL;
    int lo = rec->n ? rec->base : line;
    int hi = rec->n ? rec->base + rec->n : line + 1; /* exclusive */
    if (line < lo) {
        lo = line;
    }
    if (line >= hi) {
        hi = line + 1;
    }
    /* Headroom beyond the new line: most functions then grow once or twice. */
    int64_t span = (int64_t)hi - lo;
    int64_t extra = span / 2 + 16;
    int64_t new_hi = (int64_t)hi + extra;
    if (new_hi - lo > (int64_t)(INT_MAX / 2)) {
        new_hi = (int64_t)hi;
    }
    size_t n = (size_t)(new_hi - lo);
    lp_line_t *lines = PyMem_Calloc(n, sizeof(lp_line_t));
    if (lines == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (rec->n) {
        memcpy(lines + (rec->base - lo), rec->lines, (size_t)rec->n * sizeof(lp_line_t));
    }
    *old = rec->lines;
    rec->lines = lines;
    rec->base = lo;
    rec->n = (int)n;
    return 0;
}

/* Sizes lines[] to every line the code object can report (its co_lines()),
 * so the arrays need not grow while recording and frames can point into
 * them. Once per code object. A failure here only means growth later. */
static void lp_code_presize(lp_code_t *rec)
{
    PyObject *it = PyObject_CallMethod(rec->code, "co_lines", NULL);
    if (it == NULL) {
        PyErr_Clear();
        return;
    }
    PyObject *iter = PyObject_GetIter(it);
    Py_DECREF(it);
    if (iter == NULL) {
        PyErr_Clear();
        return;
    }
    long lo = LONG_MAX, hi = -1;
    PyObject *item;
    while ((item = PyIter_Next(iter)) != NULL) {
        if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3) {
            PyObject *ln = PyTuple_GET_ITEM(item, 2);
            if (PyLong_Check(ln)) {
                long v = PyLong_AsLong(ln);
                if (v >= 0 && v <= INT_MAX / 4) {
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
        }
        Py_DECREF(item);
    }
    Py_DECREF(iter);
    PyErr_Clear();
    if (hi < 0) {
        return;
    }
    lp_line_t *lines = PyMem_Calloc((size_t)(hi - lo + 1), sizeof(lp_line_t));
    if (lines == NULL) {
        return;
    }
    rec->lines = lines;
    rec->base = (int)lo;
    rec->n = (int)(hi - lo + 1);
}

/* Decides whether `code` belongs to the project, records the answer, and
 * returns the project record, LP_FOREIGN, or NULL (tracer broken). Runs once
 * per code object: it calls the Python filter, which is not traced (CPython
 * does not deliver events raised inside a callback). */
static lp_code_t *lp_decide(lp_tracer *tr, PyObject *code)
{
    if (!PyCode_Check(code)) {
        return LP_FOREIGN;
    }
    PyObject *res = PyObject_CallOneArg(tr->filter, code);
    if (res == NULL) {
        lp_fail(tr);
        return NULL;
    }
    int yes = PyObject_IsTrue(res);
    Py_DECREF(res);
    if (yes < 0) {
        lp_fail(tr);
        return NULL;
    }
    if (!tr->on) { /* the filter may, in principle, have stopped us */
        return NULL;
    }
    PyCodeObject *co = (PyCodeObject *)code;
    if (!yes && tr->n_foreign >= tr->st->foreign_limit) {
        /* Drop every foreign entry: keeps the map bounded when code objects
         * are made and freed without end (exec in a loop). */
        lp_map_t fresh = {NULL, 0, 0};
        for (size_t j = 0; tr->codes.slots && j <= tr->codes.mask; j++) {
            lp_slot_t *o = &tr->codes.slots[j];
            if (o->key == 0) {
                continue;
            }
            if (o->val == LP_FOREIGN) {
                Py_CLEAR(o->aux);
                continue;
            }
            lp_slot_t *s = lp_map_insert(&fresh, o->key);
            if (s == NULL) {
                PyMem_Free(fresh.slots);
                lp_fail(tr);
                return NULL;
            }
            s->val = o->val;
        }
        PyMem_Free(tr->codes.slots);
        tr->codes = fresh;
        tr->n_foreign = 0;
    }
    if (!yes) {
        lp_slot_t *s = lp_map_insert(&tr->codes, (uintptr_t)code);
        if (s == NULL) {
            lp_fail(tr);
            return NULL;
        }
        if (s->val != LP_FOREIGN) {
            tr->n_foreign++;
        }
        s->val = LP_FOREIGN;
        Py_INCREF(co->co_filename);
        Py_XSETREF(s->aux, co->co_filename);
        return LP_FOREIGN;
    }
    if (tr->n_recs == tr->cap_recs) {
        Py_ssize_t cap = tr->cap_recs ? tr->cap_recs * 2 : 64;
        lp_code_t **recs = PyMem_Realloc(tr->recs, (size_t)cap * sizeof(lp_code_t *));
        if (recs == NULL) {
            PyErr_NoMemory();
            lp_fail(tr);
            return NULL;
        }
        tr->recs = recs;
        tr->cap_recs = cap;
    }
    lp_code_t *rec = PyMem_Calloc(1, sizeof(lp_code_t));
    if (rec == NULL) {
        PyErr_NoMemory();
        lp_fail(tr);
        return NULL;
    }
    Py_INCREF(code);
    rec->code = code;
    rec->first_lineno = co->co_firstlineno;
    rec->is_gen = (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
    rec->resume_key = -1;
    rec->base = co->co_firstlineno;
    tr->recs[tr->n_recs++] = rec;
    if (tr->st->presize) {
        lp_code_presize(rec); /* calls co_lines(): before we hold a slot pointer */
    }
    lp_slot_t *s = lp_map_insert(&tr->codes, (uintptr_t)code);
    if (s == NULL) {
        lp_fail(tr);
        return NULL; /* rec stays in recs[], owned and freed with them */
    }
    if (s->val == LP_FOREIGN) {
        tr->n_foreign--;
    }
    s->val = rec;
    Py_CLEAR(s->aux);
    return rec;
}

/* The record for `code`: project record, LP_FOREIGN, or NULL (broken). */
LP_INLINE lp_code_t *lp_code(lp_tracer *tr, PyObject *code)
{
    lp_slot_t *s = lp_map_find(&tr->codes, (uintptr_t)code);
    if (LP_LIKELY(s != NULL)) {
        if (s->val != LP_FOREIGN) {
            return (lp_code_t *)s->val;
        }
        if (LP_LIKELY(s->aux == ((PyCodeObject *)code)->co_filename)) {
            return LP_FOREIGN;
        }
    }
    return lp_decide(tr, code);
}

/* ----------------------------------------------------------------------
 * Per-thread state
 * ---------------------------------------------------------------------- */

/* The state of thread ts, made on first use. NULL with MemoryError set. */
static lp_thread_t *lp_thread_get(lp_tracer *tr, PyThreadState *ts)
{
    lp_slot_t *s = lp_map_insert(&tr->threads, (uintptr_t)ts);
    if (s == NULL) {
        return NULL;
    }
    lp_thread_t *th = (lp_thread_t *)s->val;
    if (th == NULL) {
        th = PyMem_Calloc(1, sizeof(lp_thread_t));
        if (th == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        th->tstate = ts;
        th->tid = ts->id;
        s->val = th;
    } else if (th->tid != ts->id) {
        /* A new thread reusing a dead thread's PyThreadState address. */
        th->tid = ts->id;
        th->depth = 0;
    }
    return th;
}

/* lp_thread_get() for callbacks: failures are deferred. Refreshes the
 * one-entry cache. */
static lp_thread_t *lp_thread_slow(lp_tracer *tr, pthread_t self)
{
    lp_thread_t *th = lp_thread_get(tr, PyThreadState_Get());
    if (th == NULL) {
        lp_fail(tr);
        return NULL;
    }
    tr->last_pthread = self;
    tr->has_last = 1;
    tr->last_thread = th;
    return th;
}

/* The calling thread's state. The fast path keys on pthread_self(), a load
 * from the thread pointer, because PyThreadState_Get() costs two calls
 * through the PLT (one into the TLS resolver) on every event. The slow path,
 * taken on every switch between threads that run project code, identifies
 * the thread by its PyThreadState and id. A dead thread whose pthread_t a
 * new thread reuses with no event of another thread in between shares its
 * state; its stack is empty by then (every frame it entered has returned),
 * so nothing of it is inherited. */
LP_INLINE lp_thread_t *lp_thread(lp_tracer *tr)
{
    pthread_t self = pthread_self();
    if (LP_LIKELY(tr->has_last && pthread_equal(self, tr->last_pthread))) {
        return tr->last_thread;
    }
    return lp_thread_slow(tr, self);
}

/* ----------------------------------------------------------------------
 * The bookkeeping every event shares
 * ---------------------------------------------------------------------- */

static lp_frame_t *lp_push_slow(lp_tracer *tr, lp_thread_t *th)
{
    Py_ssize_t cap = th->cap ? th->cap * 2 : 32;
    lp_frame_t *stack = PyMem_Realloc(th->stack, (size_t)cap * sizeof(lp_frame_t));
    if (stack == NULL) {
        PyErr_NoMemory();
        lp_fail(tr);
        return NULL;
    }
    th->stack = stack;
    th->cap = cap;
    return &th->stack[th->depth++];
}

LP_INLINE lp_frame_t *lp_push(lp_tracer *tr, lp_thread_t *th, PyObject *code, void *frame, lp_code_t *rec,
                              int64_t v)
{
    lp_frame_t *f;
    if (LP_LIKELY(th->depth < th->cap)) {
        f = &th->stack[th->depth++];
    } else if ((f = lp_push_slow(tr, th)) == NULL) {
        return NULL;
    }
    f->code = code;
    f->frame = frame;
    f->rec = rec;
    f->open = NULL;
    f->vstart = v;
    return f;
}

/* Bills the frame's open line up to virtual time v. */
LP_INLINE void lp_close(lp_frame_t *f, int64_t v)
{
    if (f->open != NULL) {
        f->open->ticks += v - f->vstart;
        f->open = NULL;
    }
}

/* Grows rec's lines[] to cover `line` and re-points every open frame of
 * every thread that pointed into the old array. Rare: arrays are sized from
 * co_lines() when the record is made. Returns 0, or -1 (tracer broken). */
static int lp_grow_and_fix(lp_tracer *tr, lp_code_t *rec, int line)
{
    int old_base = rec->base;
    lp_line_t *old;
    if (lp_code_grow(rec, line, &old) < 0) {
        lp_fail(tr);
        return -1;
    }
    for (size_t j = 0; old != NULL && tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_thread_t *th = (lp_thread_t *)tr->threads.slots[j].val;
        for (Py_ssize_t i = 0; th != NULL && i < th->depth; i++) {
            lp_frame_t *f = &th->stack[i];
            if (f->rec == rec && f->open != NULL) {
                f->open = &rec->lines[old_base + (f->open - old) - rec->base];
            }
        }
    }
    PyMem_Free(old);
    return 0;
}

/* Opens `line` in frame f at virtual time v, counting a hit if `hit`.
 * Returns 0, or -1 (tracer broken). */
LP_INLINE int lp_open(lp_tracer *tr, lp_frame_t *f, int line, int64_t v, int hit)
{
    lp_code_t *rec = f->rec;
    if (LP_UNLIKELY(line < 0)) {
        f->open = NULL;
        return 0;
    }
    if (LP_UNLIKELY((unsigned)(line - rec->base) >= (unsigned)rec->n)) {
        if (lp_grow_and_fix(tr, rec, line) < 0) {
            f->open = NULL;
            return -1;
        }
    }
    lp_line_t *slot = &rec->lines[line - rec->base];
    slot->hits += (uint64_t)hit;
    f->open = slot;
    f->vstart = v;
    return 0;
}

/* End of every callback: the time it took leaves the thread's virtual clock.
 * Read the clock again here, so this callback's work is not billed to the
 * line that opens now nor to any caller's open line. */
LP_INLINE void lp_leave(lp_tracer *tr, lp_thread_t *th, int64_t t0)
{
    th->ovh += lp_clock(tr, 1) - t0;
}

/* Closes every open line of every thread at "now" and empties the stacks. */
static void lp_close_all(lp_tracer *tr)
{
    int64_t now = lp_clock(tr, 0);
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_slot_t *s = &tr->threads.slots[j];
        if (s->key == 0) {
            continue;
        }
        lp_thread_t *th = (lp_thread_t *)s->val;
        if (th == NULL) { /* its allocation failed */
            continue;
        }
        int64_t v = now - th->ovh;
        for (Py_ssize_t i = 0; i < th->depth; i++) {
            if (th->stack[i].rec != NULL) {
                lp_close(&th->stack[i], v);
            }
        }
        th->depth = 0;
    }
}

/* ======================================================================
 * 3.12+: sys.monitoring callbacks
 * ====================================================================== */

#if LP_MONITORING

#define LP_HOOK_TRACER(self) (((lp_hook *)(self))->tracer)

/* The line number argument of a LINE event, or -1. */
LP_INLINE int lp_as_line(PyObject *o)
{
    if (LP_LIKELY(PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o))) {
        Py_ssize_t v = PyUnstable_Long_CompactValue((PyLongObject *)o);
        return (v >= 0 && v <= INT_MAX / 2) ? (int)v : -1;
    }
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return (v >= 0 && v <= INT_MAX / 2) ? (int)v : -1;
}

/* The line at instruction `offset`, cached for the last resume point of the
 * code: a generator usually resumes at the same few yields. */
static int lp_line_at(lp_code_t *rec, PyObject *offset_obj)
{
    int offset = lp_as_line(offset_obj);
    if (offset < 0) {
        return LP_NO_LINE;
    }
    if (rec->resume_key == offset) {
        return rec->resume_line;
    }
    int line = PyCode_Addr2Line((PyCodeObject *)rec->code, offset);
    rec->resume_key = offset;
    rec->resume_line = line < 0 ? LP_NO_LINE : line;
    return rec->resume_line;
}

LP_INLINE PyObject *lp_disable(lp_tracer *tr)
{
    return Py_NewRef(tr->disable);
}

static PyObject *lp_on_line(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    lp_tracer *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread_t *th = lp_thread(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    int64_t v = t0 - th->ovh;
    lp_frame_t *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    if (LP_LIKELY(top != NULL && top->code == code)) {
        lp_close(top, v);
    } else {
        /* Not the frame on top: code we have not decided yet, foreign code,
         * or a frame that was already running when recording started (its
         * PY_START came before us), which we adopt here. */
        lp_code_t *rec = lp_code(tr, code);
        if (rec == LP_FOREIGN) {
            return lp_disable(tr);
        }
        if (rec == NULL) {
            Py_RETURN_NONE;
        }
        top = lp_push(tr, th, code, NULL, rec, v);
        if (top == NULL) {
            Py_RETURN_NONE;
        }
    }
    lp_open(tr, top, lp_as_line(args[1]), v, 1);
    lp_leave(tr, th, t0);
    Py_RETURN_NONE;
}

/* PY_START and PY_RESUME (resume=1) and PY_THROW (resume=2): a frame of
 * this code starts running on this thread. */
LP_INLINE PyObject *lp_on_enter(PyObject *self, PyObject *const *args, size_t nargsf, int resume)
{
    lp_tracer *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread_t *th = lp_thread(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    lp_code_t *rec;
    if (LP_LIKELY(code == th->last_code)) {
        rec = th->last_rec; /* recursion and repeated calls skip the lookup */
    } else {
        rec = lp_code(tr, code);
        if (rec == LP_FOREIGN) {
            if (resume == 2) { /* PY_THROW cannot be disabled */
                Py_RETURN_NONE;
            }
            return lp_disable(tr);
        }
        if (rec == NULL) {
            Py_RETURN_NONE;
        }
        th->last_code = code;
        th->last_rec = rec;
    }
    int64_t v = t0 - th->ovh;
    lp_frame_t *f = lp_push(tr, th, code, NULL, rec, v);
    if (f == NULL) {
        Py_RETURN_NONE;
    }
    if (resume) {
        /* A generator or coroutine resumes in the middle of its yield/await
         * line, and no LINE event follows until the line changes: bill the
         * rest of that line to it, without counting a new hit. */
        lp_open(tr, f, lp_line_at(rec, args[1]), v, 0);
    }
    lp_leave(tr, th, t0);
    Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD and PY_UNWIND (can_disable=0): the frame on top stops
 * running. */
LP_INLINE PyObject *lp_on_exit(PyObject *self, PyObject *const *args, size_t nargsf, int can_disable)
{
    lp_tracer *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 1)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread_t *th = lp_thread(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    lp_frame_t *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    if (LP_LIKELY(top != NULL && top->code == code)) {
        lp_close(top, t0 - th->ovh);
        th->depth--;
        lp_leave(tr, th, t0);
        Py_RETURN_NONE;
    }
    /* Foreign code, or a project frame that started before recording did
     * and was never adopted: nothing of ours is open in it. */
    if (can_disable) {
        lp_code_t *rec = lp_code(tr, code);
        if (rec == LP_FOREIGN) {
            return lp_disable(tr);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *lp_on_start(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, 0);
}

static PyObject *lp_on_resume(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, 1);
}

static PyObject *lp_on_throw(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, 2);
}

static PyObject *lp_on_return(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_exit(self, args, nargsf, 1);
}

static PyObject *lp_on_unwind(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_exit(self, args, nargsf, 0);
}

#else /* !LP_MONITORING */

/* ======================================================================
 * 3.11: the C trace function
 * ====================================================================== */

static int lp_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* The line a resumed generator/coroutine frame stands on; LP_NO_LINE for a
 * fresh start. CPython sets f_lineno before calling a trace function, so
 * PyFrame_GetLineNumber() is a field read here. A fresh generator reports
 * its first line, which is also how we tell it from a resume (a one-line
 * generator body loses the few instructions after its resume: harmless). */
static int lp_resume_line(lp_code_t *rec, PyFrameObject *frame)
{
    int line = PyFrame_GetLineNumber(frame);
    if (line <= 0 || line == rec->first_lineno) {
        return LP_NO_LINE;
    }
    return line;
}

static int lp_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    LP_UNUSED(arg);
    lp_hook *h = (lp_hook *)obj;
    lp_tracer *tr = h->tracer;
    if (LP_UNLIKELY(!tr->on)) {
        return 0;
    }
    lp_thread_t *th = h->thread;
    lp_frame_t *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    int64_t t0;
    switch (what) {
    case PyTrace_LINE:
        t0 = lp_clock(tr, 0);
        if (LP_LIKELY(top != NULL && top->frame == (void *)frame)) {
            if (top->rec == NULL) { /* a foreign frame we pushed: ignore */
                return 0;
            }
            lp_close(top, t0 - th->ovh);
        } else {
            /* A frame's first line event (see PyTrace_CALL), or a frame that
             * was running before recording started. */
            PyCodeObject *co = PyFrame_GetCode(frame);
            Py_DECREF(co); /* the frame holds it; we only need the address */
            lp_code_t *rec;
            if (LP_LIKELY((PyObject *)co == th->last_code)) {
                rec = th->last_rec; /* recursion and repeated calls skip the lookup */
            } else {
                rec = lp_code(tr, (PyObject *)co);
                if (rec == NULL) {
                    return 0;
                }
                if (rec != LP_FOREIGN) {
                    th->last_code = (PyObject *)co;
                    th->last_rec = rec;
                }
            }
            /* Every frame this thread started after it has returned, so this
             * frame is the newest we know of: adopt it, foreign ones too
             * (their later lines then cost one comparison). */
            top = lp_push(tr, th, (PyObject *)co, frame, rec == LP_FOREIGN ? NULL : rec, t0 - th->ovh);
            if (top == NULL || rec == LP_FOREIGN) {
                return 0;
            }
        }
        lp_open(tr, top, PyFrame_GetLineNumber(frame), t0 - th->ovh, 1);
        lp_leave(tr, th, t0);
        return 0;
    case PyTrace_CALL: {
        /* A frame is entered at its first line event (the frame object tells
         * frames apart here, recursion included), so a call costs no clock
         * read: what runs between the call and that first line, the frame's
         * prologue, is part of the call and billed to the caller's line like
         * the rest of it. Generators and coroutines are entered here, because
         * a resumed one runs the rest of its yield line before any line
         * event, and that time is theirs. */
        PyCodeObject *co = PyFrame_GetCode(frame);
        Py_DECREF(co); /* the frame holds it; we only need the address */
        if (!(co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
            return 0;
        }
        t0 = lp_clock(tr, 0);
        lp_code_t *rec;
        if (LP_LIKELY((PyObject *)co == th->last_code)) {
            rec = th->last_rec; /* recursion and repeated calls skip the lookup */
        } else {
            rec = lp_code(tr, (PyObject *)co);
            if (rec == NULL) {
                return 0;
            }
            if (rec != LP_FOREIGN) {
                th->last_code = (PyObject *)co;
                th->last_rec = rec;
            }
        }
        /* Foreign frames are pushed too (rec NULL): their line events then
         * cost one comparison instead of a lookup. */
        if (rec == LP_FOREIGN) {
            rec = NULL;
        }
        int64_t v = t0 - th->ovh;
        lp_frame_t *f = lp_push(tr, th, (PyObject *)co, frame, rec, v);
        if (f == NULL) {
            return 0;
        }
        if (rec != NULL) {
            lp_open(tr, f, lp_resume_line(rec, frame), v, 0);
        }
        lp_leave(tr, th, t0);
        return 0;
    }
    case PyTrace_RETURN: /* return, yield, and unwinding (arg NULL) */
        if (top != NULL && top->frame == (void *)frame) {
            t0 = lp_clock(tr, 0);
            if (top->rec != NULL) {
                lp_close(top, t0 - th->ovh);
            }
            th->depth--;
            lp_leave(tr, th, t0);
        }
        return 0;
    default: /* exception, opcode */
        return 0;
    }
}

static PyObject *lp_hook_new(lp_tracer *tr, int kind, lp_thread_t *th);

/* Installs the C trace function on thread `ts`, remembering what it
 * replaces. Returns 0, or -1 with an exception set. */
static int lp_install(lp_tracer *tr, PyThreadState *ts)
{
    lp_thread_t *th = lp_thread_get(tr, ts);
    if (th == NULL) {
        return -1;
    }
    if (ts->c_tracefunc == lp_trace) {
        lp_hook *cur = (lp_hook *)ts->c_traceobj;
        if (cur != NULL && cur->tracer == tr) {
            return 0;
        }
    }
    PyObject *hook = lp_hook_new(tr, LP_HOOK_THREAD, th);
    if (hook == NULL) {
        return -1;
    }
    Py_tracefunc prev_func = ts->c_tracefunc;
    PyObject *prev_obj = Py_XNewRef(ts->c_traceobj);
    if (_PyEval_SetTrace(ts, lp_trace, hook) < 0) {
        Py_XDECREF(prev_obj);
        Py_DECREF(hook);
        return -1;
    }
    Py_DECREF(hook);
    /* A previous hook of ours (a thread started through threading.settrace,
     * or a tracer that is gone) is not worth restoring. */
    if (prev_obj != NULL && Py_IS_TYPE(prev_obj, tr->st->hook_type)) {
        Py_CLEAR(prev_obj);
        prev_func = NULL;
    }
    Py_XSETREF(th->prev_obj, prev_obj);
    th->prev_func = prev_func;
    /* Entries left from a time this thread lost our trace function (someone
     * called sys.settrace) name frames that may be gone: start clean. */
    th->depth = 0;
    return 0;
}

/* Puts back what lp_install() replaced, on every thread still running our
 * trace function. Errors (an audit hook refusing) are deferred. */
static void lp_uninstall_all(lp_tracer *tr)
{
    PyThreadState *cur = PyThreadState_Get();
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(cur));
    for (; ts != NULL; ts = PyThreadState_Next(ts)) {
        if (ts->c_tracefunc != lp_trace || ts->c_traceobj == NULL ||
            ((lp_hook *)ts->c_traceobj)->tracer != tr) {
            continue;
        }
        lp_thread_t *th = ((lp_hook *)ts->c_traceobj)->thread;
        PyObject *prev = th->prev_obj; /* keep our ref alive across the call */
        th->prev_obj = NULL;
        if (_PyEval_SetTrace(ts, prev ? th->prev_func : NULL, prev) < 0) {
            lp_fail(tr);
        }
        th->prev_func = NULL;
        Py_XDECREF(prev);
    }
}

#endif /* LP_MONITORING */

/* ======================================================================
 * Hook type: the callables handed to sys.monitoring / threading.settrace
 * ====================================================================== */

#if !LP_MONITORING
/* Called as a Python trace function: by a new thread through
 * threading.settrace, or after someone restored sys.gettrace()'s value with
 * sys.settrace(). Switches this thread to the C trace function, and treats
 * this first "call" event as the C function would have. */
static PyObject *lp_on_thread(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    lp_tracer *tr = ((lp_hook *)self)->tracer;
    PyThreadState *ts = PyThreadState_Get();
    if (!tr->on) {
        /* Put back as a Python trace function after recording stopped (code
         * that saved sys.gettrace() and restored it later): take ourselves
         * off this thread rather than cost it a call per Python call. */
        if (ts->c_traceobj == self) {
            PyEval_SetTrace(NULL, NULL);
        }
        Py_RETURN_NONE;
    }
    if (lp_install(tr, ts) < 0) {
        lp_fail(tr);
        Py_RETURN_NONE;
    }
    if (PyVectorcall_NARGS(nargsf) >= 2 && PyFrame_Check(args[0]) && PyUnicode_Check(args[1]) &&
        PyUnicode_CompareWithASCIIString(args[1], "call") == 0) {
        lp_trace(ts->c_traceobj, (PyFrameObject *)args[0], PyTrace_CALL, Py_None);
    }
    Py_RETURN_NONE;
}
#endif

static PyObject *lp_on_nothing(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(self);
    LP_UNUSED(args);
    LP_UNUSED(nargsf);
    LP_UNUSED(kwnames);
    Py_RETURN_NONE;
}

static vectorcallfunc lp_hook_func(int kind)
{
    switch (kind) {
#if LP_MONITORING
    case LP_HOOK_LINE:
        return lp_on_line;
    case LP_HOOK_START:
        return lp_on_start;
    case LP_HOOK_RESUME:
        return lp_on_resume;
    case LP_HOOK_RETURN:
    case LP_HOOK_YIELD:
        return lp_on_return;
    case LP_HOOK_UNWIND:
        return lp_on_unwind;
    case LP_HOOK_THROW:
        return lp_on_throw;
#else
    case LP_HOOK_THREAD:
        return lp_on_thread;
#endif
    default:
        return lp_on_nothing;
    }
}

/* Returns a new reference to a Hook of `kind` bound to tr. */
static PyObject *lp_hook_new(lp_tracer *tr, int kind, lp_thread_t *th)
{
    lp_hook *h = PyObject_GC_New(lp_hook, tr->st->hook_type);
    if (h == NULL) {
        return NULL;
    }
    h->vectorcall = lp_hook_func(kind);
    h->tracer = (lp_tracer *)Py_NewRef((PyObject *)tr);
    h->thread = th;
    h->kind = kind;
    PyObject_GC_Track(h);
    return (PyObject *)h;
}

static int lp_hook_traverse(lp_hook *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->tracer);
    return 0;
}

static int lp_hook_clear(lp_hook *self)
{
    /* A cleared hook must stay safe to call: point it at a no-op. */
    self->vectorcall = lp_on_nothing;
    Py_CLEAR(self->tracer);
    return 0;
}

static void lp_hook_dealloc(lp_hook *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    Py_CLEAR(self->tracer);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *lp_hook_repr(lp_hook *self)
{
    return PyUnicode_FromFormat("<lineprofiler hook %s>", lp_hook_names[self->kind]);
}

static PyMemberDef lp_hook_members[] = {
    {"__vectorcalloffset__", LP_T_PYSSIZET, offsetof(lp_hook, vectorcall), LP_READONLY, NULL},
    {NULL, 0, 0, 0, NULL},
};

static PyType_Slot lp_hook_slots[] = {
    {Py_tp_doc, "A callback of the line tracer (made by Tracer.hook(); not for direct use)."},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_members, lp_hook_members},
    {Py_tp_traverse, lp_hook_traverse},
    {Py_tp_clear, lp_hook_clear},
    {Py_tp_dealloc, lp_hook_dealloc},
    {Py_tp_repr, lp_hook_repr},
    {0, NULL},
};

static PyType_Spec lp_hook_spec = {
    .name = "lineprofiler.lines._tracer.Hook",
    .basicsize = sizeof(lp_hook),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
             Py_TPFLAGS_DISALLOW_INSTANTIATION | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_hook_slots,
};

/* ======================================================================
 * Tracer methods
 * ====================================================================== */

static void lp_tracer_free_data(lp_tracer *tr);

static PyObject *lp_tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"filter", NULL};
    PyObject *filter;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Tracer", kwlist, &filter)) {
        return NULL;
    }
    if (!PyCallable_Check(filter)) {
        PyErr_SetString(PyExc_TypeError, "Tracer(filter): filter must be callable");
        return NULL;
    }
    PyObject *module = PyType_GetModule(type);
    if (module == NULL) {
        return NULL;
    }
    PyObject *disable = NULL;
#if LP_MONITORING
    PyObject *sys_monitoring = PySys_GetObject("monitoring"); /* borrowed */
    if (sys_monitoring == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "lineprofiler: sys.monitoring is missing");
        return NULL;
    }
    disable = PyObject_GetAttrString(sys_monitoring, "DISABLE");
    if (disable == NULL) {
        return NULL;
    }
#endif
    lp_tracer *tr = (lp_tracer *)type->tp_alloc(type, 0);
    if (tr == NULL) {
        Py_XDECREF(disable);
        return NULL;
    }
    tr->st = lp_get_state(module);
    tr->filter = Py_NewRef(filter);
    tr->disable = disable;
    tr->clock = tr->st->default_clock;
    return (PyObject *)tr;
}

static int lp_tracer_traverse(lp_tracer *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->filter);
    Py_VISIT(self->error);
    return 0;
}

static int lp_tracer_clear_refs(lp_tracer *self)
{
    Py_CLEAR(self->filter);
    Py_CLEAR(self->error);
    return 0;
}

static void lp_tracer_dealloc(lp_tracer *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    lp_tracer_free_data(self);
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread_t *th = (lp_thread_t *)self->threads.slots[j].val;
        if (th != NULL) {
            PyMem_Free(th->stack);
#if !LP_MONITORING
            Py_XDECREF(th->prev_obj);
#endif
            PyMem_Free(th);
        }
    }
    PyMem_Free(self->threads.slots);
    lp_tracer_clear_refs(self);
    Py_CLEAR(self->disable);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

/* Frees every record and decision. Only while not started: open frames point
 * at records. */
static void lp_tracer_free_data(lp_tracer *tr)
{
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_thread_t *th = (lp_thread_t *)tr->threads.slots[j].val;
        if (th != NULL) {
            th->last_code = NULL;
            th->last_rec = NULL;
        }
    }
    for (size_t j = 0; tr->codes.slots && j <= tr->codes.mask; j++) {
        Py_CLEAR(tr->codes.slots[j].aux);
    }
    PyMem_Free(tr->codes.slots);
    tr->codes.slots = NULL;
    tr->codes.mask = 0;
    tr->codes.used = 0;
    tr->n_foreign = 0;
    for (Py_ssize_t i = 0; i < tr->n_recs; i++) {
        lp_code_free(tr->recs[i]);
    }
    PyMem_Free(tr->recs);
    tr->recs = NULL;
    tr->n_recs = tr->cap_recs = 0;
    tr->has_data = 0;
}

PyDoc_STRVAR(lp_start_doc, "start()\n--\n\n"
                           "Start recording. On 3.11 this installs the C trace function on every\n"
                           "thread of the interpreter; on 3.12+ the caller registers hook() callables\n"
                           "with sys.monitoring. RuntimeError if another Tracer is recording.");

static PyObject *lp_tracer_start(lp_tracer *self, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = self->st;
    if (self->started) {
        Py_RETURN_NONE;
    }
    if (st->active != NULL && st->active != (PyObject *)self) {
        PyErr_SetString(PyExc_RuntimeError, "lineprofiler: another LineProfiler is already enabled in this "
                                            "process; disable it first (one records at a time)");
        return NULL;
    }
    if (!self->has_data) {
        /* The clock is chosen when recording begins from empty, so all the
         * ticks of one data set share one unit. */
        self->clock = st->test_clock ? LP_CLOCK_TEST : st->default_clock;
        self->has_data = 1;
    }
    st->active = Py_NewRef((PyObject *)self);
    self->started = 1;
    self->broken = 0;
    self->on = 1;
    /* Threads keep their states across sessions; their stacks start empty. */
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread_t *th = (lp_thread_t *)self->threads.slots[j].val;
        if (th != NULL) {
            th->depth = 0;
        }
    }
#if !LP_MONITORING
    PyThreadState *cur = PyThreadState_Get();
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(cur));
    for (; ts != NULL; ts = PyThreadState_Next(ts)) {
        if (lp_install(self, ts) < 0) {
            /* Undo: leave no thread half-installed. */
            PyObject *et, *ev, *etb;
            PyErr_Fetch(&et, &ev, &etb);
            lp_uninstall_all(self);
            self->on = 0;
            self->started = 0;
            Py_CLEAR(st->active);
            PyErr_Restore(et, ev, etb);
            return NULL;
        }
    }
#endif
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_stop_doc, "stop()\n--\n\n"
                          "Stop recording: every open line of every thread is billed up to now, and\n"
                          "on 3.11 the trace functions that start() replaced are put back.");

static PyObject *lp_tracer_stop(lp_tracer *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->started) {
        Py_RETURN_NONE;
    }
#if !LP_MONITORING
    lp_uninstall_all(self);
#endif
    lp_close_all(self);
    self->started = 0;
    self->on = 0;
    if (self->st->active == (PyObject *)self) {
        Py_CLEAR(self->st->active);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_hook_doc, "hook(kind)\n--\n\n"
                          "A new callable for one kind of event: 'line', 'start', 'resume', 'return',\n"
                          "'yield', 'unwind', 'throw' (sys.monitoring, 3.12+) or 'thread' (the\n"
                          "threading.settrace() bootstrap, 3.11).");

static PyObject *lp_tracer_hook(lp_tracer *self, PyObject *kind)
{
    if (!PyUnicode_Check(kind)) {
        PyErr_SetString(PyExc_TypeError, "hook(kind): kind must be a str");
        return NULL;
    }
    for (int k = 0; k < LP_HOOK_COUNT; k++) {
        if (PyUnicode_CompareWithASCIIString(kind, lp_hook_names[k]) == 0) {
            return lp_hook_new(self, k, NULL);
        }
    }
    PyErr_Format(PyExc_ValueError, "hook(kind): unknown kind %R", kind);
    return NULL;
}

PyDoc_STRVAR(lp_collect_doc, "collect()\n--\n\n"
                             "The recorded data: a list of (code, [(line, hits, time_ns), ...]) for every\n"
                             "project code object with at least one hit, ticks converted to ns here.");

static PyObject *lp_tracer_collect(lp_tracer *self, PyObject *Py_UNUSED(ignored))
{
    double scale = lp_ns_per_tick(self);
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (Py_ssize_t i = 0; i < self->n_recs; i++) {
        lp_code_t *rec = self->recs[i];
        PyObject *lines = PyList_New(0);
        if (lines == NULL) {
            goto error;
        }
        for (int k = 0; k < rec->n; k++) {
            lp_line_t *l = &rec->lines[k];
            if (l->hits == 0 && l->ticks == 0) {
                continue;
            }
            /* Tiny negative sums can come from a TSC read on two cores. */
            int64_t ticks = l->ticks > 0 ? l->ticks : 0;
            long long ns = (long long)((double)ticks * scale + 0.5);
            PyObject *t = Py_BuildValue("(iKL)", rec->base + k, (unsigned long long)l->hits, ns);
            if (t == NULL || PyList_Append(lines, t) < 0) {
                Py_XDECREF(t);
                Py_DECREF(lines);
                goto error;
            }
            Py_DECREF(t);
        }
        if (PyList_GET_SIZE(lines) == 0) {
            Py_DECREF(lines);
            continue;
        }
        PyObject *item = PyTuple_Pack(2, rec->code, lines);
        Py_DECREF(lines);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            goto error;
        }
        Py_DECREF(item);
    }
    return out;
error:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(lp_clear_doc, "clear()\n--\n\n"
                           "Forget everything recorded. While recording, counters are zeroed in place\n"
                           "and open lines restart now; otherwise every record is freed.");

static PyObject *lp_tracer_clear(lp_tracer *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->started) {
        lp_tracer_free_data(self);
        Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 0; i < self->n_recs; i++) {
        lp_code_t *rec = self->recs[i];
        if (rec->lines != NULL) {
            memset(rec->lines, 0, (size_t)rec->n * sizeof(lp_line_t));
        }
    }
    int64_t now = lp_clock(self, 0);
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread_t *th = (lp_thread_t *)self->threads.slots[j].val;
        if (th == NULL) {
            continue;
        }
        for (Py_ssize_t i = 0; i < th->depth; i++) {
            th->stack[i].vstart = now - th->ovh;
        }
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_take_error_doc, "take_error()\n--\n\n"
                                "The first exception a callback met (after which recording stopped), or\n"
                                "None. Returns it once.");

static PyObject *lp_tracer_take_error(lp_tracer *self, PyObject *Py_UNUSED(ignored))
{
    if (self->error != NULL) {
        PyObject *e = self->error;
        self->error = NULL;
        self->broken = 0; /* reported: stays off until the next start() */
        return e;
    }
    if (self->broken && !self->started) {
        /* Broken without an exception object: say so rather than nothing. */
        self->broken = 0;
        return PyObject_CallFunction(PyExc_RuntimeError, "s",
                                     "the tracer stopped itself without an exception");
    }
    Py_RETURN_NONE;
}

static PyObject *lp_tracer_get_started(lp_tracer *self, void *closure)
{
    LP_UNUSED(closure);
    return PyBool_FromLong(self->started);
}

static PyObject *lp_tracer_get_recording(lp_tracer *self, void *closure)
{
    LP_UNUSED(closure);
    return PyBool_FromLong(self->on);
}

static PyObject *lp_tracer_get_clock(lp_tracer *self, void *closure)
{
    LP_UNUSED(closure);
    return PyUnicode_FromString(lp_clock_name(self->clock));
}

static PyObject *lp_tracer_get_n_codes(lp_tracer *self, void *closure)
{
    LP_UNUSED(closure);
    return PyLong_FromSsize_t(self->n_recs);
}

static PyObject *lp_tracer_get_n_foreign(lp_tracer *self, void *closure)
{
    LP_UNUSED(closure);
    return PyLong_FromSsize_t(self->n_foreign);
}

static PyGetSetDef lp_tracer_getset[] = {
    {"started", (getter)lp_tracer_get_started, NULL, "True between start() and stop().", NULL},
    {"recording", (getter)lp_tracer_get_recording, NULL, "True while started and not stopped by an error.",
     NULL},
    {"clock", (getter)lp_tracer_get_clock, NULL, "'tsc', 'monotonic' or 'test'.", NULL},
    {"n_codes", (getter)lp_tracer_get_n_codes, NULL, "Project code objects seen.", NULL},
    {"n_foreign", (getter)lp_tracer_get_n_foreign, NULL, "Foreign code objects whose decision is cached now.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef lp_tracer_methods[] = {
    {"start", (PyCFunction)lp_tracer_start, METH_NOARGS, lp_start_doc},
    {"stop", (PyCFunction)lp_tracer_stop, METH_NOARGS, lp_stop_doc},
    {"hook", (PyCFunction)lp_tracer_hook, METH_O, lp_hook_doc},
    {"collect", (PyCFunction)lp_tracer_collect, METH_NOARGS, lp_collect_doc},
    {"clear", (PyCFunction)lp_tracer_clear, METH_NOARGS, lp_clear_doc},
    {"take_error", (PyCFunction)lp_tracer_take_error, METH_NOARGS, lp_take_error_doc},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lp_tracer_slots[] = {
    {Py_tp_doc, "Tracer(filter)\n--\n\n"
                "Records hits and time per line for code objects for which filter(code)\n"
                "is true. Used by lineprofiler.LineProfiler."},
    {Py_tp_new, lp_tracer_new},
    {Py_tp_traverse, lp_tracer_traverse},
    {Py_tp_clear, lp_tracer_clear_refs},
    {Py_tp_dealloc, lp_tracer_dealloc},
    {Py_tp_methods, lp_tracer_methods},
    {Py_tp_getset, lp_tracer_getset},
    {0, NULL},
};

static PyType_Spec lp_tracer_spec = {
    .name = "lineprofiler.lines._tracer.Tracer",
    .basicsize = sizeof(lp_tracer),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_tracer_slots,
};

/* ======================================================================
 * Module functions
 * ====================================================================== */

PyDoc_STRVAR(lp_set_test_clock_doc,
             "_set_test_clock(enabled, callback_cost=0, now=0)\n--\n\n"
             "TEST ONLY. While enabled, tracers that start recording from empty read a\n"
             "fake clock instead of the real one: it stands still except when\n"
             "_advance_test_clock() moves it, and every callback of the tracer advances\n"
             "it by callback_cost between its first and its last clock read, as if the\n"
             "callback had spent that long. One tick is one nanosecond.");

static PyObject *lp_set_test_clock(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"enabled", "callback_cost", "now", NULL};
    int enabled;
    long long cost = 0, now = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "p|LL:_set_test_clock", kwlist, &enabled, &cost, &now)) {
        return NULL;
    }
    if (cost < 0 || now < 0) {
        PyErr_SetString(PyExc_ValueError, "_set_test_clock: callback_cost and now must be >= 0");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    st->test_clock = enabled;
    st->test_cost = cost;
    st->test_now = now;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_advance_test_clock_doc,
             "_advance_test_clock(ns)\n--\n\n"
             "TEST ONLY. Moves the fake clock forward by ns and returns the new reading.");

static PyObject *lp_advance_test_clock(PyObject *module, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ns < 0) {
        PyErr_SetString(PyExc_ValueError, "_advance_test_clock: ns must be >= 0");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    st->test_now += ns;
    return PyLong_FromLongLong(st->test_now);
}

PyDoc_STRVAR(lp_set_foreign_limit_doc,
             "_set_foreign_limit(n)\n--\n\n"
             "TEST ONLY. How many foreign-code decisions a tracer caches before it drops\n"
             "them all (default 65536). Returns the previous limit.");

static PyObject *lp_set_foreign_limit(PyObject *module, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "_set_foreign_limit: n must be >= 1");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    Py_ssize_t prev = st->foreign_limit;
    st->foreign_limit = n;
    return PyLong_FromSsize_t(prev);
}

PyDoc_STRVAR(lp_set_presize_doc, "_set_presize(enabled)\n--\n\n"
                                 "TEST ONLY. Whether new code records size their line arrays from\n"
                                 "co_lines() (the default) or start empty and grow line by line, which\n"
                                 "exercises the growth path. Returns the previous setting.");

static PyObject *lp_set_presize(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    int prev = st->presize;
    st->presize = on;
    return PyBool_FromLong(prev);
}

PyDoc_STRVAR(lp_default_clock_doc, "default_clock()\n--\n\n"
                                   "The clock new tracers use: 'tsc' (an invariant cycle counter, scaled to\n"
                                   "ns against CLOCK_MONOTONIC at report time) or 'monotonic'.");

static PyObject *lp_default_clock(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyUnicode_FromString(lp_clock_name(lp_get_state(module)->default_clock));
}

static PyMethodDef lp_module_methods[] = {
    {"_set_test_clock", (PyCFunction)(void (*)(void))lp_set_test_clock, METH_VARARGS | METH_KEYWORDS,
     lp_set_test_clock_doc},
    {"_advance_test_clock", (PyCFunction)lp_advance_test_clock, METH_O, lp_advance_test_clock_doc},
    {"_set_foreign_limit", (PyCFunction)lp_set_foreign_limit, METH_O, lp_set_foreign_limit_doc},
    {"_set_presize", (PyCFunction)lp_set_presize, METH_O, lp_set_presize_doc},
    {"default_clock", (PyCFunction)lp_default_clock, METH_NOARGS, lp_default_clock_doc},
    {NULL, NULL, 0, NULL},
};

/* ======================================================================
 * Module definition (multi-phase init, module state, heap types)
 * ====================================================================== */

static int lp_exec(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    st->tracer_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &lp_tracer_spec, NULL);
    if (st->tracer_type == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->tracer_type) < 0) {
        return -1;
    }
    st->hook_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &lp_hook_spec, NULL);
    if (st->hook_type == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->hook_type) < 0) {
        return -1;
    }
    st->foreign_limit = LP_MAX_FOREIGN;
    st->presize = 1;
    st->default_clock = LP_CLOCK_MONOTONIC;
#if LP_HAVE_TSC
    const char *want = getenv("LINEPROFILER_CLOCK");
    if ((want == NULL || strcmp(want, "monotonic") != 0) && lp_tsc_usable()) {
        st->default_clock = LP_CLOCK_TSC;
    }
#endif
    lp_clock_pair(&st->cal_tsc0, &st->cal_ns0);
    if (PyModule_AddIntConstant(module, "MONITORING", LP_MONITORING) < 0) {
        return -1;
    }
    return 0;
}

static int lp_traverse(PyObject *module, visitproc visit, void *arg)
{
    lp_state *st = lp_get_state(module);
    Py_VISIT(st->tracer_type);
    Py_VISIT(st->hook_type);
    Py_VISIT(st->active);
    return 0;
}

static int lp_clear(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    Py_CLEAR(st->tracer_type);
    Py_CLEAR(st->hook_type);
    Py_CLEAR(st->active);
    return 0;
}

static void lp_free(void *module)
{
    lp_clear((PyObject *)module);
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
    .m_name = "_tracer",
    .m_doc = "The C line tracer behind lineprofiler.LineProfiler.",
    .m_size = sizeof(lp_state),
    .m_methods = lp_module_methods,
    .m_slots = lp_slots,
    .m_traverse = lp_traverse,
    .m_clear = lp_clear,
    .m_free = lp_free,
};

PyMODINIT_FUNC PyInit__tracer(void)
{
    return PyModuleDef_Init(&lp_module);
}
