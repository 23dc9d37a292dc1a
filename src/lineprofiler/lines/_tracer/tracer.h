/* lineprofiler.lines._tracer: the line tracer behind LineProfiler, in C. Internal header.
 *
 * What it records: for each code object of the project, hits and time per
 * line, and how many frames of it ran (its calls). A line's time runs from its
 * LINE event to the next event that ends it in the same frame (the next line, a
 * return, a yield, an unwind), so callees are included, except a nested
 * activation of the line's own code: that one's time is its own lines' only
 * (lp_nest()), so recursion is counted once. Its self time is the
 * part of that during which it was the innermost open line of its thread: the
 * time of the project's frames it called is left out, the time of code outside
 * the project (builtins, libraries, which have no lines of their own here)
 * stays in. Each thread bills self time to one slot at a time (lp_self_to()),
 * switched with the clock reading a callback takes anyway, so the self times
 * of a thread add up to its recorded time without a second read.
 *
 * Regions: each thread has a current region (0: none), a number the Python
 * layer sets (set_region()) and names. A line that opens while its thread is
 * in region r is recorded in r's own array of the code's lines (lp_region)
 * instead of the code's main one; collect() adds them all up per line, and
 * collect_regions() gives each region's. The common path of LINE reads the
 * region once and, outside any region, works as it did; inside one it takes
 * the general path (lp_slot_of()). A callback reads the clock once on its common path; the slow
 * paths (deciding whether code is ours, growing a table) are timed and
 * removed from every open line, the caller's included (see lp_vnow() and
 * lp_leave()).
 *
 * How it hears events:
 *  - 3.12+: sys.monitoring (monitoring.c). The Python layer registers the Hook
 *    objects made here (vectorcall callables, no Python frame) for LINE,
 *    PY_RESUME, PY_RETURN, PY_YIELD, PY_UNWIND and PY_THROW, and on 3.13+
 *    PY_START. Frames are told apart by the interpreter frame that runs the
 *    callback (the thread state's current frame), so a frame can be entered at
 *    its first LINE event. Code outside the project gets DISABLE back wherever
 *    the event allows it, so it runs at full speed after its first event per
 *    location.
 *  - 3.11: a C trace function (settrace.c), installed per thread. Each thread
 *    gets its own Hook as the trace object, which carries that thread's
 *    state, so the hot path needs no thread lookup. A PEP 523 frame-evaluation
 *    function runs frames of code known to be foreign with tracing off.
 *
 * Data layout (tables.c): one lp_code per project code object with a flat
 * array of {hits, ticks} indexed by line - base; a pointer-keyed
 * open-addressing map from code object to record; per thread, a stack of open
 * frames. No Python object is created per event; Python objects are built
 * once, in collect() (module.c).
 *
 * The files: this header holds the types and every helper a callback calls on
 * its hot path, as always-inline functions, so that a callback compiles to one
 * function as it did when the tracer was one file; the slow paths they fall
 * back to are out of line in tables.c and errors.c; map.h is the pointer map, phase_regions.c the
 * regions of a tracer that follows accounting phases; module.c is the Tracer type
 * and the module, hook.c the Hook type, clock.c the clock's calibration,
 * dev_seams.c the test switches of a development build.
 *
 * Failure policy: a callback never raises an error of its own. The first
 * error is kept, the tracer stops recording ("broken"), and the Python layer
 * raises the kept error from disable() or get_stats(). What was recorded
 * before stays. An exception that is not the tracer's but arrives while a
 * callback runs Python code (a signal handler's KeyboardInterrupt, run by
 * CPython at a check inside the filter) is the user's: the callback raises
 * it into the user's code, where it would have surfaced anyway, and the
 * tracer records on (see lp_decide()).
 *
 * Thread safety: everything here runs with the GIL held (callbacks, methods).
 * The module does not declare Py_MOD_GIL_NOT_USED, so a free-threaded build
 * re-enables the GIL when it is imported.
 */
#ifndef LP_TRACER_H
#define LP_TRACER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <frameobject.h>
#if PY_VERSION_HEX < 0x030C0000
#include <structmember.h>
#endif

