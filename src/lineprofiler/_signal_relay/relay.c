/* lineprofiler._signal_relay: a signal whose Python handler stands in for its default action
 * reaches the main thread, however the signal arrived.
 *
 * Python runs a signal's handler only when its main thread next checks for signals, and a main
 * thread blocked in a system call checks only when the call fails with EINTR. A signal may
 * interrupt no call of the main thread: delivered to another thread (a process-directed signal
 * goes to any thread that does not block it), or landing between the main thread's last check
 * and its next blocking call (the retry loop of a multiprocessing lock: a Pool's terminate()
 * does exactly that to workers waiting for the task queue). The default action would have ended
 * the process at once; the Python handler that replaced it waits for a wake-up that may never
 * come, and so does whoever waits for the process.
 *
 * watch(signum) puts relay_handler in front of the C handler Python installed for the signal.
 * It calls Python's handler, then, until the Python handler reports with handled(signum), sends
 * the signal again to the main thread every RELAY_PERIOD_NS from a POSIX timer of the process,
 * so that one of them interrupts the call the main thread waits in. A main thread that still has
 * not run the handler after GIVE_UP_NS is stuck where no signal reaches Python (a long C call
 * holding the GIL): the signal's default action is put back and taken, as it would have been
 * without the profiler. The process then ends without its last write, but it ends.
 *
 * Any later signal.signal() for the signal replaces relay_handler with Python's own, so the
 * relay lives exactly as long as the handler it serves. Linux only (a timer aimed at one thread);
 * elsewhere watch() does nothing and says so. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "_clock.h"
#include "_common.h"

#if defined(__linux__)
#include <sys/syscall.h>
#define LP_RELAY_SUPPORTED 1
#else
#define LP_RELAY_SUPPORTED 0
#endif

/* The first relay follows the signal by 5 ms: the handler normally runs long before. */
#define RELAY_FIRST_NS  5000000LL
#define RELAY_PERIOD_NS 50000000LL
#define GIVE_UP_NS      3000000000LL
#define RELAY_SIGNALS   65 /* signal numbers 1..64 */

typedef struct {
    /* The C handler Python installed, called first; written only while ours is not installed. */
    struct sigaction python;
    /* Set by the handler when the signal arrives, cleared by handled(): a relay is due. */
    volatile sig_atomic_t pending;
    int64_t pending_since_ns;
    /* The process the pending arrival is of: a fork child copies the slot, not the arrival. */
    pid_t pending_pid;
    /* The process's timer for this signal, created on first use: timers do not survive fork. */
    int timer_id;
    pid_t timer_pid;
} lp_relay_slot;

/* Read and written by the signal handler, so file-level: one slot per signal number, each touched
 * only by that signal's handler (which runs with the signal blocked) and by the main thread. */
static lp_relay_slot lp_relay[RELAY_SIGNALS];
/* The main thread's id and the process it belongs to; in a fork child the only thread is the
 * process's first, whose id is the pid. */
static volatile pid_t lp_main_tid;
static volatile pid_t lp_main_pid;

#if LP_RELAY_SUPPORTED

static pid_t lp_main_thread(void)
{
    pid_t pid = getpid();
    return lp_main_pid == pid ? lp_main_tid : pid;
}

/* Async-signal-safe: raw system calls, no allocation. The kernel's timer id is an int. */
static void lp_relay_arm(lp_relay_slot *slot, int signum, int64_t after_ns)
{
    pid_t pid = getpid();
    if (slot->timer_pid != pid) {
        struct sigevent event;
        memset(&event, 0, sizeof event);
        event.sigev_notify = SIGEV_THREAD_ID;
        event.sigev_signo = signum;
        event._sigev_un._tid = lp_main_thread();
        int timer_id = 0;
        if (syscall(SYS_timer_create, CLOCK_MONOTONIC, &event, &timer_id) != 0) {
            return; /* no relay: the signal is as Python alone would have left it */
        }
        slot->timer_id = timer_id;
        slot->timer_pid = pid;
    }
    struct itimerspec when;
    memset(&when, 0, sizeof when);
    when.it_value.tv_sec = (time_t)(after_ns / 1000000000LL);
    when.it_value.tv_nsec = (long)(after_ns % 1000000000LL);
    (void)syscall(SYS_timer_settime, slot->timer_id, 0, &when, NULL);
}

