/* worker: connections, scheduling and response validation for one thread and loop.
 * Every wake-up (responses, the tick, connects) ends in one turn: send every planned
 * request that is due on connections with room, then flush each connection touched in
 * this wake-up with one write. Closed loop: a completed response renders the next request
 * into its connection's buffer; the turn writes it. I/O: io_uring (recv/send for every
 * connection handed to the kernel in one io_uring_enter per wake-up, which also waits with
 * a ns timeout) or epoll. Closed loop on epoll: libuv reads every socket as it becomes
 * readable. Constant rate on epoll (tick loop): the sockets sit in an epoll set of the
 * worker's own, outside libuv's, so responses do not wake the thread; it sleeps until the
 * next tick (epoll_pwait2), then reads every readable socket with recvmsg, timing each
 * response by its kernel receive timestamp, and sends what is due. libuv always does
 * connects, closes, partial writes and the ms timers. No malloc per request. Every
 * request is accounted once: completed, or lost to the error class of the event that
 * ended its connection (read, write, timeout, parse). */
#include "worker.h"

#include <errno.h>
#include <llhttp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "atomics.h"
#include "held.h"
#include "plan.h"
#include "timebase.h"
#include "uring.h"
#include "util.h"

#define READ_BUF_BYTES 16384
#define RETRY_MS 50

enum conn_state { CONN_IDLE_CLOSED, CONN_CONNECTING, CONN_OPEN, CONN_CLOSING };

/* io_uring user_data: connection index << 32 | generation << 4 | op. */
enum ring_op { OP_RECV = 1, OP_SEND = 2, OP_CANCEL = 3, OP_UVPOLL = 4, OP_UVTIMER = 5 };
#define GEN_MASK 0x0fffffffu
#define UVPOLL_DATA ((uint64_t)0xffffffffu << 32 | OP_UVPOLL)
#define UVTIMER_DATA ((uint64_t)0xffffffffu << 32 | OP_UVTIMER)

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
    unsigned index;
    enum conn_state state;
    int fd;             /* io_uring: the socket while open */
    unsigned gen;       /* io_uring: bumped at every close; older completions are stale */
    int initial;        /* first connect, before the barrier */
    int in_ready;       /* in the worker's ready queue */
    int touched;        /* on the worker's flush list */
    int close_after;    /* the server said Connection: close */
    int recv_pending;   /* io_uring: a recv into rbuf is with the kernel */
    int wpending;       /* a write of out[wbuf] is in flight */
    unsigned wbuf;      /* the buffer being written (when wpending) */
    unsigned cur;       /* the buffer new requests are appended to (!= wbuf when wpending) */
    size_t woff;        /* io_uring: bytes of out[wbuf] already sent */
    struct slot ring[CONFIG_MAX_PIPELINE];
    unsigned head, count;
    struct buf out[2];
    struct msghdr msg;  /* io_uring at constant rate: recvmsg with the receive timestamp */
    struct iovec iov;
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) * 2];
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
    struct conn **ready; /* FIFO ring of connections with room for a request (constant
                          * rate): the longest idle takes the next request, so every
                          * connection carries its share, as N clients would */
    unsigned ready_head, nready;
    struct conn **touched; /* connections to flush at the end of this wake-up */
    unsigned ntouched;
    struct stats stats;
    struct rng rng;
    struct buf scratch;
    uint64_t seq;
    uint64_t seq_stride;      /* streams in the run (agents x threads) */
    uint64_t seq_base;        /* this worker's stream */
    llhttp_settings_t settings;
    int closed_loop;
    int use_uring;
    int running;              /* after the go barrier */
    int stopping;
    int first_error;
    unsigned pending_connects;
    uint64_t now_ns;          /* time of the current wake-up / read batch / response */
    uint64_t wake_time_ns;    /* io_uring, tick loop: time of the current wake-up */
    uint64_t measure_start_ns;
    uint64_t end_ns;
    uint64_t stop_ns;
    /* constant rate */
    struct plan plan;
    uint64_t blocked_ns;      /* last turn that found requests due and no free connection */
    struct held held;         /* while no connection was free: the server's share of lag */
    uint64_t freed_last_ns;   /* receive time of the latest response that freed a
                               * connection since the last turn (0: none) */
    uint64_t outstanding;     /* requests sent and not yet answered, on every connection */
    uint64_t wake_ns;         /* when the next turn must run for the schedule; 0 = none */
    uint64_t tick_ns;
    uint64_t grid_origin_ns;  /* the run's start + this stream's share of a tick */
    uv_check_t turn;          /* epoll, closed loop: the turn after each poll phase */
    /* epoll at constant rate: the tick loop */
    int tick_loop;
    int sock_epfd;            /* the open sockets (EPOLLIN), read once per wake-up */
    int wait_epfd;            /* what the loop sleeps on: libuv's fd, and sock_epfd while
                               * wake_ns is 0 (wake on the next response) */
    int sock_armed;           /* sock_epfd is in wait_epfd */
    struct epoll_event *events;
    /* io_uring */
    struct uring uring;
    unsigned ops_pending;     /* recv and send submissions not yet completed */
    int uv_due;               /* libuv's backend fd is readable: run its loop once */
    int uv_tfd;               /* timerfd at libuv's next timer (no timeout on the waits) */
    uint64_t uv_armed_ns;
    int rx_stamps;            /* io_uring, tick loop: responses timed by the kernel's
                               * receive timestamps */
    int64_t real_minus_mono;  /* CLOCK_REALTIME - timebase, ns, at this wake-up */
    uv_timer_t end_timer;
    uv_timer_t housekeeping;
};

