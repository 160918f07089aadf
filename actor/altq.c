/* altq: ck_ring MPSC and mutex + condvar mailboxes (see altq.h). Does not allocate per
 * message. Concurrency Kit's loads and stores are inline assembly that ThreadSanitizer
 * does not see, so under TSan the ring's own slot accesses are not checked (ignored) and
 * its ordering is told to TSan instead: a release on the ring before a producer
 * publishes, an acquire after a message is taken, so what the sender wrote before the
 * send is seen as happening before what the receiver reads (the messages' contents stay
 * checked; a race inside ck_ring itself would be missed, never invented). */
#include "altq.h"

#include <ck_pr.h>
#include <errno.h>
#include <stdbool.h>
#include <sched.h>
#include <stdlib.h>

#include "common/base/atomics.h"
#include "common/base/util.h"

/* Polls of an earlier, unpublished reservation before a producer yields its CPU. */
#define ALTQ_COMMIT_SPIN 32

#if defined(__SANITIZE_THREAD__)
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void __tsan_ignore_thread_begin(void);
void __tsan_ignore_thread_end(void);
#define TSAN_ACQUIRE(p) __tsan_acquire(p)
#define TSAN_RELEASE(p) __tsan_release(p)
#define TSAN_IGNORE_BEGIN() __tsan_ignore_thread_begin()
#define TSAN_IGNORE_END() __tsan_ignore_thread_end()
#else
#define TSAN_ACQUIRE(p) ((void)0)
#define TSAN_RELEASE(p) ((void)0)
#define TSAN_IGNORE_BEGIN() ((void)0)
#define TSAN_IGNORE_END() ((void)0)
#endif

int altq_init(struct altq *q, enum altq_kind kind, unsigned ring_size)
{
    if (ring_size < 4 || ring_size > (1u << 30) || (ring_size & (ring_size - 1)) != 0)
        return -EINVAL;
    q->kind = kind;
    q->mask = ring_size - 1;
    atomics_store_relaxed(&q->head, 0);
    atomics_store_relaxed(&q->tail, 0);
    q->sleepers = 0;
    switch (kind) {
    case ALTQ_RING:
        ck_ring_init(&q->ring, ring_size);
        q->slots = xcalloc(ring_size, sizeof *q->slots);
        return 0;
    case ALTQ_MUTEX:
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->nonempty, NULL);
        q->cells = xcalloc(ring_size, sizeof *q->cells);
        return 0;
    }
    return -EINVAL;
}

void altq_destroy(struct altq *q)
{
    if (q->kind == ALTQ_RING) {
        free(q->slots);
        q->slots = NULL;
        return;
    }
    pthread_cond_destroy(&q->nonempty);
    pthread_mutex_destroy(&q->lock);
    free(q->cells);
    q->cells = NULL;
}

static int ring_push(struct altq *q, void *msg)
{
    unsigned ticket, spins = 0;
    void **slot;

    TSAN_IGNORE_BEGIN();
    slot = ck_ring_enqueue_reserve_mpmc(&q->ring, q->slots, &ticket);
    if (slot == NULL) {
        TSAN_IGNORE_END();
        return -EAGAIN; /* full */
    }
    *slot = msg;
    /* Publish in reservation order: wait for every earlier producer's publish. */
    while (ck_pr_load_uint(&q->ring.p_tail) != ticket) {
        if (++spins < ALTQ_COMMIT_SPIN) {
            ck_pr_stall();
        } else {
            spins = 0;
            sched_yield();
        }
    }
    TSAN_IGNORE_END();
    TSAN_RELEASE(&q->ring);
    ck_pr_fence_store();
    ck_pr_store_uint(&q->ring.p_tail, ticket + 1);
    return 0;
}

static int mutex_push(struct altq *q, void *msg)
{
    pthread_mutex_lock(&q->lock);
    unsigned t = atomics_load_relaxed(&q->tail);
    if (t - atomics_load_relaxed(&q->head) == q->mask) {
        pthread_mutex_unlock(&q->lock);
        return -EAGAIN;
    }
    q->cells[t & q->mask] = msg;
    atomics_store_relaxed(&q->tail, t + 1);
    if (q->sleepers != 0)
        pthread_cond_signal(&q->nonempty);
    pthread_mutex_unlock(&q->lock);
    return 0;
}

int altq_push(struct altq *q, void *msg)
{
    return q->kind == ALTQ_RING ? ring_push(q, msg) : mutex_push(q, msg);
}

/* Pops under the lock (held by the caller): 0 or -EAGAIN. */
static int mutex_pop_locked(struct altq *q, void **msg)
{
    unsigned h = atomics_load_relaxed(&q->head);
    if (atomics_load_relaxed(&q->tail) == h)
        return -EAGAIN;
    *msg = q->cells[h & q->mask];
    atomics_store_relaxed(&q->head, h + 1);
    return 0;
}

int altq_try_pop(struct altq *q, void **msg)
{
    int rc;

    if (q->kind == ALTQ_RING) {
        TSAN_IGNORE_BEGIN();
        bool got = ck_ring_dequeue_mpsc(&q->ring, q->slots, msg);
        TSAN_IGNORE_END();
        if (!got)
            return -EAGAIN;
        TSAN_ACQUIRE(&q->ring);
        return 0;
    }
    pthread_mutex_lock(&q->lock);
    rc = mutex_pop_locked(q, msg);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

void altq_pop(struct altq *q, void **msg)
{
    if (q->kind == ALTQ_RING) {
        unsigned spins = 0;
        while (altq_try_pop(q, msg) != 0) {
            if (++spins < ALTQ_COMMIT_SPIN) {
                ck_pr_stall();
                continue;
            }
            spins = 0;
            sched_yield();
        }
        return;
    }
    pthread_mutex_lock(&q->lock);
    while (mutex_pop_locked(q, msg) != 0) {
        q->sleepers++;
        pthread_cond_wait(&q->nonempty, &q->lock);
        q->sleepers--;
    }
    pthread_mutex_unlock(&q->lock);
}

unsigned altq_depth(const struct altq *q)
{
    if (q->kind == ALTQ_RING)
        return ck_ring_size(&q->ring);
    /* head first: tail only grows past it */
    unsigned h = atomics_load_acquire(&q->head);
    return atomics_load_relaxed(&q->tail) - h;
}

unsigned altq_capacity(const struct altq *q)
{
    return q->mask;
}