static void lp_relay_disarm(lp_relay_slot *slot)
{
    if (slot->timer_pid != getpid()) {
        return;
    }
    struct itimerspec never;
    memset(&never, 0, sizeof never);
    (void)syscall(SYS_timer_settime, slot->timer_id, 0, &never, NULL);
}

/* The default action, as the signal would have had without us: it is blocked while this handler
 * runs, so it is taken as soon as the handler returns. */
static void lp_relay_give_up(lp_relay_slot *slot, int signum)
{
    struct sigaction fallback;
    memset(&fallback, 0, sizeof fallback);
    fallback.sa_handler = SIG_DFL;
    sigemptyset(&fallback.sa_mask);
    slot->pending = 0;
    lp_relay_disarm(slot);
    (void)sigaction(signum, &fallback, NULL);
    (void)raise(signum);
}

static void lp_relay_handler(int signum, siginfo_t *info, void *context)
{
    int saved_errno = errno;
    if (signum <= 0 || signum >= RELAY_SIGNALS) {
        errno = saved_errno;
        return;
    }
    lp_relay_slot *slot = &lp_relay[signum];
    pid_t pid = getpid();
    if (slot->pending && slot->pending_pid != pid) {
        slot->pending = 0; /* the parent's, copied by fork */
    }
    if (info != NULL && info->si_code == SI_TIMER && !slot->pending) {
        errno = saved_errno; /* a relay that arrived after the Python handler had run */
        return;
    }
    const struct sigaction *python = &slot->python;
    if (python->sa_flags & SA_SIGINFO) {
        python->sa_sigaction(signum, info, context);
    } else if (python->sa_handler != SIG_DFL && python->sa_handler != SIG_IGN) {
        python->sa_handler(signum);
    }
    int64_t now = lp_monotonic_ns();
    if (!slot->pending) {
        slot->pending_since_ns = now;
        slot->pending_pid = pid;
        slot->pending = 1;
        lp_relay_arm(slot, signum, RELAY_FIRST_NS);
    } else if (now - slot->pending_since_ns >= GIVE_UP_NS) {
        lp_relay_give_up(slot, signum);
    } else {
        lp_relay_arm(slot, signum, RELAY_PERIOD_NS);
    }
    errno = saved_errno;
}

static int lp_relay_is_ours(const struct sigaction *action)
{
    return (action->sa_flags & SA_SIGINFO) && action->sa_sigaction == lp_relay_handler;
}

#endif /* LP_RELAY_SUPPORTED */

static int lp_signal_number(PyObject *arg, int *signum)
{
    long value = PyLong_AsLong(arg);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (value <= 0 || value >= RELAY_SIGNALS) {
        PyErr_Format(PyExc_ValueError, "signal number out of range: %ld", value);
        return -1;
    }
    *signum = (int)value;
    return 0;
}

#if LP_RELAY_SUPPORTED
/* The signal named by `arg` and the action installed for it now; -1 with an exception set. */
static int lp_current_action(PyObject *arg, int *signum, struct sigaction *current)
{
    if (lp_signal_number(arg, signum) < 0) {
        return -1;
    }
    if (sigaction(*signum, NULL, current) != 0) {
        PyErr_SetFromErrno(PyExc_OSError);
        return -1;
    }
    return 0;
}
#endif

PyDoc_STRVAR(lp_watch_doc,
             "watch(signum) -> bool\n--\n\n"
             "Relay signum to the main thread until handled(signum) says its Python handler ran. "
             "Call on the main thread right after installing that handler with signal.signal(). "
             "False where nothing is relayed: not Linux, or no Python handler installed.");

