/* dispatch: what a worker sends when. Closed loop: a connection with room gets its next
 * request at once. Constant rate: the planned times (plan.h), binned to the tick grid,
 * are sent as they fall due on the connection that has been free the longest (a FIFO of
 * free connections); send lag, connection waits and the server's holds (held.h) are
 * recorded here. Every wake-up ends in one turn: send what is due, then one write per
 * connection touched in it. Worker thread only. */
#ifndef LOADGEN_DISPATCH_H
#define LOADGEN_DISPATCH_H

#include <stdint.h>

#include "client.h"
#include "thread_state.h"

/* c has room again at now_ns (connected, or a response completed): closed loop, fills it
 * with requests; constant rate, queues it for the next due request. */
void dispatch_ready(struct client *c, uint64_t now_ns);
/* The end of every wake-up: sends what is due (constant rate), then writes every touched
 * connection once. A no-op before the run and once stopping. */
void dispatch_turn(struct worker *w);
/* Constant rate, at the end: counts the due times in [measure_start, until) that were
 * never sent as requests_not_sent, each with its corrected latency so far at `until`. */
void dispatch_count_not_sent(struct worker *w, uint64_t until);

#endif
