/* The Phase type and the hot path: enter, exit and the repairs of misuse. Everything
 * `with profiler.phase(...)` runs per entry is in this file or inline in phases.h, so the
 * compiler sees it whole. */
#include "phases.h"

/* ===================================================================== publishing */

/* The sampler reads the innermost phase of the main thread's current flow: that of the stack
 * the main thread entered or left a phase on last. */
LP_INLINE void lp_publish_main(lp_RecorderObject *rec, PyThreadState *tstate, lp_StackObject *ts,
                               int32_t node_id, int64_t wall_ns)
{
    lp_state *st = rec->st;
    if (st->primary != rec) {
        return;
    }
    int64_t now = lp_published_ns(rec, wall_ns);
    lp_thread_publish(st, tstate, ts, node_id, now);
    if (tstate == st->main_tstate) {
        st->main_stack = ts;
        lp_set_main_phase(st, node_id, now);
    }
}

/* After another thread changed a stack: published again when it is the main thread's. */
static void lp_publish_stack(lp_RecorderObject *rec, lp_StackObject *ts)
{
    lp_state *st = rec->st;
    if (st->primary != rec) {
        return;
    }
    int32_t live = lp_find_live(ts, rec, ts->depth - 1);
    int32_t node_id = live >= 0 ? ts->frames[live].node_id : -1;
    int64_t now = lp_monotonic_ns();
    lp_threads_stack_changed(st, ts, node_id, now);
    if (st->main_stack == ts) {
        lp_set_main_phase(st, node_id, now);
    }
}

/* ===================================================================== phases: enter */

/* Which cap sent an entry to the overflow node: an entry below a frame already there is
 * counted with that frame's cap; otherwise the depth cap when its parent is as deep as allowed,
 * else the path cap (or the phase-name cap, or no memory). */
static uint8_t lp_overflow_reason(lp_RecorderObject *rec, lp_StackObject *ts, int32_t parent_idx,
                                  int32_t parent_id)
{
    if (parent_idx >= 0 && ts->frames[parent_idx].node->overflow) {
        return ts->frames[parent_idx].over;
    }
    if (parent_id != LP_OVERFLOW && lp_node_at(rec, parent_id)->depth >= rec->max_depth) {
        return LP_OVER_DEPTH;
    }
    return LP_OVER_PATHS;
}

static void lp_enter_hooks(lp_PhaseObject *self, lp_RecorderObject *rec)
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
    if (self->gpu && rec->gpu_enter != NULL) { /* last: its start event follows the sync's work */
        PyObject *fn = Py_NewRef(rec->gpu_enter);
        lp_call_hook(rec, fn, self->canon, "gpu enter");
        Py_DECREF(fn);
    }
}

