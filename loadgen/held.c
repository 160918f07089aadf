/* held: the hold clock of held.h, as a ring of start/stop marks searched by time. */
#include "held.h"

#include <string.h>

void held_init(struct held *h)
{
    memset(h, 0, sizeof *h);
}

static const struct held_mark *mark_at(const struct held *h, unsigned i)
{
    return &h->mark[(h->head + i) % HELD_MARKS];
}

static void push(struct held *h, uint64_t t, int running)
{
    if (h->n == HELD_MARKS) { /* the oldest goes */
        h->head = (h->head + 1) % HELD_MARKS;
        h->n--;
    }
    h->mark[(h->head + h->n) % HELD_MARKS] = (struct held_mark){t, h->total_ns, running};
    h->n++;
}

void held_begin(struct held *h, uint64_t t)
{
    if (h->on)
        return;
    if (h->n > 0 && t < mark_at(h, h->n - 1)->t)
        t = mark_at(h, h->n - 1)->t; /* marks stay in time order */
    push(h, t, 1);
    h->on = 1;
}

void held_end(struct held *h, uint64_t t)
{
    if (!h->on)
        return;
    uint64_t since = mark_at(h, h->n - 1)->t;
    if (t < since)
        t = since;
    h->total_ns += t - since;
    push(h, t, 0);
    h->on = 0;
}

uint64_t held_between(const struct held *h, uint64_t from, uint64_t to)
{
    if (h->n == 0 || (!h->on && mark_at(h, h->n - 1)->t <= from))
        return 0; /* the clock has not run since from */
    return held_at(h, to) - held_at(h, from);
}

uint64_t held_at(const struct held *h, uint64_t t)
{
    if (h->n == 0)
        return 0;
    if (t < mark_at(h, 0)->t)
        return mark_at(h, 0)->h;
    unsigned lo = 0, hi = h->n - 1; /* the newest mark at or before t */
    while (lo < hi) {
        unsigned mid = lo + (hi - lo + 1) / 2;
        if (mark_at(h, mid)->t <= t)
            lo = mid;
        else
            hi = mid - 1;
    }
    const struct held_mark *m = mark_at(h, lo);
    return m->running ? m->h + (t - m->t) : m->h;
}
