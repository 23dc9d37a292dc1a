/* The tree, counters, caps and health as plain Python objects, with the entries still open on
 * every stack; and the paths of node ids. */

#include "phases.h"

/* ===================================================================== paths */

PyObject *lp_recorder_path_of(lp_RecorderObject *self, PyObject *arg)
{
    long long id = PyLong_AsLongLong(arg);
    if (id == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (id <= LP_ROOT || id >= self->n_nodes) {
        Py_RETURN_NONE;
    }
    PyObject *path = lp_node_path(self, (int32_t)id);
    return path ? Py_NewRef(path) : NULL;
}

PyObject *lp_recorder_current_path(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    lp_StackObject *ts = lp_stack_view(self->st);
    if (ts == NULL || ts->depth == 0) {
        Py_RETURN_NONE;
    }
    int32_t i = lp_find_live(ts, self, ts->depth - 1);
    if (i < 0) {
        Py_RETURN_NONE;
    }
    PyObject *path = lp_node_path(self, ts->frames[i].node_id);
    return path ? Py_NewRef(path) : NULL;
}

/* ===================================================================== snapshot */

static PyObject *lp_node_dict(lp_RecorderObject *rec, lp_node *node)
{
    PyObject *path = lp_node_path(rec, node->id);
    if (path == NULL) {
        return NULL;
    }
    PyObject *hist = PyList_New(0);
    if (hist == NULL) {
        return NULL;
    }
    for (int b = 0; b < LP_N_BUCKETS; b++) {
        if (node->hist[b] != 0) {
            PyObject *pair = Py_BuildValue("[iK]", b, (unsigned long long)node->hist[b]);
            if (pair == NULL || PyList_Append(hist, pair) < 0) {
                Py_XDECREF(pair);
                Py_DECREF(hist);
                return NULL;
            }
            Py_DECREF(pair);
        }
    }
    PyObject *cpu = rec->measure_cpu && node->entries > node->cpu_missing ? PyLong_FromLongLong(node->cpu_ns)
                                                                          : Py_NewRef(Py_None);
    PyObject *mn = node->entries ? PyLong_FromLongLong(node->min_ns) : Py_NewRef(Py_None);
    PyObject *mx = node->entries ? PyLong_FromLongLong(node->max_ns) : Py_NewRef(Py_None);
    PyObject *io = Py_None;
    if (node->io) {
        io = Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:L,s:L}", "rchar", (long long)node->io_delta[0], "wchar",
                           (long long)node->io_delta[1], "read_bytes", (long long)node->io_delta[2],
                           "write_bytes", (long long)node->io_delta[3], "cancelled_write_bytes",
                           (long long)node->io_delta[4], "measured_entries", (long long)node->io_measured,
                           "failed_reads", (long long)node->io_failed);
    } else {
        Py_INCREF(io);
    }
    PyObject *d = NULL;
    if (cpu && mn && mx && io) {
        d = Py_BuildValue("{s:i,s:O,s:L,s:L,s:L,s:O,s:L,s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:L,s:L,s:L}", "id",
                          node->id, "path", path, "entries", (long long)node->entries, "wall_ns",
                          (long long)node->wall_ns, "self_ns", (long long)node->self_ns, "cpu_ns", cpu,
                          "cpu_missing", (long long)node->cpu_missing, "min_ns", mn, "max_ns", mx, "hist",
                          hist, "io", node->io ? Py_True : Py_False, "sync", node->sync ? Py_True : Py_False,
                          "io_bytes", io, "overflow", node->overflow ? Py_True : Py_False, "open_entries",
                          (long long)node->open_entries, "open_ns", (long long)node->open_ns, "open_self_ns",
                          (long long)node->open_self_ns);
    }
    Py_XDECREF(cpu);
    Py_XDECREF(mn);
    Py_XDECREF(mx);
    Py_XDECREF(io);
    Py_DECREF(hist);
    return d;
}

/* Fills each node's open_* from the frames of this recorder still open on every stack, as of
 * `now`. Pure C, no Python call: the stacks cannot change under it. Per open entry: open_ns is
 * its time so far, open_self_ns that minus its closed children's wall (child_ns) and its open
 * children's time so far (on its own stack, or on a stack that inherited it as a base frame),
 * so that adding open_self_ns to self_ns over all nodes never counts a nanosecond twice.
 * Nothing here touches the totals. */
