/* /proc/self/io: the kept-open descriptor behind io=True phases, and the accounting of the
 * profiler's own I/O (snapshots, sample files) that measurements subtract. */
#include "phases.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ===================================================================== fork statics */

/* The one piece of process-wide mutable state: a pthread_atfork child handler bumps it, so the
 * kept-open /proc/self/io descriptor (which names the parent) is reopened in any fork child,
 * including forks that bypass Python's os.register_at_fork. */
static atomic_uint lp_fork_generation;
static pthread_once_t lp_atfork_once = PTHREAD_ONCE_INIT;

static void lp_atfork_child(void)
{
    atomic_fetch_add_explicit(&lp_fork_generation, 1u, memory_order_relaxed);
}

static void lp_atfork_install(void)
{
    (void)pthread_atfork(NULL, NULL, lp_atfork_child);
}

/* The module state's part: no descriptor yet (opened at the first read), the fork hook installed. */
void lp_io_init(lp_state *st)
{
    (void)pthread_once(&lp_atfork_once, lp_atfork_install);
    st->io_fd = -1;
    strcpy(st->io_path, "/proc/self/io");
    st->io_fork_generation = atomic_load(&lp_fork_generation);
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        atomic_init(&st->own_io[i], 0);
    }
    atomic_init(&st->own_io_seq, 0u);
}

void lp_io_close(lp_state *st)
{
    if (st->io_fd >= 0) {
        close(st->io_fd);
        st->io_fd = -1;
    }
}

/* ===================================================================== /proc/self/io */

/* Reads the process's I/O counters through the kept-open descriptor, reopening it in a fork
 * child (the old one would still name the parent). Called with the GIL held. Returns the bytes
 * read (> 0) or -1. The read itself moves rchar: with count_own, its size is added to own_io
 * *after* the read, as the kernel does, so a caller that loads own_io before reading sees the
 * same window in both. */
int lp_io_now(lp_state *st, lp_io_counters *out, int count_own)
{
    unsigned g = atomic_load_explicit(&lp_fork_generation, memory_order_relaxed);
    if (st->io_fd < 0 || st->io_fork_generation != g) {
        if (st->io_fd >= 0) {
            close(st->io_fd);
        }
        st->io_fd = lp_procio_open(st->io_path);
        st->io_fork_generation = g;
    }
    if (st->io_fd < 0) {
        return -1;
    }
    char buf[512];
    ssize_t n = lp_proc_pread(st->io_fd, buf, sizeof buf);
    if (n < 0) {
        return -1;
    }
    if (count_own) {
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    if (lp_procio_parse(buf, out) < 0) {
        return -1;
    }
    return (int)n;
}

/* How long a boundary waits for a sampler read in flight. The window is one pread, a few
 * microseconds, unless the sampler thread was preempted inside it: on a loaded host (two cores,
 * a dozen runnable threads) that lasts a scheduler slice or more, longer than any fixed number
 * of sched_yield calls (seen in CI: one /proc/self/stat read, 323 bytes, billed to a phase). */
#define LP_IO_SETTLE_NS (50 * 1000 * 1000)

/* The reads of an io=True phase boundary: the profiler's own bytes so far, then the process's
 * counters, taken where no read of the sampler thread is half counted (see own_io_seq). The
 * sampler never takes the GIL, so waiting for it with the GIL held cannot deadlock: spin, then
 * yield, then sleep (which lets the scheduler run or migrate a preempted sampler), and only past
 * LP_IO_SETTLE_NS read the boundary as it stands. Called with the GIL held. Returns 1 when
 * `out` was read. */
int lp_io_measure(lp_state *st, int64_t *own, lp_io_counters *out)
{
    if (st->io_fork_generation != atomic_load_explicit(&lp_fork_generation, memory_order_relaxed)) {
        /* The first read since a fork (C-level ones too): a sampler read in flight when the
         * process forked has no thread to finish it here. */
        uint32_t stuck = atomic_load(&st->own_io_seq);
        if (stuck & 1u) {
            atomic_compare_exchange_strong(&st->own_io_seq, &stuck, stuck + 1u);
        }
    }
    int64_t deadline = 0;
    for (int tries = 0;; tries++) {
        uint32_t before = atomic_load(&st->own_io_seq);
        if (!(before & 1u)) {
            lp_own_io_load(st, own);
            int ok = lp_io_now(st, out, 1) > 0;
            if (atomic_load(&st->own_io_seq) == before) {
                return ok;
            }
        }
        if (tries < 16) {
            continue;
        }
        int64_t now = lp_monotonic_ns();
        if (deadline == 0) {
            deadline = now + LP_IO_SETTLE_NS;
        } else if (now > deadline) {
            break;
        }
        if (tries < 64) {
            sched_yield();
        } else {
            struct timespec pause = {0, 20 * 1000};
            nanosleep(&pause, NULL);
        }
    }
    lp_own_io_load(st, own);
    return lp_io_now(st, out, 1) > 0;
}

PyObject *lp_io_dict(const int64_t *v)
{
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "rchar", (long long)v[0], "wchar", (long long)v[1],
                         "read_bytes", (long long)v[2], "write_bytes", (long long)v[3],
                         "cancelled_write_bytes", (long long)v[4]);
}