static void conn_connect(struct conn *c);
static void conn_close(struct conn *c, int reconnect);
static void conn_post_recv(struct conn *c);

static inline int in_window(const struct worker *w, uint64_t t_ns)
{
    return t_ns >= w->measure_start_ns && t_ns < w->end_ns;
}

static inline uint64_t ns_to_us_ceil(uint64_t ns)
{
    uint64_t us = (ns + 999) / 1000;
    return us ? us : 1; /* below the histograms' lowest value: counted as 1 us */
}

/* c's requests in flight that were sent in [measure_start, until): counted as in flight
 * when the window closed. */
static void count_in_flight(struct conn *c, uint64_t until)
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
static void count_lost(struct conn *c, enum stats_error e, int at_least_one)
{
    struct worker *w = c->w;
    if (w->stopping || w->now_ns < w->measure_start_ns)
        return;
    if (w->now_ns >= w->end_ns) {
        count_in_flight(c, w->end_ns);
        return;
    }
    uint64_t n = c->count ? c->count : (uint64_t)(at_least_one != 0);
    if (n == 0)
        return;
    w->stats.errors[e] += n;
    atomics_store64_relaxed(&w->stats.progress_errors, stats_errors_total(&w->stats));
}

static void conn_touch(struct conn *c)
{
    if (c->touched)
        return;
    c->touched = 1;
    c->w->touched[c->w->ntouched++] = c;
}

/* ---- sending ---- */

/* Appends one request planned at planned_ns to c's out buffer (written by the turn). */
static void conn_queue_request(struct conn *c, uint64_t planned_ns, uint64_t now_ns)
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
    conn_touch(c);
    if (in_window(w, now_ns))
        w->stats.requests_sent++;
}

static void write_failed(struct conn *c, int err)
{
    count_lost(c, STATS_ERR_WRITE, 1);
    conn_close(c, 1);
}

static void on_write(uv_write_t *req, int status)
{
    struct conn *c = req->data;
    c->wpending = 0;
    buf_reset(&c->out[c->wbuf]);
    if (status < 0) {
        if (status != UV_ECANCELED && c->state == CONN_OPEN) {
            c->w->now_ns = timebase_now_ns();
            write_failed(c, status);
        }
        return;
    }
    if (c->out[c->cur].len && c->state == CONN_OPEN)
        conn_touch(c); /* the next turn writes what queued up meanwhile */
}

/* epoll: uv_try_write first, uv_write for the rest. */
static void conn_flush_epoll(struct conn *c)
{
    struct buf *out = &c->out[c->cur];
    uv_buf_t b = uv_buf_init(out->data, (unsigned)out->len);
    int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
    if (n == (int)out->len) {
        buf_reset(out);
        return;
    }
    if (n < 0 && n != UV_EAGAIN) {
        write_failed(c, n);
        return;
    }
    if (n < 0)
        n = 0;
    /* Partial: uv_write owns the rest of this buffer until on_write; append to the other. */
    c->wbuf = c->cur;
    c->cur = !c->cur;
    c->wpending = 1;
    b = uv_buf_init(out->data + n, (unsigned)(out->len - (size_t)n));
    int rc = uv_write(&c->wreq, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rc < 0) {
        c->wpending = 0;
        buf_reset(out);
        write_failed(c, rc);
    }
}

static inline uint64_t ring_data(const struct conn *c, enum ring_op op)
{
    return (uint64_t)c->index << 32 | (uint64_t)(c->gen & GEN_MASK) << 4 | op;
}

static struct io_uring_sqe *ring_sqe(struct worker *w)
{
    struct io_uring_sqe *s = uring_get_sqe(&w->uring);
    if (s == NULL) {
        int rc = uring_submit(&w->uring);
        if (rc < 0)
            panic("io_uring_enter: %s", strerror(-rc));
        s = uring_get_sqe(&w->uring);
        if (s == NULL)
            panic("io_uring submission queue stays full");
    }
    return s;
}

