/* mailbox: a bounded multi-producer, single-consumer queue of `void *` messages on a
 * Concurrency Kit ring (ck_ring_enqueue_reserve_mpmc + an in-order commit that yields
 * when it waits; ck_ring_dequeue_mpsc). No mutex and no allocation per message, but not
 * lock-free: a producer preempted between reserving and publishing its slot stalls later
 * producers (SPEC "Mailbox progress guarantee"); the consumer never waits. It does not
 * wake anybody (that is the actor's job).
 * Invariant: any thread may push and read the depth; exactly one thread at a time pops. */
#ifndef ACTOR_MAILBOX_H
#define ACTOR_MAILBOX_H

#include <ck_ring.h>

struct mailbox {
    struct ck_ring ring;          /* producer and consumer counters, cache-line padded */
    struct ck_ring_buffer *slots; /* ring_size entries, owned */
};

/* Prepares an empty mailbox whose ring has `ring_size` slots (a power of two in
 * [2, 2^30]); it holds at most ring_size - 1 messages (ck_ring keeps one slot free).
 * Returns 0 or -EINVAL (bad size). Aborts only on OOM. Call before any other thread
 * can see mb. */
int mailbox_init(struct mailbox *mb, unsigned ring_size);

/* Releases the slots. Messages still queued are not touched (the caller owns them).
 * No other thread may use mb any more. */
void mailbox_destroy(struct mailbox *mb);

/* Enqueues msg (not NULL; the pointer is stored, never dereferenced: ownership passes
 * to whoever pops it). Returns 0, or -EAGAIN when the mailbox is full (nothing queued,
 * the caller still owns msg). Any thread. Blocking: waits (spin, then sched_yield) until
 * every producer that reserved a slot before this one has published it. */
int mailbox_push(struct mailbox *mb, void *msg);

/* Dequeues the oldest published message into *msg. Returns 0, or -EAGAIN when empty
 * (or only reserved, unpublished slots). Wait-free. Only the one consumer thread of this
 * mailbox may call it. Messages from one producer come out in
 * the order that producer pushed them. */
int mailbox_pop(struct mailbox *mb, void **msg);

/* Number of queued messages: exact for the consumer, a recent snapshot from any other
 * thread (for metrics). Inline: the schedulers poll it on every drain. */
static inline unsigned mailbox_depth(const struct mailbox *mb)
{
    return ck_ring_size(&mb->ring);
}

/* Most messages the mailbox can hold (ring_size - 1). Any thread. */
unsigned mailbox_capacity(const struct mailbox *mb);

#endif
