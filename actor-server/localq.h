/* localq: an unsynchronised FIFO of `void *` for one thread: the same-thread half of an
 * actor's mailbox (actor.c). It grows by doubling up to a fixed bound, so it allocates
 * only when it reaches a new high-water mark, never per message once warm.
 * Invariant: only the owner thread pushes and pops; head and tail are atomics only so
 * that other threads may read the depth (relaxed loads, for metrics). */
#ifndef ACTOR_LOCALQ_H
#define ACTOR_LOCALQ_H

#include <errno.h>
#include <stdatomic.h>

struct localq {
    void **slots;            /* mask + 1 entries, owned; NULL until the first push */
    unsigned mask;           /* slot count - 1 (a power of two - 1); 0 before the first push */
    unsigned max;            /* most messages it may hold */
    unsigned lim;            /* min(cap, max): a push at this depth must grow or fail */
    atomic_uint head, tail;  /* free-running; depth = tail - head */
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
    unsigned t = atomic_load_explicit(&q->tail, memory_order_relaxed);
    unsigned h = atomic_load_explicit(&q->head, memory_order_relaxed);

    if (t - h == q->lim && localq_grow(q) != 0)
        return -EAGAIN;
    q->slots[t & q->mask] = msg;
    atomic_store_explicit(&q->tail, t + 1, memory_order_relaxed);
    return 0;
}

/* Removes and returns the oldest message; the caller knows q is not empty (it counts
 * what it pushed). Owner thread. */
static inline void *localq_pop(struct localq *q)
{
    unsigned h = atomic_load_explicit(&q->head, memory_order_relaxed);
    void *msg = q->slots[h & q->mask];

    atomic_store_explicit(&q->head, h + 1, memory_order_relaxed);
    return msg;
}

/* Messages queued: exact for the owner, a recent snapshot for any other thread. */
static inline unsigned localq_depth(const struct localq *q)
{
    /* head first (acquire keeps the tail load after it): tail only grows past it, so the
     * difference never goes negative for a reader on another thread */
    unsigned h = atomic_load_explicit(&q->head, memory_order_acquire);

    return atomic_load_explicit(&q->tail, memory_order_relaxed) - h;
}

#endif
