/* conn: one accepted connection's state machine: reads fed to the parser, reading paused
 * and resumed (pipeline cap, unread output), the FIFO that keeps responses in request
 * order, one batched write per loop iteration, linger after "Connection: close", the
 * header and idle deadlines, and the reference count that keeps a connection's memory
 * until its last in-flight request is answered. Everything here runs on the thread of
 * the connection's loop. Does not own loops or listeners (server.c does). */
#ifndef COMMON_CONN_H
#define COMMON_CONN_H

#include <stdint.h>
#include <uv.h>

struct server_loop;
struct request;

/* Accepts one pending connection of listener into l and starts reading it, or closes it
 * at once (accept failed, over --max-conns, or l is stopping). Counts it either way. */
void conn_accept(struct server_loop *l, uv_stream_t *listener);

/* The periodic sweep: closes connections whose deadline (idle, linger) passed; a
 * request whose headers did not arrive in time is answered 408 first. */
void conn_sweep(struct server_loop *l, uint64_t now_ms);

/* The graceful stop: closes the idle connections now; the others keep going until
 * their last response is written (no deadline meanwhile). */
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
