/* A stand-in for libnvidia-ml.so.1, for tests only: it answers the NVML calls that
 * accounting/_nvml.h makes, from a script the test sets through the lpstub_* functions.
 *
 * It follows the documented behaviour of the real calls where the header relies on it:
 * nvmlDeviceGetProcessUtilization returns only samples newer than lastSeenTimeStamp,
 * NVML_ERROR_NOT_FOUND when there are none, and NVML_ERROR_INSUFFICIENT_SIZE with the needed
 * count when the caller's buffer is too small. A device can also be scripted "steady": every
 * call then answers one new sample for one pid (0: the calling process) at a fixed SM share,
 * newer than lastSeenTimeStamp, as a process keeping a GPU busy at that share would see.
 * After fork it behaves as driver 580 did on an H200: the child's copy of the parent's state is
 * not initialised (every call answers NVML_ERROR_UNINITIALIZED) until the child calls nvmlInit
 * itself, and nvmlShutdown on that copy is fatal (the real driver crashed the child with
 * SIGSEGV and left the parent's NVML answering NVML_ERROR_UNKNOWN): here it aborts.
 * The running-process calls (_v3) list, for the compute call, the steady pid and every pid with a
 * sample on the device (plus any scripted extra processes), and for the graphics call the pid set
 * by lpstub_set_graphics. -DLPSTUB_NO_RUNNING leaves both calls out.
 * Global state is fine here: one test process, one scripted device set. Build variants: -DLPSTUB_NO_UTIL leaves out
 * nvmlDeviceGetUtilizationRates, -DLPSTUB_NO_PROC leaves out nvmlDeviceGetProcessUtilization. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

#define STUB_DEVICES 16
#define STUB_SAMPLES 512

typedef struct {
    unsigned int gpu;
    unsigned int memory;
} nvmlUtilization_t;

typedef struct {
    unsigned int pid;
    unsigned long long timeStamp;
    unsigned int smUtil;
    unsigned int memUtil;
    unsigned int encUtil;
    unsigned int decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId;
    unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct stub_device *nvmlDevice_t;
struct stub_device {
    int index;
};

static struct {
    int init_rc, count_rc, init_calls, shutdown_calls, inits_open;
    pid_t init_pid; /* the process whose nvmlInit the open inits belong to */
    unsigned int device_count;
    int handle_rc[STUB_DEVICES];
    int util_rc[STUB_DEVICES];
    unsigned int busy[STUB_DEVICES];
    int proc_rc[STUB_DEVICES]; /* 0: answer from the samples; else returned as is */
    int ignore_last_seen;      /* return old samples too, as some drivers have */
    int steady[STUB_DEVICES];  /* answer one fresh sample per call (see lpstub_set_steady) */
    unsigned int steady_pid[STUB_DEVICES];
    unsigned int steady_sm[STUB_DEVICES];
    nvmlProcessUtilizationSample_t samples[STUB_DEVICES][STUB_SAMPLES];
    unsigned int n_samples[STUB_DEVICES];
    unsigned long long last_seen_arg[STUB_DEVICES];
    int proc_calls[STUB_DEVICES];
    int running_rc[STUB_DEVICES];
    int running_calls[STUB_DEVICES];
    unsigned int extra_processes[STUB_DEVICES];
    int graphics[STUB_DEVICES];
    unsigned int graphics_pid[STUB_DEVICES];
    struct stub_device devices[STUB_DEVICES];
} S;

/* ---- the script, set by the test through ctypes ---- */

void lpstub_reset(void)
{
    memset(&S, 0, sizeof S);
    for (int i = 0; i < STUB_DEVICES; i++)
        S.devices[i].index = i;
}
void lpstub_set_init_rc(int rc)
{
    S.init_rc = rc;
}
void lpstub_set_count_rc(int rc)
{
    S.count_rc = rc;
}
void lpstub_set_device_count(unsigned int n)
{
    S.device_count = n;
}
void lpstub_set_handle_rc(int dev, int rc)
{
    S.handle_rc[dev] = rc;
}
void lpstub_set_busy(int dev, unsigned int pct, int rc)
{
    S.busy[dev] = pct;
    S.util_rc[dev] = rc;
}
void lpstub_set_proc_rc(int dev, int rc)
{
    S.proc_rc[dev] = rc;
}
void lpstub_set_ignore_last_seen(int on)
{
    S.ignore_last_seen = on;
}
int lpstub_add_sample(int dev, unsigned int pid, unsigned long long ts, unsigned int sm)
{
    if (S.n_samples[dev] >= STUB_SAMPLES)
        return -1;
    nvmlProcessUtilizationSample_t *s = &S.samples[dev][S.n_samples[dev]++];
    memset(s, 0, sizeof *s);
    s->pid = pid;
    s->timeStamp = ts;
    s->smUtil = sm;
    s->memUtil = sm / 2;
    return 0;
}
void lpstub_set_steady(int dev, unsigned int pid, unsigned int sm)
{
    S.steady[dev] = 1;
    S.steady_pid[dev] = pid;
    S.steady_sm[dev] = sm;
}
unsigned long long lpstub_last_seen_arg(int dev)
{
    return S.last_seen_arg[dev];
}
int lpstub_proc_calls(int dev)
{
    return S.proc_calls[dev];
}
void lpstub_set_running_rc(int dev, int rc)
{
    S.running_rc[dev] = rc;
}
void lpstub_set_extra_processes(int dev, unsigned int n)
{
    S.extra_processes[dev] = n;
}
void lpstub_set_graphics(int dev, unsigned int pid) /* pid 0: the calling process */
{
    S.graphics[dev] = 1;
    S.graphics_pid[dev] = pid;
}
int lpstub_running_calls(int dev)
{
    return S.running_calls[dev];
}
int lpstub_init_calls(void)
{
    return S.init_calls;
}
int lpstub_shutdown_calls(void)
{
    return S.shutdown_calls;
}

