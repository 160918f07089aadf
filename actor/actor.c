/* actor: making an actor, its ladder settings (mailbox kind, route), sending to it out of
 * line (another thread, or a routed send), freeing it (see actor.h;
 * the invariants of pending and local_ready are in cell.h). Does not create threads or
 * wake anybody itself; its scheduler does (sched_ready). */
#include "actor.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "altq.h"
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
    a->fast_home = home;
    a->alt = NULL;
    a->msg_ops = NULL;
    a->via_mailbox = false;
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
    if (a->alt != NULL) {
        altq_destroy(a->alt);
        free(a->alt);
    } else {
        mailbox_destroy(&a->mailbox);
    }
    free(a);
}

/* Never a scheduler: an actor whose fast_home points here takes actor_send_slow. */
static const char slow_only;

int actor_set_mailbox(struct actor *a, enum actor_mailbox_kind kind)
{
    unsigned size = mailbox_capacity(&a->mailbox) + 1;
    struct altq *q;
    int rc;

    if (kind == ACTOR_MAILBOX_VYUKOV || a->alt != NULL)
        return kind == ACTOR_MAILBOX_VYUKOV && a->alt == NULL ? 0 : -EINVAL;
    if (kind != ACTOR_MAILBOX_RING && kind != ACTOR_MAILBOX_MUTEX)
        return -EINVAL;
    q = xmalloc(sizeof *q);
    rc = altq_init(q, kind == ACTOR_MAILBOX_RING ? ALTQ_RING : ALTQ_MUTEX, size);
    if (rc != 0) {
        free(q);
        return rc;
    }
    mailbox_destroy(&a->mailbox);
    a->alt = q;
    return 0;
}

void actor_set_route(struct actor *a, const struct actor_msg_ops *ops, bool via_mailbox)
{
    a->msg_ops = ops;
    a->via_mailbox = via_mailbox;
    a->fast_home = ops != NULL || via_mailbox ? (struct sched *)(uintptr_t)&slow_only : a->home;
}

/* The cross-thread half's push: queue, count pending, schedule a on the 0 -> 1 edge. */
static int push_remote(struct actor *a, void *msg)
{
    int rc = a->alt != NULL ? altq_push(a->alt, msg) : mailbox_push(&a->mailbox, msg);

    if (rc != 0)
        return rc;
    /* Counted after the push, so a runner that sees pending = n finds >= n messages.
     * Whoever moves pending from 0 owns scheduling the actor. */
    if (atomics_add_acq_rel(&a->pending, 1) == 0)
        sched_ready(a->home, a);
    return 0;
}

int actor_send_remote(struct actor *a, void *msg)
{
    sched_count_send(a->home, 1);
    int rc = push_remote(a, msg);
    if (rc != 0)
        sched_count_send(a->home, -1);
    return rc;
}

int actor_send_slow(struct actor *a, void *msg)
{
    const struct actor_msg_ops *ops = a->msg_ops;
    void *m = ops != NULL ? ops->wrap(msg) : msg;
    int rc;

    sched_count_send(a->home, 1);
    if (a->home == sched_current() && !a->via_mailbox)
        rc = actor_push_local(a, m);
    else
        rc = push_remote(a, m);
    if (rc != 0)
        sched_count_send(a->home, -1);
    if (ops != NULL) {
        if (rc != 0)
            ops->unsent(m);
        else if (ops->sent != NULL)
            ops->sent(msg);
    }
    return rc;
}
