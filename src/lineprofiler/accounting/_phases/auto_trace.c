/* trace="auto": the project's function calls as phases of a recorder, so a program with no
 * phase() calls still gets a tree, spans and a story. The callables here are what
 * lineprofiler.accounting.auto_trace registers with sys.monitoring (3.12+) for PY_START,
 * PY_RESUME, PY_THROW (a frame starts or goes on: enter its phase) and PY_RETURN, PY_YIELD,
 * PY_UNWIND (it stops: exit it).
 *
 * Which code is the project's is asked once per code object of a Python callable (the line
 * layer's project filter), which answers the phase name or None; the answer is kept in a dict
 * by code object. Code that is not the project's gets DISABLE where sys.monitoring allows it, so
 * it costs nothing after its first call. The dict keeps each code object alive, so it is emptied
 * when it reaches `cache_max` entries (65,536 by default; counted): a program that compiles code
 * as it runs (exec, namedtuple, templates) would otherwise grow it for as long as it runs. The
 * phases stay the recorder's, so a code asked again gets the same one. A frame's exit closes its phase only when that phase is
 * open on the calling thread's stack: a frame that was running when tracing began has no entry.
 * Nothing of ours raises into the program: a failure is counted, and the event goes on. An
 * exception that is not an Exception (KeyboardInterrupt from a signal handler that ran during
 * the filter) is the program's, and goes to it. */
#include "phases.h"

typedef struct {
    PyObject_HEAD
    lp_state *st;       /* the module's: its Phase type */
    PyObject *recorder; /* strong: the Recorder the phases belong to */
    PyObject *admit;    /* strong: admit(code) -> phase name | None */
    PyObject *phases;   /* strong: dict code -> Phase | None */
    PyObject *disable;  /* strong: sys.monitoring.DISABLE */
    Py_ssize_t cache_max;
    int64_t functions, entries, exits_skipped, errors, cache_clears;
} lp_AutoTracerObject;

/* The phase of `code` (borrowed), Py_None when it is not the project's, NULL on a failure
 * (counted, cleared), or NULL with the program's own exception set (see the top). */
static PyObject *lp_auto_phase_of(lp_AutoTracerObject *self, PyObject *code)
{
    PyObject *phase = PyDict_GetItemWithError(self->phases, code);
    if (phase != NULL || PyErr_Occurred()) {
        if (phase == NULL) {
            PyErr_Clear();
            self->errors++;
        }
        return phase;
    }
    PyObject *name = PyObject_CallOneArg(self->admit, code);
    if (name == NULL && !PyErr_ExceptionMatches(PyExc_Exception)) {
        return NULL; /* the program's (see the top): left set, nothing cached */
    }
    PyObject *made = NULL;
    if (name != NULL && PyUnicode_Check(name)) {
        made = PyObject_CallMethod(self->recorder, "phase", "O", name);
        self->functions += made != NULL;
    } else if (name == Py_None) {
        made = Py_NewRef(Py_None);
    }
    Py_XDECREF(name);
    if (made == NULL) {
        /* a filter or a recorder that failed: this code is left out, once, and counted */
        PyErr_Clear();
        self->errors++;
        made = Py_NewRef(Py_None);
    }
    if (PyDict_GET_SIZE(self->phases) >= self->cache_max) {
        PyDict_Clear(self->phases);
        self->cache_clears++;
    }
    int stored = PyDict_SetItem(self->phases, code, made);
    Py_DECREF(made);
    if (stored < 0) {
        PyErr_Clear();
        self->errors++;
        return NULL;
    }
    return PyDict_GetItemWithError(self->phases, code); /* borrowed from the dict */
}

/* Whether `phase` has an entry open on this thread's current stack. */
static int lp_auto_open_here(lp_PhaseObject *phase)
{
    lp_RecorderObject *rec = phase->rec;
    lp_StackObject *inherited = NULL;
    lp_StackObject *ts = lp_stack_own(rec->st, PyThreadState_Get(), &inherited);
    if (ts == NULL) {
        return 0;
    }
    for (int32_t i = ts->depth - 1; i >= ts->n_base; i--) {
        if (ts->frames[i].phase == phase && ts->frames[i].gen == rec->gen) {
            return 1;
        }
    }
    return 0;
}

static PyObject *lp_auto_event(lp_AutoTracerObject *self, PyObject *const *args, Py_ssize_t nargs, int enter,
                               int may_disable)
{
    if (nargs < 1) {
        Py_RETURN_NONE;
    }
    /* An exception already set (a signal handler's, between bytecodes) stays the program's. */
    PyObject *pending = lp_err_take();
    PyObject *phase = lp_auto_phase_of(self, args[0]);
    if (phase == NULL && PyErr_Occurred()) {
        Py_XDECREF(pending);
        return NULL; /* a KeyboardInterrupt or the like: the program's */
    }
    PyObject *result = Py_None;
    if (phase == Py_None) {
        result = may_disable ? self->disable : Py_None;
    } else if (phase != NULL && Py_IS_TYPE(phase, self->st->phase_type)) {
        lp_PhaseObject *p = (lp_PhaseObject *)phase;
        PyObject *done = NULL;
        if (enter) {
            done = lp_phase_enter_c(p);
            self->entries++;
        } else if (lp_auto_open_here(p)) {
            done = lp_phase_exit_c(p);
        } else {
            self->exits_skipped++;
            done = Py_NewRef(Py_None);
        }
        if (done == NULL) {
            PyErr_Clear();
            self->errors++;
        }
        Py_XDECREF(done);
    }
    lp_err_restore(pending);
    return Py_NewRef(result);
}