#include <limits.h>
#include <pthread.h>
#include <stdint.h>

#include "_clock.h"
#include "_common.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define LP_HAVE_TSC 1
#else
#define LP_HAVE_TSC 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define LP_NOINLINE __attribute__((noinline))
#else
#define LP_NOINLINE
#endif

#if PY_VERSION_HEX >= 0x030C0000
#define LP_MONITORING 1
#else
#define LP_MONITORING 0
#endif

/* ===================================================================== module state */

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
    /* Test-only clock (_set_test_clock): reads return test_now; the read that
     * ends a timed slow path (lp_leave()) first adds test_cost, standing in for
     * its work, so tests can check exactly that it is not billed. */
    int test_clock;
    int64_t test_now;
    int64_t test_cost;
    /* Foreign decisions are only a cache: past this many, drop them all
     * (_set_foreign_limit() lowers it for tests). */
    Py_ssize_t foreign_limit;
    /* Size line arrays from co_lines() (0 only in tests: forces growth). */
    int presize;
    int64_t floor_sink; /* where the benchmark's floor callbacks put their clock reads */
} lp_state;

/* ===================================================================== records */

typedef struct {
    uint64_t hits;
    int64_t ticks;
    int64_t self; /* ticks during which this line was its thread's innermost open line */
} lp_line;

/* What one code object recorded while one region was current. */
typedef struct {
    lp_line *lines; /* same base and size as the code's lines[]; NULL until used */
    uint64_t calls;
} lp_region;

#define LP_MAX_REGION 1000000

/* One project code object. */
typedef struct {
    PyObject *code; /* strong: the address cannot be reused while we hold it */
    int first_lineno;
    int is_gen; /* generator, coroutine or async generator */
    /* 3.13+: 1 when LINE may not be emitted for the frame's first line unless
     * PY_START is listened to (see lp_needs_start()); else PY_START is
     * disabled for the code and its frames are pushed at their first LINE. */
    int needs_start;
    int base; /* line number of lines[0] */
    int n;    /* slots in lines[] */
    lp_line *lines;
    int resume_key; /* one-entry cache: resume offset (3.12+) -> line */
    int resume_line;
    uint64_t calls;     /* frames of this code pushed fresh: see lp_count_call() */
    lp_region *regions; /* indexed by region number; [0] unused */
    int n_regions;      /* slots in regions[] */
    Py_ssize_t index;   /* its place in the tracer's recs[]: the key of lp_thread.top_of[] */
} lp_code;

#define LP_NO_LINE (-1)

/* An open frame on a thread's stack. */
typedef struct {
    PyObject *code; /* borrowed; identifies the frame's code (3.12) */
    void *frame;    /* borrowed; identifies the frame (3.11), else NULL */
    lp_code *rec;   /* NULL: a frame outside the project (3.11 only) */
    lp_line *open;  /* the open line's slot in rec->lines, or NULL */
    int64_t vstart; /* virtual time at which the open line started */
    /* 1 + the stack index of the frame below that runs the same code (recursion, direct or
     * through other functions), or 0. That frame's open line is paused while this one runs:
     * see lp_nest(). */
    Py_ssize_t outer;
} lp_frame;

