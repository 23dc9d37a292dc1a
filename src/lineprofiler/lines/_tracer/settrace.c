/* The line tracer's event path on 3.11: a C trace function (Py_tracefunc), installed on every
 * thread with the thread's own Hook as its trace object, so the hot path needs no thread
 * lookup; and the Python-level bootstrap that threading.settrace() hands to new threads. */
#include "tracer.h"

#if !LP_MONITORING

/* _PyInterpreterFrame, the frame a PEP 523 frame-evaluation function receives: 3.11 declares it
 * only in its internal headers, which it installs. Only its f_code is read here. */
#include <internal/pycore_frame.h>

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

/* The code of a frame, borrowed: the frame holds it, we only need the address. */
LP_INLINE PyObject *lp_frame_code(PyFrameObject *frame)
{
    PyCodeObject *co = PyFrame_GetCode(frame);
    Py_DECREF(co);
    return (PyObject *)co;
}

/* A frame's first line event (see PyTrace_CALL), or a frame that was running
 * before recording started. Every frame this thread started after it has
 * returned, so this frame is the newest we know of: adopt it, foreign ones
 * too (their later lines then cost one comparison). */
static LP_NOINLINE int lp_line_first(lp_TracerObject *tr, lp_thread *th, PyFrameObject *frame)
{
    PyObject *code = lp_frame_code(frame);
    lp_code *rec = lp_code_cached(tr, th, code);
    if (rec == NULL) {
        return lp_raise_user_exc(th); /* see lp_decide() */
    }
    if (rec == LP_FOREIGN) {
        lp_push(tr, th, code, frame, NULL, 0);
        return 0;
    }
    lp_frame *top = lp_push(tr, th, code, frame, rec, 0);
    if (top != NULL) {
        lp_count_call(tr, th, rec);
        lp_line *slot = lp_slot_of(tr, th, rec, PyFrame_GetLineNumber(frame));
        int64_t v = lp_vnow(tr, th);
        lp_open(th, top, slot, v, 1);
        lp_nest(th, top, v);
    }
    return 0;
}

static int lp_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* Off at pause_after()'s mark, the trace function stays on every thread until the sampler's
 * thread gets the GIL back to stop() it, up to a switch interval later, and a traced thread runs
 * slowly whatever the function does. So each thread that calls it meanwhile takes it off itself,
 * putting back what it replaced, and runs untraced from there; stop() skips a thread no longer
 * running ours. Off otherwise (a failure): left to stop(). */
static int lp_trace_off(lp_HookObject *h)
{
    lp_TracerObject *tr = h->tracer;
    if (__atomic_load_n(&tr->stop_mark, __ATOMIC_RELAXED) == 0) {
        return 0;
    }
    PyThreadState *ts = PyThreadState_Get();
    if (ts->c_tracefunc != lp_trace || ts->c_traceobj != (PyObject *)h) {
        return 0;
    }
    lp_thread *th = h->thread; /* the tracer's: outlives the hook, which the call below may free */
    PyObject *prev = th->prev_obj;
    Py_tracefunc prev_func = th->prev_func;
    th->prev_obj = NULL;
    th->prev_func = NULL;
    if (_PyEval_SetTrace(ts, prev ? prev_func : NULL, prev) < 0) {
        lp_fail(tr); /* an audit hook refused: recording stops, the program goes on */
    }
    Py_XDECREF(prev);
    return 0;
}

static int lp_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    LP_UNUSED(arg);
    lp_HookObject *h = (lp_HookObject *)obj;
    lp_TracerObject *tr = h->tracer;
    if (LP_UNLIKELY(!tr->on)) {
        return lp_trace_off(h);
    }
    lp_thread *th = h->thread;
    lp_frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    switch (what) {
    case PyTrace_LINE: {
        if (LP_UNLIKELY(top == NULL || top->frame != (void *)frame)) {
            return lp_line_first(tr, th, frame);
        }
        if (top->rec == NULL) { /* a foreign frame we pushed: ignore */
            return 0;
        }
        lp_line *slot = lp_slot_of(tr, th, top->rec, PyFrame_GetLineNumber(frame));
        int64_t v = lp_vnow(tr, th);
        lp_close(top, v);
        lp_open(th, top, slot, v, 1);
        return 0;
    }
    case PyTrace_CALL: {
        /* A frame is entered at its first line event (the frame object tells
         * frames apart here, recursion included), so a call costs no clock
         * read: what runs between the call and that first line, the frame's
         * prologue, is part of the call and billed to the caller's line like
         * the rest of it. Generators and coroutines are entered here, because
         * a resumed one runs the rest of its yield line before any line
         * event, and that time is theirs. */
        PyObject *code = lp_frame_code(frame);
        if (!(((PyCodeObject *)code)->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR))) {
            return 0;
        }
        lp_code *rec = lp_code_cached(tr, th, code);
        if (rec == NULL) {
            return lp_raise_user_exc(th);
        }
        /* Foreign frames are pushed too (rec NULL): their line events then
         * cost one comparison instead of a lookup. */
        lp_frame *f = lp_push(tr, th, code, frame, rec == LP_FOREIGN ? NULL : rec, 0);
        if (f != NULL && rec != LP_FOREIGN) {
            int line = lp_resume_line(rec, frame);
            if (line == LP_NO_LINE) {
                lp_count_call(tr, th, rec); /* a fresh start: a resume stands on its yield's line */
            }
            lp_line *slot = lp_slot_of(tr, th, rec, line);
            int64_t v = lp_vnow(tr, th);
            lp_open(th, f, slot, v, 0);
            lp_nest(th, f, v);
        }
        return 0;
    }
    case PyTrace_RETURN: /* return, yield, and unwinding (arg NULL) */
        if (top != NULL && top->frame == (void *)frame) {
            if (top->open != NULL) {
                int64_t v = lp_vnow(tr, th);
                lp_close(top, v);
                lp_pop(th, v);
            } else {
                lp_drop(tr, th);
            }
        }
        return 0;
    default: /* exception, opcode */
        return 0;
    }
}

