/* metrics: Prometheus exposition of the merged per-thread counters. Rendering is
 * O(threads x buckets); it allocates a scratch histogram per scrape (not hot path). */
#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const route_names[ROUTE_COUNT] = {
    "ping", "user_get", "user_list", "user_create", "metrics", "other",
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

void metrics_count_request(struct metrics *m, unsigned route, unsigned status,
                           uint64_t latency_us)
{
    if (route >= ROUTE_COUNT)
        route = ROUTE_OTHER;
    counter_inc(&m->requests[route][status_col(status)]);
    histogram_record(m->latency_us, latency_us ? latency_us : 1);
}

void metrics_add(uint64_t *counter, int64_t delta)
{
    counter_set(counter, counter_get(counter) + (uint64_t)delta);
}

/* Appends `us` microseconds as decimal seconds, exactly ("0.000015", "1.5", "60"). */
static void append_seconds(struct buf *out, uint64_t us)
{
    char frac[8];
    unsigned n = 6;
    snprintf(frac, sizeof frac, "%06llu", (unsigned long long)(us % 1000000u));
    while (n > 0 && frac[n - 1] == '0')
        n--;
    buf_append_u64(out, us / 1000000u);
    if (n > 0) {
        buf_append(out, ".", 1);
        buf_append(out, frac, n);
    }
}

struct bucket_ctx {
    struct buf *out;
    uint64_t cumulative;
};

static void emit_bucket(uint64_t upper_us, uint64_t count, void *ctx)
{
    struct bucket_ctx *bc = ctx;
    bc->cumulative += count;
    buf_append_str(bc->out, "http_handler_latency_seconds_bucket{le=\"");
    append_seconds(bc->out, upper_us);
    buf_printf(bc->out, "\"} %llu\n", (unsigned long long)bc->cumulative);
}

/* One family without labels: HELP, TYPE and its sample. */
static void emit_single(struct buf *out, const char *name, const char *type, const char *help,
                        long long value)
{
    buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n%s %lld\n", name, help, name, type, name,
               value);
}

void metrics_render(const struct metrics_registry *reg, struct buf *out)
{
    uint64_t req[ROUTE_COUNT][STATUS_COL_COUNT] = {{0}};
    uint64_t overload = 0, accepted = 0, rejected = 0, lock_acq = 0, lock_waits = 0;
    struct runtime_counts rt = {0};
    int64_t open = 0;
    struct histogram *lat = histogram_new(LAT_LOW_US, LAT_HIGH_US, LAT_SIGFIGS);
    for (unsigned t = 0; t < reg->count; t++) {
        const struct metrics *m = reg->threads[t];
        for (unsigned r = 0; r < ROUTE_COUNT; r++)
            for (unsigned s = 0; s < STATUS_COL_COUNT; s++)
                req[r][s] += counter_get(&m->requests[r][s]);
        overload += counter_get(&m->overload_rejections);
        accepted += counter_get(&m->connections_accepted);
        rejected += counter_get(&m->connections_rejected);
        open += (int64_t)counter_get((const uint64_t *)&m->open_connections);
        lock_acq += counter_get(&m->store_lock_acquisitions);
        lock_waits += counter_get(&m->store_lock_waits);
        histogram_merge(lat, m->latency_us);
    }
    buf_append_str(out, "# HELP http_requests_total Requests answered, by route and status.\n"
                        "# TYPE http_requests_total counter\n");
    for (unsigned r = 0; r < ROUTE_COUNT; r++)
        for (unsigned s = 0; s < STATUS_COL_COUNT; s++) {
            if (req[r][s] == 0 && !(s == STATUS_COL_200 && r < ROUTE_OTHER))
                continue;
            if (s == STATUS_COL_OTHER)
                buf_printf(out, "http_requests_total{route=\"%s\",status=\"other\"} %llu\n",
                           route_names[r], (unsigned long long)req[r][s]);
            else
                buf_printf(out, "http_requests_total{route=\"%s\",status=\"%u\"} %llu\n",
                           route_names[r], status_col_code(s), (unsigned long long)req[r][s]);
        }
    buf_append_str(out, "# HELP http_handler_latency_seconds Time from the request parsed to "
                        "its response rendered into the connection's output buffer.\n"
                        "# TYPE http_handler_latency_seconds histogram\n");
    struct bucket_ctx bc = {out, 0};
    histogram_foreach(lat, emit_bucket, &bc);
    uint64_t total = histogram_total(lat);
    buf_printf(out, "http_handler_latency_seconds_bucket{le=\"+Inf\"} %llu\n",
               (unsigned long long)total);
    buf_append_str(out, "http_handler_latency_seconds_sum ");
    append_seconds(out, histogram_sum(lat));
    buf_printf(out, "\nhttp_handler_latency_seconds_count %llu\n", (unsigned long long)total);
    histogram_free(lat);
    emit_single(out, "http_open_connections", "gauge", "Connections open now.", (long long)open);
    emit_single(out, "http_connections_accepted_total", "counter", "Connections accepted.",
                (long long)accepted);
    emit_single(out, "http_connections_rejected_total", "counter",
                "Connections closed at once: over --max-conns, during the stop, or an accept "
                "error.",
                (long long)rejected);
    emit_single(out, "http_overload_rejections_total", "counter",
                "Requests answered 503 because the architecture was full (a mailbox or the "
                "in-flight cap).",
                (long long)overload);
    if (reg->store_users != NULL)
        emit_single(out, "store_users", "gauge", "Users in the store.",
                    (long long)counter_get(reg->store_users));
    if (reg->store_full_rejections != NULL)
        emit_single(out, "store_full_rejections_total", "counter",
                    "Store calls answered 503 because the database's filesystem had no space.",
                    (long long)counter_get(reg->store_full_rejections));
    /* The cost counters: both servers show all five, 0 where the mechanism is absent. */
    if (reg->runtime != NULL)
        reg->runtime(&rt, reg->runtime_ctx);
    emit_single(out, "actor_messages_total", "counter",
                "Messages sent into actor mailboxes, every hop (0: no actors here).",
                (long long)rt.messages);
    emit_single(out, "actor_cross_thread_hops_total", "counter",
                "Messages sent to an actor homed on another thread than the sender.",
                (long long)rt.cross_thread);
    emit_single(out, "actor_wakeups_total", "counter",
                "Wake-ups issued to a sleeping scheduler or loop (futex wake, uv_async_send).",
                (long long)rt.wakeups);
    emit_single(out, "store_lock_acquisitions_total", "counter",
                "Acquisitions of the store's lock (0: no lock, the store actor owns the store).",
                (long long)lock_acq);
    emit_single(out, "store_lock_waits_total", "counter",
                "Store-lock acquisitions that found the lock held and had to wait.",
                (long long)lock_waits);
    if (reg->extra != NULL)
        reg->extra(out, reg->extra_ctx);
}