static void ring_post_send(struct conn *c)
{
    struct worker *w = c->w;
    const struct buf *out = &c->out[c->wbuf];
    uring_prep_send(ring_sqe(w), c->fd, out->data + c->woff, out->len - c->woff,
                    ring_data(c, OP_SEND));
    w->ops_pending++;
}

/* io_uring: hands out[cur] to the kernel; new requests go to the other buffer meanwhile. */
static void conn_flush_uring(struct conn *c)
{
    c->wbuf = c->cur;
    c->cur = !c->cur;
    c->woff = 0;
    c->wpending = 1;
    ring_post_send(c);
}

/* Writes what conn_queue_request appended, unless a write is already in flight (its
 * completion touches c again). */
static void conn_flush(struct conn *c)
{
    if (c->wpending || c->state != CONN_OPEN || c->out[c->cur].len == 0)
        return;
    if (c->w->use_uring)
        conn_flush_uring(c);
    else
        conn_flush_epoll(c);
}

static void flush_touched(struct worker *w)
{
    /* conn_flush may close a connection, never touch another: the list is stable. */
    for (unsigned i = 0; i < w->ntouched; i++) {
        struct conn *c = w->touched[i];
        c->touched = 0;
        conn_flush(c);
    }
    w->ntouched = 0;
}

/* ---- scheduling ---- */

static inline int conn_has_room(const struct conn *c)
{
    return c->state == CONN_OPEN && !c->close_after && c->count < c->w->cfg->pipeline;
}

static void ready_push(struct worker *w, struct conn *c)
{
    if (c->in_ready)
        return;
    c->in_ready = 1;
    w->ready[(w->ready_head + w->nready++) % w->nconns] = c;
}

/* The first tick-grid time at or after t. The schedule is binned to this grid: a request
 * planned at t is due at tick_ceil(t), its send lag and latency count from then, and the
 * loop wakes at most once per tick. Stream k of S (agents x threads) has its grid offset
 * by k/S of a tick, as its planned times are by k/R: the streams' batches interleave. */
static uint64_t tick_ceil(const struct worker *w, uint64_t t)
{
    uint64_t origin = w->grid_origin_ns;
    if (w->tick_ns == 0 || t <= origin)
        return t;
    uint64_t k = (t - origin + w->tick_ns - 1) / w->tick_ns;
    return origin + k * w->tick_ns;
}

/* Queues every planned request that is due on connections with room and sets wake_ns,
 * when the schedule next needs a turn (0: not before a completion frees a connection). */
static void dispatch_due(struct worker *w, uint64_t now_ns)
{
    if (now_ns >= w->end_ns) { /* a late pass: what was due stays not sent (counted so) */
        w->wake_ns = 0;
        return;
    }
    /* A connection came free during a hold and the server has answered every request: it
     * went idle at its last answer, and from then on the wait was the generator's (a late
     * wake-up, a saturated or stopped generator), though its connections looked busy until
     * it read them. While the server still has requests to answer, the hold lasts to the
     * end of this pass (below). */
    if (w->held.on && w->nready > 0 && w->outstanding == 0 && w->freed_last_ns)
        held_end(&w->held, w->freed_last_ns < now_ns ? w->freed_last_ns : now_ns);
    w->freed_last_ns = 0;
    for (;;) {
        uint64_t due = tick_ceil(w, plan_peek(&w->plan));
        if (due > now_ns || due >= w->end_ns)
            break;
        struct conn *c = NULL;
        while (w->nready > 0) { /* the head, off the queue; a closed one is dropped */
            c = w->ready[w->ready_head];
            c->in_ready = 0;
            w->ready_head = (w->ready_head + 1) % w->nconns;
            w->nready--;
            if (conn_has_room(c))
                break;
            c = NULL;
        }
        if (c == NULL) {
            w->blocked_ns = now_ns; /* everything due now waits for a connection */
            held_begin(&w->held, now_ns);
            break;
        }
        conn_queue_request(c, due, now_ns);
        if (conn_has_room(c))
            ready_push(w, c); /* pipelining: back of the queue, so the load rotates */
        else if (w->nready == 0)
            held_begin(&w->held, now_ns); /* the last free one: the server holds them all */
        if (in_window(w, now_ns)) {
            uint64_t lag_us = ns_to_us_ceil(now_ns - due);
            histogram_record(w->stats.send_lag, lag_us);
            uint64_t server_ns = held_between(&w->held, due, now_ns);
            uint64_t own_ns = now_ns - due > server_ns ? now_ns - due - server_ns : 0;
            histogram_record(w->stats.own_lag, ns_to_us_ceil(own_ns));
            if (due <= w->blocked_ns) {
                w->stats.requests_waited++;
                histogram_record(w->stats.conn_wait, lag_us);
            }
        }
        plan_advance(&w->plan);
    }
    /* A pass that leaves a connection free ends the hold; one that sends the backlog's next
     * round and takes them all again continues it (its reading and sending are that round,
     * and a long backlog adds no marks per round that would push its start out of the
     * ring). */
    if (w->nready > 0)
        held_end(&w->held, now_ns);
    uint64_t next = tick_ceil(w, plan_peek(&w->plan));
    if (next >= w->end_ns)
        w->wake_ns = 0;
    else if (next > now_ns)
        w->wake_ns = next;
    else
        w->wake_ns = 0; /* due, no free connection: the next completion runs a turn */
}

