/* cell: one actor's state and its two mailbox halves, and how one batch of each half runs
 * (Akka's word for the part of an actor the runtime handles). Knows nothing of
 * schedulers: struct sched is only a pointer here. sched.c runs cells (actor_run,
 * actor_run_local); actor.h makes them, sends to them and frees them. Layers of the
 * runtime, lowest first: mailbox, localq, altq < cell < sched < actor (actor.h is the one a
 * program includes).
 * Invariants (cell.c): pending counts pushed-and-counted ring messages not yet
 * processed; the actor is in its scheduler's run queue or running a ring batch exactly
 * while pending > 0, and the ring holds >= pending. local_ready is true exactly while the
 * actor is on its scheduler's local run list or running local messages, and the local
 * FIFO is non-empty whenever it is on that list; all three are touched by the home
 * thread only. The cross-thread half is the mailbox, or another queue (altq.h) when the
 * server's ladder chose one (actor_set_mailbox); the same invariants hold for either. */
#ifndef ACTOR_CELL_H
#define ACTOR_CELL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/base/atomics.h"
#include "common/base/util.h"
#include "altq.h"
#include "localq.h"
#include "mailbox.h"

struct actor;
struct sched;
struct sched_local;
struct actor_msg_ops;

/* A behaviour: handles one message on the actor's scheduler thread. It owns msg from
 * here on (or hands it on with actor_send); it may call actor_send to any actor. */
typedef void (*actor_fn)(struct actor *self, void *msg);

struct actor {
    const char *name;       /* borrowed, for metrics; must outlive the actor */
    struct sched *fast_home; /* home, or never a scheduler when every send must take the
                                slow path (actor_set_route); fixed before any send */
    struct mailbox mailbox; /* owned; sends from other threads; popped by the home thread */
    struct altq *alt;       /* owned; replaces `mailbox` when not NULL (actor_set_mailbox) */
    const struct actor_msg_ops *msg_ops; /* NULL: the message itself travels (actor.h) */
    bool via_mailbox;       /* same-thread sends go through the mailbox too */
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

    ASSERT(a->local_ready && n > 0); /* taken from the local run list: listed, non-empty */
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
