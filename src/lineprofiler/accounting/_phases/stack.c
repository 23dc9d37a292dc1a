/* The stacks of open frames, one per flow of control (contextvars.Context): making one for a
 * context at its first phase, the frames it inherits from the context it was copied from, its
 * lifetime, and the search for a frame that another flow left open. */
#include "phases.h"

#include <stdlib.h>

/* ===================================================================== frames */

int lp_grow_frames(lp_StackObject *ts)
{
    /* small to start: an asyncio task makes a stack of its own, most hold a frame or two */
    int32_t cap = ts->cap ? ts->cap * 2 : 8;
    if (cap > LP_MAX_FRAMES) {
        cap = LP_MAX_FRAMES;
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

/* The frame a base frame copies, while it is still open, else NULL. It is found again by
 * identity, since repairs may have moved it. */
lp_frame *lp_origin_frame(lp_frame *base)
{
    lp_StackObject *o = base->origin;
    if (o == NULL) {
        return NULL;
    }
    int32_t i = base->origin_idx;
    if (i >= o->depth || o->frames[i].phase != base->phase || o->frames[i].t0 != base->t0 ||
        o->frames[i].gen != base->gen) {
        for (i = o->depth - 1; i >= o->n_base; i--) {
            lp_frame *f = &o->frames[i];
            if (f->phase == base->phase && f->t0 == base->t0 && f->gen == base->gen) {
                break;
            }
        }
        if (i < o->n_base) {
            return NULL; /* closed since */
        }
        base->origin_idx = i;
    }
    return &o->frames[i];
}

/* A child's time is also child time of the frame its base frame copies: a task's phase counts
 * against the phase open where the task started, as it would on one stack. */
void lp_credit_origin(lp_frame *base, int64_t d)
{
    lp_frame *f = lp_origin_frame(base);
    if (f != NULL) {
        f->child_ns += d;
    }
}

/* Copies into `ts` the innermost live frame of each recorder open on `parent` (at most
 * LP_MAX_INHERITED recorders), as its base frames: what a new flow finds open where it started.
 * A base frame's origin is always a frame above its stack's base, never another base frame. */
static void lp_stack_inherit(lp_StackObject *ts, lp_StackObject *parent)
{
    int32_t picked[LP_MAX_INHERITED];
    int n = 0;
    for (int32_t i = parent->depth - 1; i >= 0 && n < LP_MAX_INHERITED; i--) {
        lp_frame *f = &parent->frames[i];
        lp_RecorderObject *rec = f->phase->rec;
        if (f->gen != rec->gen || f->t0 == LP_T0_PENDING) {
            continue; /* stale (or not yet timed): nothing to inherit */
        }
        int seen = 0;
        for (int k = 0; k < n; k++) {
            seen |= parent->frames[picked[k]].phase->rec == rec;
        }
        if (!seen) {
            picked[n++] = i;
        }
    }
    while (ts->cap < n) {
        if (lp_grow_frames(ts) < 0) {
            return; /* no memory: the new flow starts at the top level */
        }
    }
    /* innermost last, as they lay on the parent */
    for (int k = n - 1; k >= 0; k--) {
        lp_frame *src = &parent->frames[picked[k]];
        lp_frame *b = &ts->frames[ts->depth++];
        *b = *src;
        b->phase = (lp_PhaseObject *)Py_NewRef(src->phase);
        b->parent = -1;
        b->child_ns = 0;
        b->io_ok = 0;
        if (picked[k] < parent->n_base) {
            b->origin = src->origin;
            b->origin_idx = src->origin_idx;
        } else {
            b->origin = parent;
            b->origin_idx = picked[k];
        }
        Py_XINCREF(b->origin);
    }
    ts->n_base = ts->depth;
}

/* Makes the current context's stack, starting from what is open on `parent` (the stack the
 * context inherited, or NULL), and stores it in the ContextVar, which creates a thread's context
 * if it had none yet. Returns it borrowed (the context holds it), or NULL with an exception. */
lp_StackObject *lp_stack_create(lp_state *st, PyThreadState *tstate, lp_StackObject *parent)
{
    lp_StackObject *ts = PyObject_GC_New(lp_StackObject, st->stack_type);
    if (ts == NULL) {
        return NULL;
    }
    ts->st = st;
    ts->owner = NULL;
    ts->owner_held = 0;
    ts->frames = NULL;
    ts->depth = ts->n_base = ts->cap = 0;
    ts->dropped = 0;
    ts->cpu_read = ts->cpu_read_wall = 0;
    ts->cpu_read_tstate = NULL; /* no read to share yet */
    ts->trace_slot = -1;
    ts->trace_epoch = 0; /* no trace has epoch 0 */
    /* Linked before anything can fail: the dealloc unlinks in every case. */
    ts->prev = NULL;
    ts->next = st->stacks;
    if (st->stacks != NULL) {
        st->stacks->prev = ts;
    }
    st->stacks = ts;
    PyObject_GC_Track(ts);
    if (parent != NULL) {
        lp_stack_inherit(ts, parent);
    }
    PyObject *token = PyContextVar_Set(st->stack_var, (PyObject *)ts);
    if (token == NULL) {
        Py_DECREF(ts);
        return NULL;
    }
    Py_DECREF(token);
    /* after the set: a thread's context is created by it when it had none */
    ts->owner = tstate->context;
    lp_stack_cache(st, tstate, ts, 1);
    if (st->main_tstate == NULL && PyThread_get_thread_ident() == st->main_ident) {
        st->main_tstate = tstate;
    }
    Py_DECREF(ts); /* the context holds it */
    return ts;
}

/* ===================================================================== search */

/* The stack other than `skip` on which `phase` is open in its recorder's generation, and in
 * *idx the frame: where it is its recorder's innermost frame if there is such a stack (a
 * suspended generator's frame usually is), else the first found. NULL when none. */
lp_StackObject *lp_stack_find_open(lp_state *st, lp_PhaseObject *phase, lp_StackObject *skip, int32_t *idx)
{
    lp_RecorderObject *rec = phase->rec;
    lp_StackObject *found = NULL;
    for (lp_StackObject *o = st->stacks; o != NULL; o = o->next) {
        if (o == skip) {
            continue;
        }
        for (int32_t i = o->depth - 1; i >= o->n_base; i--) {
            if (o->frames[i].phase == phase && o->frames[i].gen == rec->gen) {
                if (lp_find_live(o, rec, o->depth - 1) == i) {
                    *idx = i;
                    return o;
                }
                if (found == NULL) {
                    found = o;
                    *idx = i;
                }
                break;
            }
        }
    }
    return found;
}

/* ===================================================================== lifetime */

static int lp_stack_traverse(lp_StackObject *ts, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(ts));
    if (ts->owner_held) {
        Py_VISIT(ts->owner);
    }
    for (int32_t i = 0; i < ts->depth; i++) {
        Py_VISIT(ts->frames[i].phase);
        if (i < ts->n_base) {
            Py_VISIT(ts->frames[i].origin);
        }
    }
    return 0;
}

/* Drops every frame (their entries are lost: only the collector of a dead cycle calls this
 * before the dealloc) and the owner. */
static int lp_stack_clear(lp_StackObject *ts)
{
    lp_frame *frames = ts->frames;
    int32_t depth = ts->depth, n_base = ts->n_base;
    ts->frames = NULL;
    ts->depth = ts->n_base = ts->cap = 0;
    if (ts->owner_held) {
        ts->owner_held = 0;
        Py_CLEAR(ts->owner);
    }
    for (int32_t i = 0; i < depth; i++) {
        Py_DECREF(frames[i].phase);
        if (i < n_base) {
            Py_XDECREF(frames[i].origin);
        }
    }
    free(frames);
    return 0;
}

static void lp_stack_dealloc(lp_StackObject *ts)
{
    PyTypeObject *tp = Py_TYPE(ts);
    lp_state *st = ts->st;
    PyObject_GC_UnTrack(ts);
    if (st->cache_stack == ts) {
        st->cache_tsid = 0;
    }
    if (st->main_stack == ts) {
        st->main_stack = NULL;
    }
    lp_threads_stack_gone(st, ts);
    lp_trace_stack_gone(st, ts);
    if (ts->prev != NULL) {
        ts->prev->next = ts->next;
    } else if (st->stacks == ts) {
        st->stacks = ts->next;
    }
    if (ts->next != NULL) {
        ts->next->prev = ts->prev;
    }
    ts->prev = ts->next = NULL;
    (void)lp_stack_clear(ts);
    PyObject_GC_Del(ts);
    Py_DECREF(tp);
}

static PyType_Slot lp_stack_slots[] = {
    {Py_tp_dealloc, lp_stack_dealloc},
    {Py_tp_traverse, lp_stack_traverse},
    {Py_tp_clear, lp_stack_clear},
    {Py_tp_doc, "The open phases of one context (internal)."},
    {0, NULL},
};

PyType_Spec lp_stack_spec = {
    .name = "lineprofiler.accounting._phases._Stack",
    .basicsize = sizeof(lp_StackObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = lp_stack_slots,
};