/* The end of every wake-up: send what is due, then one write per touched connection. */
static void worker_turn(struct worker *w)
{
    if (w->stopping || !w->running)
        return;
    if (!w->closed_loop) {
        w->now_ns = timebase_now_ns();
        dispatch_due(w, w->now_ns);
    }
    flush_touched(w);
}

static void on_turn(uv_check_t *h)
{
    worker_turn(h->data);
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
    if (now_ns > w->freed_last_ns)
        w->freed_last_ns = now_ns;
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
    conn_ready(c, now);
    return 0;
}

/* The peer closed (eof) or the read failed (err < 0, not EOF); w->now_ns is set. */
static void conn_read_ended(struct conn *c, int eof)
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
    conn_close(c, 1);
}

/* n > 0 bytes arrived at w->now_ns. Returns 0 while c stays open. */
static int conn_on_data(struct conn *c, const char *data, size_t n)
{
    llhttp_errno_t err = llhttp_execute(&c->parser, data, n);
    if (err != HPE_OK) {
        count_lost(c, STATS_ERR_PARSE, 1);
        conn_close(c, 1);
        return -1;
    }
    if (c->close_after) {
        count_lost(c, STATS_ERR_READ, 0); /* pipelined behind Connection: close */
        conn_close(c, 1);
        return -1;
    }
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
    if (nread == 0)
        return;
    c->w->now_ns = timebase_now_ns();
    if (nread < 0)
        conn_read_ended(c, nread == UV_EOF);
    else
        conn_on_data(c, b->base, (size_t)nread);
}

/* ---- io_uring completions ---- */

/* Points c->msg at rbuf and an empty control buffer for a recvmsg with a timestamp. */
static void conn_msg_prepare(struct conn *c)
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

static void conn_post_recv(struct conn *c)
{
    struct worker *w = c->w;
    if (c->recv_pending || c->state != CONN_OPEN)
        return; /* a stale recv still owns rbuf: its completion posts this one */
    if (w->rx_stamps) {
        conn_msg_prepare(c);
        uring_prep_recvmsg(ring_sqe(w), c->fd, &c->msg, ring_data(c, OP_RECV));
    } else {
        uring_prep_recv(ring_sqe(w), c->fd, c->rbuf, sizeof c->rbuf, ring_data(c, OP_RECV));
    }
    c->recv_pending = 1;
    w->ops_pending++;
}

/* When the bytes of c's last recvmsg arrived: the kernel's software receive timestamp
 * (CLOCK_REALTIME, taken as the packet entered our host's stack) on the timebase clock;
 * `wake` when there is none. Never later than wake. */
