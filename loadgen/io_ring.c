/* io_ring: io_uring. Each open connection has a recv with the kernel at all times (a
 * recvmsg with the receive timestamp at a constant rate) and a send while it writes; each
 * wake-up is one io_uring_enter that submits what the last pass queued and waits, with a
 * ns timeout, for the schedule's next tick (constant rate) or any completion (closed loop).
 * libuv's own fd and a timerfd at its next timer are polled through the ring (multishot),
 * so libuv runs only when it has work. */
#include "io.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "dispatch.h"
#include "timebase.h"

/* user_data of the two polls for libuv (a client's token never has index 0xffffffff) */
enum { OP_UVPOLL = 4, OP_UVTIMER = 5 };
#define UVPOLL_DATA ((uint64_t)0xffffffffu << 32 | OP_UVPOLL)
#define UVTIMER_DATA ((uint64_t)0xffffffffu << 32 | OP_UVTIMER)

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

static void post_send(struct client *c)
{
    struct worker *w = c->w;
    const struct buf *out = &c->out[c->wbuf];
    uring_prep_send(ring_sqe(w), c->fd, out->data + c->woff, out->len - c->woff,
                    client_token(c, CLIENT_OP_SEND));
    w->ops_pending++;
}

/* Hands out[cur] to the kernel; new requests go to the other buffer meanwhile. */
static void ring_flush(struct client *c)
{
    c->wbuf = c->cur;
    c->cur = !c->cur;
    c->woff = 0;
    c->wpending = 1;
    post_send(c);
}

static void post_recv(struct client *c)
{
    struct worker *w = c->w;
    if (c->recv_pending || c->state != CLIENT_OPEN)
        return; /* a stale recv still owns rbuf: its completion posts this one */
    if (w->rx_stamps) {
        client_rx_prepare(c);
        uring_prep_recvmsg(ring_sqe(w), c->fd, &c->msg, client_token(c, CLIENT_OP_RECV));
    } else {
        uring_prep_recv(ring_sqe(w), c->fd, c->rbuf, sizeof c->rbuf,
                        client_token(c, CLIENT_OP_RECV));
    }
    c->recv_pending = 1;
    w->ops_pending++;
}

/* libuv's fd or its timerfd fired: run libuv at this pass; re-arm a poll that ended. */
static void on_uv_cqe(struct worker *w, const struct io_uring_cqe *cqe)
{
    uint64_t data = cqe->user_data;
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
}

static void on_recv(struct worker *w, struct client *c, int current, int res)
{
    c->recv_pending = 0;
    if (!current) {
        post_recv(c); /* the connection that replaced the stale one, if open */
        return;
    }
    if (res > 0) {
        uint64_t wake = w->now_ns;
        w->wake_time_ns = wake;
        if (w->rx_stamps)
            w->now_ns = client_rx_time(c, wake);
        int rc = client_on_data(c, c->rbuf, (size_t)res);
        w->now_ns = wake;
        if (rc == 0)
            post_recv(c);
    } else if (res != -EAGAIN && res != -EINTR) {
        client_read_ended(c, res == 0);
    } else {
        post_recv(c);
    }
}

static void on_send(struct client *c, int current, int res)
{
    if (!current) {
        c->wpending = 0; /* the buffer is ours again; close already dropped its requests */
        buf_reset(&c->out[c->wbuf]);
        if (c->state == CLIENT_OPEN && c->out[c->cur].len)
            client_touch(c); /* requests of the connection that replaced it waited for this */
        return;
    }
    if (res < 0) {
        c->wpending = 0;
        buf_reset(&c->out[c->wbuf]);
        client_write_failed(c, res);
        return;
    }
    c->woff += (size_t)res;
    if (c->woff < c->out[c->wbuf].len) {
        post_send(c); /* short send: the rest */
        return;
    }
    c->wpending = 0;
    buf_reset(&c->out[c->wbuf]);
    if (c->out[c->cur].len)
        client_touch(c);
}

