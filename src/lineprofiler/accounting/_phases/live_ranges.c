/* The ranges of address space this process's live files are mapped into, and the two things that
 * guard them (see live.c): the SIGBUS handler, which maps anonymous memory over a range whose file
 * shrank, and the fork hook, which does the same in every child before it can write. */
#include "phases.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>

/* What the SIGBUS handler and the fork hook need, so it is file-level state: the ranges of
 * address space our live files are mapped into. A slot is claimed and released with the GIL
 * held; the handler and the fork hook only read it, and write `state` (LP_RANGE_*). */
typedef struct {
    _Atomic(uintptr_t) start; /* 0: a free slot */
    _Atomic(size_t) bytes;
    _Atomic int fd;
    _Atomic int state;
    _Atomic(uintptr_t) fault; /* the address of the store that found the file shrunk */
} lp_range;

static lp_range lp_ranges[LP_LIVE_SLOTS];
static struct sigaction lp_previous_sigbus;
static pthread_once_t lp_live_once = PTHREAD_ONCE_INIT;
static int lp_sigbus_installed;

/* Anonymous memory over a whole range: stores into it complete and go nowhere. mmap is a plain
 * system call, safe in a signal handler and in a fork child. */
static int lp_range_unshare(lp_range *r)
{
    uintptr_t start = atomic_load(&r->start);
    size_t bytes = atomic_load(&r->bytes);
    if (start == 0) {
        return -1;
    }
    void *m = mmap((void *)start, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
    return m == MAP_FAILED ? -1 : 0;
}

/* A SIGBUS with no address of ours (sent with kill(), or re-raised by another handler that ran
 * before us, as faulthandler does): ours if one of our files is now shorter than its mapping. */
static int lp_rescue_shrunk(void)
{
    int rescued = 0;
    for (int i = 0; i < LP_LIVE_SLOTS; i++) {
        lp_range *r = &lp_ranges[i];
        int fd = atomic_load(&r->fd);
        struct stat st;
        if (atomic_load(&r->start) == 0 || fd < 0 || fstat(fd, &st) != 0) {
            continue;
        }
        /* the header is always mapped: a file shorter than it is one we can no longer use */
        if (st.st_size < LP_LIVE_HEADER && atomic_load(&r->state) == LP_RANGE_OK &&
            lp_range_unshare(r) == 0) {
            atomic_store(&r->state, LP_RANGE_LOST);
            rescued = 1;
        }
    }
    return rescued;
}

static void lp_sigbus(int signum, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    uintptr_t addr = (uintptr_t)info->si_addr;
    if (info->si_code > 0) { /* a fault: si_addr is the address */
        for (int i = 0; i < LP_LIVE_SLOTS; i++) {
            lp_range *r = &lp_ranges[i];
            uintptr_t start = atomic_load(&r->start);
            if (start != 0 && addr >= start && addr - start < atomic_load(&r->bytes)) {
                if (lp_range_unshare(r) == 0) {
                    atomic_store(&r->fault, addr);
                    atomic_store(&r->state, LP_RANGE_LOST);
                    errno = saved_errno;
                    return; /* the store runs again, into the anonymous memory */
                }
                break;
            }
        }
    } else if (lp_rescue_shrunk()) {
        errno = saved_errno;
        return;
    }
    /* Not ours: as if we were not there. */
    const struct sigaction *prev = &lp_previous_sigbus;
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction != NULL) {
            prev->sa_sigaction(signum, info, context);
        }
    } else if (prev->sa_handler == SIG_IGN && info->si_code <= 0) {
        /* an ignored signal someone sent stays ignored (a fault cannot be ignored) */
    } else if (prev->sa_handler == SIG_DFL || prev->sa_handler == SIG_IGN) {
        struct sigaction dfl;
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        sigemptyset(&dfl.sa_mask);
        (void)sigaction(SIGBUS, &dfl, NULL);
        if (info->si_code <= 0) {
            (void)raise(SIGBUS); /* blocked until we return, then the default action */
        }
        /* a fault: returning runs the store again, and the default action ends the process */
    } else {
        prev->sa_handler(signum);
    }
    errno = saved_errno;
}

static void lp_live_atfork_child(void)
{
    for (int i = 0; i < LP_LIVE_SLOTS; i++) {
        lp_range *r = &lp_ranges[i];
        if (atomic_load(&r->start) != 0 && lp_range_unshare(r) == 0) {
            atomic_store(&r->state, LP_RANGE_FORKED);
        }
    }
}

static void lp_live_once_init(void)
{
    for (int i = 0; i < LP_LIVE_SLOTS; i++) {
        atomic_init(&lp_ranges[i].start, 0);
        atomic_init(&lp_ranges[i].bytes, 0);
        atomic_init(&lp_ranges[i].fd, -1);
        atomic_init(&lp_ranges[i].state, LP_RANGE_OK);
        atomic_init(&lp_ranges[i].fault, 0);
    }
    (void)pthread_atfork(NULL, NULL, lp_live_atfork_child);
}

/* Our SIGBUS handler, installed once per process before the first shared mapping. */
static int lp_sigbus_install(void)
{
    if (lp_sigbus_installed) {
        return 0;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = lp_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &lp_previous_sigbus) != 0) {
        return -1;
    }
    lp_sigbus_installed = 1;
    return 0;
}

int lp_range_claim(char *base, size_t bytes, int fd)
{
    for (int i = 0; i < LP_LIVE_SLOTS; i++) {
        lp_range *r = &lp_ranges[i];
        if (atomic_load(&r->start) == 0) {
            atomic_store(&r->bytes, bytes);
            atomic_store(&r->fd, fd);
            atomic_store(&r->state, LP_RANGE_OK);
            atomic_store(&r->fault, 0);
            atomic_store(&r->start, (uintptr_t)base); /* last: the slot is whole when seen */
            return i;
        }
    }
    return -1;
}

void lp_range_release(int slot)
{
    if (slot >= 0 && slot < LP_LIVE_SLOTS) {
        atomic_store(&lp_ranges[slot].start, 0);
        atomic_store(&lp_ranges[slot].fd, -1);
    }
}

/* Sets up the table and the fork hook (once per process) and installs the SIGBUS handler before
 * the first shared mapping; -1 with errno set when the handler could not be installed. */
int lp_ranges_ready(void)
{
    (void)pthread_once(&lp_live_once, lp_live_once_init);
    return lp_sigbus_install();
}

/* The state of a claimed range (LP_RANGE_*) and the address whose store found its file shrunk. */
int lp_range_state(int slot)
{
    return atomic_load(&lp_ranges[slot].state);
}

uintptr_t lp_range_fault(int slot)
{
    return atomic_load(&lp_ranges[slot].fault);
}

/* live_ranges() -> [(start, bytes, state)]: the mapped ranges of this process, for tests. */
PyObject *lp_mod_live_ranges(PyObject *Py_UNUSED(module), PyObject *Py_UNUSED(ignored))
{
    (void)pthread_once(&lp_live_once, lp_live_once_init);
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        return NULL;
    }
    for (int i = 0; i < LP_LIVE_SLOTS; i++) {
        uintptr_t start = atomic_load(&lp_ranges[i].start);
        if (start == 0) {
            continue;
        }
        PyObject *item =
            Py_BuildValue("(Knl)", (unsigned long long)start, (Py_ssize_t)atomic_load(&lp_ranges[i].bytes),
                          (long)atomic_load(&lp_ranges[i].state));
        if (item == NULL || PyList_Append(out, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
    }
    return out;
}
