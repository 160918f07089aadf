/* thread_state: struct worker, the state of one load-generating thread, which every module
 * on that thread reads and writes: worker.c (the thread, the window, stopping), client.c
 * (its connections), dispatch.c (what to send when) and the I/O back-ends (io.h). It names
 * client and io_ops only as pointers, and includes neither client.h nor dispatch.h. Worker
 * thread only; main.c sees worker.h, other threads read only worker_shared and the stats'
 * progress mirrors. */
#ifndef LOADGEN_THREAD_STATE_H
#define LOADGEN_THREAD_STATE_H

#include <pthread.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <uv.h>

#include "held.h"
#include "plan.h"
#include "rng.h"
#include "stats.h"
#include "uring.h"
#include "common/base/util.h"
#include "worker.h"

struct client;
struct io_ops;

struct worker {
    struct worker_shared *sh;
    const struct config *cfg;
    const struct io_ops *io;  /* the socket I/O back-end (io.h), fixed at worker_new */
    unsigned id;
    unsigned nconns;
    pthread_t thread;
    uv_loop_t loop;
    struct client *clients;
    struct client **ready; /* FIFO ring of connections with room for a request (constant
                          * rate): the longest idle takes the next request, so every
                          * connection carries its share, as N clients would */
    unsigned ready_head, nready;
    struct client **touched; /* connections to flush at the end of this wake-up */
    unsigned ntouched;
    /* c has room again at now_ns (connected, or a response completed): client.c calls it,
     * worker_new sets it to dispatch_ready, so that client.c does not call into dispatch.c */
    void (*on_ready)(struct client *c, uint64_t now_ns);
    struct stats stats;
    struct rng rng;           /* the requests' random choices (mix lines, placeholders) */
    struct rng jitter;        /* the reconnect backoff's, apart: the request sequence does
                               * not depend on when connections fail */
    struct buf scratch;
    uint64_t seq;
    uint64_t seq_stride;      /* streams in the run (agents x threads) */
    uint64_t seq_base;        /* this worker's stream */
    int closed_loop;
    int running;              /* after the go barrier */
    int stopping;
    int first_error;
    unsigned pending_connects;
    uint64_t now_ns;          /* time of the current wake-up / read batch / response */
    uint64_t wake_time_ns;    /* io_uring, tick loop: time of the current wake-up */
    uint64_t measure_start_ns;
    uint64_t end_ns;
    uint64_t stop_ns;
    /* constant rate (dispatch.c) */
    struct plan plan;
    uint64_t blocked_ns;      /* last turn that found requests due and no free connection */
    struct held held;         /* while no connection was free: the server's share of lag */
    uint64_t freed_last_ns;   /* receive time of the latest response that freed a
                               * connection since the last turn (0: none) */
    uint64_t outstanding;     /* requests sent and not yet answered, on every connection */
    uint64_t wake_ns;         /* when the next turn must run for the schedule; 0 = none */
    uint64_t tick_ns;
    uint64_t grid_origin_ns;  /* the run's start + this stream's share of a tick */
    int rx_stamps;            /* io_uring at a constant rate, tick loop: responses timed
                               * by the kernel's receive timestamps */
    int64_t real_minus_mono;  /* CLOCK_REALTIME - timebase, ns, at this wake-up */
    /* io_uv: the turn after each poll phase */
    uv_check_t turn;
    /* io_tick: the worker's own epoll sets */
    int sock_epfd;            /* the open sockets (EPOLLIN), read once per wake-up */
    int wait_epfd;            /* what the loop sleeps on: libuv's fd, and sock_epfd while
                               * wake_ns is 0 (wake on the next response) */
    int sock_armed;           /* sock_epfd is in wait_epfd */
    struct epoll_event *events;
    /* io_ring */
    struct uring uring;
    unsigned ops_pending;     /* recv and send submissions not yet completed */
    int uv_due;               /* libuv's backend fd is readable: run its loop once */
    int uv_tfd;               /* timerfd at libuv's next timer (no timeout on the waits) */
    uint64_t uv_armed_ns;
    uv_timer_t end_timer;
    uv_timer_t housekeeping;
};

/* Whether t_ns lies in the measured window [measure_start, end). */
static inline int worker_in_window(const struct worker *w, uint64_t t_ns)
{
    return t_ns >= w->measure_start_ns && t_ns < w->end_ns;
}

/* ns rounded up to us, at least 1 (below the histograms' lowest value: counted as 1 us). */
static inline uint64_t ns_to_us_ceil(uint64_t ns)
{
    uint64_t us = (ns + 999) / 1000;
    return us ? us : 1;
}

/* A wake-up of the io_uring or tick loop: sets now_ns, and with receive timestamps the
 * offset that converts them (CLOCK_REALTIME) to the timebase clock. Worker thread. */
void worker_woke(struct worker *w);

#endif
