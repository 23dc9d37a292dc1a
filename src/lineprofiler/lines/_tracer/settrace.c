/* The line tracer's event path on 3.11: a C trace function (Py_tracefunc), installed on every
 * thread with the thread's own Hook as its trace object, so the hot path needs no thread
 * lookup; and the Python-level bootstrap that threading.settrace() hands to new threads. */
#include "tracer.h"

#if !LP_MONITORING

/* ===================================================================== the trace function */

/* The line a resumed generator/coroutine frame stands on; LP_NO_LINE for a
 * fresh start. CPython sets f_lineno before calling a trace function, so
 * PyFrame_GetLineNumber() is a field read here. A fresh generator reports
 * its first line, which is also how we tell it from a resume (a one-line
 * generator body loses the few instructions after its resume: harmless). */
static int lp_resume_line(lp_code *rec, PyFrameObject *frame)
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
    lp_HookObject *h = (lp_HookObject *)obj;
    lp_TracerObject *tr = h->tracer;
    if (LP_UNLIKELY(!tr->on)) {
        return 0;
    }
    lp_thread *th = h->thread;
    lp_frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
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
            lp_code *rec;
            if (LP_LIKELY((PyObject *)co == th->last_code)) {
                rec = th->last_rec; /* recursion and repeated calls skip the lookup */
            } else {
                rec = lp_code_of(tr, (PyObject *)co);
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
        lp_code *rec;
        if (LP_LIKELY((PyObject *)co == th->last_code)) {
            rec = th->last_rec; /* recursion and repeated calls skip the lookup */
        } else {
            rec = lp_code_of(tr, (PyObject *)co);
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
        lp_frame *f = lp_push(tr, th, (PyObject *)co, frame, rec, v);
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

/* ===================================================================== installing */

/* Installs the C trace function on thread `ts`, remembering what it
 * replaces. Returns 0, or -1 with an exception set. */
int lp_install(lp_TracerObject *tr, PyThreadState *ts)
{
    lp_thread *th = lp_thread_get(tr, ts);
    if (th == NULL) {
        return -1;
    }
    if (ts->c_tracefunc == lp_trace) {
        lp_HookObject *cur = (lp_HookObject *)ts->c_traceobj;
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
void lp_uninstall_all(lp_TracerObject *tr)
{
    PyThreadState *cur = PyThreadState_Get();
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(cur));
    for (; ts != NULL; ts = PyThreadState_Next(ts)) {
        if (ts->c_tracefunc != lp_trace || ts->c_traceobj == NULL ||
            ((lp_HookObject *)ts->c_traceobj)->tracer != tr) {
            continue;
        }
        lp_thread *th = ((lp_HookObject *)ts->c_traceobj)->thread;
        PyObject *prev = th->prev_obj; /* keep our ref alive across the call */
        th->prev_obj = NULL;
        if (_PyEval_SetTrace(ts, prev ? th->prev_func : NULL, prev) < 0) {
            lp_fail(tr);
        }
        th->prev_func = NULL;
        Py_XDECREF(prev);
    }
}

/* ===================================================================== the thread bootstrap */

/* Called as a Python trace function: by a new thread through
 * threading.settrace, or after someone restored sys.gettrace()'s value with
 * sys.settrace(). Switches this thread to the C trace function, and treats
 * this first "call" event as the C function would have. */
static PyObject *lp_on_thread(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    LP_UNUSED(kwnames);
    lp_TracerObject *tr = ((lp_HookObject *)self)->tracer;
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

/* ===================================================================== hook kinds */

vectorcallfunc lp_path_callback(int kind)
{
    return kind == LP_HOOK_THREAD ? lp_on_thread : NULL;
}

#endif /* !LP_MONITORING */
