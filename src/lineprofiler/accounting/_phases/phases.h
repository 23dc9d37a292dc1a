/* The internal header of the _phases extension: its constants, its types, the functions its
 * files share, and the small helpers the phase hot path inlines.
 *
 * A Recorder owns one phase tree (per process: a fork child resets it). A Phase is a cached
 * C context manager, one per (name, io, sync), so steady state allocates nothing per `with`.
 * Open frames live on a stack per flow of control: one per contextvars.Context (a thread's own
 * context, each asyncio task's), kept as the value of a ContextVar; frames of several recorders
 * may interleave on it. A context's first phase makes its stack, which starts from the phases
 * open in the context it was copied from (its base frames), so a task nests under the phase that
 * was open where it started. Every mutation happens with the GIL held, so the tree needs no
 * lock; the sampler thread reads only the atomics published through the capsule (see
 * _phases_capi.h).
 *
 * Generations: a recorder's `gen` changes at stop, start and reset (the fork child). A frame
 * remembers the generation it was pushed in; a frame of an older generation is stale and is
 * popped without being recorded, which is what gives a fork child a clean phase stack without
 * touching the (copied) stacks of threads that no longer exist.
 *
 * Files, by idea: module.c (the module, its functions and state), recorder.c (the Recorder
 * type, names, hooks, errors), phase.c (the Phase type, enter and exit), stack.c (the stacks:
 * making, inheriting, the search for a frame another flow left open),
 * tree.c (nodes and paths), counters.c (count()), histogram.c (the bucket table),
 * snapshot.c (the tree as Python objects), own_io.c (/proc/self/io and the profiler's own
 * I/O), noop.c (the disabled profiler). */
#ifndef LP_PHASES_H
#define LP_PHASES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdatomic.h>
#include <stdint.h>

#include "_clock.h"
#include "_common.h"
#include "_procio.h"
#include "accounting/_phases_capi.h"

/* ===================================================================== constants */

/* The histogram scheme of runfiles/histogram.py: EDGES[k] = round(1000 * 2**((k - 40)/8)),
 * from 31 ns (EDGES[0]) through 1 us (EDGES[40]) to about 10^4 s. */
#define LP_BUCKETS_PER_DOUBLING 8
#define LP_ONE_US_NS            1000
#define LP_BELOW_1US            40
#define LP_LAST_EDGE            (266 + LP_BELOW_1US)
#define LP_N_BUCKETS            (LP_LAST_EDGE + 2)

#define LP_DEFAULT_MAX_PATHS    10000
#define LP_DEFAULT_MAX_COUNTERS 10000
#define LP_DEFAULT_MAX_DEPTH    256 /* path components; deeper entries go to the overflow node */
#define LP_MAX_MAX_DEPTH        100000
#define LP_MAX_ERRORS           32       /* error strings kept; the rest are only counted */
#define LP_MAX_ERROR_TEXT       500      /* characters of an exception's text an error keeps */
#define LP_MAX_FRAMES           100000   /* frames per stack before entries are dropped */
#define LP_MAX_INHERITED        8        /* recorders whose open frame a new stack inherits */
#define LP_NODE_CHUNK           64       /* nodes per allocation: node pointers never move */
#define LP_NAME_CACHE           64       /* direct-mapped name -> canonical name cache */
#define LP_PHASE_CACHE          128      /* direct-mapped (name, flags) -> Phase cache */
#define LP_COUNTER_CHUNK        64       /* counters per allocation: counter pointers never move */
#define LP_LIVE_NAME            200      /* UTF-8 bytes of a name kept in the live file */
#define LP_LIVE_HEADER          4096     /* the live file's header: identity and layout */
#define LP_LIVE_IDENTITY        2048     /* bytes of identity JSON the header keeps */
#define LP_LIVE_SEGMENT         64       /* a chunk's segment header in the live file */
#define LP_LIVE_VERSION         3        /* 3: the histogram reaches below 1 us */
#define LP_LIVE_FROZEN          1u       /* flags: the file stopped growing */
#define LP_LIVE_ALIVE_NS        10000000 /* alive_unix_ns is stamped at most every 10 ms */
#define LP_LIVE_SLOTS           1024     /* live files mapped at once per process */
#define LP_SEG_NODES            1
#define LP_SEG_COUNTERS         2
#define LP_SEG_TRACE            3 /* the trace block (spans.c): one segment, right after the header */
#define LP_ROOT                 0
#define LP_OVERFLOW             1

