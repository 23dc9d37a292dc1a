/* The Sampler type: its lifetime, start and stop, the rows it hands out, the fork hooks. What the
 * sampler does and its concurrency rules are described in sampler.h; what stats() reports is
 * stats.c's, the module module.c's. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "_clock.h"
#include "accounting/_phases_capi.h"

static const char *const lp_base_names[LP_BASE_COLS] = {
    "t_ns",
    "flags",
    "phase",
    "rss_bytes",
    "rchar",
    "wchar",
    "read_bytes",
    "write_bytes",
    "cancelled_write_bytes",
    "own_rchar",
    "own_wchar",
    "own_read_bytes",
    "own_write_bytes",
    "own_cancelled_write_bytes",
    "pss_bytes",
    "phase_since_ns",
};

/* ===================================================================== the Sampler type */

typedef struct {
    PyObject_HEAD
    lp_core *core;
    PyObject *phases_module; /* keeps the capsule's memory alive while the thread reads it */
} lp_SamplerObject;

static char *lp_strdup_or(PyObject *path, const char *fallback)
{
    const char *src = fallback;
    PyObject *bytes = NULL;
    char *copy;
    if (path != NULL && path != Py_None) {
        if (!PyUnicode_FSConverter(path, &bytes)) {
            return NULL;
        }
        src = PyBytes_AS_STRING(bytes);
    }
    copy = strdup(src);
    Py_XDECREF(bytes);
    if (copy == NULL) {
        PyErr_NoMemory();
    }
    return copy;
}

static void lp_core_free(lp_core *c)
{
    if (c == NULL) {
        return;
    }
    lp_thread_stop(c);
    lp_core_release(c);
    lp_locks_destroy(c);
    free(c->io_path);
    free(c->statm_path);
    free(c->stat_path);
    free(c->smaps_path);
    free(c->cpu_stat_path);
    free(c->sched_by_node);
    free(c);
}

static PyObject *lp_sampler_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"interval_s", "capacity", "io_path",     "statm_path",    "stat_path",
                             "smaps_path", "nvml",     "timeline_hz", "cpu_stat_path", NULL};
    double interval_s = 1.0, timeline_hz = 0.0;
    Py_ssize_t capacity = 3600;
    PyObject *io_path = NULL, *statm_path = NULL, *stat_path = NULL, *smaps_path = NULL,
             *cpu_stat_path = NULL;
    int nvml = 1;
    lp_SamplerObject *self;
    lp_core *c;

    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|dn$OOOOpdO:Sampler", kwlist, &interval_s, &capacity,
                                     &io_path, &statm_path, &stat_path, &smaps_path, &nvml, &timeline_hz,
                                     &cpu_stat_path)) {
        return NULL;
    }
    if (!(timeline_hz >= 0.0 && timeline_hz <= LP_TL_MAX_HZ)) {
        PyErr_Format(PyExc_ValueError, "timeline_hz must be between 0 (off) and %g", LP_TL_MAX_HZ);
        return NULL;
    }
    if (!(interval_s >= 0.001 && interval_s <= 86400.0)) {
        PyErr_SetString(PyExc_ValueError, "interval_s must be between 0.001 and 86400 seconds");
        return NULL;
    }
    if (capacity < 2 || capacity > LP_MAX_CAPACITY) {
        PyErr_Format(PyExc_ValueError, "capacity must be between 2 and %d rows", LP_MAX_CAPACITY);
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        return PyErr_NoMemory();
    }
    c->io_fd = c->statm_fd = c->stat_fd = c->smaps_fd = c->cpu_stat_fd = -1;
    for (int i = 0; i < LP_THREAD_SLOTS; i++) {
        c->sched[i].fd = -1;
    }
    c->proc_cpu_ns = c->proc_threads = c->proc_threads_max = -1;
    long clock_ticks = sysconf(_SC_CLK_TCK);
    c->clock_ticks = clock_ticks > 0 ? clock_ticks : 100;
    c->interval_ns = (int64_t)(interval_s * 1e9);
    c->tl_interval_ns = timeline_hz > 0.0 ? (int64_t)(1e9 / timeline_hz) : 0;
    atomic_init(&c->tl_ticks, 0);
    atomic_init(&c->tl_skipped, 0);
    c->capacity = capacity;
    c->want_nvml = nvml;
    c->own_io = c->local_own;
    atomic_init(&c->local_seq, 0u);
    c->own_io_seq = &c->local_seq;
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        atomic_init(&c->local_own[i], 0);
    }
    atomic_init(&c->thread_tid, 0);
    long page = sysconf(_SC_PAGESIZE);
    c->page_size = page > 0 ? page : 4096;
    c->ncols = LP_BASE_COLS;
    snprintf(c->phase_reason, LP_REASON_LEN, "the sampler has not started");
    snprintf(c->nvml_reason, LP_REASON_LEN, "the sampler has not started");
    if (lp_locks_init(c) != 0) {
        free(c);
        PyErr_SetString(PyExc_OSError, "cannot initialise the sampler's locks");
        return NULL;
    }
    c->io_path = lp_strdup_or(io_path, LP_DEFAULT_IO_PATH);
    c->statm_path = c->io_path ? lp_strdup_or(statm_path, LP_DEFAULT_STATM_PATH) : NULL;
    c->stat_path = c->statm_path ? lp_strdup_or(stat_path, LP_DEFAULT_STAT_PATH) : NULL;
    c->smaps_path = c->stat_path ? lp_strdup_or(smaps_path, LP_DEFAULT_SMAPS_PATH) : NULL;
    if (c->smaps_path == NULL) {
        lp_core_free(c);
        return NULL;
    }
    if (cpu_stat_path != NULL && cpu_stat_path != Py_None) {
        c->cpu_stat_path = lp_strdup_or(cpu_stat_path, "");
        if (c->cpu_stat_path == NULL) {
            lp_core_free(c);
            return NULL;
        }
    }
    self = (lp_SamplerObject *)type->tp_alloc(type, 0);
    if (self == NULL) {
        lp_core_free(c);
        return NULL;
    }
    self->core = c;
    self->phases_module = NULL;
    return (PyObject *)self;
}

