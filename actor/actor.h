/* actor: the actor runtime, as a program uses it (start reading here).
 *
 * An actor is state + a bounded mailbox + a behaviour (actor_fn), run by its home
 * scheduler. The mailbox has two halves: a bounded MPSC queue for senders on other
 * threads (mailbox.h: Vyukov's queue, senders lock-free and never waiting for each
 * other), and a plain FIFO (localq.h) for senders on the home scheduler's own thread,
 * which then need no atomic operation and no wake-up. Each half makes the actor runnable
 * on its own empty-to-non-empty transition, and both are run by the home scheduler's one
 * thread, so the behaviour never runs concurrently with itself. Messages from one sender
 * keep their order (a sender is always on the home thread or never). The runtime does not
 * own messages or state (the caller does). For the server's ladder, the cross-thread half
 * may be another queue (altq.h) and sends may be wrapped (struct actor_msg_ops); either
 * moves every send to the out-of-line path and leaves the inline one as it was.
 *
 * A program's whole use of it:
 *     struct sched *s = sched_new_thread("w0");       (or sched_new_uv on a libuv loop)
 *     struct actor *a = actor_new("db", db_fn, &db_state, s, 1024, &err);
 *     sched_start(s);
 *     actor_send(a, msg);            from any thread; -EAGAIN: full, the caller keeps msg
 *     ...                            db_fn(a, msg) runs on s's thread, owns msg
 *     sched_stop_and_join(s); actor_free(a); sched_free(s);
 *
 * The files, lowest first (each includes only those before it; no circle):
 *   mailbox.h, localq.h  the two mailbox halves (the run queue of a scheduler is a mailbox
 *                        of actors, too)
 *   altq.h               the ladder's other cross-thread halves (ck_ring, mutex)
 *   cell.h               struct actor, and how one batch of each half runs
 *                        (actor_run, actor_run_local); knows nothing of schedulers
 *   sched.h              thread and libuv schedulers: run queues, the local run list
 *                        (sched_local_push), sleeping and waking, start and stop
 *   actor.h              (this file) make, send, free
 * Built as libactor.a (Makefile); depends on common/base only. Tests: tests/test_actor_*.c;
 * the contention benchmark: bench/contention.c. */
#ifndef ACTOR_ACTOR_H
#define ACTOR_ACTOR_H

#include <stdbool.h>

#include "cell.h"
#include "sched.h"

/* How a message is carried (the server's --message): for a send to an actor with these
 * ops, wrap(msg) gives what is queued (a new envelope, a copy); after a successful send
 * sent(msg) releases what the sender held (may be NULL), after a failed one
 * unsent(wrapped) undoes wrap and the sender keeps msg. The receiving behaviour unwraps.
 * Called on the sender's thread. */
struct actor_msg_ops {
    void *(*wrap)(void *msg);
    void (*sent)(void *msg);
    void (*unsent)(void *wrapped);
};

/* Where a mailbox's cross-thread half queues (the server's --mailbox). */
enum actor_mailbox_kind {
    ACTOR_MAILBOX_VYUKOV, /* mailbox.h, the default */
    ACTOR_MAILBOX_RING,   /* altq.h: ck_ring MPSC */
    ACTOR_MAILBOX_MUTEX,  /* altq.h: mutex + condvar */
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

/* Before any send to a: its cross-thread half becomes `kind` (same capacity). 0, or
 * -EINVAL (unknown kind). Aborts only on OOM. */
int actor_set_mailbox(struct actor *a, enum actor_mailbox_kind kind);

/* Before any send to a: messages to a are wrapped by ops (NULL: sent as they are), and
 * with via_mailbox every send, same-thread ones too, goes through the cross-thread half
 * (as in a runtime without a same-thread path). Either sends every message to a through
 * actor_send_slow; with neither, actor_send keeps its inline same-thread path. */
void actor_set_route(struct actor *a, const struct actor_msg_ops *ops, bool via_mailbox);

/* actor_send's out-of-line path: the cross-thread half (the mailbox, the pending count,
 * the run queue and a wake-up on the idle-to-busy edge), and every send to an actor set
 * up by actor_set_route. Counts the send (sched_count_send). Any thread; same contract
 * as actor_send. */
int actor_send_slow(struct actor *a, void *msg);

/* The cross-thread half, whichever thread sends (tests and benchmarks use it from the
 * home thread); no msg_ops. Counted. Any thread; same contract as actor_send. */
int actor_send_remote(struct actor *a, void *msg);

/* The same-thread half's push: queues msg, and a on the local run list. Returns 0 or
 * -EAGAIN (the local half is full; nothing queued). a's home thread only. */
static inline int actor_push_local(struct actor *a, void *msg)
{
    /* Same thread as every run of a: nobody else touches the local half. */
    if (localq_push(&a->local, msg) != 0)
        return -EAGAIN;
    if (!a->local_ready) {
        a->local_ready = true;
        sched_local_push(a->home_local, a);
    }
    return 0;
}

/* Sends msg (not NULL; borrowed pointer handed over, never dereferenced by the runtime)
 * to a. Returns 0 (a owns msg now), or -EAGAIN when a's mailbox half is full (nothing
 * sent, the caller still owns msg; a server answers 503). Any thread. On a's home
 * scheduler's own thread (sched_current() == a->home): a few plain stores, no atomics,
 * no wake-up (the scheduler drains its local run list before it waits). Elsewhere:
 * lock-free, and wakes a's scheduler only when a goes from no pending message to one.
 * Each half holds ring_size - 1 messages. */
static inline int actor_send(struct actor *a, void *msg)
{
    if (a->fast_home != sched_current())
        return actor_send_slow(a, msg);
    if (actor_push_local(a, msg) != 0)
        return -EAGAIN;
    /* the sender runs on a's home thread, which also runs a: its counts are home's */
    atomics_add64_one_writer(&a->home_local->counts.messages, 1);
    return 0;
}

#endif