/* The trace (spans.c). Capacities are the caller's; these are the fixed parts of the block.
 * Threads: a thread-per-request server's thousands. A thread keeps its row for the trace's life
 * (the ring's spans name it), so the rows are a bound, not a cache: spans and links of threads
 * past it are counted only (spans_unthreaded, links_unthreaded). 88 bytes a row, 704 KiB of
 * address space in each copy of the block, of which only the rows used are touched; below 32768,
 * as an open entry keeps the thread in an int16. */
#define LP_TRACE_DEFAULT_SPANS 200000
#define LP_TRACE_DEFAULT_LINKS 50000
#define LP_TRACE_MAX_SPANS     50000000
#define LP_TRACE_MAX_LINKS     5000000
#define LP_TRACE_THREADS       8192  /* threads named in the block; later ones are counted only */
#define LP_TRACE_THREAD_HASH   16384 /* the thread lookup's slots: a power of two, twice the rows */
#define LP_TRACE_STACKS        256   /* flows whose open entries the live file shows */
#define LP_TRACE_OPEN_DEPTH    32    /* open entries per flow the live file shows */
#define LP_TRACE_TEXT          56    /* UTF-8 bytes of a link's channel and of its key */
#define LP_TRACE_THREAD_NAME   64
#define LP_TRACE_PAIRS         64 /* clock pairs kept: the first, then the newest */
#define LP_TRACE_HEADER        2048
#define LP_LINK_SIGNAL         0
#define LP_LINK_WAIT           1
#define LP_LINK_BEGIN          2 /* a request lifecycle's first checkpoint (trace_begin) */
#define LP_LINK_MARK           3 /* a named checkpoint: the channel text is "channel\x1fname" */
#define LP_LINK_END            4
#define LP_LINK_KINDS          5
#define LP_MARK_SEPARATOR      0x1F

/* A frame's t0 until its entry clock has been read: a snapshot that runs in between (possible
 * only while a test clock runs Python code) must not take the slot's old value for a start. */
#define LP_T0_PENDING INT64_MIN

#define LP_FLAG_IO   1
#define LP_FLAG_SYNC 2

/* Why a frame's entry went to the overflow node (lp_frame.over), so entries below it are
 * counted with the same cap. */
#define LP_OVER_PATHS 1
#define LP_OVER_DEPTH 2

/* ===================================================================== compatibility */

/* One exception object taken and put back; 3.11 has only the (type, value, traceback) triple. */
static inline PyObject *lp_err_take(void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException();
#else
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    if (type == NULL) {
        return NULL;
    }
    PyErr_NormalizeException(&type, &value, &tb);
    if (tb != NULL && value != NULL) {
        PyException_SetTraceback(value, tb);
    }
    Py_XDECREF(type);
    Py_XDECREF(tb);
    return value;
#endif
}

static inline void lp_err_restore(PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException(exc);
#else
    if (exc == NULL) {
        return;
    }
    PyObject *type = Py_NewRef((PyObject *)Py_TYPE(exc));
    PyObject *tb = PyException_GetTraceback(exc);
    PyErr_Restore(type, exc, tb);
#endif
}

/* ===================================================================== types */

/* The live file's records: plain data only, written by this process and never read back by
 * it, so whatever the file's bytes become (another process truncates, overwrites or copies over
 * it), the process's behaviour does not change. A record is a mirror of a private node or
 * counter, stored after each change; `seq` is odd while an entry is being added (a reader
 * retries or reports it in flight). */
typedef struct lp_live_node {
    uint32_t seq;
    int32_t id;
    int32_t parent;
    int32_t depth;
    int64_t entries;
    int64_t wall_ns;
    int64_t self_ns;
    int64_t cpu_ns;
    int64_t cpu_missing;
    int64_t min_ns;
    int64_t max_ns;
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    int64_t io_delta[LP_IO_FIELDS];
    int64_t io_measured;
    int64_t io_failed;
    uint64_t hist[LP_N_BUCKETS];
    uint16_t lname_len; /* the name's UTF-8 bytes, at most LP_LIVE_NAME */
    uint8_t lname_cut;  /* 1: the name was longer and is cut */
    char lname[LP_LIVE_NAME];
} lp_live_node;

typedef struct lp_live_counter {
    int32_t node;
    uint16_t lname_len;
    uint8_t lname_cut;
    int64_t total;
    char lname[LP_LIVE_NAME];
} lp_live_counter;

/* A node of the phase tree, in private memory (chunks: a node never moves). `live` is its
 * record in the live file while one is attached in this process. */
