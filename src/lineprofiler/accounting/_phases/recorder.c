/* The Recorder type: names, the cached Phase objects, hooks, control (start, stop, reset). Its
 * calls into Python and the errors they raise are errors.c's. */
#include "phases.h"

#include <string.h>

/* ===================================================================== recorder: names */

/* The canonical name for a user's name: "/" would fake nesting in a path and "" would make
 * "a//b", so both are replaced. Returns a borrowed reference, NULL with an exception set, or
 * the state's overflow_name (borrowed) for a new name when may_insert is 0 or the cap is hit. */
PyObject *lp_canonical(lp_RecorderObject *rec, PyObject *name, int may_insert)
{
    uint32_t slot = (uint32_t)(((uintptr_t)name >> 4) & (LP_NAME_CACHE - 1));
    if (rec->name_cache[slot].key == name) {
        return rec->name_cache[slot].canon;
    }
    PyObject *canon = PyDict_GetItemWithError(rec->names, name);
    if (canon == NULL) {
        if (PyErr_Occurred()) {
            return NULL;
        }
        if (!may_insert || PyDict_GET_SIZE(rec->names) >= (Py_ssize_t)rec->max_paths + rec->max_counters) {
            return rec->st->overflow_name;
        }
        PyObject *clean;
        if (PyUnicode_GET_LENGTH(name) == 0) {
            clean = PyUnicode_FromString("(empty)");
        } else if (PyUnicode_FindChar(name, '/', 0, PyUnicode_GET_LENGTH(name), 1) >= 0) {
            clean = PyUnicode_Replace(name, rec->st->slash, rec->st->underscore, -1);
        } else {
            clean = PyUnicode_FromObject(name); /* an exact str, even for a str subclass */
        }
        if (clean == NULL) {
            return NULL;
        }
        PyUnicode_InternInPlace(&clean);
        if (PyDict_SetItem(rec->names, name, clean) < 0) {
            Py_DECREF(clean);
            return NULL;
        }
        canon = clean;
        Py_DECREF(clean); /* the dict holds it */
    }
    Py_XSETREF(rec->name_cache[slot].key, Py_NewRef(name));
    rec->name_cache[slot].canon = canon;
    return canon;
}

/* ===================================================================== recorder: phases */

static void lp_phase_update_flags(lp_PhaseObject *p)
{
    lp_RecorderObject *rec = p->rec;
    p->watched = 0;
    if (rec->watch_name != NULL) {
        int eq = PyObject_RichCompareBool(p->name, rec->watch_name, Py_EQ);
        if (eq < 0) {
            PyErr_Clear();
        }
        p->watched = eq > 0;
    }
    p->slow = p->io || (p->sync && rec->sync_fn != NULL) || (p->gpu && rec->gpu_enter != NULL) ||
              p->watched || rec->annotate_enter != NULL || rec->annotate_exit != NULL;
}

/* Recomputes every phase object's slow flag after a hook changed: the plain path then pays
 * exactly one branch for all hooks together. */
static void lp_update_all_flags(lp_RecorderObject *rec)
{
    for (int f = 0; f < LP_FLAG_SETS; f++) {
        Py_ssize_t pos = 0;
        PyObject *key, *value;
        if (rec->phases[f] != NULL) {
            while (PyDict_Next(rec->phases[f], &pos, &key, &value)) {
                lp_phase_update_flags((lp_PhaseObject *)value);
            }
        }
        if (rec->overflow_phase[f] != NULL) {
            lp_phase_update_flags((lp_PhaseObject *)rec->overflow_phase[f]);
        }
    }
}

static lp_PhaseObject *lp_phase_new(lp_RecorderObject *rec, PyObject *name, PyObject *canon, int flags,
                                    int overflow)
{
    lp_PhaseObject *p = PyObject_GC_New(lp_PhaseObject, rec->st->phase_type);
    if (p == NULL) {
        return NULL;
    }
    p->rec = (lp_RecorderObject *)Py_NewRef(rec);
    p->name = Py_NewRef(name);
    p->canon = Py_NewRef(canon);
    p->io = (flags & LP_FLAG_IO) != 0;
    p->sync = (flags & LP_FLAG_SYNC) != 0;
    p->gpu = (flags & LP_FLAG_GPU) != 0;
    p->overflow = (uint8_t)overflow;
    p->cache_gen = UINT64_MAX;
    p->cache_parent = -1;
    p->cache_node = NULL;
    lp_phase_update_flags(p);
    PyObject_GC_Track(p);
    return p;
}

