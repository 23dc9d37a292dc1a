/* lineprofiler.lines._tracer: the Python face of the line tracer (the Tracer type, the module).
 * The Hook type is hook.c's, the clock's calibration clock.c's, the test switches (in a
 * development build only) dev_seams.c's. What the tracer records and how is described in
 * tracer.h. */
#include "tracer.h"

#include <stdlib.h>
#include <string.h>

static lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
}

/* ===================================================================== tracer methods */

static PyObject *lp_tracer_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"filter", NULL};
    PyObject *filter;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O:Tracer", kwlist, &filter)) {
        return NULL;
    }
    if (!PyCallable_Check(filter)) {
        PyErr_SetString(PyExc_TypeError, "Tracer(filter): filter must be callable");
        return NULL;
    }
    PyObject *module = PyType_GetModule(type);
    if (module == NULL) {
        return NULL;
    }
    PyObject *disable = NULL;
#if LP_MONITORING
    PyObject *sys_monitoring = PySys_GetObject("monitoring"); /* borrowed */
    if (sys_monitoring == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "lineprofiler: sys.monitoring is missing");
        return NULL;
    }
    disable = PyObject_GetAttrString(sys_monitoring, "DISABLE");
    if (disable == NULL) {
        return NULL;
    }
#endif
    lp_TracerObject *tr = (lp_TracerObject *)type->tp_alloc(type, 0);
    if (tr == NULL) {
        Py_XDECREF(disable);
        return NULL;
    }
    tr->st = lp_get_state(module);
    tr->filter = Py_NewRef(filter);
    tr->disable = disable;
    tr->clock = tr->st->default_clock;
    return (PyObject *)tr;
}

static int lp_tracer_traverse(lp_TracerObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->filter);
    Py_VISIT(self->error);
    return 0;
}

static int lp_tracer_clear_refs(lp_TracerObject *self)
{
    Py_CLEAR(self->filter);
    Py_CLEAR(self->error);
    return 0;
}

static void lp_tracer_dealloc(lp_TracerObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    lp_tracer_free_data(self);
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread *th = (lp_thread *)self->threads.slots[j].val;
        if (th != NULL) {
            PyMem_Free(th->stack);
            PyMem_Free(th->top_of);
            Py_XDECREF(th->user_exc);
#if !LP_MONITORING
            Py_XDECREF(th->prev_obj);
#endif
            PyMem_Free(th);
        }
    }
    PyMem_Free(self->threads.slots);
    lp_follow_free(self);
    lp_tracer_clear_refs(self);
    Py_CLEAR(self->disable);
    tp->tp_free((PyObject *)self);
    Py_DECREF(tp);
}

PyDoc_STRVAR(lp_start_doc, "start()\n--\n\n"
                           "Start recording. On 3.11 this installs the C trace function on every\n"
                           "thread of the interpreter; on 3.12+ the caller registers hook() callables\n"
                           "with sys.monitoring. RuntimeError if another Tracer is recording.");

static PyObject *lp_tracer_start(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_state *st = self->st;
    if (self->started) {
        Py_RETURN_NONE;
    }
    if (st->active != NULL && st->active != (PyObject *)self) {
        PyErr_SetString(PyExc_RuntimeError, "lineprofiler: another LineProfiler is already enabled in this "
                                            "process; disable it first (one records at a time)");
        return NULL;
    }
    if (!self->has_data) {
        /* The clock is chosen when recording begins from empty, so all the
         * ticks of one data set share one unit. */
        self->clock = st->test_clock ? LP_CLOCK_TEST : st->default_clock;
        self->has_data = 1;
    }
    st->active = Py_NewRef((PyObject *)self);
    lp_follow_window(self);
    self->stop_mark = 0;
    self->idle_scale = 0.0; /* new ticks: the scale is measured again at the next collect */
    self->started = 1;
    self->broken = 0;
    self->on = 1;
    /* Threads keep their states across sessions; their stacks start empty. */
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread *th = (lp_thread *)self->threads.slots[j].val;
        if (th != NULL) {
            lp_stack_forget(th);
        }
    }
#if !LP_MONITORING
    PyThreadState *cur = PyThreadState_Get();
    PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(cur));
    for (; ts != NULL; ts = PyThreadState_Next(ts)) {
        if (lp_install(self, ts) < 0) {
            /* Undo: leave no thread half-installed. */
            PyObject *et, *ev, *etb;
            PyErr_Fetch(&et, &ev, &etb);
            lp_uninstall_all(self);
            lp_eval_uninstall();
            self->on = 0;
            self->started = 0;
            Py_CLEAR(st->active);
            PyErr_Restore(et, ev, etb);
            return NULL;
        }
    }
    lp_eval_install();
