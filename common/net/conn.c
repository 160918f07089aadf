/* conn: the connection state machine (see conn.h). A connection's memory is released
 * only when its reference count drops to zero: one reference for the open handle, one
 * per request in its FIFO, one per pending write or shutdown, one while it is on the
 * loop's dirty list, and one across callbacks that may close it. Each reference is
 * taken by the function that starts what it covers and released where that ends.
 * Deadlines cost the request path no clock read: it only bumps progress counters, which
 * the sweep (every 250 ms, conn_sweep.c) turns into times. struct conn is in
 * conn_impl.h, shared with conn_sweep.c. */
#include "conn.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base/atomics.h"
#include "common/http/http.h"
#include "conn_impl.h"
#include "loop.h"
#include "common/http/request.h"

#define LINGER_MS 2000        /* read-and-discard after an error response */
#define OUT_HIGH (256 * 1024) /* unwritten response bytes before reading pauses */
#define OUT_KEEP (16 * 1024)  /* an emptied output buffer larger than this is freed */
#define PENDING_KEEP (4 * 1024) /* the same for the unparsed-input buffer */
#define FLUSH_ROUNDS 16       /* before_flush + write rounds per loop iteration */

struct write_req {
    uv_write_t req;
    struct conn *conn;
    size_t len;
    char data[];
};

static const struct http_parser_ops parser_ops;
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);
static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf);
static void conn_flush(struct conn *c);
static void conn_maybe_resume(struct conn *c);
static void start_linger(struct conn *c);
static void conn_queue_fail(struct conn *c);

/* Empties b; frees its memory when it grew above keep (a burst must not pin it). */
static void buf_reset_shrink(struct buf *b, size_t keep)
{
    if (b->cap > keep)
        buf_free(b);
    else
        buf_reset(b);
}

/* ---- lifetime ---- */

void conn_unref(struct conn *c)
{
    ASSERT(c->refs > 0);
    if (--c->refs > 0)
        return;
    /* the last reference: nothing in flight, written or listed holds c any more */
    ASSERT(c->closed && c->inflight == 0 && c->head == NULL && !c->writing && !c->dirty);
    struct server_loop *l = c->loop;
    struct request *partial;
    http_parser_destroy(&c->parser, &partial);
    if (partial != NULL)
        request_pool_put(&l->pool, partial);
    buf_free(&c->out);
    buf_free(&c->pending_in);
    free(c);
    l->nconns--;
    atomics_sub_relaxed(&l->srv->total_conns, 1);
    metrics_add((uint64_t *)&l->metrics.open_connections, -1);
    l->conn_freed(l);
}

static void on_conn_closed(uv_handle_t *h)
{
    conn_unref((struct conn *)h); /* the open handle's reference */
}

static void fifo_fix_tail(struct conn *c)
{
    c->tail = NULL;
    for (struct request *r = c->head; r != NULL; r = r->next)
        c->tail = r;
}

/* Unlinks req from c's FIFO (wherever it is). */
static void fifo_remove(struct conn *c, struct request *req)
{
    struct request **pp = &c->head;
    while (*pp != NULL && *pp != req)
        pp = &(*pp)->next;
    if (*pp == req)
        *pp = req->next;
    fifo_fix_tail(c);
}

void conn_close(struct conn *c)
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
     * undecided ones are dropped when their reply arrives (conn_respond). */
    struct request **pp = &c->head;
    while (*pp != NULL) {
        struct request *r = *pp;
        if (r->done) {
            *pp = r->next;
            c->inflight--;
            request_pool_put(&l->pool, r);
            conn_unref(c); /* the FIFO's; cannot free: the handle's reference is held */
        } else {
            pp = &r->next;
        }
    }
    fifo_fix_tail(c);
    c->fail_status = 0; /* an answer still owed has nobody to go to */
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

static void on_kick(uv_idle_t *h)
{
    uv_idle_stop(h); /* its only job was to keep this iteration's poll from blocking */
}

/* Puts c on the loop's dirty list (flushed in the check phase); the list holds a
 * reference, released by conn_flush_all. */
static void mark_dirty(struct conn *c)
{
    if (c->dirty)
        return;
    c->dirty = 1;
    conn_ref(c);
    c->dirty_next = c->loop->dirty;
    if (c->loop->dirty == NULL)
        uv_idle_start(&c->loop->kick, on_kick); /* responses may be rendered outside
                                                    the poll phase (timers, prepare) */
    c->loop->dirty = c;
}

/* Stops reading c (libuv keeps the peer's bytes in the kernel meanwhile). */
static void conn_pause(struct conn *c)
{
    if (c->paused)
        return;
    c->paused = 1;
    uv_read_stop((uv_stream_t *)&c->tcp);
}

/* ---- writing ---- */

