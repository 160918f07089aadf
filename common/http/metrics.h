/* metrics: per-thread request counters and handler-latency histograms, merged only
 * when /metrics is rendered (Prometheus text exposition 0.0.4). Each struct metrics has
 * one writer thread; counters are written with relaxed atomic stores so the renderer on
 * another thread reads them without locks or torn values.
 * The latency histogram is log-linear with 2 significant digits (1% buckets, 1 us ..
 * 60 s), kept in microseconds and exposed in seconds (http_handler_latency_seconds) as a
 * cumulative histogram with only the bucket edges where the count changes (plus +Inf):
 * the cumulative count at an edge not shown equals the count at the nearest shown edge
 * below it. Every family has HELP and TYPE (promtool check metrics is clean). */
#ifndef COMMON_METRICS_H
#define COMMON_METRICS_H

#include <stdint.h>

#include "common/base/atomics.h"
#include "common/base/histogram.h"
#include "request.h"
#include "status.h"
#include "common/base/util.h"

struct metrics {
    uint64_t requests[ROUTE_COUNT][STATUS_COL_COUNT]; /* by route and status.h column */
    uint64_t overload_rejections; /* 503 from a full mailbox or queue */
    uint64_t connections_accepted;
    uint64_t connections_rejected; /* over --max-conns or accept errors */
    int64_t open_connections;      /* gauge, this thread's share */
    uint64_t store_lock_acquisitions; /* store-lock acquisitions (a server with a lock) */
    uint64_t store_lock_waits;     /* of those, the ones that found the lock held */
    struct histogram *latency_us;  /* handler latency, us: request parsed -> its response
                                    * rendered into the connection's output buffer */
};

/* Initialises m (histogram allocated; aborts on OOM). Free with metrics_destroy. */
void metrics_init(struct metrics *m);
void metrics_destroy(struct metrics *m);

/* Writer-thread updates. */
void metrics_count_request(struct metrics *m, unsigned route, unsigned status,
                           uint64_t latency_us);
void metrics_add(uint64_t *counter, int64_t delta);

/* A message-passing runtime's counts, summed over its threads (actor_*_total). */
struct runtime_counts {
    uint64_t messages;     /* sends into a mailbox (every hop) */
    uint64_t cross_thread; /* of those, sends to an actor homed on another thread */
    uint64_t wakeups;      /* wake-ups issued to a sleeping scheduler or loop */
};

/* Shared, read-only registry of every thread's metrics, owned by main. */
struct metrics_registry {
    struct metrics **threads;
    unsigned count;
    const uint64_t *store_users; /* gauge written with relaxed stores by the store owner */
    const uint64_t *store_full_rejections; /* counter, the same */
    /* Adds the runtime's counts into *out (actor server); NULL: no runtime, all 0. */
    void (*runtime)(struct runtime_counts *out, void *ctx);
    void *runtime_ctx;
    /* Appends architecture-specific lines (actor mailboxes); may be NULL. */
    void (*extra)(struct buf *out, void *ctx);
    void *extra_ctx;
};

/* Renders the Prometheus text of every registered thread, merged. Any thread. */
void metrics_render(const struct metrics_registry *reg, struct buf *out);

/* Single-writer counters read from other threads (atomics.h, relaxed). */
static inline void counter_inc(uint64_t *c)
{
    atomics_add64_one_writer(c, 1);
}
static inline uint64_t counter_get(const uint64_t *c)
{
    return atomics_load64_relaxed(c);
}
static inline void counter_set(uint64_t *c, uint64_t v)
{
    atomics_store64_relaxed(c, v);
}

#endif
