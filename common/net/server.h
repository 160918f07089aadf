/* server: the connection layer both servers share: N libuv loops, one thread each, each
 * with its own SO_REUSEPORT listener (server.c; the port must be free of other processes'
 * listeners); accept, read, parse (http.c), keep responses in request order per
 * connection, batch writes (one flush per loop iteration, uv_try_write first), the
 * header, body, send and idle deadlines (conn.c); --max-conns, EMFILE without spinning
 * or dropping the backlog, graceful stop.
 * What happens between "request parsed" and "response decided" is the architecture's
 * business (hooks->on_request); it must end in server_respond() on the same loop.
 * Invariants: a request and its connection belong to one loop; a connection's memory
 * lives until its last in-flight request is answered (reference count), so a late reply
 * never touches freed or reused memory. */
#ifndef COMMON_SERVER_H
#define COMMON_SERVER_H

#include <stdint.h>
#include <uv.h>

#include "conn.h"
#include "common/http/http.h"
#include "common/http/metrics.h"
#include "common/http/request.h"

struct server_config {
    const char *host;
    int port;                  /* 0: pick a free port (all loops share it) */
    unsigned threads;
    unsigned max_conns;        /* over it: accept and close */
    unsigned max_pipeline;     /* in-flight requests per connection before reading pauses */
    uint64_t header_timeout_ms; /* one request's header block, from its first byte: 408 */
    uint64_t body_timeout_ms;  /* a body with no byte for this long: 408 */
    uint64_t send_timeout_ms;  /* output pending and none of it taken for this long: close */
    uint64_t idle_timeout_ms;  /* nothing in flight, nothing to write: close */
    uint64_t stop_timeout_ms;  /* graceful stop: force-close connections after this */
    struct http_limits limits;
};

/* Defaults: 127.0.0.1:8080, 1 thread, 10000 conns, pipeline 16; header 10 s, body 10 s,
 * send 60 s, idle 60 s, stop 1500 ms. */
void server_config_default(struct server_config *cfg);

struct server;
struct server_loop;

struct server_hooks {
    /* On the loop's thread, before it serves; may set server_loop_set_data. */
    void (*loop_init)(struct server_loop *l, void *ctx);
    /* On the loop's thread, after every connection is gone; must close the handles it
     * created on the loop. Only after loop_init ran on that loop. */
    void (*loop_fini)(struct server_loop *l, void *ctx);
    /* A parsed request; ownership passes to the architecture until server_respond. */
    void (*on_request)(struct server_loop *l, struct request *req, void *ctx);
    /* Once per loop iteration, after the I/O callbacks and before responses are
     * written (work queued on this loop can finish in the same turn). May be NULL. */
    void (*before_flush)(struct server_loop *l, void *ctx);
    /* About four times a second on each loop (log flushing). May be NULL. */
    void (*on_tick)(struct server_loop *l, void *ctx);
};

/* Creates the loops and binds every listener (so bind errors surface here): 0, or a
 * negative libuv error (a socket, a loop or one of its handles could not be made) with a
 * one-line message in err; nothing is left allocated then. UV_EADDRINUSE when another
 * socket already holds the port (a listener of another process, SO_REUSEPORT or not):
 * the first listener is bound without SO_REUSEPORT, so it cannot join anybody's group,
 * and only then allows its siblings in. Borrows cfg, hooks and ctx. */
int server_create(const struct server_config *cfg, const struct server_hooks *hooks, void *ctx,
                  struct server **out, char *err, size_t errlen);
/* The port actually bound (useful with port 0). */
int server_port(const struct server *s);
/* Starts one thread per loop, all or nothing: 0, or the -errno of the thread that could
 * not be created, and then no loop runs (server_join runs them to their end on its own
 * thread after server_stop). */
int server_start(struct server *s);
/* Asks every loop to stop accepting and finish in-flight requests; any thread
 * (async-signal-unsafe: call from a normal thread, e.g. after sigwait). */
void server_stop(struct server *s);
/* After server_stop: waits until every loop finished (joins the loop threads; a loop
 * without a thread is run to its end here). From then on no loop runs any callback, but
 * the loops' memory (uv_loop_t, handles, metrics) is still valid, so an architecture's
 * other threads may still touch it until they are stopped: stop those, then call
 * server_free. Main thread. */
void server_join(struct server *s);
/* Frees the loops and the server after server_join (or after a server_create that never
 * started). Runs the close callbacks left and closes the handles of a loop that never
 * ran. Main thread. */
void server_free(struct server *s);

/* For tests and tools that drive a loop on their own thread instead of server_start:
 * runs loop i for one non-blocking turn (uv_run UV_RUN_NOWAIT) and returns what uv_run
 * returned. The first call makes the calling thread the loop's thread (loop_init runs,
 * the sweep and flush handles start). Never together with server_start; server_stop +
 * server_join wind such a loop down on the joining thread. */
int server_loop_turn(struct server *s, unsigned i);

unsigned server_loop_count(const struct server *s);
struct server_loop *server_loop_at(struct server *s, unsigned i);
/* Per-loop metrics, written only on that loop's thread. */
struct metrics *server_loop_metrics(struct server_loop *l);
uv_loop_t *server_loop_uv(struct server_loop *l);
unsigned server_loop_index(const struct server_loop *l);
void server_loop_set_data(struct server_loop *l, void *data);
void *server_loop_data(const struct server_loop *l);

/* Hands the decided response of req (req->resp, status != 0) back to its connection
 * (conn_respond). Thread of loop l, which parsed req. Takes req: it is rendered when
 * every earlier request on the connection has been, then returned to the loop's pool;
 * if the connection is gone it is just dropped. The write happens at the end of the
 * loop iteration. */
static inline void server_respond(struct server_loop *l, struct request *req)
{
    (void)l;
    conn_respond(req);
}

#endif
