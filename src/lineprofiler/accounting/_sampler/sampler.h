/* lineprofiler.accounting._sampler: the resource sampler of the accounting layer. Internal header.
 *
 * A native thread that, once per interval, reads /proc/self/statm (RSS), /proc/self/smaps_rollup
 * (PSS: shared pages divided among the processes that map them), /proc/self/io (five byte
 * counters) and /proc/self/stat (a fingerprint of reaped children) through descriptors kept
 * open (pread at offset 0), stamps the row with CLOCK_MONOTONIC, the phase open in the main
 * thread (from _phases' capsule) and the profiler's own I/O so far, adds NVML's per-device
 * columns, and stores it in a fixed-size ring. Python drains the ring as little-endian int64 rows
 * (the sample file's format) at each snapshot. The thread never takes the GIL.
 *
 * Rows hold -1 for a value that could not be read: "could not measure", never zero.
 *
 * The timeline (timeline.c): at its own rate (timeline_hz), the same thread reads the innermost
 * phase of every thread that published one (_phases' slots) into a second ring of rows
 * (t_ns, tid, phase). A tick the thread could not keep is counted and leaves a marker row
 * (tid -1, phase = ticks missed), never a stretched interval.
 *
 * The files: proc.c opens the descriptors and NVML and reads one row; thread.c is the ring, the
 * tick and the thread; timeline.c the timeline's ring and tick; sampler_type.c is the Python
 * type, stats.c what its stats() reports, module.c the module.
 *
 * Concurrency: every method runs with the GIL held and never releases it, so methods never run
 * concurrently with each other; the only other party is the sampler thread, which takes
 * tick_lock for a whole tick (reads and ring write, so rows stay in time order) and ring_lock
 * for the ring write. stop() joins the thread with the GIL held: the thread needs no GIL, so this
 * cannot deadlock, and keeping the GIL means no other method can run while the join is under way.
 *
 * Fork: a sampler lock is only ever held by the sampler thread for one tick (it waits on nothing
 * but these locks and never on the GIL) or by a method, from start to end, under the GIL. So a
 * method holding the GIL waits on a lock for at most one tick, and never on a thread that waits
 * for the GIL. before_fork() stops the thread and takes no lock: at fork(), which runs with the
 * GIL held, no lock is held, and none is held across the Python code the fork hooks run.
 */
#ifndef LP_SAMPLER_H
#define LP_SAMPLER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "_common.h"
#include "_procio.h"
#include "accounting/_nvml.h"
#include "accounting/_phases_capi.h"

/* ===================================================================== row layout */

enum {
    LP_COL_T = 0,                          /* CLOCK_MONOTONIC ns */
    LP_COL_FLAGS = 1,                      /* LP_ROW_* bits */
    LP_COL_PHASE = 2,                      /* main thread's innermost phase node id; -1 none or unknown */
    LP_COL_RSS = 3,                        /* bytes; -1 not measured */
    LP_COL_IO = 4,                         /* LP_IO_FIELDS cumulative counters; all -1 when the read failed */
    LP_COL_OWN = LP_COL_IO + LP_IO_FIELDS, /* the profiler's own I/O so far, same order */
    LP_COL_PSS = LP_COL_OWN + LP_IO_FIELDS, /* bytes, from smaps_rollup; -1 not measured */
    LP_COL_PHASE_SINCE = LP_COL_PSS + 1,    /* when LP_COL_PHASE's value was set (monotonic ns); 0 unknown */
    LP_BASE_COLS = LP_COL_PHASE_SINCE + 1,
    LP_MAX_COLS = LP_BASE_COLS + 2 * LP_NVML_MAX_DEVICES,
};

/* Row flags. An interval ends at a row; the reader drops it when the row carries any of these. */
#define LP_ROW_SEGMENT_START 1 /* first row after a (re)start: nothing to difference against */
#define LP_ROW_CHILD_REAPED  2 /* a child was reaped: its I/O was folded into ours */
#define LP_ROW_REAP_UNKNOWN  4 /* /proc/self/stat unreadable here or in the row before */

#define LP_DEFAULT_IO_PATH    "/proc/self/io"
#define LP_DEFAULT_STATM_PATH "/proc/self/statm"
#define LP_DEFAULT_STAT_PATH  "/proc/self/stat"
#define LP_DEFAULT_SMAPS_PATH "/proc/self/smaps_rollup"
#define LP_REASON_LEN         256
/* smaps_rollup walks the page tables of every mapping under the process's mmap lock: about
 * 30 ms per GiB resident (benchmarks/bench_pss.py). The next read waits this many times as
 * long as the last one took, so PSS costs at most 0.5 % of one core and of the lock's time;
 * rows in between say "not measured". */
