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
#define LP_PHASES_CAPI_VERSION 1

typedef struct {
    int version; /* LP_PHASES_CAPI_VERSION */
    /* Node id of the innermost phase open in the main thread's current flow (with asyncio: the
     * task that entered or left a phase there last); -1 when none is open. _phases turns an id
     * back into a path (see its path_of()). */
    _Atomic int32_t *main_thread_phase;
    /* Bytes moved by the profiler's own writes (snapshots, sample files), in the order of
     * lp_io_counters' fields, so measurements can subtract them. Only ever grows. */
    _Atomic int64_t *own_io; /* LP_IO_FIELDS entries */
} lp_phases_capi;

#endif /* LP_PHASES_CAPI_H */
