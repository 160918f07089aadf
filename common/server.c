/* server: connection handling on libuv shared by both servers. One struct server_loop
 * per thread; everything a loop owns (connections, pooled requests, the read buffer) is
 * touched only by that loop's thread. The only cross-thread traffic here is stop_async
 * and the global connection count (one atomic per accept/close, not per request). */
#include "server.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define READ_BUF_SIZE (64 * 1024)
#define POOL_KEEP 1024         /* free requests kept per loop */
#define POOL_KEEP_LIST 64      /* of which with a list-result array */
#define LINGER_MS 2000         /* read-and-discard after an error response */
#define SWEEP_MS 250
#define OUT_HIGH (256 * 1024) /* unwritten response bytes before reading pauses */
#define RELISTEN_MS 200       /* after EMFILE closed the listener */

struct conn {
    uv_tcp_t tcp; /* first member: handle->data not needed */
    struct server_loop *loop;
    struct http_parser parser;
    struct request *head, *tail; /* in-flight requests, request order */
    unsigned inflight;
    unsigned refs;               /* 1 for the open handle + 1 per request in the FIFO */
    struct buf out;              /* rendered, not yet written */
    struct buf pending_in;       /* unparsed bytes while reading is paused */
    uint64_t deadline_ms;        /* 0: none */
    uint8_t closed;              /* uv_close called */
    uint8_t paused;              /* reading stopped for the pipeline cap */
    uint8_t close_after_flush;   /* a response said Connection: close */
    uint8_t lingering;           /* shut down for writing, discarding input */
    uint8_t writing;             /* a uv_write is in flight */
    uint8_t dirty;               /* on the loop's dirty list */
    uint8_t in_request;          /* a request has started arriving (header timer armed) */
    uint8_t in_feed;
    uint8_t peer_eof;            /* the peer half-closed: answer what is in flight, then close */
    struct conn *prev, *next;    /* loop's connection list */
    struct conn *dirty_next;
};

struct write_req {
    uv_write_t req;
    struct conn *conn;
    size_t len;
    char data[];
};

struct server_loop {
    uv_loop_t uv;
    uv_tcp_t listener;
    uv_async_t stop_async;
    uv_timer_t sweep;
    uv_timer_t force_stop;
    uv_timer_t relisten;
    uv_check_t flush_check;
    uv_idle_t kick;       /* active while responses wait to be written: poll won't block */
    pthread_t thread;
    uint8_t started;      /* thread created (joined by server_join_and_free) */
    struct server *srv;
    unsigned index;
    unsigned nconns;
    uint8_t stopping;
    uint8_t listener_open;
    uint8_t listener_closing; /* closed after EMFILE, to be bound again */
    uint8_t finished;
    struct conn *conns;
    struct conn *dirty;
    struct request *pool;
    unsigned pool_len;
    struct metrics metrics;
    void *data;
    char readbuf[READ_BUF_SIZE];
};

struct server {
    struct server_config cfg;
    const struct server_hooks *hooks;
    void *ctx;
    unsigned nloops;
    int port;
    unsigned total_conns; /* atomic */
    struct server_loop **loops;
};

static const struct http_parser_ops parser_ops;

void server_config_default(struct server_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "127.0.0.1";
    cfg->port = 8080;
    cfg->threads = 1;
    cfg->max_conns = 10000;
    cfg->max_pipeline = 16;
    cfg->header_timeout_ms = 10000;
    cfg->idle_timeout_ms = 60000;
    cfg->stop_timeout_ms = 1500;
    http_limits_default(&cfg->limits);
}

/* ---- request pool ---- */

static struct request *pool_get(struct server_loop *l)
{
    struct request *req = l->pool;
    if (req != NULL) {
        l->pool = req->next;
        l->pool_len--;
    } else {
        req = xcalloc(1, sizeof *req);
    }
    request_reset(req);
    return req;
}

