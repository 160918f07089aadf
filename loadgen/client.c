/* client: a connection's life (connect within --connect-timeout; reconnect at once after a
 * connection that got an answer, else after a backoff), its requests and their accounting.
 * Every request of the window is accounted once: completed (status, latency and service
 * time recorded), or lost to the class of the event that ended its connection (read,
 * write, timeout, parse), or in flight when the window closed. A timed-out request and one
 * in flight at the end also go into the corrected latency, at the time they had reached.
 * A request completes on its final response: interim (1xx) responses before it are read
 * and skipped; a 101 (no request asks to switch protocols) is a parse error. */
#include "client.h"

#include <string.h>

#include "common/base/atomics.h"
#include "io.h"
#include "mix.h"
#include "rng.h"
#include "timebase.h"

/* Reconnect backoff: after the k-th connection in a row that ended without an answer (a
 * failed or timed-out connect, a close before any response), wait a uniform random time in
 * [d/2, d], d = min(BACKOFF_BASE_MS x 2^(k-1), BACKOFF_CAP_MS) ("equal jitter"). */
#define BACKOFF_BASE_MS 50
#define BACKOFF_CAP_MS 1000

static int on_headers_complete(llhttp_t *p);
static int on_message_complete(llhttp_t *p);

static const llhttp_settings_t parser_settings = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static void client_connect(struct client *c);

/* A request of the window still unanswered at `at_ns`: its corrected latency so far. */
static void record_unanswered(struct worker *w, const struct slot *s, uint64_t at_ns)
{
    uint64_t age_ns = at_ns > s->planned_ns ? at_ns - s->planned_ns : 0;
    stats_record_unanswered(&w->stats, at_ns - w->measure_start_ns, (age_ns + 999) / 1000);
}

void client_count_in_flight(struct client *c, uint64_t until)
{
    struct worker *w = c->w;
    for (unsigned k = 0; k < c->count; k++) {
        const struct slot *s = &c->ring[(c->head + k) % CONFIG_MAX_PIPELINE];
        if (s->sent_ns >= w->measure_start_ns && s->sent_ns < until) {
            w->stats.in_flight_at_end++;
            record_unanswered(w, s, until);
        }
    }
}

/* The event at w->now_ns that ends c (about to close) lost its c->count requests to
 * error e; with none in flight the event counts as one error when at_least_one. After the
 * window those sent inside it were in flight at its end (not errors, not the event). */
static void count_lost(struct client *c, enum stats_error e, int at_least_one)
{
    struct worker *w = c->w;
    if (w->stopping || w->now_ns < w->measure_start_ns)
        return;
    if (w->now_ns >= w->end_ns) {
        client_count_in_flight(c, w->end_ns);
        return;
    }
    uint64_t n = c->count ? c->count : (uint64_t)(at_least_one != 0);
    if (n == 0)
        return;
    w->stats.errors[e] += n;
    if (e == STATS_ERR_TIMEOUT) /* each at the time it reached: now */
        for (unsigned k = 0; k < c->count; k++)
            record_unanswered(w, &c->ring[(c->head + k) % CONFIG_MAX_PIPELINE], w->now_ns);
    atomics_store64_relaxed(&w->stats.progress_errors, stats_errors_total(&w->stats));
}

/* ---- requests ---- */

void client_queue_request(struct client *c, uint64_t planned_ns, uint64_t now_ns)
{
    struct worker *w = c->w;
    const struct mix *m = w->sh->mix;
    unsigned idx = mix_pick(m, &w->rng);
    uint64_t seq = w->seq++ * w->seq_stride + w->seq_base + 1;
    mix_render(m, idx, &w->rng, seq, &c->out[c->cur], &w->scratch);
    struct slot *s = &c->ring[(c->head + c->count) % CONFIG_MAX_PIPELINE];
    s->planned_ns = planned_ns;
    s->sent_ns = now_ns;
    s->expect = (uint16_t)m->lines[idx].expect;
    s->is_head = (uint8_t)m->lines[idx].is_head;
    c->count++;
    w->outstanding++;
    client_touch(c);
    if (worker_in_window(w, now_ns))
        w->stats.requests_sent++;
}

void client_write_failed(struct client *c, int err)
{
    count_lost(c, STATS_ERR_WRITE, 1);
    client_close(c, 1);
}

void client_time_out(struct client *c)
{
    count_lost(c, STATS_ERR_TIMEOUT, 0);
    client_close(c, 1);
}

/* ---- responses ---- */

/* A 1xx status other than 101: an interim response (RFC 9110 15.2: 100 Continue, 102
 * Processing, 103 Early Hints, ...), which a client must accept, any number of times, before
 * the final response to the same request. It has no body and completes nothing. */
static inline int is_interim(unsigned status)
{
    return status - 100u < 100u && status != 101;
}

