/* The line tracer's event path on 3.12+: sys.monitoring callbacks. Each is a vectorcall
 * function of a Hook object; the bookkeeping they share is inline in tracer.h, so each callback
 * compiles to one function with no call on its common path. */
#include "tracer.h"

#if LP_MONITORING

/* ===================================================================== callbacks */

#define LP_HOOK_TRACER(self) (((lp_HookObject *)(self))->tracer)

/* The line number argument of a LINE event, or -1. */
static LP_NOINLINE int lp_as_line_slow(PyObject *o)
{
    long v = PyLong_AsLong(o);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -1;
    }
    return (v >= 0 && v <= INT_MAX / 2) ? (int)v : -1;
}

LP_INLINE int lp_as_line(PyObject *o)
{
    if (LP_LIKELY(PyLong_CheckExact(o) && PyUnstable_Long_IsCompact((PyLongObject *)o))) {
        Py_ssize_t v = PyUnstable_Long_CompactValue((PyLongObject *)o);
        return (v >= 0 && v <= INT_MAX / 2) ? (int)v : -1;
    }
    return lp_as_line_slow(o);
}

/* The line at instruction `offset`, cached for the last resume point of the
 * code: a generator usually resumes at the same few yields. */
static int lp_line_at(lp_code *rec, PyObject *offset_obj)
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

LP_INLINE PyObject *lp_disable(lp_TracerObject *tr)
{
    return Py_NewRef(tr->disable);
}

/* What a callback returns while the tracer is off. Off at pause_after()'s mark, the events stay
 * on until the sampler's thread gets the GIL back to stop them (up to a switch interval): each
 * location reached meanwhile is disabled, so the program runs at full speed until then, and the
 * next window's tool id comes with restart_events(), which re-arms them. Off otherwise (a held
 * generator's hooks between two steps, a failure, stop() until the hooks go): None, since
 * nothing would re-arm a location disabled then. */
LP_INLINE PyObject *lp_off(lp_TracerObject *tr, int can_disable)
{
    if (can_disable && __atomic_load_n(&tr->stop_mark, __ATOMIC_RELAXED) != 0) {
        return lp_disable(tr);
    }
    Py_RETURN_NONE;
}

/* What a callback that got no record from lp_code_of() returns: None, or NULL with the user's
 * exception raised when one arrived while it decided (see lp_decide()). */
LP_INLINE PyObject *lp_no_record(lp_thread *th)
{
    if (LP_UNLIKELY(lp_raise_user_exc(th) < 0)) {
        return NULL;
    }
    Py_RETURN_NONE;
}

/* The interpreter frame running on thread th: what tells frames apart,
 * recursion included. Callbacks run inside the frame whose event they
 * receive, so this is that frame. Read through th->tstate, which only a
 * thread with an empty stack may have outlived (see lp_thread_checked()). */
LP_INLINE void *lp_current_frame(lp_thread *th)
{
#if PY_VERSION_HEX >= 0x030D0000
    return (void *)th->tstate->current_frame;
#else
    return (void *)th->tstate->cframe->current_frame;
#endif
}

/* The calling thread's state, safe to read th->tstate from. A thread found
 * through the one-entry cache with frames on its stack is alive: it cannot
 * end while frames it entered are still running. With an empty stack it may
 * be a thread that ended, whose key a new thread now has: look it up again. */
LP_INLINE lp_thread *lp_thread_checked(lp_TracerObject *tr)
{
    lp_thread *th = lp_thread_current(tr);
    if (LP_UNLIKELY(th != NULL && th->depth == 0)) {
        th = lp_thread_slow(tr, lp_thread_key());
    }
    return th;
}

/* The first LINE event of a frame we do not have: on 3.12 every new frame
 * of the project is pushed here, not at its PY_START, which is not listened
 * to there (one event fewer per call); what ran of the frame before its
 * first line, its prologue, is part of the call and billed to the caller's
 * line. 3.13 does not emit LINE for a frame's first line when it is also the
 * line of the frame's RESUME (one-line functions, lambdas) unless PY_START
 * is listened to, so there frames are pushed at PY_START. On both, a frame
 * that was already running when recording started is adopted here. Foreign
 * code gets DISABLE. */
static LP_NOINLINE PyObject *lp_line_new(lp_TracerObject *tr, lp_thread *th, PyObject *code, void *frame,
                                         PyObject *line)
{
    lp_code *rec = lp_code_cached(tr, th, code);
    if (rec == LP_FOREIGN) {
        return lp_disable(tr);
    }
    if (LP_UNLIKELY(rec == NULL)) {
        return lp_no_record(th);
    }
    lp_frame *top = lp_push(tr, th, code, frame, rec, 0);
    if (LP_LIKELY(top != NULL)) {
        /* A fresh frame, or one running since before recording began: counted as a call
         * either way (a frame adopted here counts once per session, see lp_count_call()). */
        lp_count_call(tr, th, rec);
        lp_line *slot = lp_slot_of(tr, th, rec, lp_as_line(line));
        int64_t v = lp_vnow(tr, th);
        lp_open(th, top, slot, v, 1);
        lp_nest(th, top, v);
    }
    Py_RETURN_NONE;
}