typedef struct lp_node {
    uint32_t seq; /* the record's sequence number, kept here so the record is never read */
    int32_t id;
    int32_t parent;
    PyObject *name; /* borrowed: the canonical name, owned by the recorder's names dict */
    PyObject *path; /* owned, built lazily */
    int64_t entries;
    int64_t wall_ns;
    int64_t self_ns;
    int64_t cpu_ns;
    int64_t cpu_missing; /* entries whose thread-CPU clock could not be read */
    int64_t min_ns;
    int64_t max_ns;
    uint8_t io;
    uint8_t sync;
    uint8_t overflow;
    int32_t depth; /* path components: 0 for the root, 1 for a top-level phase */
    int64_t io_delta[LP_IO_FIELDS];
    int64_t io_measured;
    int64_t io_failed;
    /* Entries still open, filled by each snapshot from every thread's stack (never added to
     * the totals above, which an entry joins only when it closes). */
    int64_t open_entries;
    int64_t open_ns;
    int64_t open_self_ns;
    lp_live_node *live;
    uint64_t hist[LP_N_BUCKETS];
} lp_node;

typedef struct {
    int32_t parent;
    int32_t node; /* -1: empty slot */
    PyObject *name;
} lp_child_slot;

typedef struct {
    int32_t node;
    PyObject *name;        /* borrowed canonical name */
    int64_t total;         /* one aligned store per count(): never torn */
    lp_live_counter *live; /* its record in the live file, or NULL */
} lp_counter;

/* The live file's first page. The reader takes every offset and size from here, so a layout
 * change is a new version only when the meaning of a field changes. */
typedef struct {
    char magic[8]; /* "LPLIVE\0\0" */
    uint32_t version;
    uint32_t header_bytes;
    uint32_t segment_bytes; /* a segment header */
    uint32_t node_bytes;
    uint32_t counter_bytes;
    uint32_t chunk_nodes;
    uint32_t chunk_counters;
    uint32_t n_buckets;
    uint32_t name_bytes;
    uint32_t measure_cpu;
    int64_t pid;
    int64_t created_unix_ns;
    /* published with release stores after the record is complete */
    int32_t n_nodes;
    int32_t n_counters;
    uint64_t epoch; /* bumped by reset(): a reader seeing it change starts over */
    /* offsets in lp_live_node */
    uint32_t off_seq, off_id, off_parent, off_entries, off_wall, off_self, off_cpu, off_cpu_missing;
    uint32_t off_min, off_max, off_io, off_sync, off_overflow, off_depth, off_io_delta, off_io_measured;
    uint32_t off_io_failed, off_hist, off_lname_len, off_lname_cut, off_lname;
    /* offsets in lp_live_counter */
    uint32_t coff_node, coff_total, coff_lname_len, coff_lname_cut, coff_lname;
    uint32_t identity_len;
    char identity[LP_LIVE_IDENTITY]; /* the process's identity as JSON, from Python */
    /* version 2 */
    uint32_t flags;        /* LP_LIVE_FROZEN */
    int64_t alive_unix_ns; /* wall clock of a recent phase exit: a sign of life after SIGKILL */
} lp_live_header;

/* The live file as this process keeps it: one reserved range of address space that the header
 * and the segments are mapped into, at the offsets they have in the file, so one range tells the
 * SIGBUS handler and the fork hook what is ours (see live.c). Private memory. */
typedef struct {
    int fd;     /* -1 while none is attached */
    long pid;   /* the process that attached it: a fork child never writes to it */
    int slot;   /* its entry in live.c's table of mapped ranges */
    int frozen; /* 1: it could not grow; later nodes and counters are in the snapshots only */
    char *base;
    size_t reserved;
    int64_t size; /* bytes of the file mapped so far */
    uint64_t epoch;
    int64_t alive_mono_ns; /* the monotonic time alive_unix_ns was last stamped at */
    lp_live_header *hdr;
    int32_t n_nodes;                   /* nodes with a record: a prefix of the tree */
    int32_t n_counters;                /* counters with a record: a prefix too */
    lp_live_node **node_records;       /* per node chunk: its records, or NULL */
    lp_live_counter **counter_records; /* per counter chunk */
    int32_t records_cap;               /* entries in each of the two arrays */
} lp_live;

typedef struct {
    PyObject *key;   /* strong: keeps the pointer from being reused by another object */
    PyObject *canon; /* borrowed from the names dict */
} lp_name_slot;

typedef struct {
    PyObject *key; /* strong */
    int flags;
    PyObject *phase; /* strong */
} lp_phase_slot;

/* The trace's records (spans.c). Each is written twice: into the recorder's private block,
 * which the snapshots read, and into the live file's copy, which this process only ever writes.
 * `seq` is the record's number + 1 (its low 32 bits), stored last: a reader takes a record only
 * when its seq is the one its slot must hold, so a record being overwritten is never half read. */
typedef struct {
    int64_t start_ns;
    int64_t end_ns;
    int64_t cpu_ns; /* -1: not measured */
    int32_t phase_id;
    int32_t thread;
    uint32_t seq;
    uint32_t pad;
} lp_span;

