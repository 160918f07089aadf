/* localq: growth and teardown of the single-thread FIFO (see localq.h); push and pop are
 * inline there. Invariant: the slot count (mask + 1 once allocated, else 0) is a power
 * of two, lim = min(slot count, max), and tail - head <= lim. */
#include "localq.h"

#include <stdlib.h>
#include <string.h>

#include "common/base/util.h"

#define LOCALQ_FIRST_CAP 16u

void localq_init(struct localq *q, unsigned max)
{
    q->slots = NULL;
    q->mask = 0;
    q->max = max > 0 ? max : 1;
    q->lim = 0;
    atomics_store_relaxed(&q->head, 0);
    atomics_store_relaxed(&q->tail, 0);
}

void localq_destroy(struct localq *q)
{
    free(q->slots);
    q->slots = NULL;
    q->mask = 0;
    q->lim = 0;
}

int localq_grow(struct localq *q)
{
    unsigned h = atomics_load_relaxed(&q->head);
    unsigned t = atomics_load_relaxed(&q->tail);
    unsigned old = q->slots != NULL ? q->mask + 1 : 0;
    unsigned n = t - h, cap = old ? old * 2 : LOCALQ_FIRST_CAP;
    void **slots;

    if (n >= q->max)
        return -EAGAIN;
    if (n < old)
        return 0; /* room already (cap > max is possible: the last doubling overshoots) */
    /* A new array with the queued messages at the same free-running positions, so head
     * and tail (read by other threads) never move backwards. */
    slots = xmalloc((size_t)cap * sizeof(*slots));
    for (unsigned i = 0; i < n; i++)
        slots[(h + i) & (cap - 1)] = q->slots[(h + i) & q->mask];
    free(q->slots);
    q->slots = slots;
    q->mask = cap - 1;
    q->lim = cap < q->max ? cap : q->max;
    ASSERT((cap & (cap - 1)) == 0 && n <= q->lim);
    return 0;
}