static void lp_sampler_dealloc(lp_SamplerObject *self)
{
    PyTypeObject *type = Py_TYPE(self);
    /* Join the thread before its core is freed; it never needs the GIL, so this cannot hang. */
    lp_core_free(self->core);
    self->core = NULL;
    Py_CLEAR(self->phases_module);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static int lp_check_open(lp_SamplerObject *self)
{
    if (self->core->closed) {
        PyErr_SetString(PyExc_ValueError, "the sampler is closed");
        return -1;
    }
    return 0;
}

/* Starts the thread; -1 with OSError set when it cannot be created. */
static int lp_thread_start_or_raise(lp_core *c)
{
    int err = lp_thread_start(c);
    if (err != 0) {
        errno = err;
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}

/* Begins a segment of rows: one taken now, so it starts at this instant, then the thread. */
static int lp_begin_sampling(lp_core *c)
{
    c->segment_start = 1;
    lp_tick(c);
    lp_timeline_tick(c, 0, lp_monotonic_ns());
    return lp_thread_start_or_raise(c);
}

/* Restarts a thread that after_fork_parent() left to restart later (see there). Every method
 * that reads or adds rows calls it first. */
static int lp_resume(lp_SamplerObject *self)
{
    lp_core *c = self->core;
    if (!c->restart_pending) {
        return 0;
    }
    c->restart_pending = 0;
    if (c->closed || c->thread_running) {
        return 0;
    }
    if (lp_thread_start_or_raise(c) < 0) {
        return -1;
    }
    c->restarts++;
    return 0;
}

/* Finds _phases' capsule. Imports the module first: PyCapsule_Import on 3.11 only walks
 * attributes, which exist only once the submodule has been imported. */
static void lp_attach_phases(lp_SamplerObject *self)
{
    lp_core *c = self->core;
    PyObject *module, *capsule;
    const lp_phases_capi *api;

    if (self->phases_module != NULL) {
        return;
    }
    module = PyImport_ImportModule("lineprofiler.accounting._phases");
    if (module == NULL) {
        PyErr_Clear();
        snprintf(c->phase_reason, LP_REASON_LEN, "lineprofiler.accounting._phases cannot be imported");
        return;
    }
    capsule = PyObject_GetAttrString(module, "_C_API");
    if (capsule == NULL) {
        PyErr_Clear();
        Py_DECREF(module);
        snprintf(c->phase_reason, LP_REASON_LEN, "_phases exports no phase capsule (_C_API)");
        return;
    }
    api = PyCapsule_GetPointer(capsule, LP_PHASES_CAPI_NAME);
    Py_DECREF(capsule);
    if (api == NULL) {
        PyErr_Clear();
        Py_DECREF(module);
        snprintf(c->phase_reason, LP_REASON_LEN, "_phases._C_API is not a %s capsule", LP_PHASES_CAPI_NAME);
        return;
    }
    /* Version 1 has no thread slots: the timeline is then off, with a reason. */
    if (api->version < 1 || api->version > LP_PHASES_CAPI_VERSION || api->main_thread_phase == NULL ||
        api->own_io == NULL) {
        Py_DECREF(module);
        snprintf(c->phase_reason, LP_REASON_LEN, "_phases capsule version %d, expected %d", api->version,
                 LP_PHASES_CAPI_VERSION);
        return;
    }
    self->phases_module = module;
    c->phase = api->main_thread_phase;
    if (api->version >= 3) {
        c->phase_since = api->main_thread_since_ns;
    }
    if (api->version >= 2) {
        c->capi = (lp_phases_capi *)api;
        c->threads = api->threads;
        c->threads_unpublished = api->threads_unpublished;
    }
    c->own_io = api->own_io;
    if (api->version >= 4 && api->own_io_seq != NULL) {
        c->own_io_seq = api->own_io_seq;
    }
    if (api->version >= 5) {
        c->own_reaped_fingerprint = api->own_reaped_fingerprint;
    }
    c->phase_reason[0] = '\0';
}

PyDoc_STRVAR(lp_start_doc, "start()\n--\n\nOpen the /proc descriptors (first time), take a row now, "
                           "and start the thread. No-op when running.");

static PyObject *lp_sampler_start(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    if (lp_check_open(self) < 0 || lp_resume(self) < 0) {
        return NULL;
    }
    if (c->thread_running) {
        Py_RETURN_NONE;
    }
    lp_attach_phases(self);
    if (!c->opened && lp_core_open(c) < 0) {
        return PyErr_NoMemory();
    }
    c->paused_for_fork = 0;
    if (lp_begin_sampling(c) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_stop_doc, "stop()\n--\n\nStop the thread (joined before returning). Rows stay in the ring.");

static PyObject *lp_sampler_stop(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_thread_stop(self->core);
    self->core->paused_for_fork = 0;
    self->core->restart_pending = 0;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_sample_doc, "sample() -> bool\n--\n\nTake one row now, on the calling thread. "
                            "False when the sampler has never started or is closed.");

static PyObject *lp_sampler_sample(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (!self->core->opened || self->core->closed) {
        Py_RETURN_FALSE;
    }
    if (lp_resume(self) < 0) {
        return NULL;
    }
    lp_tick(self->core);
    /* And a timeline row: the last one then says where each thread was when the process
     * stopped, so a short run's final phase is drawn to its end, not to the last tick. */
    lp_timeline_tick(self->core, 0, lp_monotonic_ns());
    Py_RETURN_TRUE;
}

PyDoc_STRVAR(lp_drain_doc, "drain() -> bytes\n--\n\nRemove every row from the ring and return them, oldest "
                           "first, as native-endian int64 rows of len(columns) values.");

static PyObject *lp_sampler_drain(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    PyObject *out;
    if (!c->opened) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    if (lp_resume(self) < 0) {
        return NULL;
    }
    pthread_mutex_lock(&c->ring_lock);
    size_t row_bytes = (size_t)c->ncols * sizeof(int64_t);
    Py_ssize_t first = c->count;
    if (c->head + first > c->capacity) {
        first = c->capacity - c->head;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(row_bytes * (size_t)c->count));
    if (out != NULL) {
        char *dst = PyBytes_AS_STRING(out);
        memcpy(dst, c->ring + (size_t)c->head * c->ncols, row_bytes * (size_t)first);
        memcpy(dst + row_bytes * (size_t)first, c->ring, row_bytes * (size_t)(c->count - first));
        c->head = 0;
        c->count = 0;
    }
    pthread_mutex_unlock(&c->ring_lock);
    return out;
}

PyDoc_STRVAR(lp_drain_timeline_doc,
             "drain_timeline() -> bytes\n--\n\nRemove every timeline row from its ring "
             "and return them, oldest first, as native-endian int64 rows of "
             "len(timeline_columns) values.");

static PyObject *lp_sampler_drain_timeline(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (lp_resume(self) < 0) {
        return NULL;
    }
    return lp_timeline_drain(self->core);
}

PyDoc_STRVAR(lp_before_fork_doc, "before_fork()\n--\n\nStop the thread (joined before returning), to restart "
                                 "it after fork(). Holds no lock across fork().");

/* Stopping the thread is all it takes for no sampler lock to be held at fork(): the thread is the
 * only holder that runs without the GIL, and fork() runs with the GIL held, so no method can be
 * inside a critical section then. No lock is held from here to the after-fork hooks either: other
 * threads run Python (and call these methods, holding the GIL) in between, and one waiting on a
 * lock held across that window would wait forever for the forking thread, which waits for the
 * GIL. The child initialises the locks afresh all the same (see after_fork_child). */
static PyObject *lp_sampler_before_fork(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    /* Counted: two threads' forks interleave their hooks (one thread's whole fork can run
     * between another's before-hook and its fork()), and only the last one's parent hook may
     * restart the thread, or the other fork would find it running. */
    c->forks_pending++;
    if (c->thread_running) {
        lp_thread_stop(c);
        c->paused_for_fork = 1;
    } else if (c->restart_pending) {
        /* Forking again before the last fork's restart ran: still paused, restart after. */
        c->restart_pending = 0;
        c->paused_for_fork = 1;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_after_fork_parent_doc,
             "after_fork_parent()\n--\n\nRestart the thread that before_fork() stopped (3.13+: at the next "
             "method call).");

static PyObject *lp_sampler_after_fork_parent(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    if (c->forks_pending > 0) {
        c->forks_pending--;
    }
    if (c->paused_for_fork && c->forks_pending == 0) {
        c->paused_for_fork = 0;
        c->restart_pending = 1;
#if PY_VERSION_HEX >= 0x030D0000
        /* 3.13 counts the process's threads for its "multi-threaded fork" warning after these
         * hooks have run, so a thread started here (or from a pending call, which fires at the
         * next bytecode, inside any later Python hook) would be counted. Restart at the next
         * method call instead: the profiler makes one at every snapshot. Rows resume then, and
         * the counters being cumulative, the longer interval loses no bytes. */
        Py_RETURN_NONE;
#else
        if (lp_resume(self) < 0) {
            return NULL;
        }
#endif
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_after_fork_child_doc,
             "after_fork_child()\n--\n\nIn the child: reopen this process's /proc descriptors, start an "
             "empty ring and, if the parent was sampling, start sampling here.");

static PyObject *lp_sampler_after_fork_child(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    /* The thread does not exist here. If before_fork() did not run (a fork from C), a lock may
     * be held by that vanished thread: initialise them afresh either way. No other thread of
     * this process exists yet, so nothing can be waiting on them. */
    int was_sampling = c->thread_running || c->paused_for_fork || c->restart_pending;
    c->thread_running = 0;
    c->paused_for_fork = 0;
    c->forks_pending = 0; /* the other threads' forks are not this process's */
    c->restart_pending = 0;
    c->have_thread_clock = 0;
    atomic_store(&c->thread_tid, 0);
    if (lp_locks_init(c) != 0) {
        PyErr_SetString(PyExc_OSError, "cannot initialise the sampler's locks in the child");
        return NULL;
    }
    c->ticks = c->failed_io = c->failed_rss = c->failed_stat = c->failed_pss = 0;
    c->pss_reads = c->pss_skipped = 0;
    c->nvml_reads = c->nvml_skipped = 0;
    lp_timeline_reset(c);
    lp_sched_reset(c);
    c->proc_cpu_ns = c->proc_threads = c->proc_threads_max = -1;
    if (c->capi != NULL && c->capi->after_fork_child != NULL) {
        c->capi->after_fork_child(c->capi);
    }
    c->rows_total = c->overwritten = 0;
    c->cpu_ns_done = 0;
    c->restarts = 0;
    c->prev_fp_ok = 0;
    c->prev_own_faults = c->own_reaped_fingerprint != NULL ? atomic_load(c->own_reaped_fingerprint) : 0;
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        atomic_store(&c->local_own[i], 0);
    }
    if (c->closed || !c->opened) {
        Py_RETURN_NONE;
    }
    /* NVML handles belong to the parent: forget them (never shut down or unload the parent's
     * NVML from here) and open NVML again for this process. */
    if (c->nvml_open) {
        lp_nvml_forget_after_fork(&c->nvml);
        c->nvml_open = 0;
    }
    c->nvml_tried = 0;
    if (lp_core_open(c) < 0) {
        return PyErr_NoMemory();
    }
    if (was_sampling && lp_begin_sampling(c) < 0) {
        return NULL;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_close_doc, "close()\n--\n\nStop, close the descriptors and NVML, free the ring. Idempotent.");

static PyObject *lp_sampler_close(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_core *c = self->core;
    lp_thread_stop(c);
    c->paused_for_fork = 0;
    c->restart_pending = 0;
    lp_core_release(c);
    c->closed = 1;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_add_own_io_doc,
             "add_own_io(rchar, wchar, read_bytes, write_bytes, cancelled_write_bytes)\n--\n\n"
             "Add bytes moved by the profiler itself, so the rows' own_* columns exclude them.");

static PyObject *lp_sampler_add_own_io(lp_SamplerObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    int64_t values[LP_IO_FIELDS];
    if (nargs != LP_IO_FIELDS) {
        PyErr_Format(PyExc_TypeError, "add_own_io() takes %d arguments (%zd given)", LP_IO_FIELDS, nargs);
        return NULL;
    }
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        long long v = PyLong_AsLongLong(args[i]);
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        values[i] = (int64_t)v;
    }
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        atomic_fetch_add_explicit(&self->core->own_io[i], values[i], memory_order_relaxed);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_sched_doc, "sched() -> dict\n--\n\nOff-CPU time per phase node and the process's CPU; "
                           "see _sampler.pyi.");

static PyObject *lp_sampler_sched(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    return lp_sched_dict(self->core);
}

PyDoc_STRVAR(lp_stats_doc, "stats() -> dict\n--\n\nCounters and reasons; see _sampler.pyi.");

static PyObject *lp_sampler_stats(lp_SamplerObject *self, PyObject *Py_UNUSED(ignored))
{
    if (lp_resume(self) < 0) {
        return NULL;
    }
    return lp_core_stats(self->core);
}

static PyObject *lp_sampler_get_columns(lp_SamplerObject *self, void *Py_UNUSED(closure))
{
    lp_core *c = self->core;
    int ncols = c->opened ? c->ncols : LP_BASE_COLS;
    PyObject *t = PyTuple_New(ncols);
    if (t == NULL) {
        return NULL;
    }
    for (int i = 0; i < ncols; i++) {
        PyObject *name;
        if (i < LP_BASE_COLS) {
            name = PyUnicode_FromString(lp_base_names[i]);
        } else {
            int k = i - LP_BASE_COLS;
            name = PyUnicode_FromFormat("gpu%d_%s", k / 2, (k % 2) ? "mine" : "busy");
        }
        if (name == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, i, name);
    }
    return t;
}

static PyObject *lp_sampler_get_interval_s(lp_SamplerObject *self, void *Py_UNUSED(closure))
{
    return PyFloat_FromDouble((double)self->core->interval_ns / 1e9);
}

static PyObject *lp_sampler_get_capacity(lp_SamplerObject *self, void *Py_UNUSED(closure))
{
    return PyLong_FromSsize_t(self->core->capacity);
}

static PyObject *lp_sampler_get_timeline_hz(lp_SamplerObject *self, void *Py_UNUSED(closure))
{
    int64_t ns = self->core->tl_interval_ns;
    return PyFloat_FromDouble(ns > 0 ? 1e9 / (double)ns : 0.0);
}

static PyObject *lp_sampler_get_running(lp_SamplerObject *self, void *Py_UNUSED(closure))
{
    /* A restart deferred past fork counts as running: it will be by the next call. */
    return PyBool_FromLong(self->core->thread_running || self->core->restart_pending);
}

static PyMethodDef lp_sampler_methods[] = {
    {"start", (PyCFunction)lp_sampler_start, METH_NOARGS, lp_start_doc},
    {"stop", (PyCFunction)lp_sampler_stop, METH_NOARGS, lp_stop_doc},
    {"sample", (PyCFunction)lp_sampler_sample, METH_NOARGS, lp_sample_doc},
    {"drain", (PyCFunction)lp_sampler_drain, METH_NOARGS, lp_drain_doc},
    {"drain_timeline", (PyCFunction)lp_sampler_drain_timeline, METH_NOARGS, lp_drain_timeline_doc},
    {"before_fork", (PyCFunction)lp_sampler_before_fork, METH_NOARGS, lp_before_fork_doc},
    {"after_fork_parent", (PyCFunction)lp_sampler_after_fork_parent, METH_NOARGS, lp_after_fork_parent_doc},
    {"after_fork_child", (PyCFunction)lp_sampler_after_fork_child, METH_NOARGS, lp_after_fork_child_doc},
    {"close", (PyCFunction)lp_sampler_close, METH_NOARGS, lp_close_doc},
    {"add_own_io", (PyCFunction)(void (*)(void))lp_sampler_add_own_io, METH_FASTCALL, lp_add_own_io_doc},
    {"stats", (PyCFunction)lp_sampler_stats, METH_NOARGS, lp_stats_doc},
    {"sched", (PyCFunction)lp_sampler_sched, METH_NOARGS, lp_sched_doc},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef lp_sampler_getset[] = {
    {"columns", (getter)lp_sampler_get_columns, NULL, "Column names of a drained row.", NULL},
    {"interval_s", (getter)lp_sampler_get_interval_s, NULL, "Seconds between rows.", NULL},
    {"capacity", (getter)lp_sampler_get_capacity, NULL, "Rows the ring holds.", NULL},
    {"running", (getter)lp_sampler_get_running, NULL, "Whether the thread runs.", NULL},
    {"timeline_hz", (getter)lp_sampler_get_timeline_hz, NULL, "Timeline ticks per second (0: off).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(lp_sampler_doc,
             "Sampler(interval_s=1.0, capacity=3600, *, io_path=None, statm_path=None, stat_path=None, "
             "smaps_path=None, nvml=True, timeline_hz=0.0)\n--\n\n"
             "The native resource sampler. io_path, statm_path, stat_path and smaps_path replace "
             "/proc/self/io, /proc/self/statm, /proc/self/stat and /proc/self/smaps_rollup: a seam for "
             "tests only.");

static PyType_Slot lp_sampler_slots[] = {
    {Py_tp_new, lp_sampler_new},         {Py_tp_dealloc, lp_sampler_dealloc},
    {Py_tp_methods, lp_sampler_methods}, {Py_tp_getset, lp_sampler_getset},
    {Py_tp_doc, (void *)lp_sampler_doc}, {0, NULL},
};

PyType_Spec lp_sampler_spec = {
    .name = "lineprofiler.accounting._sampler.Sampler",
    .basicsize = sizeof(lp_SamplerObject),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = lp_sampler_slots,
};