typedef struct {
    PyThreadState *tstate;
    uint64_t tid;
    lp_frame *stack;
    Py_ssize_t depth;
    Py_ssize_t cap;
    /* Indexed by lp_code.index: 1 + the stack index of the innermost frame of that code on
     * this thread's stack, or 0 (none, or past n_top_of). Zeroed whenever the stack empties
     * outside a callback (lp_stack_forget()). */
    Py_ssize_t *top_of;
    Py_ssize_t n_top_of;
    /* Ticks spent inside this module's callbacks on this thread. Virtual time
     * (clock - ovh) stops while a callback runs, so open lines never pay for
     * it. */
    int64_t ovh;
    PyObject *last_code; /* one-entry cache for PY_START: code -> project record */
    lp_code *last_rec;
    /* The user's exception that arrived while a callback on this thread was
     * deciding code (strong), raised by that callback as it returns; NULL
     * between callbacks. Per thread: a callback can let other threads run. */
    PyObject *user_exc;
    /* Where self time goes now: the innermost open line of this thread, or
     * &sink when none is (sink is never read), since virtual time self_v. */
    lp_line *self_slot;
    int64_t self_v;
    lp_line sink;
    int region; /* the thread's current region, 0 for none (set_region()) */
    /* A tracer that follows phases (phase_regions.c): this thread's slot in _phases' table
     * (an lp_thread_slot *, NULL when not found), and lines to go before it is looked for
     * through the whole table again. */
    void *phase_slot;
    uint32_t phase_scan;
#if !LP_MONITORING
    Py_tracefunc prev_func; /* the trace function we replaced on start() */
    PyObject *prev_obj;     /* strong */
#endif
} lp_thread;

#include "map.h"

/* ===================================================================== objects */

typedef struct lp_follow lp_follow;

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
    /* ns per tick fixed at the first collect after recording stopped (0: none yet), so every
     * read of the same data gives the same numbers; recording again drops it. */
    double idle_scale;
    /* code object -> lp_code* (project, val) or LP_FOREIGN (aux holds a
     * strong ref to the co_filename it was decided for: a freed and reused
     * address with a different filename object is decided again, and since
     * the decision is a function of the filename alone, the same filename
     * object means the same answer). */
    lp_map codes;
    Py_ssize_t n_foreign;
    lp_code **recs; /* project records, in discovery order */
    Py_ssize_t n_recs;
    Py_ssize_t cap_recs;
    lp_map threads;     /* PyThreadState* -> lp_thread* */
    uintptr_t last_key; /* one-entry cache for lp_thread_current(): lp_thread_key() */
    int has_last;
    lp_thread *last_thread;
    PyObject *error; /* the first deferred exception, or NULL */
    /* Set by follow_phases(): every line is keyed by the accounting phase open on its
     * thread, as a region (phase_regions.c); NULL for a LineProfiler's own regions. */
    lp_follow *follow;
    /* Set by pause_after() (timed_pause.c): the clock reading at which the callbacks were
     * switched off, up to which stop() bills the open lines; 0: none. */
    int64_t stop_mark;
} lp_TracerObject;

#define LP_FOREIGN     ((lp_code *)(uintptr_t)1)
#define LP_MAX_FOREIGN 65536

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    lp_TracerObject *tracer; /* strong */
    lp_thread *thread;       /* 3.11 per-thread hooks; owned by the tracer */
    int kind;
} lp_HookObject;

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

/* ===================================================================== out of line */

/* Symbols shared between the files of this extension. The extension is built with
 * -fvisibility=hidden, so none of them is exported or called through the PLT. */

/* errors.c */
void lp_fail(lp_TracerObject *tr);
int lp_raise_user_exc(lp_thread *th);
int lp_ask_filter(lp_TracerObject *tr, lp_thread *th, PyObject *code);

/* tables.c */
lp_code *lp_decide(lp_TracerObject *tr, lp_thread *th, PyObject *code);
lp_thread *lp_thread_get(lp_TracerObject *tr, PyThreadState *ts);
lp_thread *lp_thread_slow(lp_TracerObject *tr, uintptr_t key);
lp_frame *lp_push_slow(lp_TracerObject *tr, lp_thread *th);
int lp_top_of_grow(lp_TracerObject *tr, lp_thread *th, Py_ssize_t index);
void lp_stack_forget(lp_thread *th);
int lp_grow_timed(lp_TracerObject *tr, lp_thread *th, lp_code *rec, int line);
lp_line *lp_region_slot(lp_TracerObject *tr, lp_thread *th, lp_code *rec, int index);
void lp_region_call(lp_TracerObject *tr, lp_thread *th, lp_code *rec);
void lp_close_all(lp_TracerObject *tr);
void lp_tracer_free_data(lp_TracerObject *tr);