static uint64_t conn_rx_time(const struct conn *c, uint64_t wake)
{
    const struct worker *w = c->w;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&c->msg); cm; cm = CMSG_NXTHDR((struct msghdr *)&c->msg, cm)) {
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

static void uv_timer_sync(struct worker *w);

static void on_cqe(const struct io_uring_cqe *cqe, void *ctx)
{
    struct worker *w = ctx;
    uint64_t data = cqe->user_data;
    enum ring_op op = (enum ring_op)(data & 0xf);
    if (data == UVPOLL_DATA || data == UVTIMER_DATA) {
        w->uv_due = 1;
        if (data == UVTIMER_DATA) {
            uint64_t expirations;
            if (read(w->uv_tfd, &expirations, sizeof expirations) < 0) {
                /* EAGAIN: already read */
            }
            w->uv_armed_ns = 0;
        }
        if (!(cqe->flags & IORING_CQE_F_MORE) && !w->stopping)
            uring_prep_poll_multishot(ring_sqe(w),
                                      data == UVPOLL_DATA ? uv_backend_fd(&w->loop) : w->uv_tfd,
                                      POLLIN, data);
        return;
    }
    if (op == OP_CANCEL)
        return;
    struct conn *c = &w->conns[data >> 32];
    int current = ((data >> 4) & GEN_MASK) == (c->gen & GEN_MASK) && c->state == CONN_OPEN;
    w->ops_pending--;
    if (op == OP_RECV) {
        c->recv_pending = 0;
        if (!current) {
            conn_post_recv(c); /* the connection that replaced the stale one, if open */
            return;
        }
        if (cqe->res > 0) {
            uint64_t wake = w->now_ns;
            w->wake_time_ns = wake;
            if (w->rx_stamps)
                w->now_ns = conn_rx_time(c, wake);
            int rc = conn_on_data(c, c->rbuf, (size_t)cqe->res);
            w->now_ns = wake;
            if (rc == 0)
                conn_post_recv(c);
        } else if (cqe->res != -EAGAIN && cqe->res != -EINTR) {
            conn_read_ended(c, cqe->res == 0);
        } else {
            conn_post_recv(c);
        }
        return;
    }
    /* OP_SEND */
    if (!current) {
        c->wpending = 0; /* the buffer is ours again; close already dropped its requests */
        buf_reset(&c->out[c->wbuf]);
        if (c->state == CONN_OPEN && c->out[c->cur].len)
            conn_touch(c); /* requests of the connection that replaced it waited for this */
        return;
    }
    if (cqe->res < 0) {
        c->wpending = 0;
        buf_reset(&c->out[c->wbuf]);
        write_failed(c, cqe->res);
        return;
    }
    c->woff += (size_t)cqe->res;
    if (c->woff < c->out[c->wbuf].len) {
        ring_post_send(c); /* short send: the rest */
        return;
    }
    c->wpending = 0;
    buf_reset(&c->out[c->wbuf]);
    if (c->out[c->cur].len)
        conn_touch(c);
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
    w->outstanding -= c->count;
    c->head = c->count = 0;
    c->close_after = 0;
    buf_reset(&c->out[c->cur]);
    if (!c->wpending) /* io_uring: a send may still own out[wbuf] until its completion */
        buf_reset(&c->out[!c->cur]);
    if (reconnect && w->running && !w->stopping)
        conn_connect(c);
}

/* Closes c; its in-flight requests must have been counted by the caller. */
static void conn_close(struct conn *c, int reconnect)
{
    if (c->state == CONN_CLOSING || c->state == CONN_IDLE_CLOSED)
        return;
    struct worker *w = c->w;
    if (w->use_uring && c->state == CONN_OPEN) {
        /* Cancel what the kernel holds for this socket, and hand it every queued
         * submission naming the fd before the fd number can be reused. */
        if (c->recv_pending)
            uring_prep_cancel(ring_sqe(w), ring_data(c, OP_RECV), ring_data(c, OP_CANCEL));
        if (c->wpending)
            uring_prep_cancel(ring_sqe(w), ring_data(c, OP_SEND), ring_data(c, OP_CANCEL));
        uring_submit(&w->uring);
    }
    if ((w->use_uring || w->tick_loop) && c->state == CONN_OPEN) {
        c->gen++; /* events already reported for this socket are stale */
        c->fd = -1; /* closing it leaves sock_epfd too */
    }
    c->state = CONN_CLOSING;
    c->close_after = reconnect ? 0 : 2;
    w->outstanding -= c->count;
    c->head = c->count = 0; /* the caller counted them; none is in flight any more */
    uv_close((uv_handle_t *)&c->tcp, on_tcp_close);
}

static void conn_start_reading(struct conn *c)
{
    struct worker *w = c->w;
    if (w->use_uring || w->tick_loop) {
        uv_os_fd_t fd;
        if (uv_fileno((uv_handle_t *)&c->tcp, &fd) < 0) {
            count_lost(c, STATS_ERR_READ, 1);
            conn_close(c, 1);
            return;
        }
        c->fd = fd;
        int on = 1;
        if (w->rx_stamps && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0)
            w->rx_stamps = 0; /* then responses are timed at wake-up */
        if (w->use_uring) {
            conn_post_recv(c);
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ring_data(c, OP_RECV)};
        if (epoll_ctl(w->sock_epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
            count_lost(c, STATS_ERR_READ, 1);
            conn_close(c, 1);
        }
        return;
    }
    if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) < 0) {
        count_lost(c, STATS_ERR_READ, 1);
        conn_close(c, 1);
    }
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
    conn_start_reading(c);
    if (c->state != CONN_OPEN || !w->running)
        return; /* the run has not started: worker_main sends the first requests */
    w->now_ns = timebase_now_ns();
    conn_ready(c, w->now_ns); /* the turn that follows sends and flushes */
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

/* Constant rate: the due times inside the window that were never sent. */
static void count_not_sent(struct worker *w)
{
    for (;;) {
        uint64_t due = tick_ceil(w, plan_peek(&w->plan));
        if (due >= w->end_ns)
            break;
        if (due >= w->measure_start_ns)
            w->stats.requests_not_sent++;
        plan_advance(&w->plan);
    }
}

static void worker_stop(struct worker *w)
{
    if (w->stopping)
        return;
    w->now_ns = timebase_now_ns();
    w->stop_ns = w->now_ns < w->end_ns ? w->now_ns : w->end_ns;
    for (unsigned i = 0; i < w->nconns; i++)
        count_in_flight(&w->conns[i], w->stop_ns); /* closed ones hold none */
    if (!w->closed_loop && w->stop_ns >= w->end_ns) /* not on SIGINT: the rest was not due */
        count_not_sent(w);
    w->stopping = 1;
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN || c->state == CONN_CONNECTING)
            conn_close(c, 0);
        uv_close((uv_handle_t *)&c->retry, NULL);
    }
    if (!w->use_uring && !w->tick_loop)
        uv_close((uv_handle_t *)&w->turn, NULL);
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
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN && c->count > 0 &&
            now - c->ring[c->head].sent_ns > w->cfg->timeout_ns) {
            count_lost(c, STATS_ERR_TIMEOUT, 0);
            conn_close(c, 1);
        }
    }
}

