/* actor: making an actor, sending to it from another thread, freeing it (see actor.h;
 * the invariants of pending and local_ready are in cell.h). Does not create threads or
 * wake anybody itself; its scheduler does (sched_ready). */
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
