/* worker: connections, scheduling and response validation for one thread and loop.
 * Hot path (closed loop): read_cb -> llhttp -> on_message_complete records and renders
 * the next request into the connection's out buffer -> one uv_try_write per read batch.
 * No malloc per request: buffers are per connection and reused. Every request is
 * accounted once: completed, or lost to the error class of the event that ended its
 * connection (read, write, timeout, parse). */
#include "worker.h"

#include <errno.h>
#include <llhttp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "util.h"

#define READ_BUF_BYTES 16384
#define RETRY_MS 50

enum conn_state { CONN_IDLE_CLOSED, CONN_CONNECTING, CONN_OPEN, CONN_CLOSING };

struct slot {
    uint64_t planned_ns;
    uint64_t sent_ns;
    uint16_t expect;
    uint8_t is_head;
};

struct conn {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_timer_t retry;
    llhttp_t parser;
    struct worker *w;
    enum conn_state state;
    int initial;        /* first connect, before the barrier */
    int in_ready;       /* on the worker's ready stack */
    int close_after;    /* the server said Connection: close */
    int wpending;       /* a uv_write of out[wbuf] is in flight */
    unsigned wbuf;      /* index of the buffer being written (when wpending) */
    struct slot ring[CONFIG_MAX_PIPELINE];
    unsigned head, count;
    struct buf out[2];
    char rbuf[READ_BUF_BYTES];
};

struct worker {
    struct worker_shared *sh;
    const struct config *cfg;
    unsigned id;
    unsigned nconns;
    pthread_t thread;
    uv_loop_t loop;
    struct conn *conns;
    struct conn **ready; /* stack of connections with room for a request (constant rate) */
    unsigned nready;
    struct stats stats;
    struct rng rng;
    struct buf scratch;
    uint64_t seq;
    llhttp_settings_t settings;
    int closed_loop;
    int running;              /* after the go barrier */
    int stopping;
    int first_error;
    unsigned pending_connects;
    uint64_t now_ns;          /* time of the current read batch */
    uint64_t measure_start_ns;
    uint64_t end_ns;
    uint64_t stop_ns;
    /* constant rate */
    int tfd;
    uv_poll_t tick;
    uint64_t next_plan_ns;
    uint64_t plan_base_ns;
    uint64_t plan_k;
    double interval_ns;
    uint64_t armed_ns;
    uv_timer_t end_timer;
    uv_timer_t housekeeping;
};

static void conn_connect(struct conn *c);
static void conn_close(struct conn *c, int reconnect);

static inline int in_window(const struct worker *w, uint64_t t_ns)
{
    return t_ns >= w->measure_start_ns && t_ns < w->end_ns;
}

static void count_error(struct worker *w, enum stats_error e, uint64_t n)
{
    if (n == 0 || w->stopping || w->now_ns < w->measure_start_ns)
        return;
    if (w->now_ns >= w->end_ns) { /* lost after the window closed: they were in flight */
        if (e != STATS_ERR_CONNECT)
            w->stats.in_flight_at_end += n;
        return;
    }
    w->stats.errors[e] += n;
    atomic_store_explicit(&w->stats.progress_errors, stats_errors_total(&w->stats),
                          memory_order_relaxed);
}

/* ---- scheduling ---- */

static void plan_advance(struct worker *w)
{
    if (w->cfg->arrivals == ARRIVALS_POISSON) {
        double gap = -log(rng_unit(&w->rng)) * w->interval_ns;
        w->next_plan_ns += (uint64_t)gap;
    } else {
        w->plan_k++;
        w->next_plan_ns = w->plan_base_ns + (uint64_t)((double)w->plan_k * w->interval_ns);
    }
}

static void tick_arm(struct worker *w, uint64_t at_ns)
{
    if (at_ns == w->armed_ns)
        return;
    struct itimerspec its = {0};
    if (at_ns) {
        its.it_value.tv_sec = (time_t)(at_ns / 1000000000u);
        its.it_value.tv_nsec = (long)(at_ns % 1000000000u);
    }
    timerfd_settime(w->tfd, TFD_TIMER_ABSTIME, &its, NULL);
    w->armed_ns = at_ns;
}