/* monitoring.c (3.12+) or settrace.c (3.11): the vectorcall function of a Hook of this kind on
 * this build's event path, or NULL when the path has none for it. */
vectorcallfunc lp_path_callback(int kind);

#if !LP_MONITORING
/* settrace.c */
int lp_install(lp_TracerObject *tr, PyThreadState *ts);
void lp_uninstall_all(lp_TracerObject *tr);
int lp_foreign_trace_function(PyTypeObject *hook_type);
void lp_eval_install(void);
void lp_eval_uninstall(void);
#endif

/* phase_regions.c */
int lp_follow_region(lp_TracerObject *tr, lp_thread *th);
void lp_follow_window(lp_TracerObject *tr);
void lp_follow_clear(lp_TracerObject *tr);
void lp_follow_free(lp_TracerObject *tr);
PyObject *lp_tracer_follow_phases(lp_TracerObject *self, PyObject *args);
PyObject *lp_tracer_phase_regions(lp_TracerObject *self, PyObject *ignored);

/* timed_pause.c */
PyObject *lp_tracer_pause_after(lp_TracerObject *self, PyObject *arg);

/* hook.c */
extern const char *const lp_hook_names[LP_HOOK_COUNT];
extern PyType_Spec lp_hook_spec;
PyObject *lp_hook_new(lp_TracerObject *tr, int kind, lp_thread *th);

/* clock.c */
int lp_tsc_usable(void); /* with a TSC only */
void lp_clock_pair(int64_t *tsc, int64_t *ns);
double lp_ns_per_tick(lp_TracerObject *tr);
const char *lp_clock_name(int clock);

int lp_add_dev_seams(PyObject *module); /* dev_seams.c, a development build's only */

/* ===================================================================== hot path: clock */

/* The TSC; where there is none, never called (no tracer has LP_CLOCK_TSC). */
LP_INLINE int64_t lp_tsc(void)
{
#if LP_HAVE_TSC
    return (int64_t)__rdtsc();
#else
    return 0;
#endif
}

LP_INLINE int64_t lp_clock(lp_TracerObject *tr, int leaving)
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

/* ===================================================================== hot path: lookups */

/* The record for `code` if it was decided already: project record,
 * LP_FOREIGN, or NULL (not decided yet: see lp_decide_timed()). */
LP_INLINE lp_code *lp_code_find(lp_TracerObject *tr, PyObject *code)
{
    lp_slot *s = lp_map_find(&tr->codes, (uintptr_t)code);
    if (LP_LIKELY(s != NULL)) {
        if (s->val != LP_FOREIGN) {
            return (lp_code *)s->val;
        }
        if (LP_LIKELY(s->aux == ((PyCodeObject *)code)->co_filename)) {
            return LP_FOREIGN;
        }
    }
    return NULL;
}

/* A key for the calling thread, unique among running threads: the thread
 * pointer, which is what pthread_self() returns on glibc, read inline. */
LP_INLINE uintptr_t lp_thread_key(void)
{
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__aarch64__)) && !defined(__clang__)
    return (uintptr_t)__builtin_thread_pointer();
#else
    return (uintptr_t)pthread_self();
#endif
}

/* The calling thread's state. The fast path keys on lp_thread_key(), a
 * register read, because PyThreadState_Get() costs two calls through the PLT
 * (one into the TLS resolver) on every event. The slow path, taken on every
 * switch between threads that run project code, identifies the thread by its
 * PyThreadState and id. A dead thread whose key a new thread reuses with no
 * event of another thread in between shares its state; its stack is empty by
 * then (every frame it entered has returned), so nothing of it is inherited. */
LP_INLINE lp_thread *lp_thread_current(lp_TracerObject *tr)
{
    uintptr_t key = lp_thread_key();
    if (LP_LIKELY(tr->has_last && key == tr->last_key)) {
        return tr->last_thread;
    }
    return lp_thread_slow(tr, key);
}

/* ===================================================================== hot path: bookkeeping */

