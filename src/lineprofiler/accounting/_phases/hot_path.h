/* The small helpers the phase hot path inlines: the clocks, the bucket, the stack lookup, what
 * the sampler is shown. */
#ifndef LP_PHASES_HOT_PATH_H
#define LP_PHASES_HOT_PATH_H

#include "functions.h"

static inline lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
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
    int m = (int)(((uint64_t)ns >> (l - 3)) & 7u); /* ns >= 31, so l >= 4 */
    int b = st->bucket_start[l * 8 + m];
    while (b <= LP_LAST_EDGE && ns >= st->edges[b]) {
        b++;
    }
    return b;
}

LP_INLINE int64_t lp_wall(lp_RecorderObject *rec)
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
LP_INLINE int64_t lp_cpu(lp_RecorderObject *rec)
{
    if (LP_UNLIKELY(rec->cpu_clock_fn != NULL)) {
        return lp_py_clock(rec, rec->cpu_clock_fn, "cpu_clock");
    }
    return lp_thread_cpu_ns();
}

/* Two boundaries of one thread less than this apart share one read of its CPU clock: the later
 * takes the earlier's value plus the wall time between them. A thread that is running Python
 * code on both sides of an interval this short was running in between (a descheduling lasts
 * far longer), so the error is at most this much, and only towards counting time as CPU. It
 * spares a system call where an exit is followed at once by the next entry. */
#define LP_CPU_SHARE_NS 1000

/* The thread CPU clock for a boundary on stack `ts` at wall time `*wall` (just read).
 *
 * A real read is a system call, and on a busy host the return from one is where the kernel
 * deschedules a thread whose time slice the code before it used up (lazy preemption defers it to
 * there): milliseconds that belong to the code before the boundary, the phase ending at an exit
 * or the parent at an entry. So after a real read the boundary moves to where the read returned:
 * `*wall` becomes that time (a test's wall clock is left as read: its sequence is exact). */
LP_INLINE int64_t lp_cpu_at(lp_RecorderObject *rec, lp_StackObject *ts, const PyThreadState *tstate,
                            int64_t *wall)
{
    if (LP_UNLIKELY(rec->cpu_clock_fn != NULL)) {
        return lp_cpu(rec); /* a test's CPU clock: every boundary reads it */
    }
    int64_t since = *wall - ts->cpu_read_wall;
    if (ts->cpu_read_tstate == tstate && since >= 0 && since < LP_CPU_SHARE_NS) {
        return ts->cpu_read + since;
    }
    int64_t cpu = lp_thread_cpu_ns();
    rec->cpu_clock_reads++;
    if (cpu >= 0) {
        ts->cpu_read = cpu;
        /* The window starts when the system call has returned (the clock was read inside it);
         * a test's wall clock is not read twice, its sequence is exact. */
        ts->cpu_read_wall = LP_LIKELY(rec->clock_fn == NULL) ? lp_monotonic_ns() : *wall;
        ts->cpu_read_tstate = tstate;
        *wall = ts->cpu_read_wall;
    }
    return cpu;
}

static inline void lp_own_io_load(lp_state *st, int64_t *out)
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

static inline lp_node *lp_node_at(lp_RecorderObject *rec, int32_t id)
{
    return &rec->chunks[id / LP_NODE_CHUNK][id % LP_NODE_CHUNK];
}

static inline lp_counter *lp_counter_at(lp_RecorderObject *rec, int32_t i)
{
    return &rec->cchunks[i / LP_COUNTER_CHUNK][i % LP_COUNTER_CHUNK];
}

/* Makes the records made so far visible to a reader of the live file. */
static inline void lp_live_publish(lp_RecorderObject *rec)
{
    if (rec->live.hdr != NULL) {
        __atomic_store_n(&rec->live.hdr->n_nodes, rec->live.n_nodes, __ATOMIC_RELEASE);
        __atomic_store_n(&rec->live.hdr->n_counters, rec->live.n_counters, __ATOMIC_RELEASE);
    }
}

static inline uint32_t lp_hash2(int32_t a, const void *p)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)a * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(h >> 32);
}

/* This context's own stack, or NULL when it has none (no exception set); then *inherited is
 * the stack it sees through the ContextVar (another context's, copied into it) or NULL. The
 * ContextVar read is CPython's cached path while the context does not change; the stack is
 * borrowed: the current context holds it. */
