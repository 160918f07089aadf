/* localq: an unsynchronised FIFO of `void *` for one thread: the same-thread half of an
 * actor's mailbox (actor.c). It grows by doubling up to a fixed bound, so it allocates
 * only when it reaches a new high-water mark, never per message once warm.
 * Invariant: only the owner thread pushes and pops; head and tail are atomics only so
 * that other threads may read the depth (relaxed loads, for metrics). */
#ifndef ACTOR_LOCALQ_H
#define ACTOR_LOCALQ_H

#include <errno.h>

#include "common/base/atomics.h"

struct localq {
    void **slots;            /* mask + 1 entries, owned; NULL until the first push */
    unsigned mask;           /* slot count - 1 (a power of two - 1); 0 before the first push */
    unsigned max;            /* most messages it may hold */
    unsigned lim;            /* min(cap, max): a push at this depth must grow or fail */
    unsigned head, tail;     /* atomics.h; free-running; depth = tail - head */
};

/* Prepares an empty queue that will hold at most `max` (>= 1) messages. Allocates
 * nothing yet. Any thread, before the owner uses it. */
void localq_init(struct localq *q, unsigned max);

/* Frees the slots; messages still queued are not touched. Owner thread, or any thread
 * once the owner is done with q. */
void localq_destroy(struct localq *q);

/* Makes room for one more message, doubling the slot array if it is full (the array
 * never exceeds the power of two above max). Returns 0, or -EAGAIN when q already holds
 * max messages. Aborts only on OOM. Owner thread (localq_push calls it). */
int localq_grow(struct localq *q);

/* Appends msg. Returns 0, or -EAGAIN when q holds max messages (nothing queued).
 * Owner thread. */
static inline int localq_push(struct localq *q, void *msg)
{
    unsigned t = atomics_load_relaxed(&q->tail);
    unsigned h = atomics_load_relaxed(&q->head);

    if (t - h == q->lim && localq_grow(q) != 0)
        return -EAGAIN;
    q->slots[t & q->mask] = msg;
    atomics_store_relaxed(&q->tail, t + 1);
    return 0;
}

/* Removes and returns the oldest message; the caller knows q is not empty (it counts
 * what it pushed). Owner thread. */
static inline void *localq_pop(struct localq *q)
{
    unsigned h = atomics_load_relaxed(&q->head);
    void *msg = q->slots[h & q->mask];

    atomics_store_relaxed(&q->head, h + 1);
    return msg;
}

/* Messages queued: exact for the owner, a recent snapshot for any other thread. */
static inline unsigned localq_depth(const struct localq *q)
{
    /* head first (acquire keeps the tail load after it): tail only grows past it, so the
     * difference never goes negative for a reader on another thread */
    unsigned h = atomics_load_acquire(&q->head);

    return atomics_load_relaxed(&q->tail) - h;
}

#endif
