/* mailbox: bounded MPSC message queue on ck_ring (see mailbox.h). Does not wake or
 * schedule anybody. Invariant: one consumer at a time; the consumer never waits, a
 * producer waits only for earlier producers to publish (mailbox_commit).
 * Under ThreadSanitizer, ck_pr's inline assembly is invisible, so the ring's own slot
 * accesses are hidden from TSan and the push -> pop edge is declared explicitly. */
#include "mailbox.h"

#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "util.h"

/* Polls of the producer tail before a waiting producer yields its CPU. */
#define MAILBOX_COMMIT_SPIN 32

#if defined(__SANITIZE_THREAD__)
#define MAILBOX_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MAILBOX_TSAN 1
#endif
#endif

#ifdef MAILBOX_TSAN
/* TSan runtime annotations (libtsan): release/acquire on an address, and a window in
 * which this thread's plain loads/stores are not recorded. */
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
void AnnotateIgnoreReadsBegin(const char *file, int line);
void AnnotateIgnoreReadsEnd(const char *file, int line);
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
/* ck_ring orders its slot copies with ck_pr loads/stores/fences written in assembly,
 * which TSan cannot see; the window covers exactly one ck_ring call. */
#define RING_BEGIN()                                                                   \
    do {                                                                               \
        AnnotateIgnoreReadsBegin(__FILE__, __LINE__);                                  \
        AnnotateIgnoreWritesBegin(__FILE__, __LINE__);                                 \
    } while (0)
#define RING_END()                                                                     \
    do {                                                                               \
        AnnotateIgnoreWritesEnd(__FILE__, __LINE__);                                   \
        AnnotateIgnoreReadsEnd(__FILE__, __LINE__);                                    \
    } while (0)
/* What the ring really guarantees: everything the producer did before the push
 * happens before everything the consumer does after the pop. */
#define PUSH_RELEASE(mb) __tsan_release(mb)
#define POP_ACQUIRE(mb) __tsan_acquire(mb)
#else
#define RING_BEGIN() ((void)0)
#define RING_END() ((void)0)
#define PUSH_RELEASE(mb) ((void)(mb))
#define POP_ACQUIRE(mb) ((void)(mb))
#endif

int mailbox_init(struct mailbox *mb, unsigned ring_size)
{
    if (ring_size < 2 || ring_size > (1u << 30) || (ring_size & (ring_size - 1)) != 0)
        return -EINVAL;
    ck_ring_init(&mb->ring, ring_size);
    /* One slot array per mailbox, zeroed so a never-written slot reads as NULL. */
    mb->slots = xcalloc(ring_size, sizeof(*mb->slots));
    return 0;
}

void mailbox_destroy(struct mailbox *mb)
{
    free(mb->slots);
    mb->slots = NULL;
}

/* Publishes the slot reserved under `ticket` once every earlier ticket is published:
 * ck's _ck_ring_enqueue_commit_mp, except that a producer waiting for a preempted
 * earlier one yields its CPU after a short spin instead of spinning for its whole time
 * slice. With more producer threads than cores, pure spinning convoys behind a
 * preempted producer: 4 tight-loop producers on 2 cores did not finish 800,000
 * messages in 2 minutes; yielding after 32 polls takes 1-8 s (1024 polls: 17-33 s). */
static void mailbox_commit(struct mailbox *mb, unsigned ticket)
{
    unsigned spins = 0;

    while (ck_pr_load_uint(&mb->ring.p_tail) != ticket) {
        if (++spins < MAILBOX_COMMIT_SPIN) {
            ck_pr_stall();
        } else {
            spins = 0;
            sched_yield();
        }
    }
    /* The slot write is complete before the slot is published. */
    ck_pr_fence_store();
    ck_pr_store_uint(&mb->ring.p_tail, ticket + 1);
}

int mailbox_push(struct mailbox *mb, void *msg)
{
    unsigned ticket;
    void **slot;

    PUSH_RELEASE(mb);
    /* Reserves slot `ticket` (a CAS on the producer head), or finds the ring full. */
    RING_BEGIN();
    slot = ck_ring_enqueue_reserve_mpmc(&mb->ring, mb->slots, &ticket);
    if (slot != NULL)
        *slot = msg;
    RING_END();
    if (slot == NULL)
        return -EAGAIN;
    mailbox_commit(mb, ticket);
    return 0;
}

int mailbox_pop(struct mailbox *mb, void **msg)
{
    bool ok;

    RING_BEGIN();
    ok = ck_ring_dequeue_mpsc(&mb->ring, mb->slots, msg);
    RING_END();
    if (!ok)
        return -EAGAIN;
    POP_ACQUIRE(mb);
    return 0;
}

unsigned mailbox_capacity(const struct mailbox *mb)
{
    return ck_ring_capacity(&mb->ring) - 1;
}
