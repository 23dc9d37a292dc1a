/* The sampler's thread and ring: the locks, one tick (a row read and stored in time order), and
 * the thread that ticks once per interval without ever taking the GIL. */
#include "sampler.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sys/syscall.h>
#endif

#include "_clock.h"

/* ===================================================================== locks */

int lp_locks_init(lp_core *c)
{
    pthread_condattr_t attr;
    if (pthread_mutex_init(&c->tick_lock, NULL) != 0) {
        return -1;
    }
    if (pthread_mutex_init(&c->ring_lock, NULL) != 0) {
        return -1;
    }
    if (pthread_mutex_init(&c->state_lock, NULL) != 0) {
        return -1;
    }
    if (pthread_mutex_init(&c->sched_lock, NULL) != 0) {
        return -1;
    }
    if (pthread_condattr_init(&attr) != 0) {
        return -1;
    }
#if defined(__linux__)
    /* Sleep on the monotonic clock, so a wall-clock step never stalls or rushes sampling. */
    if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0) {
        pthread_condattr_destroy(&attr);
        return -1;
    }
#endif
    if (pthread_cond_init(&c->wake, &attr) != 0) {
        pthread_condattr_destroy(&attr);
        return -1;
    }
    pthread_condattr_destroy(&attr);
    return 0;
}

void lp_locks_destroy(lp_core *c)
{
    pthread_mutex_destroy(&c->tick_lock);
    pthread_mutex_destroy(&c->ring_lock);
    pthread_mutex_destroy(&c->state_lock);
    pthread_mutex_destroy(&c->sched_lock);
    pthread_cond_destroy(&c->wake);
}

/* ===================================================================== one tick */

/* Takes one row. Called by the thread and by sample(); never takes the GIL. */
void lp_tick(lp_core *c)
{
    int64_t row[LP_MAX_COLS];

    pthread_mutex_lock(&c->tick_lock);
    lp_read_row(c, row);

    pthread_mutex_lock(&c->ring_lock);
    Py_ssize_t slot;
    if (c->count == c->capacity) {
        slot = c->head;
        c->head = (c->head + 1) % c->capacity;
        c->overwritten++;
    } else {
        slot = (c->head + c->count) % c->capacity;
        c->count++;
    }
    memcpy(c->ring + (size_t)slot * (size_t)c->ncols, row, (size_t)c->ncols * sizeof(int64_t));
    c->rows_total++;
    pthread_mutex_unlock(&c->ring_lock);

    c->ticks++;
    pthread_mutex_unlock(&c->tick_lock);
}

/* ===================================================================== the thread */

static void lp_abs_monotonic(int64_t ns, struct timespec *ts)
{
#if defined(__linux__)
    ts->tv_sec = (time_t)(ns / 1000000000);
    ts->tv_nsec = (long)(ns % 1000000000);
#else
    /* Without pthread_condattr_setclock the wait is on the wall clock. */
    int64_t wall = lp_realtime_ns() + (ns - lp_monotonic_ns());
    ts->tv_sec = (time_t)(wall / 1000000000);
    ts->tv_nsec = (long)(wall % 1000000000);
#endif
}

static void *lp_thread_main(void *arg)
{
    lp_core *c = arg;
    int64_t start = lp_monotonic_ns();
    int64_t next = start + c->interval_ns;
    int64_t tl = c->tl_interval_ns;
    int64_t tl_next = tl > 0 ? start + tl : INT64_MAX;
    pthread_mutex_lock(&c->state_lock);
#if defined(__linux__)
    atomic_store(&c->thread_tid, (int64_t)syscall(SYS_gettid));
#endif
    c->thread_started = 1;
    pthread_cond_broadcast(&c->wake);
    for (;;) {
        int64_t due = next < tl_next ? next : tl_next;
        while (!c->stop_requested && lp_monotonic_ns() < due) {
            struct timespec ts;
            lp_abs_monotonic(due, &ts);
            pthread_cond_timedwait(&c->wake, &c->state_lock, &ts);
        }
        if (c->stop_requested) {
            break;
        }
        pthread_mutex_unlock(&c->state_lock);
        int64_t now = lp_monotonic_ns();
        if (now >= tl_next) {
            /* Ticks of the grid start + k * tl that passed unseen are counted and marked. */
            int64_t missed = (now - tl_next) / tl;
            lp_timeline_tick(c, missed, now);
            tl_next += (missed + 1) * tl;
        }
        if (now >= next) {
            lp_tick(c);
            /* Keep to the grid start + k * interval; after a stall, skip the missed ticks
             * rather than bunching them up. */
            now = lp_monotonic_ns();
            next += c->interval_ns;
            if (next <= now) {
                next = now + c->interval_ns - (now - next) % c->interval_ns;
            }
        }
        pthread_mutex_lock(&c->state_lock);
    }
    int64_t cpu = lp_thread_cpu_ns();
    if (cpu > 0) {
        c->cpu_ns_done += cpu;
    }
    pthread_mutex_unlock(&c->state_lock);
    return NULL;
}

/* Starts the thread with every signal blocked, so signals go to the threads that expect them
 * and our reads never see EINTR. Returns 0 or an errno. */
int lp_thread_start(lp_core *c)
{
    sigset_t all, old;
    int err;
    c->stop_requested = 0;
    c->thread_started = 0;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&c->thread, NULL, lp_thread_main, c);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0) {
        return err;
    }
    c->thread_running = 1;
    c->have_thread_clock = pthread_getcpuclockid(c->thread, &c->thread_clock) == 0;
    /* Wait until it runs, so stats() right after start() names a live thread. */
    pthread_mutex_lock(&c->state_lock);
    while (!c->thread_started) {
        pthread_cond_wait(&c->wake, &c->state_lock);
    }
    pthread_mutex_unlock(&c->state_lock);
    return 0;
}

void lp_thread_stop(lp_core *c)
{
    if (!c->thread_running) {
        return;
    }
    pthread_mutex_lock(&c->state_lock);
    c->stop_requested = 1;
    pthread_cond_broadcast(&c->wake);
    pthread_mutex_unlock(&c->state_lock);
    pthread_join(c->thread, NULL);
#if defined(__linux__)
    /* pthread_join returns once the kernel clears the thread's tid, a moment before the task
     * leaves the thread group; a fork in that moment would still count it as a thread (3.12's
     * "multi-threaded fork" warning reads the count). Wait for it to go, briefly. */
    int64_t tid = atomic_load(&c->thread_tid);
    if (tid > 0) {
        char path[64];
        struct timespec pause = {0, 100000};
        snprintf(path, sizeof path, "/proc/self/task/%lld", (long long)tid);
        for (int i = 0; i < 1000 && access(path, F_OK) == 0; i++) {
            nanosleep(&pause, NULL);
        }
    }
#endif
    c->thread_running = 0;
    c->have_thread_clock = 0;
    atomic_store(&c->thread_tid, 0);
}

int64_t lp_thread_cpu_total(lp_core *c)
{
    int64_t total = c->cpu_ns_done;
    if (c->thread_running && c->have_thread_clock) {
        struct timespec ts;
        if (clock_gettime(c->thread_clock, &ts) == 0) {
            total += (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
        }
    }
    return total;
}
