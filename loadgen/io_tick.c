/* io_tick: constant rate on epoll, the tick loop. The sockets sit in an epoll set of the
 * worker's own, outside libuv's, so responses do not wake the thread: it sleeps until the
 * schedule's next tick (epoll_pwait2), reads every readable socket with recvmsg, timing
 * each response by its kernel receive timestamp, runs libuv when it has work, then the
 * turn. Only while nothing is scheduled (every due request waits for a connection) do the
 * sockets join the wait, so that the next response wakes it. Writes as io_uv. */
#include "io.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/base/atomics.h"
#include "dispatch.h"
#include "timebase.h"

/* Reads everything c's socket holds (it was reported readable), each read timed by its
 * kernel receive timestamp; stops at a short read (level-triggered: more is reported at
 * the next wake-up), at EAGAIN, or when c closes. */
static void read_all(struct client *c, uint64_t wake)
{
    struct worker *w = c->w;
    for (;;) {
        client_rx_prepare(c);
        ssize_t n = recvmsg(c->fd, &c->msg, MSG_DONTWAIT);
        if (n > 0) {
            w->now_ns = w->rx_stamps ? client_rx_time(c, wake) : wake;
            int rc = client_on_data(c, c->rbuf, (size_t)n);
            w->now_ns = wake;
            if (rc < 0 || (size_t)n < sizeof c->rbuf)
                return;
        } else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
            client_read_ended(c, n == 0);
            return;
        } else {
            return;
        }
    }
}

/* Reads every socket that is readable now: one epoll_wait that does not block. */
static void read_ready(struct worker *w)
{
    int n = epoll_wait(w->sock_epfd, w->events, (int)w->nconns, 0);
    uint64_t wake = w->now_ns;
    w->wake_time_ns = wake;
    for (int i = 0; i < n; i++) {
        int current;
        struct client *c = client_of_token(w, w->events[i].data.u64, &current);
        if (current)
            read_all(c, wake);
    }
}

/* Sleeps on wait_epfd for at most wait_ns (< 0: no limit): epoll_pwait2's ns timeout, or
 * epoll_wait's ms (rounded up) where the kernel or a seccomp filter refuses it. */
static int tick_wait(struct worker *w, struct epoll_event *ev, int max, int64_t wait_ns)
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
static void arm_sockets(struct worker *w, int on)
{
    if (on == w->sock_armed)
        return;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = 1};
    if (epoll_ctl(w->wait_epfd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, w->sock_epfd, &ev) < 0)
        panic("epoll_ctl: %s", strerror(errno));
    w->sock_armed = on;
}

/* The loop. Each pass: sleep until the schedule's next tick (or libuv's next timer, or
 * libuv's fd), read every readable socket, run libuv when it has work, then the turn. */
static void tick_loop(struct worker *w)
{
    struct epoll_event ev[2];
    struct epoll_event uvev = {.events = EPOLLIN, .data.u64 = 0};
    if (epoll_ctl(w->wait_epfd, EPOLL_CTL_ADD, uv_backend_fd(&w->loop), &uvev) < 0)
        panic("epoll_ctl: %s", strerror(errno));
    for (;;) {
        arm_sockets(w, w->wake_ns == 0);
        uv_update_time(&w->loop);
        int uv_ms = uv_backend_timeout(&w->loop);
        int64_t wait_ns = -1;
        if (w->wake_ns) {
            uint64_t now = timebase_now_ns();
            wait_ns = w->wake_ns > now ? (int64_t)(w->wake_ns - now) : 0;
        }
        if (uv_ms >= 0 && (wait_ns < 0 || (int64_t)uv_ms * 1000000 < wait_ns))
            wait_ns = (int64_t)uv_ms * 1000000;
        int n = tick_wait(w, ev, 2, wait_ns);
        if (n < 0 && errno != EINTR)
            panic("epoll_wait: %s", strerror(errno));
        worker_woke(w);
        read_ready(w);
        int uv_ready = 0;
        for (int i = 0; i < n; i++)
            uv_ready |= ev[i].data.u64 == 0;
        uv_update_time(&w->loop);
        if (uv_ready || uv_backend_timeout(&w->loop) == 0)
            uv_run(&w->loop, UV_RUN_NOWAIT);
        if (w->stopping)
            break;
        dispatch_turn(w);
    }
}

static void tick_init(struct worker *w)
{
    w->sock_epfd = epoll_create1(EPOLL_CLOEXEC);
    w->wait_epfd = epoll_create1(EPOLL_CLOEXEC);
    if (w->sock_epfd < 0 || w->wait_epfd < 0)
        panic("epoll_create1: %s", strerror(errno));
    w->events = xcalloc(w->nconns, sizeof *w->events);
    w->rx_stamps = 1;
}

static int tick_open(struct client *c)
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
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = client_token(c, CLIENT_OP_RECV)};
    if (epoll_ctl(w->sock_epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
        return -errno;
    return 0;
}

static void tick_close(struct client *c)
{
    c->gen++;   /* events already reported for this socket are stale */
    c->fd = -1; /* closing it leaves sock_epfd too */
}

static void tick_run(struct worker *w)
{
    tick_loop(w);
    uv_run(&w->loop, UV_RUN_DEFAULT); /* the closes worker_stop began */
}

static void tick_release(struct worker *w)
{
    close(w->sock_epfd);
    close(w->wait_epfd);
    w->sock_epfd = w->wait_epfd = -1;
    free(w->events);
    w->events = NULL;
}

const struct io_ops io_tick = {
    .name = "epoll",
    .init = tick_init,
    .open = tick_open,
    .flush = io_uv_flush,
    .close = tick_close,
    .run = tick_run,
    .stop = NULL,
    .release = tick_release,
};