static void pool_put(struct server_loop *l, struct request *req)
{
    if (l->pool_len >= POOL_KEEP) {
        request_free(req);
        return;
    }
    if (req->users != NULL && l->pool_len >= POOL_KEEP_LIST) {
        free(req->users); /* list results are 20 KiB: keep only a few */
        req->users = NULL;
    }
    req->next = l->pool;
    l->pool = req;
    l->pool_len++;
}

/* ---- connection lifetime ---- */

static void loop_maybe_finish(struct server_loop *l);
static void on_listener_closed(uv_handle_t *h);

static void conn_unref(struct conn *c)
{
    if (--c->refs > 0)
        return;
    struct server_loop *l = c->loop;
    struct request *partial;
    http_parser_destroy(&c->parser, &partial);
    if (partial != NULL)
        pool_put(l, partial);
    buf_free(&c->out);
    buf_free(&c->pending_in);
    free(c);
    l->nconns--;
    __atomic_fetch_sub(&l->srv->total_conns, 1, __ATOMIC_RELAXED);
    metrics_add((uint64_t *)&l->metrics.open_connections, -1);
    loop_maybe_finish(l);
}

static void on_conn_closed(uv_handle_t *h)
{
    conn_unref((struct conn *)h);
}

static void conn_close(struct conn *c)
{
    if (c->closed)
        return;
    c->closed = 1;
    struct server_loop *l = c->loop;
    /* off the sweep list */
    if (c->prev)
        c->prev->next = c->next;
    else
        l->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->prev = c->next = NULL;
    /* Requests already decided but waiting behind an earlier one die with the socket;
     * undecided ones are freed when their reply arrives (server_respond). */
    struct request **pp = &c->head;
    while (*pp != NULL) {
        struct request *r = *pp;
        if (r->done) {
            *pp = r->next;
            c->inflight--;
            pool_put(l, r);
            c->refs--; /* cannot reach 0: the handle's reference is still held */
        } else {
            pp = &r->next;
        }
    }
    c->tail = NULL;
    for (struct request *r = c->head; r != NULL; r = r->next)
        c->tail = r;
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_kick(uv_idle_t *h)
{
    uv_idle_stop(h); /* its only job was to keep this iteration's poll from blocking */
}

static void mark_dirty(struct conn *c)
{
    if (c->dirty)
        return;
    c->dirty = 1;
    c->dirty_next = c->loop->dirty;
    if (c->loop->dirty == NULL)
        uv_idle_start(&c->loop->kick, on_kick); /* responses may be rendered outside
                                                    the poll phase (timers, prepare) */
    c->loop->dirty = c;
}

/* ---- writing ---- */

static void start_linger(struct conn *c);
static void conn_flush(struct conn *c);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);

static void conn_maybe_resume(struct conn *c);

static void on_write(uv_write_t *wr, int status)
{
    struct write_req *w = (struct write_req *)wr;
    struct conn *c = w->conn;
    free(w);
    c->writing = 0;
    if (status < 0 || c->closed) {
        conn_close(c);
        conn_unref(c);
        return;
    }
    conn_flush(c);
    conn_maybe_resume(c);
    conn_unref(c);
}

static void conn_after_write(struct conn *c)
{
    if (c->writing || c->out.len != 0)
        return;
    if (c->peer_eof && c->inflight == 0)
        conn_close(c);
    else if (c->close_after_flush && !c->lingering)
        start_linger(c);
    else if (c->loop->stopping && c->inflight == 0 && !http_parser_mid_request(&c->parser))
        conn_close(c); /* kept open at the stop only to deliver this output */
}

/* Reading (and parsing) goes on only while the connection can take more: under the
 * pipeline cap and with the peer reading its responses. */
static int conn_can_read(const struct conn *c)
{
    return !c->closed && !c->close_after_flush && !c->peer_eof &&
           c->inflight < c->loop->srv->cfg.max_pipeline && c->out.len < OUT_HIGH &&
           c->tcp.write_queue_size < OUT_HIGH;
}