static PyObject *lp_watch(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int signum = 0;
#if LP_RELAY_SUPPORTED
    struct sigaction current;
    if (lp_current_action(arg, &signum, &current) < 0) {
        return NULL;
    }
    if (lp_relay_is_ours(&current)) {
        Py_RETURN_TRUE;
    }
    if (!(current.sa_flags & SA_SIGINFO) &&
        (current.sa_handler == SIG_DFL || current.sa_handler == SIG_IGN)) {
        Py_RETURN_FALSE;
    }
    lp_relay_slot *slot = &lp_relay[signum];
    slot->python = current; /* ours is not installed for signum: no handler reads it now */
    slot->pending = 0;
    lp_main_tid = (pid_t)syscall(SYS_gettid);
    lp_main_pid = getpid();
    struct sigaction ours = current;
    ours.sa_sigaction = lp_relay_handler;
    ours.sa_flags = (current.sa_flags | SA_SIGINFO) & ~(SA_RESETHAND | SA_NODEFER);
    if (sigaction(signum, &ours, NULL) != 0) {
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    Py_RETURN_TRUE;
#else
    if (lp_signal_number(arg, &signum) < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
#endif
}

PyDoc_STRVAR(lp_handled_doc, "handled(signum) -> None\n--\n\n"
                             "The Python handler of signum is running: no more relays of this arrival.");

static PyObject *lp_handled(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int signum = 0;
    if (lp_signal_number(arg, &signum) < 0) {
        return NULL;
    }
#if LP_RELAY_SUPPORTED
    lp_relay_slot *slot = &lp_relay[signum];
    if (slot->pending) {
        slot->pending = 0;
        lp_relay_disarm(slot);
    }
#endif
    Py_RETURN_NONE;
}

PyDoc_STRVAR(lp_watching_doc,
             "watching(signum) -> bool\n--\n\nWhether the relay stands in front of signum now.");

static PyObject *lp_watching(PyObject *Py_UNUSED(module), PyObject *arg)
{
    int signum = 0;
#if LP_RELAY_SUPPORTED
    struct sigaction current;
    if (lp_current_action(arg, &signum, &current) < 0) {
        return NULL;
    }
    return PyBool_FromLong(lp_relay_is_ours(&current));
#else
    if (lp_signal_number(arg, &signum) < 0) {
        return NULL;
    }
    Py_RETURN_FALSE;
#endif
}

static PyMethodDef lp_module_methods[] = {
    {"watch", (PyCFunction)lp_watch, METH_O, lp_watch_doc},
    {"handled", (PyCFunction)lp_handled, METH_O, lp_handled_doc},
    {"watching", (PyCFunction)lp_watching, METH_O, lp_watching_doc},
    {NULL, NULL, 0, NULL},
};

static int lp_module_exec(PyObject *module)
{
    if (PyModule_AddIntConstant(module, "GIVE_UP_NS", (long)GIVE_UP_NS) < 0 ||
        PyModule_AddIntConstant(module, "RELAY_PERIOD_NS", (long)RELAY_PERIOD_NS) < 0 ||
        PyModule_AddIntConstant(module, "SUPPORTED", LP_RELAY_SUPPORTED) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot lp_slots[] = {
    {Py_mod_exec, lp_module_exec},
    {0, NULL},
};

static struct PyModuleDef lp_module = {
    .m_base = PyModuleDef_HEAD_INIT,
    .m_name = "lineprofiler._signal_relay",
    .m_doc = "Relays a signal whose Python handler replaced its default action to the main thread until the "
             "handler has run.",
    .m_size = 0,
    .m_methods = lp_module_methods,
    .m_slots = lp_slots,
};

PyMODINIT_FUNC PyInit__signal_relay(void)
{
    return PyModuleDef_Init(&lp_module);
}