LP_INLINE lp_frame *lp_push(lp_TracerObject *tr, lp_thread *th, PyObject *code, void *frame, lp_code *rec,
                            int64_t v)
{
    lp_frame *f;
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
    f->outer = 0;
    if (rec != NULL) {
        if (LP_UNLIKELY(rec->index >= th->n_top_of) && lp_top_of_grow(tr, th, rec->index) < 0) {
            th->depth--;
            return NULL;
        }
        f->outer = th->top_of[rec->index];
        th->top_of[rec->index] = th->depth;
    }
    return f;
}

/* Frame f, just pushed, runs from virtual time v. When it runs inside an activation of its own
 * code (f->outer), that activation's open line is billed up to v and paused until f ends
 * (lp_unnest()): the time of the inner activation is billed to its own lines only, once, not
 * again to the line of the outer one that led to it. So a function's lines add up to the time
 * it was on the stack (cProfile's cumulative time) and no line exceeds the outermost call's
 * wall time. Self time is not affected: a paused line is never the innermost open one. */
LP_INLINE void lp_nest(lp_thread *th, lp_frame *f, int64_t v)
{
    if (LP_UNLIKELY(f->outer != 0)) {
        lp_frame *o = &th->stack[f->outer - 1];
        if (o->open != NULL) {
            o->open->ticks += v - o->vstart;
        }
        o->vstart = v;
    }
}

/* Frame f, just taken off th's stack, ended at virtual time v: the activation of its code
 * below, if any, is the innermost again and its open line resumes at v. */
LP_INLINE void lp_unnest(lp_thread *th, lp_frame *f, int64_t v)
{
    if (f->rec != NULL) {
        th->top_of[f->rec->index] = f->outer;
        if (LP_UNLIKELY(f->outer != 0)) {
            th->stack[f->outer - 1].vstart = v;
        }
    }
}

/* From virtual time v on, thread th's self time goes to `slot` (not NULL);
 * what went to the slot before is billed up to v. */
LP_INLINE void lp_self_to(lp_thread *th, lp_line *slot, int64_t v)
{
    th->self_slot->self += v - th->self_v;
    th->self_slot = slot;
    th->self_v = v;
}

/* The innermost open line on th's stack, or &th->sink: where self time goes
 * once the frame on top has ended. Usually the frame just below. */
LP_INLINE lp_line *lp_innermost(lp_thread *th)
{
    for (Py_ssize_t i = th->depth; i-- > 0;) {
        if (th->stack[i].open != NULL) {
            return th->stack[i].open;
        }
    }
    return &th->sink;
}

/* A thread's stack emptied outside a callback (start, a new trace function,
 * a reused thread state): no slot it pointed at may be billed again. */
LP_INLINE void lp_self_reset(lp_thread *th)
{
    th->self_slot = &th->sink;
}

/* A frame of rec starts afresh (not a resume, not a frame adopted at its
 * first event after recording began: those cannot be told apart from a
 * fresh start on every path, see lp_line_new()): one more call. */
LP_INLINE void lp_count_call(lp_TracerObject *tr, lp_thread *th, lp_code *rec)
{
    rec->calls++;
    if (LP_UNLIKELY(th->region != 0)) {
        lp_region_call(tr, th, rec);
    }
}

/* Bills the frame's open line up to virtual time v. */
LP_INLINE void lp_close(lp_frame *f, int64_t v)
{
    if (f->open != NULL) {
        f->open->ticks += v - f->vstart;
        f->open = NULL;
    }
}

/* The slot of `line` in rec (in the array of th's region when it is in
 * one), grown into if need be; NULL for no line or when growing failed
 * (tracer broken). The growth's own time is not billed. */
LP_INLINE lp_line *lp_slot_of(lp_TracerObject *tr, lp_thread *th, lp_code *rec, int line)
{
    if (LP_UNLIKELY(line < 0)) {
        return NULL;
    }
    if (LP_UNLIKELY((unsigned)(line - rec->base) >= (unsigned)rec->n)) {
        if (lp_grow_timed(tr, th, rec, line) < 0) {
            return NULL;
        }
    }
    if (LP_UNLIKELY(th->region != 0)) {
        return lp_region_slot(tr, th, rec, line - rec->base);
    }
    return &rec->lines[line - rec->base];
}

