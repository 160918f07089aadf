/* worker: one load-generating thread. It opens its connections (client.c), waits at the
 * barriers with main, then runs its I/O back-end (io.h) until the measured window ends or
 * main says stop; the end timer, the timeouts' housekeeping and the accounting at the end
 * (requests in flight, due and not sent) are here. What to send when is dispatch.c. */
#include "worker.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "common/base/atomics.h"
#include "client.h"
#include "dispatch.h"
#include "io.h"
#include "plan.h"
#include "thread_state.h"
#include "timebase.h"

void worker_woke(struct worker *w)
{
    w->now_ns = timebase_now_ns();
    if (w->rx_stamps) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        w->real_minus_mono = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (int64_t)w->now_ns;
    }
}

/* ---- run control ---- */

static void worker_stop(struct worker *w)
{
    if (w->stopping)
        return;
    w->now_ns = timebase_now_ns();
    w->stop_ns = w->now_ns < w->end_ns ? w->now_ns : w->end_ns;
    for (unsigned i = 0; i < w->nconns; i++)
        client_count_in_flight(&w->clients[i], w->stop_ns); /* closed ones hold none */
    if (!w->closed_loop) /* what was due by then and never sent */
        dispatch_count_not_sent(w, w->stop_ns);
    w->stopping = 1;
    for (unsigned i = 0; i < w->nconns; i++)
        client_stop(&w->clients[i]);
    if (w->io->stop)
        w->io->stop(w);
    uv_close((uv_handle_t *)&w->end_timer, NULL);
    uv_close((uv_handle_t *)&w->housekeeping, NULL);
}

static void on_end(uv_timer_t *t)
{
    struct worker *w = t->data;
    if (timebase_now_ns() < w->end_ns) { /* the loop clock is ms-granular: finish precisely */
        uv_timer_start(&w->end_timer, on_end, 1, 0);
        return;
    }
    worker_stop(w);
}

/* Every few ms: main's stop flag, and the requests older than --timeout (their connection
 * is closed: a timeout error for each request it held). */
static void on_housekeeping(uv_timer_t *t)
{
    struct worker *w = t->data;
    if (atomics_load_relaxed(&w->sh->stop)) {
        worker_stop(w);
        return;
    }
    uint64_t now = timebase_now_ns();
    w->now_ns = now;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct client *c = &w->clients[i];
        if (c->state == CLIENT_OPEN && c->count > 0 &&
            now - c->ring[c->head].sent_ns > w->cfg->timeout_ns)
            client_time_out(c);
    }
}

/* A run that main skipped (nothing could connect): close everything, release. */
static void worker_abort(struct worker *w)
{
    struct worker_shared *sh = w->sh;
    w->end_ns = w->measure_start_ns = sh->start_ns;
    w->stop_ns = sh->start_ns;
    w->stopping = 1;
    for (unsigned i = 0; i < w->nconns; i++)
        client_abort(&w->clients[i]);
    uv_run(&w->loop, UV_RUN_DEFAULT);
    w->io->release(w);
    uv_loop_close(&w->loop);
    stats_finish(&w->stats);
}

/* Opens every connection and runs the loop until each first connect succeeded, or failed
 * and was closed. */
static void connect_all(struct worker *w)
{
    w->pending_connects = w->nconns;
    for (unsigned i = 0; i < w->nconns; i++)
        client_start(&w->clients[i]);
    for (;;) {
        int busy = w->pending_connects > 0;
        for (unsigned i = 0; i < w->nconns && !busy; i++)
            busy = w->clients[i].state == CLIENT_CLOSING;
        if (!busy)
            break;
        uv_run(&w->loop, UV_RUN_ONCE);
    }
}