/* LINE in the frame on top, at a line outside its table or given as other
 * than a small int: the general path. */
static LP_NOINLINE PyObject *lp_line_other(lp_TracerObject *tr, lp_thread *th, lp_frame *top, PyObject *line)
{
    lp_line *slot = lp_slot_of(tr, th, top->rec, lp_as_line(line));
    int64_t v = lp_vnow(tr, th);
    lp_close(top, v);
    lp_open(th, top, slot, v, 1);
    Py_RETURN_NONE;
}

/* LINE on a thread other than the cached one, or with an empty stack. The
 * stack need not be empty: any event of another thread in between (a thread
 * of the user's, a library's background writer, an exception leaving a
 * frame on it, which cannot be disabled) moves the cache there, and the
 * frame on top here is then usually this event's own frame, whose next line
 * this is: not a new frame. */
static LP_NOINLINE PyObject *lp_line_fresh(lp_TracerObject *tr, PyObject *code, PyObject *line)
{
    lp_thread *th = lp_thread_slow(tr, lp_thread_key());
    if (th == NULL) {
        Py_RETURN_NONE;
    }
    void *frame = lp_current_frame(th);
    if (th->depth > 0) {
        lp_frame *top = &th->stack[th->depth - 1];
        if (top->frame == frame && top->code == code) {
            return lp_line_other(tr, th, top, line);
        }
    }
    return lp_line_new(tr, th, code, frame, line);
}

/* The common path of LINE: the next line of the frame on top. `clock` is
 * LP_CLOCK_TSC in the function that the hook calls, which then reads the
 * TSC inline; every other case goes through a function out of line, so the
 * common path makes no call and saves no registers. */
LP_INLINE PyObject *lp_line_impl(PyObject *self, PyObject *const *args, size_t nargsf, int clock)
{
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on)) {
        return lp_off(tr, 1);
    }
    if (LP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    PyObject *code = args[0];
    if (LP_UNLIKELY(!tr->has_last || lp_thread_key() != tr->last_key || tr->last_thread->depth == 0)) {
        return lp_line_fresh(tr, code, args[1]);
    }
    lp_thread *th = tr->last_thread;
    lp_frame *top = &th->stack[th->depth - 1];
    void *frame = lp_current_frame(th);
    if (LP_UNLIKELY(top->frame != frame || top->code != code)) {
        return lp_line_new(tr, th, code, frame, args[1]);
    }
    PyObject *lo = args[1];
    lp_code *rec = top->rec;
    if (LP_UNLIKELY(!PyLong_CheckExact(lo) || !PyUnstable_Long_IsCompact((PyLongObject *)lo))) {
        return lp_line_other(tr, th, top, lo);
    }
    Py_ssize_t i = PyUnstable_Long_CompactValue((PyLongObject *)lo) - rec->base;
    if (LP_UNLIKELY((size_t)i >= (size_t)rec->n || th->region != 0)) {
        return lp_line_other(tr, th, top, lo);
    }
    lp_line *slot = &rec->lines[i];
    int64_t v = (clock == LP_CLOCK_TSC ? lp_tsc() : lp_clock(tr, 0)) - th->ovh;
    lp_close(top, v);
    top->open = slot;
    top->vstart = v;
    slot->hits++;
    lp_self_to(th, slot, v);
    Py_RETURN_NONE;
}

static LP_NOINLINE PyObject *lp_on_line_any(PyObject *self, PyObject *const *args, size_t nargsf,
                                            PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_line_impl(self, args, nargsf, -1);
}

static PyObject *lp_on_line(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (LP_UNLIKELY(LP_HOOK_TRACER(self)->clock != LP_CLOCK_TSC)) {
        return lp_on_line_any(self, args, nargsf, kwnames);
    }
    return lp_line_impl(self, args, nargsf, LP_CLOCK_TSC);
}

enum { LP_ENTER_START, LP_ENTER_RESUME, LP_ENTER_THROW };

/* PY_START (3.13+), PY_RESUME and PY_THROW: a frame of this code starts or
 * resumes running on this thread. A fresh start opens no line (its first
 * LINE event does) and reads no clock: what runs before its first line, the
 * prologue, is part of the call, billed to the caller's line. A generator or
 * coroutine resumes in the middle of its yield/await line, and no LINE event
 * follows until the line changes: the rest of that line is billed to it,
 * without counting a new hit. */