#define LP_PSS_BUDGET   200
#define LP_MAX_CAPACITY (1 << 24)

/* Timeline rows: (t_ns, tid, phase). tid 0: no thread was in a phase (phase -1); tid -1: a
 * marker for ticks the thread could not keep (phase holds how many). */
#define LP_TL_COLS        7    /* t_ns, tid, phase, since_ns, prev_phase, prev_since_ns, prev_end_ns */
#define LP_TL_CAPACITY    8192 /* rows: 200 KiB, about 13 minutes of one thread at 10 Hz */
#define LP_TL_TID_NONE    0
#define LP_TL_TID_SKIPPED (-1)
#define LP_TL_MAX_HZ      1000.0

/* Why threads were off CPU (sched.c): per phase node, these ns. */
enum {
    LP_SCHED_ELAPSED,
    LP_SCHED_ON_CPU,
    LP_SCHED_RUNQUEUE,
    LP_SCHED_THROTTLED,
    LP_SCHED_BLOCKED,
    LP_SCHED_FIELDS
};
/* Phase nodes beyond this are counted as unattributed (the recorder's max_paths is lower). */
#define LP_SCHED_MAX_NODES (1 << 20)

/* Blocked time attributed in a thread's last intervals that a later run-queue figure may show
 * to have been a wait for a CPU (schedstat credits a wait when it ends). */
#define LP_SCHED_RECENT 8

/* One slot's thread as sched.c last read it. */
typedef struct {
    int32_t recent_node[LP_SCHED_RECENT];
    int64_t recent_blocked[LP_SCHED_RECENT];
    int recent_next;
    int64_t tid;                           /* 0: none yet */
    int fd;                                /* its /proc/self/task/<tid>/schedstat, kept open; -1 */
    int64_t t_ns;                          /* when last read; 0: no baseline */
    int64_t cpu_ns, wait_ns, throttled_ns; /* then: schedstat's two times, the cgroup's throttled (-1) */
} lp_sched_thread;

/* A thread the timeline saw at a tick. */
typedef struct {
    int slot;
    int64_t tid;
    lp_slot_state state;
    int state_read; /* 0: only state.phase is known */
} lp_sched_seen;

/* ===================================================================== the core */

