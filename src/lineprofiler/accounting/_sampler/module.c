/* lineprofiler.accounting._sampler: the module, its functions and constants. The Sampler type is
 * sampler_type.c's; what the sampler does and its concurrency rules are described in sampler.h. */
#include "sampler.h"

PyDoc_STRVAR(lp_thread_io_doc,
             "thread_io() -> tuple[int, int, int, int, int, int] | None\n--\n\n"
             "The calling thread's /proc/thread-self/io counters (rchar, wchar, read_bytes, write_bytes, "
             "cancelled_write_bytes) and the bytes this read itself added to rchar; None when unreadable.");

static PyObject *lp_thread_io(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    lp_io_counters io;
    ssize_t n = lp_read_thread_io(&io);
    if (n < 0) {
        Py_RETURN_NONE;
    }
    return Py_BuildValue("(LLLLLn)", (long long)io.rchar, (long long)io.wchar, (long long)io.read_bytes,
                         (long long)io.write_bytes, (long long)io.cancelled_write_bytes, (Py_ssize_t)n);
}

typedef struct {
    PyTypeObject *sampler_type;
} lp_state;

static int lp_module_exec(PyObject *module)
{
    lp_state *st = PyModule_GetState(module);
    st->sampler_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &lp_sampler_spec, NULL);
    if (st->sampler_type == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "Sampler", (PyObject *)st->sampler_type) < 0) {
        return -1;
    }
    PyObject *tl_cols = Py_BuildValue("(sssssss)", "t_ns", "tid", "phase", "since_ns", "prev_phase",
                                      "prev_since_ns", "prev_end_ns");
    if (tl_cols == NULL || PyModule_AddObject(module, "TIMELINE_COLUMNS", tl_cols) < 0) {
        Py_XDECREF(tl_cols);
        return -1;
    }
    if (PyModule_AddIntConstant(module, "FLAG_SEGMENT_START", LP_ROW_SEGMENT_START) < 0 ||
        PyModule_AddIntConstant(module, "FLAG_CHILD_REAPED", LP_ROW_CHILD_REAPED) < 0 ||
        PyModule_AddIntConstant(module, "FLAG_REAP_UNKNOWN", LP_ROW_REAP_UNKNOWN) < 0 ||
        PyModule_AddIntConstant(module, "MAX_GPUS", LP_NVML_MAX_DEVICES) < 0) {
        return -1;
    }
    return 0;
}

static int lp_module_traverse(PyObject *module, visitproc visit, void *arg)
{
    lp_state *st = PyModule_GetState(module);
    Py_VISIT(st->sampler_type);
    return 0;
}

static int lp_module_clear(PyObject *module)
{
    lp_state *st = PyModule_GetState(module);
    Py_CLEAR(st->sampler_type);
    return 0;
}

static void lp_module_free(void *module)
{
    lp_module_clear((PyObject *)module);
}

static PyMethodDef lp_module_methods[] = {
    {"thread_io", (PyCFunction)lp_thread_io, METH_NOARGS, lp_thread_io_doc},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef_Slot lp_slots[] = {
    {Py_mod_exec, lp_module_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef lp_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "lineprofiler.accounting._sampler",
    .m_doc = "The resource sampler: a native thread sampling /proc and NVML into a ring of int64 rows.",
    .m_size = sizeof(lp_state),
    .m_methods = lp_module_methods,
    .m_slots = lp_slots,
    .m_traverse = lp_module_traverse,
    .m_clear = lp_module_clear,
    .m_free = lp_module_free,
};

PyMODINIT_FUNC PyInit__sampler(void)
{
    return PyModuleDef_Init(&lp_module);
}
