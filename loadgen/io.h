/* io: a worker's socket I/O behind one small table of functions (as wrk's struct sock),
 * one back-end per file: io_uv (closed loop on epoll: libuv reads every socket as it
 * becomes readable and writes with uv_try_write), io_tick (constant rate on epoll: the
 * sockets sit in an epoll set of the worker's own that is read once per tick; writes as
 * io_uv) and io_ring (io_uring: recv and send submissions for every connection, one
 * io_uring_enter per wake-up). libuv always does connects, closes and the ms timers.
 * A worker's back-end is fixed at worker_new; every call is on the worker's thread. */
#ifndef LOADGEN_IO_H
#define LOADGEN_IO_H

#include "client.h"
#include "thread_state.h"

struct io_ops {
    const char *name;
    /* The thread's start, before the first connect: makes the back-end's kernel objects.
     * Panics when one cannot be had (main probed io_uring; a failure here is a limit). */
    void (*init)(struct worker *w);
    /* c has just connected: start reading it. 0, or a negative errno (then the caller
     * counts c's loss and closes it). */
    int (*open)(struct client *c);
    /* Writes c's out[cur] (c open, no write in flight, out[cur] not empty), or starts to.
     * A write error is counted and c closed (client_write_failed). Touches no other
     * connection. */
    void (*flush)(struct client *c);
    /* c (open) is about to be closed: every event the kernel still holds or will report
     * for its socket becomes stale. NULL: nothing to do. */
    void (*close)(struct client *c);
    /* The run, after its first turn: returns once the worker stopped and libuv has nothing
     * left to do. */
    void (*run)(struct worker *w);
    /* worker_stop: closes the back-end's own libuv handles. NULL: none. */
    void (*stop)(struct worker *w);
    /* The end of the thread (the run ended, or never started): releases what init made. */
    void (*release)(struct worker *w);
};

extern const struct io_ops io_uv, io_tick, io_ring;

/* io_uv's flush (uv_try_write, then uv_write for the rest), which io_tick shares. */
void io_uv_flush(struct client *c);

#endif