/* Returns a borrowed Phase for (name, flags), creating it once; NULL with an exception. */
static PyObject *lp_phase_lookup(lp_RecorderObject *rec, PyObject *name, int flags)
{
    PyObject *p = PyDict_GetItemWithError(rec->phases[flags], name);
    if (p != NULL || PyErr_Occurred()) {
        return p;
    }
    PyObject *canon = NULL;
    if (rec->n_phases < rec->max_paths) {
        canon = lp_canonical(rec, name, 1);
        if (canon == NULL) {
            return NULL;
        }
    }
    if (canon == NULL || canon == rec->st->overflow_name) {
        /* past the cap: one shared phase per flags whose entries go to the overflow node */
        if (rec->overflow_phase[flags] == NULL) {
            rec->overflow_phase[flags] =
                (PyObject *)lp_phase_new(rec, rec->st->overflow_name, rec->st->overflow_name, flags, 1);
        }
        return rec->overflow_phase[flags];
    }
    lp_PhaseObject *np = lp_phase_new(rec, name, canon, flags, 0);
    if (np == NULL) {
        return NULL;
    }
    if (PyDict_SetItem(rec->phases[flags], name, (PyObject *)np) < 0) {
        Py_DECREF(np);
        return NULL;
    }
    rec->n_phases++;
    Py_DECREF(np); /* the dict holds it */
    return (PyObject *)np;
}

static int lp_truth(PyObject *v, int *out)
{
    int t = PyObject_IsTrue(v);
    if (t < 0) {
        return -1;
    }
    *out = t;
    return 0;
}

/* Parses (name, io=False, sync=False, gpu=False) from a vectorcall; shared by Recorder and Noop. */
int lp_parse_phase_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **name,
                        int *flags)
{
    PyObject *vals[4] = {NULL, NULL, NULL, NULL};
    static const char *const names[4] = {"name", "io", "sync", "gpu"};
    if (nargs > 4) {
        PyErr_Format(PyExc_TypeError, "phase() takes at most 4 arguments (%zd given)", nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        vals[i] = args[i];
    }
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int j = 0; j < 4; j++) {
            if (PyUnicode_CompareWithASCIIString(key, names[j]) == 0) {
                found = j;
                break;
            }
        }
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "phase() got an unexpected keyword argument '%U'", key);
            return -1;
        }
        if (vals[found] != NULL) {
            PyErr_Format(PyExc_TypeError, "phase() got multiple values for argument '%s'", names[found]);
            return -1;
        }
        vals[found] = args[nargs + k];
    }
    if (vals[0] == NULL) {
        PyErr_SetString(PyExc_TypeError, "phase() missing required argument 'name'");
        return -1;
    }
    if (!PyUnicode_Check(vals[0])) {
        PyErr_Format(PyExc_TypeError, "phase name must be a str, not %.100s", Py_TYPE(vals[0])->tp_name);
        return -1;
    }
    int io = 0, sync = 0, gpu = 0;
    if ((vals[1] && lp_truth(vals[1], &io) < 0) || (vals[2] && lp_truth(vals[2], &sync) < 0) ||
        (vals[3] && lp_truth(vals[3], &gpu) < 0)) {
        return -1;
    }
    *name = vals[0];
    *flags = (io ? LP_FLAG_IO : 0) | (sync ? LP_FLAG_SYNC : 0) | (gpu ? LP_FLAG_GPU : 0);
    return 0;
}

static PyObject *lp_recorder_phase(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwnames)
{
    PyObject *name;
    int flags;
    if (LP_LIKELY(kwnames == NULL && nargs == 1 && PyUnicode_Check(args[0]))) {
        name = args[0];
        flags = 0;
    } else if (lp_parse_phase_args(args, nargs, kwnames, &name, &flags) < 0) {
        return NULL;
    }
    uint32_t slot = (uint32_t)((((uintptr_t)name >> 4) ^ (uintptr_t)flags) & (LP_PHASE_CACHE - 1));
    lp_phase_slot *s = &self->phase_cache[slot];
    if (LP_LIKELY(s->key == name && s->flags == flags)) {
        return Py_NewRef(s->phase);
    }
    PyObject *p = lp_phase_lookup(self, name, flags);
    if (p == NULL) {
        if (PyErr_ExceptionMatches(PyExc_MemoryError)) {
            /* the profiler's failure, not the caller's: record it and hand back a no-op */
            lp_record_error(self, "phase");
            return Py_NewRef(self->st->noop_phase);
        }
        return NULL; /* a name whose __hash__/__eq__ raised: the caller's error */
    }
    Py_XSETREF(s->key, Py_NewRef(name));
    s->flags = flags;
    Py_XSETREF(s->phase, Py_NewRef(p));
    return Py_NewRef(p);
}

