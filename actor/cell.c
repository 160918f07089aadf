/* cell: an actor's batch runs and its metrics (see cell.h; the invariants are there). */
#include "cell.h"

#include <errno.h>

#include "common/base/util.h"
#include "altq.h"

/* The cross-thread half's depth: the mailbox, or the queue that replaced it. */
static unsigned cross_depth(const struct actor *a)
{
    return a->alt != NULL ? altq_depth(a->alt) : mailbox_depth(&a->mailbox);
}

enum actor_run_result actor_run(struct actor *a, unsigned batch)
{
    unsigned n = atomics_load_acquire(&a->pending);
    unsigned done = 0;
    bool stalled = false;
    void *msg;

    /* run only while pending > 0, and the ring holds >= pending (claimed slots counted) */
    ASSERT(n > 0 && cross_depth(a) >= n);
    if (n > batch)
        n = batch;
    atomics_add64_one_writer(&a->runs, 1);
    while (done < n) {
        /* The mailbox holds at least pending >= n claimed messages; the next one may not
         * be published yet (its sender was preempted between claim and publish). */
        int rc = a->alt != NULL ? altq_try_pop(a->alt, &msg)
                                : mailbox_try_pop(&a->mailbox, &msg);
        if (rc == -EBUSY) {
            stalled = true;
            break;
        }
        if (rc != 0)
            panic("actor %s: pending %u but mailbox empty", a->name, n - done);
        a->fn(a, msg);
        done++;
    }
    if (a->batch_end != NULL)
        a->batch_end(a);
    atomics_add64_one_writer(&a->processed, done);
    /* Leaving pending > 0 keeps the run ours: the caller queues the actor again. */
    if (atomics_sub_acq_rel(&a->pending, done) == done)
        return ACTOR_RUN_IDLE;
    return stalled ? ACTOR_RUN_STALLED : ACTOR_RUN_MORE;
}

unsigned actor_depth(const struct actor *a)
{
    return cross_depth(a) + localq_depth(&a->local);
}

uint64_t actor_processed(const struct actor *a)
{
    return atomics_load64_relaxed(&a->processed);
}

uint64_t actor_runs(const struct actor *a)
{
    return atomics_load64_relaxed(&a->runs);
}