LP_INLINE PyObject *lp_on_enter(PyObject *self, PyObject *const *args, size_t nargsf, int how)
{
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on)) {
        return lp_off(tr, 1);
    }
    if (LP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    PyObject *code = args[0];
    lp_thread *th = lp_thread_checked(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    lp_code *rec = lp_code_cached(tr, th, code);
    if (rec == LP_FOREIGN) {
        if (how == LP_ENTER_THROW) { /* PY_THROW cannot be disabled */
            Py_RETURN_NONE;
        }
        return lp_disable(tr);
    }
    if (rec == NULL) {
        return lp_no_record(th);
    }
#if PY_VERSION_HEX >= 0x030D0000
    if (how == LP_ENTER_START && !rec->needs_start) {
        return lp_disable(tr); /* its first LINE pushes it, as on 3.12 */
    }
#endif
    lp_frame *f = lp_push(tr, th, code, lp_current_frame(th), rec, 0);
    if (f != NULL && how == LP_ENTER_START) {
        lp_count_call(tr, th, rec);
        if (LP_UNLIKELY(f->outer != 0)) {
            lp_nest(th, f, lp_vnow(tr, th));
        }
    } else if (f != NULL) {
        lp_line *slot = lp_slot_of(tr, th, rec, lp_line_at(rec, args[1]));
        int64_t v = lp_vnow(tr, th);
        lp_open(th, f, slot, v, 0);
        lp_nest(th, f, v);
    }
    Py_RETURN_NONE;
}

/* An exit on a thread other than the cached one, or from a frame we do not
 * have on top: foreign code, or a project frame that started before
 * recording did and was never adopted (nothing of ours is open in it). */
static LP_NOINLINE PyObject *lp_exit_other(lp_TracerObject *tr, PyObject *code, int can_disable)
{
    lp_thread *th = lp_thread_current(tr);
    if (th == NULL) {
        Py_RETURN_NONE;
    }
    if (th->depth > 0) {
        lp_frame *top = &th->stack[th->depth - 1];
        if (top->code == code && top->frame == lp_current_frame(th)) {
            if (top->open != NULL) {
                int64_t v = lp_vnow(tr, th);
                lp_close(top, v);
                lp_pop(th, v);
            } else {
                lp_drop(tr, th);
            }
            Py_RETURN_NONE;
        }
    }
    if (can_disable) {
        lp_code *rec = lp_code_of(tr, th, code);
        if (rec == LP_FOREIGN) {
            return lp_disable(tr);
        }
        if (rec == NULL) {
            return lp_no_record(th);
        }
    }
    Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD and PY_UNWIND (can_disable=0): the frame on top stops
 * running. `clock` as for lp_line_impl(). */
LP_INLINE PyObject *lp_exit_impl(PyObject *self, PyObject *const *args, size_t nargsf, int can_disable,
                                 int clock)
{
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on)) {
        return lp_off(tr, can_disable);
    }
    if (LP_UNLIKELY(PyVectorcall_NARGS(nargsf) < 1)) {
        Py_RETURN_NONE;
    }
    PyObject *code = args[0];
    if (LP_UNLIKELY(!tr->has_last || lp_thread_key() != tr->last_key || tr->last_thread->depth == 0)) {
        return lp_exit_other(tr, code, can_disable);
    }
    lp_thread *th = tr->last_thread;
    lp_frame *top = &th->stack[th->depth - 1];
    if (LP_UNLIKELY(top->code != code || top->frame != lp_current_frame(th))) {
        return lp_exit_other(tr, code, can_disable);
    }
    if (top->open != NULL) {
        int64_t v = (clock == LP_CLOCK_TSC ? lp_tsc() : lp_clock(tr, 0)) - th->ovh;
        lp_close(top, v);
        lp_pop(th, v);
    } else {
        lp_drop(tr, th);
    }
    Py_RETURN_NONE;
}

static LP_NOINLINE PyObject *lp_on_return_any(PyObject *self, PyObject *const *args, size_t nargsf,
                                              PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_exit_impl(self, args, nargsf, 1, -1);
}

static PyObject *lp_on_return(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    if (LP_UNLIKELY(LP_HOOK_TRACER(self)->clock != LP_CLOCK_TSC)) {
        return lp_on_return_any(self, args, nargsf, kwnames);
    }
    return lp_exit_impl(self, args, nargsf, 1, LP_CLOCK_TSC);
}

static PyObject *lp_on_unwind(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_exit_impl(self, args, nargsf, 0, -1);
}

#if PY_VERSION_HEX >= 0x030D0000
static PyObject *lp_on_start(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, LP_ENTER_START);
}
#endif

static PyObject *lp_on_resume(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, LP_ENTER_RESUME);
}

static PyObject *lp_on_throw(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    return lp_on_enter(self, args, nargsf, LP_ENTER_THROW);
}

/* ===================================================================== hook kinds */

vectorcallfunc lp_path_callback(int kind)
{
    switch (kind) {
    case LP_HOOK_LINE:
        return lp_on_line;
    case LP_HOOK_START:
#if PY_VERSION_HEX >= 0x030D0000
        return lp_on_start;
#else
        return NULL; /* 3.12 is not listened to for it: see lp_line_new() */
#endif
    case LP_HOOK_RESUME:
        return lp_on_resume;
    case LP_HOOK_RETURN:
    case LP_HOOK_YIELD:
        return lp_on_return;
    case LP_HOOK_UNWIND:
        return lp_on_unwind;
    case LP_HOOK_THROW:
        return lp_on_throw;
    default:
        return NULL;
    }
}

#endif /* LP_MONITORING */