#endif
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_stop_doc, "stop()\n--\n\n"
                          "Stop recording: every open line of every thread is billed up to now, and\n"
                          "on 3.11 the trace functions that start() replaced are put back.");

static PyObject *lp_tracer_stop(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->started) {
        Py_RETURN_NONE;
    }
#if !LP_MONITORING
    lp_eval_uninstall();
    lp_uninstall_all(self);
#endif
    lp_close_all(self);
    self->started = 0;
    self->on = 0;
    if (self->st->active == (PyObject *)self) {
        Py_CLEAR(self->st->active);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_hook_doc, "hook(kind)\n--\n\n"
                          "A new callable for one kind of event: 'line', 'start', 'resume', 'return',\n"
                          "'yield', 'unwind', 'throw' (sys.monitoring, 3.12+) or 'thread' (the\n"
                          "threading.settrace() bootstrap, 3.11).");

static PyObject *lp_tracer_hook(lp_TracerObject *self, PyObject *kind)
{
    if (!PyUnicode_Check(kind)) {
        PyErr_SetString(PyExc_TypeError, "hook(kind): kind must be a str");
        return NULL;
    }
    for (int k = 0; k < LP_HOOK_COUNT; k++) {
        if (PyUnicode_CompareWithASCIIString(kind, lp_hook_names[k]) == 0) {
            return lp_hook_new(self, k, NULL);
        }
    }
    PyErr_Format(PyExc_ValueError, "hook(kind): unknown kind %R", kind);
    return NULL;
}

/* rec's lines as [(line, hits, time_ns, self_ns), ...] for the lines with a hit or time:
 * region `only`'s, or (only < 0) the main array's and every region's added up. */
static PyObject *lp_lines_list(lp_code *rec, int only, double scale)
{
    PyObject *lines = PyList_New(0);
    if (lines == NULL) {
        return NULL;
    }
    for (int k = 0; k < rec->n; k++) {
        lp_line sum = {0, 0, 0};
        for (int r = only < 0 ? 0 : only; r < (only < 0 ? rec->n_regions + 1 : only + 1); r++) {
            const lp_line *arr = r == 0 ? rec->lines : (r < rec->n_regions ? rec->regions[r].lines : NULL);
            if (arr != NULL) {
                sum.hits += arr[k].hits;
                sum.ticks += arr[k].ticks;
                sum.self += arr[k].self;
            }
        }
        if (sum.hits == 0 && sum.ticks == 0) {
            continue;
        }
        /* Tiny negative sums can come from a TSC read on two cores. */
        int64_t ticks = sum.ticks > 0 ? sum.ticks : 0;
        int64_t self = sum.self < 0 ? 0 : (sum.self > ticks ? ticks : sum.self);
        long long ns = (long long)((double)ticks * scale + 0.5);
        long long self_ns = (long long)((double)self * scale + 0.5);
        PyObject *t = Py_BuildValue("(iKLL)", rec->base + k, (unsigned long long)sum.hits, ns, self_ns);
        if (t == NULL || PyList_Append(lines, t) < 0) {
            Py_XDECREF(t);
            Py_DECREF(lines);
            return NULL;
        }
        Py_DECREF(t);
    }
    return lines;
}

/* Appends (code, calls, lines) to out, or (region, code, calls, lines) when region > 0,
 * unless lines is empty. Steals lines. Returns 0, or -1 with an exception set. */
static int lp_append_record(PyObject *out, int region, lp_code *rec, uint64_t calls, PyObject *lines)
{
    if (PyList_GET_SIZE(lines) == 0) {
        Py_DECREF(lines);
        return 0;
    }
    PyObject *item = region > 0 ? Py_BuildValue("(iOKN)", region, rec->code, (unsigned long long)calls, lines)
                                : Py_BuildValue("(OKN)", rec->code, (unsigned long long)calls, lines);
    if (item == NULL || PyList_Append(out, item) < 0) {
        Py_XDECREF(item);
        return -1;
    }
    Py_DECREF(item);
    return 0;
}

PyDoc_STRVAR(lp_collect_doc, "collect()\n--\n\n"
                             "The recorded data: a list of (code, calls, [(line, hits, time_ns, self_ns),\n"
                             "...]) for every project code object with at least one hit, regions\n"
                             "included, ticks converted to ns here.");

