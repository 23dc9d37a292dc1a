/* Why a thread was not running: at each timeline tick, every thread that holds a phase slot has
 * its /proc/self/task/<tid>/schedstat read (time on a CPU, time runnable but waiting for one),
 * and the cgroup's cpu.stat (time its CPU quota throttled it); the deltas since the thread's
 * last tick are attributed to the phase its slot shows, so each phase gets: on CPU, waiting for
 * a CPU (run queue), throttled, and blocked (the rest: asleep on a lock, a queue, the GIL, a
 * syscall, the disk). The per-thread totals are exact; the attribution to phases is at the
 * timeline's resolution: an interval in which the thread changed phase is split by the times
 * its slot records, and one with more changes than the slot remembers is left unattributed.
 *
 * Throttling is counted by the kernel per cgroup: the time each of its CPUs' queues spent
 * throttled, summed. A thread's share is estimated as that sum over the interval, capped by the
 * thread's own run-queue wait (a throttled thread is runnable: its wait includes it). Exact for
 * one thread, or for threads all throttled together; an overestimate only where another thread's
 * queue was throttled while this one waited for a CPU for another reason.
 *
 * schedstat credits a wait for a CPU when it ends, so a wait that spans ticks shows first as
 * blocked time (the thread was neither running nor, as far as the counters said yet, queued)
 * and then as more run-queue time than its interval holds: that excess is taken back from the
 * blocked time of the thread's last intervals, in the phases they went to.
 *
 * Everything here runs under sched_lock (the sampler thread's tick and sample() may both tick);
 * it never takes the GIL. */
#include "sampler.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ===================================================================== opening */

static void lp_sched_forget_threads(lp_core *c)
{
    for (int i = 0; i < LP_THREAD_SLOTS; i++) {
        if (c->sched[i].fd >= 0) {
            close(c->sched[i].fd);
        }
        c->sched[i].fd = -1;
        c->sched[i].tid = 0;
    }
}

/* Opens the cgroup's cpu.stat (at the first start and in a fork child) and forgets every
 * thread's baseline (a child's descriptors would name the parent's threads). */
void lp_sched_open(lp_core *c)
{
    pthread_mutex_lock(&c->sched_lock);
    lp_sched_forget_threads(c);
    if (c->cpu_stat_fd >= 0) {
        close(c->cpu_stat_fd);
        c->cpu_stat_fd = -1;
    }
    if (c->cpu_stat_path == NULL) {
        snprintf(c->throttle_reason, LP_REASON_LEN, "no cgroup cpu.stat was found for this process");
    } else {
        c->cpu_stat_fd = lp_procio_open(c->cpu_stat_path);
        if (c->cpu_stat_fd < 0) {
            snprintf(c->throttle_reason, LP_REASON_LEN, "cannot open %s: %s", c->cpu_stat_path,
                     strerror(errno));
        } else {
            c->throttle_reason[0] = '\0';
        }
    }
    pthread_mutex_unlock(&c->sched_lock);
}

void lp_sched_release(lp_core *c)
{
    pthread_mutex_lock(&c->sched_lock);
    lp_sched_forget_threads(c);
    if (c->cpu_stat_fd >= 0) {
        close(c->cpu_stat_fd);
        c->cpu_stat_fd = -1;
    }
    pthread_mutex_unlock(&c->sched_lock);
}

/* Forgets what was attributed (a fork child's account starts at its fork). */
void lp_sched_reset(lp_core *c)
{
    free(c->sched_by_node);
    c->sched_by_node = NULL;
    c->sched_nodes = 0;
    memset(c->sched_outside, 0, sizeof c->sched_outside);
    c->sched_unattributed_ns = 0;
    c->sched_threads_seen = 0;
    c->sched_reason[0] = '\0';
    c->sched_throttle_failed = 0;
}

/* ===================================================================== reading */

/* The decimal after "key " at the start of a line of a cgroup's cpu.stat; -1 when absent. */
static int lp_cpu_stat_field(const char *text, const char *key, int64_t *out)
{
    size_t key_len = strlen(key);
    for (const char *p = text; p != NULL && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, key, key_len) == 0 && p[key_len] == ' ') {
            char *end;
            long long value = strtoll(p + key_len + 1, &end, 10);
            if (end == p + key_len + 1 || value < 0) {
                return -1;
            }
            *out = value;
            return 0;
        }
    }
    return -1;
}