/* Appends one request planned at planned_ns to c's out buffer (not yet written). */
static void conn_queue_request(struct conn *c, uint64_t planned_ns, uint64_t now_ns)
{
    struct worker *w = c->w;
    const struct mix *m = w->sh->mix;
    unsigned idx = mix_pick(m, &w->rng);
    uint64_t seq = w->seq++ * w->cfg->threads + w->id + 1;
    struct buf *out = &c->out[c->wpending ? !c->wbuf : 0];
    mix_render(m, idx, &w->rng, seq, out, &w->scratch);
    struct slot *s = &c->ring[(c->head + c->count) % CONFIG_MAX_PIPELINE];
    s->planned_ns = planned_ns;
    s->sent_ns = now_ns;
    s->expect = (uint16_t)m->lines[idx].expect;
    s->is_head = (uint8_t)m->lines[idx].is_head;
    c->count++;
    if (in_window(w, now_ns))
        w->stats.requests_sent++;
}

static void on_write(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    struct worker *w = c->w;
    c->wpending = 0;
    buf_reset(&c->out[c->wbuf]);
    if (status < 0) {
        if (status != UV_ECANCELED && c->state == CONN_OPEN) {
            w->now_ns = uv_hrtime();
            count_error(w, STATS_ERR_WRITE, c->count ? c->count : 1);
            conn_close(c, 1);
        }
        return;
    }
    if (c->out[!c->wbuf].len && c->state == CONN_OPEN) {
        c->wbuf = !c->wbuf;
        c->wpending = 1;
        uv_buf_t b = uv_buf_init(c->out[c->wbuf].data, (unsigned)c->out[c->wbuf].len);
        int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
        if (rc < 0) {
            c->wpending = 0;
            count_error(w, STATS_ERR_WRITE, c->count ? c->count : 1);
            conn_close(c, 1);
        }
    }
}

/* Writes what conn_queue_request appended: uv_try_write first, uv_write for the rest.
 * Returns 0, or a negative errno after which c is closing. */
static int conn_flush(struct conn *c)
{
    if (c->wpending || c->state != CONN_OPEN)
        return 0;
    struct buf *out = &c->out[0];
    if (out->len == 0)
        return 0;
    uv_buf_t b = uv_buf_init(out->data, (unsigned)out->len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)out->len) {
        buf_reset(out);
        return 0;
    }
    if (n < 0 && n != UV_EAGAIN) {
        count_error(c->w, STATS_ERR_WRITE, c->count);
        conn_close(c, 1);
        return n;
    }
    if (n < 0)
        n = 0;
    /* Partial: hand the rest to uv_write; out[0] stays untouched until on_write. */
    memmove(out->data, out->data + n, out->len - (size_t)n);
    out->len -= (size_t)n;
    c->wbuf = 0;
    c->wpending = 1;
    b = uv_buf_init(out->data, (unsigned)out->len);
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        c->wpending = 0;
        count_error(c->w, STATS_ERR_WRITE, c->count);
        conn_close(c, 1);
        return rc;
    }
    return 0;
}

static inline int conn_has_room(const struct conn *c)
{
    return c->state == CONN_OPEN && !c->close_after && c->count < c->w->cfg->pipeline;
}

static void ready_push(struct worker *w, struct conn *c)
{
    if (c->in_ready)
        return;
    c->in_ready = 1;
    w->ready[w->nready++] = c;
}

/* Sends every planned request that is due on connections with room; arms the tick for
 * the next planned time when it is in the future or a connection is free. */
static void dispatch_due(struct worker *w, uint64_t now_ns)
{
    while (w->next_plan_ns <= now_ns && w->next_plan_ns < w->end_ns && w->nready > 0) {
        struct conn *c = w->ready[w->nready - 1];
        if (!conn_has_room(c)) {
            c->in_ready = 0;
            w->nready--;
            continue;
        }
        while (conn_has_room(c) && w->next_plan_ns <= now_ns && w->next_plan_ns < w->end_ns) {
            conn_queue_request(c, w->next_plan_ns, now_ns);
            plan_advance(w);
        }
        if (!conn_has_room(c)) {
            c->in_ready = 0;
            w->nready--;
        }
        conn_flush(c);
    }
    if (w->next_plan_ns >= w->end_ns)
        tick_arm(w, 0);
    else if (w->next_plan_ns > now_ns)
        tick_arm(w, w->next_plan_ns);
    else
        tick_arm(w, 0); /* due but no free connection: the next completion dispatches */
}

static void on_tick(uv_poll_t *h, int status, int events)
{
    struct worker *w = h->data;
    uint64_t expirations;
    if (read(w->tfd, &expirations, sizeof expirations) < 0) {
        /* EAGAIN: spurious wake-up; nothing to clear. */
    }
    w->armed_ns = 0;
    if (w->stopping)
        return;
    w->now_ns = uv_hrtime();
    dispatch_due(w, w->now_ns);
}

