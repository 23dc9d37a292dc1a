/* NVML, loaded with dlopen so nothing beyond the driver is needed. Placeholder: the GPU work
 * fills it in; until then NVML is reported unavailable. Contract for the sampler:
 *
 *   lp_nvml nv;                            zero-initialise, then
 *   lp_nvml_open(&nv, why, sizeof why)     0, or -1 with the reason in why
 *   lp_nvml_device_count(&nv)              devices by NVML index
 *   lp_nvml_sample(&nv, pid, busy, mine, n)  per device: busy % (-1: unreadable) and this pid's
 *                                          SM share % (-1: NVML attributed no sample to the pid)
 *   lp_nvml_close(&nv)
 *
 * All without the GIL; never called concurrently for one lp_nvml. */
#ifndef LP_NVML_H
#define LP_NVML_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LP_NVML_MAX_DEVICES 16

typedef struct {
    void *library;
    int device_count;
} lp_nvml;

static inline int lp_nvml_open(lp_nvml *nv, char *why, size_t why_len)
{
    nv->library = NULL;
    nv->device_count = 0;
    if (why && why_len) {
        strncpy(why, "NVML support is not built yet", why_len - 1);
        why[why_len - 1] = '\0';
    }
    return -1;
}

static inline int lp_nvml_device_count(const lp_nvml *nv) { return nv->device_count; }

static inline void lp_nvml_sample(lp_nvml *nv, unsigned pid, int32_t *busy, int32_t *mine, int n)
{
    (void)nv;
    (void)pid;
    for (int i = 0; i < n; i++) {
        busy[i] = -1;
        mine[i] = -1;
    }
}

static inline void lp_nvml_close(lp_nvml *nv) { nv->library = NULL; }

#endif /* LP_NVML_H */
