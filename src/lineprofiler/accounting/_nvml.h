/* NVML, loaded with dlopen: nothing beyond the NVIDIA driver is needed, no Python package, and
 * the sampler thread can read it once per tick without the GIL.
 *
 * Contract for the sampler:
 *
 *   lp_nvml nv = {0};                        zero-initialise, then
 *   lp_nvml_open(&nv, why, sizeof why)       0, or -1 with a one-line reason in why
 *   lp_nvml_device_count(&nv)                devices, by NVML index (0 when open failed)
 *   lp_nvml_sample(&nv, pid, busy, mine, n)  per device i < n:
 *                                              busy[i]  % of the last NVML window in which any
 *                                                       kernel of any process ran, or -1 when
 *                                                       NVML could not say;
 *                                              mine[i]  this pid's SM share %, the mean of the
 *                                                       samples NVML attributed to the pid since
 *                                                       the previous call; -1 when NVML attributed
 *                                                       none (NOT_FOUND, or the pid was absent):
 *                                                       measured, counts as zero; -2 when the
 *                                                       query failed: not measured.
 *   lp_nvml_device_name(&nv, i, buf, len)    0 and the device's name, or -1
 *   lp_nvml_close(&nv)                       shuts NVML down, frees, unloads; idempotent
 *   lp_nvml_forget_after_fork(&nv)           in a forked child: drops the parent's state
 *                                            without calling NVML; lp_nvml_open may follow
 *
 * Never called concurrently for one lp_nvml (the sampler owns it); no Python, no GIL, no
 * process-wide state: two lp_nvml in one process are independent (NVML counts its inits).
 *
 * The library is libnvidia-ml.so.1. Tests point LINEPROFILER_NVML_LIBRARY at a stub library
 * that answers the same calls; that variable is for tests and diagnosis, not for users.
 *
 * Fork: a child must not use its parent's handle, nor shut it down. On driver 580 (H200) the
 * child's copy answers NVML_ERROR_UNINITIALIZED, nvmlShutdown on it killed the child with
 * SIGSEGV and left the parent's NVML answering NVML_ERROR_UNKNOWN, while a fresh nvmlInit in the
 * child (and that init's own shutdown later) left both working. So the sampler forgets the
 * parent's state in the child and opens NVML again if it samples there.
 *
 * Cost: nvmlDeviceGetProcessUtilization takes 1.8-2.5 ms per call on that driver (the other
 * calls here 2-60 us), so it is asked only for a device on which the pid has a compute or
 * graphics context; a process that never touched the GPU pays two short list calls. */
#ifndef LP_NVML_H
#define LP_NVML_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LP_NVML_MAX_DEVICES 16
#define LP_NVML_LIBRARY     "libnvidia-ml.so.1"
#define LP_NVML_LIBRARY_ENV "LINEPROFILER_NVML_LIBRARY"

/* mine[i] values that are not percentages. */
#define LP_NVML_NO_SAMPLE  (-1) /* measured: no sample attributed to the pid */
#define LP_NVML_UNREADABLE (-2) /* the query failed: not measured */

/* The parts of nvml.h used here. NVML's ABI is stable: these layouts and codes have not changed
 * since the calls were introduced, and nvidia-ml-py declares them the same way. */
typedef int lp_nvmlReturn_t;
typedef struct lp_nvmlDevice_st *lp_nvmlDevice_t;
typedef struct {
    unsigned int gpu;
    unsigned int memory;
} lp_nvmlUtilization_t;
typedef struct {
    unsigned int pid;
    unsigned long long timeStamp; /* CPU time in microseconds */
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} lp_nvmlProcessUtilizationSample_t;

/* nvmlProcessInfo_t as the _v3 running-process calls fill it. */
typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} lp_nvmlProcessInfo_t;

#define LP_NVML_SUCCESS                 0
#define LP_NVML_ERROR_NOT_FOUND         6
#define LP_NVML_ERROR_INSUFFICIENT_SIZE 7
#define LP_NVML_DEVICE_NAME_BUFFER_SIZE 96

