/* actor: state + a bounded mailbox + a behaviour, run by its home scheduler. The mailbox
 * has two halves: a bounded MPSC queue for senders on other threads (mailbox.h: Vyukov's
 * queue, senders lock-free and never waiting for each other), and a plain FIFO
 * (localq) for senders on the home scheduler's own thread, which then need no atomic
 * operation and no wake-up. Each half makes the actor runnable on its own empty-to-non-
 * empty transition, and both are run by the home scheduler's one thread, so the
 * behaviour never runs concurrently with itself. Messages from one sender keep their
 * order (a sender is always on the home thread or never). It does not own its messages
 * or its state (the caller does). */
#ifndef ACTOR_ACTOR_H
#define ACTOR_ACTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/atomics.h"
#include "localq.h"
#include "mailbox.h"
#include "sched.h"

struct actor;
struct sched;

/* A behaviour: handles one message on the actor's scheduler thread. It owns msg from
 * here on (or hands it on with actor_send); it may call actor_send to any actor. */
typedef void (*actor_fn)(struct actor *self, void *msg);

struct actor {
    const char *name;       /* borrowed, for metrics; must outlive the actor */
    struct mailbox mailbox; /* owned; sends from other threads; popped by the home thread */
    struct localq local;    /* owned; sends from the home thread; home thread only */
    bool local_ready;       /* on home's local run list or running local messages; a
                               local send that finds it false queues the actor. Home
                               thread only */
    struct actor *local_next; /* home's local run list */
    struct sched_local *home_local; /* that list: sched_local_of(home) */
    actor_fn fn;            /* fixed at creation */
    void (*batch_end)(struct actor *self); /* optional: after each run's last message */
    void *state;            /* borrowed; touched only by fn, so no locking needed */
    struct sched *home;     /* the scheduler that runs this actor, fixed at creation */
    unsigned pending;       /* atomics.h: messages sent but not yet processed; 0 -> 1
                               schedules */
    uint64_t processed;     /* atomics.h: messages handled; written by the runner only */
    uint64_t runs;          /* atomics.h: runs (batches) started; written by the runner */
};

/* Creates an actor homed on `home` with a mailbox of `ring_size` slots (power of two;
 * holds ring_size - 1 messages). name and state are borrowed. Returns the actor, or
 * NULL with *err = -EINVAL (bad ring_size) or -ENOSPC (home holds its maximum number of
 * actors). Aborts only on OOM. Any thread; the actor may be sent to at once (messages
 * wait until home is started). */
struct actor *actor_new(const char *name, actor_fn fn, void *state, struct sched *home,
                        unsigned ring_size, int *err);

/* Frees the actor. Only when nobody will send to it any more and it is not runnable
 * (its mailbox drained, e.g. after its scheduler's sched_stop_and_join). Messages still
 * queued are not touched. */
void actor_free(struct actor *a);

/* actor_send's cross-thread path: the ring, the pending count, the run queue and a
 * wake-up on the idle-to-busy edge. Any thread; same contract as actor_send. */
int actor_send_remote(struct actor *a, void *msg);

/* Sends msg (not NULL; borrowed pointer handed over, never dereferenced by the runtime)
 * to a. Returns 0 (a owns msg now), or -EAGAIN when a's mailbox half is full (nothing
 * sent, the caller still owns msg; a server answers 503). Any thread. On a's home
 * scheduler's own thread (sched_current() == a->home): a few plain stores, no atomics,
 * no wake-up (the scheduler drains its local run list before it waits). Elsewhere:
 * lock-free, and wakes a's scheduler only when a goes from no pending message to one.
 * Each half holds ring_size - 1 messages. */
static inline int actor_send(struct actor *a, void *msg)
{
    if (a->home != sched_current())
        return actor_send_remote(a, msg);
    /* Same thread as every run of a: nobody else touches the local half. */
    if (localq_push(&a->local, msg) != 0)
        return -EAGAIN;
    if (!a->local_ready) {
        struct sched_local *l = a->home_local;
        a->local_ready = true;
        a->local_next = NULL;
        if (l->tail != NULL)
            l->tail->local_next = a;
        else
            l->head = a;
        l->tail = a;
    }
    return 0;
}

/* What a run of the cross-thread half left (actor_run). */
enum actor_run_result {
    ACTOR_RUN_IDLE,    /* nothing pending: the next actor_send schedules a */
    ACTOR_RUN_MORE,    /* messages remain: queue a again (at the back, for fairness) */
    ACTOR_RUN_STALLED, /* the next message's sender has claimed its slot but not yet
                          published it: queue a again, and come back later rather than
                          at once (the sender finishes when it runs again) */
};

/* Runs a for at most `batch` messages of its cross-thread half, never waiting for a
 * sender (the run stops early at an unpublished slot). For schedulers only: the caller
 * must be the single owner of a's run, obtained from the run queue. */
enum actor_run_result actor_run(struct actor *a, unsigned batch);

/* The same for the same-thread half: at most `batch` local messages. Returns true when
 * local messages remain (queue a on the local run list again). Home thread only, for
 * the scheduler that took a from its local run list. */
static inline bool actor_run_local(struct actor *a, unsigned batch)
{
    unsigned n = localq_depth(&a->local);

    if (n > batch)
        n = batch;
    atomics_add64_one_writer(&a->runs, 1);
    /* local_ready stays true during the run: a send to a from its own behaviour (or from
     * any actor it calls) queues the message but not the actor a second time. */
    actor_fn fn = a->fn; /* fixed at creation */
    for (unsigned i = 0; i < n; i++)
        fn(a, localq_pop(&a->local));
    if (a->batch_end != NULL)
        a->batch_end(a);
    atomics_add64_one_writer(&a->processed, n);
    if (localq_depth(&a->local) != 0)
        return true;
    a->local_ready = false;
    return false;
}

/* Metrics, any thread, relaxed snapshots (depth counts both halves). */
unsigned actor_depth(const struct actor *a);
uint64_t actor_processed(const struct actor *a);
uint64_t actor_runs(const struct actor *a);

#endif