static PyObject *lp_tracer_collect(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    double scale = lp_ns_per_tick(self);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < self->n_recs; i++) {
        lp_code *rec = self->recs[i];
        PyObject *lines = lp_lines_list(rec, -1, scale);
        if (lines == NULL || lp_append_record(out, 0, rec, rec->calls, lines) < 0) {
            Py_CLEAR(out);
        }
    }
    return out;
}

PyDoc_STRVAR(lp_collect_regions_doc,
             "collect_regions()\n--\n\n"
             "What ran inside regions: a list of (region, code, calls, [(line, hits, time_ns,\n"
             "self_ns), ...]), one per region number (set_region()) and code object with a hit.");

static PyObject *lp_tracer_collect_regions(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    double scale = lp_ns_per_tick(self);
    PyObject *out = PyList_New(0);
    for (Py_ssize_t i = 0; out != NULL && i < self->n_recs; i++) {
        lp_code *rec = self->recs[i];
        for (int r = 1; out != NULL && r < rec->n_regions; r++) {
            if (rec->regions[r].lines == NULL && rec->regions[r].calls == 0) {
                continue;
            }
            PyObject *lines = lp_lines_list(rec, r, scale);
            if (lines == NULL || lp_append_record(out, r, rec, rec->regions[r].calls, lines) < 0) {
                Py_CLEAR(out);
            }
        }
    }
    return out;
}

PyDoc_STRVAR(lp_set_region_doc, "set_region(region)\n--\n\n"
                                "Makes `region` (an int from 0, none, to 1000000) the current region of\n"
                                "the calling thread, whether or not recording; returns the one before.");

static PyObject *lp_tracer_set_region(lp_TracerObject *self, PyObject *arg)
{
    long region = PyLong_AsLong(arg);
    if (region == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (region < 0 || region > LP_MAX_REGION) {
        PyErr_Format(PyExc_ValueError, "set_region: region must be from 0 to %d", LP_MAX_REGION);
        return NULL;
    }
    lp_thread *th = lp_thread_get(self, PyThreadState_Get());
    if (th == NULL) {
        return NULL;
    }
    int prev = th->region;
    th->region = (int)region;
    return PyLong_FromLong(prev);
}

PyDoc_STRVAR(lp_clear_doc, "clear()\n--\n\n"
                           "Forget everything recorded. While recording, counters are zeroed in place\n"
                           "and open lines restart now; otherwise every record is freed.");

static PyObject *lp_tracer_clear(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->started) {
        lp_tracer_free_data(self);
        Py_RETURN_NONE;
    }
    for (Py_ssize_t i = 0; i < self->n_recs; i++) {
        lp_code *rec = self->recs[i];
        if (rec->lines != NULL) {
            memset(rec->lines, 0, (size_t)rec->n * sizeof(lp_line));
        }
        rec->calls = 0;
        for (int r = 0; r < rec->n_regions; r++) {
            if (rec->regions[r].lines != NULL) {
                memset(rec->regions[r].lines, 0, (size_t)rec->n * sizeof(lp_line));
            }
            rec->regions[r].calls = 0;
        }
    }
    int64_t now = lp_clock(self, 0);
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread *th = (lp_thread *)self->threads.slots[j].val;
        if (th == NULL) {
            continue;
        }
        for (Py_ssize_t i = 0; i < th->depth; i++) {
            th->stack[i].vstart = now - th->ovh;
        }
        th->self_v = now - th->ovh;
    }
    lp_follow_clear(self);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_after_fork_doc,
             "after_fork()\n--\n\n"
             "In a fork child: clear(), and the frames open at the fork, which the parent ran, keep no\n"
             "open line: none of them is billed for the child's life. The frames of the forking\n"
             "thread stay known, so lines the child runs in them after the fork (os.fork() returns\n"
             "into them) are its own; the other threads' stacks go, as those threads do.");

static PyObject *lp_tracer_after_fork(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *cleared = lp_tracer_clear(self, NULL);
    if (cleared == NULL) {
        return NULL;
    }
    Py_DECREF(cleared);
    PyThreadState *me = PyThreadState_Get();
    for (size_t j = 0; self->threads.slots && j <= self->threads.mask; j++) {
        lp_thread *th = (lp_thread *)self->threads.slots[j].val;
        if (th == NULL) {
            continue;
        }
        if (th->tstate != me || th->tid != me->id) {
            lp_stack_forget(th);
            continue;
        }
        for (Py_ssize_t i = 0; i < th->depth; i++) {
            th->stack[i].open = NULL;
        }
        lp_self_reset(th);
    }
    self->has_last = 0; /* the cached thread may be one the child does not have */
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_take_error_doc, "take_error()\n--\n\n"
                                "The first exception a callback met (after which recording stopped), or\n"
                                "None. Returns it once.");