/* ===================================================================== the frame-evaluation hook */

/* A frame of code known to be foreign runs with tracing off: no call, line or return events, and
 * none of the per-instruction work CPython's trace machinery does in a traced frame. Tracing is a
 * flag of the C-level evaluation loop (_PyCFrame.use_tracing), which a new loop copies from its
 * caller's; this hook, which CPython calls for every frame while it is installed (Python calls
 * are then not inlined), sets the caller's flag to what the new frame needs and puts it back
 * when the frame returns. Code not decided yet is traced, so that the trace function decides it
 * (the hook never runs Python code); project code is traced. Frames stay traced as CPython would
 * trace them when the thread is not ours, when a profile function is set (it needs every
 * frame's events) or while a trace or profile function runs. */
static PyObject *lp_eval_frame(PyThreadState *ts, struct _PyInterpreterFrame *f, int throwflag)
{
    if (ts->c_tracefunc != lp_trace || ts->c_profilefunc != NULL || ts->tracing) {
        return _PyEval_EvalFrameDefault(ts, f, throwflag);
    }
    lp_HookObject *h = (lp_HookObject *)ts->c_traceobj;
    lp_TracerObject *tr = h->tracer;
    lp_thread *th = h->thread;
    PyObject *code = (PyObject *)f->f_code;
    int traced = 1;
    if (tr != NULL && code != th->last_code) { /* last_code is a project record's */
        traced = lp_code_find(tr, code) != LP_FOREIGN;
    }
    _PyCFrame *caller = ts->cframe;
    uint8_t saved = caller->use_tracing;
    caller->use_tracing = traced ? 255 : 0;
    PyObject *res = _PyEval_EvalFrameDefault(ts, f, throwflag);
    /* Put back the caller's flag; if our trace function is gone meanwhile (recording stopped,
     * or sys.settrace), the flag CPython would set for what is installed now. */
    if (ts->c_tracefunc == lp_trace) {
        caller->use_tracing = saved;
    } else {
        caller->use_tracing = (ts->c_tracefunc != NULL || ts->c_profilefunc != NULL) ? 255 : 0;
    }
    return res;
}

/* Installs the hook unless another frame-evaluation function (a JIT, a debugger) is in place:
 * then frames are traced as CPython traces them, foreign ones included. */
void lp_eval_install(void)
{
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == _PyEval_EvalFrameDefault) {
        _PyInterpreterState_SetEvalFrameFunc(interp, lp_eval_frame);
    }
}

/* Takes the hook out if it is still ours. */
void lp_eval_uninstall(void)
{
    PyInterpreterState *interp = PyThreadState_GetInterpreter(PyThreadState_Get());
    if (_PyInterpreterState_GetEvalFrameFunc(interp) == lp_eval_frame) {
        _PyInterpreterState_SetEvalFrameFunc(interp, _PyEval_EvalFrameDefault);
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
    lp_stack_forget(th);
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

/* Whether some thread runs a trace function that is not one of ours (coverage.py's, a
 * debugger's): start() would replace it until stop(), so that thread's tool would miss what
 * runs meanwhile. */
int lp_foreign_trace_function(PyTypeObject *hook_type)
{
    PyThreadState *cur = PyThreadState_Get();
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(cur));
    for (; ts != NULL; ts = PyThreadState_Next(ts)) {
        /* Ours: the C function, or a Hook called as a Python trace function (a new thread's). */
        if (ts->c_tracefunc != NULL && ts->c_tracefunc != lp_trace &&
            !(ts->c_traceobj != NULL && Py_IS_TYPE(ts->c_traceobj, hook_type))) {
            return 1;
        }
    }
    return 0;
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
    /* Only for code decided already: deciding runs the filter, and the user's exception that may
     * arrive meanwhile cannot be raised from here, as a Python trace function that raises is
     * taken off its thread. Undecided code is met at its first line instead. */
    if (PyVectorcall_NARGS(nargsf) >= 2 && PyFrame_Check(args[0]) && PyUnicode_Check(args[1]) &&
        PyUnicode_CompareWithASCIIString(args[1], "call") == 0 &&
        lp_code_find(tr, lp_frame_code((PyFrameObject *)args[0])) != NULL) {
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
