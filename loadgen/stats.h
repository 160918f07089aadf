/* stats: one worker thread's counters and latency histograms, and their merge after
 * join. Written by its worker thread only; the progress line reads `completed` and
 * `errors_total` through relaxed atomics (plain stores on x86, no shared RMW).
 * Histograms record microseconds in [1 us, 60 s] at 3 significant figures. */
#ifndef LOADGEN_STATS_H
#define LOADGEN_STATS_H

#include <stdatomic.h>
#include <stdint.h>

#include "histogram.h"

#define STATS_LOWEST_US 1
#define STATS_HIGHEST_US 60000000ull
#define STATS_SIG_FIGS 3
#define STATS_MAX_STATUS 600

enum stats_error {
    STATS_ERR_CONNECT, STATS_ERR_READ, STATS_ERR_WRITE, STATS_ERR_TIMEOUT, STATS_ERR_PARSE,
    STATS_ERR_STATUS, STATS_ERR_COUNT
};

struct stats {
    uint64_t requests_sent;        /* sent inside the measured window */
    uint64_t requests_completed;   /* completed inside the measured window */
    uint64_t in_flight_at_end;
    uint64_t connections_established;
    uint64_t connections_failed;   /* connects that never succeeded (per attempt) */
    uint64_t errors[STATS_ERR_COUNT];
    uint64_t status[STATS_MAX_STATUS];            /* every response's status, 0..599 */
    uint64_t unexpected_status[STATS_MAX_STATUS]; /* statuses that differed from expect */
    struct histogram *latency;     /* corrected: from the planned send time */
    struct histogram *service;     /* uncorrected: from the actual send */
    _Atomic uint64_t progress_completed; /* mirrors, for the progress line */
    _Atomic uint64_t progress_errors;
};

/* Initialises s (zeroed counters, two new histograms). Aborts only on OOM. */
void stats_init(struct stats *s);
void stats_free(struct stats *s);
/* Adds src's counters and histograms into dst (after src's thread has been joined). */
void stats_merge(struct stats *dst, const struct stats *src);
/* Sum of all error classes. */
uint64_t stats_errors_total(const struct stats *s);

#endif
