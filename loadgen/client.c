/* client: a connection's life (connect, reconnect after RETRY_MS when a connect failed,
 * at once when an open connection ended), its requests and their accounting. Every request
 * is accounted once: completed (status, latency and service time recorded when it completes
 * inside the measured window), or lost to the class of the event that ended its connection
 * (read, write, timeout, parse), or in flight when the window closed. */
#include "client.h"

#include <string.h>

#include "atomics.h"
#include "dispatch.h"
#include "io.h"
#include "mix.h"
#include "timebase.h"

#define RETRY_MS 50

static int on_headers_complete(llhttp_t *p);
static int on_message_complete(llhttp_t *p);

static const llhttp_settings_t parser_settings = {
    .on_headers_complete = on_headers_complete,
    .on_message_complete = on_message_complete,
};

static void client_connect(struct client *c);

void client_count_in_flight(struct client *c, uint64_t until)
{
    struct worker *w = c->w;
    for (unsigned k = 0; k < c->count; k++) {
        const struct slot *s = &c->ring[(c->head + k) % CONFIG_MAX_PIPELINE];
        if (s->sent_ns >= w->measure_start_ns && s->sent_ns < until)
            w->stats.in_flight_at_end++;
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

static int on_headers_complete(llhttp_t *p)
{
    struct client *c = p->data;
    if (c->count == 0)
        return -1;
    return c->ring[c->head].is_head ? 1 : 0; /* 1: no body follows */
}

static int on_message_complete(llhttp_t *p)
{
    struct client *c = p->data;
    struct worker *w = c->w;
    if (c->count == 0)
        return -1; /* a response nobody asked for */
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
        histogram_record(st->latency, latency_us);
        stats_record_interval(st, now - w->measure_start_ns, latency_us);
        histogram_record(st->service, (now - s->sent_ns + 999) / 1000);
        atomics_store64_relaxed(&st->progress_completed, st->requests_completed);
    } else if (now >= w->end_ns && s->sent_ns < w->end_ns && s->sent_ns >= w->measure_start_ns) {
        w->stats.in_flight_at_end++;
    }
    if (!llhttp_should_keep_alive(p)) {
        c->close_after = 1;
        return 0;
    }
    dispatch_ready(c, now);
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

void client_retry_later(struct client *c)
{
    uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
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
    if (reconnect && w->running && !w->stopping)
        client_connect(c);
}

void client_close(struct client *c, int reconnect)
{
    if (c->state == CLIENT_CLOSING || c->state == CLIENT_IDLE_CLOSED)
        return;
    struct worker *w = c->w;
    if (c->state == CLIENT_OPEN && w->io->close)
        w->io->close(c); /* what the kernel holds for this socket becomes stale */
    c->state = CLIENT_CLOSING;
    c->close_after = reconnect ? 0 : 2;
    w->outstanding -= c->count;
    c->head = c->count = 0; /* the caller counted them; none is in flight any more */
    uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
}

/* A connect that failed (now or in on_connect): counted, c closed, retried later. */
static void connect_abandon(struct client *c, int status)
{
    struct worker *w = c->w;
    connect_failed(c, status);
    c->state = CLIENT_CLOSING;
    c->close_after = 2;
    uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
    if (w->running && !w->stopping)
        client_retry_later(c);
}

static void on_connect(uv_connect_t *req, int status)
{
    struct client *c = req->data;
    struct worker *w = c->w;
    if (status == UV_ECANCELED)
        return;
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
    dispatch_ready(c, w->now_ns); /* the turn that follows sends and flushes */
}

static void client_connect(struct client *c)
{
    struct worker *w = c->w;
    int rc = uv_tcp_init(&w->loop, &c->tcp);
    if (rc < 0) {
        connect_failed(c, rc);
        if (w->running)
            client_retry_later(c);
        return;
    }
    c->tcp.data = c;
    c->creq.data = c;
    c->wreq.data = c;
    c->state = CLIENT_CONNECTING;
    rc = uv_tcp_connect(&c->creq, &c->tcp, (const struct sockaddr *)&w->sh->addr, on_connect);
    if (rc < 0)
        connect_abandon(c, rc);
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
    uv_timer_init(&c->w->loop, &c->retry);
    c->retry.data = c;
    c->initial = 1;
    client_connect(c);
}

void client_stop(struct client *c)
{
    if (c->state == CLIENT_OPEN || c->state == CLIENT_CONNECTING)
        client_close(c, 0);
    uv_close((uv_handle_t *)&c->retry, NULL);
}

void client_abort(struct client *c)
{
    if (c->state == CLIENT_OPEN)
        uv_close((uv_handle_t *)&c->tcp, NULL);
    uv_close((uv_handle_t *)&c->retry, NULL);
}