/* Everything the thread touches, in one malloc'd block owned by the Python object. */
typedef struct {
    /* Configuration, fixed at construction. */
    int64_t interval_ns;
    Py_ssize_t capacity;
    char *io_path;
    char *statm_path;
    char *stat_path;
    char *smaps_path;
    char *cpu_stat_path; /* the cgroup's cpu.stat; NULL: none found */
    int want_nvml;

    /* Opened at start (again in a forked child). */
    int opened;
    int closed;
    pid_t pid;
    int io_fd, statm_fd, stat_fd, smaps_fd;
    char io_reason[LP_REASON_LEN];
    char statm_reason[LP_REASON_LEN];
    char stat_reason[LP_REASON_LEN];
    char smaps_reason[LP_REASON_LEN];
    int64_t pss_next_ns; /* monotonic time before which a row does not read PSS; 0: the next one does */
    int64_t pss_reads, pss_skipped;
    int64_t page_size;
    int ncols;
    lp_nvml nvml;
    int nvml_tried;
    int nvml_open;
    int n_gpu;
    char nvml_reason[LP_REASON_LEN];
    int64_t nvml_last_ns; /* monotonic time of the last NVML read; 0: none since opened */
    int64_t nvml_reads, nvml_skipped;
    _Atomic int32_t *phase;       /* NULL without the capsule */
    _Atomic int64_t *phase_since; /* NULL with a capsule older than version 3 */
    char phase_reason[LP_REASON_LEN];
    /* The profiler's own I/O: _phases' counters when the capsule exists, else local_own. */
    _Atomic int64_t *own_io;
    _Atomic int64_t local_own[LP_IO_FIELDS];
    /* Odd while a read of ours is counted by the kernel but not yet in own_io: _phases'
     * own_io_seq with a version 4 capsule, else local_seq. */
    _Atomic uint32_t *own_io_seq;
    _Atomic uint32_t local_seq;
    /* What our own reaped children added to the reap fingerprint (capsule version 5), or NULL. */
    _Atomic int64_t *own_reaped_fingerprint;

    /* A whole tick: the reads, the fingerprint state and the ring write. */
    pthread_mutex_t tick_lock;
    int segment_start;
    int prev_fp_ok;
    int64_t prev_faults, prev_times, prev_own_faults; /* the reap fingerprint's parts, last row */
    int64_t ticks;
    int64_t failed_io, failed_rss, failed_stat, failed_pss;

    /* The ring. */
    pthread_mutex_t ring_lock;
    int64_t *ring; /* capacity * ncols */
    Py_ssize_t head;
    Py_ssize_t count;
    int64_t rows_total;
    int64_t overwritten;

    /* The timeline: configuration, _phases' slots (NULL without the capsule), and its ring,
     * under ring_lock; tl_ticks and tl_skipped are written by the ticking thread only. */
    int64_t tl_interval_ns; /* 0: off */
    lp_thread_slot *threads;
    lp_phases_capi *capi;
    _Atomic int64_t *threads_unpublished;
    int64_t *tl_ring; /* LP_TL_CAPACITY * LP_TL_COLS */
    Py_ssize_t tl_head;
    Py_ssize_t tl_count;
    int64_t tl_rows_total;
    int64_t tl_overwritten;
    _Atomic int64_t tl_ticks;
    _Atomic int64_t tl_skipped;

    /* Off-CPU time per phase (sched.c), under sched_lock. */
    pthread_mutex_t sched_lock;
    lp_sched_thread sched[LP_THREAD_SLOTS];
    int64_t *sched_by_node; /* sched_nodes * LP_SCHED_FIELDS, indexed by phase node id */
    int32_t sched_nodes;
    int64_t sched_outside[LP_SCHED_FIELDS]; /* time in no phase */
    int64_t sched_unattributed_ns;
    int64_t sched_threads_seen;
    int64_t sched_throttle_failed;
    int cpu_stat_fd;
    char sched_reason[LP_REASON_LEN];
    char throttle_reason[LP_REASON_LEN];
    /* The whole process, from /proc/self/stat at each row and timeline tick, under sched_lock:
     * CPU time of all its threads (ended ones too), its thread count now and at most; -1 unread. */
    int64_t proc_cpu_ns, proc_threads, proc_threads_max;
    int64_t clock_ticks; /* sysconf(_SC_CLK_TCK) */

    /* The thread. */
    pthread_mutex_t state_lock;
    pthread_cond_t wake;
    pthread_t thread;
    int thread_running;
    int stop_requested;
    int thread_started; /* set by the thread once it runs; start() waits for it */
    int paused_for_fork;
    int forks_pending;   /* before_fork() calls whose after-fork hook has not run yet */
    int restart_pending; /* 3.13+: the parent's restart after fork, left to the next method call */
    clockid_t thread_clock;
    int have_thread_clock;
    _Atomic int64_t thread_tid;
    int64_t cpu_ns_done; /* CPU time of threads that have exited, written by each before it exits */
    int64_t restarts;
} lp_core;

/* ===================================================================== shared between the files */

/* The extension is built with -fvisibility=hidden: none of these is exported. */

/* proc.c: opens this process's /proc descriptors and NVML and sizes the ring (0, or -1 when the
 * ring cannot be allocated); closes them and frees the ring; reads one row's values. */
int lp_core_open(lp_core *c);
void lp_core_release(lp_core *c);
void lp_read_row(lp_core *c, int64_t *row);
/* One pread of a /proc file of this process, counted as the profiler's own I/O. */
ssize_t lp_own_pread(lp_core *c, int fd, char *buf, size_t size);
/* The process's CPU time and thread counts from /proc/self/stat (its text, or read now); the
 * caller holds sched_lock. */
void lp_note_process_cpu(lp_core *c, const char *stat_text);
void lp_read_process_cpu(lp_core *c);
/* The calling thread's I/O counters and the bytes that read added to rchar; -1 if unreadable. */
ssize_t lp_read_thread_io(lp_io_counters *io);

/* thread.c */
int lp_locks_init(lp_core *c);
void lp_locks_destroy(lp_core *c);
void lp_tick(lp_core *c);
int lp_thread_start(lp_core *c);
void lp_thread_stop(lp_core *c);
int64_t lp_thread_cpu_total(lp_core *c);

/* sampler_type.c */
extern PyType_Spec lp_sampler_spec;

/* sched.c */
void lp_sched_open(lp_core *c);
void lp_sched_release(lp_core *c);
void lp_sched_reset(lp_core *c);
void lp_sched_tick(lp_core *c, const lp_sched_seen *seen, int n, int64_t now);
PyObject *lp_sched_dict(lp_core *c);

/* stats.c */
PyObject *lp_core_stats(lp_core *c);

/* timeline.c */
int lp_timeline_alloc(lp_core *c);
void lp_timeline_tick(lp_core *c, int64_t skipped, int64_t now);
void lp_timeline_reset(lp_core *c);
PyObject *lp_timeline_drain(lp_core *c);

#endif /* LP_SAMPLER_H */
