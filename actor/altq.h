/* altq: the two alternative cross-thread mailboxes of the runtime's ladder (--mailbox):
 * Concurrency Kit's MPSC ring (the queue issue 16 replaced: a producer reserves a slot
 * with a CAS, writes it, then publishes in reservation order, so a preempted producer
 * holds up the later ones) and a mutex + condition variable queue (every push and pop
 * takes the lock; a consumer with nothing else to do sleeps on the condvar). Both are
 * bounded rings of `void *` with one consumer; neither wakes a scheduler (actor.c does).
 * Invariant: only one thread at a time pops; the depth is a relaxed snapshot. */
#ifndef ACTOR_ALTQ_H
#define ACTOR_ALTQ_H

#include <ck_ring.h>
#include <pthread.h>

enum altq_kind { ALTQ_RING, ALTQ_MUTEX };

struct altq {
    enum altq_kind kind;
    /* ALTQ_RING */
    struct ck_ring ring;
    struct ck_ring_buffer *slots; /* ring_size entries, owned */
    /* ALTQ_MUTEX */
    pthread_mutex_t lock;
    pthread_cond_t nonempty;      /* signalled on a push while a consumer sleeps */
    void **cells;                 /* ring_size entries, owned; under lock */
    unsigned mask;                /* ring_size - 1 */
    unsigned head, tail;          /* atomics.h (written under lock, read for the depth) */
    unsigned sleepers;            /* consumers in altq_pop's wait; under lock */
};

/* Prepares an empty queue of `ring_size` slots (a power of two in [4, 2^30]); it holds
 * at most ring_size - 1 messages. Returns 0 or -EINVAL (bad size or kind). Aborts only
 * on OOM. Before any other thread can see q. */
int altq_init(struct altq *q, enum altq_kind kind, unsigned ring_size);

/* Releases the slots (queued messages are not touched). Nobody may use q any more. */
void altq_destroy(struct altq *q);

/* Enqueues msg (not NULL; stored, never dereferenced). 0, or -EAGAIN when full (nothing
 * queued, the caller keeps msg). Any thread. ALTQ_RING: waits while an earlier
 * reservation is unpublished (spin, then sched_yield); ALTQ_MUTEX: takes the lock. */
int altq_push(struct altq *q, void *msg);

/* Dequeues the oldest published message: 0, or -EAGAIN when there is none. Never waits
 * for a producer (ALTQ_MUTEX: waits for the lock). The one consumer only. */
int altq_try_pop(struct altq *q, void **msg);

/* altq_try_pop that waits for a message (ALTQ_MUTEX: asleep on the condvar; ALTQ_RING:
 * spin, then sched_yield). For consumers with nothing else to do (tests). */
void altq_pop(struct altq *q, void **msg);

/* Queued messages: a recent snapshot, any thread. */
unsigned altq_depth(const struct altq *q);

/* Most messages q holds (ring_size - 1). Any thread. */
unsigned altq_capacity(const struct altq *q);

#endif