/* A connection has room again (connected, or a response completed). */
static void conn_ready(struct conn *c, uint64_t now_ns)
{
    struct worker *w = c->w;
    if (w->stopping)
        return;
    if (w->closed_loop) {
        while (conn_has_room(c))
            conn_queue_request(c, now_ns, now_ns);
        return;
    }
    ready_push(w, c);
}

/* ---- responses ---- */

static int on_headers_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    if (c->count == 0)
        return -1;
    return c->ring[c->head].is_head ? 1 : 0; /* 1: no body follows */
}

static int on_message_complete(llhttp_t *p)
{
    struct conn *c = p->data;
    struct worker *w = c->w;
    if (c->count == 0)
        return -1; /* a response nobody asked for */
    struct slot *s = &c->ring[c->head];
    c->head = (c->head + 1) % CONFIG_MAX_PIPELINE;
    c->count--;
    uint64_t now = w->now_ns;
    unsigned status = p->status_code;
    if (now >= w->measure_start_ns && now < w->end_ns && !w->stopping) {
        struct stats *st = &w->stats;
        st->requests_completed++;
        if (status < STATS_MAX_STATUS) {
            st->status[status]++;
            if (status != s->expect)
                st->unexpected_status[status]++;
        }
        if (status != s->expect) {
            st->errors[STATS_ERR_STATUS]++;
            atomic_store_explicit(&st->progress_errors, stats_errors_total(st),
                                  memory_order_relaxed);
        }
        histogram_record(st->latency, (now - s->planned_ns + 999) / 1000);
        histogram_record(st->service, (now - s->sent_ns + 999) / 1000);
        atomic_store_explicit(&st->progress_completed, st->requests_completed,
                              memory_order_relaxed);
    } else if (now >= w->end_ns && s->sent_ns < w->end_ns && s->sent_ns >= w->measure_start_ns) {
        w->stats.in_flight_at_end++;
    }
    if (!llhttp_should_keep_alive(p)) {
        c->close_after = 1;
        return 0;
    }
    conn_ready(c, now);
    return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b)
{
    struct conn *c = h->data;
    *b = uv_buf_init(c->rbuf, sizeof c->rbuf);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *b)
{
    struct conn *c = s->data;
    struct worker *w = c->w;
    if (nread == 0)
        return;
    w->now_ns = uv_hrtime();
    if (nread < 0) {
        if (nread == UV_EOF) {
            /* A response delimited by EOF completes here; then the rest is lost. */
            if (llhttp_finish(&c->parser) != HPE_OK)
                count_error(w, STATS_ERR_PARSE, c->count ? c->count : 1);
            else
                count_error(w, STATS_ERR_READ, c->count);
        } else {
            count_error(w, STATS_ERR_READ, c->count ? c->count : 1);
        }
        conn_close(c, 1);
        return;
    }
    llhttp_errno_t err = llhttp_execute(&c->parser, b->base, (size_t)nread);
    if (err != HPE_OK) {
        count_error(w, STATS_ERR_PARSE, c->count ? c->count : 1);
        conn_close(c, 1);
        return;
    }
    if (c->close_after) {
        count_error(w, STATS_ERR_READ, c->count); /* pipelined behind Connection: close */
        conn_close(c, 1);
        return;
    }
    if (w->closed_loop)
        conn_flush(c);
    else if (w->nready > 0 && w->next_plan_ns <= w->now_ns)
        dispatch_due(w, w->now_ns);
}

/* ---- connections ---- */

static void on_retry(uv_timer_t *t)
{
    struct conn *c = t->data;
    if (!c->w->stopping && c->state == CONN_IDLE_CLOSED)
        conn_connect(c);
}

static void connect_failed(struct conn *c, int status)
{
    struct worker *w = c->w;
    if (w->first_error == 0)
        w->first_error = status;
    w->stats.errors[STATS_ERR_CONNECT]++;
    if (c->initial) {
        c->initial = 0;
        w->stats.connections_failed++;
        w->pending_connects--;
    }
}

