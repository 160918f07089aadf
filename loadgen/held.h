/* held: how long a constant-rate worker had no connection free, because every one was
 * waiting for the server. A clock H(t) that runs only during such holds (from the send
 * that took the last free connection to the first pass that finds one free again, or, when
 * the server had answered every request by then, to the arrival of its last answer), kept
 * as the times it started and stopped (a ring of the last HELD_MARKS), so that the held
 * part of a request's wait from its due time to its send is H(send) - H(due): the server's
 * doing. The rest of the send lag is the generator's own (a late wake-up, a stall while
 * connections were free or while answers sat unread with the server idle; a stall while
 * the server still had requests to answer counts as the server's). The worker decides
 * where a hold ends; this clock only keeps it. One worker's; not thread-safe. */
#ifndef LOADGEN_HELD_H
#define LOADGEN_HELD_H

#include <stdint.h>

#define HELD_MARKS 1024

struct held_mark {
    uint64_t t;  /* when the clock started or stopped */
    uint64_t h;  /* H(t) */
    int running; /* 1: a hold began here; 0: it ended here */
};

struct held {
    uint64_t total_ns; /* H at the newest mark */
    int on;            /* a hold is running, since the newest mark */
    struct held_mark mark[HELD_MARKS];
    unsigned head, n;  /* ring: oldest at head, n marks */
};

void held_init(struct held *h);
/* No connection is free from t on (a no-op while a hold runs). t never goes back. */
void held_begin(struct held *h, uint64_t t);
/* A connection is free at t (a no-op without a hold). A t before the hold's start ends it
 * where it began. */
void held_end(struct held *h, uint64_t t);
/* H(t): the held time up to t. For a t older than the oldest mark kept, H of that mark
 * (holds before it are not counted, so the own lag is overstated, never understated). */
uint64_t held_at(const struct held *h, uint64_t t);
/* H(to) - H(from), from <= to: the held part of a wait from `from` to `to`. O(1) when no hold
 * ran after `from` (the common case: a request sent on time), else two searches. */
uint64_t held_between(const struct held *h, uint64_t from, uint64_t to);

#endif