static PyObject *lp_tracer_take_error(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->error != NULL) {
        PyObject *e = self->error;
        self->error = NULL;
        self->broken = 0; /* reported: stays off until the next start() */
        return e;
    }
    if (self->broken && !self->started) {
        /* Broken without an exception object: say so rather than nothing. */
        self->broken = 0;
        return PyObject_CallFunction(PyExc_RuntimeError, "s",
                                     "the tracer stopped itself without an exception");
    }
    Py_RETURN_NONE;
}

static PyObject *lp_tracer_get_started(lp_TracerObject *self, void *closure)
{
    LP_UNUSED(closure);
    return PyBool_FromLong(self->started);
}

static PyObject *lp_tracer_get_recording(lp_TracerObject *self, void *closure)
{
    LP_UNUSED(closure);
    return PyBool_FromLong(self->on);
}

static PyObject *lp_tracer_get_clock(lp_TracerObject *self, void *closure)
{
    LP_UNUSED(closure);
    return PyUnicode_FromString(lp_clock_name(self->clock));
}

static PyObject *lp_tracer_get_n_codes(lp_TracerObject *self, void *closure)
{
    LP_UNUSED(closure);
    return PyLong_FromSsize_t(self->n_recs);
}

static PyObject *lp_tracer_get_n_foreign(lp_TracerObject *self, void *closure)
{
    LP_UNUSED(closure);
    return PyLong_FromSsize_t(self->n_foreign);
}