/* The cgroup's throttled time so far in ns (cgroup v2 throttled_usec, v1 throttled_time), or -1. */
static int64_t lp_read_throttled_ns(lp_core *c)
{
    char buf[1024];
    int64_t value;
    if (c->cpu_stat_fd < 0) {
        return -1;
    }
    if (lp_own_pread(c, c->cpu_stat_fd, buf, sizeof buf) <= 0) {
        return -1;
    }
    if (lp_cpu_stat_field(buf, "throttled_usec", &value) == 0) {
        return value * 1000;
    }
    if (lp_cpu_stat_field(buf, "throttled_time", &value) == 0) {
        return value;
    }
    return -1;
}

/* A thread's schedstat: ns on a CPU and ns runnable but waiting for one. 0, or -1. */
static int lp_read_schedstat(lp_core *c, lp_sched_thread *t, int64_t *cpu_ns, int64_t *wait_ns)
{
    char buf[128];
    if (lp_own_pread(c, t->fd, buf, sizeof buf) <= 0) {
        return -1;
    }
    long long on = 0, wait = 0;
    if (sscanf(buf, "%lld %lld", &on, &wait) != 2) {
        return -1;
    }
    *cpu_ns = on;
    *wait_ns = wait;
    return 0;
}

/* ===================================================================== attributing */

/* The accumulator of a phase node (or of "no phase" for -1); NULL when it cannot be grown. */
static int64_t *lp_sched_bucket(lp_core *c, int32_t node)
{
    if (node < 0) {
        return c->sched_outside;
    }
    if (node >= LP_SCHED_MAX_NODES) {
        return NULL;
    }
    if (node >= c->sched_nodes) {
        int32_t grown = c->sched_nodes ? c->sched_nodes : 64;
        while (grown <= node) {
            grown *= 2;
        }
        int64_t *more = realloc(c->sched_by_node, (size_t)grown * LP_SCHED_FIELDS * sizeof(int64_t));
        if (more == NULL) {
            return NULL;
        }
        memset(more + (size_t)c->sched_nodes * LP_SCHED_FIELDS, 0,
               (size_t)(grown - c->sched_nodes) * LP_SCHED_FIELDS * sizeof(int64_t));
        c->sched_by_node = more;
        c->sched_nodes = grown;
    }
    return c->sched_by_node + (size_t)node * LP_SCHED_FIELDS;
}

/* Adds the share `part_ns` of an interval of `elapsed_ns` to a node's accumulator, and notes
 * the blocked time it got in the thread's recent ones. */
static void lp_sched_add(lp_core *c, lp_sched_thread *t, int32_t node, const int64_t *delta, int64_t part_ns,
                         int64_t elapsed_ns)
{
    if (part_ns <= 0) {
        return;
    }
    int64_t *bucket = lp_sched_bucket(c, node);
    if (bucket == NULL) {
        c->sched_unattributed_ns += part_ns;
        return;
    }
    double share = part_ns >= elapsed_ns ? 1.0 : (double)part_ns / (double)elapsed_ns;
    bucket[LP_SCHED_ELAPSED] += part_ns;
    for (int f = LP_SCHED_ON_CPU; f < LP_SCHED_FIELDS; f++) {
        bucket[f] += (int64_t)((double)delta[f] * share);
    }
    int64_t blocked = (int64_t)((double)delta[LP_SCHED_BLOCKED] * share);
    if (blocked > 0) {
        t->recent_node[t->recent_next] = node;
        t->recent_blocked[t->recent_next] = blocked;
        t->recent_next = (t->recent_next + 1) % LP_SCHED_RECENT;
    }
}

/* Moves up to `excess` ns of the thread's recent blocked time, newest first, to waiting for a CPU
 * (`throttled_share` of it throttled), in the phases it was attributed to. Returns how much. */
static int64_t lp_sched_reclaim(lp_core *c, lp_sched_thread *t, int64_t excess, double throttled_share)
{
    int64_t moved = 0;
    for (int k = 1; k <= LP_SCHED_RECENT && moved < excess; k++) {
        int i = (t->recent_next - k + LP_SCHED_RECENT) % LP_SCHED_RECENT;
        int64_t take = t->recent_blocked[i] < excess - moved ? t->recent_blocked[i] : excess - moved;
        int64_t *bucket = take > 0 ? lp_sched_bucket(c, t->recent_node[i]) : NULL;
        if (bucket == NULL) {
            continue;
        }
        int64_t throttled = (int64_t)((double)take * throttled_share);
        bucket[LP_SCHED_BLOCKED] -= take;
        bucket[LP_SCHED_THROTTLED] += throttled;
        bucket[LP_SCHED_RUNQUEUE] += take - throttled;
        t->recent_blocked[i] -= take;
        moved += take;
    }
    return moved;
}

