/* server: the I/O loops both servers share: one struct server_loop per thread, each with
 * its own SO_REUSEPORT listener (accepted with accept4 from a uv_poll watcher, so that
 * accepting can pause without closing the socket), timers and flush handle; accept errors
 * (EMFILE pauses accepting, the backlog waits), the graceful stop and the threads.
 * Connections themselves are conn.c's.
 * Everything a loop owns is touched only by that loop's thread; the only cross-thread
 * traffic here is stop_async and the global connection count (one atomic per accept and
 * close, not per request). */
#include "server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/base/atomics.h"
#include "conn.h"
#include "loop.h"

#define SWEEP_MS 250
#define ACCEPT_RETRY_MS 100 /* out of descriptors: accept again after this (or sooner,
                               when one of this loop's connections is freed) */
#define ACCEPT_BATCH 64     /* connections accepted per readiness callback: the loop's
                               other sockets get their turn in between */
#define LISTEN_BACKLOG 1024

void server_config_default(struct server_config *cfg)
{
    *cfg = (struct server_config){.host = "127.0.0.1", .port = 8080, .threads = 1,
                                  .max_conns = 10000, .max_pipeline = 16,
                                  .header_timeout_ms = 10000, .body_timeout_ms = 10000,
                                  .send_timeout_ms = 60000, .idle_timeout_ms = 60000,
                                  .stop_timeout_ms = 1500};
    http_limits_default(&cfg->limits);
}

/* ---- the loop's own handles ---- */

static void on_listener_closed(uv_handle_t *h);