/* io_uring: keeps the timerfd at libuv's next timer (re-armed only when that changes, a
 * few times a second), so that no wait carries a timeout of its own for libuv. */
static void uv_timer_sync(struct worker *w)
{
    uv_update_time(&w->loop);
    int ms = uv_backend_timeout(&w->loop);
    uint64_t at = 0;
    if (ms > 0)
        at = timebase_now_ns() + (uint64_t)ms * 1000000;
    else if (ms == 0)
        w->uv_due = 1;
    /* A later deadline already armed fires early and is re-armed then: keep it. */
    if (at == 0 || (w->uv_armed_ns && w->uv_armed_ns <= at + 1000000))
        return;
    struct itimerspec its = {0};
    its.it_value.tv_sec = (time_t)(at / 1000000000u);
    its.it_value.tv_nsec = (long)(at % 1000000000u);
    timerfd_settime(w->uv_tfd, TFD_TIMER_ABSTIME, &its, NULL);
    w->uv_armed_ns = at;
}

/* A wake-up of the io_uring or tick loop: now_ns, and with receive timestamps the offset
 * that converts them (CLOCK_REALTIME) to the timebase clock. */
static void worker_woke(struct worker *w)
{
    w->now_ns = timebase_now_ns();
    if (w->rx_stamps) {
        struct timespec rt;
        clock_gettime(CLOCK_REALTIME, &rt);
        w->real_minus_mono = (int64_t)rt.tv_sec * 1000000000 + rt.tv_nsec - (int64_t)w->now_ns;
    }
}

/* io_uring: the loop. Each pass: one io_uring_enter that submits this pass's sends and
 * recvs and waits, then the completions, libuv when its fd or timer fired, and the turn.
 * Closed loop: wake on any completion. Constant rate: wake at the schedule's next tick,
 * not per response (responses carry the kernel's receive time), unless nothing is
 * scheduled (every due request waits for a connection): then at the next completion. */
static void uring_loop(struct worker *w)
{
    uring_prep_poll_multishot(ring_sqe(w), uv_backend_fd(&w->loop), POLLIN, UVPOLL_DATA);
    uring_prep_poll_multishot(ring_sqe(w), w->uv_tfd, POLLIN, UVTIMER_DATA);
    w->uv_due = 1;
    for (;;) {
        if (w->uv_due) {
            w->uv_due = 0;
            uv_run(&w->loop, UV_RUN_NOWAIT);
            worker_turn(w);
        }
        if (w->stopping && !uv_loop_alive(&w->loop) && w->ops_pending == 0)
            break;
        uv_timer_sync(w);
        unsigned min_complete = 1;
        int64_t wait_ns = -1;
        if (w->uv_due) {
            min_complete = 0;
        } else if (!w->closed_loop && !w->stopping && w->wake_ns) {
            uint64_t now = timebase_now_ns();
            wait_ns = w->wake_ns > now ? (int64_t)(w->wake_ns - now) : 0;
            min_complete = wait_ns == 0 ? 0 : w->uring.cq_entries;
        }
        int rc = uring_enter(&w->uring, min_complete, wait_ns);
        if (rc < 0)
            panic("io_uring_enter: %s", strerror(-rc));
        worker_woke(w);
        uring_reap(&w->uring, on_cqe, w);
        if (!w->uv_due)
            worker_turn(w);
    }
}

/* ---- epoll at constant rate: the tick loop ---- */

/* Reads everything c's socket holds (it was reported readable), each read timed by its
 * kernel receive timestamp; stops at a short read (level-triggered: more is reported at
 * the next wake-up), at EAGAIN, or when c closes. */