static inline void lp_stack_cache(lp_state *st, PyThreadState *tstate, lp_StackObject *ts, int own)
{
    st->cache_own = own;
    st->cache_stack = ts;
    st->cache_tsid = tstate->id;
    st->cache_ver = tstate->context_ver;
}

LP_INLINE lp_StackObject *lp_stack_own(lp_state *st, PyThreadState *tstate, lp_StackObject **inherited)
{
    lp_StackObject *ts;
    int own;
    if (LP_LIKELY(tstate->id == st->cache_tsid && tstate->context_ver == st->cache_ver)) {
        ts = st->cache_stack;
        own = st->cache_own;
    } else {
        PyObject *v;
        if (LP_UNLIKELY(PyContextVar_Get(st->stack_var, NULL, &v) < 0)) {
            PyErr_Clear();
            v = NULL;
        }
        Py_XDECREF(v); /* the current context holds it */
        ts = (lp_StackObject *)v;
        own = ts != NULL && ts->owner == tstate->context;
        lp_stack_cache(st, tstate, ts, own);
    }
    if (LP_LIKELY(own)) {
        return ts;
    }
    *inherited = ts;
    return NULL;
}

/* The stack whose frames say what is open for the current flow: its own, else the one it
 * inherited (read only), else NULL. For count(), current_path(), make_primary(). */
LP_INLINE lp_StackObject *lp_stack_view(lp_state *st)
{
    lp_StackObject *inherited = NULL;
    lp_StackObject *ts = lp_stack_own(st, PyThreadState_Get(), &inherited);
    return ts != NULL ? ts : inherited;
}

/* Publishes the calling thread's innermost phase for the sampler: one compare and two stores
 * while the same thread keeps its slot. */
LP_INLINE void lp_thread_publish(lp_state *st, PyThreadState *tstate, lp_StackObject *ts, int32_t node_id,
                                 int64_t now_ns)
{
    uint64_t key = (uint64_t)tstate->id + 1;
    if (LP_LIKELY(st->pub_key == key)) {
        lp_thread_slot *slot = &st->threads[st->pub_slot];
        if (LP_LIKELY(atomic_load_explicit(&slot->owner, memory_order_relaxed) == key)) {
            st->slot_stack[st->pub_slot] = ts;
            lp_slot_set(slot, node_id, now_ns);
            return;
        }
    }
    lp_thread_publish_slow(st, tstate, ts, node_id, now_ns);
}

/* The main thread's innermost phase, and since when (CLOCK_MONOTONIC ns), for the sampler. */
LP_INLINE void lp_set_main_phase(lp_state *st, int32_t node_id, int64_t now_ns)
{
    if (atomic_load_explicit(&st->main_thread_phase, memory_order_relaxed) == node_id) {
        return; /* no change: it has held since the time already there */
    }
    atomic_store_explicit(&st->main_thread_since_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&st->main_thread_phase, node_id, memory_order_relaxed);
}

/* A boundary's time for the sampler: the entry's or exit's own clock read, unless a test
 * clock (another time base) stands in for the monotonic clock. */
LP_INLINE int64_t lp_published_ns(const lp_RecorderObject *rec, int64_t wall_ns)
{
    return LP_LIKELY(rec->clock_fn == NULL) ? wall_ns : lp_monotonic_ns();
}

/* The first frame pushed above the base holds the owner; the last one popped lets it go. The
 * caller keeps the stack alive: letting go of a context that is not the current one can free
 * it, and with it the stack. */
static inline void lp_stack_settle(lp_StackObject *ts)
{
    if (ts->depth > ts->n_base) {
        if (!ts->owner_held) {
            Py_INCREF(ts->owner);
            ts->owner_held = 1;
        }
    } else if (ts->owner_held) {
        ts->owner_held = 0;
        Py_DECREF(ts->owner);
    }
}

/* Index of the innermost live frame of `rec` at or below `from`, or -1. */
static inline int32_t lp_find_live(lp_StackObject *ts, lp_RecorderObject *rec, int32_t from)
{
    for (int32_t i = from; i >= 0; i--) {
        if (ts->frames[i].phase->rec == rec && ts->frames[i].gen == rec->gen) {
            return i;
        }
    }
    return -1;
}

#endif /* LP_PHASES_HOT_PATH_H */