/* ===================================================================== recorder: control */

static void lp_clear_health(lp_RecorderObject *self)
{
    self->mismatched_exits = self->stale_exits = self->paths_overflowed = self->depth_overflowed = 0;
    self->counters_overflowed = self->dropped_entries = self->callback_errors = self->errors_dropped = 0;
    self->cross_stack_exits = 0;
    self->watch_count = 0;
    memset(self->own_subtracted, 0, sizeof self->own_subtracted);
}

static PyObject *lp_recorder_reset(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->gen++;
    lp_live_before_reset(self);
    lp_trace_reset(self);
    lp_tree_free(self);
    lp_clear_health(self);
    if (self->errors != NULL && PyList_SetSlice(self->errors, 0, PY_SSIZE_T_MAX, NULL) < 0) {
        return NULL;
    }
    if (lp_tree_init(self) < 0) {
        return NULL;
    }
    if (self->st->primary == self) {
        lp_set_main_phase(self->st, -1, lp_monotonic_ns());
        lp_threads_clear(self->st);
    }
    Py_RETURN_NONE;
}

static PyObject *lp_recorder_start(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->active) {
        self->gen++;
        self->active = 1;
        lp_trace_forget_stacks(self); /* the frames left open are stale now */
        if (self->trace != NULL) {
            self->st->tracer = self;
        }
    }
    Py_RETURN_NONE;
}

static PyObject *lp_recorder_stop(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    if (self->active) {
        /* frames still open are now stale: their exits pop them without recording */
        self->gen++;
        self->active = 0;
        lp_trace_forget_stacks(self);
        if (self->st->tracer == self) {
            self->st->tracer = NULL;
        }
        if (self->st->primary == self) {
            lp_set_main_phase(self->st, -1, lp_monotonic_ns());
            lp_threads_clear(self->st);
        }
    }
    Py_RETURN_NONE;
}

static PyObject *lp_recorder_make_primary(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    self->st->primary = self;
    int32_t node = -1, here = -1;
    lp_StackObject *ts = lp_stack_view(self->st);
    if (ts != NULL) {
        int32_t i = ts->depth > 0 ? lp_find_live(ts, self, ts->depth - 1) : -1;
        here = i >= 0 ? ts->frames[i].node_id : -1;
        if (PyThreadState_Get() == self->st->main_tstate) {
            self->st->main_stack = ts;
            node = here;
        }
    }
    int64_t now = lp_monotonic_ns();
    lp_set_main_phase(self->st, node, now);
    lp_threads_clear(self->st);
    if (here >= 0) {
        lp_thread_publish(self->st, PyThreadState_Get(), ts, here, now);
    }
    Py_RETURN_NONE;
}

int lp_check_callable(PyObject *fn, const char *what)
{
    if (fn != Py_None && !PyCallable_Check(fn)) {
        PyErr_Format(PyExc_TypeError, "%s must be callable or None, not %.100s", what, Py_TYPE(fn)->tp_name);
        return -1;
    }
    return 0;
}

static PyObject *lp_recorder_set_sync(lp_RecorderObject *self, PyObject *fn)
{
    if (lp_check_callable(fn, "sync hook") < 0) {
        return NULL;
    }
    Py_XSETREF(self->sync_fn, fn == Py_None ? NULL : Py_NewRef(fn));
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

/* Sets a pair of hooks (each callable or None) called with the phase's name at entry and exit. */
static PyObject *lp_set_hook_pair(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject **enter, PyObject **exit_, const char *what)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s(enter_fn, exit_fn) takes two arguments", what);
        return NULL;
    }
    if (lp_check_callable(args[0], "enter_fn") < 0 || lp_check_callable(args[1], "exit_fn") < 0) {
        return NULL;
    }
    Py_XSETREF(*enter, args[0] == Py_None ? NULL : Py_NewRef(args[0]));
    Py_XSETREF(*exit_, args[1] == Py_None ? NULL : Py_NewRef(args[1]));
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

