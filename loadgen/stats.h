/* stats: one worker thread's counters and histograms (latency, service time, send lag,
 * connection wait), and their merge after join. Written by its worker thread only; the
 * progress line reads `completed` and `errors_total` through relaxed atomics (plain
 * stores on x86, no shared RMW). Histograms record microseconds in [1 us, 60 s] at 3
 * significant figures; a send lag under 1 us is recorded as 1 us (the lowest value). */
#ifndef LOADGEN_STATS_H
#define LOADGEN_STATS_H

#include <stdint.h>

#include "common/base/histogram.h"

#define STATS_LOWEST_US 1
#define STATS_HIGHEST_US 60000000ull
#define STATS_SIG_FIGS 3
#define STATS_MAX_STATUS 600
#define STATS_INTERVAL_SIG_FIGS 2 /* per-interval histograms: 1% resolution, ~20 KiB each */

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
    /* constant rate only (closed loop has no planned times): */
    uint64_t requests_waited;      /* due while no connection had room; sent later */
    uint64_t requests_not_sent;    /* planned inside the window, never sent */
    struct histogram *latency;     /* corrected, from the planned send time, of every request
                                    * of the window: answered, timed out (at the timeout),
                                    * or unanswered when the window closed (in flight, or
                                    * due and not sent: at the window's end). While a worker
                                    * runs it holds only the unanswered ones (the hot path
                                    * records an answer once, into latency_answered);
                                    * stats_finish adds the answered in */
    struct histogram *latency_answered; /* corrected, the answered requests only */
    struct histogram *service;     /* uncorrected: from the actual send */
    struct histogram *send_lag;    /* actual send - planned send, every request sent */
    struct histogram *conn_wait;   /* the send lag of the requests_waited */
    struct histogram *own_lag;     /* the part of send_lag that was the generator's own:
                                    * less the time every connection was held by the
                                    * server (held.h) */
    /* --interval: the corrected latency of each interval of the measured window, by
     * completion time, at STATS_INTERVAL_SIG_FIGS (none when n_intervals is 0) */
    unsigned n_intervals;
    uint64_t interval_ns;
    struct histogram **interval_latency;
    uint64_t progress_completed; /* mirrors for the progress line (atomics.h, relaxed) */
    uint64_t progress_errors;
};

/* A new empty histogram with the layout above. Aborts only on OOM. */
struct histogram *stats_histogram_new(void);
/* Initialises s (zeroed counters, new empty histograms). Aborts only on OOM. */
void stats_init(struct stats *s);
void stats_free(struct stats *s);
/* Adds n empty per-interval latency histograms of interval_ns each to s (n 0: none). */
void stats_intervals_init(struct stats *s, unsigned n, uint64_t interval_ns);
/* Records a corrected latency of `us` completed `since_ns` after the window opened. */
static inline void stats_record_interval(struct stats *s, uint64_t since_ns, uint64_t us)
{
    if (s->n_intervals == 0)
        return;
    uint64_t i = since_ns / s->interval_ns;
    histogram_record(s->interval_latency[i < s->n_intervals ? i : s->n_intervals - 1], us);
}
/* A request of the window without an answer: its corrected latency so far `us`, reached
 * `since_ns` after the window opened (when it timed out, or when the window closed). */
static inline void stats_record_unanswered(struct stats *s, uint64_t since_ns, uint64_t us)
{
    histogram_record(s->latency, us);
    stats_record_interval(s, since_ns, us);
}
/* The end of a worker's recording: adds latency_answered into latency, which from then on
 * holds every request (call once, before stats_merge or reading latency). */
void stats_finish(struct stats *s);
/* Adds src's counters and histograms into dst (after src's thread has been joined); the
 * per-interval ones when both have the same intervals (else dst's are dropped: unknown). */
void stats_merge(struct stats *dst, const struct stats *src);
/* Sum of all error classes. */
uint64_t stats_errors_total(const struct stats *s);

#endif