static void on_tcp_close(uv_handle_t *h)
{
    struct conn *c = h->data;
    struct worker *w = c->w;
    int reconnect = c->state == CONN_CLOSING && h->type == UV_TCP && c->close_after != 2;
    c->state = CONN_IDLE_CLOSED;
    c->head = c->count = 0;
    c->close_after = 0;
    c->wpending = 0;
    buf_reset(&c->out[0]);
    buf_reset(&c->out[1]);
    if (reconnect && w->running && !w->stopping)
        conn_connect(c);
}

/* Closes c; its in-flight requests must have been counted by the caller. */
static void conn_close(struct conn *c, int reconnect)
{
    if (c->state == CONN_CLOSING || c->state == CONN_IDLE_CLOSED)
        return;
    c->state = CONN_CLOSING;
    c->close_after = reconnect ? 0 : 2;
    uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct conn *c = req->data;
    struct worker *w = c->w;
    if (status == UV_ECANCELED)
        return;
    if (status < 0) {
        connect_failed(c, status);
        c->state = CONN_CLOSING;
        c->close_after = 2;
        uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
        if (w->running && !w->stopping)
            uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
        return;
    }
    c->state = CONN_OPEN;
    w->stats.connections_established++;
    if (c->initial) {
        c->initial = 0;
        w->pending_connects--;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    llhttp_init(&c->parser, HTTP_RESPONSE, &w->settings);
    c->parser.data = c;
    int rc = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    if (rc < 0) {
        count_error(w, STATS_ERR_READ, 1);
        conn_close(c, 1);
        return;
    }
    if (!w->running)
        return; /* the run has not started: worker_main sends the first requests */
    uint64_t now = uv_hrtime();
    conn_ready(c, now);
    if (w->closed_loop)
        conn_flush(c);
    else
        dispatch_due(w, now);
}

static void conn_connect(struct conn *c)
{
    struct worker *w = c->w;
    int rc = uv_tcp_init(&w->loop, &c->tcp);
    if (rc < 0) {
        connect_failed(c, rc);
        if (w->running)
            uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
        return;
    }
    c->tcp.data = c;
    c->creq.data = c;
    c->wreq.data = c;
    c->state = CONN_CONNECTING;
    rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&w->sh->addr, on_connect);
    if (rc < 0) {
        connect_failed(c, rc);
        c->state = CONN_CLOSING;
        c->close_after = 2;
        uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
        if (w->running)
            uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
    }
}

/* ---- run control ---- */

static void worker_stop(struct worker *w)
{
    if (w->stopping)
        return;
    w->now_ns = uv_hrtime();
    w->stop_ns = w->now_ns < w->end_ns ? w->now_ns : w->end_ns;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        for (unsigned k = 0; k < c->count; k++) {
            const struct slot *s = &c->ring[(c->head + k) % CONFIG_MAX_PIPELINE];
            if (s->sent_ns >= w->measure_start_ns && s->sent_ns < w->stop_ns)
                w->stats.in_flight_at_end++;
        }
    }
    w->stopping = 1;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN || c->state == CONN_CONNECTING) {
            c->state = CONN_CLOSING;
            c->close_after = 2;
            uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
        }
        uv_close((uv_handle_t *)&c->retry, NULL);
    }
    if (!w->closed_loop)
        uv_close((uv_handle_t *)&w->tick, NULL);
    uv_close((uv_handle_t *)&w->end_timer, NULL);
    uv_close((uv_handle_t *)&w->housekeeping, NULL);
}

static void on_end(uv_timer_t *t)
{
    struct worker *w = t->data;
    if (uv_hrtime() < w->end_ns) { /* the loop clock is ms-granular: finish precisely */
        uv_timer_start(&w->end_timer, on_end, 1, 0);
        return;
    }
    worker_stop(w);
}