static PyObject *lp_io_tuple(const lp_io_counters *c)
{
    return Py_BuildValue("(LLLLL)", (long long)c->rchar, (long long)c->wchar, (long long)c->read_bytes,
                         (long long)c->write_bytes, (long long)c->cancelled_write_bytes);
}

PyObject *lp_mod_read_io(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_io_counters c;
    if (lp_io_now(lp_get_state(module), &c, 1) < 0) {
        Py_RETURN_NONE;
    }
    int64_t a[LP_IO_FIELDS];
    lp_io_to_array(&c, a);
    return lp_io_dict(a);
}

/* ===================================================================== the profiler's own I/O */

/* The profiler's own writes are measured on the writing thread alone (/proc/thread-self/io),
 * so a user thread writing at the same moment keeps its bytes. Where the kernel has no
 * thread-self (before 3.17) it falls back to the process counters. Returns the bytes this read
 * itself added to rchar, or -1. */
static int lp_own_io_now(lp_state *st, lp_io_counters *out, int count_own)
{
    int fd = lp_procio_open("/proc/thread-self/io");
    if (fd < 0) {
        return lp_io_now(st, out, count_own);
    }
    char buf[512];
    ssize_t n = lp_proc_pread(fd, buf, sizeof buf);
    close(fd);
    if (n < 0 || lp_procio_parse(buf, out) < 0) {
        return -1;
    }
    if (count_own) {
        /* this closing read lands in rchar after the values it returned */
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    return (int)n;
}

PyObject *lp_mod_own_io_begin(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    lp_io_counters c;
    /* this read's own bytes land inside the window, so they are part of `moved` below */
    if (lp_own_io_now(lp_get_state(module), &c, 0) < 0) {
        Py_RETURN_NONE;
    }
    return lp_io_tuple(&c);
}

PyObject *lp_mod_own_io_end(PyObject *module, PyObject *token)
{
    lp_state *st = lp_get_state(module);
    if (token == Py_None) {
        Py_RETURN_NONE; /* the opening read failed: nothing can be measured */
    }
    long long b[LP_IO_FIELDS];
    if (!PyArg_ParseTuple(token, "LLLLL:own_io_end", &b[0], &b[1], &b[2], &b[3], &b[4])) {
        return NULL;
    }
    lp_io_counters c;
    if (lp_own_io_now(st, &c, 1) < 0) {
        Py_RETURN_NONE;
    }
    int64_t a[LP_IO_FIELDS], moved[LP_IO_FIELDS];
    lp_io_to_array(&c, a);
    for (int i = 0; i < LP_IO_FIELDS; i++) {
        moved[i] = a[i] - b[i] > 0 ? a[i] - b[i] : 0;
        atomic_fetch_add_explicit(&st->own_io[i], moved[i], memory_order_relaxed);
    }
    return lp_io_dict(moved);
}

/* reap_own_child(pid): waits for a child process the profiler itself started (git, for the
 * source commit) and reaps it, its I/O counted as the profiler's own. Reaping folds the child's
 * counters into this process's (rchar and the rest jump at once): the child's counters are read
 * from its zombie first, and the reap and their addition to own_io happen inside an odd
 * own_io_seq window, as the sampler's reads do, so a phase boundary sees both or neither.
 * Returns the wait status. */
PyObject *lp_mod_reap_own_child(PyObject *module, PyObject *arg)
{
    lp_state *st = lp_get_state(module);
    long pid = PyLong_AsLong(arg);
    if (pid == -1 && PyErr_Occurred()) {
        return NULL;
    }
    if (pid <= 0) {
        PyErr_SetString(PyExc_ValueError, "reap_own_child needs a child's pid");
        return NULL;
    }
    siginfo_t info;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    do {
        rc = waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT);
    } while (rc < 0 && errno == EINTR);
    Py_END_ALLOW_THREADS
    if (rc < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/io", pid);
    int fd = lp_procio_open(path);
    int status = 0;
    pid_t reaped;
    uint32_t even = atomic_fetch_add(&st->own_io_seq, 1u) & ~1u;
    ssize_t n = fd >= 0 ? lp_proc_pread(fd, buf, sizeof buf) : -1;
    lp_io_counters child;
    int counted = n > 0 && lp_procio_parse(buf, &child) == 0;
    do {
        reaped = waitpid((pid_t)pid, &status, 0);
    } while (reaped < 0 && errno == EINTR);
    if (counted) {
        int64_t moved[LP_IO_FIELDS];
        lp_io_to_array(&child, moved);
        moved[0] += n; /* the read of the child's counters itself */
        for (int i = 0; i < LP_IO_FIELDS; i++) {
            atomic_fetch_add_explicit(&st->own_io[i], moved[i], memory_order_relaxed);
        }
    } else if (n > 0) {
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    atomic_store(&st->own_io_seq, even + 2u);
    if (fd >= 0) {
        close(fd);
    }
    if (reaped < 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    return Py_BuildValue("(iO)", status, counted ? Py_True : Py_False);
}

PyObject *lp_mod_own_io(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    int64_t v[LP_IO_FIELDS];
    lp_own_io_load(lp_get_state(module), v);
    return lp_io_dict(v);
}

#ifdef LP_DEV_SEAMS
/* _set_io_path(path): a development build's test seam (LP_DEV_SEAMS, see setup.py), never in a
 * wheel: phase boundaries read their I/O counters from another file. */
PyObject *lp_mod_set_io_path(PyObject *module, PyObject *arg)
{
    lp_state *st = lp_get_state(module);
    const char *path = PyUnicode_AsUTF8(arg);
    if (path == NULL) {
        return NULL;
    }
    if (strlen(path) >= sizeof st->io_path) {
        PyErr_SetString(PyExc_ValueError, "path too long");
        return NULL;
    }
    strcpy(st->io_path, path);
    if (st->io_fd >= 0) {
        close(st->io_fd);
        st->io_fd = -1;
    }
    Py_RETURN_NONE;
}

/* _hold_own_read(path, hold_ns): a development build's test seam. Reads a file as the sampler
 * thread reads /proc, inside an odd own_io_seq window, and stays in the window hold_ns after
 * the kernel has counted the bytes (a sampler preempted there), without the GIL. Returns the
 * bytes read. */
PyObject *lp_mod_hold_own_read(PyObject *module, PyObject *args)
{
    lp_state *st = lp_get_state(module);
    const char *path;
    long long hold_ns;
    if (!PyArg_ParseTuple(args, "sL:_hold_own_read", &path, &hold_ns)) {
        return NULL;
    }
    int fd = lp_procio_open(path);
    if (fd < 0) {
        return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
    }
    char buf[4096];
    ssize_t n;
    Py_BEGIN_ALLOW_THREADS
    uint32_t even = atomic_fetch_add(&st->own_io_seq, 1u) & ~1u;
    n = lp_proc_pread(fd, buf, sizeof buf);
    struct timespec pause = {(time_t)(hold_ns / 1000000000), (long)(hold_ns % 1000000000)};
    nanosleep(&pause, NULL);
    if (n > 0) {
        atomic_fetch_add_explicit(&st->own_io[0], (int64_t)n, memory_order_relaxed);
    }
    atomic_store(&st->own_io_seq, even + 2u);
    Py_END_ALLOW_THREADS
    close(fd);
    return PyLong_FromSsize_t(n);
}
#endif /* LP_DEV_SEAMS */