static int on_headers_complete(llhttp_t *p)
{
    struct client *c = p->data;
    if (c->count == 0)
        return -1;
    if (p->status_code == 101)
        return -1; /* a switch of protocols no request asked for: a parse error */
    /* 1: no body follows (HEAD, or an interim response) */
    return c->ring[c->head].is_head || is_interim(p->status_code) ? 1 : 0;
}

static int on_message_complete(llhttp_t *p)
{
    struct client *c = p->data;
    struct worker *w = c->w;
    if (c->count == 0)
        return -1; /* a response nobody asked for */
    if (is_interim(p->status_code))
        return 0; /* the request waits for its final response */
    struct slot *s = &c->ring[c->head];
    c->head = (c->head + 1) % CONFIG_MAX_PIPELINE;
    c->count--;
    w->outstanding--;
    uint64_t now = w->now_ns;
    if (now < s->sent_ns) /* a receive timestamp older than the request: not its own */
        now = w->wake_time_ns;
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
            atomics_store64_relaxed(&st->progress_errors, stats_errors_total(st));
        }
        uint64_t latency_us = (now - s->planned_ns + 999) / 1000;
        histogram_record(st->latency_answered, latency_us);
        stats_record_interval(st, now - w->measure_start_ns, latency_us);
        histogram_record(st->service, (now - s->sent_ns + 999) / 1000);
        atomics_store64_relaxed(&st->progress_completed, st->requests_completed);
    } else if (now >= w->end_ns && s->sent_ns < w->end_ns && s->sent_ns >= w->measure_start_ns) {
        w->stats.in_flight_at_end++; /* answered after the window: unanswered in it */
        record_unanswered(w, s, w->end_ns);
    }
    c->answered = 1;
    if (!llhttp_should_keep_alive(p)) {
        c->close_after = 1;
        return 0;
    }
    w->on_ready(c, now);
    return 0;
}

void client_read_ended(struct client *c, int eof)
{
    if (eof) {
        /* A response delimited by EOF completes here; then the rest is lost. */
        if (llhttp_finish(&c->parser) != HPE_OK)
            count_lost(c, STATS_ERR_PARSE, 1);
        else
            count_lost(c, STATS_ERR_READ, 0);
    } else {
        count_lost(c, STATS_ERR_READ, 1);
    }
    client_close(c, 1);
}

int client_on_data(struct client *c, const char *data, size_t n)
{
    llhttp_errno_t err = llhttp_execute(&c->parser, data, n);
    if (err != HPE_OK) {
        count_lost(c, STATS_ERR_PARSE, 1);
        client_close(c, 1);
        return -1;
    }
    if (c->close_after) {
        count_lost(c, STATS_ERR_READ, 0); /* pipelined behind Connection: close */
        client_close(c, 1);
        return -1;
    }
    return 0;
}

/* ---- receive timestamps ---- */

void client_rx_prepare(struct client *c)
{
    c->iov.iov_base = c->rbuf;
    c->iov.iov_len = sizeof c->rbuf;
    memset(&c->msg, 0, sizeof c->msg);
    c->msg.msg_iov = &c->iov;
    c->msg.msg_iovlen = 1;
    memset(c->cbuf, 0, sizeof c->cbuf); /* no stale timestamp if none is written */
    c->msg.msg_control = c->cbuf;
    c->msg.msg_controllen = sizeof c->cbuf;
}

uint64_t client_rx_time(const struct client *c, uint64_t wake)
{
    const struct worker *w = c->w;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&c->msg); cm;
         cm = CMSG_NXTHDR((struct msghdr *)&c->msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SO_TIMESTAMPNS)
            continue;
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(cm), sizeof ts);
        int64_t t = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - w->real_minus_mono;
        if (t <= 0 || (uint64_t)t > wake)
            return wake;
        return (uint64_t)t;
    }
    return wake;
}

/* ---- the connection ---- */

static void on_retry(uv_timer_t *t)
{
    struct client *c = t->data;
    if (!c->w->stopping && c->state == CLIENT_IDLE_CLOSED)
        client_connect(c);
}

/* The backoff before the next connect after c->failures connections in a row without an
 * answer (>= 1), in ms. */
static uint64_t backoff_ms(struct client *c)
{
    unsigned k = c->failures < 16 ? c->failures : 16;
    uint64_t d = (uint64_t)BACKOFF_BASE_MS << (k - 1);
    if (d > BACKOFF_CAP_MS)
        d = BACKOFF_CAP_MS;
    return rng_range(&c->w->jitter, d / 2, d);
}

void client_retry_later(struct client *c)
{
    if (c->failures == 0)
        c->failures = 1;
    uv_timer_start(&c->timer, on_retry, backoff_ms(c), 0);
}

