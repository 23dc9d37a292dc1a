/* The module's state and its Python objects: Recorder, Phase, the per-flow Stack and its frames,
 * the disabled profiler. */
#ifndef LP_PHASES_OBJECTS_H
#define LP_PHASES_OBJECTS_H

#include "tree.h"
#include "trace.h"

typedef struct {
    PyObject *key;   /* strong: keeps the pointer from being reused by another object */
    PyObject *canon; /* borrowed from the names dict */
} lp_name_slot;

typedef struct {
    PyObject *key; /* strong */
    int flags;
    PyObject *phase; /* strong */
} lp_phase_slot;

struct lp_RecorderObject;
struct lp_StackObject;

typedef struct lp_state {
    PyTypeObject *recorder_type;
    PyTypeObject *phase_type;
    PyTypeObject *noop_type;
    PyTypeObject *noop_phase_type;
    PyTypeObject *stack_type;
    PyTypeObject *auto_tracer_type;
    PyObject *noop_phase; /* the one disabled phase object */
    PyObject *stack_var;  /* ContextVar: the current context's stack (or the one it inherited) */
    int64_t edges[LP_LAST_EDGE + 1];
    int16_t bucket_start[64 * 8]; /* first candidate bucket per (log2, 3 mantissa bits) cell */
    _Atomic int32_t main_thread_phase;
    _Atomic int64_t main_thread_since_ns; /* when main_thread_phase last changed */
    _Atomic int64_t own_io[LP_IO_FIELDS];
    _Atomic uint32_t own_io_seq;            /* see lp_phases_capi.own_io_seq */
    _Atomic int64_t own_reaped_fingerprint; /* see lp_phases_capi.own_reaped_fingerprint */
    lp_phases_capi capi;
    int io_fd;
    unsigned io_fork_generation;
    char io_path[256];
    unsigned long main_ident;
    PyThreadState *main_tstate; /* borrowed; NULL until seen; the main thread's, as main_ident says */
    /* The stack the main thread entered or left a phase on last (borrowed; cleared by its
     * dealloc): the one whose innermost phase main_thread_phase shows. */
    struct lp_StackObject *main_stack;
    /* The last stack lookup (cache_stack borrowed, maybe NULL; cache_own: it is the context's
     * own), valid while the thread of that id (never reused; 0 is none: ids start at 1) has not
     * switched context since: CPython bumps context_ver at every switch, and this ContextVar
     * changes only in lp_stack_create, which refills it. The check CPython's own ContextVar
     * cache makes, without the call. */
    int cache_own;
    struct lp_StackObject *cache_stack;
    uint64_t cache_tsid;
    uint64_t cache_ver;
    struct lp_RecorderObject *primary; /* borrowed; cleared by the recorder's dealloc */
    /* Every live stack (borrowed; each unlinks itself in its dealloc), so a snapshot taken
     * from another thread can see the entries still open. Changed only under the GIL. */
    struct lp_StackObject *stacks;
    /* Every thread's innermost phase, for the sampler's timeline (threads.c): the slots the
     * capsule shares, the stack each slot last published from (borrowed, GIL only), and the
     * last thread's slot (pub_key: its thread state's id + 1; 0 none). */
    lp_thread_slot threads[LP_THREAD_SLOTS];
    struct lp_StackObject *slot_stack[LP_THREAD_SLOTS];
    _Atomic int64_t threads_unpublished;
    uint64_t pub_key;
    int32_t pub_slot;
    struct lp_RecorderObject *tracer; /* borrowed: the recorder whose tracing started last, or NULL */
    uint64_t trace_epochs;            /* the last epoch given to a trace (spans.c) */
    PyObject *overflow_name;          /* "(overflow)": the node and counter past the caps */
    PyObject *slash;
    PyObject *underscore;
} lp_state;

typedef struct lp_PhaseObject {
    PyObject_HEAD
    struct lp_RecorderObject *rec; /* strong */
    PyObject *name;                /* the user's name as given (strong) */
    PyObject *canon;               /* canonical name (strong) */
    uint8_t io;
    uint8_t sync;
    uint8_t gpu; /* entries call the GPU event hooks (set_gpu) */
    uint8_t overflow;
    uint8_t watched;
    uint8_t slow; /* anything beyond the plain path: io, hooks, test clocks */
    uint64_t cache_gen;
    int32_t cache_parent;
    lp_node *cache_node;
} lp_PhaseObject;

