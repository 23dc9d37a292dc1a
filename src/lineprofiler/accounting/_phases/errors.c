/* The recorder's calls into Python from the hot path (hooks, a test's clocks), and the record of
 * the errors they raise: the profiler never lets its own failures reach user code. */
#include "phases.h"

/* Records the pending Python exception as a string in the recorder's errors, and clears it:
 * the profiler never lets its own failures reach user code. */
void lp_record_error(lp_RecorderObject *rec, const char *where)
{
    PyObject *exc = lp_err_take();
    rec->callback_errors++;
    if (rec->errors == NULL || PyList_GET_SIZE(rec->errors) >= LP_MAX_ERRORS) {
        rec->errors_dropped++;
        Py_XDECREF(exc);
        return;
    }
    PyObject *text = NULL;
    if (exc != NULL) {
        PyObject *s = PyObject_Str(exc);
        if (s == NULL) {
            PyErr_Clear();
        }
        /* the text may be the user's, of any length (a hook raising with megabytes): cut, and
         * the cut said, as the profiler's own errors are */
        Py_ssize_t more = s != NULL ? PyUnicode_GET_LENGTH(s) - LP_MAX_ERROR_TEXT : 0;
        if (more > 0) {
            PyObject *head = PyUnicode_Substring(s, 0, LP_MAX_ERROR_TEXT);
            PyObject *cut = head != NULL
                                ? PyUnicode_FromFormat("%U... (%zd more characters not kept)", head, more)
                                : NULL;
            Py_XDECREF(head);
            Py_DECREF(s);
            s = cut;
            if (s == NULL) {
                PyErr_Clear();
            }
        }
        text = PyUnicode_FromFormat("%s: %s: %U", where, Py_TYPE(exc)->tp_name, s ? s : Py_None);
        Py_XDECREF(s);
    } else {
        text = PyUnicode_FromString(where);
    }
    if (text == NULL || PyList_Append(rec->errors, text) < 0) {
        PyErr_Clear();
        rec->errors_dropped++;
    }
    Py_XDECREF(text);
    Py_XDECREF(exc);
}

/* Calls fn(*args) for a hook; any exception is recorded, never raised. The exception state
 * of the caller (for example the one __exit__ is handling) is kept intact. */
void lp_call_hook(lp_RecorderObject *rec, PyObject *fn, PyObject *arg, const char *where)
{
    PyObject *saved = lp_err_take();
    PyObject *result = arg ? PyObject_CallOneArg(fn, arg) : PyObject_CallNoArgs(fn);
    if (result == NULL) {
        lp_record_error(rec, where);
    } else {
        Py_DECREF(result);
    }
    lp_err_restore(saved);
}

int64_t lp_py_clock(lp_RecorderObject *rec, PyObject *fn, const char *where)
{
    PyObject *saved = lp_err_take();
    int64_t value = -1;
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r != NULL) {
        value = PyLong_AsLongLong(r);
        Py_DECREF(r);
    }
    if (PyErr_Occurred()) {
        lp_record_error(rec, where);
        value = -1;
    }
    lp_err_restore(saved);
    return value;
}