static PyObject *lp_recorder_set_annotate(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_set_hook_pair(self, args, nargs, &self->annotate_enter, &self->annotate_exit, "set_annotate");
}

static PyObject *lp_recorder_set_gpu(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    return lp_set_hook_pair(self, args, nargs, &self->gpu_enter, &self->gpu_exit, "set_gpu");
}

static PyObject *lp_recorder_set_watch(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "set_watch(name, fn) takes two arguments");
        return NULL;
    }
    PyObject *name = args[0], *fn = args[1];
    if (name != Py_None && !PyUnicode_Check(name)) {
        PyErr_Format(PyExc_TypeError, "watch name must be a str or None, not %.100s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    if (lp_check_callable(fn, "watch fn") < 0) {
        return NULL;
    }
    if (name == Py_None || fn == Py_None) {
        Py_CLEAR(self->watch_name);
        Py_CLEAR(self->watch_fn);
    } else {
        Py_XSETREF(self->watch_name, Py_NewRef(name));
        Py_XSETREF(self->watch_fn, Py_NewRef(fn));
    }
    self->watch_count = 0;
    lp_update_all_flags(self);
    Py_RETURN_NONE;
}

static PyObject *lp_recorder_get_active(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->active);
}

static PyObject *lp_recorder_get_measure_cpu(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->measure_cpu);
}

static PyObject *lp_recorder_get_cpu_clock_reads(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromLongLong(self->cpu_clock_reads);
}

static PyObject *lp_recorder_get_n_nodes(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromLong(self->n_nodes);
}

static PyObject *lp_recorder_get_empty(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyBool_FromLong(self->n_nodes <= 2 && lp_node_at(self, LP_OVERFLOW)->entries == 0 &&
                           self->n_counters == 0);
}

static PyObject *lp_recorder_get_generation(lp_RecorderObject *self, void *Py_UNUSED(c))
{
    return PyLong_FromUnsignedLongLong(self->gen);
}

/* ===================================================================== recorder: lifetime */

