/* timebase: the load generator's one clock. Every timestamp in loadgen (schedule origin,
 * planned and actual send times, response times, the measured window) is CLOCK_MONOTONIC
 * in nanoseconds read through timebase_now_ns, and every absolute sleep or timer uses the
 * same clock. CLOCK_REALTIME appears only to convert --start-at (seconds since the epoch)
 * into that clock, once. Any thread. */
#ifndef LOADGEN_TIMEBASE_H
#define LOADGEN_TIMEBASE_H

#include <stdint.h>

/* The clock id every loadgen timestamp is taken from. */
#define TIMEBASE_CLOCK CLOCK_MONOTONIC

/* Now, in ns of TIMEBASE_CLOCK. */
uint64_t timebase_now_ns(void);
/* Sleeps until TIMEBASE_CLOCK reaches t_ns (returns at once when it has). Returns early,
 * with -EINTR, only when *interrupted becomes nonzero (checked after each signal). */
int timebase_sleep_until(uint64_t t_ns, volatile const int *interrupted);
/* Now on CLOCK_REALTIME, in seconds since the epoch. */
double timebase_realtime_s(void);
/* Converts an absolute CLOCK_REALTIME time (seconds since the epoch) into TIMEBASE_CLOCK
 * ns, from one pair of readings of both clocks (the realtime reading taken between two
 * monotonic ones, the pair with the narrowest bracket of three kept). Sets *ahead_s to
 * `realtime_s - now` (negative: that time has passed). Returns the converted time, 0 when
 * it lies before the monotonic clock's origin. */
uint64_t timebase_from_realtime(double realtime_s, double *ahead_s);
/* 0 when libuv's uv_hrtime() reads the same clock as timebase_now_ns (checked by reading
 * both, within `tolerance_ns`), -EINVAL otherwise. For the unit tests and a start-up
 * self-check: loadgen uses libuv's loop but never its clock. */
int timebase_check_uv(uint64_t tolerance_ns);

#endif
