/* mailbox: a bounded multi-producer, single-consumer queue of `void *` messages: Vyukov's
 * bounded queue (a sequence number per slot), in C11 atomics. A producer claims a slot
 * with one CAS on the tail and publishes it with a release store of the slot's sequence:
 * producers never wait for each other (lock-free). The consumer never has to wait either:
 * when the next message's producer has claimed its slot and not yet published it,
 * mailbox_try_pop says so (-EBUSY) and the consumer comes back later. No allocation per
 * message; it does not wake anybody (that is the actor's job).
 * Invariant: any thread may push and read the depth; exactly one thread at a time pops. */
#ifndef ACTOR_MAILBOX_H
#define ACTOR_MAILBOX_H

#include <stdatomic.h>
#include <stddef.h>

struct mailbox_cell {
    atomic_size_t seq; /* == pos: free for the push at pos; == pos + 1: holds that message */
    void *msg;
};

struct mailbox {
    struct mailbox_cell *cells; /* size entries, owned */
    size_t mask;                /* size - 1 */
    _Alignas(64) atomic_size_t tail; /* next position to claim; producers CAS it */
    _Alignas(64) atomic_size_t head; /* next position to pop; written by the consumer only */
};

/* Prepares an empty mailbox of `ring_size` slots (a power of two in [2, 2^30]); it holds
 * at most ring_size - 1 messages (the slot of the last message popped is released at the
 * next pop). Returns 0 or -EINVAL (bad size). Aborts only on OOM. Call before any other
 * thread can see mb. */
int mailbox_init(struct mailbox *mb, unsigned ring_size);

/* Releases the slots. Messages still queued are not touched (the caller owns them).
 * No other thread may use mb any more. */
void mailbox_destroy(struct mailbox *mb);

/* Enqueues msg (not NULL; the pointer is stored, never dereferenced: ownership passes
 * to whoever pops it). Returns 0, or -EAGAIN when the mailbox is full (nothing queued,
 * the caller still owns msg). Any thread. Lock-free: never waits for another producer
 * (a failed CAS means another push succeeded). */
int mailbox_push(struct mailbox *mb, void *msg);

/* Dequeues the oldest message into *msg without ever waiting. Returns 0, -EAGAIN when
 * empty, or -EBUSY when the next slot is claimed by a producer that has not published
 * it yet (preempted between its two stores; it completes them when it runs again): the
 * caller comes back later, as the I/O loops' schedulers do. Only the one consumer
 * thread of this mailbox may call it. Messages from one producer come out in the order
 * that producer pushed them. */
int mailbox_try_pop(struct mailbox *mb, void **msg);

/* mailbox_try_pop that waits out -EBUSY (spin, then sched_yield): returns 0 or -EAGAIN.
 * For consumers that have nothing else to do (tests, benchmarks, a stopping scheduler);
 * an I/O loop never calls it. */
int mailbox_pop(struct mailbox *mb, void **msg);

/* Number of queued messages, including pushes that have claimed a slot and are about to
 * publish it: a recent snapshot from any thread (for the schedulers' polls and metrics).
 * Inline: the schedulers poll it on every drain. */
static inline unsigned mailbox_depth(const struct mailbox *mb)
{
    /* head first: tail only grows past it, so the difference never goes negative */
    size_t h = atomic_load_explicit(&mb->head, memory_order_acquire);

    return (unsigned)(atomic_load_explicit(&mb->tail, memory_order_relaxed) - h);
}

/* Most messages the mailbox can hold (ring_size - 1). Any thread. */
unsigned mailbox_capacity(const struct mailbox *mb);

#endif