typedef lp_nvmlReturn_t (*lp_nvml_init_fn)(void);
typedef lp_nvmlReturn_t (*lp_nvml_shutdown_fn)(void);
typedef const char *(*lp_nvml_error_string_fn)(lp_nvmlReturn_t);
typedef lp_nvmlReturn_t (*lp_nvml_count_fn)(unsigned int *);
typedef lp_nvmlReturn_t (*lp_nvml_handle_fn)(unsigned int, lp_nvmlDevice_t *);
typedef lp_nvmlReturn_t (*lp_nvml_util_fn)(lp_nvmlDevice_t, lp_nvmlUtilization_t *);
typedef lp_nvmlReturn_t (*lp_nvml_proc_util_fn)(lp_nvmlDevice_t, lp_nvmlProcessUtilizationSample_t *,
                                                unsigned int *, unsigned long long);
typedef lp_nvmlReturn_t (*lp_nvml_name_fn)(lp_nvmlDevice_t, char *, unsigned int);
typedef lp_nvmlReturn_t (*lp_nvml_running_fn)(lp_nvmlDevice_t, unsigned int *, lp_nvmlProcessInfo_t *);

/* Processes read per running-process call; a device with more answers "cannot tell". */
#define LP_NVML_RUNNING_MAX 64

typedef struct {
    void *library;
    int device_count;
    int initialised; /* nvmlInit succeeded: close must shut down */
    lp_nvml_shutdown_fn shutdown;
    lp_nvml_error_string_fn error_string;
    lp_nvml_util_fn utilization;
    lp_nvml_proc_util_fn process_utilization; /* NULL on drivers without it: mine is -2 */
    lp_nvml_name_fn name;
    /* Compute and graphics processes with a context on a device; NULL on drivers without the
     * _v3 calls, and then the utilisation query is asked every time. */
    lp_nvml_running_fn running[2];
    lp_nvmlProcessInfo_t running_buffer[LP_NVML_RUNNING_MAX];
    lp_nvmlDevice_t devices[LP_NVML_MAX_DEVICES];
    /* Newest sample timestamp seen per device, passed back as lastSeenTimeStamp so each call
     * returns only new samples; 0 before the first call lets the driver pick its window. */
    unsigned long long last_seen[LP_NVML_MAX_DEVICES];
    /* One buffer for all devices, grown when the driver reports more processes; owned here. */
    lp_nvmlProcessUtilizationSample_t *buffer;
    unsigned int buffer_len;
} lp_nvml;

static inline void lp_nvml__why(char *why, size_t why_len, const char *prefix, const char *detail)
{
    if (why && why_len)
        snprintf(why, why_len, "%s%s%s", prefix, detail ? ": " : "", detail ? detail : "");
}

static inline const char *lp_nvml__error(const lp_nvml *nv, lp_nvmlReturn_t code, char *tmp, size_t tmp_len)
{
    const char *text = nv->error_string ? nv->error_string(code) : NULL;
    if (text)
        return text;
    snprintf(tmp, tmp_len, "NVML error %d", code);
    return tmp;
}

/* dlsym returns an object pointer; converting through memcpy is the form ISO C permits for
 * function pointers, and the sizes agree on every POSIX platform. */
static inline void *lp_nvml__symbol(void *library, const char *name, const char *fallback)
{
    void *symbol = dlsym(library, name);
    if (!symbol && fallback)
        symbol = dlsym(library, fallback);
    return symbol;
}

#define LP_NVML__BIND(dst, sym)                                                                              \
    do {                                                                                                     \
        void *lp_sym_ = (sym);                                                                               \
        memcpy(&(dst), &lp_sym_, sizeof(dst));                                                               \
    } while (0)

static inline void lp_nvml_close(lp_nvml *nv)
{
    if (nv->initialised && nv->shutdown)
        (void)nv->shutdown();
    nv->initialised = 0;
    if (nv->library)
        dlclose(nv->library);
    free(nv->buffer);
    memset(nv, 0, sizeof *nv);
}

/* In a forked child: drop the parent's NVML state without calling into NVML or unloading it.
 * The child holds a copy of the parent's NVML internals and shares its driver descriptors;
 * nvmlShutdown or dlclose on that copy is not safe. lp_nvml_open then initialises NVML again
 * for the child, as a second user of the loaded library. */
static inline void lp_nvml_forget_after_fork(lp_nvml *nv)
{
    free(nv->buffer);
    memset(nv, 0, sizeof *nv);
}

