/* The module lineprofiler.accounting._phases: its state, its functions, the capsule for the
 * sampler, and its lifetime (multi-phase init). */
#include "phases.h"

#include <string.h>

/* ===================================================================== module functions */

static PyObject *lp_mod_path_of(PyObject *module, PyObject *arg)
{
    lp_state *st = lp_get_state(module);
    if (st->primary == NULL) {
        Py_RETURN_NONE;
    }
    return lp_recorder_path_of(st->primary, arg);
}

static PyObject *lp_mod_main_thread_phase(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyLong_FromLong(
        atomic_load_explicit(&lp_get_state(module)->main_thread_phase, memory_order_relaxed));
}

static PyObject *lp_mod_after_fork_child(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = lp_get_state(module);
    /* The thread that forked is the child's main thread; the others do not exist here. */
    st->main_ident = PyThread_get_thread_ident();
    st->main_tstate = PyThreadState_Get();
    st->main_stack = NULL;
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        /* the child's /proc/self/io starts from zero, and so do its own writes */
        atomic_store_explicit(&st->own_io[i], 0, memory_order_relaxed);
    }
    /* a fork in the middle of a sampler read leaves the count odd, and no sampler thread here */
    atomic_store(&st->own_io_seq, 0u);
    lp_set_main_phase(st, -1, lp_monotonic_ns());
    Py_RETURN_NONE;
}

static PyObject *lp_mod_thread_cpu_ns(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    LP_UNUSED(module);
    return PyLong_FromLongLong(lp_thread_cpu_ns());
}

static PyObject *lp_mod_cpu_clock_source(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    LP_UNUSED(module);
    return PyUnicode_FromString("clock_gettime");
}

static int lp_run_deferred(void *arg)
{
    PyObject *fn = (PyObject *)arg;
    PyObject *saved = lp_err_take();
    PyObject *r = PyObject_CallNoArgs(fn);
    if (r == NULL) {
        PyErr_WriteUnraisable(fn);
    }
    Py_XDECREF(r);
    Py_DECREF(fn);
    lp_err_restore(saved);
    return 0;
}

static PyObject *lp_mod_defer(PyObject *module, PyObject *fn)
{
    LP_UNUSED(module);
    if (!PyCallable_Check(fn)) {
        PyErr_SetString(PyExc_TypeError, "defer() needs a callable");
        return NULL;
    }
    Py_INCREF(fn);
    if (Py_AddPendingCall(lp_run_deferred, fn) < 0) {
        Py_DECREF(fn);
        Py_RETURN_FALSE;
    }
    Py_RETURN_TRUE;
}

static PyMethodDef lp_mod_methods[] = {
    {"defer", lp_mod_defer, METH_O,
     "defer(fn) -> bool: run fn() in the main thread once the current C call returns (a pending call)."},
    {"bucket_edges", lp_mod_bucket_edges, METH_NOARGS,
     "The histogram's edge table (equals histogram.EDGES)."},
    {"bucket_index", lp_mod_bucket_index, METH_O, "bucket_index(ns): the bucket a duration falls into."},
    {"read_io", lp_mod_read_io, METH_NOARGS,
     "The /proc/self/io counters as a dict, or None when unreadable."},
    {"own_io_begin", lp_mod_own_io_begin, METH_NOARGS,
     "Read the I/O counters before one of the profiler's own writes; pass the token to own_io_end."},
    {"own_io_end", lp_mod_own_io_end, METH_O,
     "Add what moved since own_io_begin to the process's own-I/O total; returns it, or None."},
    {"own_io", lp_mod_own_io, METH_NOARGS, "The bytes the profiler's own writes moved in this process."},
    {"reap_own_child", lp_mod_reap_own_child, METH_O,
     "Wait for and reap a child the profiler started, its I/O counted as the profiler's own: (status, "
     "counted)."},
    {"live_ranges", lp_mod_live_ranges, METH_NOARGS,
     "live_ranges() -> [(start, bytes, state)]: the address ranges live files are mapped into (state 0 in "
     "use, "
     "1 lost: the file shrank under a store, 2 the parent's, in a fork child)."},
    {"path_of", lp_mod_path_of, METH_O, "path_of(id): a node id's path in the primary recorder, or None."},
    {"main_thread_phase", lp_mod_main_thread_phase, METH_NOARGS,
     "The node id published for the main thread's innermost phase (-1: none)."},
    {"after_fork_child", lp_mod_after_fork_child, METH_NOARGS, "Reset process-wide state in a fork child."},
    {"thread_cpu_ns", lp_mod_thread_cpu_ns, METH_NOARGS,
     "This thread's CPU time as phases read it (-1: failed)."},
    {"cpu_clock_source", lp_mod_cpu_clock_source, METH_NOARGS, "How thread CPU time is read."},
#ifdef LP_DEV_SEAMS
    {"_set_io_path", lp_mod_set_io_path, METH_O, "Test seam: read I/O counters from another file."},
    {"_hold_own_read", lp_mod_hold_own_read, METH_VARARGS,
     "Test seam: read a file as the sampler does and stay inside its window for hold_ns."},
#endif
    {NULL, NULL, 0, NULL},
};

/* ===================================================================== module lifetime */