static void on_write(uv_write_t *wr, int status)
{
    struct write_req *w = (struct write_req *)wr;
    struct conn *c = w->conn;
    free(w);
    c->writing = 0;
    c->writes++; /* output progress: the send deadline starts again */
    if (status < 0 || c->closed) {
        conn_close(c);
        conn_unref(c); /* the write's */
        return;
    }
    conn_flush(c);
    conn_maybe_resume(c);
    conn_unref(c); /* the write's */
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
 * pipeline cap, with the peer reading its responses, and its input not refused. */
static int conn_can_read(const struct conn *c)
{
    return !c->closed && !c->close_after_flush && !c->read_done && !c->peer_eof && !c->failed &&
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
        c->writes++; /* output progress (or a write started: its deadline starts) */
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
            conn_ref(c); /* the write's, released in on_write */
            if (c->tcp.write_queue_size >= OUT_HIGH && !c->lingering)
                conn_pause(c); /* the peer is not reading: stop reading until it does */
        }
        buf_reset_shrink(&c->out, OUT_KEEP);
    }
    conn_after_write(c);
}

/* Writes the connections of l's dirty list (taken whole); 0 when it was empty. */
static int flush_dirty(struct server_loop *l)
{
    struct conn *c = l->dirty;
    if (c == NULL)
        return 0;
    l->dirty = NULL;
    while (c != NULL) {
        struct conn *next = c->dirty_next;
        c->dirty = 0;
        c->dirty_next = NULL;
        conn_flush(c);
        conn_maybe_resume(c);
        conn_unref(c); /* the dirty list's, taken in mark_dirty */
        c = next;
    }
    return 1;
}

/* Resuming can produce more output, so this repeats a bounded number of rounds; what
 * is left keeps the kick handle active so the next iteration comes at once. */
void conn_flush_all(struct server_loop *l)
{
    const struct server_hooks *hooks = l->srv->hooks;
    for (int round = 0; round < FLUSH_ROUNDS; round++) {
        if (hooks->before_flush)
            hooks->before_flush(l, l->srv->ctx);
        if (!flush_dirty(l))
            break;
    }
    if (l->dirty == NULL)
        uv_idle_stop(&l->kick);
}

/* ---- reading and parsing ---- */

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct conn *c = (struct conn *)h;
    buf->base = c->loop->readbuf;
    buf->len = LOOP_READ_BUF_SIZE;
}

static void on_shutdown(uv_shutdown_t *sr, int status)
{
    struct conn *c = sr->data;
    free(sr);
    if (status < 0)
        conn_close(c);
    conn_unref(c); /* the shutdown's */
}

/* After a response with Connection: close: stop parsing, send FIN after the data,
 * and keep reading (discarding) so the peer reads the response instead of a reset. */
static void start_linger(struct conn *c)
{
    if (c->lingering || c->closed)
        return;
    c->lingering = 1;
    c->linger_end_ms = loop_now_ms(c->loop) + LINGER_MS;
    uv_shutdown_t *sr = xmalloc(sizeof *sr);
    sr->data = c;
    if (uv_shutdown(sr, (uv_stream_t *)&c->tcp, on_shutdown) < 0) {
        free(sr);
        conn_close(c);
        return;
    }
    conn_ref(c); /* the shutdown's, released in on_shutdown */
    if (c->paused) {
        c->paused = 0;
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    }
}

/* Appends req to c's in-flight FIFO (request order); the FIFO holds a reference,
 * released when the request leaves it (conn_respond, conn_close). */
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
    /* the pipeline cap, plus the one being received (a refused input's answer included) */
    ASSERT(c->inflight <= c->loop->srv->cfg.max_pipeline + 1);
    conn_ref(c);
}

void conn_fail(struct conn *c, uint16_t status, const char *reason)
{
    if (c->failed || c->closed)
        return;
    c->failed = 1;
    c->fail_status = status;
    c->fail_reason = reason;
    conn_pause(c);
    buf_free(&c->pending_in);
    conn_queue_fail(c);
}

/* Queues the owed error answer once the pipeline has room (the request being parsed
 * carries it, or a fresh one), with Connection: close. */
static void conn_queue_fail(struct conn *c)
{
    if (c->fail_status == 0 || c->closed ||
        c->inflight >= c->loop->srv->cfg.max_pipeline)
        return;
    struct request *req = c->parser.cur;
    c->parser.cur = NULL;
    if (req == NULL)
        req = request_pool_get(&c->loop->pool);
    req->route = ROUTE_OTHER;
    response_error(&req->resp, c->fail_status, c->fail_reason);
    c->fail_status = 0;
    req->close = CLOSE_AFTER;
    req->parsed_ns = now_ns();
    conn_enqueue(c, req);
    conn_respond(req);
}