/* Writes c->out: uv_try_write first, the rest through one uv_write with a copy. */
static void conn_flush(struct conn *c)
{
    if (c->closed || c->writing)
        return;
    if (c->out.len > 0) {
        uv_buf_t b = uv_buf_init(c->out.data, (unsigned)c->out.len);
        int n = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
        if (n == UV_EAGAIN || n == UV_ENOSYS)
            n = 0;
        if (n < 0) {
            buf_reset(&c->out);
            conn_close(c);
            return;
        }
        size_t rest = c->out.len - (size_t)n;
        if (rest > 0) {
            struct write_req *w = xmalloc(sizeof *w + rest);
            memcpy(w->data, c->out.data + n, rest);
            w->len = rest;
            w->conn = c;
            uv_buf_t wb = uv_buf_init(w->data, (unsigned)rest);
            int rc = uv_write(&w->req, (uv_stream_t *)&c->tcp, &wb, 1, on_write);
            if (rc < 0) {
                free(w);
                buf_reset(&c->out);
                conn_close(c);
                return;
            }
            c->writing = 1;
            c->refs++;
            if (c->tcp.write_queue_size >= OUT_HIGH && !c->paused && !c->lingering) {
                c->paused = 1; /* the peer is not reading: stop reading until it does */
                uv_read_stop((uv_stream_t *)&c->tcp);
            }
        }
        buf_reset(&c->out);
    }
    conn_after_write(c);
}

#define FLUSH_ROUNDS 16

/* Once per iteration: let the architecture finish queued work, write every connection
 * with new output, and resume the ones that paused for unwritten output. Resuming can
 * produce more output, so this repeats a bounded number of rounds; what is left keeps
 * the kick handle active so the next iteration comes at once. */
static void on_flush_check(uv_check_t *h)
{
    struct server_loop *l = h->data;
    for (int round = 0; round < FLUSH_ROUNDS; round++) {
        if (l->srv->hooks->before_flush)
            l->srv->hooks->before_flush(l, l->srv->ctx);
        struct conn *c = l->dirty;
        if (c == NULL)
            break;
        l->dirty = NULL;
        while (c != NULL) {
            struct conn *next = c->dirty_next;
            c->dirty = 0;
            c->dirty_next = NULL;
            conn_flush(c);
            conn_maybe_resume(c);
            conn_unref(c); /* the dirty list's reference */
            c = next;
        }
    }
    if (l->dirty == NULL)
        uv_idle_stop(&l->kick);
}

/* ---- reading and parsing ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = (struct conn *)h;
    buf->base = c->loop->readbuf;
    buf->len = READ_BUF_SIZE;
}

static void on_shutdown(uv_shutdown_t *sr, int status)
{
    struct conn *c = sr->data;
    free(sr);
    if (status < 0)
        conn_close(c);
    conn_unref(c);
}

/* After a response with Connection: close: stop parsing, send FIN after the data,
 * and keep reading (discarding) so the peer reads the response instead of a reset. */
