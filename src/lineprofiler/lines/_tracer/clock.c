/* The calibration of the tracer's clock: whether the TSC may stand in for CLOCK_MONOTONIC, and
 * its scale to nanoseconds, measured against CLOCK_MONOTONIC from import to report time. */
#include "tracer.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#if LP_HAVE_TSC
#include <cpuid.h>
#endif

#if LP_HAVE_TSC
/* The TSC may stand in for a clock only when it ticks at a constant rate in
 * every power state (CPUID 0x80000007 EDX bit 8, "invariant TSC"), and the
 * kernel has not demoted it to an unreliable clocksource. */
int lp_tsc_usable(void)
{
    unsigned int a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u) {
        return 0;
    }
    if (!__get_cpuid(0x80000007u, &a, &b, &c, &d) || !(d & (1u << 8))) {
        return 0;
    }
    FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
    if (f != NULL) {
        char buf[64] = {0};
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        /* The kernel falls back to these when it found the TSC unstable. */
        if (strncmp(buf, "hpet", 4) == 0 || strncmp(buf, "acpi_pm", 7) == 0 ||
            strncmp(buf, "jiffies", 7) == 0) {
            return 0;
        }
    }
    return 1;
}
#endif

/* Reads (tsc, ns) as close together as it can: the TSC is read on both sides
 * of the monotonic read and the midpoint kept. */
void lp_clock_pair(int64_t *tsc, int64_t *ns)
{
#if LP_HAVE_TSC
    int64_t a = (int64_t)__rdtsc();
    *ns = lp_monotonic_ns();
    int64_t b = (int64_t)__rdtsc();
    *tsc = a + (b - a) / 2;
#else
    *ns = lp_monotonic_ns();
    *tsc = *ns;
#endif
}

/* Nanoseconds per tick of the tracer's clock. For the TSC this is measured
 * against CLOCK_MONOTONIC from import to now, and waits (GIL released) until
 * that interval is at least 20 ms, so the scale is good to a few ppm. */
double lp_ns_per_tick(lp_TracerObject *tr)
{
    if (tr->clock != LP_CLOCK_TSC) {
        return 1.0;
    }
    lp_state *st = tr->st;
    int idle = st->active != (PyObject *)tr;
    if (idle && tr->idle_scale > 0.0) {
        return tr->idle_scale;
    }
    int64_t tsc, ns;
    lp_clock_pair(&tsc, &ns);
    if (ns - st->cal_ns0 < 20000000) {
        struct timespec req;
        int64_t wait = 20000000 - (ns - st->cal_ns0);
        req.tv_sec = (time_t)(wait / 1000000000);
        req.tv_nsec = (long)(wait % 1000000000);
        Py_BEGIN_ALLOW_THREADS
        while (nanosleep(&req, &req) != 0 && errno == EINTR) {
        }
        Py_END_ALLOW_THREADS
        lp_clock_pair(&tsc, &ns);
    }
    if (tsc <= st->cal_tsc0) {
        return 1.0;
    }
    double scale = (double)(ns - st->cal_ns0) / (double)(tsc - st->cal_tsc0);
    if (idle) {
        tr->idle_scale = scale;
    }
    return scale;
}

const char *lp_clock_name(int clock)
{
    switch (clock) {
    case LP_CLOCK_TSC:
        return "tsc";
    case LP_CLOCK_MONOTONIC:
        return "monotonic";
    default:
        return "test";
    }
}
