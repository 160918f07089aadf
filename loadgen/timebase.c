/* timebase: CLOCK_MONOTONIC ns for every loadgen timestamp, the one conversion from
 * CLOCK_REALTIME for --start-at, and a self-check that libuv's clock is the same one. */
#include "timebase.h"

#include <errno.h>
#include <math.h>
#include <time.h>
#include <uv.h>

static uint64_t ts_ns(const struct timespec *ts)
{
    return (uint64_t)ts->tv_sec * 1000000000u + (uint64_t)ts->tv_nsec;
}

uint64_t timebase_now_ns(void)
{
    struct timespec ts;
    clock_gettime(TIMEBASE_CLOCK, &ts);
    return ts_ns(&ts);
}

int timebase_sleep_until(uint64_t t_ns, volatile const int *interrupted)
{
    struct timespec ts = {.tv_sec = (time_t)(t_ns / 1000000000u),
                          .tv_nsec = (long)(t_ns % 1000000000u)};
    while (clock_nanosleep(TIMEBASE_CLOCK, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (interrupted && *interrupted)
            return -EINTR;
    return 0;
}

double timebase_realtime_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

uint64_t timebase_from_realtime(double realtime_s, double *ahead_s)
{
    uint64_t best_width = UINT64_MAX, mono_mid = 0;
    struct timespec real = {0};
    for (int i = 0; i < 3; i++) {
        struct timespec r;
        uint64_t m0 = timebase_now_ns();
        clock_gettime(CLOCK_REALTIME, &r);
        uint64_t m1 = timebase_now_ns();
        if (m1 - m0 < best_width) {
            best_width = m1 - m0;
            mono_mid = m0 + (m1 - m0) / 2;
            real = r;
        }
    }
    /* Whole seconds and the fraction apart, so that the difference keeps ns precision. */
    double whole = floor(realtime_s);
    double diff_s = (whole - (double)real.tv_sec) +
                    ((realtime_s - whole) - (double)real.tv_nsec / 1e9);
    if (ahead_s)
        *ahead_s = diff_s;
    double t = (double)mono_mid + diff_s * 1e9;
    if (!(t > 0.0))
        return 0;
    return (uint64_t)llround(t);
}

int timebase_check_uv(uint64_t tolerance_ns)
{
    uint64_t a = timebase_now_ns();
    uint64_t u = uv_hrtime();
    uint64_t b = timebase_now_ns();
    if (u + tolerance_ns < a || u > b + tolerance_ns)
        return -EINVAL;
    return 0;
}
