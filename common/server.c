/* server: the I/O loops both servers share: one struct server_loop per thread, each with
 * its own SO_REUSEPORT listener, timers and flush handle; accept errors (EMFILE without
 * spinning), the graceful stop and the threads. Connections themselves are conn.c's.
 * Everything a loop owns is touched only by that loop's thread; the only cross-thread
 * traffic here is stop_async and the global connection count (one atomic per accept and
 * close, not per request). */
#include "server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "atomics.h"
#include "conn.h"
#include "loop.h"

#define SWEEP_MS 250
#define RELISTEN_MS 200 /* after EMFILE closed the listener */

void server_config_default(struct server_config *cfg)
{
    *cfg = (struct server_config){.host = "127.0.0.1", .port = 8080, .threads = 1,
                                  .max_conns = 10000, .max_pipeline = 16,
                                  .header_timeout_ms = 10000, .idle_timeout_ms = 60000,
                                  .stop_timeout_ms = 1500};
    http_limits_default(&cfg->limits);
}

/* ---- the loop's own handles ---- */

static void on_listener_closed(uv_handle_t *h);
static int bind_listener(struct server_loop *l, const char *host, int port, char *err,
                         size_t errlen);

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
    close_if_open((uv_handle_t *)&l->relisten);
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
    conn_sweep(l, uv_now(&l->uv));
    if (l->srv->hooks->on_tick)
        l->srv->hooks->on_tick(l, l->srv->ctx);
}

/* ---- accepting ---- */

static void on_connection(uv_stream_t *server, int status)
{
    struct server_loop *l = server->data;
    if (status < 0) {
        counter_inc(&l->metrics.connections_rejected);
        if ((status == UV_EMFILE || status == UV_ENFILE) && l->listener_open &&
            !l->listener_closing && !l->stopping) {
            /* Out of descriptors. libuv 1.44 retries accept in a loop while its
             * per-loop reserve fd is gone (a sibling loop may take the freed one), so
             * the only way out is to close this listener (its fd becomes -1) and bind
             * a new one a little later. Sibling loops keep the port meanwhile. */
            l->listener_closing = 1;
            uv_close((uv_handle_t *)&l->listener, on_listener_closed);
        }
        return;
    }
    conn_accept(l, server);
}

static void on_relisten(uv_timer_t *t)
{
    struct server_loop *l = t->data;
    char err[256];
    if (l->stopping)
        return;
    if (bind_listener(l, l->srv->cfg.host, l->srv->port, err, sizeof err) != 0) {
        /* still out of descriptors (or the socket half-made): try again later */
        if (l->listener_open) {
            l->listener_closing = 1;
            uv_close((uv_handle_t *)&l->listener, on_listener_closed);
        } else {
            uv_timer_start(&l->relisten, on_relisten, RELISTEN_MS, 0);
        }
    }
}

static void on_listener_closed(uv_handle_t *h)
{
    struct server_loop *l = h->data;
    l->listener_open = 0;
    if (l->listener_closing && !l->stopping) {
        l->listener_closing = 0;
        uv_timer_start(&l->relisten, on_relisten, RELISTEN_MS, 0);
        return;
    }
    l->listener_closing = 0;
    loop_maybe_finish(l);
}

static int bind_listener(struct server_loop *l, const char *host, int port, char *err,
                         size_t errlen)
{
    struct sockaddr_in addr;
    int rc = uv_ip4_addr(host, port, &addr);
    if (rc < 0) {
        snprintf(err, errlen, "bad --host '%s': %s", host, uv_strerror(rc));
        return rc;
    }
    rc = uv_tcp_init_ex(&l->uv, &l->listener, AF_INET);
    if (rc < 0) {
        snprintf(err, errlen, "socket: %s", uv_strerror(rc));
        return rc;
    }
    l->listener.data = l;
    l->listener_open = 1;
    uv_os_fd_t fd;
    uv_fileno((uv_handle_t *)&l->listener, &fd);
    int one = 1;
    /* libuv 1.44 has no UV_TCP_REUSEPORT: set it on the socket before bind */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one) < 0) {
        rc = -errno;
        snprintf(err, errlen, "SO_REUSEPORT: %s", uv_strerror(rc));
        return rc;
    }
    rc = uv_tcp_bind(&l->listener, (const struct sockaddr *)&addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->listener, 1024, on_connection);
    if (rc < 0) {
        snprintf(err, errlen, "listen on %s:%d: %s", host, port, uv_strerror(rc));
        return rc;
    }
    return 0;
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
    uv_timer_stop(&l->relisten);
    if (l->listener_open && !l->listener_closing)
        uv_close((uv_handle_t *)&l->listener, on_listener_closed);
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
        (rc = uv_timer_init(&l->uv, &l->relisten)) < 0 ||
        (rc = uv_check_init(&l->uv, &l->flush_check)) < 0 ||
        (rc = uv_idle_init(&l->uv, &l->kick)) < 0)
        return rc;
    l->stop_async.data = l;
    l->sweep.data = l;
    l->force_stop.data = l;
    l->relisten.data = l;
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
        l->conn_freed = loop_maybe_finish;
        metrics_init(&l->metrics);
        rc = loop_init_handles(l);
        if (rc < 0) {
            snprintf(err, errlen, "loop %u: %s", i, uv_strerror(rc));
            break;
        }
        rc = bind_listener(l, cfg->host, s->port, err, errlen);
        if (rc == 0 && s->port == 0) {
            struct sockaddr_in a;
            int alen = sizeof a;
            uv_tcp_getsockname(&l->listener, (struct sockaddr *)&a, &alen);
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