/* Splits one thread's interval (t0, t1] between the phases its slot says it was in: the current
 * one since `since_ns`, before that no phase back to the end of the last one it left, and that
 * one; what lies before a second change is not known and is left unattributed. */
static void lp_sched_attribute(lp_core *c, lp_sched_thread *t, const lp_slot_state *s, int slot_read,
                               int64_t t0, int64_t t1, const int64_t *delta)
{
    int64_t elapsed = t1 - t0;
    if (!slot_read || s->since_ns <= 0) {
        c->sched_unattributed_ns += elapsed;
        return;
    }
    if (s->since_ns <= t0) {
        lp_sched_add(c, t, s->phase, delta, elapsed, elapsed);
        return;
    }
    int64_t since = s->since_ns < t1 ? s->since_ns : t1;
    lp_sched_add(c, t, s->phase, delta, t1 - since, elapsed);
    if (s->prev_phase < 0 || s->prev_end_ns <= t0) {
        lp_sched_add(c, t, -1, delta, since - t0, elapsed);
        return;
    }
    int64_t prev_end = s->prev_end_ns < since ? s->prev_end_ns : since;
    lp_sched_add(c, t, -1, delta, since - prev_end, elapsed);
    if (s->prev_since_ns > 0 && s->prev_since_ns <= t0) {
        lp_sched_add(c, t, s->prev_phase, delta, prev_end - t0, elapsed);
        return;
    }
    int64_t prev_since = s->prev_since_ns > t0 ? s->prev_since_ns : t0;
    lp_sched_add(c, t, s->prev_phase, delta, prev_end - prev_since, elapsed);
    c->sched_unattributed_ns += prev_since - t0;
}

/* One tick over the threads the timeline saw: slot index, tid and state of each. */
void lp_sched_tick(lp_core *c, const lp_sched_seen *seen, int n, int64_t now)
{
    pthread_mutex_lock(&c->sched_lock);
    lp_read_process_cpu(c);
    int64_t throttled = lp_read_throttled_ns(c);
    if (throttled < 0 && c->cpu_stat_fd >= 0) {
        c->sched_throttle_failed++;
    }
    for (int k = 0; k < n; k++) {
        lp_sched_thread *t = &c->sched[seen[k].slot];
        if (t->tid != seen[k].tid) {
            /* A thread new to this slot: open its schedstat, and start its account here. */
            char path[64];
            if (t->fd >= 0) {
                close(t->fd);
            }
            snprintf(path, sizeof path, "/proc/self/task/%lld/schedstat", (long long)seen[k].tid);
            t->fd = lp_procio_open(path);
            t->tid = seen[k].tid;
            t->t_ns = 0;
            memset(t->recent_blocked, 0, sizeof t->recent_blocked);
            if (t->fd < 0) {
                if (c->sched_reason[0] == '\0') {
                    snprintf(c->sched_reason, LP_REASON_LEN, "cannot open %s: %s", path, strerror(errno));
                }
                continue;
            }
            c->sched_threads_seen++;
        }
        int64_t cpu, wait;
        if (t->fd < 0 || lp_read_schedstat(c, t, &cpu, &wait) < 0) {
            t->t_ns = 0;
            continue;
        }
        if (t->t_ns > 0 && now > t->t_ns && cpu >= t->cpu_ns && wait >= t->wait_ns) {
            int64_t delta[LP_SCHED_FIELDS];
            int64_t elapsed = now - t->t_ns;
            int64_t queued = wait - t->wait_ns;
            int64_t thr = 0;
            if (throttled >= 0 && t->throttled_ns >= 0 && throttled > t->throttled_ns) {
                thr = throttled - t->throttled_ns;
                thr = thr < queued ? thr : queued;
            }
            delta[LP_SCHED_ELAPSED] = elapsed;
            delta[LP_SCHED_ON_CPU] = cpu - t->cpu_ns;
            int64_t rest = elapsed - delta[LP_SCHED_ON_CPU] - queued;
            if (rest < 0 && queued > 0) {
                /* A wait credited now that began in an earlier interval (see the top); no
                 * more than this interval's wait (the CPU time lags too). */
                double throttled_share = (double)thr / (double)queued;
                int64_t moved = lp_sched_reclaim(c, t, -rest < queued ? -rest : queued, throttled_share);
                thr -= (int64_t)((double)moved * throttled_share);
                thr = thr > 0 ? thr : 0;
                queued -= moved;
            }
            delta[LP_SCHED_RUNQUEUE] = queued > thr ? queued - thr : 0;
            delta[LP_SCHED_THROTTLED] = thr;
            /* What is left negative is schedstat's lag (a thread on a CPU right now is a
             * little behind), never a negative blocked time. */
            delta[LP_SCHED_BLOCKED] = rest > 0 ? rest : 0;
            lp_sched_attribute(c, t, &seen[k].state, seen[k].state_read, t->t_ns, now, delta);
        }
        t->t_ns = now;
        t->cpu_ns = cpu;
        t->wait_ns = wait;
        t->throttled_ns = throttled;
    }
    pthread_mutex_unlock(&c->sched_lock);
}