static void on_cqe(const struct io_uring_cqe *cqe, void *ctx)
{
    struct worker *w = ctx;
    uint64_t data = cqe->user_data;
    enum client_op op = (enum client_op)(data & 0xf);
    if (data == UVPOLL_DATA || data == UVTIMER_DATA) {
        on_uv_cqe(w, cqe);
        return;
    }
    if (op == CLIENT_OP_CANCEL)
        return;
    int current;
    struct client *c = client_of_token(w, data, &current);
    w->ops_pending--;
    if (op == CLIENT_OP_RECV)
        on_recv(w, c, current, cqe->res);
    else
        on_send(c, current, cqe->res);
}

/* Keeps the timerfd at libuv's next timer (re-armed only when that changes, a few times a
 * second), so that no wait carries a timeout of its own for libuv. */
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

/* The loop. Each pass: one io_uring_enter that submits this pass's sends and recvs and
 * waits, then the completions, libuv when its fd or timer fired, and the turn. Closed
 * loop: wake on any completion. Constant rate: wake at the schedule's next tick, not per
 * response (responses carry the kernel's receive time), unless nothing is scheduled
 * (every due request waits for a connection): then at the next completion. */
static void ring_loop(struct worker *w)
{
    uring_prep_poll_multishot(ring_sqe(w), uv_backend_fd(&w->loop), POLLIN, UVPOLL_DATA);
    uring_prep_poll_multishot(ring_sqe(w), w->uv_tfd, POLLIN, UVTIMER_DATA);
    w->uv_due = 1;
    for (;;) {
        if (w->uv_due) {
            w->uv_due = 0;
            uv_run(&w->loop, UV_RUN_NOWAIT);
            dispatch_turn(w);
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
            dispatch_turn(w);
    }
}

static void ring_init(struct worker *w)
{
    int rc = uring_init(&w->uring, 4 * w->nconns + 16, 8 * w->nconns + 64);
    if (rc < 0) /* main probed it; a failure here is a resource limit */
        panic("io_uring_setup failed in worker %u: %s", w->id, strerror(-rc));
    w->uv_tfd = timerfd_create(TIMEBASE_CLOCK, TFD_NONBLOCK | TFD_CLOEXEC);
    if (w->uv_tfd < 0)
        panic("timerfd_create: %s", strerror(errno));
    w->rx_stamps = !w->closed_loop;
}

static int ring_open(struct client *c)
{
    struct worker *w = c->w;
    uv_os_fd_t fd;
    int rc = uv_fileno((uv_handle_t *)&c->tcp, &fd);
    if (rc < 0)
        return rc;
    c->fd = fd;
    int on = 1;
    if (w->rx_stamps && setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0)
        w->rx_stamps = 0; /* then responses are timed at wake-up */
    post_recv(c);
    return 0;
}

/* Cancels what the kernel holds for c's socket, and hands it every queued submission
 * naming the fd before the fd number can be reused. */
static void ring_close(struct client *c)
{
    struct worker *w = c->w;
    if (c->recv_pending)
        uring_prep_cancel(ring_sqe(w), client_token(c, CLIENT_OP_RECV),
                          client_token(c, CLIENT_OP_CANCEL));
    if (c->wpending)
        uring_prep_cancel(ring_sqe(w), client_token(c, CLIENT_OP_SEND),
                          client_token(c, CLIENT_OP_CANCEL));
    uring_submit(&w->uring);
    c->gen++;   /* completions still to come for this socket are stale */
    c->fd = -1;
}

static void ring_run(struct worker *w)
{
    ring_loop(w);
    uv_run(&w->loop, UV_RUN_NOWAIT); /* nothing left; keeps uv_loop_close honest */
}

static void ring_release(struct worker *w)
{
    uring_exit(&w->uring); /* after an aborted run, the queued recvs were never submitted */
    close(w->uv_tfd);
    w->uv_tfd = -1;
}

const struct io_ops io_ring = {
    .name = "io_uring",
    .init = ring_init,
    .open = ring_open,
    .flush = ring_flush,
    .close = ring_close,
    .run = ring_run,
    .stop = NULL,
    .release = ring_release,
};
