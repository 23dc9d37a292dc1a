/* The shared tables of the line tracer: the code-object map, the per-code line records, the
 * per-thread frame stacks, and the slow paths the inline hot path of tracer.h falls back to.
 * Its errors, and the user's exceptions met while asking the filter, are errors.c's. */
#include "tracer.h"

#include <string.h>
#if PY_VERSION_HEX >= 0x030D0000
#include <opcode.h> /* RESUME */
#endif

/* ===================================================================== pointer map */

/* Returns the slot for key, inserting an empty one ({key, NULL, NULL}) if
 * absent. NULL with MemoryError set on failure. */
static lp_slot *lp_map_insert(lp_map *m, uintptr_t key)
{
    if (m->slots == NULL || (m->used + 1) * 2 > m->mask + 1) {
        size_t cap = m->slots ? (m->mask + 1) * 2 : 64;
        lp_slot *slots = PyMem_Calloc(cap, sizeof(lp_slot));
        if (slots == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        if (m->slots != NULL) {
            for (size_t j = 0; j <= m->mask; j++) {
                lp_slot *o = &m->slots[j];
                if (o->key == 0) {
                    continue;
                }
                size_t i = lp_hash(o->key) & (cap - 1);
                while (slots[i].key != 0) {
                    i = (i + 1) & (cap - 1);
                }
                slots[i] = *o;
            }
            PyMem_Free(m->slots);
        }
        m->slots = slots;
        m->mask = cap - 1;
    }
    size_t i = lp_hash(key) & m->mask;
    for (;;) {
        lp_slot *s = &m->slots[i];
        if (s->key == key) {
            return s;
        }
        if (s->key == 0) {
            s->key = key;
            s->val = NULL;
            s->aux = NULL;
            m->used++;
            return s;
        }
        i = (i + 1) & m->mask;
    }
}

/* ===================================================================== code records */

static void lp_code_free(lp_code *rec)
{
    Py_XDECREF(rec->code);
    PyMem_Free(rec->lines);
    for (int r = 0; r < rec->n_regions; r++) {
        PyMem_Free(rec->regions[r].lines);
    }
    PyMem_Free(rec->regions);
    PyMem_Free(rec);
}

/* A line array of n slots holding `from` (n_from slots) at offset `at`, or NULL with
 * MemoryError set. */
static lp_line *lp_lines_copy(const lp_line *from, int n_from, size_t n, int at)
{
    lp_line *lines = PyMem_Calloc(n ? n : 1, sizeof(lp_line));
    if (lines == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (from != NULL && n_from) {
        memcpy(lines + at, from, (size_t)n_from * sizeof(lp_line));
    }
    return lines;
}

/* Makes lines[], and every region's, cover `line`. Returns 0, or -1 with
 * MemoryError set (nothing changed). The old arrays are handed to old[]
 * (main first, then regions[1..]; the caller frees them once no pointer
 * into them is left), which has room for rec->n_regions + 1. */
static int lp_code_grow(lp_code *rec, int line, lp_line **old)
{
    int lo = rec->n ? rec->base : line;
    int hi = rec->n ? rec->base + rec->n : line + 1; /* exclusive */
    if (line < lo) {
        lo = line;
    }
    if (line >= hi) {
        hi = line + 1;
    }
    /* Headroom beyond the new line: most functions then grow once or twice. */
    int64_t span = (int64_t)hi - lo;
    int64_t extra = span / 2 + 16;
    int64_t new_hi = (int64_t)hi + extra;
    if (new_hi - lo > (int64_t)(INT_MAX / 2)) {
        new_hi = (int64_t)hi;
    }
    size_t n = (size_t)(new_hi - lo);
    int at = rec->n ? rec->base - lo : 0;
    int k = rec->n_regions > 0 ? rec->n_regions : 1;
    lp_line **fresh = PyMem_Calloc((size_t)k, sizeof(lp_line *));
    int ok = fresh != NULL;
    for (int r = 0; ok && r < k; r++) {
        const lp_line *from = r == 0 ? rec->lines : rec->regions[r].lines;
        if (r == 0 || from != NULL) {
            ok = (fresh[r] = lp_lines_copy(from, rec->n, n, at)) != NULL;
        }
    }
    if (!ok) {
        for (int r = 0; fresh != NULL && r < k; r++) {
            PyMem_Free(fresh[r]);
        }
        PyMem_Free(fresh);
        if (!PyErr_Occurred()) {
            PyErr_NoMemory();
        }
        return -1;
    }
    old[0] = rec->lines;
    rec->lines = fresh[0];
    for (int r = 1; r < rec->n_regions; r++) {
        old[r] = rec->regions[r].lines;
        rec->regions[r].lines = fresh[r];
    }
    PyMem_Free(fresh);
    rec->base = lo;
    rec->n = (int)n;
    return 0;
}

/* Sizes lines[] to every line the code object can report (its co_lines()),
 * so the arrays need not grow while recording and frames can point into
 * them. Once per code object. A failure here only means growth later. */
static void lp_code_presize(lp_code *rec)
{
    PyObject *it = PyObject_CallMethod(rec->code, "co_lines", NULL);
    if (it == NULL) {
        PyErr_Clear();
        return;
    }
    PyObject *iter = PyObject_GetIter(it);
    Py_DECREF(it);
    if (iter == NULL) {
        PyErr_Clear();
        return;
    }
    long lo = LONG_MAX, hi = -1;
    PyObject *item;
    while ((item = PyIter_Next(iter)) != NULL) {
        if (PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 3) {
            PyObject *ln = PyTuple_GET_ITEM(item, 2);
            if (PyLong_Check(ln)) {
                long v = PyLong_AsLong(ln);
                if (v >= 0 && v <= INT_MAX / 4) {
                    lo = v < lo ? v : lo;
                    hi = v > hi ? v : hi;
                }
            }
        }
        Py_DECREF(item);
    }
    Py_DECREF(iter);
    PyErr_Clear();
    if (hi < 0) {
        return;
    }
    lp_line *lines = PyMem_Calloc((size_t)(hi - lo + 1), sizeof(lp_line));
    if (lines == NULL) {
        return;
    }
    rec->lines = lines;
    rec->base = (int)lo;
    rec->n = (int)(hi - lo + 1);
}

#if PY_VERSION_HEX >= 0x030D0000
/* Whether frames of `co` need PY_START to be seen. CPython 3.13 does not emit LINE for a frame's
 * first line when the instruction after the frame's RESUME is on the same line as RESUME (one-line
 * functions, lambdas, generator expressions) unless PY_START is on for the code; when the lines
 * differ, it does. RESUME is found among the first instructions (the prologue before it has no
 * inline caches); anything unexpected answers yes, which costs an event per call, never a line. */
static int lp_needs_start(PyCodeObject *co)
{
    PyObject *bytes = PyCode_GetCode(co);
    if (bytes == NULL) {
        PyErr_Clear();
        return 1;
    }
    int needs = 1;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(bytes);
    Py_ssize_t n = PyBytes_GET_SIZE(bytes);
    for (Py_ssize_t i = 0; i + 3 < n && i < 32; i += 2) {
        if (b[i] == RESUME) {
            int here = PyCode_Addr2Line(co, (int)i);
            int next = PyCode_Addr2Line(co, (int)i + 2);
            needs = here < 0 || next < 0 || here == next;
            break;
        }
    }
    Py_DECREF(bytes);
    return needs;
}
#endif

/* Records the filter's answer `yes` for `code`: returns the project record, LP_FOREIGN, or NULL
 * (tracer broken). */
static lp_code *lp_record_decision(lp_TracerObject *tr, PyObject *code, int yes)
{
    PyCodeObject *co = (PyCodeObject *)code;
    if (!yes && tr->n_foreign >= tr->st->foreign_limit) {
        /* Drop every foreign entry: keeps the map bounded when code objects
         * are made and freed without end (exec in a loop). */
        lp_map fresh = {NULL, 0, 0};
        for (size_t j = 0; tr->codes.slots && j <= tr->codes.mask; j++) {
            lp_slot *o = &tr->codes.slots[j];
            if (o->key == 0) {
                continue;
            }
            if (o->val == LP_FOREIGN) {
                Py_CLEAR(o->aux);
                continue;
            }
            lp_slot *s = lp_map_insert(&fresh, o->key);
            if (s == NULL) {
                PyMem_Free(fresh.slots);
                lp_fail(tr);
                return NULL;
            }
            s->val = o->val;
        }
        PyMem_Free(tr->codes.slots);
        tr->codes = fresh;
        tr->n_foreign = 0;
    }
    if (!yes) {
        lp_slot *s = lp_map_insert(&tr->codes, (uintptr_t)code);
        if (s == NULL) {
            lp_fail(tr);
            return NULL;
        }
        if (s->val != LP_FOREIGN) {
            tr->n_foreign++;
        }
        s->val = LP_FOREIGN;
        Py_INCREF(co->co_filename);
        Py_XSETREF(s->aux, co->co_filename);
        return LP_FOREIGN;
    }
    if (tr->n_recs == tr->cap_recs) {
        Py_ssize_t cap = tr->cap_recs ? tr->cap_recs * 2 : 64;
        lp_code **recs = PyMem_Realloc(tr->recs, (size_t)cap * sizeof(lp_code *));
        if (recs == NULL) {
            PyErr_NoMemory();
            lp_fail(tr);
            return NULL;
        }
        tr->recs = recs;
        tr->cap_recs = cap;
    }
    lp_code *rec = PyMem_Calloc(1, sizeof(lp_code));
    if (rec == NULL) {
        PyErr_NoMemory();
        lp_fail(tr);
        return NULL;
    }
    Py_INCREF(code);
    rec->code = code;
    rec->first_lineno = co->co_firstlineno;
    rec->is_gen = (co->co_flags & (CO_GENERATOR | CO_COROUTINE | CO_ASYNC_GENERATOR)) != 0;
#if PY_VERSION_HEX >= 0x030D0000
    rec->needs_start = lp_needs_start(co);
#endif
    rec->resume_key = -1;
    rec->base = co->co_firstlineno;
    rec->index = tr->n_recs;
    tr->recs[tr->n_recs++] = rec;
    if (tr->st->presize) {
        lp_code_presize(rec); /* calls co_lines(): before we hold a slot pointer */
    }
    lp_slot *s = lp_map_insert(&tr->codes, (uintptr_t)code);
    if (s == NULL) {
        lp_fail(tr);
        return NULL; /* rec stays in recs[], owned and freed with them */
    }
    if (s->val == LP_FOREIGN) {
        tr->n_foreign--;
    }
    s->val = rec;
    Py_CLEAR(s->aux);
    return rec;
}

/* Decides whether `code` belongs to the project, records the answer, and
 * returns the project record, LP_FOREIGN, or NULL: tracer broken, or the
 * user's exception arrived meanwhile and is left on th (the answer is
 * recorded all the same). Runs once per code object: it calls the Python
 * filter, which is not traced (CPython does not deliver events raised inside
 * a callback). */
lp_code *lp_decide(lp_TracerObject *tr, lp_thread *th, PyObject *code)
{
    if (!PyCode_Check(code)) {
        return LP_FOREIGN;
    }
    int yes = lp_ask_filter(tr, th, code);
    if (yes < 0) {
        lp_fail(tr);
        return NULL;
    }
    if (!tr->on) { /* the filter, or a signal handler run inside it, stopped us */
        return NULL;
    }
    lp_code *rec = lp_record_decision(tr, code, yes);
    return th->user_exc != NULL ? NULL : rec;
}

/* ===================================================================== per-thread state */

/* The state of thread ts, made on first use. NULL with MemoryError set. */
lp_thread *lp_thread_get(lp_TracerObject *tr, PyThreadState *ts)
{
    lp_slot *s = lp_map_insert(&tr->threads, (uintptr_t)ts);
    if (s == NULL) {
        return NULL;
    }
    lp_thread *th = (lp_thread *)s->val;
    if (th == NULL) {
        th = PyMem_Calloc(1, sizeof(lp_thread));
        if (th == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        th->tstate = ts;
        th->tid = ts->id;
        th->region = tr->follow != NULL; /* following phases: always in a region */
        lp_self_reset(th);
        s->val = th;
    } else if (th->tid != ts->id) {
        /* A new thread reusing a dead thread's PyThreadState address. */
        th->tid = ts->id;
        lp_stack_forget(th);
        th->region = tr->follow != NULL;
        th->phase_slot = NULL;
    }
    return th;
}

/* lp_thread_get() for callbacks: failures are deferred. Refreshes the
 * one-entry cache. */
lp_thread *lp_thread_slow(lp_TracerObject *tr, uintptr_t key)
{
    lp_thread *th = lp_thread_get(tr, PyThreadState_Get());
    if (th == NULL) {
        lp_fail(tr);
        return NULL;
    }
    tr->last_key = key;
    tr->has_last = 1;
    tr->last_thread = th;
    return th;
}

/* ===================================================================== frames */

lp_frame *lp_push_slow(lp_TracerObject *tr, lp_thread *th)
{
    Py_ssize_t cap = th->cap ? th->cap * 2 : 32;
    lp_frame *stack = PyMem_Realloc(th->stack, (size_t)cap * sizeof(lp_frame));
    if (stack == NULL) {
        PyErr_NoMemory();
        lp_fail(tr);
        return NULL;
    }
    th->stack = stack;
    th->cap = cap;
    return &th->stack[th->depth++];
}

/* Makes th->top_of[] cover record `index`. Returns 0, or -1 (tracer broken). */
int lp_top_of_grow(lp_TracerObject *tr, lp_thread *th, Py_ssize_t index)
{
    Py_ssize_t n = th->n_top_of ? th->n_top_of * 2 : 64;
    if (n <= index) {
        n = index + 1;
    }
    Py_ssize_t *grown = PyMem_Realloc(th->top_of, (size_t)n * sizeof(Py_ssize_t));
    if (grown == NULL) {
        PyErr_NoMemory();
        lp_fail(tr);
        return -1;
    }
    memset(grown + th->n_top_of, 0, (size_t)(n - th->n_top_of) * sizeof(Py_ssize_t));
    th->top_of = grown;
    th->n_top_of = n;
    return 0;
}

/* th's stack empties outside a callback (start, a new trace function, a reused thread state,
 * recording stopped): no frame of it is on the stack any more, and no slot it pointed at may be
 * billed again. */
void lp_stack_forget(lp_thread *th)
{
    th->depth = 0;
    if (th->top_of != NULL) {
        memset(th->top_of, 0, (size_t)th->n_top_of * sizeof(Py_ssize_t));
    }
    lp_self_reset(th);
}

/* `p` re-pointed into rec's grown arrays if it pointed into one of the old
 * ones (old[], n_old slots each from line old_base), else unchanged. */
static lp_line *lp_rebase(lp_code *rec, lp_line **old, int n_arrays, int old_base, int n_old, lp_line *p)
{
    for (int r = 0; r < n_arrays; r++) {
        if (old[r] != NULL && (uintptr_t)p >= (uintptr_t)old[r] &&
            (uintptr_t)p < (uintptr_t)(old[r] + n_old)) {
            lp_line *now = r == 0 ? rec->lines : rec->regions[r].lines;
            return &now[old_base + (p - old[r]) - rec->base];
        }
    }
    return p;
}

/* Grows rec's line arrays (its regions' too) to cover `line` and re-points
 * every open frame and self-time slot of every thread that pointed into an
 * old array. Rare: arrays are sized from co_lines() when the record is made.
 * Its time is taken out of thread th's virtual clock. Returns 0, or -1
 * (tracer broken). */
int lp_grow_timed(lp_TracerObject *tr, lp_thread *th, lp_code *rec, int line)
{
    int64_t t0 = lp_clock(tr, 0);
    int rc = 0;
    int old_base = rec->base;
    int old_n = rec->n;
    int n_arrays = rec->n_regions > 0 ? rec->n_regions : 1;
    lp_line **old = PyMem_Calloc((size_t)n_arrays, sizeof(lp_line *));
    if (old == NULL) {
        PyErr_NoMemory();
    }
    if (old == NULL || lp_code_grow(rec, line, old) < 0) {
        lp_fail(tr);
        PyMem_Free(old);
        lp_leave(tr, th, t0);
        return -1;
    }
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_thread *other = (lp_thread *)tr->threads.slots[j].val;
        if (other == NULL) {
            continue;
        }
        for (Py_ssize_t i = 0; i < other->depth; i++) {
            lp_frame *f = &other->stack[i];
            if (f->rec == rec && f->open != NULL) {
                f->open = lp_rebase(rec, old, n_arrays, old_base, old_n, f->open);
            }
        }
        other->self_slot = lp_rebase(rec, old, n_arrays, old_base, old_n, other->self_slot);
    }
    for (int r = 0; r < n_arrays; r++) {
        PyMem_Free(old[r]);
    }
    PyMem_Free(old);
    lp_leave(tr, th, t0);
    return rc;
}

/* rec's record of region r, its regions[] grown to hold it (lines left NULL);
 * NULL with MemoryError set. */
static lp_region *lp_region_of(lp_code *rec, int r)
{
    if (r >= rec->n_regions) {
        int n = r + 1 > 2 * rec->n_regions ? r + 1 : 2 * rec->n_regions;
        lp_region *grown = PyMem_Realloc(rec->regions, (size_t)n * sizeof(lp_region));
        if (grown == NULL) {
            PyErr_NoMemory();
            return NULL;
        }
        memset(grown + rec->n_regions, 0, (size_t)(n - rec->n_regions) * sizeof(lp_region));
        rec->regions = grown;
        rec->n_regions = n;
    }
    return &rec->regions[r];
}

/* The slot at `index` (within rec->n) of rec's lines in th's region, made on
 * first use (timed: not billed); NULL when that failed (tracer broken). */
lp_line *lp_region_slot(lp_TracerObject *tr, lp_thread *th, lp_code *rec, int index)
{
    if (tr->follow != NULL) {
        th->region = lp_follow_region(tr, th);
    }
    lp_region *reg = th->region < rec->n_regions ? &rec->regions[th->region] : NULL;
    if (LP_LIKELY(reg != NULL && reg->lines != NULL)) {
        return &reg->lines[index];
    }
    int64_t t0 = lp_clock(tr, 0);
    reg = lp_region_of(rec, th->region);
    if (reg != NULL && reg->lines == NULL) {
        reg->lines = lp_lines_copy(NULL, 0, (size_t)rec->n, 0);
    }
    if (reg == NULL || reg->lines == NULL) {
        lp_fail(tr);
        lp_leave(tr, th, t0);
        return NULL;
    }
    lp_leave(tr, th, t0);
    return &reg->lines[index];
}

/* A call of rec while th is in a region: counted for the region too. */
void lp_region_call(lp_TracerObject *tr, lp_thread *th, lp_code *rec)
{
    if (tr->follow != NULL) {
        th->region = lp_follow_region(tr, th);
    }
    if (th->region < rec->n_regions) {
        rec->regions[th->region].calls++;
        return;
    }
    int64_t t0 = lp_clock(tr, 0);
    lp_region *reg = lp_region_of(rec, th->region);
    if (reg == NULL) {
        lp_fail(tr);
    } else {
        reg->calls++;
    }
    lp_leave(tr, th, t0);
}

/* Closes every open line of every thread at "now" and empties the stacks. */
void lp_close_all(lp_TracerObject *tr)
{
    /* Switched off by pause_after(): the lines end at its mark; one a callback opened just
     * before that mark took effect ends where it began. */
    int64_t now = tr->stop_mark != 0 ? tr->stop_mark : lp_clock(tr, 0);
    tr->stop_mark = 0;
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_slot *s = &tr->threads.slots[j];
        if (s->key == 0) {
            continue;
        }
        lp_thread *th = (lp_thread *)s->val;
        if (th == NULL) { /* its allocation failed */
            continue;
        }
        int64_t v = now - th->ovh;
        lp_self_to(th, &th->sink, v < th->self_v ? th->self_v : v);
        /* From the top down: a line paused under a nested activation of its code (lp_nest())
         * resumes at v as that activation closes, so its pause is not billed. */
        for (Py_ssize_t i = th->depth; i-- > 0;) {
            lp_frame *f = &th->stack[i];
            if (f->rec != NULL) {
                lp_close(f, v < f->vstart ? f->vstart : v);
                if (f->outer != 0) {
                    th->stack[f->outer - 1].vstart = v;
                }
            }
        }
        lp_stack_forget(th);
    }
}

/* ===================================================================== freeing */

/* Frees every record and decision. Only while not started: open frames point
 * at records. */
void lp_tracer_free_data(lp_TracerObject *tr)
{
    for (size_t j = 0; tr->threads.slots && j <= tr->threads.mask; j++) {
        lp_thread *th = (lp_thread *)tr->threads.slots[j].val;
        if (th != NULL) {
            th->last_code = NULL;
            th->last_rec = NULL;
            lp_stack_forget(th); /* record indices start again from 0 */
        }
    }
    for (size_t j = 0; tr->codes.slots && j <= tr->codes.mask; j++) {
        Py_CLEAR(tr->codes.slots[j].aux);
    }
    PyMem_Free(tr->codes.slots);
    tr->codes.slots = NULL;
    tr->codes.mask = 0;
    tr->codes.used = 0;
    tr->n_foreign = 0;
    for (Py_ssize_t i = 0; i < tr->n_recs; i++) {
        lp_code_free(tr->recs[i]);
    }
    PyMem_Free(tr->recs);
    tr->recs = NULL;
    tr->n_recs = tr->cap_recs = 0;
    tr->has_data = 0;
    lp_follow_clear(tr);
}
