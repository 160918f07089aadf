/* mailbox: bounded MPSC message queue, Vyukov's per-slot sequence numbers (see mailbox.h).
 * Does not wake or schedule anybody. Invariant: one consumer at a time; a producer never
 * waits for another; the consumer waits only in mailbox_pop, for a claimed slot's
 * publication. Cell
 * sequences: cell i starts at i (free for position i); a push at pos stores pos + 1 (full);
 * the pop of pos + 1 releases pos's cell for position pos + size, so the cell of the last
 * message popped stays unreleased and the mailbox holds at most size - 1 messages. All in
 * C11 atomics, which ThreadSanitizer sees. mailbox_try_pop never waits for a claimed slot;
 * mailbox_pop's wait pauses the CPU between polls with Concurrency Kit's ck_pr_stall (no
 * memory access). */
#include "mailbox.h"

#include <ck_pr.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>

#include "common/base/util.h"

/* Polls of a claimed, unpublished slot before the consumer yields its CPU to let the
 * producer (perhaps preempted between its two stores) finish. */
#define MAILBOX_PUBLISH_SPIN 64

int mailbox_init(struct mailbox *mb, unsigned ring_size)
{
    if (ring_size < 2 || ring_size > (1u << 30) || (ring_size & (ring_size - 1)) != 0)
        return -EINVAL;
    mb->cells = xcalloc(ring_size, sizeof(*mb->cells));
    mb->mask = ring_size - 1;
    for (size_t i = 0; i < ring_size; i++)
        atomic_init(&mb->cells[i].seq, i);
    /* The cell of position -1 (the last one) counts as "popped, not yet released": the
     * first pop releases it, which keeps one slot spare from the start. */
    atomic_init(&mb->cells[mb->mask].seq, (size_t)-1);
    atomic_init(&mb->tail, 0);
    atomic_init(&mb->head, 0);
    return 0;
}

void mailbox_destroy(struct mailbox *mb)
{
    free(mb->cells);
    mb->cells = NULL;
}

int mailbox_push(struct mailbox *mb, void *msg)
{
    size_t pos = atomic_load_explicit(&mb->tail, memory_order_relaxed);

    for (;;) {
        struct mailbox_cell *c = &mb->cells[pos & mb->mask];
        size_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
        intptr_t dif = (intptr_t)(seq - pos);

        if (dif == 0) {
            /* Free for pos: claim it. On failure pos is reloaded with the current tail. */
            if (atomic_compare_exchange_weak_explicit(&mb->tail, &pos, pos + 1,
                                                      memory_order_relaxed,
                                                      memory_order_relaxed)) {
                c->msg = msg;
                /* Publishes the message (and everything the sender did before). */
                atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
                return 0;
            }
        } else if (dif < 0) {
            /* The cell still holds (or has not released) the message of pos - size. */
            return -EAGAIN;
        } else {
            /* Another producer claimed pos meanwhile. */
            pos = atomic_load_explicit(&mb->tail, memory_order_relaxed);
        }
    }
}

int mailbox_try_pop(struct mailbox *mb, void **msg)
{
    size_t head = atomic_load_explicit(&mb->head, memory_order_relaxed);
    struct mailbox_cell *c = &mb->cells[head & mb->mask];

    if (atomic_load_explicit(&c->seq, memory_order_acquire) != head + 1) {
        /* Not published: empty, or claimed by a producer that has yet to store. */
        return atomic_load_explicit(&mb->tail, memory_order_relaxed) == head ? -EAGAIN
                                                                             : -EBUSY;
    }
    *msg = c->msg;
    /* The previous message's cell is free for its next lap (this one stays held). */
    atomic_store_explicit(&mb->cells[(head - 1) & mb->mask].seq, head - 1 + mb->mask + 1,
                          memory_order_release);
    atomic_store_explicit(&mb->head, head + 1, memory_order_release);
    return 0;
}

int mailbox_pop(struct mailbox *mb, void **msg)
{
    unsigned spins = 0;
    int rc;

    while ((rc = mailbox_try_pop(mb, msg)) == -EBUSY) {
        if (++spins < MAILBOX_PUBLISH_SPIN) {
            ck_pr_stall();
            continue;
        }
        spins = 0;
        sched_yield();
    }
    return rc;
}

unsigned mailbox_capacity(const struct mailbox *mb)
{
    return (unsigned)mb->mask;
}