static PyObject *lp_phase_enter(lp_PhaseObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_RecorderObject *rec = self->rec;
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
    PyThreadState *tstate = PyThreadState_Get();
    /* A thread's first traced entry asks threading for its name: Python code, so before the
     * stack is looked up and the frame pushed. */
    int32_t tthread = -1;
    if (LP_UNLIKELY(rec->trace != NULL)) {
        tthread = lp_trace_thread_of(rec, tstate);
        if (!rec->active) {
            return Py_NewRef(self);
        }
    }
    lp_StackObject *inherited = NULL;
    lp_StackObject *ts = lp_stack_own(st, tstate, &inherited);
    if (LP_UNLIKELY(ts == NULL)) {
        ts = lp_stack_create(st, tstate, inherited);
        if (ts == NULL) {
            lp_record_error(rec, "phase stack");
            rec->dropped_entries++;
            return Py_NewRef(self);
        }
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
    lp_frame *f = &ts->frames[ts->depth++];
    if (LP_UNLIKELY(node->overflow)) {
        f->over = lp_overflow_reason(rec, ts, parent_idx, parent_id);
        if (f->over == LP_OVER_DEPTH) {
            rec->depth_overflowed++;
        } else {
            rec->paths_overflowed++;
        }
    }
    f->phase = (lp_PhaseObject *)Py_NewRef(self);
    f->node = node;
    f->node_id = node->id;
    f->gen = rec->gen;
    f->parent = parent_idx;
    f->child_ns = 0;
    f->t0 = LP_T0_PENDING;
    f->io_ok = 0;
    if (LP_UNLIKELY(!ts->owner_held)) {
        lp_stack_settle(ts);
    }
    if (LP_UNLIKELY(self->io)) {
        /* Read before the clock, so the read's own cost is not part of the phase's time. */
        lp_io_counters c;
        if (lp_io_measure(st, f->own0, &c)) {
            f->io_ok = 1;
            f->io0 = c;
        }
    }
    /* Wall first, CPU second, at both ends: a boundary's CPU read may be shared with the one
     * just before it (lp_cpu_at). The CPU delta is clamped to the wall one at the exit, so
     * wait = wall - cpu never goes negative from the clock reads themselves. */
    f->t0 = lp_wall(rec);
    f->cpu0 = rec->measure_cpu ? lp_cpu_at(rec, ts, tstate, &f->t0) : 0;
    /* Untraced, the frame's tthread is left as it is: nothing reads it, and trace_enable() sets
     * it for every frame open then. */
    if (LP_UNLIKELY(rec->trace != NULL)) {
        lp_trace_enter(rec, ts, ts->depth - 1, parent_idx, tthread);
    }
    lp_publish_main(rec, tstate, ts, node->id, f->t0);
    return Py_NewRef(self);
}

/* ===================================================================== phases: exit */

/* Adds the entry in frame `idx` (ending at t1/cpu1) to its node and its parent frame. A cpu1
 * of -1 says the CPU clock of the entry's thread could not be read at the exit. */
LP_INLINE void lp_close_frame_inline(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int64_t t1,
                                     int64_t cpu1, int io1_ok, const lp_io_counters *io1, const int64_t *own1)
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
    int bucket = lp_bucket(rec->st, d);
    node->hist[bucket]++;
    int64_t span_cpu = -1;
    if (rec->measure_cpu) {
        if (f->cpu0 >= 0 && cpu1 >= 0) {
            int64_t c = cpu1 - f->cpu0;
            /* a thread cannot run longer than the wall time; clamp clock-granularity noise */
            span_cpu = c < 0 ? 0 : (c > d ? d : c);
            node->cpu_ns += span_cpu;
        } else {
            node->cpu_missing++;
        }
    }
    if (LP_UNLIKELY(rec->trace != NULL) && f->tthread >= 0) {
        /* the span's ends are the very reads the totals add: its duration is d exactly */
        lp_trace_span(rec->trace, f->t0, f->t0 + d, span_cpu, f->node_id, f->tthread);
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
    lp_live_node *r = node->live;
    if (r != NULL) {
        /* The record is written from the private node, never read: odd while the entry is
         * added, so a reader of the live file never takes half of it. On x86 both fences are
         * compiler barriers only. */
        uint32_t seq = node->seq;
        __atomic_store_n(&r->seq, seq + 1, __ATOMIC_RELAXED);
        __atomic_thread_fence(__ATOMIC_RELEASE);
        r->entries = node->entries;
        r->wall_ns = node->wall_ns;
        r->self_ns = node->self_ns;
        r->min_ns = node->min_ns;
        r->max_ns = node->max_ns;
        r->hist[bucket] = node->hist[bucket];
        r->cpu_ns = node->cpu_ns;
        r->cpu_missing = node->cpu_missing;
        if (LP_UNLIKELY(f->phase->io || f->phase->sync)) {
            r->io = node->io;
            r->sync = node->sync;
            memcpy(r->io_delta, node->io_delta, sizeof r->io_delta);
            r->io_measured = node->io_measured;
            r->io_failed = node->io_failed;
        }
        node->seq = seq + 2;
        __atomic_store_n(&r->seq, seq + 2, __ATOMIC_RELEASE);
        /* one compare per exit; a wall-clock read at most every 10 ms */
        if (LP_UNLIKELY(t1 - rec->live.alive_mono_ns >= LP_LIVE_ALIVE_NS)) {
            lp_live_stamp_alive(rec, t1);
        }
    }
    if (f->parent >= 0) {
        ts->frames[f->parent].child_ns += d;
        if (LP_UNLIKELY(f->parent < ts->n_base)) {
            lp_credit_origin(&ts->frames[f->parent], d);
        }
    }
}

/* The same, out of line, for the rare exits. */
static void lp_close_frame(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int64_t t1, int64_t cpu1,
                           int io1_ok, const lp_io_counters *io1, const int64_t *own1)
{
    lp_close_frame_inline(rec, ts, idx, t1, cpu1, io1_ok, io1, own1);
}

static void lp_exit_hooks(lp_PhaseObject *self, lp_RecorderObject *rec)
{
    if (self->gpu && rec->gpu_exit != NULL) { /* first: its end event follows the phase's work only */
        PyObject *fn = Py_NewRef(rec->gpu_exit);
        lp_call_hook(rec, fn, self->canon, "gpu exit");
        Py_DECREF(fn);
    }
    if (rec->annotate_exit != NULL) {
        PyObject *fn = Py_NewRef(rec->annotate_exit);
        lp_call_hook(rec, fn, self->canon, "annotate exit");
        Py_DECREF(fn);
    }
}

/* Closes frame `idx` of `ts` alone and takes it out of the stack: the frames above it, opened
 * by the flow that owns `ts` and still open there, stay open; those whose parent it was become
 * children of its parent. */
static void lp_remove_frame(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int64_t t1, int64_t cpu1)
{
    lp_frame *f = &ts->frames[idx];
    lp_PhaseObject *phase = f->phase;
    lp_io_counters io1;
    int64_t own1[LP_IO_FIELDS] = {0};
    int io1_ok = 0;
    if (phase->io) {
        io1_ok = lp_io_measure(rec->st, own1, &io1);
    }
    lp_close_frame(rec, ts, idx, t1, cpu1, io1_ok, &io1, own1);
    int32_t up = f->parent;
    for (int32_t i = idx + 1; i < ts->depth; i++) {
        lp_frame *g = &ts->frames[i];
        if (g->parent == idx) {
            g->parent = up;
        } else if (g->parent > idx) {
            g->parent--;
        }
        ts->frames[i - 1] = *g;
    }
    ts->depth--;
    Py_DECREF(phase); /* the frame's reference; the caller still holds one */
}

/* An exit with no frame for it on this flow's stack: a generator resumed on another thread, or
 * a manual __exit__ from another task, leaves a phase that another stack still has open. It is
 * closed there, alone, and counted (cross_stack_exits); its CPU time cannot be measured (the
 * entry's thread CPU clock is not this thread's). With no such frame anywhere, the exit is a
 * mismatch (a second exit), or the exit of an entry this stack refused. `own` may be NULL.
 * Returns 1 when a frame was closed. */
static int lp_exit_elsewhere(lp_PhaseObject *self, lp_RecorderObject *rec, lp_StackObject *own)
{
    if (own != NULL && own->dropped > 0) {
        own->dropped--; /* the exit of an entry that was refused */
        return 0;
    }
    /* The clock first: a test clock runs Python code, which may free stacks. */
    int64_t t1 = lp_wall(rec);
    int32_t idx;
    lp_StackObject *o = lp_stack_find_open(rec->st, self, own, &idx);
    if (o == NULL) {
        rec->mismatched_exits++; /* exited twice, or never entered */
        return 0;
    }
    Py_INCREF(o); /* letting go of its owner below may free the context that holds it */
    lp_remove_frame(rec, o, idx, t1, rec->measure_cpu ? -1 : 0);
    if (rec->trace != NULL) {
        lp_trace_stack_sync(rec, o, 0);
    }
    rec->cross_stack_exits++;
    lp_publish_stack(rec, o);
    lp_stack_settle(o);
    Py_DECREF(o);
    return 1;
}

/* The rare exits: out of order, another flow's, stale (before a stop/reset), or with io. */
static int lp_exit_slow(lp_PhaseObject *self, lp_RecorderObject *rec, lp_StackObject *ts,
                        PyThreadState *tstate, int64_t t1, int64_t cpu1)
{
    int32_t idx = -1;
    /* stale frames of this recorder on top are dropped silently: they belong to an older
     * generation (the profiler was stopped or this is a fork child) */
    while (ts->depth > ts->n_base) {
        lp_frame *top = &ts->frames[ts->depth - 1];
        if (top->phase->rec == rec && top->gen != rec->gen) {
            int is_self = top->phase == self;
            lp_PhaseObject *p = top->phase;
            ts->depth--;
            rec->stale_exits++;
            Py_DECREF(p);
            if (is_self) {
                lp_stack_settle(ts);
                return 0;
            }
            continue;
        }
        break;
    }
    lp_stack_settle(ts);
    if (!rec->active) {
        return 0;
    }
    for (int32_t i = ts->depth - 1; i >= ts->n_base; i--) {
        lp_frame *f = &ts->frames[i];
        if (f->phase == self && f->gen == rec->gen) {
            idx = i;
            break;
        }
    }
    if (idx < 0) {
        return lp_exit_elsewhere(self, rec, ts);
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
        io1_ok = lp_io_measure(rec->st, own1, &io1);
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
    lp_PhaseObject *to_release[64];
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
    if (rec->trace != NULL) {
        lp_trace_stack_sync(rec, ts, 0);
    }
    lp_stack_settle(ts); /* this flow's own context is current: letting it go frees nothing */
    int32_t live = lp_find_live(ts, rec, ts->depth - 1);
    lp_publish_main(rec, tstate, ts, live >= 0 ? ts->frames[live].node_id : -1, t1);
    for (int i = 0; i < n_release; i++) {
        Py_DECREF(to_release[i]);
    }
    return 1;
}

static PyObject *lp_phase_exit(lp_PhaseObject *self, PyObject *const *Py_UNUSED(args),
                               Py_ssize_t Py_UNUSED(nargs))
{
    lp_RecorderObject *rec = self->rec;
    lp_state *st = rec->st;
    if (LP_UNLIKELY(self->slow) && self->sync && rec->sync_fn != NULL && rec->active) {
        /* Drain the device before reading the clock, so the phase's time includes its work. */
        PyObject *fn = Py_NewRef(rec->sync_fn);
        lp_call_hook(rec, fn, NULL, "sync");
        Py_DECREF(fn);
    }
    PyThreadState *tstate = PyThreadState_Get();
    lp_StackObject *inherited = NULL;
    lp_StackObject *ts = lp_stack_own(st, tstate, &inherited);
    int closed;
    if (LP_UNLIKELY(ts == NULL || ts->depth == ts->n_base)) {
        closed = rec->active && lp_exit_elsewhere(self, rec, ts);
    } else {
        /* Wall before CPU, so that an exit followed at once by the next entry can share one
         * CPU read (lp_cpu_at); a CPU delta that then exceeds the wall one is clamped. */
        int64_t t1 = lp_wall(rec);
        int64_t cpu1 = (rec->measure_cpu && rec->active) ? lp_cpu_at(rec, ts, tstate, &t1) : 0;
        int32_t top = ts->depth - 1;
        lp_frame *f = &ts->frames[top];
        if (LP_LIKELY(f->phase == self && f->gen == rec->gen && !self->io)) {
            lp_close_frame_inline(rec, ts, top, t1, cpu1, 0, NULL, NULL);
            ts->depth = top;
            if (LP_UNLIKELY(rec->trace != NULL)) {
                lp_trace_popped(rec, ts, f->tlevel);
            }
            if (LP_UNLIKELY(top == ts->n_base)) {
                lp_stack_settle(ts); /* the owner is the current context: never freed here */
            }
            int32_t parent = f->parent;
            lp_publish_main(rec, tstate, ts, parent >= 0 ? ts->frames[parent].node_id : -1, t1);
            Py_DECREF(self); /* the frame's reference; the caller still holds one */
            closed = 1;
        } else {
            closed = lp_exit_slow(self, rec, ts, tstate, t1, cpu1);
        }
    }
    if (LP_UNLIKELY(self->slow) && closed && rec->active) {
        lp_exit_hooks(self, rec);
    }
    Py_RETURN_FALSE;
}

/* Entering and leaving a phase from C (the auto tracer): what `with phase:` does. New
 * references to what __enter__ and __exit__ return, or NULL with an exception. */
PyObject *lp_phase_enter_c(lp_PhaseObject *phase)
{
    return lp_phase_enter(phase, NULL);
}

PyObject *lp_phase_exit_c(lp_PhaseObject *phase)
{
    return lp_phase_exit(phase, NULL, 0);
}

/* ===================================================================== the Phase type */

static int lp_phase_traverse(lp_PhaseObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->rec);
    return 0;
}

static int lp_phase_clear(lp_PhaseObject *self)
{
    Py_CLEAR(self->rec);
    return 0;
}

static void lp_phase_dealloc(lp_PhaseObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    (void)lp_phase_clear(self);
    Py_CLEAR(self->name);
    Py_CLEAR(self->canon);
    PyObject_GC_Del(self);
    Py_DECREF(tp);
}

static PyObject *lp_phase_repr(lp_PhaseObject *self)
{
    return PyUnicode_FromFormat("<Phase %R io=%d sync=%d gpu=%d>", self->name, self->io, self->sync,
                                self->gpu);
}

static PyObject *lp_phase_get_name(lp_PhaseObject *self, void *Py_UNUSED(c))
{
    return Py_NewRef(self->name);
}

static PyObject *lp_phase_get_io(lp_PhaseObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->io);
}

