/* The timeline: which phase every thread is in, at timeline_hz, into a fixed ring of rows
 * (t_ns, tid, phase, since_ns, prev_phase, prev_since_ns, prev_end_ns: the state, since when,
 * and the last phase left, from when to when; a time of 0 is not known; see lp_thread_slot). The tick reads _phases' slots (atomics) and takes
 * ring_lock for the write;
 * it never takes the GIL and allocates nothing. */
#include "sampler.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include "_clock.h"

/* ===================================================================== the ring */

int lp_timeline_alloc(lp_core *c)
{
    if (c->tl_interval_ns <= 0 || c->tl_ring != NULL) {
        return 0;
    }
    c->tl_ring = calloc((size_t)LP_TL_CAPACITY * LP_TL_COLS, sizeof(int64_t));
    return c->tl_ring == NULL ? -1 : 0;
}

/* Empties the ring and its counters (a fork child's timeline starts at its fork). */
void lp_timeline_reset(lp_core *c)
{
    c->tl_head = c->tl_count = 0;
    c->tl_rows_total = c->tl_overwritten = 0;
    atomic_store(&c->tl_ticks, 0);
    atomic_store(&c->tl_skipped, 0);
}

static void lp_timeline_push(lp_core *c, const int64_t *rows, int n)
{
    for (int r = 0; r < n; r++) {
        Py_ssize_t slot;
        if (c->tl_count == LP_TL_CAPACITY) {
            slot = c->tl_head;
            c->tl_head = (c->tl_head + 1) % LP_TL_CAPACITY;
            c->tl_overwritten++;
        } else {
            slot = (c->tl_head + c->tl_count) % LP_TL_CAPACITY;
            c->tl_count++;
        }
        memcpy(c->tl_ring + (size_t)slot * LP_TL_COLS, rows + (size_t)r * LP_TL_COLS,
               LP_TL_COLS * sizeof(int64_t));
        c->tl_rows_total++;
    }
}

/* ===================================================================== one tick */

/* Whether thread `tid` of this process has ended. A thread that left its last phase keeps its
 * slot until its stack is freed, which from 3.14 on can be well after the thread itself has
 * ended (its context outlives it); a row for it then would show a thread that is not there.
 * A signal 0 sends nothing: it only asks whether the thread exists. */
static int lp_thread_ended(int64_t tid)
{
#if defined(__linux__)
    return syscall(SYS_tgkill, (long)getpid(), (long)tid, 0) != 0 && errno == ESRCH;
#else
    (void)tid;
    return 0;
#endif
}

/* One row per live thread that holds a slot (its innermost phase, -1 when it is in none), one
 * tid-0 row when no thread does, and first a marker row when `skipped` ticks were missed. The
 * rows are stamped `now`, the instant the caller decided on the tick (and counted what it had
 * missed), so that two rows more than two periods apart always have a marker between them. */
void lp_timeline_tick(lp_core *c, int64_t skipped, int64_t now)
{
    int64_t rows[(LP_THREAD_SLOTS + 2) * LP_TL_COLS];
    lp_sched_seen seen[LP_THREAD_SLOTS];
    int n = 0, threads = 0;
    if (c->tl_ring == NULL || c->threads == NULL) {
        return;
    }
    if (skipped > 0) {
        rows[0] = now;
        rows[1] = LP_TL_TID_SKIPPED;
        rows[2] = skipped;
        rows[3] = 0;
        rows[4] = -1;
        rows[5] = rows[6] = 0;
        n++;
        atomic_fetch_add_explicit(&c->tl_skipped, skipped, memory_order_relaxed);
    }
    for (int i = 0; i < LP_THREAD_SLOTS; i++) {
        lp_thread_slot *s = &c->threads[i];
        uint64_t owner = atomic_load_explicit(&s->owner, memory_order_acquire);
        if (owner == 0) {
            continue;
        }
        int64_t tid = atomic_load_explicit(&s->tid, memory_order_relaxed);
        lp_slot_state state = {atomic_load_explicit(&s->phase, memory_order_relaxed), -1, 0, 0, 0};
        int state_read = 0;
        if (c->phase_since != NULL) { /* a version 3 capsule: the slot has times */
            state_read = lp_slot_read(s, &state);
        }
        int32_t phase = state.phase;
        if (atomic_load_explicit(&s->owner, memory_order_acquire) != owner) {
            continue; /* freed or reclaimed while read: this thread is gone */
        }
        if (phase < 0 && lp_thread_ended(tid)) {
            continue; /* in no phase because it has ended */
        }
        rows[n * LP_TL_COLS] = now;
        rows[n * LP_TL_COLS + 1] = tid;
        rows[n * LP_TL_COLS + 2] = phase;
        rows[n * LP_TL_COLS + 3] = state.since_ns;
        rows[n * LP_TL_COLS + 4] = state.prev_phase;
        rows[n * LP_TL_COLS + 5] = state.prev_since_ns;
        rows[n * LP_TL_COLS + 6] = state.prev_end_ns;
        seen[threads] = (lp_sched_seen){i, tid, state, state_read};
        n++;
        threads++;
    }
    if (threads == 0) {
        rows[n * LP_TL_COLS] = now;
        rows[n * LP_TL_COLS + 1] = LP_TL_TID_NONE;
        rows[n * LP_TL_COLS + 2] = -1;
        rows[n * LP_TL_COLS + 3] = 0;
        rows[n * LP_TL_COLS + 4] = -1;
        rows[n * LP_TL_COLS + 5] = rows[n * LP_TL_COLS + 6] = 0;
        n++;
    }
    pthread_mutex_lock(&c->ring_lock);
    lp_timeline_push(c, rows, n);
    pthread_mutex_unlock(&c->ring_lock);
    lp_sched_tick(c, seen, threads, now);
    atomic_fetch_add_explicit(&c->tl_ticks, 1, memory_order_relaxed);
}

/* ===================================================================== drain */

/* Every row held, oldest first, as native-endian int64 rows; the ring is emptied. */
PyObject *lp_timeline_drain(lp_core *c)
{
    PyObject *out;
    if (c->tl_ring == NULL) {
        return PyBytes_FromStringAndSize(NULL, 0);
    }
    pthread_mutex_lock(&c->ring_lock);
    size_t row_bytes = LP_TL_COLS * sizeof(int64_t);
    Py_ssize_t first = c->tl_count;
    if (c->tl_head + first > LP_TL_CAPACITY) {
        first = LP_TL_CAPACITY - c->tl_head;
    }
    out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(row_bytes * (size_t)c->tl_count));
    if (out != NULL) {
        char *dst = PyBytes_AS_STRING(out);
        memcpy(dst, c->tl_ring + (size_t)c->tl_head * LP_TL_COLS, row_bytes * (size_t)first);
        memcpy(dst + row_bytes * (size_t)first, c->tl_ring, row_bytes * (size_t)(c->tl_count - first));
        c->tl_head = 0;
        c->tl_count = 0;
    }
    pthread_mutex_unlock(&c->ring_lock);
    return out;
}