static void on_housekeeping(uv_timer_t *t)
{
    struct worker *w = t->data;
    if (atomic_load_explicit(&w->sh->stop, memory_order_relaxed)) {
        worker_stop(w);
        return;
    }
    uint64_t now = uv_hrtime();
    w->now_ns = now;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN && c->count > 0 &&
            now - c->ring[c->head].sent_ns > w->cfg->timeout_ns) {
            count_error(w, STATS_ERR_TIMEOUT, c->count);
            conn_close(c, 1);
        }
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct worker_shared *sh = w->sh;
    prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); /* ns-precise timerfd wake-ups */
    if (uv_loop_init(&w->loop) < 0)
        panic("uv_loop_init failed");
    w->pending_connects = w->nconns;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        uv_timer_init(&w->loop, &c->retry);
        c->retry.data = c;
        c->initial = 1;
        conn_connect(c);
    }
    for (;;) { /* until every first connect succeeded or failed and was closed */
        int busy = w->pending_connects > 0;
        for (unsigned i = 0; i < w->nconns && !busy; i++)
            busy = w->conns[i].state == CONN_CLOSING;
        if (!busy)
            break;
        uv_run(&w->loop, UV_RUN_ONCE);
    }

    pthread_barrier_wait(&sh->connected);
    pthread_barrier_wait(&sh->go);
    if (sh->abort) {
        w->end_ns = w->measure_start_ns = sh->start_ns;
        w->stop_ns = sh->start_ns;
        w->stopping = 1;
        for (unsigned i = 0; i < w->nconns; i++) {
            struct conn *c = &w->conns[i];
            if (c->state == CONN_OPEN)
                uv_close((uv_handle_t *)&c->tcp, NULL);
            uv_close((uv_handle_t *)&c->retry, NULL);
        }
        uv_run(&w->loop, UV_RUN_DEFAULT);
        uv_loop_close(&w->loop);
        return NULL;
    }
    const struct config *cfg = w->cfg;
    uint64_t start = sh->start_ns;
    w->measure_start_ns = start + cfg->warmup_ns;
    w->end_ns = w->measure_start_ns + cfg->duration_ns;
    w->now_ns = uv_hrtime();
    w->running = 1;

    uv_timer_init(&w->loop, &w->end_timer);
    w->end_timer.data = w;
    uint64_t left_ns = w->end_ns > w->now_ns ? w->end_ns - w->now_ns : 0;
    uv_timer_start(&w->end_timer, on_end, (left_ns + 999999) / 1000000, 0);
    uv_timer_init(&w->loop, &w->housekeeping);
    w->housekeeping.data = w;
    uint64_t hk_ms = cfg->timeout_ns / 10000000;
    hk_ms = hk_ms < 1 ? 1 : hk_ms > 100 ? 100 : hk_ms;
    uv_timer_start(&w->housekeeping, on_housekeeping, hk_ms, hk_ms);

    if (!w->closed_loop) {
        w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
        if (w->tfd < 0)
            panic("timerfd_create: %s", strerror(errno));
        uv_poll_init(&w->loop, &w->tick, w->tfd);
        w->tick.data = w;
        uv_poll_start(&w->tick, UV_READABLE, on_tick);
        w->interval_ns = 1e9 * (double)cfg->threads / cfg->rate;
        /* Threads interleave their even schedules. */
        w->plan_base_ns = start + (uint64_t)(w->interval_ns * w->id / cfg->threads);
        w->next_plan_ns = w->plan_base_ns;
        if (cfg->arrivals == ARRIVALS_POISSON)
            plan_advance(w);
    }
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN) {
            conn_ready(c, w->now_ns);
            if (w->closed_loop)
                conn_flush(c);
        } else if (c->state == CONN_IDLE_CLOSED) {
            uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
        }
    }
    if (!w->closed_loop)
        dispatch_due(w, uv_hrtime());
    uv_run(&w->loop, UV_RUN_DEFAULT);
    if (!w->closed_loop)
        close(w->tfd);
    if (uv_loop_close(&w->loop) != 0)
        panic("worker %u: handles left open", w->id);
    return NULL;
}

struct worker *worker_new(struct worker_shared *sh, unsigned id, unsigned nconns)
{
    struct worker *w = xcalloc(1, sizeof *w);
    w->sh = sh;
    w->cfg = sh->cfg;
    w->id = id;
    w->nconns = nconns;
    w->conns = xcalloc(nconns, sizeof *w->conns);
    w->ready = xcalloc(nconns, sizeof *w->ready);
    for (unsigned i = 0; i < nconns; i++)
        w->conns[i].w = w;
    stats_init(&w->stats);
    rng_seed(&w->rng, sh->cfg->seed * 0x100000001b3ull + id);
    w->closed_loop = sh->cfg->rate <= 0;
    w->tfd = -1;
    llhttp_settings_init(&w->settings);
    w->settings.on_headers_complete = on_headers_complete;
    w->settings.on_message_complete = on_message_complete;
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
    for (unsigned i = 0; i < w->nconns; i++) {
        buf_free(&w->conns[i].out[0]);
        buf_free(&w->conns[i].out[1]);
    }
    buf_free(&w->scratch);
    stats_free(&w->stats);
    free(w->ready);
    free(w->conns);
    free(w);
}