/* Opens `slot` (may be NULL) in frame f at virtual time v, counting a hit
 * if `hit`. f is the frame running on thread th, so its line is the
 * innermost open one from now on. */
LP_INLINE void lp_open(lp_thread *th, lp_frame *f, lp_line *slot, int64_t v, int hit)
{
    f->open = slot;
    f->vstart = v;
    if (slot != NULL) {
        slot->hits += (uint64_t)hit;
        lp_self_to(th, slot, v);
    } else {
        lp_self_to(th, &th->sink, v);
    }
}

/* The frame on top of th, whose open line was billed up to v, has ended:
 * self time goes back to the line below that is open. */
LP_INLINE void lp_pop(lp_thread *th, int64_t v)
{
    th->depth--;
    lp_unnest(th, &th->stack[th->depth], v);
    lp_self_to(th, lp_innermost(th), v);
}

/* The virtual time now on thread th: the clock less the time this thread
 * spent in the slow paths of the callbacks.
 *
 * The common path of a callback reads the clock once, after everything it
 * had to look up, and closes and opens lines with that one reading: the few
 * nanoseconds of its own work before the read are billed to the line that
 * was open, as CPython's own cost of delivering the event is. A second read
 * to take them out would cost more than it removes. The slow paths (deciding
 * whether code is ours, which calls the Python filter; growing a table) are
 * timed and taken out of every open line: see lp_leave(). */
LP_INLINE int64_t lp_vnow(lp_TracerObject *tr, lp_thread *th)
{
    return lp_clock(tr, 0) - th->ovh;
}

/* End of a slow path that began at clock reading t0: the time it took leaves
 * the thread's virtual clock, so it is billed neither to the line that opens
 * now nor to any caller's open line. */
LP_INLINE void lp_leave(lp_TracerObject *tr, lp_thread *th, int64_t t0)
{
    th->ovh += lp_clock(tr, 1) - t0;
}

/* The frame on top of th, which has no open line, has ended. No clock is read unless an
 * activation of its code below resumes (lp_unnest()). */
LP_INLINE void lp_drop(lp_TracerObject *tr, lp_thread *th)
{
    lp_frame *f = &th->stack[--th->depth];
    lp_unnest(th, f, LP_UNLIKELY(f->outer != 0) ? lp_vnow(tr, th) : 0);
}

/* lp_decide() with its time taken out of the thread's virtual clock. */
LP_INLINE lp_code *lp_decide_timed(lp_TracerObject *tr, lp_thread *th, PyObject *code)
{
    int64_t t0 = lp_clock(tr, 0);
    lp_code *rec = lp_decide(tr, th, code);
    lp_leave(tr, th, t0);
    return rec;
}

/* The record for `code`, deciding it (timed) if need be: project record,
 * LP_FOREIGN, or NULL (tracer broken, or the user's exception arrived while
 * deciding: the callback does nothing more and returns
 * lp_raise_user_exc()'s answer). */
LP_INLINE lp_code *lp_code_of(lp_TracerObject *tr, lp_thread *th, PyObject *code)
{
    lp_code *rec = lp_code_find(tr, code);
    return LP_LIKELY(rec != NULL) ? rec : lp_decide_timed(tr, th, code);
}

/* lp_code_of() through the thread's one-entry cache: both event paths enter a frame through
 * it, and recursion and repeated calls of one function skip the map lookup. Only project
 * records are cached: a record holds its code (strong), so the cached address cannot have been
 * reused by a new code object, which a foreign decision does not guarantee. */
LP_INLINE lp_code *lp_code_cached(lp_TracerObject *tr, lp_thread *th, PyObject *code)
{
    if (LP_LIKELY(code == th->last_code)) {
        return th->last_rec;
    }
    lp_code *rec = lp_code_of(tr, th, code);
    if (rec != NULL && rec != LP_FOREIGN) {
        th->last_code = code;
        th->last_rec = rec;
    }
    return rec;
}

#endif /* LP_TRACER_H */