static void conn_read_all(struct conn *c, uint64_t wake)
{
    struct worker *w = c->w;
    for (;;) {
        conn_msg_prepare(c);
        ssize_t n = recvmsg(c->fd, &c->msg, MSG_DONTWAIT);
        if (n > 0) {
            w->now_ns = w->rx_stamps ? conn_rx_time(c, wake) : wake;
            int rc = conn_on_data(c, c->rbuf, (size_t)n);
            w->now_ns = wake;
            if (rc < 0 || (size_t)n < sizeof c->rbuf)
                return;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            conn_read_ended(c, n == 0);
            return;
        } else {
            return;
        }
    }
}

/* Reads every socket that is readable now: one epoll_wait that does not block. */
static void tick_loop_read(struct worker *w)
{
    int n = epoll_wait(w->sock_epfd, w->events, (int)w->nconns, 0);
    uint64_t wake = w->now_ns;
    w->wake_time_ns = wake;
    for (int i = 0; i < n; i++) {
        uint64_t data = w->events[i].data.u64;
        struct conn *c = &w->conns[data >> 32];
        if (((data >> 4) & GEN_MASK) == (c->gen & GEN_MASK) && c->state == CONN_OPEN)
            conn_read_all(c, wake);
    }
}

/* Sleeps on wait_epfd for at most wait_ns (< 0: no limit): epoll_pwait2's ns timeout, or
 * epoll_wait's ms (rounded up) where the kernel or a seccomp filter refuses it. */
static int tick_loop_wait(struct worker *w, struct epoll_event *ev, int max, int64_t wait_ns)
{
    static unsigned no_pwait2; /* the same answer in every thread: a benign race */
    if (!atomics_load_relaxed(&no_pwait2)) {
        struct timespec ts = {.tv_sec = wait_ns / 1000000000, .tv_nsec = wait_ns % 1000000000};
        int n = epoll_pwait2(w->wait_epfd, ev, max, wait_ns < 0 ? NULL : &ts, NULL);
        if (n >= 0 || (errno != ENOSYS && errno != EPERM))
            return n;
        if (atomics_exchange_seq_cst(&no_pwait2, 1) == 0)
            fprintf(stderr, "loadgen: epoll_pwait2: %s; the tick's wake-ups are rounded up to "
                            "1 ms (more send lag)\n", strerror(errno));
    }
    return epoll_wait(w->wait_epfd, ev, max,
                      wait_ns < 0 ? -1 : (int)((wait_ns + 999999) / 1000000));
}

/* Whether the next response should wake the loop (wake_ns 0: nothing is scheduled before
 * a connection frees up, or the schedule has ended). */
static void tick_loop_arm_sockets(struct worker *w, int on)
{
    if (on == w->sock_armed)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
    if (epoll_ctl(w->wait_epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->sock_epfd, &ev) < 0)
        panic("epoll_ctl: %s", strerror(errno));
    w->sock_armed = on;
}

/* The loop at a constant rate on epoll. Each pass: sleep until the schedule's next tick
 * (or libuv's next timer, or libuv's fd), read every readable socket, run libuv when it
 * has work, then the turn. A response does not wake the thread unless nothing is
 * scheduled (wake_ns 0): then the sockets join the wait. */
static void tick_loop(struct worker *w)
{
    struct epoll_event ev[2];
    struct epoll_event uvev = {.events = EPOLLIN, .data.u64 = 0};
    if (epoll_ctl(w->wait_epfd, EPOLL_CTL_ADD, uv_backend_fd(&w->loop), &uvev) < 0)
        panic("epoll_ctl: %s", strerror(errno));
    for (;;) {
        tick_loop_arm_sockets(w, w->wake_ns == 0);
        uv_update_time(&w->loop);
        int uv_ms = uv_backend_timeout(&w->loop);
        int64_t wait_ns = -1;
        if (w->wake_ns) {
            uint64_t now = timebase_now_ns();
            wait_ns = w->wake_ns > now ? (int64_t)(w->wake_ns - now) : 0;
        }
        if (uv_ms >= 0 && (wait_ns < 0 || (int64_t)uv_ms * 1000000 < wait_ns))
            wait_ns = (int64_t)uv_ms * 1000000;
        int n = tick_loop_wait(w, ev, 2, wait_ns);
        if (n < 0 && errno != EINTR)
            panic("epoll_wait: %s", strerror(errno));
        worker_woke(w);
        tick_loop_read(w);
        int uv_ready = 0;
        for (int i = 0; i < n; i++)
            uv_ready |= ev[i].data.u64 == 0;
        uv_update_time(&w->loop);
        if (uv_ready || uv_backend_timeout(&w->loop) == 0)
            uv_run(&w->loop, UV_RUN_NOWAIT);
        if (w->stopping)
            break;
        worker_turn(w);
    }
}