static void start_linger(struct conn *c)
{
    if (c->lingering || c->closed)
        return;
    c->lingering = 1;
    c->deadline_ms = uv_now(&c->loop->uv) + LINGER_MS;
    uv_shutdown_t *sr = xmalloc(sizeof *sr);
    sr->data = c;
    if (uv_shutdown(sr, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        free(sr);
        conn_close(c);
        return;
    }
    c->refs++;
    if (c->paused) {
        c->paused = 0;
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
}

/* Appends req to c's in-flight FIFO (request order); the FIFO holds a reference. */
static void conn_enqueue(struct conn *c, struct request *req)
{
    req->conn = c;
    req->next = NULL;
    if (c->tail)
        c->tail->next = req;
    else
        c->head = req;
    c->tail = req;
    c->inflight++;
    c->refs++;
}

/* Answers `status` for the request being parsed (or a fresh one), then closes: for
 * input the parser refused and for the header timeout. */
static void respond_error_and_close(struct conn *c, uint16_t status, const char *reason)
{
    struct server_loop *l = c->loop;
    struct request *req = c->parser.cur;
    c->parser.cur = NULL;
    if (req == NULL)
        req = pool_get(l);
    req->route = ROUTE_OTHER;
    http_error_response(&req->resp, status, reason);
    req->resp.flags |= RESP_CLOSE;
    req->close_after = 1;
    req->parsed_ns = now_ns();
    conn_enqueue(c, req);
    server_respond(l, req);
}

static void respond_parse_error(struct conn *c)
{
    respond_error_and_close(c, c->parser.error_status,
                            c->parser.error_reason ? c->parser.error_reason
                                                   : "malformed request");
}

static void conn_update_deadline(struct conn *c)
{
    const struct server_config *cfg = &c->loop->srv->cfg;
    if (c->lingering)
        return;
    /* The loop's time is read only for a deadline actually set (a request in flight
     * has none): the actor server comes here twice per request, once with one. */
    if (http_parser_mid_request(&c->parser)) {
        if (!c->in_request) {
            c->in_request = 1;
            c->deadline_ms = uv_now(&c->loop->uv) + cfg->header_timeout_ms;
        }
    } else {
        c->in_request = 0;
        c->deadline_ms = c->inflight ? 0 : uv_now(&c->loop->uv) + cfg->idle_timeout_ms;
    }
}

/* Feeds bytes to the parser; keeps what it could not take while paused. */
static void conn_feed(struct conn *c, const char *data, size_t len)
{
    size_t used = 0;
    c->in_feed = 1;
    int rc = http_parser_feed(&c->parser, data, len, &used);
    c->in_feed = 0;
    if (rc < 0) {
        respond_parse_error(c);
        return;
    }
    if (rc == 1 && !c->close_after_flush && !c->closed && !c->peer_eof) {
        /* paused (pipeline cap or unread output): keep the rest, stop reading */
        if (used < len) {
            if (data >= c->pending_in.data && data < c->pending_in.data + c->pending_in.len) {
                memmove(c->pending_in.data, data + used, len - used);
                c->pending_in.len = len - used;
            } else {
                buf_reset(&c->pending_in);
                buf_append(&c->pending_in, data + used, len - used);
            }
        } else {
            buf_reset(&c->pending_in);
        }
        if (!c->paused) {
            c->paused = 1;
            uv_read_stop((uv_stream_t *)&c->tcp);
        }
    } else if (c->pending_in.len && data == c->pending_in.data) {
        buf_reset(&c->pending_in);
    }
    conn_update_deadline(c);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct conn *c = (struct conn *)s;
    if (nread == 0)
        return;
    if (nread < 0) {
        if (nread == UV_EOF && !c->lingering && (c->inflight > 0 || c->writing || c->dirty)) {
            /* half-close: answer what was asked, then close */
            c->peer_eof = 1;
            uv_read_stop((uv_stream_t *)&c->tcp);
            return;
        }
        conn_close(c);
        return;
    }
    if (c->lingering || c->close_after_flush)
        return; /* discard */
    c->refs++; /* hold the connection across callbacks that may close it */
    conn_feed(c, buf->base, (size_t)nread);
    conn_unref(c);
}

static struct request *parser_begin(void *ctx)
{
    struct conn *c = ctx;
    return pool_get(c->loop);
}

static int parser_complete(void *ctx, struct request *req)
{
    struct conn *c = ctx;
    struct server_loop *l = c->loop;
    conn_enqueue(c, req);
    if (!req->keep_alive || l->stopping)
        req->close_after = 1;
    l->srv->hooks->on_request(l, req, l->srv->ctx);
    if (c->close_after_flush || c->closed || req->close_after)
        return 1; /* nothing after a closing request is read */
    return !conn_can_read(c);
}

static const struct http_parser_ops parser_ops = {
    .begin = parser_begin,
    .complete = parser_complete,
};

/* Resumes a connection paused for the pipeline cap once it has room. */
static void conn_maybe_resume(struct conn *c)
{
    if (!c->paused || c->in_feed || !conn_can_read(c))
        return;
    c->paused = 0;
    c->refs++;
    if (c->pending_in.len > 0)
        conn_feed(c, c->pending_in.data, c->pending_in.len);
    if (!c->paused && !c->closed && !c->close_after_flush && !c->peer_eof)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    conn_unref(c);
}

void server_respond(struct server_loop *l, struct request *req)
{
    struct conn *c = req->conn;
    req->done = 1;
    if (c->closed) {
        /* the connection is gone: unlink and drop */
        struct request **pp = &c->head;
        while (*pp != NULL && *pp != req)
            pp = &(*pp)->next;
        if (*pp == req)
            *pp = req->next;
        c->tail = NULL;
        for (struct request *r = c->head; r != NULL; r = r->next)
            c->tail = r;
        c->inflight--;
        pool_put(l, req);
        conn_unref(c);
        return;
    }
    uint64_t now = now_ns();
    while (c->head != NULL && c->head->done) {
        struct request *r = c->head;
        c->head = r->next;
        if (c->head == NULL)
            c->tail = NULL;
        c->inflight--;
        if (!c->close_after_flush) {
            int close = r->close_after || l->stopping || (r->resp.flags & RESP_CLOSE);
            http_render_response(&c->out, &r->resp, r->request_id, close);
            uint64_t lat_us = now > r->parsed_ns ? (now - r->parsed_ns) / 1000 : 0;
            metrics_count_request(&l->metrics, r->route, r->resp.status, lat_us);
            if (!c->dirty) {
                c->refs++;
                mark_dirty(c);
            }
            if (close)
                c->close_after_flush = 1;
        }
        pool_put(l, r);
        conn_unref(c); /* cannot free: the handle's reference is held while open */
    }
    if (c->inflight == 0 && !c->in_feed)
        conn_update_deadline(c);
    if (c->peer_eof && c->inflight == 0 && !c->dirty && !c->writing && c->out.len == 0) {
        conn_close(c);
        return;
    }
    conn_maybe_resume(c);
}

/* ---- accepting ---- */

static void on_connection(uv_stream_t *server, int status)
{
    struct server_loop *l = server->data;
    struct server *srv = l->srv;
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
    struct conn *c = xcalloc(1, sizeof *c);
    uv_tcp_init(&l->uv, &c->tcp);
    c->loop = l;
    c->refs = 1;
    l->nconns++;
    metrics_add((uint64_t *)&l->metrics.open_connections, 1);
    unsigned total = __atomic_add_fetch(&srv->total_conns, 1, __ATOMIC_RELAXED);
    if (uv_accept(server, (uv_stream_t *)&c->tcp) != 0) {
        counter_inc(&l->metrics.connections_rejected);
        c->closed = 1;
        uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
        return;
    }
    c->next = l->conns;
    if (l->conns)
        l->conns->prev = c;
    l->conns = c;
    if (total > srv->cfg.max_conns || l->stopping) {
        counter_inc(&l->metrics.connections_rejected);
        conn_close(c);
        return;
    }
    counter_inc(&l->metrics.connections_accepted);
    uv_tcp_nodelay(&c->tcp, 1);
    http_parser_init(&c->parser, &srv->cfg.limits, &parser_ops, c);
    c->deadline_ms = uv_now(&l->uv) + srv->cfg.idle_timeout_ms;
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- timers and stopping ---- */

static void on_sweep(uv_timer_t *t)
{
    struct server_loop *l = t->data;
    uint64_t now = uv_now(&l->uv);
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        if (c->deadline_ms && now >= c->deadline_ms && !c->closed) {
            if (c->in_request && !c->lingering && c->inflight == 0 && !c->writing) {
                /* header timeout: say so, then close */
                c->deadline_ms = now + LINGER_MS;
                respond_error_and_close(c, 408, "request timeout");
            } else {
                conn_close(c);
            }
        }
        c = next;
    }
    if (l->srv->hooks->on_tick)
        l->srv->hooks->on_tick(l, l->srv->ctx);
}

static void close_if_open(uv_handle_t *h)
{
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void walk_close(uv_handle_t *h, void *arg)
{
    close_if_open(h);
}

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

static int bind_listener(struct server_loop *l, const char *host, int port, char *err,
                         size_t errlen);

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

static void on_force_stop(uv_timer_t *t)
{
    struct server_loop *l = t->data;
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        conn_close(c);
        c = next;
    }
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
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        /* a response rendered but not yet flushed (dirty) is still owed */
        if (c->inflight == 0 && !http_parser_mid_request(&c->parser) && !c->writing &&
            !c->dirty && c->out.len == 0)
            conn_close(c);
        else
            c->deadline_ms = 0;
        c = next;
    }
    uv_timer_start(&l->force_stop, on_force_stop, l->srv->cfg.stop_timeout_ms, 0);
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

int server_create(const struct server_config *cfg, const struct server_hooks *hooks, void *ctx,
                  struct server **out, char *err, size_t errlen)
{
    struct server *s = xcalloc(1, sizeof *s);
    s->cfg = *cfg;
    s->hooks = hooks;
    s->ctx = ctx;
    s->nloops = cfg->threads ? cfg->threads : 1;
    s->port = cfg->port;
    s->loops = xcalloc(s->nloops, sizeof *s->loops);
    int rc = 0;
    for (unsigned i = 0; i < s->nloops; i++) {
        struct server_loop *l = xcalloc(1, sizeof *l);
        s->loops[i] = l;
        l->srv = s;
        l->index = i;
        metrics_init(&l->metrics);
        uv_loop_init(&l->uv);
        uv_async_init(&l->uv, &l->stop_async, on_stop);
        l->stop_async.data = l;
        uv_timer_init(&l->uv, &l->sweep);
        l->sweep.data = l;
        uv_timer_init(&l->uv, &l->force_stop);
        l->force_stop.data = l;
        uv_timer_init(&l->uv, &l->relisten);
        l->relisten.data = l;
        uv_check_init(&l->uv, &l->flush_check);
        l->flush_check.data = l;
        uv_idle_init(&l->uv, &l->kick);
        l->kick.data = l;
        if (rc == 0) {
            rc = bind_listener(l, cfg->host, s->port, err, errlen);
            if (rc == 0 && s->port == 0) {
                struct sockaddr_in a;
                int alen = sizeof a;
                uv_tcp_getsockname(&l->listener, (struct sockaddr *)&a, &alen);
                s->port = ntohs(a.sin_port);
            }
        }
    }
    if (rc < 0) {
        server_join_and_free(s); /* no loop was started */
        return rc;
    }
    *out = s;
    return 0;
}

int server_port(const struct server *s)
{
    return s->port;
}

static void *loop_thread(void *arg)
{
    struct server_loop *l = arg;
    if (l->srv->hooks->loop_init)
        l->srv->hooks->loop_init(l, l->srv->ctx);
    uv_timer_start(&l->sweep, on_sweep, SWEEP_MS, SWEEP_MS);
    uv_check_start(&l->flush_check, on_flush_check);
    uv_run(&l->uv, UV_RUN_DEFAULT);
    return NULL;
}

int server_start(struct server *s)
{
    for (unsigned i = 0; i < s->nloops; i++) {
        int rc = pthread_create(&s->loops[i]->thread, NULL, loop_thread, s->loops[i]);
        if (rc != 0)
            return -rc;
        s->loops[i]->started = 1;
    }
    return 0;
}

void server_stop(struct server *s)
{
    for (unsigned i = 0; i < s->nloops; i++)
        uv_async_send(&s->loops[i]->stop_async);
}

void server_join_and_free(struct server *s)
{
    for (unsigned i = 0; i < s->nloops; i++)
        if (s->loops[i]->started)
            pthread_join(s->loops[i]->thread, NULL);
    for (unsigned i = 0; i < s->nloops; i++) {
        struct server_loop *l = s->loops[i];
        if (!l->started)
            uv_walk(&l->uv, walk_close, NULL); /* a loop that never ran: close its handles */
        uv_run(&l->uv, UV_RUN_DEFAULT);         /* run close callbacks left */
        if (uv_loop_close(&l->uv) != 0)
            fprintf(stderr, "server: loop %u closed with handles still open\n", i);
        while (l->pool != NULL) {
            struct request *r = l->pool;
            l->pool = r->next;
            request_free(r);
        }
        metrics_destroy(&l->metrics);
        free(l);
    }
    free(s->loops);
    free(s);
}

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
