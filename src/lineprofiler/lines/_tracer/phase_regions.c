/* Lines keyed by the accounting phase open on their thread: the regions of a tracer that
 * follows phases (follow_phases()), for the accounting layer's sampled line windows.
 *
 * _phases publishes every thread's innermost open phase in a table of slots shared through
 * its capsule (accounting/_phases_capi.h). A tracer that follows phases keeps each thread in
 * a region at all times (1: no phase), so every line takes the region path of the tracer
 * (lp_region_slot(), lp_region_call()), which asks here which region the thread is in now:
 * one atomic load of the thread's slot, cached per thread, and a lookup of the phase's
 * region. Phases get regions in the order first seen, up to max_regions; later ones share
 * the overflow region, so the tables stay bounded whatever the program's phases.
 *
 * Each region also counts the windows (start() to stop()) in which it recorded a line: how
 * many independent looks at that phase the sampled stats rest on. */
#include "tracer.h"

#include "accounting/_phases_capi.h"

#define LP_REGION_NO_PHASE    1
#define LP_REGION_OVERFLOW    2
#define LP_FIRST_PHASE_REGION 3
/* Phase ids past this go to the overflow region rather than grow the id -> region table. */
#define LP_MAX_PHASE_ID (1 << 22)
/* A thread whose slot is not in its home place looks through the others this often (lines). */
#define LP_RESCAN_EVERY 64

struct lp_follow {
    PyObject *phases;         /* the _phases module (strong): the slots live in its state */
    lp_thread_slot *slots;    /* LP_THREAD_SLOTS */
    int32_t *region_of_phase; /* phase id -> region, 0 until the phase is first seen */
    int32_t n_phase;          /* entries in region_of_phase */
    int32_t *phase_of_region; /* region -> phase id (-1: no phase, -2: overflow) */
    uint64_t *windows;        /* region -> windows it recorded a line in */
    uint64_t *seen;           /* region -> the last window counted in windows */
    int32_t n_regions;        /* regions handed out, the fixed ones included */
    int32_t cap_regions;      /* max_regions + LP_FIRST_PHASE_REGION */
    uint64_t epoch;           /* the window under way, from 1 */
};

/* The slot `key` (a thread state's id + 1) owns, or NULL: where _phases puts it (see its
 * lp_thread_publish_slow()). */
static lp_thread_slot *lp_find_slot(lp_follow *f, uint64_t key)
{
    int32_t start = (int32_t)(key % LP_THREAD_SLOTS);
    for (int32_t k = 0; k < LP_THREAD_SLOTS; k++) {
        lp_thread_slot *s = &f->slots[(start + k) % LP_THREAD_SLOTS];
        if (atomic_load_explicit(&s->owner, memory_order_acquire) == key) {
            return s;
        }
    }
    return NULL;
}

static int lp_region_of_phase(lp_follow *f, int32_t phase)
{
    if (phase >= LP_MAX_PHASE_ID) {
        return LP_REGION_OVERFLOW;
    }
    if (phase >= f->n_phase) {
        int32_t n = phase + 1 > 2 * f->n_phase ? phase + 1 : 2 * f->n_phase;
        int32_t *grown = PyMem_Realloc(f->region_of_phase, (size_t)n * sizeof(int32_t));
        if (grown == NULL) {
            return LP_REGION_OVERFLOW; /* never an error in a callback: the line is kept, unkeyed */
        }
        memset(grown + f->n_phase, 0, (size_t)(n - f->n_phase) * sizeof(int32_t));
        f->region_of_phase = grown;
        f->n_phase = n;
    }
    int32_t region = f->region_of_phase[phase];
    if (region == 0) {
        if (f->n_regions < f->cap_regions) {
            region = f->n_regions++;
            f->phase_of_region[region] = phase;
        } else {
            region = LP_REGION_OVERFLOW;
        }
        f->region_of_phase[phase] = region;
    }
    return region;
}

int lp_follow_region(lp_TracerObject *tr, lp_thread *th)
{
    lp_follow *f = tr->follow;
    uint64_t key = th->tid + 1;
    lp_thread_slot *s = th->phase_slot;
    if (s == NULL || atomic_load_explicit(&s->owner, memory_order_relaxed) != key) {
        /* Not found yet (a thread that has entered no phase), or freed: _phases usually puts a
         * thread in its home slot, which is looked at every time; the others every
         * LP_RESCAN_EVERY lines, so that a thread in no phase does not scan them all each line. */
        s = &f->slots[key % LP_THREAD_SLOTS];
        if (atomic_load_explicit(&s->owner, memory_order_acquire) != key) {
            s = NULL;
            if (th->phase_scan-- == 0) {
                th->phase_scan = LP_RESCAN_EVERY;
                s = lp_find_slot(f, key);
            }
        }
        th->phase_slot = s;
    }
    int32_t phase = s == NULL ? -1 : atomic_load_explicit(&s->phase, memory_order_relaxed);
    int region = phase < 0 ? LP_REGION_NO_PHASE : lp_region_of_phase(f, phase);
    if (f->seen[region] != f->epoch) {
        f->seen[region] = f->epoch;
        f->windows[region]++;
    }
    return region;
}