typedef struct lp_RecorderObject {
    PyObject_HEAD
    lp_state *st;
    PyObject *module; /* strong: keeps st alive */
    int active;
    uint64_t gen;
    int measure_cpu;
    int32_t max_paths;
    int32_t max_counters;
    int32_t max_depth;
    /* the tree */
    lp_node **chunks;
    int32_t n_chunks;
    int32_t chunk_cap;
    int32_t n_nodes;
    lp_child_slot *child;
    uint32_t child_mask;
    int32_t child_used;
    /* counters, in chunks */
    lp_counter **cchunks;
    int32_t n_cchunks;
    int32_t cchunk_cap;
    int32_t n_counters;
    lp_live live;           /* the live file, when one is attached */
    int32_t *counter_slots; /* index + 1; 0 is empty */
    uint32_t counter_mask;
    /* names and phase objects */
    PyObject *names;                /* dict: user name -> canonical name */
    PyObject *phases[LP_FLAG_SETS]; /* dicts per flags: user name -> Phase */
    Py_ssize_t n_phases;
    PyObject *overflow_phase[LP_FLAG_SETS];
    lp_name_slot name_cache[LP_NAME_CACHE];
    lp_phase_slot phase_cache[LP_PHASE_CACHE];
    /* hooks (see set_sync / set_annotate / set_watch) */
    PyObject *sync_fn;
    PyObject *annotate_enter;
    PyObject *annotate_exit;
    PyObject *gpu_enter; /* called with the name around a gpu=True phase */
    PyObject *gpu_exit;
    PyObject *watch_name;
    PyObject *watch_fn;
    int64_t watch_count;
    /* injectable clocks, for tests that check the arithmetic exactly */
    PyObject *clock_fn;
    PyObject *cpu_clock_fn;
    /* health */
    int64_t mismatched_exits;
    int64_t stale_exits;
    int64_t paths_overflowed;
    int64_t depth_overflowed;
    int64_t counters_overflowed;
    int64_t dropped_entries;
    int64_t cross_stack_exits;
    int64_t callback_errors;
    int64_t errors_dropped;
    int64_t cpu_clock_reads; /* real reads of the thread CPU clock at boundaries (lp_cpu_at) */
    PyObject *errors;        /* list of str, at most LP_MAX_ERRORS */
    int64_t own_subtracted[LP_IO_FIELDS];
    struct lp_trace *trace; /* the spans and links, while tracing (spans.c); NULL: off */
} lp_RecorderObject;

typedef struct {
    lp_PhaseObject *phase; /* strong */
    lp_node *node;
    uint64_t gen;
    int32_t parent; /* index of the frame of the same recorder below, -1 none */
    int32_t node_id;
    int32_t scratch; /* used only while repairing a stack */
    int64_t t0;
    int64_t cpu0;
    int64_t child_ns;
    int64_t snap_child; /* a snapshot's scratch: open time of the direct child frames */
    int io_ok;
    uint8_t over; /* LP_OVER_*; set only when node is the overflow node */
    lp_io_counters io0;
    int64_t own0[LP_IO_FIELDS];
    /* Base frames only: the frame of another stack this one copies (strong), and its index there
     * when copied; child time is added to it while it is still open (see lp_credit_origin). */
    struct lp_StackObject *origin;
    int32_t origin_idx;
    /* The trace: the thread that opened the entry (its index in the trace's thread table, -1:
     * the entry is not traced) and the entry's level among this recorder's open entries of the
     * stack (its place in the stack's open table in the live file). */
    int32_t tthread;
    int32_t tlevel;
} lp_frame;

typedef struct lp_StackObject {
    PyObject_HEAD
    lp_state *st;
    /* The context this stack belongs to, compared by identity. Strong while a frame above the
     * base is open (owner_held), so a context that dies with an entry open cannot be mistaken
     * for a new one at the same address; borrowed otherwise, so the stack never keeps a context
     * and its variables alive after the flow has left its phases. */
    PyObject *owner;
    int owner_held;
    lp_frame *frames;
    int32_t depth;
    int32_t n_base; /* frames[0, n_base): inherited from another stack, read-only here */
    int32_t cap;
    int64_t dropped; /* entries refused (frame cap, no memory); their exits are not mismatches */
    /* The last real read of the thread CPU clock at a boundary of this stack: its value, the
     * wall time when it returned and the thread that made it (see lp_cpu_at). */
    int64_t cpu_read;
    int64_t cpu_read_wall;
    const PyThreadState *cpu_read_tstate;
    /* Its open table in the tracer's live file (-1 none), valid while trace_epoch is the
     * trace's epoch (see spans.c). */
    int32_t trace_slot;
    uint64_t trace_epoch;
    struct lp_StackObject *prev; /* the module state's list of live stacks */
    struct lp_StackObject *next;
} lp_StackObject;

typedef struct {
    PyObject_HEAD
    PyObject *phase; /* Noop: the module's one NoopPhase (strong); NoopPhase: NULL */
} lp_NoopObject;

#endif /* LP_PHASES_OBJECTS_H */
