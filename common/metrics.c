/* metrics: Prometheus exposition of the merged per-thread counters. Rendering is
 * O(threads x buckets); it allocates a scratch histogram per scrape (not hot path). */
#include "metrics.h"

#include <stdlib.h>

static const char *const route_names[ROUTE_COUNT] = {
    "ping", "user_get", "user_list", "user_create", "metrics", "other",
};
static const uint16_t status_codes[MS_COUNT] = {
    200, 201, 400, 401, 404, 405, 408, 413, 414, 415, 431, 500, 503, 0,
};

#define LAT_LOW_US 1
#define LAT_HIGH_US 60000000ull
#define LAT_SIGFIGS 2

void metrics_init(struct metrics *m)
{
    *m = (struct metrics){0};
    m->latency_us = histogram_new(LAT_LOW_US, LAT_HIGH_US, LAT_SIGFIGS);
    if (m->latency_us == NULL)
        panic("metrics: histogram_new failed");
}

void metrics_destroy(struct metrics *m)
{
    histogram_free(m->latency_us);
    m->latency_us = NULL;
}

static unsigned status_index(unsigned status)
{
    switch (status) {
    case 200: return MS_200;
    case 201: return MS_201;
    case 400: return MS_400;
    case 401: return MS_401;
    case 404: return MS_404;
    case 405: return MS_405;
    case 408: return MS_408;
    case 413: return MS_413;
    case 414: return MS_414;
    case 415: return MS_415;
    case 431: return MS_431;
    case 500: return MS_500;
    case 503: return MS_503;
    default: return MS_OTHER;
    }
}

void metrics_count_request(struct metrics *m, unsigned route, unsigned status,
                           uint64_t latency_us)
{
    if (route >= ROUTE_COUNT)
        route = ROUTE_OTHER;
    counter_inc(&m->requests[route][status_index(status)]);
    histogram_record(m->latency_us, latency_us ? latency_us : 1);
}

void metrics_add(uint64_t *counter, int64_t delta)
{
    counter_set(counter, counter_get(counter) + (uint64_t)delta);
}

struct bucket_ctx {
    struct buf *out;
    uint64_t cumulative;
};

static void emit_bucket(uint64_t upper, uint64_t count, void *ctx)
{
    struct bucket_ctx *bc = ctx;
    bc->cumulative += count;
    buf_printf(bc->out, "http_handler_latency_us_bucket{le=\"%llu\"} %llu\n",
               (unsigned long long)upper, (unsigned long long)bc->cumulative);
}

void metrics_render(const struct metrics_registry *reg, struct buf *out)
{
    uint64_t req[ROUTE_COUNT][MS_COUNT] = {{0}};
    uint64_t overload = 0, accepted = 0, rejected = 0;
    int64_t open = 0;
    struct histogram *lat = histogram_new(LAT_LOW_US, LAT_HIGH_US, LAT_SIGFIGS);
    for (unsigned t = 0; t < reg->count; t++) {
        const struct metrics *m = reg->threads[t];
        for (unsigned r = 0; r < ROUTE_COUNT; r++)
            for (unsigned s = 0; s < MS_COUNT; s++)
                req[r][s] += counter_get(&m->requests[r][s]);
        overload += counter_get(&m->overload_rejections);
        accepted += counter_get(&m->connections_accepted);
        rejected += counter_get(&m->connections_rejected);
        open += (int64_t)counter_get((const uint64_t *)&m->open_connections);
        histogram_merge(lat, m->latency_us);
    }
    buf_append_str(out, "# HELP http_requests_total Requests answered, by route and status.\n"
                        "# TYPE http_requests_total counter\n");
    for (unsigned r = 0; r < ROUTE_COUNT; r++)
        for (unsigned s = 0; s < MS_COUNT; s++) {
            if (req[r][s] == 0 && !(s == MS_200 && r < ROUTE_OTHER))
                continue;
            if (s == MS_OTHER)
                buf_printf(out, "http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                           route_names[r], (unsigned long long)req[r][s]);
            else
                buf_printf(out, "http_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                           route_names[r], status_codes[s], (unsigned long long)req[r][s]);
        }
    buf_append_str(out, "# HELP http_handler_latency_us Request parsed to response handed to "
                        "the socket, microseconds.\n"
                        "# TYPE http_handler_latency_us histogram\n");
    struct bucket_ctx bc = {out, 0};
    histogram_foreach(lat, emit_bucket, &bc);
    uint64_t total = histogram_total(lat);
    buf_printf(out, "http_handler_latency_us_bucket{le=\"+Inf\"} %llu\n",
               (unsigned long long)total);
    buf_printf(out, "http_handler_latency_us_sum %.0f\n", histogram_mean(lat) * (double)total);
    buf_printf(out, "http_handler_latency_us_count %llu\n", (unsigned long long)total);
    histogram_free(lat);
    buf_printf(out, "# TYPE http_open_connections gauge\nhttp_open_connections %lld\n",
               (long long)open);
    buf_printf(out, "# TYPE http_connections_accepted_total counter\n"
                    "http_connections_accepted_total %llu\n",
               (unsigned long long)accepted);
    buf_printf(out, "# TYPE http_connections_rejected_total counter\n"
                    "http_connections_rejected_total %llu\n",
               (unsigned long long)rejected);
    buf_printf(out, "# TYPE http_overload_rejections_total counter\n"
                    "http_overload_rejections_total %llu\n",
               (unsigned long long)overload);
    if (reg->store_users != NULL)
        buf_printf(out, "# TYPE store_users gauge\nstore_users %llu\n",
                   (unsigned long long)counter_get(reg->store_users));
    if (reg->extra != NULL)
        reg->extra(out, reg->extra_ctx);
}
