/* worker: one load-generating thread: its own uv loop, its share of the connections
 * (client.h), the send schedule (dispatch.h: closed loop, or constant rate on a tick
 * grid), socket I/O through one of the back-ends of io.h (libuv's epoll, the epoll tick
 * loop, io_uring), and its own struct stats. Threads share only the read-only struct
 * worker_shared; nothing on the hot path is shared. Lifecycle: worker_new -> worker_start
 * -> (barriers with main) -> worker_join -> read worker_stats -> worker_free. */
#ifndef LOADGEN_WORKER_H
#define LOADGEN_WORKER_H

#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "config.h"
#include "common/base/gate.h"
#include "mix.h"
#include "stats.h"

/* What main shares with every worker. Main fills cfg/mix/addr before worker_start,
 * opens the gate once every thread started (or one could not: then failed, and the
 * workers end before the barriers), writes start_ns and abort between the two barrier
 * waits, and may set stop. */
struct worker_shared {
    const struct config *cfg;
    const struct mix *mix;
    struct sockaddr_storage addr;
    struct gate gate;            /* workers wait here until every thread started, so
                                  * that the barriers count exactly the threads there are;
                                  * failed: one could not, end without a run */
    pthread_barrier_t connected; /* all workers tried their first connects */
    pthread_barrier_t go;        /* main has written start_ns / abort */
    uint64_t start_ns;           /* schedule origin (timebase clock, CLOCK_MONOTONIC) */
    int use_uring;               /* set by main before worker_start */
    int abort;                   /* nonzero: skip the run (nothing could connect) */
    unsigned stop;               /* nonzero: stop early (SIGINT); atomics.h */
};

struct worker;

/* Creates worker `id` (0-based) owning `nconns` connections. Borrows sh for its life.
 * Aborts only on OOM. Main thread. */
struct worker *worker_new(struct worker_shared *sh, unsigned id, unsigned nconns);
/* Starts its thread, named "lg-ID" (pthread_setname_np: /proc/PID/task/TID/comm, so a
 * runner can read each worker's CPU in /proc/PID/task/TID/stat): 0 or a negative errno
 * (then nothing started). The thread waits at
 * sh->gate before it does anything: main opens it once every thread started (failed 0),
 * or when one could not (failed 1: the started ones end at once; join them then). */
int worker_start(struct worker *w);
/* Joins the thread; afterwards worker_stats and worker_* getters are safe to read. */
void worker_join(struct worker *w);
/* The worker's stats (owned by the worker). Before join, only the progress_* mirrors
 * and, after the `connected` barrier, connections_established may be read. */
struct stats *worker_stats(struct worker *w);
/* The first connect error seen (negative uv errno), 0 if none. After the barrier. */
int worker_first_error(const struct worker *w);
/* When the worker stopped measuring (ns, timebase clock). After join. */
uint64_t worker_stop_ns(const struct worker *w);
void worker_free(struct worker *w);

#endif
