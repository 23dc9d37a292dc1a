/* What Sampler.stats() reports: the sampler's counters, and why a source is not read. */
#include "sampler.h"

static int lp_set_item(PyObject *dict, const char *key, PyObject *value)
{
    int rc;
    if (value == NULL) {
        return -1;
    }
    rc = PyDict_SetItemString(dict, key, value);
    Py_DECREF(value);
    return rc;
}

static PyObject *lp_reason_or_none(const char *reason)
{
    if (reason[0] == '\0') {
        Py_RETURN_NONE;
    }
    return PyUnicode_DecodeFSDefault(reason);
}

static PyObject *lp_timeline_reason(lp_core *c)
{
    if (c->tl_interval_ns <= 0) {
        return PyUnicode_FromString("timeline_hz is 0 (off)");
    }
    if (c->threads == NULL) {
        return PyUnicode_FromFormat("no per-thread phases from _phases: %s",
                                    c->phase_reason[0] ? c->phase_reason : "its capsule predates them");
    }
    Py_RETURN_NONE;
}

/* stats(): the counters and the reasons, as a dict (see _sampler.pyi). */
PyObject *lp_core_stats(lp_core *c)
{
    PyObject *d = PyDict_New();
    int64_t own[LP_IO_FIELDS];
    if (d == NULL) {
        return NULL;
    }
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        own[i] = atomic_load(&c->own_io[i]);
    }
    pthread_mutex_lock(&c->tick_lock);
    int64_t ticks = c->ticks, failed_io = c->failed_io, failed_rss = c->failed_rss,
            failed_stat = c->failed_stat, failed_pss = c->failed_pss, pss_reads = c->pss_reads,
            pss_skipped = c->pss_skipped, nvml_reads = c->nvml_reads, nvml_skipped = c->nvml_skipped;
    pthread_mutex_unlock(&c->tick_lock);
    pthread_mutex_lock(&c->ring_lock);
    int64_t rows_total = c->rows_total, overwritten = c->overwritten, held = c->count;
    int64_t tl_rows = c->tl_rows_total, tl_over = c->tl_overwritten;
    pthread_mutex_unlock(&c->ring_lock);
    if (lp_set_item(d, "running", PyBool_FromLong(c->thread_running)) < 0 ||
        lp_set_item(d, "pid", PyLong_FromLong((long)c->pid)) < 0 ||
        lp_set_item(d, "ticks", PyLong_FromLongLong(ticks)) < 0 ||
        lp_set_item(d, "rows_total", PyLong_FromLongLong(rows_total)) < 0 ||
        lp_set_item(d, "rows_held", PyLong_FromLongLong(held)) < 0 ||
        lp_set_item(d, "overwritten", PyLong_FromLongLong(overwritten)) < 0 ||
        lp_set_item(d, "failed_io", PyLong_FromLongLong(failed_io)) < 0 ||
        lp_set_item(d, "failed_rss", PyLong_FromLongLong(failed_rss)) < 0 ||
        lp_set_item(d, "failed_stat", PyLong_FromLongLong(failed_stat)) < 0 ||
        lp_set_item(d, "failed_pss", PyLong_FromLongLong(failed_pss)) < 0 ||
        lp_set_item(d, "pss_reads", PyLong_FromLongLong(pss_reads)) < 0 ||
        lp_set_item(d, "pss_reads_skipped", PyLong_FromLongLong(pss_skipped)) < 0 ||
        lp_set_item(d, "thread_cpu_ns", PyLong_FromLongLong(lp_thread_cpu_total(c))) < 0 ||
        lp_set_item(d, "thread_tid", PyLong_FromLongLong(atomic_load(&c->thread_tid))) < 0 ||
        lp_set_item(d, "restarts", PyLong_FromLongLong(c->restarts)) < 0 ||
        lp_set_item(d, "gpu_devices", PyLong_FromLong(c->n_gpu)) < 0 ||
        lp_set_item(d, "gpu_reads", PyLong_FromLongLong(nvml_reads)) < 0 ||
        lp_set_item(d, "gpu_reads_skipped", PyLong_FromLongLong(nvml_skipped)) < 0 ||
        lp_set_item(d, "timeline_ticks", PyLong_FromLongLong(atomic_load(&c->tl_ticks))) < 0 ||
        lp_set_item(d, "timeline_skipped", PyLong_FromLongLong(atomic_load(&c->tl_skipped))) < 0 ||
        lp_set_item(d, "timeline_rows", PyLong_FromLongLong(tl_rows)) < 0 ||
        lp_set_item(d, "timeline_overwritten", PyLong_FromLongLong(tl_over)) < 0 ||
        lp_set_item(d, "threads_unpublished",
                    PyLong_FromLongLong(c->threads_unpublished ? atomic_load(c->threads_unpublished) : 0)) <
            0 ||
        lp_set_item(d, "timeline_reason", lp_timeline_reason(c)) < 0 ||
        lp_set_item(d, "own_io",
                    Py_BuildValue("(LLLLL)", (long long)own[0], (long long)own[1], (long long)own[2],
                                  (long long)own[3], (long long)own[4])) < 0 ||
        lp_set_item(d, "io_reason", lp_reason_or_none(c->io_reason)) < 0 ||
        lp_set_item(d, "rss_reason", lp_reason_or_none(c->statm_reason)) < 0 ||
        lp_set_item(d, "stat_reason", lp_reason_or_none(c->stat_reason)) < 0 ||
        lp_set_item(d, "pss_reason", lp_reason_or_none(c->smaps_reason)) < 0 ||
        lp_set_item(d, "phase_reason", lp_reason_or_none(c->phase_reason)) < 0 ||
        lp_set_item(d, "gpu_reason", lp_reason_or_none(c->nvml_reason)) < 0) {
        Py_DECREF(d);
        return NULL;
    }
    return d;
}