/* ===================================================================== the Python view */

static PyObject *lp_sched_row(int32_t node, const int64_t *b)
{
    return Py_BuildValue("(iLLLLL)", (int)node, (long long)b[LP_SCHED_ELAPSED], (long long)b[LP_SCHED_ON_CPU],
                         (long long)b[LP_SCHED_RUNQUEUE], (long long)b[LP_SCHED_THROTTLED],
                         (long long)b[LP_SCHED_BLOCKED]);
}

static PyObject *lp_text_or_none(const char *text)
{
    if (text[0] == '\0') {
        Py_RETURN_NONE;
    }
    return PyUnicode_DecodeFSDefault(text);
}

/* sched(): what was attributed so far (see _sampler.pyi). */
PyObject *lp_sched_dict(lp_core *c)
{
    PyObject *rows = PyList_New(0);
    if (rows == NULL) {
        return NULL;
    }
    pthread_mutex_lock(&c->sched_lock);
    int failed = 0;
    if (c->sched_outside[LP_SCHED_ELAPSED] > 0) {
        PyObject *row = lp_sched_row(-1, c->sched_outside);
        failed = row == NULL || PyList_Append(rows, row) < 0;
        Py_XDECREF(row);
    }
    for (int32_t node = 0; !failed && node < c->sched_nodes; node++) {
        const int64_t *b = c->sched_by_node + (size_t)node * LP_SCHED_FIELDS;
        if (b[LP_SCHED_ELAPSED] > 0) {
            PyObject *row = lp_sched_row(node, b);
            failed = row == NULL || PyList_Append(rows, row) < 0;
            Py_XDECREF(row);
        }
    }
    int64_t unattributed = c->sched_unattributed_ns, seen = c->sched_threads_seen;
    int64_t throttle_failed = c->sched_throttle_failed;
    char reason[LP_REASON_LEN], throttle_reason[LP_REASON_LEN];
    memcpy(reason, c->sched_reason, sizeof reason);
    memcpy(throttle_reason, c->throttle_reason, sizeof throttle_reason);
    pthread_mutex_unlock(&c->sched_lock);
    if (failed) {
        Py_DECREF(rows);
        return NULL;
    }
    pthread_mutex_lock(&c->sched_lock);
    int64_t proc_cpu = c->proc_cpu_ns, threads = c->proc_threads, threads_max = c->proc_threads_max;
    pthread_mutex_unlock(&c->sched_lock);
    return Py_BuildValue("{s:N,s:L,s:L,s:N,s:N,s:L,s:N,s:L,s:L,s:L}", "phases", rows, "unattributed_ns",
                         (long long)unattributed, "threads", (long long)seen, "reason",
                         lp_text_or_none(reason), "throttle_reason", lp_text_or_none(throttle_reason),
                         "throttle_failed_reads", (long long)throttle_failed, "throttle_source",
                         c->cpu_stat_path ? PyUnicode_DecodeFSDefault(c->cpu_stat_path) : Py_NewRef(Py_None),
                         "process_cpu_ns", (long long)proc_cpu, "process_threads", (long long)threads,
                         "process_threads_max", (long long)threads_max);
}