static void worker_abort(struct worker *w)
{
    struct worker_shared *sh = w->sh;
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
    if (w->use_uring) {
        uring_exit(&w->uring); /* queued recvs were never submitted */
        close(w->uv_tfd);
    }
    if (w->tick_loop) {
        close(w->sock_epfd);
        close(w->wait_epfd);
    }
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct worker_shared *sh = w->sh;
    const struct config *cfg = w->cfg;
    if (gate_wait(&sh->gate))
        return NULL; /* another thread could not start: no run */
    /* io_uring: coalesce the kernel's own timeouts to the tick. The tick loop sleeps until
     * the tick exactly (its lag would grow by the slack). */
    unsigned long slack = w->tick_loop || cfg->tick_ns == 0 ? 1UL : (unsigned long)cfg->tick_ns;
    prctl(PR_SET_TIMERSLACK, slack, 0, 0, 0);
    if (uv_loop_init(&w->loop) < 0)
        panic("uv_loop_init failed");
    if (w->use_uring) {
        int rc = uring_init(&w->uring, 4 * w->nconns + 16, 8 * w->nconns + 64);
        if (rc < 0) /* main probed it; a failure here is a resource limit */
            panic("io_uring_setup failed in worker %u: %s", w->id, strerror(-rc));
        w->uv_tfd = timerfd_create(TIMEBASE_CLOCK, TFD_NONBLOCK | TFD_CLOEXEC);
        if (w->uv_tfd < 0)
            panic("timerfd_create: %s", strerror(errno));
        w->rx_stamps = !w->closed_loop;
    }
    if (w->tick_loop) {
        w->sock_epfd = epoll_create1(EPOLL_CLOEXEC);
        w->wait_epfd = epoll_create1(EPOLL_CLOEXEC);
        if (w->sock_epfd < 0 || w->wait_epfd < 0)
            panic("epoll_create1: %s", strerror(errno));
        w->rx_stamps = 1;
    }
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
        worker_abort(w);
        return NULL;
    }
    uint64_t start = sh->start_ns;
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
    if (!w->use_uring && !w->tick_loop) {
        uv_check_init(&w->loop, &w->turn);
        w->turn.data = w;
        uv_check_start(&w->turn, on_turn);
    }
    for (unsigned i = 0; i < w->nconns; i++) {
        struct conn *c = &w->conns[i];
        if (c->state == CONN_OPEN)
            conn_ready(c, w->now_ns);
        else if (c->state == CONN_IDLE_CLOSED)
            uv_timer_start(&c->retry, on_retry, RETRY_MS, 0);
    }
    worker_turn(w);
    if (w->use_uring) {
        uring_loop(w);
        uv_run(&w->loop, UV_RUN_NOWAIT); /* nothing left; keeps uv_loop_close honest */
        uring_exit(&w->uring);
        close(w->uv_tfd);
    } else if (w->tick_loop) {
        tick_loop(w);
        uv_run(&w->loop, UV_RUN_DEFAULT); /* the closes worker_stop began */
        close(w->sock_epfd);
        close(w->wait_epfd);
    } else {
        uv_run(&w->loop, UV_RUN_DEFAULT);
    }
    if (uv_loop_close(&w->loop) != 0)
        panic("worker %u: handles left open", w->id);
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
    w->conns = xcalloc(nconns, sizeof *w->conns);
    w->ready = xcalloc(nconns, sizeof *w->ready);
    w->touched = xcalloc(nconns, sizeof *w->touched);
    for (unsigned i = 0; i < nconns; i++) {
        w->conns[i].w = w;
        w->conns[i].index = i;
        w->conns[i].fd = -1;
    }
    stats_init(&w->stats);
    stats_intervals_init(&w->stats, config_intervals(cfg), cfg->interval_ns);
    unsigned stream = plan_stream(cfg->agent_index, cfg->agent_count, id);
    rng_seed(&w->rng, cfg->seed * 0x100000001b3ull + stream);
    w->seq_stride = (uint64_t)cfg->agent_count * cfg->threads;
    w->seq_base = stream;
    w->closed_loop = cfg->rate <= 0;
    w->use_uring = sh->use_uring;
    w->tick_ns = cfg->tick_ns;
    w->tick_loop = !w->closed_loop && !w->use_uring;
    w->sock_epfd = w->wait_epfd = -1;
    if (w->tick_loop)
        w->events = xcalloc(nconns, sizeof *w->events);
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
    free(w->events);
    free(w->touched);
    free(w->ready);
    free(w->conns);
    free(w);
}