static PyObject *lp_recorder_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"measure_cpu", "max_paths", "max_counters", "max_depth", "clock",
                             "cpu_clock",   NULL};
    int measure_cpu = 1, max_paths = LP_DEFAULT_MAX_PATHS, max_counters = LP_DEFAULT_MAX_COUNTERS;
    int max_depth = LP_DEFAULT_MAX_DEPTH;
    PyObject *clock = Py_None, *cpu_clock = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$piiiOO:Recorder", kwlist, &measure_cpu, &max_paths,
                                     &max_counters, &max_depth, &clock, &cpu_clock)) {
        return NULL;
    }
    if (max_paths < 1 || max_counters < 1 || max_paths > 1000000 || max_counters > 1000000) {
        PyErr_SetString(PyExc_ValueError, "max_paths and max_counters must be within 1..1000000");
        return NULL;
    }
    if (max_depth < 1 || max_depth > LP_MAX_MAX_DEPTH) {
        PyErr_Format(PyExc_ValueError, "max_depth must be within 1..%d", LP_MAX_MAX_DEPTH);
        return NULL;
    }
    if (lp_check_callable(clock, "clock") < 0 || lp_check_callable(cpu_clock, "cpu_clock") < 0) {
        return NULL;
    }
    PyObject *module = PyType_GetModuleByDef(type, &lp_phases_module);
    if (module == NULL) {
        return NULL;
    }
    lp_RecorderObject *self = (lp_RecorderObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    /* tp_alloc zeroed everything */
    self->module = Py_NewRef(module);
    self->st = lp_get_state(module);
    self->active = 1;
    self->gen = 1;
    self->measure_cpu = measure_cpu;
    self->live.fd = -1;
    self->live.slot = -1;
    self->max_paths = max_paths;
    self->max_counters = max_counters;
    self->max_depth = max_depth;
    self->clock_fn = clock == Py_None ? NULL : Py_NewRef(clock);
    self->cpu_clock_fn = cpu_clock == Py_None ? NULL : Py_NewRef(cpu_clock);
    self->names = PyDict_New();
    self->errors = PyList_New(0);
    if (self->names == NULL || self->errors == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    for (int f = 0; f < LP_FLAG_SETS; f++) {
        self->phases[f] = PyDict_New();
        if (self->phases[f] == NULL) {
            Py_DECREF(self);
            return NULL;
        }
    }
    if (lp_tree_init(self) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int lp_recorder_traverse(lp_RecorderObject *self, visitproc visit, void *arg)
{
    Py_VISIT(Py_TYPE(self));
    Py_VISIT(self->module);
    Py_VISIT(self->names);
    for (int f = 0; f < LP_FLAG_SETS; f++) {
        Py_VISIT(self->phases[f]);
        Py_VISIT(self->overflow_phase[f]);
    }
    for (int i = 0; i < LP_NAME_CACHE; i++) {
        Py_VISIT(self->name_cache[i].key);
    }
    for (int i = 0; i < LP_PHASE_CACHE; i++) {
        Py_VISIT(self->phase_cache[i].key);
        Py_VISIT(self->phase_cache[i].phase);
    }
    Py_VISIT(self->sync_fn);
    Py_VISIT(self->annotate_enter);
    Py_VISIT(self->gpu_enter);
    Py_VISIT(self->gpu_exit);
    Py_VISIT(self->annotate_exit);
    Py_VISIT(self->watch_name);
    Py_VISIT(self->watch_fn);
    Py_VISIT(self->clock_fn);
    Py_VISIT(self->cpu_clock_fn);
    Py_VISIT(self->errors);
    return 0;
}

static int lp_recorder_clear(lp_RecorderObject *self)
{
    for (int i = 0; i < LP_NAME_CACHE; i++) {
        Py_CLEAR(self->name_cache[i].key);
        self->name_cache[i].canon = NULL;
    }
    for (int i = 0; i < LP_PHASE_CACHE; i++) {
        Py_CLEAR(self->phase_cache[i].key);
        Py_CLEAR(self->phase_cache[i].phase);
    }
    for (int f = 0; f < LP_FLAG_SETS; f++) {
        Py_CLEAR(self->phases[f]);
        Py_CLEAR(self->overflow_phase[f]);
    }
    Py_CLEAR(self->sync_fn);
    Py_CLEAR(self->annotate_enter);
    Py_CLEAR(self->gpu_enter);
    Py_CLEAR(self->gpu_exit);
    Py_CLEAR(self->annotate_exit);
    Py_CLEAR(self->watch_name);
    Py_CLEAR(self->watch_fn);
    Py_CLEAR(self->clock_fn);
    Py_CLEAR(self->cpu_clock_fn);
    Py_CLEAR(self->errors);
    /* names is cleared last by dealloc: the tree borrows its strings */
    return 0;
}

static void lp_recorder_dealloc(lp_RecorderObject *self)
{
    PyTypeObject *tp = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    if (self->st != NULL && self->st->primary == self) {
        self->st->primary = NULL;
        lp_set_main_phase(self->st, -1, lp_monotonic_ns());
        lp_threads_clear(self->st);
    }
    (void)lp_recorder_clear(self);
    lp_tree_free(self);
    lp_live_detach(self);
    lp_trace_free(self);
    Py_CLEAR(self->names);
    Py_CLEAR(self->module);
    tp->tp_free(self);
    Py_DECREF(tp);
}

static PyMethodDef lp_recorder_methods[] = {
    {"phase", (PyCFunction)(void (*)(void))lp_recorder_phase, METH_FASTCALL | METH_KEYWORDS,
     "phase(name, io=False, sync=False) -> Phase: the cached context manager for a named phase."},
    {"count", (PyCFunction)(void (*)(void))lp_recorder_count, METH_FASTCALL | METH_KEYWORDS,
     "count(name, n=1): add n to the counter `name` under the phase open in this thread."},
    {"snapshot", (PyCFunction)lp_recorder_snapshot, METH_NOARGS,
     "The tree, counters, caps and health as plain Python objects (new each call)."},
    {"reset", (PyCFunction)lp_recorder_reset, METH_NOARGS,
     "Forget everything recorded (the fork child's fresh tree); open frames become stale."},
    {"start", (PyCFunction)lp_recorder_start, METH_NOARGS, "Record again after stop()."},
    {"stop", (PyCFunction)lp_recorder_stop, METH_NOARGS, "Stop recording; phases and counts become no-ops."},
    {"make_primary", (PyCFunction)lp_recorder_make_primary, METH_NOARGS,
     "Publish this recorder's main-thread phase through the _C_API capsule."},
    {"path_of", (PyCFunction)lp_recorder_path_of, METH_O,
     "path_of(id) -> str | None: the path of a node id."},
    {"current_path", (PyCFunction)lp_recorder_current_path, METH_NOARGS,
     "The path of the innermost phase of this recorder open in this thread, or None."},
    {"live_attach", (PyCFunction)(void (*)(void))lp_recorder_live_attach, METH_FASTCALL,
     "live_attach(fd, identity: bytes): keep the tree and counters in this file, a shared mapping "
     "(the descriptor is duplicated; raises OSError where the file cannot be mapped)."},
    {"trace_enable", (PyCFunction)(void (*)(void))lp_recorder_trace_enable, METH_FASTCALL,
     "trace_enable(capacity, links_capacity): record every closed entry as a span (before live_attach)."},
    {"trace_link", (PyCFunction)(void (*)(void))lp_recorder_trace_link, METH_FASTCALL,
     "trace_link(kind, channel, key): a signal (0), the end of a wait (1), or a request lifecycle's "
     "begin (2), mark (3: channel is \"channel\\x1fname\") or end (4), while tracing."},
    {"trace_clock_pair", (PyCFunction)lp_recorder_trace_clock_pair, METH_NOARGS,
     "Read CLOCK_MONOTONIC and CLOCK_REALTIME back to back into the trace."},
    {"trace_snapshot", (PyCFunction)(void (*)(void))lp_recorder_trace_snapshot, METH_VARARGS | METH_KEYWORDS,
     "trace_snapshot(columns=False): the trace section of a worker document, or None when tracing is "
     "off; columns=True gives its spans as one bytes object of little-endian columns."},
    {"live_detach", (PyCFunction)lp_recorder_live_detach, METH_NOARGS,
     "Stop writing to the live file (what was written stays); the numbers move to memory."},
    {"set_sync", (PyCFunction)lp_recorder_set_sync, METH_O,
     "set_sync(fn | None): fn() runs before the clock at both ends of sync=True phases."},
    {"set_annotate", (PyCFunction)(void (*)(void))lp_recorder_set_annotate, METH_FASTCALL,
     "set_annotate(enter_fn | None, exit_fn | None): called with the name around every phase."},
    {"set_gpu", (PyCFunction)(void (*)(void))lp_recorder_set_gpu, METH_FASTCALL,
     "set_gpu(enter_fn | None, exit_fn | None): called with the name around every gpu=True phase."},
    {"set_watch", (PyCFunction)(void (*)(void))lp_recorder_set_watch, METH_FASTCALL,
     "set_watch(name | None, fn | None): fn(n) on the n-th entry into a phase named `name`."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef lp_recorder_getset[] = {
    {"active", (getter)lp_recorder_get_active, NULL, "Whether phases and counts are recorded.", NULL},
    {"measure_cpu", (getter)lp_recorder_get_measure_cpu, NULL, "Whether thread CPU time is read.", NULL},
    {"cpu_clock_reads", (getter)lp_recorder_get_cpu_clock_reads, NULL,
     "System calls made to read the thread CPU clock at phase boundaries (boundaries under 1 us "
     "apart share one).",
     NULL},
    {"n_nodes", (getter)lp_recorder_get_n_nodes, NULL, "Nodes in the tree, root and overflow included.",
     NULL},
    {"generation", (getter)lp_recorder_get_generation, NULL, "Changes at start, stop and reset.", NULL},
    {"tracing", (getter)lp_recorder_get_tracing, NULL, "Whether closed entries are recorded as spans.", NULL},
    {"live", (getter)lp_recorder_get_live, NULL, "Whether a live file is attached (in this process).", NULL},
    {"empty", (getter)lp_recorder_get_empty, NULL,
     "True while nothing has been recorded (since the last reset).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyType_Slot lp_recorder_slots[] = {
    {Py_tp_new, lp_recorder_new},
    {Py_tp_dealloc, lp_recorder_dealloc},
    {Py_tp_traverse, lp_recorder_traverse},
    {Py_tp_clear, lp_recorder_clear},
    {Py_tp_methods, lp_recorder_methods},
    {Py_tp_getset, lp_recorder_getset},
    {Py_tp_doc,
     "Recorder(*, measure_cpu=True, max_paths=10000, max_counters=10000, max_depth=256, clock=None, "
     "cpu_clock=None)\n\n"
     "One process's phase tree and counters."},
    {0, NULL},
};

PyType_Spec lp_recorder_spec = {
    .name = "lineprofiler.accounting._phases.Recorder",
    .basicsize = sizeof(lp_RecorderObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .slots = lp_recorder_slots,
};
