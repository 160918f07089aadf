/* dispatch: the ready FIFO, the tick grid, the pass over what is due and the turn. */
#include "dispatch.h"

#include "held.h"
#include "io.h"
#include "plan.h"
#include "timebase.h"

static void ready_push(struct worker *w, struct client *c)
{
    if (c->in_ready)
        return;
    c->in_ready = 1;
    w->ready[(w->ready_head + w->nready++) % w->nconns] = c;
}

/* The first tick-grid time at or after t. The schedule is binned to this grid: a request
 * planned at t is due at tick_ceil(t), its send lag and latency count from then, and the
 * loop wakes at most once per tick. Stream k of S (agents x threads) has its grid offset
 * by k/S of a tick, as its planned times are by k/R: the streams' batches interleave. */
static uint64_t tick_ceil(const struct worker *w, uint64_t t)
{
    uint64_t origin = w->grid_origin_ns;
    if (w->tick_ns == 0 || t <= origin)
        return t;
    uint64_t k = (t - origin + w->tick_ns - 1) / w->tick_ns;
    return origin + k * w->tick_ns;
}

/* Queues every planned request that is due on connections with room and sets wake_ns,
 * when the schedule next needs a turn (0: not before a completion frees a connection). */
static void dispatch_due(struct worker *w, uint64_t now_ns)
{
    if (now_ns >= w->end_ns) { /* a late pass: what was due stays not sent (counted so) */
        w->wake_ns = 0;
        return;
    }
    /* A connection came free during a hold and the server has answered every request: it
     * went idle at its last answer, and from then on the wait was the generator's (a late
     * wake-up, a saturated or stopped generator), though its connections looked busy until
     * it read them. While the server still has requests to answer, the hold lasts to the
     * end of this pass (below). */
    if (w->held.on && w->nready > 0 && w->outstanding == 0 && w->freed_last_ns)
        held_end(&w->held, w->freed_last_ns < now_ns ? w->freed_last_ns : now_ns);
    w->freed_last_ns = 0;
    for (;;) {
        uint64_t due = tick_ceil(w, plan_peek(&w->plan));
        if (due > now_ns || due >= w->end_ns)
            break;
        struct client *c = NULL;
        while (w->nready > 0) { /* the head, off the queue; a closed one is dropped */
            c = w->ready[w->ready_head];
            c->in_ready = 0;
            w->ready_head = (w->ready_head + 1) % w->nconns;
            w->nready--;
            if (client_has_room(c))
                break;
            c = NULL;
        }
        if (c == NULL) {
            w->blocked_ns = now_ns; /* everything due now waits for a connection */
            held_begin(&w->held, now_ns);
            break;
        }
        client_queue_request(c, due, now_ns);
        if (client_has_room(c))
            ready_push(w, c); /* pipelining: back of the queue, so the load rotates */
        else if (w->nready == 0)
            held_begin(&w->held, now_ns); /* the last free one: the server holds them all */
        if (worker_in_window(w, now_ns)) {
            uint64_t lag_us = ns_to_us_ceil(now_ns - due);
            histogram_record(w->stats.send_lag, lag_us);
            uint64_t server_ns = held_between(&w->held, due, now_ns);
            uint64_t own_ns = now_ns - due > server_ns ? now_ns - due - server_ns : 0;
            histogram_record(w->stats.own_lag, ns_to_us_ceil(own_ns));
            if (due <= w->blocked_ns) {
                w->stats.requests_waited++;
                histogram_record(w->stats.conn_wait, lag_us);
            }
        }
        plan_advance(&w->plan);
    }
    /* A pass that leaves a connection free ends the hold; one that sends the backlog's next
     * round and takes them all again continues it (its reading and sending are that round,
     * and a long backlog adds no marks per round that would push its start out of the
     * ring). */
    if (w->nready > 0)
        held_end(&w->held, now_ns);
    uint64_t next = tick_ceil(w, plan_peek(&w->plan));
    if (next >= w->end_ns)
        w->wake_ns = 0;
    else if (next > now_ns)
        w->wake_ns = next;
    else
        w->wake_ns = 0; /* due, no free connection: the next completion runs a turn */
}

/* Writes what client_queue_request appended, unless a write is already in flight (its
 * completion touches c again). io->flush may close a connection, never touch another: the
 * list is stable. */
static void flush_touched(struct worker *w)
{
    for (unsigned i = 0; i < w->ntouched; i++) {
        struct client *c = w->touched[i];
        c->touched = 0;
        if (!c->wpending && c->state == CLIENT_OPEN && c->out[c->cur].len != 0)
            w->io->flush(c);
    }
    w->ntouched = 0;
}

void dispatch_turn(struct worker *w)
{
    if (w->stopping || !w->running)
        return;
    if (!w->closed_loop) {
        w->now_ns = timebase_now_ns();
        dispatch_due(w, w->now_ns);
    }
    flush_touched(w);
}

void dispatch_ready(struct client *c, uint64_t now_ns)
{
    struct worker *w = c->w;
    if (w->stopping)
        return;
    if (w->closed_loop) {
        while (client_has_room(c))
            client_queue_request(c, now_ns, now_ns);
        return;
    }
    if (now_ns > w->freed_last_ns)
        w->freed_last_ns = now_ns;
    ready_push(w, c);
}

void dispatch_count_not_sent(struct worker *w, uint64_t until)
{
    for (;;) {
        uint64_t due = tick_ceil(w, plan_peek(&w->plan));
        if (due >= until)
            break;
        if (due >= w->measure_start_ns) { /* unanswered: its latency so far at `until` */
            w->stats.requests_not_sent++;
            stats_record_unanswered(&w->stats, until - w->measure_start_ns,
                                    ns_to_us_ceil(until - due));
        }
        plan_advance(&w->plan);
    }
}
