/* Test-only: exposes accounting/_nvml.h to ctypes so the tests can drive the header exactly
 * as the sampler does (one lp_nvml, open, sample per tick, close), against the stub library. */
#include <stddef.h>
#include <stdint.h>

#include "accounting/_nvml.h"

static lp_nvml shim_nv;

int shim_open(char *why, size_t why_len)
{
    return lp_nvml_open(&shim_nv, why, why_len);
}
int shim_count(void)
{
    return lp_nvml_device_count(&shim_nv);
}
void shim_sample(unsigned pid, int32_t *busy, int32_t *mine, int n)
{
    lp_nvml_sample(&shim_nv, pid, busy, mine, n);
}
int shim_name(int i, char *buf, size_t len)
{
    return lp_nvml_device_name(&shim_nv, i, buf, len);
}
void shim_close(void)
{
    lp_nvml_close(&shim_nv);
}
unsigned int shim_buffer_len(void)
{
    return shim_nv.buffer_len;
}