typedef struct {
    int64_t t_ns;
    uint32_t seq;
    int32_t thread;
    int32_t phase_id; /* -1: none open */
    uint8_t kind;     /* LP_LINK_SIGNAL ... LP_LINK_END */
    uint8_t channel_len;
    uint8_t key_len;
    uint8_t cut; /* 1: the channel was cut, 2: the key */
    char channel[LP_TRACE_TEXT];
    char key[LP_TRACE_TEXT];
} lp_link;

typedef struct {
    int64_t ident;
    int64_t native_id;
    uint32_t name_len;
    uint32_t seq; /* odd while the name is rewritten */
    char name[LP_TRACE_THREAD_NAME];
} lp_trace_thread;

typedef struct {
    int64_t start_ns;
    int32_t phase_id;
    int16_t thread;
    int16_t inherited; /* 1: a copy of another flow's entry, shown in that flow's table */
} lp_open_entry;

typedef struct {
    int32_t depth; /* entries open; those past LP_TRACE_OPEN_DEPTH are counted only */
    int32_t in_use;
    lp_open_entry entries[LP_TRACE_OPEN_DEPTH];
} lp_open_stack;

/* The block's first bytes: its layout (every offset from the block's start) and the counts. */
typedef struct {
    uint32_t magic; /* "LPTR" */
    uint32_t header_bytes;
    uint32_t span_bytes, link_bytes, thread_bytes, stack_bytes;
    uint32_t span_capacity, link_capacity, thread_capacity, stack_capacity, open_depth, text_bytes;
    uint32_t thread_name_bytes, pair_capacity;
    uint64_t off_threads, off_stacks, off_spans, off_links;
    int64_t recorded;       /* spans closed, ever: the newest is recorded - 1 */
    int64_t links_recorded; /* links made, ever */
    int64_t links_truncated;
    int64_t spans_unthreaded; /* spans of threads past LP_TRACE_THREADS: counted, not kept */
    int64_t stacks_unshown;   /* flows past LP_TRACE_STACKS: their open entries are not in the file */
    int32_t n_threads;
    int32_t n_pairs; /* clock pairs taken, ever */
    int64_t pairs[LP_TRACE_PAIRS][3];
    /* after the pairs, so a reader of the fields above finds them where they were */
    int64_t links_unthreaded; /* links of threads past LP_TRACE_THREADS: kept with thread -1 */
} lp_trace_header;

typedef struct lp_trace {
    uint64_t epoch; /* unique per process; a stack's open table is valid while it holds this */
    size_t bytes;   /* the block's size, header included */
    char *mem;      /* the private block (anonymous memory) */
    char *file;     /* its copy in the live file, or NULL */
    int64_t capacity;
    int64_t link_capacity;
    int64_t next;      /* the slot of the next span */
    int64_t next_link; /* the slot of the next link */
    lp_trace_header h; /* the private counts; the blocks' headers are copies, written only */
    uint64_t tkey;     /* the last thread's state id + 1 (0 none) */
    int32_t tidx;
    uint64_t thread_keys[LP_TRACE_THREADS];    /* per row: its thread state's id + 1 */
    int32_t thread_hash[LP_TRACE_THREAD_HASH]; /* open addressing on the key: a row + 1, 0 empty */
    uint8_t stack_used[LP_TRACE_STACKS];
    int32_t stack_hint;
} lp_trace;

struct lp_RecorderObject;
struct lp_StackObject;

typedef struct lp_state {
    PyTypeObject *recorder_type;
    PyTypeObject *phase_type;
    PyTypeObject *noop_type;
    PyTypeObject *noop_phase_type;
    PyTypeObject *stack_type;
    PyObject *noop_phase; /* the one disabled phase object */
    PyObject *stack_var;  /* ContextVar: the current context's stack (or the one it inherited) */
    int64_t edges[LP_LAST_EDGE + 1];
    int16_t bucket_start[64 * 8]; /* first candidate bucket per (log2, 3 mantissa bits) cell */
    _Atomic int32_t main_thread_phase;
    _Atomic int64_t main_thread_since_ns; /* when main_thread_phase last changed */
    _Atomic int64_t own_io[LP_IO_FIELDS];
    _Atomic uint32_t own_io_seq; /* see lp_phases_capi.own_io_seq */
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
    PyObject *names;     /* dict: user name -> canonical name */
    PyObject *phases[4]; /* dicts per flags: user name -> Phase */
    Py_ssize_t n_phases;
    PyObject *overflow_phase[4];
    lp_name_slot name_cache[LP_NAME_CACHE];
    lp_phase_slot phase_cache[LP_PHASE_CACHE];
    /* hooks (see set_sync / set_annotate / set_watch) */
    PyObject *sync_fn;
    PyObject *annotate_enter;
    PyObject *annotate_exit;
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

/* ===================================================================== shared between files */

extern struct PyModuleDef lp_phases_module;
extern PyType_Spec lp_recorder_spec;
extern PyType_Spec lp_phase_spec;
extern PyType_Spec lp_stack_spec;
extern PyType_Spec lp_noop_spec;
extern PyType_Spec lp_noop_phase_spec;

/* recorder.c */
void lp_record_error(lp_RecorderObject *rec, const char *where);
void lp_call_hook(lp_RecorderObject *rec, PyObject *fn, PyObject *arg, const char *where);
int64_t lp_py_clock(lp_RecorderObject *rec, PyObject *fn, const char *where);
PyObject *lp_canonical(lp_RecorderObject *rec, PyObject *name, int may_insert);
int lp_parse_phase_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames, PyObject **name,
                        int *flags);