/* ---- the NVML calls ---- */

/* Initialised, in this process (a forked child's copy of the parent's state is not). */
static int stub_ready(void)
{
    return S.inits_open > 0 && S.init_pid == getpid();
}

int nvmlInit_v2(void)
{
    if (S.init_pid != getpid()) {
        S.inits_open = 0; /* a forked child starts uninitialised */
        S.init_pid = getpid();
    }
    S.init_calls++;
    if (S.init_rc == 0)
        S.inits_open++;
    return S.init_rc;
}

int nvmlShutdown(void)
{
    if (S.inits_open > 0 && S.init_pid != getpid()) {
        fprintf(stderr, "nvml stub: nvmlShutdown on the parent's NVML state in a forked child\n");
        abort();
    }
    S.shutdown_calls++;
    if (!stub_ready())
        return 1; /* NVML_ERROR_UNINITIALIZED */
    S.inits_open--;
    return 0;
}

const char *nvmlErrorString(int rc)
{
    switch (rc) {
    case 0:
        return "Success";
    case 1:
        return "Uninitialized";
    case 3:
        return "Not Supported";
    case 6:
        return "Not Found";
    case 7:
        return "Insufficient Size";
    case 9:
        return "Driver Not Loaded";
    default:
        return "Unknown Error";
    }
}

int nvmlDeviceGetCount_v2(unsigned int *count)
{
    if (!stub_ready())
        return 1;
    if (S.count_rc)
        return S.count_rc;
    *count = S.device_count;
    return 0;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    if (!stub_ready())
        return 1;
    if (index >= S.device_count || index >= STUB_DEVICES)
        return 2; /* NVML_ERROR_INVALID_ARGUMENT */
    if (S.handle_rc[index])
        return S.handle_rc[index];
    *device = &S.devices[index];
    return 0;
}

int nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    snprintf(name, length, "Stub GPU %d", device->index);
    return 0;
}

#ifndef LPSTUB_NO_UTIL
int nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *rates)
{
    if (!stub_ready())
        return 1;
    int i = device->index;
    if (S.util_rc[i])
        return S.util_rc[i];
    rates->gpu = S.busy[i];
    rates->memory = S.busy[i] / 2;
    return 0;
}
#endif

#ifndef LPSTUB_NO_PROC
int nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *out,
                                    unsigned int *count, unsigned long long last_seen)
{
    if (!stub_ready())
        return 1;
    int i = device->index;
    S.proc_calls[i]++;
    S.last_seen_arg[i] = last_seen;
    if (S.proc_rc[i])
        return S.proc_rc[i];
    if (S.steady[i]) {
        if (!out || *count < 1) {
            *count = 1;
            return 7;
        }
        memset(out, 0, sizeof *out);
        out->pid = S.steady_pid[i] ? S.steady_pid[i] : (unsigned int)getpid();
        out->timeStamp = last_seen + 1;
        out->smUtil = S.steady_sm[i];
        out->memUtil = S.steady_sm[i] / 2;
        *count = 1;
        return 0;
    }
    unsigned int needed = 0;
    for (unsigned int k = 0; k < S.n_samples[i]; k++)
        if (S.ignore_last_seen || S.samples[i][k].timeStamp > last_seen)
            needed++;
    if (needed == 0) {
        *count = 0;
        return 6; /* NVML_ERROR_NOT_FOUND */
    }
    if (!out || *count < needed) {
        *count = needed;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    unsigned int n = 0;
    for (unsigned int k = 0; k < S.n_samples[i]; k++)
        if (S.ignore_last_seen || S.samples[i][k].timeStamp > last_seen)
            out[n++] = S.samples[i][k];
    *count = n;
    return 0;
}
#endif

#ifndef LPSTUB_NO_RUNNING
#define STUB_RUNNING_MAX (STUB_SAMPLES + 1024)
static int stub_running(nvmlDevice_t device, int graphics, unsigned int *count, nvmlProcessInfo_t *infos)
{
    static unsigned int pids[STUB_RUNNING_MAX];
    if (!stub_ready())
        return 1;
    int i = device->index;
    S.running_calls[i]++;
    if (S.running_rc[i])
        return S.running_rc[i];
    unsigned int n = 0;
    if (graphics) {
        if (S.graphics[i])
            pids[n++] = S.graphics_pid[i] ? S.graphics_pid[i] : (unsigned int)getpid();
    } else {
        if (S.steady[i])
            pids[n++] = S.steady_pid[i] ? S.steady_pid[i] : (unsigned int)getpid();
        for (unsigned int k = 0; k < S.n_samples[i]; k++) {
            unsigned int pid = S.samples[i][k].pid, seen = 0;
            for (unsigned int j = 0; j < n; j++)
                seen |= pids[j] == pid;
            if (!seen)
                pids[n++] = pid;
        }
        for (unsigned int e = 0; e < S.extra_processes[i] && n < STUB_RUNNING_MAX; e++)
            pids[n++] = 4000000 + e;
    }
    if (*count < n) {
        *count = n;
        return 7; /* NVML_ERROR_INSUFFICIENT_SIZE */
    }
    for (unsigned int j = 0; j < n; j++) {
        memset(&infos[j], 0, sizeof infos[j]);
        infos[j].pid = pids[j];
        infos[j].usedGpuMemory = 1ULL << 30;
    }
    *count = n;
    return 0;
}

int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                            nvmlProcessInfo_t *infos)
{
    return stub_running(device, 0, count, infos);
}

int nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t device, unsigned int *count,
                                             nvmlProcessInfo_t *infos)
{
    return stub_running(device, 1, count, infos);
}
#endif
