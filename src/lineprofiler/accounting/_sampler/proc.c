/* Reading this process's counters: the /proc descriptors kept open, NVML, and one row's values. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "_clock.h"

/* ===================================================================== opening */

static void lp_reason(char *dst, const char *what, int err)
{
    snprintf(dst, LP_REASON_LEN, "%s: %s", what, strerror(err));
}

static void lp_close_fd(int *fd)
{
    if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
}

static void lp_open_one(const char *path, int *fd, char *reason)
{
    *fd = lp_procio_open(path);
    if (*fd < 0) {
        char what[LP_REASON_LEN / 2];
        snprintf(what, sizeof what, "cannot open %s", path);
        lp_reason(reason, what, errno);
    } else {
        reason[0] = '\0';
    }
}

/* Opens this process's /proc descriptors and NVML, and sizes the ring. Called at the first
 * start and again in a forked child, whose inherited descriptors name the parent. */
int lp_core_open(lp_core *c)
{
    lp_close_fd(&c->io_fd);
    lp_close_fd(&c->statm_fd);
    lp_close_fd(&c->stat_fd);
    lp_close_fd(&c->smaps_fd);
    lp_open_one(c->io_path, &c->io_fd, c->io_reason);
    lp_open_one(c->statm_path, &c->statm_fd, c->statm_reason);
    lp_open_one(c->stat_path, &c->stat_fd, c->stat_reason);
    /* Linux before 4.14 has no smaps_rollup: PSS is then "not measured", RSS still is. */
    lp_open_one(c->smaps_path, &c->smaps_fd, c->smaps_reason);
    c->pss_next_ns = 0;
    c->pid = getpid();

    if (!c->nvml_tried) {
        c->nvml_tried = 1;
        c->n_gpu = 0;
        if (!c->want_nvml) {
            snprintf(c->nvml_reason, LP_REASON_LEN, "NVML sampling was turned off");
        } else if (lp_nvml_open(&c->nvml, c->nvml_reason, LP_REASON_LEN) == 0) {
            int n = lp_nvml_device_count(&c->nvml);
            c->nvml_open = 1;
            c->nvml_last_ns = 0;
            c->n_gpu = n < 0 ? 0 : (n > LP_NVML_MAX_DEVICES ? LP_NVML_MAX_DEVICES : n);
            c->nvml_reason[0] = '\0';
        }
    }

    int ncols = LP_BASE_COLS + 2 * c->n_gpu;
    if (c->ring == NULL || ncols != c->ncols) {
        int64_t *ring = calloc((size_t)c->capacity * (size_t)ncols, sizeof(int64_t));
        if (ring == NULL) {
            return -1;
        }
        free(c->ring);
        c->ring = ring;
        c->ncols = ncols;
    }
    if (lp_timeline_alloc(c) < 0) {
        return -1;
    }
    lp_sched_open(c);
    c->head = 0;
    c->count = 0;
    c->tl_head = 0;
    c->tl_count = 0;
    c->opened = 1;
    return 0;
}

void lp_core_release(lp_core *c)
{
    lp_close_fd(&c->io_fd);
    lp_close_fd(&c->statm_fd);
    lp_close_fd(&c->stat_fd);
    lp_close_fd(&c->smaps_fd);
    if (c->nvml_open) {
        lp_nvml_close(&c->nvml);
        c->nvml_open = 0;
    }
    free(c->ring);
    c->ring = NULL;
    free(c->tl_ring);
    c->tl_ring = NULL;
    lp_sched_release(c);
    c->opened = 0;
}

/* ===================================================================== one row */

/* Sum of cminflt, cmajflt, cutime and cstime from /proc/self/stat. These grow only when this
 * process reaps a child, which is also when the kernel folds the child's I/O counters into
 * ours: an interval in which it changed holds someone else's bytes. */
