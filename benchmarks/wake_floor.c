/* The CPU a thread that does nothing but wake up at a fixed rate is charged per wake-up: the
 * kernel's timer and the two context switches. The sampler's timeline ticks cannot cost less.
 * Built and run by bench_sampler.py: wake_floor HZ SECONDS prints microseconds per wake-up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int64_t now_ns(clockid_t clock)
{
    struct timespec t;
    clock_gettime(clock, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

int main(int argc, char **argv)
{
    double hz = argc > 1 ? atof(argv[1]) : 10.0;
    double seconds = argc > 2 ? atof(argv[2]) : 5.0;
    if (!(hz > 0.0 && seconds > 0.0)) {
        fprintf(stderr, "usage: wake_floor HZ SECONDS\n");
        return 2;
    }
    int64_t period = (int64_t)(1e9 / hz);
    int n = (int)(hz * seconds);
    int64_t due = now_ns(CLOCK_MONOTONIC);
    int64_t cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
    for (int i = 0; i < n; i++) {
        due += period;
        struct timespec at = {(time_t)(due / 1000000000), (long)(due % 1000000000)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) != 0) {
        }
    }
    printf("%.3f\n", (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / n / 1e3);
    return 0;
}
