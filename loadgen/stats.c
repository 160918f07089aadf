/* stats: counters and histograms of one worker, merged into a total after join. */
#include "stats.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/util.h"

struct histogram *stats_histogram_new(void)
{
    struct histogram *h = histogram_new(STATS_LOWEST_US, STATS_HIGHEST_US, STATS_SIG_FIGS);
    if (h == NULL)
        panic("histogram_new refused its arguments");
    return h;
}

void stats_init(struct stats *s)
{
    memset(s, 0, sizeof *s);
    s->latency = stats_histogram_new();
    s->latency_answered = stats_histogram_new();
    s->service = stats_histogram_new();
    s->send_lag = stats_histogram_new();
    s->conn_wait = stats_histogram_new();
    s->own_lag = stats_histogram_new();
}

void stats_intervals_init(struct stats *s, unsigned n, uint64_t interval_ns)
{
    if (n == 0 || interval_ns == 0)
        return;
    s->interval_latency = xcalloc(n, sizeof *s->interval_latency);
    for (unsigned i = 0; i < n; i++) {
        s->interval_latency[i] = histogram_new(STATS_LOWEST_US, STATS_HIGHEST_US,
                                               STATS_INTERVAL_SIG_FIGS);
        if (s->interval_latency[i] == NULL)
            panic("histogram_new refused its arguments");
    }
    s->n_intervals = n;
    s->interval_ns = interval_ns;
}

static void intervals_free(struct stats *s)
{
    for (unsigned i = 0; i < s->n_intervals; i++)
        histogram_free(s->interval_latency[i]);
    free(s->interval_latency);
    s->interval_latency = NULL;
    s->n_intervals = 0;
}

void stats_free(struct stats *s)
{
    intervals_free(s);
    histogram_free(s->latency);
    histogram_free(s->latency_answered);
    histogram_free(s->service);
    histogram_free(s->send_lag);
    histogram_free(s->conn_wait);
    histogram_free(s->own_lag);
    s->latency = s->latency_answered = s->service = s->send_lag = s->conn_wait = NULL;
    s->own_lag = NULL;
}

void stats_finish(struct stats *s)
{
    if (histogram_merge(s->latency, s->latency_answered) < 0)
        panic("histogram layouts differ");
}

void stats_merge(struct stats *dst, const struct stats *src)
{
    dst->requests_sent += src->requests_sent;
    dst->requests_completed += src->requests_completed;
    dst->in_flight_at_end += src->in_flight_at_end;
    dst->connections_established += src->connections_established;
    dst->connections_failed += src->connections_failed;
    dst->requests_waited += src->requests_waited;
    dst->requests_not_sent += src->requests_not_sent;
    for (int i = 0; i < STATS_ERR_COUNT; i++)
        dst->errors[i] += src->errors[i];
    for (int i = 0; i < STATS_MAX_STATUS; i++) {
        dst->status[i] += src->status[i];
        dst->unexpected_status[i] += src->unexpected_status[i];
    }
    if (histogram_merge(dst->latency, src->latency) < 0 ||
        histogram_merge(dst->latency_answered, src->latency_answered) < 0 ||
        histogram_merge(dst->service, src->service) < 0 ||
        histogram_merge(dst->send_lag, src->send_lag) < 0 ||
        histogram_merge(dst->conn_wait, src->conn_wait) < 0 ||
        histogram_merge(dst->own_lag, src->own_lag) < 0)
        panic("histogram layouts differ");
    if (dst->n_intervals != src->n_intervals || dst->interval_ns != src->interval_ns) {
        intervals_free(dst);
        return;
    }
    for (unsigned i = 0; i < dst->n_intervals; i++)
        if (histogram_merge(dst->interval_latency[i], src->interval_latency[i]) < 0)
            panic("histogram layouts differ");
}

uint64_t stats_errors_total(const struct stats *s)
{
    uint64_t t = 0;
    for (int i = 0; i < STATS_ERR_COUNT; i++)
        t += s->errors[i];
    return t;
}