static void lp_open_pass(lp_RecorderObject *self, int64_t now)
{
    for (int32_t id = 0; id < self->n_nodes; id++) {
        lp_node *node = lp_node_at(self, id);
        node->open_entries = node->open_ns = node->open_self_ns = 0;
    }
    if (!self->active) {
        return; /* every frame is stale */
    }
    for (lp_StackObject *ts = self->st->stacks; ts != NULL; ts = ts->next) {
        for (int32_t i = 0; i < ts->depth; i++) {
            ts->frames[i].snap_child = 0;
        }
    }
    /* Open children on another stack first, so their parents have them all below. */
    for (lp_StackObject *ts = self->st->stacks; ts != NULL; ts = ts->next) {
        for (int32_t i = ts->n_base; i < ts->depth; i++) {
            lp_frame *f = &ts->frames[i];
            if (f->parent < 0 || f->parent >= ts->n_base || f->phase->rec != self || f->gen != self->gen ||
                f->t0 == LP_T0_PENDING) {
                continue;
            }
            lp_frame *origin = lp_origin_frame(&ts->frames[f->parent]);
            if (origin != NULL) {
                origin->snap_child += now - f->t0 > 0 ? now - f->t0 : 0;
            }
        }
    }
    for (lp_StackObject *ts = self->st->stacks; ts != NULL; ts = ts->next) {
        /* Top down: a child frame always lies above its parent, so it is done first. */
        for (int32_t i = ts->depth - 1; i >= ts->n_base; i--) {
            lp_frame *f = &ts->frames[i];
            if (f->phase->rec != self || f->gen != self->gen || f->t0 == LP_T0_PENDING) {
                continue;
            }
            int64_t elapsed = now - f->t0;
            if (elapsed < 0) {
                elapsed = 0;
            }
            int64_t own = elapsed - f->child_ns - f->snap_child;
            f->node->open_entries++;
            f->node->open_ns += elapsed;
            f->node->open_self_ns += own > 0 ? own : 0;
            if (f->parent >= 0) {
                ts->frames[f->parent].snap_child += elapsed;
            }
        }
    }
}

PyObject *lp_recorder_snapshot(lp_RecorderObject *self, PyObject *Py_UNUSED(ignored))
{
    /* A live file lost since the last snapshot is let go here, and why goes into its errors. */
    (void)lp_live_check(self);
    /* The clock first: a test clock runs Python code, which may switch threads. */
    int64_t now = self->active ? lp_wall(self) : 0;
    lp_open_pass(self, now);
    PyObject *phases = PyList_New(0);
    PyObject *counters = PyList_New(0);
    PyObject *result = NULL;
    if (phases == NULL || counters == NULL) {
        goto done;
    }
    for (int32_t id = LP_ROOT + 1; id < self->n_nodes; id++) {
        lp_node *node = lp_node_at(self, id);
        if (node->entries == 0 && node->open_entries == 0) {
            continue; /* never entered in this generation */
        }
        PyObject *d = lp_node_dict(self, node);
        if (d == NULL || PyList_Append(phases, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    for (int32_t i = 0; i < self->n_counters; i++) {
        lp_counter *c = lp_counter_at(self, i);
        PyObject *phase = c->node > LP_ROOT ? lp_node_path(self, c->node) : PyUnicode_FromString("");
        if (phase == NULL) {
            goto done;
        }
        if (c->node <= LP_ROOT) {
            /* a new reference from FromString: hand it to the dict below, then drop ours */
        } else {
            Py_INCREF(phase);
        }
        PyObject *d = Py_BuildValue("{s:O,s:O,s:L,s:L,s:L,s:L}", "phase", phase, "name", c->name, "total",
                                    (long long)c->total, "calls", (long long)c->calls, "min",
                                    (long long)c->min, "max", (long long)c->max);
        Py_DECREF(phase);
        if (d == NULL || PyList_Append(counters, d) < 0) {
            Py_XDECREF(d);
            goto done;
        }
        Py_DECREF(d);
    }
    PyObject *own = lp_io_dict(self->own_subtracted);
    if (own == NULL) {
        goto done;
    }
    PyObject *errors = PyList_GetSlice(self->errors, 0, PY_SSIZE_T_MAX);
    if (errors == NULL) {
        Py_DECREF(own);
        goto done;
    }
    PyObject *caps =
        Py_BuildValue("{s:i,s:L,s:i,s:L,s:i,s:L}", "max_paths", (int)self->max_paths, "paths_overflowed",
                      (long long)self->paths_overflowed, "max_counters", (int)self->max_counters,
                      "counters_overflowed", (long long)self->counters_overflowed, "max_depth",
                      (int)self->max_depth, "depth_overflowed", (long long)self->depth_overflowed);
    PyObject *repairs = Py_BuildValue(
        "{s:L,s:L,s:L,s:L}", "mismatched_exits", (long long)self->mismatched_exits, "stale_exits",
        (long long)self->stale_exits, "dropped_entries", (long long)self->dropped_entries,
        "cross_stack_exits", (long long)self->cross_stack_exits);
    if (caps != NULL && repairs != NULL) {
        result = Py_BuildValue("{s:O,s:O,s:O,s:O,s:O,s:L,s:L,s:O,s:i}", "phases", phases, "counters",
                               counters, "caps", caps, "repairs", repairs, "errors", errors, "errors_dropped",
                               (long long)self->errors_dropped, "callback_errors",
                               (long long)self->callback_errors, "own_io_subtracted", own, "n_nodes",
                               (int)self->n_nodes);
    }
    Py_XDECREF(caps);
    Py_XDECREF(repairs);
    Py_DECREF(own);
    Py_DECREF(errors);
done:
    Py_XDECREF(phases);
    Py_XDECREF(counters);
    return result;
}