static PyObject *lp_auto_on_start(lp_AutoTracerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_auto_event(self, args, nargs, 1, 1);
}

static PyObject *lp_auto_on_throw(lp_AutoTracerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_auto_event(self, args, nargs, 1, 0); /* PY_THROW cannot be disabled */
}

static PyObject *lp_auto_on_return(lp_AutoTracerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_auto_event(self, args, nargs, 0, 1);
}

static PyObject *lp_auto_on_unwind(lp_AutoTracerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_auto_event(self, args, nargs, 0, 0); /* PY_UNWIND cannot be disabled */
}

/* hook(kind): the callable to register for "start", "resume", "throw", "return", "yield" or
 * "unwind" (the names the line layer's monitoring hold asks for). */
static PyObject *lp_auto_hook(lp_AutoTracerObject *self, PyObject *kind)
{
    static const char *const names[][2] = {
        {"start", "on_start"},   {"resume", "on_start"}, {"throw", "on_throw"},
        {"return", "on_return"}, {"yield", "on_return"}, {"unwind", "on_unwind"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (PyUnicode_Check(kind) && PyUnicode_CompareWithASCIIString(kind, names[i][0]) == 0) {
            return PyObject_GetAttrString((PyObject *)self, names[i][1]);
        }
    }
    PyErr_Format(PyExc_ValueError, "no auto-trace hook for %R", kind);
    return NULL;
}

static PyObject *lp_auto_stats(lp_AutoTracerObject *self, PyObject *Py_UNUSED(ignored))
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "functions", (long long)self->functions, "entries",
                         (long long)self->entries, "exits_skipped", (long long)self->exits_skipped, "errors",
                         (long long)self->errors, "cache_clears", (long long)self->cache_clears);
}

static PyObject *lp_auto_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"recorder", "admit", "disable", "cache_max", NULL};
    PyObject *recorder, *admit, *disable;
    Py_ssize_t cache_max = 65536;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "OOO|$n:AutoTracer", kwlist, &recorder, &admit, &disable,
                                     &cache_max)) {
        return NULL;
    }
    if (cache_max < 1) {
        PyErr_SetString(PyExc_ValueError, "cache_max must be at least 1");
        return NULL;
    }
    lp_state *st = PyType_GetModuleState(type);
    if (st == NULL) {
        return NULL;
    }
    if (!PyObject_TypeCheck(recorder, st->recorder_type)) {
        PyErr_SetString(PyExc_TypeError, "AutoTracer needs a Recorder");
        return NULL;
    }
    if (!PyCallable_Check(admit)) {
        PyErr_SetString(PyExc_TypeError, "admit must be callable");
        return NULL;
    }
    lp_AutoTracerObject *self = (lp_AutoTracerObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->phases = PyDict_New();
    if (self->phases == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    self->st = st;
    self->cache_max = cache_max;
    self->recorder = Py_NewRef(recorder);
    self->admit = Py_NewRef(admit);
    self->disable = Py_NewRef(disable);
    return (PyObject *)self;
}

static int lp_auto_traverse(lp_AutoTracerObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->recorder);
    Py_VISIT(self->admit);
    Py_VISIT(self->phases);
    Py_VISIT(self->disable);
    return 0;
}

static int lp_auto_clear(lp_AutoTracerObject *self)
{
    Py_CLEAR(self->recorder);
    Py_CLEAR(self->admit);
    Py_CLEAR(self->phases);
    Py_CLEAR(self->disable);
    return 0;
}

static void lp_auto_dealloc(lp_AutoTracerObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    lp_auto_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMethodDef lp_auto_methods[] = {
    {"on_start", (PyCFunction)(void (*)(void))lp_auto_on_start, METH_FASTCALL, "PY_START, PY_RESUME."},
    {"on_throw", (PyCFunction)(void (*)(void))lp_auto_on_throw, METH_FASTCALL, "PY_THROW."},
    {"on_return", (PyCFunction)(void (*)(void))lp_auto_on_return, METH_FASTCALL, "PY_RETURN, PY_YIELD."},
    {"on_unwind", (PyCFunction)(void (*)(void))lp_auto_on_unwind, METH_FASTCALL, "PY_UNWIND."},
    {"hook", (PyCFunction)lp_auto_hook, METH_O, "hook(kind): the callable for a sys.monitoring event."},
    {"stats", (PyCFunction)lp_auto_stats, METH_NOARGS, "Functions admitted, entries, exits skipped, errors."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lp_auto_slots[] = {
    {Py_tp_doc, "AutoTracer(recorder, admit, disable, *, cache_max=65536): the project's function calls as "
                "phases."},
    {Py_tp_new, lp_auto_new},
    {Py_tp_traverse, lp_auto_traverse},
    {Py_tp_clear, lp_auto_clear},
    {Py_tp_dealloc, lp_auto_dealloc},
    {Py_tp_methods, lp_auto_methods},
    {0, NULL},
};

PyType_Spec lp_auto_tracer_spec = {
    .name = "lineprofiler.accounting._phases.AutoTracer",
    .basicsize = sizeof(lp_AutoTracerObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_auto_slots,
};
