/* The test and benchmark switches of the tracer (`_set_test_clock` and the like): compiled only
 * into a development build (LP_DEV_SEAMS, which setup.py defines when LINEPROFILER_DEV_BUILD=1),
 * never into a wheel. lineprofiler/lines/_tracer_testing.py is their Python face. */
#include "tracer.h"

#ifdef LP_DEV_SEAMS

static lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
}

PyDoc_STRVAR(lp_set_test_clock_doc,
             "_set_test_clock(enabled, callback_cost=0, now=0)\n--\n\n"
             "TEST ONLY. While enabled, tracers that start recording from empty read a\n"
             "fake clock instead of the real one: it stands still except when\n"
             "_advance_test_clock() moves it, and every timed slow path of a callback\n"
             "(deciding whether code is ours, growing a table) advances it by\n"
             "callback_cost between its two clock reads, as if it had spent that long.\n"
             "The common path of a callback reads the clock once and does not advance\n"
             "it. One tick is one nanosecond.");

static PyObject *lp_set_test_clock(PyObject *module, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"enabled", "callback_cost", "now", NULL};
    int enabled;
    long long cost = 0, now = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "p|LL:_set_test_clock", kwlist, &enabled, &cost, &now)) {
        return NULL;
    }
    if (cost < 0 || now < 0) {
        PyErr_SetString(PyExc_ValueError, "_set_test_clock: callback_cost and now must be >= 0");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    st->test_clock = enabled;
    st->test_cost = cost;
    st->test_now = now;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_advance_test_clock_doc,
             "_advance_test_clock(ns)\n--\n\n"
             "TEST ONLY. Moves the fake clock forward by ns and returns the new reading.");

static PyObject *lp_advance_test_clock(PyObject *module, PyObject *arg)
{
    long long ns = PyLong_AsLongLong(arg);
    if (ns == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (ns < 0) {
        PyErr_SetString(PyExc_ValueError, "_advance_test_clock: ns must be >= 0");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    st->test_now += ns;
    return PyLong_FromLongLong(st->test_now);
}

PyDoc_STRVAR(lp_set_foreign_limit_doc,
             "_set_foreign_limit(n)\n--\n\n"
             "TEST ONLY. How many foreign-code decisions a tracer caches before it drops\n"
             "them all (default 65536). Returns the previous limit.");

static PyObject *lp_set_foreign_limit(PyObject *module, PyObject *arg)
{
    Py_ssize_t n = PyLong_AsSsize_t(arg);
    if (n == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (n < 1) {
        PyErr_SetString(PyExc_ValueError, "_set_foreign_limit: n must be >= 1");
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    Py_ssize_t prev = st->foreign_limit;
    st->foreign_limit = n;
    return PyLong_FromSsize_t(prev);
}

PyDoc_STRVAR(lp_set_presize_doc, "_set_presize(enabled)\n--\n\n"
                                 "TEST ONLY. Whether new code records size their line arrays from\n"
                                 "co_lines() (the default) or start empty and grow line by line, which\n"
                                 "exercises the growth path. Returns the previous setting.");

static PyObject *lp_set_presize(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    lp_state *st = lp_get_state(module);
    int prev = st->presize;
    st->presize = on;
    return PyBool_FromLong(prev);
}

/* A trace function that does nothing: what any C trace function costs at least. */
static int lp_noop_trace(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg)
{
    LP_UNUSED(obj);
    LP_UNUSED(frame);
    LP_UNUSED(what);
    LP_UNUSED(arg);
    return 0;
}

PyDoc_STRVAR(lp_set_noop_trace_doc,
             "_set_noop_trace(enabled)\n--\n\n"
             "BENCHMARK ONLY. Installs (or removes) a C trace function that returns at once on\n"
             "the calling thread: the floor under any trace-function profiler.");

static PyObject *lp_set_noop_trace(PyObject *module, PyObject *arg)
{
    int on = PyObject_IsTrue(arg);
    if (on < 0) {
        return NULL;
    }
    if (on && lp_get_state(module)->active != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_set_noop_trace: a tracer is recording");
        return NULL;
    }
    PyEval_SetTrace(on ? lp_noop_trace : NULL, NULL);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_floor_noop_doc, "_floor_noop(*args)\n--\n\n"
                                "BENCHMARK ONLY. A sys.monitoring callback that does nothing: what an\n"
                                "event costs before any profiler work.");

static PyObject *lp_floor_noop(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    LP_UNUSED(module);
    LP_UNUSED(args);
    LP_UNUSED(nargs);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_floor_clock_doc, "_floor_clock(*args)\n--\n\n"
                                 "BENCHMARK ONLY. A sys.monitoring callback that only reads the tracer's\n"
                                 "clock: the least any per-line timing pays per event.");

static PyObject *lp_floor_clock(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    LP_UNUSED(args);
    LP_UNUSED(nargs);
    lp_state *st = lp_get_state(module);
    /* Without a TSC no tracer uses LP_CLOCK_TSC (and lp_tsc() is never reached). */
    st->floor_sink += st->default_clock == LP_CLOCK_TSC ? lp_tsc() : lp_monotonic_ns();
    Py_RETURN_NONE;
}

static PyMethodDef lp_dev_seam_methods[] = {
    {"_set_test_clock", (PyCFunction)(void (*)(void))lp_set_test_clock, METH_VARARGS | METH_KEYWORDS,
     lp_set_test_clock_doc},
    {"_advance_test_clock", (PyCFunction)lp_advance_test_clock, METH_O, lp_advance_test_clock_doc},
    {"_set_foreign_limit", (PyCFunction)lp_set_foreign_limit, METH_O, lp_set_foreign_limit_doc},
    {"_set_presize", (PyCFunction)lp_set_presize, METH_O, lp_set_presize_doc},
    {"_set_noop_trace", (PyCFunction)lp_set_noop_trace, METH_O, lp_set_noop_trace_doc},
    {"_floor_noop", (PyCFunction)(void (*)(void))lp_floor_noop, METH_FASTCALL, lp_floor_noop_doc},
    {"_floor_clock", (PyCFunction)(void (*)(void))lp_floor_clock, METH_FASTCALL, lp_floor_clock_doc},
    {NULL, NULL, 0, NULL},
};

/* Adds the switches to the module (their `self` is the module, as for its own functions). */
int lp_add_dev_seams(PyObject *module)
{
    return PyModule_AddFunctions(module, lp_dev_seam_methods);
}

#endif /* LP_DEV_SEAMS */