int lp_check_callable(PyObject *fn, const char *what);

/* tree.c */
lp_node *lp_child_lookup(lp_RecorderObject *rec, int32_t parent, PyObject *canon);
void lp_tree_free(lp_RecorderObject *rec);
int lp_tree_init(lp_RecorderObject *rec);
PyObject *lp_node_path(lp_RecorderObject *rec, int32_t id);

/* live.c */
void lp_live_node_added(lp_RecorderObject *rec, lp_node *node);
void lp_live_counter_added(lp_RecorderObject *rec, lp_counter *c);
void lp_live_chunk_added(lp_RecorderObject *rec, int kind, int32_t index);
void lp_live_node_sync(lp_node *node);
void lp_live_stamp_alive(lp_RecorderObject *rec, int64_t mono_ns);
void lp_live_before_reset(lp_RecorderObject *rec);
void lp_live_detach(lp_RecorderObject *rec);
int lp_live_check(lp_RecorderObject *rec);
int lp_live_mine(lp_RecorderObject *rec);
PyObject *lp_recorder_live_attach(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_live_detach(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_get_live(lp_RecorderObject *self, void *c);
PyObject *lp_mod_live_ranges(PyObject *module, PyObject *ignored);

/* counters.c */
PyObject *lp_recorder_count(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwnames);

/* snapshot.c */
PyObject *lp_recorder_snapshot(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_path_of(lp_RecorderObject *self, PyObject *arg);
PyObject *lp_recorder_current_path(lp_RecorderObject *self, PyObject *ignored);

/* histogram.c */
void lp_init_edges(lp_state *st);
PyObject *lp_mod_bucket_edges(PyObject *module, PyObject *ignored);
PyObject *lp_mod_bucket_index(PyObject *module, PyObject *arg);

/* own_io.c */
void lp_io_init(lp_state *st);
void lp_io_close(lp_state *st);
int lp_io_now(lp_state *st, lp_io_counters *out, int count_own);
PyObject *lp_io_dict(const int64_t *v);
PyObject *lp_mod_read_io(PyObject *module, PyObject *ignored);
int lp_io_measure(lp_state *st, int64_t *own, lp_io_counters *out);
PyObject *lp_mod_own_io_begin(PyObject *module, PyObject *ignored);
PyObject *lp_mod_own_io_end(PyObject *module, PyObject *token);
PyObject *lp_mod_own_io(PyObject *module, PyObject *ignored);
PyObject *lp_mod_set_io_path(PyObject *module, PyObject *arg);

/* stack.c */
lp_StackObject *lp_stack_create(lp_state *st, PyThreadState *tstate, lp_StackObject *parent);
int lp_grow_frames(lp_StackObject *ts);
lp_StackObject *lp_stack_find_open(lp_state *st, lp_PhaseObject *phase, lp_StackObject *skip, int32_t *idx);
lp_frame *lp_origin_frame(lp_frame *base);
void lp_credit_origin(lp_frame *base, int64_t d);

/* threads.c */
void lp_threads_init(lp_state *st);
void lp_thread_publish_slow(lp_state *st, PyThreadState *tstate, struct lp_StackObject *ts, int32_t node_id,
                            int64_t now_ns);
void lp_threads_stack_changed(lp_state *st, struct lp_StackObject *ts, int32_t node_id, int64_t now_ns);
void lp_threads_stack_gone(lp_state *st, struct lp_StackObject *ts);
void lp_threads_clear(lp_state *st);

/* spans.c */
void lp_trace_free(lp_RecorderObject *rec);
void lp_trace_reset(lp_RecorderObject *rec);
void lp_trace_forget_stacks(lp_RecorderObject *rec);
size_t lp_trace_block_bytes(lp_RecorderObject *rec);
void lp_trace_to_file(lp_RecorderObject *rec, char *block);
void lp_trace_from_file(lp_RecorderObject *rec);
int32_t lp_trace_thread_slow(lp_RecorderObject *rec, PyThreadState *tstate);
void lp_trace_enter(lp_RecorderObject *rec, lp_StackObject *ts, int32_t idx, int32_t parent_idx,
                    int32_t thread);
void lp_trace_stack_sync(lp_RecorderObject *rec, lp_StackObject *ts, int may_claim);
void lp_trace_stack_gone(lp_state *st, lp_StackObject *ts);
PyObject *lp_recorder_trace_enable(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_trace_link(lp_RecorderObject *self, PyObject *const *args, Py_ssize_t nargs);
PyObject *lp_recorder_trace_clock_pair(lp_RecorderObject *self, PyObject *ignored);
PyObject *lp_recorder_trace_snapshot(lp_RecorderObject *self, PyObject *args, PyObject *kwargs);
PyObject *lp_recorder_get_tracing(lp_RecorderObject *self, void *c);

/* noop.c */
int lp_noop_init(PyObject *module, lp_state *st);

/* ===================================================================== inline helpers */

static inline lp_state *lp_get_state(PyObject *module)
{
    return (lp_state *)PyModule_GetState(module);
}

/* bisect_right(EDGES, ns): the number of edges <= ns. */
LP_INLINE int lp_bucket(const lp_state *st, int64_t ns)
{
    if (ns < st->edges[0]) {
        return 0;
    }
    if (ns >= st->edges[LP_LAST_EDGE]) {
        return LP_LAST_EDGE + 1;
    }
    int l = 63 - __builtin_clzll((unsigned long long)ns);
    int m = (int)(((uint64_t)ns >> (l - 3)) & 7u); /* ns >= 31, so l >= 4 */
    int b = st->bucket_start[l * 8 + m];
    while (b <= LP_LAST_EDGE && ns >= st->edges[b]) {
        b++;
    }
    return b;
}

LP_INLINE int64_t lp_wall(lp_RecorderObject *rec)
{
    if (LP_UNLIKELY(rec->clock_fn != NULL)) {
        int64_t v = lp_py_clock(rec, rec->clock_fn, "clock");
        return v >= 0 ? v : lp_monotonic_ns();
    }
    return lp_monotonic_ns();
}

/* Thread CPU time: CLOCK_THREAD_CPUTIME_ID is a real system call (about 530 ns here, more on a
 * busy host), so it is read only when measure_cpu is on. A perf_event task-clock read from its
 * mmap page was measured as an alternative: this kernel does not set cap_user_time, and
 * extrapolating between context switches drifted from the real clock by up to 7 % (steal and
 * IRQ time), so it was not kept (see docs/accounting.md). */
LP_INLINE int64_t lp_cpu(lp_RecorderObject *rec)
{
    if (LP_UNLIKELY(rec->cpu_clock_fn != NULL)) {
        return lp_py_clock(rec, rec->cpu_clock_fn, "cpu_clock");
    }
    return lp_thread_cpu_ns();
}

/* Two boundaries of one thread less than this apart share one read of its CPU clock: the later
 * takes the earlier's value plus the wall time between them. A thread that is running Python
 * code on both sides of an interval this short was running in between (a descheduling lasts
 * far longer), so the error is at most this much, and only towards counting time as CPU. It
 * spares a system call where an exit is followed at once by the next entry. */
#define LP_CPU_SHARE_NS 1000

/* The thread CPU clock for a boundary on stack `ts` at wall time `*wall` (just read).
 *
 * A real read is a system call, and on a busy host the return from one is where the kernel
 * deschedules a thread whose time slice the code before it used up (lazy preemption defers it to
 * there): milliseconds that belong to the code before the boundary, the phase ending at an exit
 * or the parent at an entry. So after a real read the boundary moves to where the read returned:
 * `*wall` becomes that time (a test's wall clock is left as read: its sequence is exact). */
LP_INLINE int64_t lp_cpu_at(lp_RecorderObject *rec, lp_StackObject *ts, const PyThreadState *tstate,
                            int64_t *wall)
{
    if (LP_UNLIKELY(rec->cpu_clock_fn != NULL)) {
        return lp_cpu(rec); /* a test's CPU clock: every boundary reads it */
    }
    int64_t since = *wall - ts->cpu_read_wall;
    if (ts->cpu_read_tstate == tstate && since >= 0 && since < LP_CPU_SHARE_NS) {
        return ts->cpu_read + since;
    }
    int64_t cpu = lp_thread_cpu_ns();
    rec->cpu_clock_reads++;
    if (cpu >= 0) {
        ts->cpu_read = cpu;
        /* The window starts when the system call has returned (the clock was read inside it);
         * a test's wall clock is not read twice, its sequence is exact. */
        ts->cpu_read_wall = LP_LIKELY(rec->clock_fn == NULL) ? lp_monotonic_ns() : *wall;
        ts->cpu_read_tstate = tstate;
        *wall = ts->cpu_read_wall;
    }
    return cpu;
}

static inline void lp_own_io_load(lp_state *st, int64_t *out)
{
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        out[i] = atomic_load_explicit(&st->own_io[i], memory_order_relaxed);
    }
}

static inline void lp_io_to_array(const lp_io_counters *c, int64_t *a)
{
    a[0] = c->rchar;
    a[1] = c->wchar;
    a[2] = c->read_bytes;
    a[3] = c->write_bytes;
    a[4] = c->cancelled_write_bytes;
}

static inline lp_node *lp_node_at(lp_RecorderObject *rec, int32_t id)
{
    return &rec->chunks[id / LP_NODE_CHUNK][id % LP_NODE_CHUNK];
}

static inline lp_counter *lp_counter_at(lp_RecorderObject *rec, int32_t i)
{
    return &rec->cchunks[i / LP_COUNTER_CHUNK][i % LP_COUNTER_CHUNK];
}

/* Makes the records made so far visible to a reader of the live file. */
static inline void lp_live_publish(lp_RecorderObject *rec)
{
    if (rec->live.hdr != NULL) {
        __atomic_store_n(&rec->live.hdr->n_nodes, rec->live.n_nodes, __ATOMIC_RELEASE);
        __atomic_store_n(&rec->live.hdr->n_counters, rec->live.n_counters, __ATOMIC_RELEASE);
    }
}

static inline uint32_t lp_hash2(int32_t a, const void *p)
{
    uint64_t h = ((uint64_t)(uintptr_t)p >> 4) * 0x9E3779B97F4A7C15ull;
    h ^= (uint64_t)(uint32_t)a * 0xC2B2AE3D27D4EB4Full;
    return (uint32_t)(h >> 32);
}

/* This context's own stack, or NULL when it has none (no exception set); then *inherited is
 * the stack it sees through the ContextVar (another context's, copied into it) or NULL. The
 * ContextVar read is CPython's cached path while the context does not change; the stack is
 * borrowed: the current context holds it. */
static inline void lp_stack_cache(lp_state *st, PyThreadState *tstate, lp_StackObject *ts, int own)
{
    st->cache_own = own;
    st->cache_stack = ts;
    st->cache_tsid = tstate->id;
    st->cache_ver = tstate->context_ver;
}

LP_INLINE lp_StackObject *lp_stack_own(lp_state *st, PyThreadState *tstate, lp_StackObject **inherited)
{
    lp_StackObject *ts;
    int own;
    if (LP_LIKELY(tstate->id == st->cache_tsid && tstate->context_ver == st->cache_ver)) {
        ts = st->cache_stack;
        own = st->cache_own;
    } else {
        PyObject *v;
        if (LP_UNLIKELY(PyContextVar_Get(st->stack_var, NULL, &v) < 0)) {
            PyErr_Clear();
            v = NULL;
        }
        Py_XDECREF(v); /* the current context holds it */
        ts = (lp_StackObject *)v;
        own = ts != NULL && ts->owner == tstate->context;
        lp_stack_cache(st, tstate, ts, own);
    }
    if (LP_LIKELY(own)) {
        return ts;
    }
    *inherited = ts;
    return NULL;
}

/* The stack whose frames say what is open for the current flow: its own, else the one it
 * inherited (read only), else NULL. For count(), current_path(), make_primary(). */
LP_INLINE lp_StackObject *lp_stack_view(lp_state *st)
{
    lp_StackObject *inherited = NULL;
    lp_StackObject *ts = lp_stack_own(st, PyThreadState_Get(), &inherited);
    return ts != NULL ? ts : inherited;
}

/* Publishes the calling thread's innermost phase for the sampler: one compare and two stores
 * while the same thread keeps its slot. */
LP_INLINE void lp_thread_publish(lp_state *st, PyThreadState *tstate, lp_StackObject *ts, int32_t node_id,
                                 int64_t now_ns)
{
    uint64_t key = (uint64_t)tstate->id + 1;
    if (LP_LIKELY(st->pub_key == key)) {
        lp_thread_slot *slot = &st->threads[st->pub_slot];
        if (LP_LIKELY(atomic_load_explicit(&slot->owner, memory_order_relaxed) == key)) {
            st->slot_stack[st->pub_slot] = ts;
            lp_slot_set(slot, node_id, now_ns);
            return;
        }
    }
    lp_thread_publish_slow(st, tstate, ts, node_id, now_ns);
}

/* The main thread's innermost phase, and since when (CLOCK_MONOTONIC ns), for the sampler. */
LP_INLINE void lp_set_main_phase(lp_state *st, int32_t node_id, int64_t now_ns)
{
    if (atomic_load_explicit(&st->main_thread_phase, memory_order_relaxed) == node_id) {
        return; /* no change: it has held since the time already there */
    }
    atomic_store_explicit(&st->main_thread_since_ns, now_ns, memory_order_relaxed);
    atomic_store_explicit(&st->main_thread_phase, node_id, memory_order_relaxed);
}

/* A boundary's time for the sampler: the entry's or exit's own clock read, unless a test
 * clock (another time base) stands in for the monotonic clock. */
LP_INLINE int64_t lp_published_ns(const lp_RecorderObject *rec, int64_t wall_ns)
{
    return LP_LIKELY(rec->clock_fn == NULL) ? wall_ns : lp_monotonic_ns();
}

/* The first frame pushed above the base holds the owner; the last one popped lets it go. The
 * caller keeps the stack alive: letting go of a context that is not the current one can free
 * it, and with it the stack. */
static inline void lp_stack_settle(lp_StackObject *ts)
{
    if (ts->depth > ts->n_base) {
        if (!ts->owner_held) {
            Py_INCREF(ts->owner);
            ts->owner_held = 1;
        }
    } else if (ts->owner_held) {
        ts->owner_held = 0;
        Py_DECREF(ts->owner);
    }
}

/* Index of the innermost live frame of `rec` at or below `from`, or -1. */
static inline int32_t lp_find_live(lp_StackObject *ts, lp_RecorderObject *rec, int32_t from)
{
    for (int32_t i = from; i >= 0; i--) {
        if (ts->frames[i].phase->rec == rec && ts->frames[i].gen == rec->gen) {
            return i;
        }
    }
    return -1;
}

/* ===================================================================== the trace's hot path */

/* The calling thread's index in the trace's thread table (-1: the table is full). */
LP_INLINE int32_t lp_trace_thread_of(lp_RecorderObject *rec, PyThreadState *tstate)
{
    lp_trace *tr = rec->trace;
    if (LP_LIKELY(tr->tkey == (uint64_t)tstate->id + 1)) {
        return tr->tidx;
    }
    return lp_trace_thread_slow(rec, tstate);
}

static inline void lp_span_store(lp_span *s, int64_t start, int64_t end, int64_t cpu, int32_t phase_id,
                                 int32_t thread, uint32_t seq)
{
    __atomic_store_n(&s->seq, 0u, __ATOMIC_RELAXED);
    __atomic_thread_fence(__ATOMIC_RELEASE);
    s->start_ns = start;
    s->end_ns = end;
    s->cpu_ns = cpu;
    s->phase_id = phase_id;
    s->thread = thread;
    __atomic_store_n(&s->seq, seq, __ATOMIC_RELEASE);
}

/* One closed entry into the ring (and its copy in the live file): a few stores, no call. */
LP_INLINE void lp_trace_span(lp_trace *tr, int64_t start, int64_t end, int64_t cpu, int32_t phase_id,
                             int32_t thread)
{
    int64_t n = tr->h.recorded + 1;
    int64_t slot = tr->next;
    tr->next = slot + 1 == tr->capacity ? 0 : slot + 1;
    size_t off = (size_t)tr->h.off_spans + (size_t)slot * sizeof(lp_span);
    lp_span_store((lp_span *)(tr->mem + off), start, end, cpu, phase_id, thread, (uint32_t)n);
    tr->h.recorded = n;
    ((lp_trace_header *)tr->mem)->recorded = n;
    if (tr->file != NULL) {
        lp_span_store((lp_span *)(tr->file + off), start, end, cpu, phase_id, thread, (uint32_t)n);
        __atomic_store_n(&((lp_trace_header *)tr->file)->recorded, n, __ATOMIC_RELEASE);
    }
}

/* The stack's open table after its entry at `level` closed (the fast exit). */
LP_INLINE void lp_trace_popped(lp_RecorderObject *rec, lp_StackObject *ts, int32_t level)
{
    lp_trace *tr = rec->trace;
    if (tr->file != NULL && ts->trace_epoch == tr->epoch && ts->trace_slot >= 0 && level >= 0) {
        lp_open_stack *os = (lp_open_stack *)(tr->file + tr->h.off_stacks) + ts->trace_slot;
        __atomic_store_n(&os->depth, level, __ATOMIC_RELEASE);
    }
}

#endif /* LP_PHASES_H */
