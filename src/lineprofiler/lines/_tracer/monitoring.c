/* The line tracer's event path on 3.12+: sys.monitoring callbacks. Each is a vectorcall
 * function of a Hook object; the bookkeeping they share is inline in tracer.h, so each callback
 * compiles to one function with no call on its common path. */
#include "tracer.h"

#if LP_MONITORING

/* ===================================================================== callbacks */

#define LP_HOOK_TRACER(self) (((lp_HookObject *)(self))->tracer)

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

static PyObject *lp_on_line(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread *th = lp_thread_current(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    int64_t v = t0 - th->ovh;
    lp_frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    if (LP_LIKELY(top != NULL && top->code == code)) {
        lp_close(top, v);
    } else {
        /* Not the frame on top: code we have not decided yet, foreign code,
         * or a frame that was already running when recording started (its
         * PY_START came before us), which we adopt here. */
        lp_code *rec = lp_code_of(tr, code);
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
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 2)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread *th = lp_thread_current(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    lp_code *rec;
    if (LP_LIKELY(code == th->last_code)) {
        rec = th->last_rec; /* recursion and repeated calls skip the lookup */
    } else {
        rec = lp_code_of(tr, code);
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
    lp_frame *f = lp_push(tr, th, code, NULL, rec, v);
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
    lp_TracerObject *tr = LP_HOOK_TRACER(self);
    if (LP_UNLIKELY(!tr->on || PyVectorcall_NARGS(nargsf) < 1)) {
        Py_RETURN_NONE;
    }
    int64_t t0 = lp_clock(tr, 0);
    PyObject *code = args[0];
    lp_thread *th = lp_thread_current(tr);
    if (LP_UNLIKELY(th == NULL)) {
        Py_RETURN_NONE;
    }
    lp_frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    if (LP_LIKELY(top != NULL && top->code == code)) {
        lp_close(top, t0 - th->ovh);
        th->depth--;
        lp_leave(tr, th, t0);
        Py_RETURN_NONE;
    }
    /* Foreign code, or a project frame that started before recording did
     * and was never adopted: nothing of ours is open in it. */
    if (can_disable) {
        lp_code *rec = lp_code_of(tr, code);
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

/* ===================================================================== hook kinds */

vectorcallfunc lp_path_callback(int kind)
{
    switch (kind) {
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
    default:
        return NULL;
    }
}

#endif /* LP_MONITORING */
