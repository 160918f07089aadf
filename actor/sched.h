/* sched: runs ready actors in batches. Two kinds, one interface: a worker thread with
 * its own MPSC run queue that sleeps when idle (futex, touched only on the sleep/wake
 * edge), or a libuv loop woken by uv_async_send (actors then run on the loop thread;
 * an actor homed there doubles as the loop's inbox for replies). Not a thread pool: an
 * actor always runs on its home scheduler. Beside the MPSC run queue each scheduler has
 * a plain local run list for actors made runnable from its own thread (actor.h's
 * same-thread half), which costs no atomic operation and no wake-up.
 * Invariant: an actor is in at most one run queue at most once and in the local list at
 * most once, so a run queue never holds more than its actor count. */
#ifndef ACTOR_SCHED_H
#define ACTOR_SCHED_H

#include <stdint.h>
#include <uv.h>

#include "cell.h"
#include "common/base/util.h"

struct sched;

#define SCHED_DEFAULT_BATCH 64u
#define SCHED_MAX_ACTORS 4095u
/* Polls of an empty run queue before a worker sleeps: catches a reply that is a few
 * hundred nanoseconds away without a futex round trip. */
#define SCHED_DEFAULT_SPIN 64u

/* Creates a thread scheduler (not yet running; see sched_start). name is copied (the
 * thread's name, up to 15 bytes shown). Aborts only on OOM. Any thread. */
struct sched *sched_new_thread(const char *name);

/* Creates a scheduler bound to loop: actors homed here run on the loop's thread, from a
 * uv_async callback. Must be called on the loop's thread (or before the loop runs). The
 * async handle keeps the loop alive until sched_stop_and_join closes it. Returns 0 and
 * sets *out (the caller frees it with sched_stop_and_join, a loop turn, then
 * sched_free), or a negative errno from uv_async_init with *out NULL and nothing left
 * to release (libuv 1.44 on Linux makes a loop's eventfd in uv_loop_init, so it does not
 * fail there; libuv's contract allows it). Aborts only on OOM. */
int sched_new_uv(uv_loop_t *loop, struct sched **out);

/* uv kind: declares the calling thread the loop's thread (call it there, once, before
 * the loop serves). From then on, sends made on that thread skip the uv_async_send
 * wake-up: the loop drains its run queue before it blocks (a prepare handle) and
 * wherever the owner calls sched_uv_drain (the server's flush, after I/O callbacks).
 * Sends from other threads still wake the loop as before. */
void sched_uv_bind(struct sched *s);

/* uv kind: runs ready actors until the run queue is empty (or a budget of runs is
 * spent, then a wake-up is posted for the rest). Loop thread only. */
void sched_uv_drain(struct sched *s);

/* Sets how many messages one actor may handle per run (>= 1; default 64). Only before
 * sched_start. */
void sched_set_batch(struct sched *s, unsigned batch);

/* Sets how many times an idle thread scheduler polls its empty run queue (a pause
 * instruction between polls) before it sleeps on its futex: 0 sleeps at once (every
 * hand-off to it is then a wake-up), more trades CPU for fewer wake-ups. Default 64.
 * Only before sched_start; a uv scheduler never spins (its loop blocks in epoll). */
void sched_set_spin(struct sched *s, unsigned spin);

/* Starts running actors: spawns the thread (thread kind; returns 0 or a negative errno
 * from pthread_create) or does nothing (uv kind: the loop runs it; returns 0). Once. */
int sched_start(struct sched *s);

/* Stops the scheduler after draining it: every actor already runnable runs until its
 * run queue is empty, including messages those actors send to actors on s meanwhile.
 * Thread kind: any thread other than s's own; joins the thread. uv kind: on the loop's
 * thread (or after the loop stopped; also from inside one of its actors); drains inline,
 * then closes the async handle, so the loop must run once more (uv_run) before
 * sched_free. Messages sent to s's actors afterwards stay queued and unprocessed, with
 * no wake-up. uv kind: a send racing with the stop may still call uv_async_send on the
 * closing handle, so stop or join the other threads that send to s's actors before
 * sched_free. Returns 0 or a negative errno (join failed). */
int sched_stop_and_join(struct sched *s);

/* Frees a stopped scheduler (or a never-started thread one). Its actors must have been
 * freed first (actor_free); a scheduler with actors left aborts (broken invariant). */
void sched_free(struct sched *s);

/* Registers one more actor homed on s: 0, or -ENOSPC beyond SCHED_MAX_ACTORS. For
 * actor_new. Any thread. */
int sched_attach(struct sched *s);
/* Unregisters one actor (actor_free). Any thread. */
void sched_detach(struct sched *s);

/* Queues a (which became runnable) on s and wakes s if it was idle. For the runtime
 * only (actor_send and the requeue after a run); the caller owns a's run. Any thread;
 * lock-free (the run queue is a mailbox, mailbox.h); a wake-up costs a futex or
 * uv_async_send only on the idle-to-busy edge. */
void sched_ready(struct sched *s, struct actor *a);

/* The batch size of s (for actor_run callers). */
unsigned sched_batch(const struct sched *s);

/* The scheduler this thread runs: set on a thread scheduler's own thread and by
 * sched_uv_bind on a loop's thread (cleared by that scheduler's stop when it runs on
 * that thread), NULL elsewhere. Sends to actors homed there take the same-thread path.
 * A thread runs at most one scheduler: binding a second one to it moves the path. */
extern _Thread_local struct sched *sched_self_tls;
static inline struct sched *sched_current(void)
{
    return sched_self_tls;
}

/* What the runtime did on one scheduler's thread (actor_*_total on /metrics): counters
 * with that thread as their one writer (atomics.h one_writer adds, relaxed reads from any
 * thread), summed at a scrape. Sends from a thread that runs no scheduler are not
 * counted (the server makes none). */
struct sched_counts {
    uint64_t messages;     /* sends made on this thread (each hop) */
    uint64_t cross_thread; /* of those, to an actor homed on another scheduler */
    uint64_t wakeups;      /* futex wakes and uv_async_sends issued from this thread */
};

/* A scheduler's local run list: actors whose same-thread half became non-empty, FIFO,
 * linked through actor.local_next, and the counts of its thread. Touched only by the
 * scheduler's own thread (the counts are read by any). */
struct sched_local {
    struct actor *head, *tail;
    struct sched_counts counts;
};

/* Adds s's counts into *sum (relaxed snapshots). Any thread. */
void sched_counts_add(const struct sched *s, struct sched_counts *sum);

/* Counts one send made on this thread to an actor homed on `to` (delta 1), or takes one
 * back (delta -1: the push failed). For actor.c's out-of-line path, which counts before
 * the push, so a scrape that sees a reply also sees the send. Any thread (a thread
 * without a scheduler counts nothing). */
void sched_count_send(const struct sched *to, int delta);

/* Appends a (not on any local run list) at the back of l: the one place that links the
 * list, for actor_send (a became runnable) and the scheduler (a has messages left after
 * its run). l's scheduler's own thread only. */
static inline void sched_local_push(struct sched_local *l, struct actor *a)
{
    ASSERT(a->local_ready && l->tail != a && localq_depth(&a->local) != 0);
    a->local_next = NULL;
    if (l->tail != NULL)
        l->tail->local_next = a;
    else
        l->head = a;
    l->tail = a;
}

/* s's local run list (fixed for s's lifetime; actor_new keeps it). Any thread. */
struct sched_local *sched_local_of(struct sched *s);

#endif
