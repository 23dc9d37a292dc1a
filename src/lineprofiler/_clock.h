/* Clocks shared by the C modules: integer nanoseconds, no Python objects.
 *
 * CLOCK_MONOTONIC is served from the vDSO (about 23 ns here); the thread CPU
 * clock is a real system call (about 530 ns), so callers read it only when
 * the user asked for CPU time. */
#ifndef LP_CLOCK_H
#define LP_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "_common.h"

LP_INLINE int64_t lp_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

LP_INLINE int64_t lp_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Returns -1 when the clock cannot be read, so "could not measure" is not
 * confused with zero. */
LP_INLINE int64_t lp_thread_cpu_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) {
        return -1;
    }
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#endif /* LP_CLOCK_H */
