/* The disabled profiler: Noop (phase() and count() that do nothing) and its one NoopPhase. */

#include "phases.h"

/* ===================================================================== disabled profiler */

static PyObject *lp_noop_phase(lp_NoopObject *self, PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    if (LP_UNLIKELY(kwnames != NULL || nargs != 1 || !PyUnicode_Check(args[0]))) {
        PyObject *name;
        int flags;
        if (lp_parse_phase_args(args, nargs, kwnames, &name, &flags) < 0) {
            return NULL;
        }
    }
    return Py_NewRef(self->phase);
}

static PyObject *lp_noop_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    if (PyTuple_GET_SIZE(args) != 0 || (kwds != NULL && PyDict_GET_SIZE(kwds) != 0)) {
        PyErr_SetString(PyExc_TypeError, "Noop() takes no arguments");
        return NULL;
    }
    PyObject *module = PyType_GetModuleByDef(type, &lp_phases_module);
    if (module == NULL) {
        return NULL;
    }
    lp_NoopObject *self = (lp_NoopObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->phase = Py_NewRef(lp_get_state(module)->noop_phase);
    return (PyObject *)self;
}

static PyObject *lp_noop_count(lp_NoopObject *Py_UNUSED(self), PyObject *const *args, Py_ssize_t nargs,
                               PyObject *kwnames)
{
    if (LP_UNLIKELY(kwnames == NULL && (nargs < 1 || nargs > 2 || !PyUnicode_Check(args[0])))) {
        PyErr_SetString(PyExc_TypeError, "count(name: str, n: int = 1)");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef lp_noop_methods[] = {
    {"phase", (PyCFunction)(void (*)(void))lp_noop_phase, METH_FASTCALL | METH_KEYWORDS,
     "phase(name, io=False, sync=False): the disabled phase (a no-op context manager)."},
    {"count", (PyCFunction)(void (*)(void))lp_noop_count, METH_FASTCALL | METH_KEYWORDS,
     "count(name, n=1): no-op."},
    {NULL, NULL, 0, NULL},
};

static void lp_noop_dealloc(PyObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    Py_CLEAR(((lp_NoopObject *)self)->phase);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyType_Slot lp_noop_slots[] = {
    {Py_tp_new, lp_noop_new},
    {Py_tp_dealloc, lp_noop_dealloc},
    {Py_tp_methods, lp_noop_methods},
    {Py_tp_doc, "Noop(): phase() and count() of a disabled profiler."},
    {0, NULL},
};

PyType_Spec lp_noop_spec = {
    .name = "lineprofiler.accounting._phases.Noop",
    .basicsize = sizeof(lp_NoopObject),
    .flags = Py_TPFLAGS_DEFAULT,
    .slots = lp_noop_slots,
};

/* The disabled phase is one object per module, so its __enter__ and __exit__ are stored on the
 * type as builtin functions already bound to it (not method descriptors): the `with` statement
 * then finds a plain callable and allocates no bound method per use. They ignore their
 * arguments, so type(p).__enter__(p) works too. */
static PyObject *lp_noop_phase_enter(PyObject *self, PyObject *const *Py_UNUSED(args),
                                     Py_ssize_t Py_UNUSED(nargs))
{
    return Py_NewRef(self);
}

static PyObject *lp_noop_phase_exit(PyObject *Py_UNUSED(self), PyObject *const *Py_UNUSED(args),
                                    Py_ssize_t Py_UNUSED(nargs))
{
    Py_RETURN_FALSE;
}

static PyMethodDef lp_noop_enter_def = {"__enter__", (PyCFunction)(void (*)(void))lp_noop_phase_enter,
                                        METH_FASTCALL, "No-op; returns the disabled phase."};
static PyMethodDef lp_noop_exit_def = {"__exit__", (PyCFunction)(void (*)(void))lp_noop_phase_exit,
                                       METH_FASTCALL, "No-op; never suppresses an exception."};

static PyType_Slot lp_noop_phase_slots[] = {
    {Py_tp_dealloc, lp_noop_dealloc},
    {Py_tp_doc, "The phase of a disabled profiler: does nothing."},
    {0, NULL},
};

PyType_Spec lp_noop_phase_spec = {
    .name = "lineprofiler.accounting._phases.NoopPhase",
    .basicsize = sizeof(lp_NoopObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = lp_noop_phase_slots,
};

/* The module's one disabled phase, with __enter__ and __exit__ bound to it on its type. */
int lp_noop_init(PyObject *module, lp_state *st)
{
    LP_UNUSED(module);
    lp_NoopObject *np = (lp_NoopObject *)st->noop_phase_type->tp_alloc(st->noop_phase_type, 0);
    if (np == NULL) {
        return -1;
    }
    np->phase = NULL;
    st->noop_phase = (PyObject *)np;
    PyObject *enter = PyCFunction_NewEx(&lp_noop_enter_def, st->noop_phase, NULL);
    PyObject *exit = enter ? PyCFunction_NewEx(&lp_noop_exit_def, st->noop_phase, NULL) : NULL;
    int set = exit ? PyObject_SetAttrString((PyObject *)st->noop_phase_type, "__enter__", enter) : -1;
    if (set == 0) {
        set = PyObject_SetAttrString((PyObject *)st->noop_phase_type, "__exit__", exit);
    }
    Py_XDECREF(enter);
    Py_XDECREF(exit);
    if (set < 0) {
        return -1;
    }
    return 0;
}