static PyGetSetDef lp_tracer_getset[] = {
    {"started", (getter)lp_tracer_get_started, NULL, "True between start() and stop().", NULL},
    {"recording", (getter)lp_tracer_get_recording, NULL, "True while started and not stopped by an error.",
     NULL},
    {"clock", (getter)lp_tracer_get_clock, NULL, "'tsc', 'monotonic' or 'test'.", NULL},
    {"n_codes", (getter)lp_tracer_get_n_codes, NULL, "Project code objects seen.", NULL},
    {"n_foreign", (getter)lp_tracer_get_n_foreign, NULL, "Foreign code objects whose decision is cached now.",
     NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef lp_tracer_methods[] = {
    {"start", (PyCFunction)lp_tracer_start, METH_NOARGS, lp_start_doc},
    {"stop", (PyCFunction)lp_tracer_stop, METH_NOARGS, lp_stop_doc},
    {"hook", (PyCFunction)lp_tracer_hook, METH_O, lp_hook_doc},
    {"collect", (PyCFunction)lp_tracer_collect, METH_NOARGS, lp_collect_doc},
    {"collect_regions", (PyCFunction)lp_tracer_collect_regions, METH_NOARGS, lp_collect_regions_doc},
    {"set_region", (PyCFunction)lp_tracer_set_region, METH_O, lp_set_region_doc},
    {"clear", (PyCFunction)lp_tracer_clear, METH_NOARGS, lp_clear_doc},
    {"after_fork", (PyCFunction)lp_tracer_after_fork, METH_NOARGS, lp_after_fork_doc},
    {"take_error", (PyCFunction)lp_tracer_take_error, METH_NOARGS, lp_take_error_doc},
    {"follow_phases", (PyCFunction)lp_tracer_follow_phases, METH_VARARGS,
     "follow_phases(phases_module, max_regions)\n--\n\nKey every line by the accounting phase open on its "
     "thread."},
    {"pause_after", (PyCFunction)lp_tracer_pause_after, METH_O,
     "pause_after(seconds)\n--\n\nSleep without the GIL, then switch the callbacks off: stop() ends lines "
     "there."},
    {"phase_regions", (PyCFunction)lp_tracer_phase_regions, METH_NOARGS,
     "phase_regions()\n--\n\n(region, phase id, windows) of a tracer that follows phases."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot lp_tracer_slots[] = {
    {Py_tp_doc, "Tracer(filter)\n--\n\n"
                "Records hits and time per line for code objects for which filter(code)\n"
                "is true. Used by lineprofiler.LineProfiler."},
    {Py_tp_new, lp_tracer_new},
    {Py_tp_traverse, lp_tracer_traverse},
    {Py_tp_clear, lp_tracer_clear_refs},
    {Py_tp_dealloc, lp_tracer_dealloc},
    {Py_tp_methods, lp_tracer_methods},
    {Py_tp_getset, lp_tracer_getset},
    {0, NULL},
};

static PyType_Spec lp_tracer_spec = {
    .name = "lineprofiler.lines._tracer.Tracer",
    .basicsize = sizeof(lp_TracerObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_tracer_slots,
};

/* ===================================================================== module functions */
PyDoc_STRVAR(lp_default_clock_doc, "default_clock()\n--\n\n"
                                   "The clock new tracers use: 'tsc' (an invariant cycle counter, scaled to\n"
                                   "ns against CLOCK_MONOTONIC at report time) or 'monotonic'.");

static PyObject *lp_default_clock(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    return PyUnicode_FromString(lp_clock_name(lp_get_state(module)->default_clock));
}

PyDoc_STRVAR(lp_foreign_trace_doc, "foreign_trace_function()\n--\n\n"
                                   "3.11: whether some thread runs a trace function that is not a Tracer's\n"
                                   "(coverage.py, a debugger), which start() would replace until stop().\n"
                                   "3.12+: always False (sys.monitoring tools do not replace each other).");

static PyObject *lp_foreign_trace(PyObject *module, PyObject *Py_UNUSED(ignored))
{
#if LP_MONITORING
    LP_UNUSED(module);
    Py_RETURN_FALSE;
#else
    return PyBool_FromLong(lp_foreign_trace_function(lp_get_state(module)->hook_type));
#endif
}

static PyMethodDef lp_module_methods[] = {
    {"default_clock", (PyCFunction)lp_default_clock, METH_NOARGS, lp_default_clock_doc},
    {"foreign_trace_function", (PyCFunction)lp_foreign_trace, METH_NOARGS, lp_foreign_trace_doc},
    {NULL, NULL, 0, NULL},
};

/* ===================================================================== module lifetime */

static int lp_exec(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    st->tracer_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &lp_tracer_spec, NULL);
    if (st->tracer_type == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->tracer_type) < 0) {
        return -1;
    }
    st->hook_type = (PyTypeObject *)PyType_FromModuleAndSpec(module, &lp_hook_spec, NULL);
    if (st->hook_type == NULL) {
        return -1;
    }
    if (PyModule_AddType(module, st->hook_type) < 0) {
        return -1;
    }
    st->foreign_limit = LP_MAX_FOREIGN;
    st->presize = 1;
    st->default_clock = LP_CLOCK_MONOTONIC;
#if LP_HAVE_TSC
    const char *want = getenv("LINEPROFILER_CLOCK");
    if ((want == NULL || strcmp(want, "monotonic") != 0) && lp_tsc_usable()) {
        st->default_clock = LP_CLOCK_TSC;
    }
#endif
    lp_clock_pair(&st->cal_tsc0, &st->cal_ns0);
    if (PyModule_AddIntConstant(module, "MONITORING", LP_MONITORING) < 0) {
        return -1;
    }
#ifdef LP_DEV_SEAMS
    if (lp_add_dev_seams(module) < 0) {
        return -1;
    }
#endif
    return 0;
}

static int lp_traverse(PyObject *module, visitproc visit, void *arg)
{
    lp_state *st = lp_get_state(module);
    Py_VISIT(st->tracer_type);
    Py_VISIT(st->hook_type);
    Py_VISIT(st->active);
    return 0;
}

static int lp_clear(PyObject *module)
{
    lp_state *st = lp_get_state(module);
    Py_CLEAR(st->tracer_type);
    Py_CLEAR(st->hook_type);
    Py_CLEAR(st->active);
    return 0;
}

static void lp_free(void *module)
{
    lp_clear((PyObject *)module);
}

static PyModuleDef_Slot lp_slots[] = {
    {Py_mod_exec, lp_exec},
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef lp_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "lineprofiler.lines._tracer",
    .m_doc = "The C line tracer behind lineprofiler.LineProfiler.",
    .m_size = sizeof(lp_state),
    .m_methods = lp_module_methods,
    .m_slots = lp_slots,
    .m_traverse = lp_traverse,
    .m_clear = lp_clear,
    .m_free = lp_free,
};

PyMODINIT_FUNC PyInit__tracer(void)
{
    return PyModuleDef_Init(&lp_module);
}
