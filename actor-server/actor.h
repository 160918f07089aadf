/* actor: state + a bounded mailbox + a behaviour, run by its home scheduler. An actor
 * is made runnable only on its mailbox's empty-to-non-empty transition, so exactly one
 * scheduler thread runs it at a time and its behaviour never runs concurrently with
 * itself. It does not own its messages or its state (the caller does). */
#ifndef ACTOR_ACTOR_H
#define ACTOR_ACTOR_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "mailbox.h"

struct actor;
struct sched;

/* A behaviour: handles one message on the actor's scheduler thread. It owns msg from
 * here on (or hands it on with actor_send); it may call actor_send to any actor. */
typedef void (*actor_fn)(struct actor *self, void *msg);

struct actor {
    const char *name;       /* borrowed, for metrics; must outlive the actor */
    struct mailbox mailbox; /* owned; popped only by the scheduler running the actor */
    actor_fn fn;
    void (*batch_end)(struct actor *self); /* optional: after each run's last message */
    void *state;            /* borrowed; touched only by fn, so no locking needed */
    struct sched *home;     /* the scheduler that runs this actor, fixed at creation */
    atomic_uint pending;    /* messages sent but not yet processed; 0 -> 1 schedules */
    atomic_uint_fast64_t processed; /* messages handled; written by the runner only */
    atomic_uint_fast64_t runs;      /* runs (batches) started; written by the runner */
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

/* Sends msg (not NULL; borrowed pointer handed over, never dereferenced by the runtime)
 * to a. Returns 0 (a owns msg now), or -EAGAIN when a's mailbox is full (nothing sent,
 * the caller still owns msg; a server answers 503). Any thread, lock-free; wakes a's
 * scheduler only when a goes from no pending message to one. */
int actor_send(struct actor *a, void *msg);

/* Runs a for at most `batch` messages. Returns true when messages remain and the caller
 * must queue a again (at the back, for fairness), false when a is idle (the next
 * actor_send schedules it). For schedulers only: the caller must be the single owner of
 * a's run, obtained from the run queue. */
bool actor_run(struct actor *a, unsigned batch);

/* Metrics, any thread, relaxed snapshots. */
unsigned actor_depth(const struct actor *a);
uint64_t actor_processed(const struct actor *a);
uint64_t actor_runs(const struct actor *a);

#endif
