/* count(): a saturating sum per (phase open at the time, name), with its own cap. */
#include "phases.h"

#include <stdlib.h>

/* ===================================================================== counters */

static int lp_counter_grow(lp_RecorderObject *rec)
{
    uint32_t new_cap = rec->counter_slots ? (rec->counter_mask + 1) * 2 : 64;
    int32_t *slots = calloc(new_cap, sizeof *slots);
    if (slots == NULL) {
        return -1;
    }
    for (int32_t i = 0; i < rec->n_counters; i++) {
        lp_counter *c = lp_counter_at(rec, i);
        uint32_t j = lp_hash2(c->node, c->name) & (new_cap - 1);
        while (slots[j] != 0) {
            j = (j + 1) & (new_cap - 1);
        }
        slots[j] = i + 1;
    }
    free(rec->counter_slots);
    rec->counter_slots = slots;
    rec->counter_mask = new_cap - 1;
    return 0;
}

/* The counter for (node, canon), created if new and allowed; NULL past the cap or when out of
 * memory. */
static lp_counter *lp_counter_get(lp_RecorderObject *rec, int32_t node, PyObject *canon, int create)
{
    if (rec->counter_slots == NULL || (uint32_t)(rec->n_counters + 1) * 2 > rec->counter_mask + 1) {
        if (lp_counter_grow(rec) < 0 && rec->counter_slots == NULL) {
            return NULL;
        }
    }
    uint32_t j = lp_hash2(node, canon) & rec->counter_mask;
    while (rec->counter_slots[j] != 0) {
        lp_counter *c = lp_counter_at(rec, rec->counter_slots[j] - 1);
        if (c->node == node && c->name == canon) {
            return c;
        }
        j = (j + 1) & rec->counter_mask;
    }
    if (!create || (uint32_t)(rec->n_counters + 1) * 2 > rec->counter_mask + 1) {
        return NULL;
    }
    if (rec->n_counters / LP_COUNTER_CHUNK >= rec->n_cchunks) {
        if (rec->n_cchunks == rec->cchunk_cap) {
            int32_t cap = rec->cchunk_cap ? rec->cchunk_cap * 2 : 16;
            lp_counter **chunks = realloc(rec->cchunks, (size_t)cap * sizeof *chunks);
            if (chunks == NULL) {
                return NULL;
            }
            rec->cchunks = chunks;
            rec->cchunk_cap = cap;
        }
        lp_counter *chunk = calloc(LP_COUNTER_CHUNK, sizeof *chunk);
        if (chunk == NULL) {
            return NULL;
        }
        rec->cchunks[rec->n_cchunks++] = chunk;
        lp_live_chunk_added(rec, LP_SEG_COUNTERS, rec->n_cchunks - 1);
    }
    lp_counter *c = lp_counter_at(rec, rec->n_counters);
    c->node = node;
    c->name = canon;
    c->total = 0;
    c->calls = c->min = c->max = 0;
    rec->counter_slots[j] = ++rec->n_counters;
    lp_live_counter_added(rec, c);
    return c;
}

PyObject *lp_recorder_count(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames)
{
    PyObject *name = nargs >= 1 ? args[0] : NULL;
    PyObject *nobj = nargs >= 2 ? args[1] : NULL;
    if (LP_UNLIKELY(kwnames != NULL || nargs < 1 || nargs > 2)) {
        Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
        if (nargs > 2) {
            PyErr_Format(PyExc_TypeError, "count() takes at most 2 arguments (%zd given)", nargs);
            return NULL;
        }
        for (Py_ssize_t k = 0; k < nkw; k++) {
            PyObject *key = PyTuple_GET_ITEM(kwnames, k);
            PyObject **dst = NULL;
            if (PyUnicode_CompareWithASCIIString(key, "name") == 0) {
                dst = &name;
            } else if (PyUnicode_CompareWithASCIIString(key, "n") == 0) {
                dst = &nobj;
            } else {
                PyErr_Format(PyExc_TypeError, "count() got an unexpected keyword argument '%U'", key);
                return NULL;
            }
            if (*dst != NULL) {
                PyErr_Format(PyExc_TypeError, "count() got multiple values for argument '%U'", key);
                return NULL;
            }
            *dst = args[nargs + k];
        }
        if (name == NULL) {
            PyErr_SetString(PyExc_TypeError, "count() missing required argument 'name'");
            return NULL;
        }
    }
    if (LP_UNLIKELY(!PyUnicode_Check(name))) {
        PyErr_Format(PyExc_TypeError, "counter name must be a str, not %.100s", Py_TYPE(name)->tp_name);
        return NULL;
    }
    int64_t n = 1;
    if (nobj != NULL) {
        if (!PyLong_Check(nobj)) {
            PyErr_Format(PyExc_TypeError, "count() n must be an int, not %.100s", Py_TYPE(nobj)->tp_name);
            return NULL;
        }
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(nobj, &overflow);
        if (v == -1 && PyErr_Occurred()) {
            return NULL;
        }
        if (overflow) {
            v = overflow > 0 ? INT64_MAX : INT64_MIN;
        }
        n = v;
    }
    if (LP_UNLIKELY(!self->active)) {
        Py_RETURN_NONE;
    }
    int32_t node = LP_ROOT;
    lp_StackObject *ts = lp_stack_view(self->st);
    if (ts != NULL && ts->depth > 0) {
        lp_frame *top = &ts->frames[ts->depth - 1];
        if (LP_LIKELY(top->phase->rec == self && top->gen == self->gen)) {
            node = top->node_id;
        } else {
            int32_t i = lp_find_live(ts, self, ts->depth - 1);
            node = i >= 0 ? ts->frames[i].node_id : LP_ROOT;
        }
    }
    /* past the counters cap, a name not seen before is not kept: it can only overflow */
    PyObject *canon = lp_canonical(self, name, self->n_counters < self->max_counters);
    if (LP_UNLIKELY(canon == NULL)) {
        if (!PyErr_ExceptionMatches(PyExc_MemoryError)) {
            return NULL;
        }
        lp_record_error(self, "count");
        canon = self->st->overflow_name;
    }
    lp_counter *c = NULL;
    if (LP_LIKELY(canon != self->st->overflow_name)) {
        c = lp_counter_get(self, node, canon, self->n_counters < self->max_counters);
    }
    if (LP_UNLIKELY(c == NULL)) {
        self->counters_overflowed++;
        c = lp_counter_get(self, LP_ROOT, self->st->overflow_name, 1);
        if (c == NULL) {
            Py_RETURN_NONE; /* out of memory: counted above */
        }
    }
    int64_t sum;
    if (LP_UNLIKELY(__builtin_add_overflow(c->total, n, &sum))) {
        sum = n > 0 ? INT64_MAX : INT64_MIN; /* saturate rather than wrap */
    }
    c->total = sum;
    if (c->calls == 0 || n < c->min) {
        c->min = n;
    }
    if (c->calls == 0 || n > c->max) {
        c->max = n;
    }
    c->calls++;
    if (c->live != NULL) {
        c->live->total = sum;
    }
    Py_RETURN_NONE;
}