static void connect_failed(struct client *c, int status)
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
    struct client *c = h->data;
    struct worker *w = c->w;
    int reconnect = c->state == CLIENT_CLOSING && h->type == UV_TCP && c->close_after != 2;
    c->state = CLIENT_IDLE_CLOSED;
    w->outstanding -= c->count;
    c->head = c->count = 0;
    c->close_after = 0;
    buf_reset(&c->out[c->cur]);
    if (!c->wpending) /* io_ring: a send may still own out[wbuf] until its completion */
        buf_reset(&c->out[!c->cur]);
    if (c->answered) /* a connection that worked: reconnect at once */
        c->failures = 0;
    else if (c->failures < UINT32_MAX)
        c->failures++;
    if (!reconnect || !w->running || w->stopping)
        return;
    if (c->failures == 0)
        client_connect(c);
    else
        uv_timer_start(&c->timer, on_retry, backoff_ms(c), 0);
}

void client_close(struct client *c, int reconnect)
{
    if (c->state == CLIENT_CLOSING || c->state == CLIENT_IDLE_CLOSED)
        return;
    struct worker *w = c->w;
    if (c->state == CLIENT_OPEN && w->io->close)
        w->io->close(c); /* what the kernel holds for this socket becomes stale */
    if (c->state == CLIENT_CONNECTING)
        uv_timer_stop(&c->timer); /* its connect timeout */
    c->state = CLIENT_CLOSING;
    c->close_after = reconnect ? 0 : 2;
    w->outstanding -= c->count;
    c->head = c->count = 0; /* the caller counted them; none is in flight any more */
    uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
}

/* A connect that failed, now or in on_connect, or took longer than --connect-timeout:
 * counted (a connect error), c closed, to reconnect after the backoff. */
static void connect_abandon(struct client *c, int status)
{
    connect_failed(c, status);
    client_close(c, 1);
}

static void on_connect_timeout(uv_timer_t *t)
{
    struct client *c = t->data;
    if (c->state == CLIENT_CONNECTING) /* its connect callback comes with UV_ECANCELED */
        connect_abandon(c, UV_ETIMEDOUT);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    struct worker *w = c->w;
    if (status == UV_ECANCELED)
        return;
    uv_timer_stop(&c->timer);
    if (status < 0) {
        connect_abandon(c, status);
        return;
    }
    c->state = CLIENT_OPEN;
    w->stats.connections_established++;
    if (c->initial) {
        c->initial = 0;
        w->pending_connects--;
    }
    uv_tcp_nodelay(&c->tcp, 1);
    llhttp_init(&c->parser, HTTP_RESPONSE, &parser_settings);
    c->parser.data = c;
    if (w->io->open(c) < 0) {
        count_lost(c, STATS_ERR_READ, 1);
        client_close(c, 1);
    }
    if (c->state != CLIENT_OPEN || !w->running)
        return; /* the run has not started: worker_main sends the first requests */
    w->now_ns = timebase_now_ns();
    w->on_ready(c, w->now_ns); /* the turn that follows sends and flushes */
}

static void client_connect(struct client *c)
{
    struct worker *w = c->w;
    c->answered = 0;
    int rc = uv_tcp_init(&w->loop, &c->tcp);
    if (rc < 0) { /* no handle to close: count, and try again later */
        connect_failed(c, rc);
        if (c->failures < UINT32_MAX)
            c->failures++;
        if (w->running)
            client_retry_later(c);
        return;
    }
    c->tcp.data = c;
    c->creq.data = c;
    c->wreq.data = c;
    c->state = CLIENT_CONNECTING;
    rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&w->sh->addr, on_connect);
    if (rc < 0) {
        connect_abandon(c, rc);
        return;
    }
    uint64_t ms = (w->cfg->connect_timeout_ns + 999999) / 1000000;
    uv_timer_start(&c->timer, on_connect_timeout, ms, 0);
}

/* ---- life ---- */

void client_init(struct client *c, struct worker *w, unsigned index)
{
    c->w = w;
    c->index = index;
    c->fd = -1;
}

void client_free(struct client *c)
{
    buf_free(&c->out[0]);
    buf_free(&c->out[1]);
}

void client_start(struct client *c)
{
    uv_timer_init(&c->w->loop, &c->timer);
    c->timer.data = c;
    c->initial = 1;
    client_connect(c);
}

void client_stop(struct client *c)
{
    if (c->state == CLIENT_OPEN || c->state == CLIENT_CONNECTING)
        client_close(c, 0);
    uv_close((uv_handle_t *)&c->timer, NULL);
}

void client_abort(struct client *c)
{
    if (c->state == CLIENT_OPEN)
        uv_close((uv_handle_t *)&c->tcp, NULL);
    uv_close((uv_handle_t *)&c->timer, NULL);
}