/* Feeds bytes to the parser; keeps what it could not take while paused. */
static void conn_feed(struct conn *c, const char *data, size_t len)
{
    size_t used = 0;
    c->feeds++;
    c->in_feed = 1;
    int rc = http_parser_feed(&c->parser, data, len, &used);
    c->in_feed = 0;
    if (rc < 0) {
        conn_fail(c, c->parser.error_status,
                  c->parser.error_reason ? c->parser.error_reason : "malformed request");
        return;
    }
    if (rc == 1 && c->read_done && !c->closed) {
        /* a closing request was handed over: what came after it is never parsed */
        buf_reset_shrink(&c->pending_in, PENDING_KEEP);
        conn_pause(c);
    } else if (rc == 1 && !c->close_after_flush && !c->closed && !c->peer_eof) {
        /* paused (pipeline cap or unread output): keep the rest, stop reading */
        if (used < len) {
            if (c->pending_in.len > 0 && data >= c->pending_in.data &&
                data < c->pending_in.data + c->pending_in.len) {
                memmove(c->pending_in.data, data + used, len - used);
                c->pending_in.len = len - used;
            } else {
                buf_reset(&c->pending_in);
                buf_append(&c->pending_in, data + used, len - used);
            }
        } else {
            buf_reset_shrink(&c->pending_in, PENDING_KEEP);
        }
        conn_pause(c);
    } else if (c->pending_in.len && data == c->pending_in.data) {
        buf_reset_shrink(&c->pending_in, PENDING_KEEP);
    }
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
            conn_pause(c);
            return;
        }
        conn_close(c);
        return;
    }
    if (c->lingering || c->close_after_flush || c->failed)
        return; /* discard */
    conn_ref(c); /* held across callbacks that may close the connection */
    conn_feed(c, buf->base, (size_t)nread);
    conn_unref(c);
}

static struct request *parser_begin(void *ctx)
{
    struct conn *c = ctx;
    c->begun++; /* the header deadline of this request starts */
    return request_pool_get(&c->loop->pool);
}

/* Hands req over. Everything this needs of req is read before on_request: from then on
 * the request belongs to the server (the async server answers it at once and returns it
 * to the pool, which may free it), and nobody here touches it again. */
static int parser_complete(void *ctx, struct request *req)
{
    struct conn *c = ctx;
    struct server_loop *l = c->loop;
    conn_enqueue(c, req);
    if (!req->keep_alive || l->stopping) {
        req->close = CLOSE_AFTER;
        c->read_done = 1; /* nothing after a closing request is read, even while it is in
                             flight (an answer ahead of it must not resume reading) */
    }
    l->srv->hooks->on_request(l, req, l->srv->ctx);
    if (c->close_after_flush || c->closed || c->read_done)
        return 1;
    return !conn_can_read(c);
}

static const struct http_parser_ops parser_ops = {
    .begin = parser_begin,
    .complete = parser_complete,
};

/* Resumes a connection paused for the pipeline cap or unread output once it has room.
 * The read deadlines start again: the time reading stood still was the server's. */
static void conn_maybe_resume(struct conn *c)
{
    if (!c->paused || c->in_feed || !conn_can_read(c))
        return;
    c->paused = 0;
    c->feeds++;
    c->begun++;
    conn_ref(c); /* held across the feed, which may close the connection */
    if (c->pending_in.len > 0)
        conn_feed(c, c->pending_in.data, c->pending_in.len);
    if (!c->paused && !c->closed && !c->close_after_flush && !c->peer_eof && !c->failed)
        uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
    conn_unref(c);
}

/* ---- the response FIFO ---- */

void conn_respond(struct request *req)
{
    struct conn *c = req->conn;
    struct server_loop *l = c->loop;
    /* decided, and handed back once: the request has one owner, and it is giving it up */
    ASSERT(req->resp.status != 0 && !req->done);
    req->done = 1;
    if (c->closed) {
        /* the connection is gone: unlink and drop */
        fifo_remove(c, req);
        c->inflight--;
        request_pool_put(&l->pool, req);
        conn_unref(c); /* the FIFO's */
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
            enum close_mode close = l->stopping ? CLOSE_AFTER : r->close;
            response_render(&c->out, &r->resp, r->request_id, close);
            uint64_t lat_us = now > r->parsed_ns ? (now - r->parsed_ns) / 1000 : 0;
            metrics_count_request(&l->metrics, r->route, r->resp.status, lat_us);
            mark_dirty(c);
            if (close == CLOSE_AFTER)
                c->close_after_flush = 1;
        }
        request_pool_put(&l->pool, r);
        conn_unref(c); /* the FIFO's; cannot free: the handle's reference is held */
    }
    if (c->fail_status != 0)
        conn_queue_fail(c); /* the pipeline may have room for the owed answer now */
    if (c->peer_eof && c->inflight == 0 && !c->dirty && !c->writing && c->out.len == 0) {
        conn_close(c);
        return;
    }
    conn_maybe_resume(c);
}

/* ---- accepting, sweeping, stopping ---- */

void conn_open(struct server_loop *l, int fd)
{
    struct server *srv = l->srv;
    struct conn *c = xcalloc(1, sizeof *c);
    uv_tcp_init(&l->uv, &c->tcp);
    c->loop = l;
    c->refs = 1; /* the open handle's, released in on_conn_closed */
    l->nconns++;
    metrics_add((uint64_t *)&l->metrics.open_connections, 1);
    unsigned total = atomics_add_relaxed(&srv->total_conns, 1) + 1;
    if (uv_tcp_open(&c->tcp, fd) != 0) {
        close(fd); /* the handle did not take it */
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
    c->read_ms = c->begin_ms = c->write_ms = loop_now_ms(l);
    uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}
