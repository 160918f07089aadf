/* conn_sweep: walks a loop's connections (see conn.h): the periodic sweep that turns
 * each connection's progress counters into times and applies the header, body, send,
 * idle and linger deadlines; the graceful stop's closing of idle connections; the stop
 * timeout's closing of all. */
#include <stdint.h>

#include "common/http/http.h"
#include "conn.h"
#include "conn_impl.h"
#include "loop.h"

/* Whether c waits for nothing: no request begun or in flight, no output. */
static int conn_idle(const struct conn *c)
{
    return c->inflight == 0 && !c->writing && !c->dirty && c->out.len == 0 && !c->failed &&
           !http_parser_mid_request(&c->parser);
}

/* One connection's deadlines at now_ms (see conn_sweep). */
static void conn_check(struct conn *c, const struct server_config *cfg, uint64_t now_ms)
{
    if (c->lingering) {
        if (now_ms >= c->linger_end_ms)
            conn_close(c);
        return;
    }
    /* what moved since the last sweep happened at most one sweep period ago */
    if (c->feeds != c->seen_feeds) {
        c->seen_feeds = c->feeds;
        c->read_ms = now_ms;
    }
    if (c->begun != c->seen_begun) {
        c->seen_begun = c->begun;
        c->begin_ms = now_ms;
    }
    size_t queued = c->tcp.write_queue_size;
    if (c->writes != c->seen_writes || queued < c->seen_write_queue) {
        c->seen_writes = c->writes;
        c->write_ms = now_ms;
    }
    c->seen_write_queue = queued;
    if (c->writing) {
        /* the peer takes none of our output: nothing can be delivered any more */
        if (now_ms - c->write_ms >= cfg->send_timeout_ms) {
            conn_close(c);
            return;
        }
    }
    if (!c->paused && !c->failed && !c->peer_eof && !c->close_after_flush &&
        http_parser_mid_request(&c->parser)) {
        int late = http_parser_in_headers(&c->parser)
                       ? now_ms - c->begin_ms >= cfg->header_timeout_ms
                       : now_ms - c->read_ms >= cfg->body_timeout_ms;
        if (late)
            conn_fail(c, 408, "request timeout"); /* after what is in flight */
        return;
    }
    if (conn_idle(c)) {
        uint64_t last = c->read_ms > c->write_ms ? c->read_ms : c->write_ms;
        if (now_ms - last >= cfg->idle_timeout_ms)
            conn_close(c);
    }
}

void conn_sweep(struct server_loop *l, uint64_t now_ms)
{
    const struct server_config *cfg = &l->srv->cfg;
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        conn_ref(c); /* held across checks that may close it */
        conn_check(c, cfg, now_ms);
        conn_unref(c);
        c = next;
    }
}

void conn_stop_idle(struct server_loop *l)
{
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        /* a response rendered but not yet flushed (dirty) is still owed */
        if (conn_idle(c))
            conn_close(c);
        c = next;
    }
}

void conn_close_all(struct server_loop *l)
{
    struct conn *c = l->conns;
    while (c != NULL) {
        struct conn *next = c->next;
        conn_close(c);
        c = next;
    }
}