/* The measured window, the timers and the schedule, from the start main set. */
static void begin_run(struct worker *w)
{
    const struct config *cfg = w->cfg;
    uint64_t start = w->sh->start_ns;
    unsigned streams = cfg->agent_count * cfg->threads;
    w->grid_origin_ns = start + w->tick_ns * w->seq_base / (streams ? streams : 1);
    w->measure_start_ns = start + cfg->warmup_ns;
    w->end_ns = w->measure_start_ns + cfg->duration_ns;
    w->running = 1;

    uv_timer_init(&w->loop, &w->end_timer);
    w->end_timer.data = w;
    w->now_ns = timebase_now_ns();
    uint64_t left_ns = w->end_ns > w->now_ns ? w->end_ns - w->now_ns : 0;
    uv_timer_start(&w->end_timer, on_end, (left_ns + 999999) / 1000000, 0);
    uv_timer_init(&w->loop, &w->housekeeping);
    w->housekeeping.data = w;
    uint64_t hk_ms = cfg->timeout_ns / 10000000;
    hk_ms = hk_ms < 1 ? 1 : hk_ms > 100 ? 100 : hk_ms;
    uv_timer_start(&w->housekeeping, on_housekeeping, hk_ms, hk_ms);

    if (!w->closed_loop) {
        plan_init(&w->plan, cfg->arrivals, cfg->rate,
                  plan_stream(cfg->agent_index, cfg->agent_count, w->id), streams, start,
                  cfg->seed);
        held_init(&w->held);
    }
    for (unsigned i = 0; i < w->nconns; i++) {
        struct client *c = &w->clients[i];
        if (c->state == CLIENT_OPEN)
            dispatch_ready(c, w->now_ns);
        else if (c->state == CLIENT_IDLE_CLOSED)
            client_retry_later(c);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct worker_shared *sh = w->sh;
    const struct config *cfg = w->cfg;
    char name[16]; /* the kernel keeps 15 characters: /proc/PID/task/TID/comm */
    snprintf(name, sizeof name, "lg-%u", w->id);
    pthread_setname_np(pthread_self(), name);
    if (gate_wait(&sh->gate))
        return NULL; /* another thread could not start: no run */
    /* io_uring and io_uv: coalesce the kernel's own timeouts to the tick. The tick loop
     * sleeps until the tick exactly (its lag would grow by the slack). */
    unsigned long slack = w->io == &io_tick || cfg->tick_ns == 0 ? 1UL
                                                                 : (unsigned long)cfg->tick_ns;
    prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    if (uv_loop_init(&w->loop) < 0)
        panic("uv_loop_init failed");
    w->io->init(w);
    connect_all(w);

    pthread_barrier_wait(&sh->connected);
    pthread_barrier_wait(&sh->go);
    if (sh->abort) {
        worker_abort(w);
        return NULL;
    }
    begin_run(w);
    dispatch_turn(w);
    w->io->run(w);
    w->io->release(w);
    if (uv_loop_close(&w->loop) != 0)
        panic("worker %u: handles left open", w->id);
    stats_finish(&w->stats);
    return NULL;
}

struct worker *worker_new(struct worker_shared *sh, unsigned id, unsigned nconns)
{
    struct worker *w = xcalloc(1, sizeof *w);
    const struct config *cfg = sh->cfg;
    w->sh = sh;
    w->cfg = cfg;
    w->id = id;
    w->nconns = nconns;
    w->clients = xcalloc(nconns, sizeof *w->clients);
    w->ready = xcalloc(nconns, sizeof *w->ready);
    w->touched = xcalloc(nconns, sizeof *w->touched);
    w->on_ready = dispatch_ready;
    for (unsigned i = 0; i < nconns; i++)
        client_init(&w->clients[i], w, i);
    stats_init(&w->stats);
    stats_intervals_init(&w->stats, config_intervals(cfg), cfg->interval_ns);
    unsigned stream = plan_stream(cfg->agent_index, cfg->agent_count, id);
    rng_seed(&w->rng, cfg->seed * 0x100000001b3ull + stream);
    rng_seed(&w->jitter, (cfg->seed ^ 0x9e3779b97f4a7c15ull) * 0x100000001b3ull + stream);
    w->seq_stride = (uint64_t)cfg->agent_count * cfg->threads;
    w->seq_base = stream;
    w->closed_loop = cfg->rate <= 0;
    w->io = sh->use_uring ? &io_ring : w->closed_loop ? &io_uv : &io_tick;
    w->tick_ns = cfg->tick_ns;
    w->sock_epfd = w->wait_epfd = w->uv_tfd = -1;
    return w;
}

int worker_start(struct worker *w)
{
    return -pthread_create(&w->thread, NULL, worker_main, w);
}

void worker_join(struct worker *w)
{
    pthread_join(w->thread, NULL);
}

struct stats *worker_stats(struct worker *w)
{
    return &w->stats;
}

int worker_first_error(const struct worker *w)
{
    return w->first_error;
}

uint64_t worker_stop_ns(const struct worker *w)
{
    return w->stop_ns;
}

void worker_free(struct worker *w)
{
    if (w == NULL)
        return;
    for (unsigned i = 0; i < w->nconns; i++)
        client_free(&w->clients[i]);
    buf_free(&w->scratch);
    stats_free(&w->stats);
    free(w->touched);
    free(w->ready);
    free(w->clients);
    free(w);
}