void lp_follow_window(lp_TracerObject *tr)
{
    if (tr->follow != NULL) {
        tr->follow->epoch++;
    }
}

void lp_follow_clear(lp_TracerObject *tr)
{
    lp_follow *f = tr->follow;
    if (f != NULL) {
        memset(f->windows, 0, (size_t)f->cap_regions * sizeof(uint64_t));
        memset(f->seen, 0, (size_t)f->cap_regions * sizeof(uint64_t));
    }
}

void lp_follow_free(lp_TracerObject *tr)
{
    lp_follow *f = tr->follow;
    if (f != NULL) {
        tr->follow = NULL;
        Py_XDECREF(f->phases);
        PyMem_Free(f->region_of_phase);
        PyMem_Free(f->phase_of_region);
        PyMem_Free(f->windows);
        PyMem_Free(f->seen);
        PyMem_Free(f);
    }
}

/* Every thread the tracer knows is in a region from now on (1 until its next line asks). */
static void lp_follow_threads(lp_TracerObject *tr)
{
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_thread *th = (lp_thread *)tr->threads.slots[j].val;
        if (th != NULL) {
            th->region = LP_REGION_NO_PHASE;
            th->phase_slot = NULL;
            th->phase_scan = 0;
        }
    }
}

PyObject *lp_tracer_follow_phases(lp_TracerObject *self, PyObject *args)
{
    PyObject *phases;
    int max_regions;
    if (!PyArg_ParseTuple(args, "Oi:follow_phases", &phases, &max_regions)) {
        return NULL;
    }
    if (self->follow != NULL || self->has_data || self->started) {
        PyErr_SetString(PyExc_RuntimeError, "follow_phases: only once, before anything is recorded");
        return NULL;
    }
    if (max_regions < 1 || max_regions > LP_MAX_REGION - LP_FIRST_PHASE_REGION) {
        PyErr_Format(PyExc_ValueError, "follow_phases: max_regions must be from 1 to %d",
                     LP_MAX_REGION - LP_FIRST_PHASE_REGION);
        return NULL;
    }
    PyObject *capsule = PyObject_GetAttrString(phases, "_C_API");
    if (capsule == NULL) {
        return NULL;
    }
    lp_phases_capi *api = PyCapsule_GetPointer(capsule, LP_PHASES_CAPI_NAME);
    Py_DECREF(capsule);
    if (api == NULL) {
        return NULL;
    }
    if (api->version < 2 || api->threads == NULL) {
        PyErr_Format(PyExc_RuntimeError,
                     "follow_phases: the phases capsule (version %d) publishes no threads", api->version);
        return NULL;
    }
    lp_follow *f = PyMem_Calloc(1, sizeof(lp_follow));
    int32_t cap = max_regions + LP_FIRST_PHASE_REGION;
    if (f != NULL) {
        f->phase_of_region = PyMem_Calloc((size_t)cap, sizeof(int32_t));
        f->windows = PyMem_Calloc((size_t)cap, sizeof(uint64_t));
        f->seen = PyMem_Calloc((size_t)cap, sizeof(uint64_t));
    }
    if (f == NULL || f->phase_of_region == NULL || f->windows == NULL || f->seen == NULL) {
        if (f != NULL) {
            PyMem_Free(f->phase_of_region);
            PyMem_Free(f->windows);
            PyMem_Free(f->seen);
            PyMem_Free(f);
        }
        return PyErr_NoMemory();
    }
    f->phases = Py_NewRef(phases);
    f->slots = api->threads;
    f->cap_regions = cap;
    f->n_regions = LP_FIRST_PHASE_REGION;
    f->phase_of_region[LP_REGION_NO_PHASE] = -1;
    f->phase_of_region[LP_REGION_OVERFLOW] = -2;
    self->follow = f;
    lp_follow_threads(self);
    Py_RETURN_NONE;
}

PyObject *lp_tracer_phase_regions(lp_TracerObject *self, PyObject *Py_UNUSED(ignored))
{
    PyObject *out = PyList_New(0);
    lp_follow *f = self->follow;
    for (int32_t r = LP_REGION_NO_PHASE; out != NULL && f != NULL && r < f->n_regions; r++) {
        PyObject *item = Py_BuildValue("(iiK)", r, f->phase_of_region[r], (unsigned long long)f->windows[r]);
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_CLEAR(out);
        }
        Py_XDECREF(item);
    }
    return out;
}
