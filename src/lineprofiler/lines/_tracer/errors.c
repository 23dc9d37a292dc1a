/* The tracer's errors: its own, kept for disable() and get_stats() while recording stops, and the
 * user's (a signal handler's exception raised inside the filter), passed on to the user's code. */
#include "tracer.h"

/* ===================================================================== deferred errors */

/* Takes the exception that is set, normalized and with its traceback, or NULL if none is. */
static PyObject *lp_take_exc(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    if (value != NULL && tb != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

/* Called with an exception set, from inside a callback: keeps the first
 * exception for disable()/get_stats() and stops recording. Leaves no
 * exception set. */
void lp_fail(lp_TracerObject *tr)
{
    PyObject *exc = lp_take_exc();
    if (tr->error == NULL) {
        tr->error = exc; /* may be NULL if nothing was set: still broken */
    } else {
        Py_XDECREF(exc);
    }
    tr->broken = 1;
    tr->on = 0;
}

/* ===================================================================== the user's exceptions */

/* How many times the filter is asked about one code object before its failure counts as its
 * own (each ask can meet one more pending signal). */
#define LP_FILTER_TRIES 4

/* The code objects of the Python functions that handle signals now (a new list), or NULL with
 * nothing set when they cannot be read. Runs no Python code: signal.getsignal() is C. */
static PyObject *lp_handler_codes(void)
{
    PyObject *codes = NULL, *getsignal = NULL, *nsig = NULL;
    PyObject *name = PyUnicode_FromString("_signal");
    PyObject *mod = name != NULL ? PyImport_GetModule(name) : NULL; /* imported already, or none */
    Py_XDECREF(name);
    if (mod == NULL) {
        goto done;
    }
    getsignal = PyObject_GetAttrString(mod, "getsignal");
    nsig = PyObject_GetAttrString(mod, "NSIG");
    long n = nsig != NULL ? PyLong_AsLong(nsig) : -1;
    if (getsignal == NULL || n < 0 || (codes = PyList_New(0)) == NULL) {
        goto done;
    }
    for (long i = 1; i < n; i++) {
        PyObject *handler = PyObject_CallFunction(getsignal, "l", i);
        if (handler == NULL) {
            PyErr_Clear();
            continue;
        }
        PyObject *func = PyMethod_Check(handler) ? PyMethod_GET_FUNCTION(handler) : handler;
        if (PyFunction_Check(func) && PyList_Append(codes, PyFunction_GET_CODE(func)) < 0) {
            Py_CLEAR(codes);
        }
        Py_DECREF(handler);
        if (codes == NULL) {
            break;
        }
    }
done:
    PyErr_Clear();
    Py_XDECREF(mod);
    Py_XDECREF(getsignal);
    Py_XDECREF(nsig);
    return codes;
}

/* Takes out of exc's traceback the frames of the filter, which the user's code would not have
 * had: what stays starts at the frame of the signal handler that raised it, if one did. */
static void lp_drop_filter_frames(PyObject *exc)
{
    PyObject *tb = PyException_GetTraceback(exc);
    if (tb == NULL) {
        return;
    }
    PyObject *codes = lp_handler_codes();
    PyObject *keep = Py_None;
    for (PyTracebackObject *t = (PyTracebackObject *)tb; t != NULL && codes != NULL; t = t->tb_next) {
        PyCodeObject *co = PyFrame_GetCode(t->tb_frame);
        int found = 0;
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(codes) && !found; i++) {
            found = PyList_GET_ITEM(codes, i) == (PyObject *)co;
        }
        Py_DECREF(co);
        if (found) {
            keep = (PyObject *)t;
            break;
        }
    }
    PyException_SetTraceback(exc, keep);
    Py_XDECREF(codes);
    Py_DECREF(tb);
}

/* Whether exc is in the chain of contexts that starts at head. */
static int lp_in_context_chain(PyObject *head, PyObject *exc)
{
    PyObject *cur = Py_NewRef(head);
    for (int i = 0; cur != NULL && i < 1000; i++) {
        if (cur == exc) {
            Py_DECREF(cur);
            return 1;
        }
        PyObject *next = PyException_GetContext(cur);
        Py_DECREF(cur);
        cur = next;
    }
    Py_XDECREF(cur);
    return 0;
}

/* Adds exc (owned) to *kept, the user's exceptions met so far: the newest is the one raised, the
 * one before it its context, as when an exception is raised while another is handled. */
static void lp_keep_user_exc(PyObject **kept, PyObject *exc)
{
    if (exc == NULL) {
        return;
    }
    lp_drop_filter_frames(exc);
    PyObject *prev = *kept;
    *kept = exc;
    if (prev != NULL && prev != exc && !lp_in_context_chain(prev, exc)) {
        PyException_SetContext(exc, prev); /* steals prev */
    } else {
        Py_XDECREF(prev);
    }
}

/* Asks the filter whether `code` is the project's: 1, 0, or -1 with the filter's own error set.
 *
 * The filter is Python code, and CPython runs what is pending at its checks between bytecodes
 * wherever they fall, the filter included: a signal's handler (Ctrl-C's KeyboardInterrupt), an
 * asynchronous exception. What they raise is the user's. It cannot be told from the filter's own
 * failure by what it is, but the filter's answer is a function of the code object alone: a
 * failure that does not repeat when the filter is asked again was not the filter's. Those are
 * left on th->user_exc for the callback to raise (see lp_raise_user_exc()); a failure that
 * repeats LP_FILTER_TRIES times is the filter's. */
int lp_ask_filter(lp_TracerObject *tr, lp_thread *th, PyObject *code)
{
    PyObject *kept = NULL;
    for (int tries = 1;; tries++) {
        PyObject *res = PyObject_CallOneArg(tr->filter, code);
        int yes = -1;
        if (res != NULL) {
            yes = PyObject_IsTrue(res);
            Py_DECREF(res);
        }
        if (yes >= 0) {
            if (kept != NULL) {
                Py_XSETREF(th->user_exc, kept); /* empty before: a callback decides once */
            }
            return yes;
        }
        if (tries == LP_FILTER_TRIES) {
            Py_XDECREF(kept); /* the same failure each time: every one was the filter's */
            return -1;
        }
        lp_keep_user_exc(&kept, lp_take_exc());
    }
}

/* Raises the user's exception left on th by lp_decide() and returns -1; returns 0 when there
 * is none. A callback that got no record from lp_code_of() returns through this: the exception
 * then surfaces in the user's code at the event, where the pending signal would have been
 * handled a few instructions later without the tracer. */
int lp_raise_user_exc(lp_thread *th)
{
    PyObject *exc = th->user_exc;
    if (exc == NULL) {
        return 0;
    }
    th->user_exc = NULL;
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    PyErr_Restore(Py_NewRef((PyObject *)Py_TYPE(exc)), exc, PyException_GetTraceback(exc));
#endif
    return -1;
}