static int lp_module_exec(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    lp_io_init(st);
    atomic_init(&st->main_thread_phase, -1);
    atomic_init(&st->main_thread_since_ns, 0);
    st->primary = NULL;
    st->cache_tsid = 0;
    st->cache_stack = st->main_stack = NULL;
    lp_init_edges(st);

    st->stack_var = PyContextVar_New("lineprofiler.accounting._phases.stack", NULL);
    st->overflow_name = PyUnicode_InternFromString("(overflow)");
    st->slash = PyUnicode_FromString("/");
    st->underscore = PyUnicode_FromString("_");
    if (st->stack_var == NULL || st->overflow_name == NULL || st->slash == NULL || st->underscore == NULL) {
        return -1;
    }

    PyObject *threading = PyImport_ImportModule("threading");
    if (threading == NULL) {
        return -1;
    }
    PyObject *main = PyObject_CallMethod(threading, "main_thread", NULL);
    Py_DECREF(threading);
    if (main == NULL) {
        return -1;
    }
    PyObject *ident = PyObject_GetAttrString(main, "ident");
    Py_DECREF(main);
    if (ident == NULL) {
        return -1;
    }
    st->main_ident = PyLong_AsUnsignedLong(ident);
    Py_DECREF(ident);
    if (PyErr_Occurred()) {
        return -1;
    }
    /* else learnt when the main thread makes its first stack */
    st->main_tstate = PyThread_get_thread_ident() == st->main_ident ? PyThreadState_Get() : NULL;

#define LP_ADD_TYPE(field, spec)                                                                             \
    do {                                                                                                     \
        st->field = (PyTypeObject *)PyType_FromModuleAndSpec(module, &spec, NULL);                           \
        if (st->field == NULL) {                                                                             \
            return -1;                                                                                       \
        }                                                                                                    \
    } while (0)
    LP_ADD_TYPE(recorder_type, lp_recorder_spec);
    LP_ADD_TYPE(phase_type, lp_phase_spec);
    LP_ADD_TYPE(noop_type, lp_noop_spec);
    LP_ADD_TYPE(noop_phase_type, lp_noop_phase_spec);
    LP_ADD_TYPE(stack_type, lp_stack_spec);
#undef LP_ADD_TYPE
    if (PyModule_AddType(module, st->recorder_type) < 0 || PyModule_AddType(module, st->phase_type) < 0 ||
        PyModule_AddType(module, st->noop_type) < 0 || PyModule_AddType(module, st->noop_phase_type) < 0) {
        return -1;
    }
    if (lp_noop_init(module, st) < 0) {
        return -1;
    }

    st->capi.version = LP_PHASES_CAPI_VERSION;
    st->capi.main_thread_phase = &st->main_thread_phase;
    st->capi.main_thread_since_ns = &st->main_thread_since_ns;
    st->capi.own_io = st->own_io;
    st->capi.own_io_seq = &st->own_io_seq;
    lp_threads_init(st);
    /* The capsule points into this module's state: a user keeps the module alive. */
    PyObject *capsule = PyCapsule_New(&st->capi, LP_PHASES_CAPI_NAME, NULL);
    if (capsule == NULL) {
        return -1;
    }
    int added = PyModule_AddObjectRef(module, "_C_API", capsule);
    Py_DECREF(capsule);
    if (added < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "N_BUCKETS", LP_N_BUCKETS) < 0 ||
        PyModule_AddIntConstant(module, "LAST_EDGE", LP_LAST_EDGE) < 0 ||
        PyModule_AddIntConstant(module, "CAPI_VERSION", LP_PHASES_CAPI_VERSION) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_MAX_PATHS", LP_DEFAULT_MAX_PATHS) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_MAX_COUNTERS", LP_DEFAULT_MAX_COUNTERS) < 0 ||
        PyModule_AddIntConstant(module, "DEFAULT_MAX_DEPTH", LP_DEFAULT_MAX_DEPTH) < 0) {
        return -1;
    }
    return 0;
}

static int lp_module_traverse(PyObject *module, visitproc visit, void *arg)
{
    lp_state *st = lp_get_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_VISIT(st->recorder_type);
    Py_VISIT(st->phase_type);
    Py_VISIT(st->noop_type);
    Py_VISIT(st->noop_phase_type);
    Py_VISIT(st->stack_type);
    Py_VISIT(st->noop_phase);
    Py_VISIT(st->stack_var);
    return 0;
}

static int lp_module_clear(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    if (st == NULL) {
        return 0;
    }
    Py_CLEAR(st->noop_phase);
    Py_CLEAR(st->recorder_type);
    Py_CLEAR(st->phase_type);
    Py_CLEAR(st->noop_type);
    Py_CLEAR(st->noop_phase_type);
    Py_CLEAR(st->stack_type);
    Py_CLEAR(st->stack_var);
    Py_CLEAR(st->overflow_name);
    Py_CLEAR(st->slash);
    Py_CLEAR(st->underscore);
    return 0;
}

static void lp_module_free(void *module)
{
    lp_state *st = lp_get_state((PyObject *)module);
    if (st == NULL) {
        return;
    }
    (void)lp_module_clear((PyObject *)module);
    lp_io_close(st);
}

static PyModuleDef_Slot lp_module_slots[] = {
    {Py_mod_exec, lp_module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

struct PyModuleDef lp_phases_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "lineprofiler.accounting._phases",
    .m_doc = "The accounting layer's engine: phases, counters, histograms, exact per-phase I/O.",
    .m_size = sizeof(lp_state),
    .m_methods = lp_mod_methods,
    .m_slots = lp_module_slots,
    .m_traverse = lp_module_traverse,
    .m_clear = lp_module_clear,
    .m_free = lp_module_free,
};

PyMODINIT_FUNC PyInit__phases(void)
{
    return PyModuleDef_Init(&lp_phases_module);
}
