/* conn: one connection's state machine: parsing, pausing (pipeline cap, unread output),
 * responses in request order, batched writes, linger, refused input answered once, the
 * header/body/send/idle deadlines, and a reference count that keeps its memory until its
 * last in-flight request is answered. Loop thread only; loops and listeners are server.c's.
 * Invariant: at most max_pipeline requests in flight (a refused input's answer included)
 * plus the one being received, and one read buffer of unparsed input, whatever the peer. */
#ifndef COMMON_CONN_H
#define COMMON_CONN_H

#include <stdint.h>
#include <uv.h>

struct server_loop;
struct request;

/* Takes fd, a connected stream socket (non-blocking or not; server.c's accept4, or a
 * socketpair end in tests), and starts serving it on l, or closes it at once (over
 * --max-conns, l stopping, or libuv refused it). Counts it either way. Loop thread. */
void conn_open(struct server_loop *l, int fd);

/* The periodic sweep, with now_ms the loop's clock (loop_now_ms): turns each connection's
 * progress since the last sweep into times, then applies the deadlines. A request whose
 * header block is not complete header_timeout_ms after its first byte, or whose body got
 * no byte for body_timeout_ms, is refused with 408 (answered after the requests in
 * flight, then the connection closes); output that none was taken of for
 * send_timeout_ms, an idle connection after idle_timeout_ms, and the end of a linger
 * close the connection. Precision: one sweep period (never early). */
void conn_sweep(struct server_loop *l, uint64_t now_ms);

/* The graceful stop: closes the idle connections now; the others keep going until
 * their last response is written (or the stop timeout closes them). */
void conn_stop_idle(struct server_loop *l);

/* Closes every connection of l (the stop timeout). */
void conn_close_all(struct server_loop *l);

/* Once per loop iteration (check phase): lets the architecture finish queued work
 * (hooks->before_flush), writes every connection with new output and resumes those that
 * paused for it, for a bounded number of rounds; keeps the loop from blocking in poll
 * while output is left. */
void conn_flush_all(struct server_loop *l);

/* Hands req's decided response (req->resp.status != 0) back to its connection. Takes
 * req: it is rendered once every earlier request on the connection has been, then
 * returned to the loop's pool; if the connection is gone it is just dropped. The write
 * happens at the end of the loop iteration. Thread of req's loop only. */
void conn_respond(struct request *req);

#endif