static inline int lp_nvml_open(lp_nvml *nv, char *why, size_t why_len)
{
    char tmp[64];
    memset(nv, 0, sizeof *nv);
    const char *path = getenv(LP_NVML_LIBRARY_ENV);
    if (!path || !*path)
        path = LP_NVML_LIBRARY;
    /* RTLD_LOCAL: NVML's symbols must not satisfy anyone else's lookups in the user's process. */
    nv->library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!nv->library) {
        const char *detail = dlerror();
        lp_nvml__why(why, why_len, "cannot load NVML (no NVIDIA driver?)", detail ? detail : path);
        return -1;
    }
    lp_nvml_init_fn init;
    lp_nvml_count_fn count;
    lp_nvml_handle_fn handle;
    LP_NVML__BIND(init, lp_nvml__symbol(nv->library, "nvmlInit_v2", "nvmlInit"));
    LP_NVML__BIND(count, lp_nvml__symbol(nv->library, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"));
    LP_NVML__BIND(
        handle, lp_nvml__symbol(nv->library, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"));
    LP_NVML__BIND(nv->shutdown, lp_nvml__symbol(nv->library, "nvmlShutdown", NULL));
    LP_NVML__BIND(nv->error_string, lp_nvml__symbol(nv->library, "nvmlErrorString", NULL));
    LP_NVML__BIND(nv->utilization, lp_nvml__symbol(nv->library, "nvmlDeviceGetUtilizationRates", NULL));
    LP_NVML__BIND(nv->process_utilization,
                  lp_nvml__symbol(nv->library, "nvmlDeviceGetProcessUtilization", NULL));
    LP_NVML__BIND(nv->name, lp_nvml__symbol(nv->library, "nvmlDeviceGetName", NULL));
    LP_NVML__BIND(nv->running[0],
                  lp_nvml__symbol(nv->library, "nvmlDeviceGetComputeRunningProcesses_v3", NULL));
    LP_NVML__BIND(nv->running[1],
                  lp_nvml__symbol(nv->library, "nvmlDeviceGetGraphicsRunningProcesses_v3", NULL));
    if (!init || !count || !handle || !nv->shutdown || !nv->utilization) {
        lp_nvml__why(why, why_len, "NVML library lacks nvmlInit/nvmlDeviceGetUtilizationRates", path);
        lp_nvml_close(nv);
        return -1;
    }
    lp_nvmlReturn_t rc = init();
    if (rc != LP_NVML_SUCCESS) {
        lp_nvml__why(why, why_len, "nvmlInit failed", lp_nvml__error(nv, rc, tmp, sizeof tmp));
        lp_nvml_close(nv);
        return -1;
    }
    nv->initialised = 1;
    unsigned int n = 0;
    rc = count(&n);
    if (rc != LP_NVML_SUCCESS) {
        lp_nvml__why(why, why_len, "nvmlDeviceGetCount failed", lp_nvml__error(nv, rc, tmp, sizeof tmp));
        lp_nvml_close(nv);
        return -1;
    }
    if (n == 0) {
        lp_nvml__why(why, why_len, "NVML sees no GPU", NULL);
        lp_nvml_close(nv);
        return -1;
    }
    if (n > LP_NVML_MAX_DEVICES)
        n = LP_NVML_MAX_DEVICES;
    for (unsigned int i = 0; i < n; i++) {
        rc = handle(i, &nv->devices[i]);
        if (rc != LP_NVML_SUCCESS) {
            /* A device NVML cannot open (lost, no permission) keeps its index with no handle:
             * its columns read -1/-2 rather than shifting later devices down an index. */
            nv->devices[i] = NULL;
        }
    }
    nv->device_count = (int)n;
    return 0;
}

static inline int lp_nvml_device_count(const lp_nvml *nv)
{
    return nv->device_count;
}

static inline int lp_nvml_device_name(const lp_nvml *nv, int i, char *buf, size_t len)
{
    if (!buf || len == 0)
        return -1;
    buf[0] = '\0';
    if (i < 0 || i >= nv->device_count || !nv->devices[i] || !nv->name)
        return -1;
    char name[LP_NVML_DEVICE_NAME_BUFFER_SIZE];
    if (nv->name(nv->devices[i], name, sizeof name) != LP_NVML_SUCCESS)
        return -1;
    name[sizeof name - 1] = '\0';
    snprintf(buf, len, "%s", name);
    return 0;
}

/* 1: the pid has a compute or graphics context on device i; 0: it has neither; -1: cannot tell
 * (a driver without the calls, an error, more processes than the buffer holds). */
static inline int lp_nvml__present(lp_nvml *nv, int i, unsigned pid)
{
    for (int k = 0; k < 2; k++) {
        if (!nv->running[k])
            return -1;
        unsigned int count = LP_NVML_RUNNING_MAX;
        if (nv->running[k](nv->devices[i], &count, nv->running_buffer) != LP_NVML_SUCCESS)
            return -1;
        if (count > LP_NVML_RUNNING_MAX)
            count = LP_NVML_RUNNING_MAX;
        for (unsigned int j = 0; j < count; j++) {
            if (nv->running_buffer[j].pid == pid)
                return 1;
        }
    }
    return 0;
}

/* This pid's share on one device since the previous call; advances last_seen. */
static inline int32_t lp_nvml__mine(lp_nvml *nv, int i, unsigned pid)
{
    if (!nv->process_utilization || !nv->devices[i])
        return LP_NVML_UNREADABLE;
    if (!nv->buffer) {
        nv->buffer = calloc(64, sizeof *nv->buffer);
        if (!nv->buffer)
            return LP_NVML_UNREADABLE;
        nv->buffer_len = 64;
    }
    unsigned int count = nv->buffer_len;
    lp_nvmlReturn_t rc = nv->process_utilization(nv->devices[i], nv->buffer, &count, nv->last_seen[i]);
    if (rc == LP_NVML_ERROR_INSUFFICIENT_SIZE) {
        /* More processes than the buffer holds: grow to what the driver asked for, with room
         * for a few more that may appear before the retry. */
        unsigned int want = count + 16;
        if (want <= nv->buffer_len || want > 65536)
            return LP_NVML_UNREADABLE;
        lp_nvmlProcessUtilizationSample_t *grown = realloc(nv->buffer, (size_t)want * sizeof *grown);
        if (!grown)
            return LP_NVML_UNREADABLE;
        nv->buffer = grown;
        nv->buffer_len = want;
        count = want;
        rc = nv->process_utilization(nv->devices[i], nv->buffer, &count, nv->last_seen[i]);
    }
    if (rc == LP_NVML_ERROR_NOT_FOUND)
        return LP_NVML_NO_SAMPLE; /* no new sample for anyone: an answer, not an error */
    if (rc != LP_NVML_SUCCESS)
        return LP_NVML_UNREADABLE;
    if (count > nv->buffer_len)
        count = nv->buffer_len;
    unsigned long long newest = nv->last_seen[i];
    uint64_t sum = 0;
    unsigned int found = 0;
    for (unsigned int k = 0; k < count; k++) {
        const lp_nvmlProcessUtilizationSample_t *s = &nv->buffer[k];
        /* Drivers have returned samples at or before lastSeenTimeStamp; those were counted by
         * the previous call. */
        if (s->timeStamp <= nv->last_seen[i])
            continue;
        if (s->timeStamp > newest)
            newest = s->timeStamp;
        if (s->pid == pid) {
            sum += s->smUtil > 100 ? 100 : s->smUtil;
            found++;
        }
    }
    nv->last_seen[i] = newest;
    if (!found)
        return LP_NVML_NO_SAMPLE;
    return (int32_t)((sum + found / 2) / found);
}

static inline void lp_nvml_sample(lp_nvml *nv, unsigned pid, int32_t *busy, int32_t *mine, int n)
{
    for (int i = 0; i < n; i++) {
        busy[i] = -1;
        mine[i] = LP_NVML_UNREADABLE;
        if (i >= nv->device_count || !nv->devices[i])
            continue;
        lp_nvmlUtilization_t rates;
        if (nv->utilization(nv->devices[i], &rates) == LP_NVML_SUCCESS)
            busy[i] = rates.gpu > 100 ? 100 : (int32_t)rates.gpu;
        /* No context here: nothing can be attributed to the pid, a measured zero, without the
         * costly query. last_seen stays: the next query returns what came since. */
        if (nv->process_utilization && lp_nvml__present(nv, i, pid) == 0)
            mine[i] = LP_NVML_NO_SAMPLE;
        else
            mine[i] = lp_nvml__mine(nv, i, pid);
    }
}

#endif /* LP_NVML_H */
