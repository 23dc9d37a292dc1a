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
#define LP_PHASES_CAPI_VERSION 2

/* Threads whose innermost phase is published at once; more are counted, not shown. */
#define LP_THREAD_SLOTS 64

/* One thread's innermost open phase (of the primary recorder). _phases writes a slot under the
 * GIL (owner last when claiming, first when freeing); the sampler thread reads it without. */
typedef struct {
    _Atomic uint64_t owner; /* the thread state's id + 1 (see threads.c); 0: a free slot */
    _Atomic int64_t tid;    /* the OS thread id, for the record */
    _Atomic int32_t phase;  /* node id of its innermost open phase; -1 none */
} lp_thread_slot;

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
} lp_phases_capi;

#endif /* LP_PHASES_CAPI_H */
