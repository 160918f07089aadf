/* client: one emulated client of a worker: a keep-alive connection, connected and
 * reconnected through libuv, with its requests in flight (a ring of slots, oldest first),
 * two output buffers, a response parser (llhttp, response mode) and the accounting of every
 * request: completed (recorded into the worker's stats), or lost to the error class of the
 * event that ended its connection. Socket reads and writes are the I/O back-end's (io.h),
 * which hands the bytes to client_on_data. Worker thread only; no malloc per request. */
#ifndef LOADGEN_CLIENT_H
#define LOADGEN_CLIENT_H

#include <llhttp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <uv.h>

#include "config.h"
#include "stats.h"
#include "thread_state.h"
#include "common/base/util.h"

#define CLIENT_READ_BUF_BYTES 16384

enum client_state { CLIENT_IDLE_CLOSED, CLIENT_CONNECTING, CLIENT_OPEN, CLIENT_CLOSING };

/* What an event of the kernel (an io_uring completion, an epoll event) names: a token
 * index << 32 | generation << 4 | op (client_token), so that an event of a socket since
 * closed (an older generation) is recognised as stale. */
enum client_op { CLIENT_OP_RECV = 1, CLIENT_OP_SEND = 2, CLIENT_OP_CANCEL = 3 };
#define CLIENT_GEN_MASK 0x0fffffffu

/* One request in flight. */
struct slot {
    uint64_t planned_ns; /* its due time (closed loop: its send time) */
    uint64_t sent_ns;
    uint16_t expect;     /* the status a correct response has */
    uint8_t is_head;     /* HEAD: the response has no body */
};

struct client {
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_timer_t timer;   /* the connect timeout while connecting; the backoff while closed */
    llhttp_t parser;
    struct worker *w;
    unsigned index;
    enum client_state state;
    int fd;             /* io_ring, io_tick: the socket while open */
    unsigned gen;       /* io_ring, io_tick: bumped at every close; older events are stale */
    int initial;        /* first connect, before the barrier */
    int answered;       /* a response completed on this connection */
    unsigned failures;  /* connections in a row that ended without an answer (backoff) */
    int in_ready;       /* in the worker's ready queue */
    int touched;        /* on the worker's flush list */
    int close_after;    /* the server said Connection: close */
    int recv_pending;   /* io_ring: a recv into rbuf is with the kernel */
    int wpending;       /* a write of out[wbuf] is in flight */
    unsigned wbuf;      /* the buffer being written (when wpending) */
    unsigned cur;       /* the buffer new requests are appended to (!= wbuf when wpending) */
    size_t woff;        /* io_ring: bytes of out[wbuf] already sent */
    struct slot ring[CONFIG_MAX_PIPELINE];
    unsigned head, count;
    struct buf out[2];
    struct msghdr msg;  /* recvmsg with the receive timestamp (client_rx_prepare) */
    struct iovec iov;
    char cbuf[CMSG_SPACE(sizeof(struct timespec)) * 2];
    char rbuf[CLIENT_READ_BUF_BYTES];
};

/* The token of an operation `op` on c's current socket. */
static inline uint64_t client_token(const struct client *c, enum client_op op)
{
    return (uint64_t)c->index << 32 | (uint64_t)(c->gen & CLIENT_GEN_MASK) << 4 | op;
}

/* The connection a token names, and whether the token is of its current, open socket. */
static inline struct client *client_of_token(struct worker *w, uint64_t token, int *current)
{
    struct client *c = &w->clients[token >> 32];
    *current = ((token >> 4) & CLIENT_GEN_MASK) == (c->gen & CLIENT_GEN_MASK) &&
               c->state == CLIENT_OPEN;
    return c;
}

/* Puts c on the worker's list of connections to flush at the end of this wake-up. */
static inline void client_touch(struct client *c)
{
    if (c->touched)
        return;
    c->touched = 1;
    c->w->touched[c->w->ntouched++] = c;
}

/* Whether c can take one more request now. */
static inline int client_has_room(const struct client *c)
{
    return c->state == CLIENT_OPEN && !c->close_after && c->count < c->w->cfg->pipeline;
}

/* Makes c (zeroed memory) connection `index` of w. Main thread, before the worker runs. */
void client_init(struct client *c, struct worker *w, unsigned index);
/* Frees c's buffers (after the worker's thread ended). */
void client_free(struct client *c);
/* The first connect of c, before the run (the worker counts it in pending_connects until
 * it succeeded or failed). */
void client_start(struct client *c);
/* At the start of the run: a connection whose first connect failed, or that closed before
 * the run, tries again after the backoff. */
void client_retry_later(struct client *c);
/* The end of the run: closes c without reconnecting, and its timer. */
void client_stop(struct client *c);
/* A run that never started: closes c's handles (no accounting). */
void client_abort(struct client *c);
/* Closes c; its in-flight requests must have been counted by the caller. reconnect: open
 * a new connection once this one is closed (while the run goes on): at once when this one
 * got an answer, else after the backoff (client.c). */
void client_close(struct client *c, int reconnect);
/* Appends one request planned at planned_ns, sent at now_ns, to c's out buffer (written by
 * the turn) and puts c on the flush list. c has room (client_has_room). */
void client_queue_request(struct client *c, uint64_t planned_ns, uint64_t now_ns);
/* n > 0 bytes of c's socket arrived at w->now_ns. Returns 0 while c stays open, -1 when
 * it was closed (a parse error, or bytes after Connection: close; counted). */
int client_on_data(struct client *c, const char *data, size_t n);
/* The peer closed (eof) or the read failed (eof 0); w->now_ns is set. Counts what c loses
 * and closes it, to reconnect. */
void client_read_ended(struct client *c, int eof);
/* A write of c failed (err a negative errno or libuv error): counts and closes c. */
void client_write_failed(struct client *c, int err);
/* c's oldest request has waited longer than --timeout at w->now_ns: counts each of its
 * requests as a timeout (inside the window, with its corrected latency so far) and closes
 * c, to reconnect. */
void client_time_out(struct client *c);
/* Counts c's requests in flight that were sent in [measure_start, until) as in flight
 * when the window closed, each with its corrected latency so far at `until`. */
void client_count_in_flight(struct client *c, uint64_t until);
/* Points c->msg at rbuf and an empty control buffer, for a recvmsg with a timestamp. */
void client_rx_prepare(struct client *c);
/* When the bytes of c's last recvmsg arrived: the kernel's software receive timestamp
 * (CLOCK_REALTIME, taken as the packet entered our host's stack) on the timebase clock;
 * `wake` when there is none. Never later than wake. */
uint64_t client_rx_time(const struct client *c, uint64_t wake);

#endif
