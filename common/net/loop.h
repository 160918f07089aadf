/* loop: the state of one I/O loop and of the server that owns the loops, shared by the
 * two halves of the connection layer: server.c (loops, listeners, threads, stop) and
 * conn.c (connections). Private to them: architectures use server.h.
 * Invariant: a struct server_loop is touched only by its loop's thread, except
 * stop_async (any thread) and the server-wide connection count (atomic). */
#ifndef COMMON_LOOP_H
#define COMMON_LOOP_H

#include <pthread.h>
#include <stdint.h>
#include <uv.h>

#include "common/base/gate.h"
#include "common/http/metrics.h"
#include "common/http/request.h"
#include "server.h"

#define LOOP_READ_BUF_SIZE (64 * 1024)

struct conn;

struct server_loop {
    uv_loop_t uv;
    int listen_fd;        /* this loop's listening socket (server.c), -1 when closed */
    uv_poll_t accept_poll; /* readable listen_fd: accept4 until EAGAIN (server.c) */
    uv_async_t stop_async;
    uv_timer_t sweep;
    uv_timer_t force_stop;
    uv_timer_t accept_retry; /* accepting paused on EMFILE: look again after a while */
    uv_check_t flush_check;
    uv_idle_t kick;       /* active while responses wait to be written: poll won't block */
    pthread_t thread;
    uint8_t uv_ready;     /* uv_loop_init done */
    unsigned ran;         /* loop_begin done: the architecture's loop_init ran. Written by the
                           * loop's thread, read by the main one: atomics.h only (a plain
                           * byte here was read together with `started` in one word) */
    uint8_t started;      /* 1: its thread was created; 2: run by the caller's thread
                           * (server_loop_turn, or server_join after a failed start) */
    uint8_t joined;       /* finished and, with a thread, joined */
    uint8_t stopping;
    uint8_t listener_open; /* accept_poll initialised and not yet closed */
    uint8_t accept_paused; /* out of descriptors: accept_poll stopped, the backlog kept */
    uint8_t finished;
    struct server *srv;
    unsigned index;
    unsigned nconns;      /* connections whose memory is not freed yet (conn.c) */
    struct conn *conns;   /* open connections, for the sweep and the stop (conn.c) */
    struct conn *dirty;   /* connections with output for this iteration's flush (conn.c) */
    struct request_pool pool;
    struct metrics metrics;
    void *data;
    /* Added to the loop's clock (uv_now) wherever the connection layer reads the time:
     * 0 in a server; tests move it forward to expire deadlines without waiting. */
    uint64_t clock_offset_ms;
    /* server.c's: called by conn.c after it freed a connection (nconns went down). */
    void (*conn_freed)(struct server_loop *l);
    char readbuf[LOOP_READ_BUF_SIZE]; /* every read of this loop lands here first */
};

/* The connection layer's clock in ms: the loop's cached time (uv_now, updated once per
 * iteration) plus clock_offset_ms. Loop thread. */
static inline uint64_t loop_now_ms(const struct server_loop *l)
{
    return uv_now(&l->uv) + l->clock_offset_ms;
}

struct server {
    struct server_config cfg;
    const struct server_hooks *hooks;
    void *ctx;
    unsigned nloops;
    int port;
    unsigned total_conns; /* open connections over every loop (atomic) */
    struct server_loop **loops;
    struct gate gate; /* server_start's: no loop runs until every thread exists */
};

#endif