static int lp_stat_fingerprint(const char *text, int64_t *out)
{
    const char *p = strrchr(text, ')'); /* comm may hold spaces and parentheses */
    int64_t sum = 0;
    int field = 2;
    if (p == NULL) {
        return -1;
    }
    p++;
    while (*p && field < 17) {
        int64_t value = 0;
        int digits = 0;
        while (*p == ' ') {
            p++;
        }
        field++;
        while (*p >= '0' && *p <= '9') {
            value = value * 10 + (*p - '0');
            p++;
            digits++;
        }
        if (field == 11 || field == 13 || field == 16 || field == 17) {
            if (digits == 0) {
                return -1;
            }
            sum += value;
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    if (field < 17) {
        return -1;
    }
    *out = sum;
    return 0;
}

/* utime + stime (fields 14 and 15 of /proc/self/stat, in clock ticks: every thread's CPU time,
 * ended threads' included) and num_threads (field 20). */
static int lp_stat_cpu(const char *text, int64_t *ticks, int64_t *threads)
{
    const char *p = strrchr(text, ')');
    int64_t utime = -1, stime = -1;
    if (p == NULL) {
        return -1;
    }
    p++;
    for (int field = 3; field <= 20 && *p; field++) {
        char *end;
        while (*p == ' ') {
            p++;
        }
        long long value = strtoll(p, &end, 10);
        if (field == 14) {
            utime = value;
        } else if (field == 15) {
            stime = value;
        } else if (field == 20) {
            if (end == p || utime < 0 || stime < 0 || value <= 0) {
                return -1;
            }
            *ticks = utime + stime;
            *threads = value;
            return 0;
        }
        while (*p && *p != ' ') {
            p++;
        }
    }
    return -1;
}

/* Notes the process's CPU time and thread count from the text of /proc/self/stat. The caller
 * holds sched_lock. */
void lp_note_process_cpu(lp_core *c, const char *stat_text)
{
    int64_t cpu_ticks, threads;
    if (lp_stat_cpu(stat_text, &cpu_ticks, &threads) == 0) {
        c->proc_cpu_ns = cpu_ticks * (1000000000 / c->clock_ticks);
        c->proc_threads = threads;
        c->proc_threads_max = threads > c->proc_threads_max ? threads : c->proc_threads_max;
    }
}

/* Reads /proc/self/stat for lp_note_process_cpu: at the timeline's ticks too, so threads that
 * live less than a resource interval are counted. The caller holds sched_lock. */
void lp_read_process_cpu(lp_core *c)
{
    char buf[1024];
    if (c->stat_fd >= 0 && lp_own_pread(c, c->stat_fd, buf, sizeof buf) > 0) {
        lp_note_process_cpu(c, buf);
    }
}

/* One pread of a /proc file of this process, its bytes added to the profiler's own I/O inside
 * an odd own_io_seq window: an io=True phase boundary measured meanwhile waits for the window
 * to close, so it sees these bytes in rchar and in own_io, or in neither. The window's end is
 * a store, not an increment, so a reset by a fork child cannot leave it odd. */
ssize_t lp_own_pread(lp_core *c, int fd, char *buf, size_t size)
{
    uint32_t even = atomic_fetch_add(c->own_io_seq, 1u) & ~1u;
    ssize_t n = lp_proc_pread(fd, buf, size);
    if (n > 0) {
        atomic_fetch_add_explicit(&c->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    atomic_store(c->own_io_seq, even + 2u);
    return n;
}

/* Fills row with this instant's values (every column but the ring's bookkeeping) and the
 * flags that say how it follows the row before. The caller holds tick_lock, which orders the
 * fingerprint state and the counters of failed reads. Never takes the GIL. */
void lp_read_row(lp_core *c, int64_t *row)
{
    char buf[1024];
    int64_t flags = 0;
    int64_t fp = 0;
    int fp_ok = 0;
    ssize_t n;

    row[LP_COL_T] = lp_monotonic_ns();
    /* The phase before its time: _phases stores the time first, so the time read here is never
     * older than the phase it goes with (at worst newer, which claims less). */
    row[LP_COL_PHASE] = c->phase ? (int64_t)atomic_load_explicit(c->phase, memory_order_acquire) : -1;
    row[LP_COL_PHASE_SINCE] = c->phase_since ? atomic_load_explicit(c->phase_since, memory_order_relaxed) : 0;

    /* The own counters before this tick's reads are exactly what the io read's rchar below
     * includes: the kernel counts a read once it has returned. */
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        row[LP_COL_OWN + i] = atomic_load_explicit(&c->own_io[i], memory_order_relaxed);
    }

    lp_io_counters io;
    n = lp_own_pread(c, c->io_fd, buf, sizeof buf);
    if (n > 0 && lp_procio_parse(buf, &io) == 0) {
        row[LP_COL_IO + 0] = io.rchar;
        row[LP_COL_IO + 1] = io.wchar;
        row[LP_COL_IO + 2] = io.read_bytes;
        row[LP_COL_IO + 3] = io.write_bytes;
        row[LP_COL_IO + 4] = io.cancelled_write_bytes;
    } else {
        for (int i = 0; i < LP_IO_FIELDS; i++) {
            row[LP_COL_IO + i] = -1;
        }
        c->failed_io++;
    }

    int64_t rss;
    n = lp_own_pread(c, c->statm_fd, buf, sizeof buf);
    if (n > 0 && lp_statm_parse(buf, c->page_size, &rss) == 0) {
        row[LP_COL_RSS] = rss;
    } else {
        row[LP_COL_RSS] = -1;
        c->failed_rss++;
    }

    /* smaps_rollup is about 700 bytes, but the kernel sums it over every page at each read:
     * read at most as often as LP_PSS_BUDGET allows, and say "not measured" in between. */
    if (c->smaps_fd < 0) {
        row[LP_COL_PSS] = -1;
        c->failed_pss++;
    } else if (row[LP_COL_T] < c->pss_next_ns) {
        row[LP_COL_PSS] = -1;
        c->pss_skipped++;
    } else {
        char smaps[4096];
        int64_t pss_kb;
        int64_t began = lp_monotonic_ns();
        n = lp_own_pread(c, c->smaps_fd, smaps, sizeof smaps);
        int64_t took = lp_monotonic_ns() - began;
        c->pss_next_ns = began + (took > 0 ? took : 0) * LP_PSS_BUDGET;
        c->pss_reads++;
        if (n > 0 && lp_proc_field(smaps, "Pss", &pss_kb) == 0) {
            row[LP_COL_PSS] = pss_kb * 1024;
        } else {
            row[LP_COL_PSS] = -1;
            c->failed_pss++;
        }
    }

    n = lp_own_pread(c, c->stat_fd, buf, sizeof buf);
    if (n > 0 && lp_stat_fingerprint(buf, &fp) == 0) {
        fp_ok = 1;
    } else {
        c->failed_stat++;
    }
    if (n > 0) {
        pthread_mutex_lock(&c->sched_lock);
        lp_note_process_cpu(c, buf);
        pthread_mutex_unlock(&c->sched_lock);
    }
    if (c->segment_start) {
        flags |= LP_ROW_SEGMENT_START;
        c->segment_start = 0;
    } else if (!fp_ok || !c->prev_fp_ok) {
        flags |= LP_ROW_REAP_UNKNOWN;
    } else if (fp != c->prev_fp) {
        flags |= LP_ROW_CHILD_REAPED;
    }
    c->prev_fp_ok = fp_ok;
    c->prev_fp = fp;
    row[LP_COL_FLAGS] = flags;

    if (c->n_gpu > 0) {
        int32_t busy[LP_NVML_MAX_DEVICES], mine[LP_NVML_MAX_DEVICES];
        /* NVML answers with the samples its driver took since the previous read. A read soon
         * after another (a snapshot's row just before a tick) finds no new sample for the pid,
         * which would read as a measured zero, and costs a couple of milliseconds on a real
         * driver: such a row says "not measured" and the next read covers the whole gap. */
        if (c->nvml_last_ns != 0 && row[LP_COL_T] - c->nvml_last_ns < c->interval_ns / 2) {
            for (int i = 0; i < c->n_gpu; i++) {
                busy[i] = -1; /* not measured, as lp_nvml_sample writes it */
                mine[i] = LP_NVML_UNREADABLE;
            }
            c->nvml_skipped++;
        } else {
            lp_nvml_sample(&c->nvml, (unsigned)c->pid, busy, mine, c->n_gpu);
            c->nvml_last_ns = row[LP_COL_T];
            c->nvml_reads++;
        }
        for (int i = 0; i < c->n_gpu; i++) {
            row[LP_BASE_COLS + 2 * i] = busy[i];
            row[LP_BASE_COLS + 2 * i + 1] = mine[i];
        }
    }
}

/* ===================================================================== the calling thread */

ssize_t lp_read_thread_io(lp_io_counters *io)
{
#if defined(__linux__)
    char buf[512];
    int fd = lp_procio_open("/proc/thread-self/io");
    ssize_t n;
    if (fd < 0) {
        /* Linux before 3.17 has no thread-self. */
        char path[64];
        snprintf(path, sizeof path, "/proc/self/task/%ld/io", (long)syscall(SYS_gettid));
        fd = lp_procio_open(path);
    }
    if (fd < 0) {
        return -1;
    }
    n = lp_proc_pread(fd, buf, sizeof buf);
    close(fd);
    if (n <= 0 || lp_procio_parse(buf, io) < 0) {
        return -1;
    }
    return n;
#else
    LP_UNUSED(io);
    return -1;
#endif
}