static PyObject *lp_phase_get_sync(lp_PhaseObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->sync);
}

static PyObject *lp_phase_get_gpu(lp_PhaseObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->gpu);
}

static PyMethodDef lp_phase_methods[] = {
    {"__enter__", (PyCFunction)lp_phase_enter, METH_NOARGS, "Open the phase in this thread."},
    {"__exit__", (PyCFunction)(void (*)(void))lp_phase_exit, METH_FASTCALL,
     "Close the phase; never suppresses an exception."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef lp_phase_getset[] = {
    {"name", (getter)lp_phase_get_name, NULL, "The name given to phase().", NULL},
    {"io", (getter)lp_phase_get_io, NULL, "Whether entries measure /proc/self/io.", NULL},
    {"sync", (getter)lp_phase_get_sync, NULL, "Whether entries call the sync hook.", NULL},
    {"gpu", (getter)lp_phase_get_gpu, NULL, "Whether entries call the GPU event hooks.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot lp_phase_slots[] = {
    {Py_tp_dealloc, lp_phase_dealloc},
    {Py_tp_traverse, lp_phase_traverse},
    {Py_tp_clear, lp_phase_clear},
    {Py_tp_repr, lp_phase_repr},
    {Py_tp_methods, lp_phase_methods},
    {Py_tp_getset, lp_phase_getset},
    {Py_tp_doc, "A named phase: a reusable context manager returned by Recorder.phase()."},
    {0, NULL},
};

PyType_Spec lp_phase_spec = {
    .name = "lineprofiler.accounting._phases.Phase",
    .basicsize = sizeof(lp_PhaseObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = lp_phase_slots,
};
