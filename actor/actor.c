/* actor: behaviour + a two-half mailbox + pending counters that decide who runs it (see
 * actor.h). Does not create threads or wake anybody itself; its scheduler does.
 * Invariants: pending counts pushed-and-counted ring messages not yet processed; the
 * actor is in its scheduler's run queue or running a ring batch exactly while
 * pending > 0, and the ring holds >= pending. local_ready is true exactly while the
 * actor is on its scheduler's local run list or running local messages, and the local
 * FIFO is non-empty whenever it is on that list; all three are touched by the home
 * thread only. */
#include "actor.h"

#include <errno.h>
#include <stdlib.h>

#include "sched.h"
#include "common/base/util.h"

struct actor *actor_new(const char *name, actor_fn fn, void *state, struct sched *home,
                        unsigned ring_size, int *err)
{
    struct actor *a = xcalloc(1, sizeof(*a));
    int rc;

    /* The mailbox's slot array. */
    rc = mailbox_init(&a->mailbox, ring_size);
    if (rc != 0)
        goto fail_mailbox;
    /* The same-thread half: as many messages as the ring, slots allocated on demand. */
    localq_init(&a->local, ring_size - 1);
    /* A place in home's run queue. */
    rc = sched_attach(home);
    if (rc != 0)
        goto fail_attach;
    a->name = name;
    a->fn = fn;
    a->state = state;
    a->home = home;
    a->home_local = sched_local_of(home);
    a->local_ready = false;
    a->local_next = NULL;
    atomics_store_relaxed(&a->pending, 0);
    atomics_store64_relaxed(&a->processed, 0);
    atomics_store64_relaxed(&a->runs, 0);
    return a;

fail_attach:
    localq_destroy(&a->local);
    mailbox_destroy(&a->mailbox);
fail_mailbox:
    free(a);
    if (err != NULL)
        *err = rc;
    return NULL;
}

void actor_free(struct actor *a)
{
    if (a == NULL)
        return;
    sched_detach(a->home);
    localq_destroy(&a->local);
    mailbox_destroy(&a->mailbox);
    free(a);
}

int actor_send_remote(struct actor *a, void *msg)
{
    int rc = mailbox_push(&a->mailbox, msg);

    if (rc != 0)
        return rc;
    /* Counted after the push, so a runner that sees pending = n finds >= n messages.
     * Whoever moves pending from 0 owns scheduling the actor. */
    if (atomics_add_acq_rel(&a->pending, 1) == 0)
        sched_ready(a->home, a);
    return 0;
}

enum actor_run_result actor_run(struct actor *a, unsigned batch)
{
    unsigned n = atomics_load_acquire(&a->pending);
    unsigned done = 0;
    bool stalled = false;
    void *msg;

    if (n > batch)
        n = batch;
    atomics_add64_one_writer(&a->runs, 1);
    while (done < n) {
        /* The mailbox holds at least pending >= n claimed messages; the next one may not
         * be published yet (its sender was preempted between claim and publish). */
        int rc = mailbox_try_pop(&a->mailbox, &msg);
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
    return mailbox_depth(&a->mailbox) + localq_depth(&a->local);
}

uint64_t actor_processed(const struct actor *a)
{
    return atomics_load64_relaxed(&a->processed);
}

uint64_t actor_runs(const struct actor *a)
{
    return atomics_load64_relaxed(&a->runs);
}