static void close_if_open(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void walk_close(uv_handle_t *h, void *arg)
{
    close_if_open(h);
}

/* Once stopping, the listener closed and the last connection freed: the architecture
 * releases what it attached to the loop, then the loop's handles close and uv_run
 * returns. */
static void loop_maybe_finish(struct server_loop *l)
{
    if (!l->stopping || l->listener_open || l->nconns > 0 || l->finished)
        return;
    l->finished = 1;
    if (l->srv->hooks->loop_fini)
        l->srv->hooks->loop_fini(l, l->srv->ctx);
    close_if_open((uv_handle_t *)&l->stop_async);
    close_if_open((uv_handle_t *)&l->sweep);
    close_if_open((uv_handle_t *)&l->force_stop);
    close_if_open((uv_handle_t *)&l->accept_retry);
    close_if_open((uv_handle_t *)&l->kick);
    close_if_open((uv_handle_t *)&l->flush_check);
}

static void on_flush_check(uv_check_t *h)
{
    conn_flush_all(h->data);
}

static void on_sweep(uv_timer_t *t)
{
    struct server_loop *l = t->data;
    conn_sweep(l, loop_now_ms(l));
    if (l->srv->hooks->on_tick)
        l->srv->hooks->on_tick(l, l->srv->ctx);
}

/* ---- accepting ---- */

static void on_accept(uv_poll_t *p, int status, int events);

/* Accepting resumes: after ACCEPT_RETRY_MS, or as soon as one of this loop's
 * connections is freed (a descriptor came back). */
static void accept_resume(struct server_loop *l)
{
    if (!l->accept_paused || l->stopping || !l->listener_open)
        return;
    l->accept_paused = 0;
    uv_timer_stop(&l->accept_retry);
    uv_poll_start(&l->accept_poll, UV_READABLE, on_accept);
}

static void on_accept_retry(uv_timer_t *t)
{
    accept_resume(t->data);
}

/* Out of descriptors (or socket memory): stop watching the listener for a while, as nginx
 * does, instead of closing it: connections wait in its backlog and are served once
 * descriptors are back; nothing spins meanwhile. */
static void accept_pause(struct server_loop *l)
{
    if (l->accept_paused)
        return;
    l->accept_paused = 1;
    uv_poll_stop(&l->accept_poll);
    uv_timer_start(&l->accept_retry, on_accept_retry, ACCEPT_RETRY_MS, 0);
}

/* conn.c freed a connection of l: a descriptor came back, and the stop may be done. */
static void loop_conn_freed(struct server_loop *l)
{
    accept_resume(l);
    loop_maybe_finish(l);
}

static void on_accept(uv_poll_t *p, int status, int events)
{
    struct server_loop *l = p->data;
    if (status < 0) {
        counter_inc(&l->metrics.connections_rejected);
        return;
    }
    for (int i = 0; i < ACCEPT_BATCH && l->listener_open && !l->accept_paused; i++) {
        int fd = accept4(l->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            conn_open(l, fd);
            continue;
        }
        switch (errno) {
        case EAGAIN:
#if EWOULDBLOCK != EAGAIN
        case EWOULDBLOCK:
#endif
            return; /* the backlog is empty */
        case EINTR:
        case ECONNABORTED: /* the peer gave up while queued */
        case EPROTO:
            continue;
        case EMFILE:
        case ENFILE:
        case ENOBUFS:
        case ENOMEM:
            counter_inc(&l->metrics.connections_rejected);
            accept_pause(l);
            return;
        default:
            counter_inc(&l->metrics.connections_rejected);
            return;
        }
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct server_loop *l = h->data;
    /* the watcher is gone: now the socket can go (connections still in its backlog are
     * reset by the kernel: the stop has begun) */
    close(l->listen_fd);
    l->listen_fd = -1;
    l->listener_open = 0;
    loop_maybe_finish(l);
}

/* Opens l's listening socket on host:port and starts watching it. `first`: the first
 * loop's, bound without SO_REUSEPORT, so the bind fails if any other socket holds the
 * port (whatever its options), and only then marked SO_REUSEPORT (before listen) so that
 * the sibling loops can join it; they bind with SO_REUSEPORT set. 0, or a negative libuv
 * error with a one-line message in err. */
static int bind_listener(struct server_loop *l, const char *host, int port, int first, char *err,
                         size_t errlen)
{
    struct sockaddr_in addr;
    int one = 1;
    int rc = uv_ip4_addr(host, port, &addr);
    if (rc < 0) {
        snprintf(err, errlen, "bad --host '%s': %s", host, uv_strerror(rc));
        return rc;
    }
    /* acquire: the listening socket (closed in on_listener_closed, or below) */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        rc = -errno;
        snprintf(err, errlen, "socket: %s", uv_strerror(rc));
        return rc;
    }
    const char *step = "SO_REUSEADDR";
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0)
        goto fail_errno;
    step = "SO_REUSEPORT";
    if (!first && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        goto fail_errno;
    step = "bind";
    if (bind(fd, (const struct sockaddr *)&addr, sizeof addr) < 0)
        goto fail_errno;
    step = "SO_REUSEPORT";
    if (first && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0)
        goto fail_errno;
    step = "listen";
    if (listen(fd, LISTEN_BACKLOG) < 0)
        goto fail_errno;
    /* acquire: the watcher (closed first at the stop, then the socket) */
    rc = uv_poll_init_socket(&l->uv, &l->accept_poll, fd);
    if (rc < 0) {
        close(fd);
        snprintf(err, errlen, "watch the listener on %s:%d: %s", host, port, uv_strerror(rc));
        return rc;
    }
    l->accept_poll.data = l;
    l->listen_fd = fd;
    l->listener_open = 1;
    uv_poll_start(&l->accept_poll, UV_READABLE, on_accept);
    return 0;

fail_errno:
    rc = -errno;
    close(fd);
    if (rc == UV_EADDRINUSE)
        snprintf(err, errlen, "cannot listen on %s:%d: the port is already in use (another "
                 "process listens there)", host, port);
    else
        snprintf(err, errlen, "listen on %s:%d: %s: %s", host, port, step, uv_strerror(rc));
    return rc;
}

/* ---- stopping ---- */

static void on_force_stop(uv_timer_t *t)
{
    conn_close_all(t->data);
}

static void on_stop(uv_async_t *a)
{
    struct server_loop *l = a->data;
    if (l->stopping)
        return;
    l->stopping = 1;
    uv_timer_stop(&l->accept_retry);
    if (l->listener_open && !uv_is_closing((uv_handle_t *)&l->accept_poll))
        uv_close((uv_handle_t *)&l->accept_poll, on_listener_closed);
    /* idle connections go now; busy ones close after their last response */
    conn_stop_idle(l);
    uv_timer_start(&l->force_stop, on_force_stop, l->srv->cfg.stop_timeout_ms, 0);
    loop_maybe_finish(l);
}

/* ---- creating, running, joining ---- */

/* The loop's handles, one acquisition at a time; 0 or a negative libuv error (what was
 * initialised is closed by server_free's walk). */
static int loop_init_handles(struct server_loop *l)
{
    int rc = uv_loop_init(&l->uv);
    if (rc < 0)
        return rc;
    l->uv_ready = 1;
    if ((rc = uv_async_init(&l->uv, &l->stop_async, on_stop)) < 0 ||
        (rc = uv_timer_init(&l->uv, &l->sweep)) < 0 ||
        (rc = uv_timer_init(&l->uv, &l->force_stop)) < 0 ||
        (rc = uv_timer_init(&l->uv, &l->accept_retry)) < 0 ||
        (rc = uv_check_init(&l->uv, &l->flush_check)) < 0 ||
        (rc = uv_idle_init(&l->uv, &l->kick)) < 0)
        return rc;
    l->stop_async.data = l;
    l->sweep.data = l;
    l->force_stop.data = l;
    l->accept_retry.data = l;
    l->flush_check.data = l;
    l->kick.data = l;
    return 0;
}

int server_create(const struct server_config *cfg, const struct server_hooks *hooks, void *ctx,
                  struct server **out, char *err, size_t errlen)
{
    *out = NULL;
    struct server *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    s->hooks = hooks;
    s->ctx = ctx;
    s->nloops = cfg->threads ? cfg->threads : 1;
    s->port = cfg->port;
    s->loops = xcalloc(s->nloops, sizeof *s->loops);
    gate_init(&s->gate);
    int rc = 0;
    for (unsigned i = 0; i < s->nloops && rc == 0; i++) {
        struct server_loop *l = xcalloc(1, sizeof *l);
        s->loops[i] = l;
        l->srv = s;
        l->index = i;
        l->listen_fd = -1;
        l->conn_freed = loop_conn_freed;
        metrics_init(&l->metrics);
        rc = loop_init_handles(l);
        if (rc < 0) {
            snprintf(err, errlen, "loop %u: %s", i, uv_strerror(rc));
            break;
        }
        rc = bind_listener(l, cfg->host, s->port, i == 0, err, errlen);
        if (rc == 0 && s->port == 0) {
            struct sockaddr_in a;
            socklen_t alen = sizeof a;
            getsockname(l->listen_fd, (struct sockaddr *)&a, &alen);
            s->port = ntohs(a.sin_port);
        }
    }
    if (rc < 0) {
        server_free(s); /* no loop was started */
        return rc;
    }
    *out = s;
    return 0;
}

int server_port(const struct server *s)
{
    return s->port;
}

/* The start of a loop's life, on the thread that runs it: the architecture's loop_init,
 * then the sweep timer and the flush check. */
static void loop_begin(struct server_loop *l)
{
    if (l->srv->hooks->loop_init)
        l->srv->hooks->loop_init(l, l->srv->ctx);
    uv_timer_start(&l->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
    uv_check_start(&l->flush_check, on_flush_check);
    atomics_store_relaxed(&l->ran, 1);
}

/* A loop's thread: waits until every thread exists (server_start is all or nothing),
 * then runs the loop until it finished. */
static void *loop_thread(void *arg)
{
    struct server_loop *l = arg;
    struct server *s = l->srv;
    char name[16];
    snprintf(name, sizeof name, "io-%u", l->index % 100000u); /* at most 15 bytes */
    pthread_setname_np(pthread_self(), name);
    if (gate_wait(&s->gate))
        return NULL;
    loop_begin(l);
    uv_run(&l->uv, UV_RUN_DEFAULT);
    return NULL;
}

int server_start(struct server *s)
{
    int rc = 0;
    for (unsigned i = 0; i < s->nloops && rc == 0; i++) {
        rc = pthread_create(&s->loops[i]->thread, NULL, loop_thread, s->loops[i]);
        if (rc == 0)
            s->loops[i]->started = 1;
    }
    gate_open(&s->gate, rc != 0);
    if (rc == 0)
        return 0;
    /* Not every thread could be created: the ones that were return without running. */
    for (unsigned i = 0; i < s->nloops; i++)
        if (s->loops[i]->started) {
            pthread_join(s->loops[i]->thread, NULL);
            s->loops[i]->started = 0;
        }
    return -rc;
}

void server_stop(struct server *s)
{
    for (unsigned i = 0; i < s->nloops; i++)
        uv_async_send(&s->loops[i]->stop_async);
}

/* Loops that have no thread (server_start failed) run to their end here, a non-blocking
 * turn each in rotation: an architecture's loop_fini may wait for its siblings. */
static void run_threadless(struct server *s)
{
    unsigned alive = 0;
    for (unsigned i = 0; i < s->nloops; i++)
        if (!s->loops[i]->started && !atomics_load_relaxed(&s->loops[i]->ran)) {
            loop_begin(s->loops[i]);
            s->loops[i]->started = 2; /* run here, nothing to join */
            alive++;
        }
    while (alive > 0) {
        alive = 0;
        for (unsigned i = 0; i < s->nloops; i++) {
            struct server_loop *l = s->loops[i];
            if (l->started == 2 && !l->joined) {
                if (uv_run(&l->uv, UV_RUN_NOWAIT) == 0)
                    l->joined = 1;
                else
                    alive++;
            }
        }
        if (alive > 0)
            uv_sleep(1);
    }
}

int server_loop_turn(struct server *s, unsigned i)
{
    struct server_loop *l = s->loops[i];
    if (l->started == 0) {
        loop_begin(l);
        l->started = 2; /* run here; server_join winds it down */
    }
    return uv_run(&l->uv, UV_RUN_NOWAIT);
}

void server_join(struct server *s)
{
    run_threadless(s);
    for (unsigned i = 0; i < s->nloops; i++) {
        struct server_loop *l = s->loops[i];
        if (l->started == 1 && !l->joined) {
            pthread_join(l->thread, NULL);
            l->joined = 1;
        }
    }
}

void server_free(struct server *s)
{
    for (unsigned i = 0; i < s->nloops; i++) {
        struct server_loop *l = s->loops[i];
        if (l == NULL)
            continue;
        if (l->uv_ready) {
            if (!atomics_load_relaxed(&l->ran))
                uv_walk(&l->uv, walk_close, NULL); /* never ran: close its handles */
            uv_run(&l->uv, UV_RUN_DEFAULT);         /* close callbacks left */
            if (l->listen_fd >= 0)
                close(l->listen_fd); /* its watcher was closed by the walk above */
            if (uv_loop_close(&l->uv) != 0)
                fprintf(stderr, "server: loop %u closed with handles still open\n", i);
        }
        request_pool_drain(&l->pool);
        metrics_destroy(&l->metrics);
        free(l);
    }
    gate_destroy(&s->gate);
    free(s->loops);
    free(s);
}

/* ---- accessors ---- */

unsigned server_loop_count(const struct server *s)
{
    return s->nloops;
}

struct server_loop *server_loop_at(struct server *s, unsigned i)
{
    return s->loops[i];
}

struct metrics *server_loop_metrics(struct server_loop *l)
{
    return &l->metrics;
}

uv_loop_t *server_loop_uv(struct server_loop *l)
{
    return &l->uv;
}

unsigned server_loop_index(const struct server_loop *l)
{
    return l->index;
}

void server_loop_set_data(struct server_loop *l, void *data)
{
    l->data = data;
}

void *server_loop_data(const struct server_loop *l)
{
    return l->data;
}
