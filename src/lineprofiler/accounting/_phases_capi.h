/* What _phases shares with _sampler, through a PyCapsule named
 * "lineprofiler.accounting._phases._C_API" (attribute _C_API of the _phases module).
 *
 * The sampler thread reads these without the GIL, so every field is atomic. */
#ifndef LP_PHASES_CAPI_H
#define LP_PHASES_CAPI_H

#include <stdatomic.h>
#include <stdint.h>

#include "../_procio.h"

#define LP_PHASES_CAPI_NAME    "lineprofiler.accounting._phases._C_API"
#define LP_PHASES_CAPI_VERSION 5

/* Threads whose innermost phase is published at once; more are counted, not shown. */
#define LP_THREAD_SLOTS 64

/* One thread's innermost open phase (of the primary recorder). _phases writes a slot under the
 * GIL (owner last when claiming, first when freeing); the sampler thread reads it without. */
typedef struct {
    _Atomic uint64_t owner; /* the thread state's id + 1 (see threads.c); 0: a free slot */
    _Atomic int64_t tid;    /* the OS thread id, for the record */
    _Atomic int32_t phase;  /* node id of its innermost open phase; -1 none */
    /* Version 3: CLOCK_MONOTONIC ns of the entry or exit that set `phase` (0: not known), and
     * the last phase the thread left (from prev_since_ns to prev_end_ns; -1: none yet). Between
     * prev_end_ns and since_ns the thread was in no phase: any phase entered and left there
     * would be the last one left. So a sample knows its state's start and what came just
     * before, and a timeline's boundaries are exact to the entry, not to the sample period.
     * Written under `seq` (a seqlock: odd while a write is under way); read with lp_slot_read. */
    _Atomic int64_t since_ns;
    _Atomic int32_t prev_phase;
    _Atomic int64_t prev_since_ns;
    _Atomic int64_t prev_end_ns;
    _Atomic uint32_t seq;
} lp_thread_slot;

/* What a slot said at one moment. */
typedef struct {
    int32_t phase, prev_phase;
    int64_t since_ns, prev_since_ns, prev_end_ns;
} lp_slot_state;

/* The writer (the slot's thread, with the GIL). Publishing the state a slot already shows
 * changes nothing (its `since` stays). */
static inline void lp_slot_set(lp_thread_slot *s, int32_t phase, int64_t now_ns)
{
    int32_t old = atomic_load_explicit(&s->phase, memory_order_relaxed);
    if (old == phase) {
        return;
    }
    uint32_t seq = atomic_load_explicit(&s->seq, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    if (old >= 0) {
        atomic_store_explicit(&s->prev_phase, old, memory_order_relaxed);
        atomic_store_explicit(&s->prev_since_ns, atomic_load_explicit(&s->since_ns, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&s->prev_end_ns, now_ns, memory_order_relaxed);
    }
    atomic_store_explicit(&s->since_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&s->phase, phase, memory_order_relaxed);
    atomic_store_explicit(&s->seq, seq + 2, memory_order_release);
}

/* The reader (any thread, no GIL): a consistent view, or 0 when the writer kept it busy for
 * every try (the caller then knows only `phase`, read on its own). */
static inline int lp_slot_read(lp_thread_slot *s, lp_slot_state *out)
{
    for (int tries = 0; tries < 4; tries++) {
        uint32_t before = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (before & 1u) {
            continue;
        }
        out->phase = atomic_load_explicit(&s->phase, memory_order_relaxed);
        out->since_ns = atomic_load_explicit(&s->since_ns, memory_order_relaxed);
        out->prev_phase = atomic_load_explicit(&s->prev_phase, memory_order_relaxed);
        out->prev_since_ns = atomic_load_explicit(&s->prev_since_ns, memory_order_relaxed);
        out->prev_end_ns = atomic_load_explicit(&s->prev_end_ns, memory_order_relaxed);
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&s->seq, memory_order_relaxed) == before) {
            return 1;
        }
    }
    out->phase = atomic_load_explicit(&s->phase, memory_order_relaxed);
    out->prev_phase = -1;
    out->since_ns = out->prev_since_ns = out->prev_end_ns = 0;
    return 0;
}

typedef struct lp_phases_capi {
    int version; /* LP_PHASES_CAPI_VERSION */
    /* Node id of the innermost phase open in the main thread's current flow (with asyncio: the
     * task that entered or left a phase there last); -1 when none is open. _phases turns an id
     * back into a path (see its path_of()). */
    _Atomic int32_t *main_thread_phase;
    /* Bytes moved by the profiler's own writes (snapshots, sample files), in the order of
     * lp_io_counters' fields, so measurements can subtract them. Only ever grows. */
    _Atomic int64_t *own_io; /* LP_IO_FIELDS entries */
    /* Version 2: every thread that entered or left a phase of the primary recorder, one slot
     * each, freed when the stack it published from goes (a thread's ends with the thread). */
    lp_thread_slot *threads; /* LP_THREAD_SLOTS entries */
    /* Threads that found every slot taken: their phases are missing from the timeline. */
    _Atomic int64_t *threads_unpublished;
    /* In a forked child, with the GIL, from the thread that forked: frees every slot but the
     * calling thread's (the others' threads do not exist here). */
    void (*after_fork_child)(struct lp_phases_capi *api);
    /* Version 3: when main_thread_phase last changed (CLOCK_MONOTONIC ns; 0: not known), so a
     * resource sample can tell an interval spent wholly outside phases from one that crossed
     * a phase boundary. */
    _Atomic int64_t *main_thread_since_ns;
    /* Version 4: odd while the sampler thread has a read of its own in flight whose bytes are
     * not yet in own_io (the kernel adds them to rchar when the read returns, the sampler to
     * own_io just after). An io=True phase reads own_io and /proc/self/io between two equal,
     * even values, so such a read is in both or in neither. */
    _Atomic uint32_t *own_io_seq;
    /* Version 5: what the children the profiler itself started and reaped (git, for the source
     * commit) added to this process's page-fault counts of reaped children (cminflt + cmajflt
     * in /proc/self/stat), added just before each reap: the sampler takes it off its reap
     * fingerprint, so our own reap is not a reap of unknown I/O (whose interval it drops). */
    _Atomic int64_t *own_reaped_fingerprint;
} lp_phases_capi;

#endif /* LP_PHASES_CAPI_H */
