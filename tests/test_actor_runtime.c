/* test_actor_runtime: actors on thread and libuv schedulers: many producers into one
 * actor (exactly once, per-producer order), a full mailbox, the batch bound and run
 * queue fairness, stop/join draining, and ping-pong stress that would hang on one lost
 * wake-up (a deadline fails the test instead); a bound uv scheduler fed from an I/O
 * callback, a timer and another thread (local sends skip the wake-up; none may get
 * stuck) with batch_end once per run; same-thread sends on a thread scheduler take the
 * local half (no ring), fill at its bound, and cannot starve actors made runnable from
 * other threads. A loop's drain never waits for a sender preempted between claim and
 * publish. A thread scheduler whose thread finds no address space for its stack
 * (a lowered RLIMIT_AS) fails to start with -EAGAIN, nothing leaked, and starts later.
 * The same many-producer test through the ck_ring and mutex mailboxes (--mailbox); the
 * runtime's counts (same-thread and cross-thread sends, wake-ups; a thread without a
 * scheduler counts nothing); message ops wrap every send and undo a failed one.
 * Counts shrink under ThreadSanitizer. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include <uv.h>

#include "actor/actor.h"
#include "actor/sched.h"
#include "common/base/util.h"

/* Round trips: on an idle VM every ping-pong hop may sleep and wake (a futex or eventfd
 * round trip of 20-60 us), so keep them few enough to finish in seconds; a lost wake-up
 * still stops the ball at once and the deadline turns that into a failure. */
#if defined(__SANITIZE_THREAD__)
#define PER_PRODUCER 100000u
#define ROUND_TRIPS 25000u
#else
#define PER_PRODUCER 200000u
#define ROUND_TRIPS 50000u
#endif
#define PRODUCERS 4u
#define DEADLINE_NS (60ull * 1000 * 1000 * 1000) /* a lost wake-up fails here */

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void *msg_make(unsigned producer, unsigned seq)
{
    return (void *)(uintptr_t)(((uint64_t)producer << 32) | (uint64_t)seq);
}

/* ---- many producers into one actor ---- */

struct order_state {
    unsigned next[PRODUCERS];
    uint64_t seen;
    uint64_t bad;
    unsigned bad_id, bad_got, bad_want;
};

static void order_fn(struct actor *self, void *msg)
{
    struct order_state *st = self->state;
    uint64_t v = (uint64_t)(uintptr_t)msg;
    unsigned id = (unsigned)(v >> 32), seq = (unsigned)(v & 0xffffffffu);

    if (id >= PRODUCERS || seq != st->next[id]) {
        if (st->bad++ == 0) {
            st->bad_id = id;
            st->bad_got = seq;
            st->bad_want = id < PRODUCERS ? st->next[id] : 0;
        }
        if (id >= PRODUCERS)
            return;
    }
    st->next[id] = seq + 1;
    st->seen++;
}

struct producer {
    struct actor *to;
    unsigned id, count;
    uint64_t deadline_ns; /* gives up here: the actor stopped draining (lost wake-up) */
    uint64_t full;
    bool gave_up;
    pthread_t thread;
};

static void *producer_main(void *arg)
{
    struct producer *p = arg;

    for (unsigned seq = 1; seq <= p->count; seq++) {
        while (actor_send(p->to, msg_make(p->id, seq)) == -EAGAIN) {
            p->full++;
            if (now_ns() > p->deadline_ns) {
                p->gave_up = true;
                return NULL;
            }
            sched_yield();
        }
    }
    return NULL;
}

/* PRODUCERS threads into one actor whose cross-thread half is `kind`: exactly once, in
 * each producer's order, no lost wake-up. */
static void many_producers(enum actor_mailbox_kind kind)
{
    struct order_state st = {.seen = 0};
    struct sched *s = sched_new_thread("order");
    struct producer prod[PRODUCERS];
    uint64_t full = 0;
    unsigned gave_up = 0;
    int err = 0;
    struct actor *a = actor_new("order", order_fn, &st, s, 1024, &err);
    uint64_t start_ns = now_ns();

    assert_non_null(a);
    assert_int_equal(actor_set_mailbox(a, kind), 0);
    for (unsigned i = 0; i < PRODUCERS; i++)
        st.next[i] = 1;
    assert_int_equal(sched_start(s), 0);
    for (unsigned i = 0; i < PRODUCERS; i++) {
        prod[i] = (struct producer){
            .to = a, .id = i, .count = PER_PRODUCER, .deadline_ns = start_ns + DEADLINE_NS};
        assert_int_equal(pthread_create(&prod[i].thread, NULL, producer_main, &prod[i]), 0);
    }
    for (unsigned i = 0; i < PRODUCERS; i++) {
        assert_int_equal(pthread_join(prod[i].thread, NULL), 0);
        full += prod[i].full;
        gave_up += prod[i].gave_up;
    }
    if (gave_up != 0)
        fail_msg("%u producers found the mailbox full until the deadline: the actor ran %llu "
                 "of %u messages (lost wake-up?)", gave_up,
                 (unsigned long long)actor_processed(a), PRODUCERS * PER_PRODUCER);
    assert_int_equal(sched_stop_and_join(s), 0);
    if (st.bad != 0)
        fail_msg("%llu bad messages; first: producer %u got %u want %u",
                 (unsigned long long)st.bad, st.bad_id, st.bad_got, st.bad_want);
    for (unsigned i = 0; i < PRODUCERS; i++)
        assert_int_equal(st.next[i], PER_PRODUCER + 1);
    assert_int_equal(st.seen, (uint64_t)PRODUCERS * PER_PRODUCER);
    assert_int_equal(actor_processed(a), (uint64_t)PRODUCERS * PER_PRODUCER);
    assert_int_equal(actor_depth(a), 0);
    fprintf(stderr, "# %u x %u messages in %.2f s, %llu sends found the mailbox full, "
            "%llu runs\n", PRODUCERS, PER_PRODUCER, (double)(now_ns() - start_ns) / 1e9,
            (unsigned long long)full, (unsigned long long)actor_runs(a));
    actor_free(a);
    sched_free(s);
}

static void test_many_producers_into_one_actor(void **state)
{
    many_producers(ACTOR_MAILBOX_VYUKOV);
}

static void test_many_producers_ring_mailbox(void **state)
{
    many_producers(ACTOR_MAILBOX_RING);
}

static void test_many_producers_mutex_mailbox(void **state)
{
    many_producers(ACTOR_MAILBOX_MUTEX);
}

/* ---- the runtime's counts (actor_*_total on /metrics) ---- */

#define COUNT_MSGS 1000u

static void count_fn(struct actor *self, void *msg);

struct fanout {
    struct actor *local, *remote; /* homed on the sender's scheduler / on another one */
};

/* Forwards each message to an actor on its own scheduler and to one on another. */
static void fanout_fn(struct actor *self, void *msg)
{
    struct fanout *f = self->state;
    while (actor_send(f->local, msg) == -EAGAIN)
        sched_yield();
    while (actor_send(f->remote, msg) == -EAGAIN)
        sched_yield();
}

static void test_counts_local_remote_wakeups(void **state)
{
    struct sched *s1 = sched_new_thread("count1"), *s2 = sched_new_thread("count2");
    _Atomic uint64_t got_local = 0, got_remote = 0;
    struct fanout f;
    int err = 0;
    struct actor *a = actor_new("fan", fanout_fn, &f, s1, 2048, &err);
    f.local = actor_new("loc", count_fn, (void *)&got_local, s1, 2048, &err);
    f.remote = actor_new("rem", count_fn, (void *)&got_remote, s2, 2048, &err);
    struct sched_counts c1 = {0}, c2 = {0};

    assert_non_null(a);
    assert_non_null(f.local);
    assert_non_null(f.remote);
    assert_int_equal(sched_start(s1), 0);
    assert_int_equal(sched_start(s2), 0);
    /* s2 spins for a few hundred nanoseconds, then sleeps: the first hop to it wakes it */
    sleep_ms(200);
    /* from a thread with no scheduler: delivered, not counted */
    for (unsigned i = 0; i < COUNT_MSGS; i++)
        while (actor_send(a, msg_make(0, i)) == -EAGAIN)
            sched_yield();
    for (uint64_t t0 = now_ns(); atomic_load(&got_remote) < COUNT_MSGS ||
                                 atomic_load(&got_local) < COUNT_MSGS;)
        if (now_ns() - t0 > DEADLINE_NS)
            fail_msg("messages lost: %llu local, %llu remote",
                     (unsigned long long)atomic_load(&got_local),
                     (unsigned long long)atomic_load(&got_remote));
        else
            sleep_ms(1);
    assert_int_equal(sched_stop_and_join(s1), 0);
    assert_int_equal(sched_stop_and_join(s2), 0);
    sched_counts_add(s1, &c1);
    sched_counts_add(s2, &c2);
    /* every send made on s1's thread: COUNT_MSGS local and COUNT_MSGS to s2 */
    assert_int_equal(c1.messages, 2 * COUNT_MSGS);
    assert_int_equal(c1.cross_thread, COUNT_MSGS);
    assert_true(c1.wakeups >= 1 && c1.wakeups <= COUNT_MSGS);
    assert_int_equal(c2.messages, 0);
    assert_int_equal(c2.cross_thread, 0);
    assert_int_equal(c2.wakeups, 0);
    actor_free(a);
    actor_free(f.local);
    actor_free(f.remote);
    sched_free(s1);
    sched_free(s2);
}

/* ---- message ops (the server's --message=malloc|copy) ---- */

struct ops_log {
    unsigned wrapped, sent, unsent;
    void *last_sent;
};
static struct ops_log ops_log;

static void *ops_wrap(void *msg)
{
    ops_log.wrapped++;
    return (char *)msg + 1; /* a different pointer: what travels */
}

static void ops_sent(void *msg)
{
    ops_log.sent++;
    ops_log.last_sent = msg;
}

static void ops_unsent(void *wrapped)
{
    ops_log.unsent++;
}

static const struct actor_msg_ops test_ops = {ops_wrap, ops_sent, ops_unsent};

static void *received;
static void record_fn(struct actor *self, void *msg)
{
    received = msg;
}

static void test_msg_ops_wrap_sent_unsent(void **state)
{
    struct sched *s = sched_new_thread("ops");
    char buf[8];
    int err = 0;
    struct actor *a = actor_new("ops", record_fn, NULL, s, 4, &err); /* holds 3 */

    assert_non_null(a);
    actor_set_route(a, &test_ops, false);
    ops_log = (struct ops_log){0};
    /* not started: the mailbox fills; the fourth send fails and its wrap is undone */
    for (int i = 0; i < 3; i++)
        assert_int_equal(actor_send(a, buf), 0);
    assert_int_equal(actor_send(a, buf), -EAGAIN);
    assert_int_equal(ops_log.wrapped, 4);
    assert_int_equal(ops_log.sent, 3);
    assert_int_equal(ops_log.unsent, 1);
    assert_ptr_equal(ops_log.last_sent, buf);
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_ptr_equal(received, buf + 1); /* the wrapped message arrived */
    assert_int_equal(actor_processed(a), 3);
    actor_free(a);
    sched_free(s);
}

/* ---- full mailbox ---- */

static void count_fn(struct actor *self, void *msg)
{
    atomic_fetch_add((atomic_uint_fast64_t *)self->state, 1);
}

static void test_full_mailbox_then_drain(void **state)
{
    atomic_uint_fast64_t count = 0;
    struct sched *s = sched_new_thread("full");
    struct actor *a = actor_new("full", count_fn, &count, s, 16, NULL);
    uint64_t end_ns;

    assert_non_null(a);
    /* Not started yet: nothing drains the mailbox. */
    for (unsigned i = 1; i <= 15; i++)
        assert_int_equal(actor_send(a, msg_make(0, i)), 0);
    assert_int_equal(actor_send(a, msg_make(0, 16)), -EAGAIN);
    assert_int_equal(actor_depth(a), 15);
    assert_int_equal(sched_start(s), 0);
    end_ns = now_ns() + DEADLINE_NS;
    while (actor_processed(a) < 15 && now_ns() < end_ns)
        sleep_ms(1);
    assert_int_equal(actor_processed(a), 15);
    assert_int_equal(atomic_load(&count), 15);
    assert_int_equal(actor_send(a, msg_make(0, 16)), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(atomic_load(&count), 16);
    actor_free(a);
    sched_free(s);
}

static void test_bad_ring_size(void **state)
{
    struct sched *s = sched_new_thread("bad");
    int err = 0;

    assert_null(actor_new("bad", count_fn, NULL, s, 1000, &err));
    assert_int_equal(err, -EINVAL);
    sched_free(s);
}

/* ---- batch bound and fairness ---- */

#define BATCH_MSGS 1000u

struct batch_log {
    uint64_t last_run[2];
    unsigned in_run[2];
    unsigned max_in_run[2];
    unsigned done[2];
    unsigned other_done_at_first[2]; /* other actor's count when this one first ran */
};

struct batch_actor {
    struct batch_log *log; /* shared: both actors run on the same scheduler thread */
    unsigned idx;
};

static void batch_fn(struct actor *self, void *msg)
{
    struct batch_actor *ba = self->state;
    struct batch_log *log = ba->log;
    unsigned i = ba->idx;
    uint64_t run = actor_runs(self);

    if (log->done[i] == 0)
        log->other_done_at_first[i] = log->done[1 - i];
    if (run != log->last_run[i]) {
        log->last_run[i] = run;
        log->in_run[i] = 0;
    }
    if (++log->in_run[i] > log->max_in_run[i])
        log->max_in_run[i] = log->in_run[i];
    log->done[i]++;
}

static void test_batch_bound_and_fairness(void **state)
{
    struct batch_log log;
    struct batch_actor ba[2];
    struct actor *a[2];
    struct sched *s = sched_new_thread("batch");

    memset(&log, 0, sizeof(log));
    for (unsigned i = 0; i < 2; i++) {
        ba[i] = (struct batch_actor){.log = &log, .idx = i};
        a[i] = actor_new(i == 0 ? "a" : "b", batch_fn, &ba[i], s, 1024, NULL);
        assert_non_null(a[i]);
    }
    for (unsigned n = 1; n <= BATCH_MSGS; n++)
        for (unsigned i = 0; i < 2; i++)
            assert_int_equal(actor_send(a[i], msg_make(i, n)), 0);
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    for (unsigned i = 0; i < 2; i++) {
        assert_int_equal(log.done[i], BATCH_MSGS);
        assert_int_equal(log.max_in_run[i], SCHED_DEFAULT_BATCH);
        /* All queued up front: exactly ceil(1000 / 64) runs. */
        assert_int_equal(actor_runs(a[i]), (BATCH_MSGS + SCHED_DEFAULT_BATCH - 1) /
                                               SCHED_DEFAULT_BATCH);
    }
    /* b was queued behind a: it ran after a's first batch, not after all of a. */
    assert_int_equal(log.other_done_at_first[1], SCHED_DEFAULT_BATCH);
    for (unsigned i = 0; i < 2; i++)
        actor_free(a[i]);
    sched_free(s);
}

static void test_batch_setting(void **state)
{
    struct batch_log log;
    struct batch_actor ba = {.log = &log, .idx = 0};
    struct sched *s = sched_new_thread("batch7");
    struct actor *a = actor_new("a", batch_fn, &ba, s, 256, NULL);

    memset(&log, 0, sizeof(log));
    sched_set_batch(s, 7);
    assert_int_equal(sched_batch(s), 7);
    for (unsigned n = 1; n <= 200; n++)
        assert_int_equal(actor_send(a, msg_make(0, n)), 0);
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(log.done[0], 200);
    assert_int_equal(log.max_in_run[0], 7);
    assert_int_equal(actor_runs(a), (200 + 6) / 7);
    actor_free(a);
    sched_free(s);
}

/* ---- stop/join drains ---- */

struct relay {
    struct actor *next; /* NULL: count only */
    uint64_t count;
};

static void relay_fn(struct actor *self, void *msg)
{
    struct relay *r = self->state;

    r->count++;
    /* A little work so the queue is still full when stop is called. */
    for (volatile int i = 0; i < 200; i++)
        ;
    if (r->next != NULL && actor_send(r->next, msg) != 0)
        panic("relay: next mailbox full");
}

static void test_stop_join_drains_thread(void **state)
{
    struct relay last = {.next = NULL}, first;
    struct sched *s = sched_new_thread("drain");
    struct actor *b = actor_new("b", relay_fn, &last, s, 1024, NULL);
    struct actor *a;

    first = (struct relay){.next = b};
    a = actor_new("a", relay_fn, &first, s, 1024, NULL);
    assert_int_equal(sched_start(s), 0);
    for (unsigned n = 1; n <= 1000; n++)
        assert_int_equal(actor_send(a, msg_make(0, n)), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    /* Everything queued before the stop ran, and so did what it sent on s. */
    assert_int_equal(first.count, 1000);
    assert_int_equal(last.count, 1000);
    assert_int_equal(actor_depth(a), 0);
    assert_int_equal(actor_depth(b), 0);
    actor_free(a);
    actor_free(b);
    sched_free(s);
}

static void test_stop_join_drains_uv(void **state)
{
    uv_loop_t loop;
    struct relay last = {.next = NULL}, first;
    struct sched *s;
    struct actor *a, *b;

    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sched_new_uv(&loop, &s), 0);
    b = actor_new("b", relay_fn, &last, s, 512, NULL);
    first = (struct relay){.next = b};
    a = actor_new("a", relay_fn, &first, s, 512, NULL);
    assert_int_equal(sched_start(s), 0);
    for (unsigned n = 1; n <= 500; n++)
        assert_int_equal(actor_send(a, msg_make(0, n)), 0);
    /* The loop never ran: the stop drains inline. */
    assert_int_equal(first.count, 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(first.count, 500);
    assert_int_equal(last.count, 500);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0); /* runs the close callback */
    actor_free(a);
    actor_free(b);
    sched_free(s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- a sender preempted between claim and publish ---- */

/* The second half of a send whose first half (the claim of `pos`) the test made: after
 * delay_ms, the message store, the publishing release store, and the pending count, as
 * actor_send_remote makes them. */
struct late_sender {
    struct actor *to;
    size_t pos;
    void *msg;
    unsigned delay_ms;
};

static void *late_sender_main(void *arg)
{
    struct late_sender *ls = arg;
    struct mailbox *mb = &ls->to->mailbox;

    sleep_ms(ls->delay_ms);
    mb->cells[ls->pos & mb->mask].msg = ls->msg;
    atomic_store_explicit(&mb->cells[ls->pos & mb->mask].seq, ls->pos + 1,
                          memory_order_release);
    if (atomics_add_acq_rel(&ls->to->pending, 1) == 0)
        sched_ready(ls->to->home, ls->to);
    return NULL;
}

/* An I/O loop's scheduler never waits for a sender preempted between claiming its slot
 * and publishing it: the drain stops at the unpublished message and asks the loop for
 * another turn, so the loop keeps serving its sockets; once the sender publishes, both
 * messages run, in order. (The old pop spun and sched_yield'ed inside the drain, so the
 * loop stood still for as long as the sender was off its CPU: 300 ms here.) */
static void test_uv_drain_never_waits_for_a_sender(void **state)
{
    uv_loop_t loop;
    struct sched *s;
    struct order_state st = {.next = {1}};
    struct late_sender ls;
    pthread_t late;

    assert_int_equal(uv_loop_init(&loop), 0);
    assert_int_equal(sched_new_uv(&loop, &s), 0);
    struct actor *a = actor_new("a", order_fn, &st, s, 64, NULL);
    assert_non_null(a);
    assert_int_equal(sched_start(s), 0);
    /* sender 1 claims slot 0 and is preempted; sender 2's message lands behind it */
    ls = (struct late_sender){.to = a, .pos = atomic_fetch_add(&a->mailbox.tail, 1),
                              .msg = msg_make(0, 1), .delay_ms = 300};
    assert_int_equal(actor_send_remote(a, msg_make(0, 2)), 0);
    assert_int_equal(pthread_create(&late, NULL, late_sender_main, &ls), 0);

    uint64_t t0 = now_ns();
    sched_uv_drain(s);
    for (int i = 0; i < 10; i++)
        uv_run(&loop, UV_RUN_NOWAIT); /* the loop's turns go on meanwhile */
    uint64_t ms = (now_ns() - t0) / 1000000u;
    if (ms >= 100)
        fail_msg("the loop waited %llu ms for a sender that had not published",
                 (unsigned long long)ms);
    assert_int_equal(st.seen, 0); /* message 2 waits behind message 1: FIFO */

    assert_int_equal(pthread_join(late, NULL), 0);
    for (int i = 0; i < 1000 && st.seen < 2; i++) {
        uv_run(&loop, UV_RUN_NOWAIT);
        sleep_ms(1);
    }
    assert_int_equal(st.seen, 2);
    assert_int_equal(st.bad, 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
    actor_free(a);
    sched_free(s);
    assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- ping-pong: each side waits for the other, so a lost wake-up hangs ---- */

struct ball {
    uint64_t trips;
};

struct pong_side {
    struct actor *peer;
    uint64_t target;       /* the side that counts: stop here */
    atomic_uint_fast64_t *finished; /* balls that reached target */
    uint64_t hits;
};

static void pong_fn(struct actor *self, void *msg)
{
    struct pong_side *side = self->state;
    struct ball *b = msg;

    side->hits++;
    if (side->target != 0 && ++b->trips >= side->target) {
        atomic_fetch_add(side->finished, 1);
        return;
    }
    if (actor_send(side->peer, b) != 0)
        panic("pong: peer mailbox full");
}

struct uv_side {
    uv_loop_t loop;
    uv_async_t quit;
    struct sched *sched;
    pthread_t thread;
};

static void uv_quit_cb(uv_async_t *handle)
{
    struct uv_side *u = handle->data;

    sched_stop_and_join(u->sched);
    uv_close((uv_handle_t *)handle, NULL);
}

static void *uv_side_main(void *arg)
{
    struct uv_side *u = arg;

    uv_run(&u->loop, UV_RUN_DEFAULT);
    return NULL;
}

/* Plays `balls` balls between a thread scheduler and either another thread scheduler
 * or a libuv loop's scheduler, `trips` round trips each. */
static void pingpong(unsigned balls, uint64_t trips, bool with_uv)
{
    atomic_uint_fast64_t finished = 0;
    struct pong_side ping = {.target = trips, .finished = &finished};
    struct pong_side pong = {.target = 0, .finished = &finished};
    struct ball ball[4];
    struct sched *s1 = sched_new_thread("ping"), *s2 = NULL;
    struct uv_side u;
    struct actor *a, *b;
    uint64_t start_ns = now_ns(), end_ns = start_ns + DEADLINE_NS;

    assert_true(balls <= 4);
    if (with_uv) {
        assert_int_equal(uv_loop_init(&u.loop), 0);
        assert_int_equal(uv_async_init(&u.loop, &u.quit, uv_quit_cb), 0);
        u.quit.data = &u;
        assert_int_equal(sched_new_uv(&u.loop, &u.sched), 0);
    } else {
        s2 = sched_new_thread("pong");
    }
    a = actor_new("ping", pong_fn, &ping, s1, 8, NULL);
    b = actor_new("pong", pong_fn, &pong, with_uv ? u.sched : s2, 8, NULL);
    ping.peer = b;
    pong.peer = a;
    assert_int_equal(sched_start(s1), 0);
    if (with_uv)
        assert_int_equal(pthread_create(&u.thread, NULL, uv_side_main, &u), 0);
    else
        assert_int_equal(sched_start(s2), 0);
    for (unsigned i = 0; i < balls; i++) {
        ball[i].trips = 0;
        assert_int_equal(actor_send(b, &ball[i]), 0);
    }
    while (atomic_load(&finished) < balls && now_ns() < end_ns)
        sleep_ms(1);
    if (atomic_load(&finished) < balls)
        /* Leaves the threads parked: the process exits after the remaining tests. */
        fail_msg("ping-pong stalled after %.1f s: %u of %u balls finished, ping ran %llu "
                 "and pong %llu messages (lost wake-up?)",
                 (double)(now_ns() - start_ns) / 1e9, (unsigned)atomic_load(&finished),
                 balls, (unsigned long long)actor_processed(a),
                 (unsigned long long)actor_processed(b));
    fprintf(stderr, "# %u ball(s), %s: %llu round trips each in %.2f s\n", balls,
            with_uv ? "thread<->uv" : "thread<->thread", (unsigned long long)trips,
            (double)(now_ns() - start_ns) / 1e9);
    assert_int_equal(sched_stop_and_join(s1), 0);
    if (with_uv) {
        uv_async_send(&u.quit);
        assert_int_equal(pthread_join(u.thread, NULL), 0);
    } else {
        assert_int_equal(sched_stop_and_join(s2), 0);
    }
    assert_int_equal(actor_processed(a), balls * trips);
    assert_int_equal(actor_processed(b), balls * trips);
    assert_int_equal(ping.hits, balls * trips);
    assert_int_equal(pong.hits, balls * trips);
    for (unsigned i = 0; i < balls; i++)
        assert_int_equal(ball[i].trips, trips);
    actor_free(a);
    actor_free(b);
    sched_free(s1);
    if (with_uv) {
        sched_free(u.sched);
        assert_int_equal(uv_loop_close(&u.loop), 0);
    } else {
        sched_free(s2);
    }
}

static void test_pingpong_thread_thread_one_ball(void **state)
{
    pingpong(1, ROUND_TRIPS, false);
}

static void test_pingpong_thread_thread_three_balls(void **state)
{
    pingpong(3, ROUND_TRIPS / 2, false);
}

static void test_pingpong_thread_uv_one_ball(void **state)
{
    pingpong(1, ROUND_TRIPS, true);
}

static void test_pingpong_thread_uv_three_balls(void **state)
{
    pingpong(3, ROUND_TRIPS / 2, true);
}

/* ---- a bound uv scheduler: local sends need no wake-up, yet none may get stuck ---- */

/* Sources feeding the chain: an I/O callback (pipe read), a timer callback (outside the
 * poll phase: only the prepare drain sees its sends) and another thread (uv_async_send). */
enum { SRC_PIPE, SRC_TIMER, SRC_THREAD, SRC_COUNT };

#if defined(__SANITIZE_THREAD__)
#define BOUND_PIPE_MSGS 8000u
#define BOUND_TIMER_TICKS 100u
#define BOUND_THREAD_MSGS 20000u
#else
#define BOUND_PIPE_MSGS 30000u
#define BOUND_TIMER_TICKS 200u
#define BOUND_THREAD_MSGS 60000u
#endif
#define BOUND_PER_TICK 100u
#define BOUND_RING (1u << 17) /* holds every message at once: no send can fail */
#define BOUND_CHAIN 3u

struct link {
    struct actor *next;    /* NULL: last link, checks order */
    uint64_t count;
    unsigned in_run;       /* messages since the last batch_end */
    uint64_t batch_ends;
    uint64_t batched_msgs; /* sum of in_run over batch_ends */
    uint64_t empty_batches;
    unsigned next_seq[SRC_COUNT];
    uint64_t bad_order;
    atomic_uint_fast64_t *done; /* last link: messages that reached the end */
    atomic_uint_fast64_t *send_fail;
};

static void link_fn(struct actor *self, void *msg)
{
    struct link *k = self->state;
    uint64_t v = (uint64_t)(uintptr_t)msg;
    unsigned src = (unsigned)(v >> 32), seq = (unsigned)(v & 0xffffffffu);

    k->count++;
    k->in_run++;
    if (k->next != NULL) {
        if (actor_send(k->next, msg) != 0)
            atomic_fetch_add(k->send_fail, 1);
        return;
    }
    if (src >= SRC_COUNT || seq != k->next_seq[src])
        k->bad_order++;
    else
        k->next_seq[src]++;
    atomic_fetch_add(k->done, 1);
}

static void link_batch_end(struct actor *self)
{
    struct link *k = self->state;

    if (k->in_run == 0)
        k->empty_batches++;
    k->batch_ends++;
    k->batched_msgs += k->in_run;
    k->in_run = 0;
}

struct bound_loop {
    uv_loop_t loop;
    uv_async_t quit;
    uv_pipe_t pipe;
    uv_timer_t timer;
    uv_check_t check;      /* with_check: drains like the server's flush check */
    bool with_check;
    struct sched *sched;
    struct actor *first;
    unsigned pipe_seq, timer_ticks, timer_seq;
    atomic_uint_fast64_t *send_fail;
    atomic_bool timer_done;
    pthread_t thread;
    char readbuf[4096];
};

static void bound_send_local(struct bound_loop *b, unsigned src, unsigned seq)
{
    if (actor_send(b->first, msg_make(src, seq)) != 0)
        atomic_fetch_add(b->send_fail, 1);
}

static void bound_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    struct bound_loop *b = h->data;

    *buf = uv_buf_init(b->readbuf, sizeof(b->readbuf));
}

static void bound_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct bound_loop *b = s->data;

    if (nread < 0) {
        uv_read_stop(s);
        return;
    }
    /* One message per byte, sent from an I/O callback on the loop's thread. */
    for (ssize_t i = 0; i < nread; i++)
        bound_send_local(b, SRC_PIPE, b->pipe_seq++);
}

static void bound_timer(uv_timer_t *t)
{
    struct bound_loop *b = t->data;

    for (unsigned i = 0; i < BOUND_PER_TICK; i++)
        bound_send_local(b, SRC_TIMER, b->timer_seq++);
    if (++b->timer_ticks == BOUND_TIMER_TICKS) {
        uv_timer_stop(t);
        atomic_store(&b->timer_done, true);
    }
}

static void bound_check(uv_check_t *h)
{
    struct bound_loop *b = h->data;

    sched_uv_drain(b->sched);
}

static void bound_quit(uv_async_t *a)
{
    struct bound_loop *b = a->data;

    sched_stop_and_join(b->sched);
    uv_close((uv_handle_t *)&b->quit, NULL);
    uv_close((uv_handle_t *)&b->pipe, NULL);
    uv_close((uv_handle_t *)&b->timer, NULL);
    uv_close((uv_handle_t *)&b->check, NULL); /* initialised even when never started */
}

static void *bound_loop_main(void *arg)
{
    struct bound_loop *b = arg;

    /* On the loop's thread, before it serves (as the server's loop_init does). */
    sched_uv_bind(b->sched);
    uv_read_start((uv_stream_t *)&b->pipe, bound_alloc, bound_read);
    uv_timer_start(&b->timer, bound_timer, 1, 1);
    if (b->with_check)
        uv_check_start(&b->check, bound_check);
    uv_run(&b->loop, UV_RUN_DEFAULT);
    return NULL;
}

struct outsider {
    int fd;                /* write end of the pipe */
    struct actor *first;
    uint64_t end_ns;
    unsigned pipe_sent, thread_sent;
    bool gave_up;
};

/* Interleaves pipe bytes (read on the loop) and direct sends from this thread. */
static void *outsider_main(void *arg)
{
    struct outsider *o = arg;
    char bytes[64];

    memset(bytes, 'x', sizeof(bytes));
    while (o->pipe_sent < BOUND_PIPE_MSGS || o->thread_sent < BOUND_THREAD_MSGS) {
        if (now_ns() > o->end_ns) {
            o->gave_up = true;
            break;
        }
        if (o->pipe_sent < BOUND_PIPE_MSGS) {
            size_t n = BOUND_PIPE_MSGS - o->pipe_sent;
            ssize_t w = write(o->fd, bytes, n < sizeof(bytes) ? n : sizeof(bytes));
            if (w > 0)
                o->pipe_sent += (unsigned)w;
            else if (w < 0 && errno != EAGAIN && errno != EINTR)
                break;
        }
        for (unsigned i = 0; i < 128 && o->thread_sent < BOUND_THREAD_MSGS; i++) {
            if (actor_send(o->first, msg_make(SRC_THREAD, o->thread_sent)) != 0) {
                sched_yield();
                break;
            }
            o->thread_sent++;
        }
    }
    return NULL;
}

/* A chain of BOUND_CHAIN actors on a bound uv scheduler, fed from a pipe read, a timer
 * and another thread: every message reaches the end in per-source order, nothing stays
 * queued, and batch_end runs once per run, after that run's messages. */
static void bound_chain(bool with_check)
{
    const uint64_t total = BOUND_PIPE_MSGS + (uint64_t)BOUND_TIMER_TICKS * BOUND_PER_TICK +
                           BOUND_THREAD_MSGS;
    atomic_uint_fast64_t done = 0, send_fail = 0;
    struct link links[BOUND_CHAIN];
    struct actor *actors[BOUND_CHAIN];
    struct bound_loop b;
    struct outsider o;
    pthread_t out_thread;
    int fds[2];
    uint64_t start_ns = now_ns(), end_ns = start_ns + DEADLINE_NS;

    memset(&b, 0, sizeof(b));
    memset(links, 0, sizeof(links));
    b.with_check = with_check;
    b.send_fail = &send_fail;
    atomic_init(&b.timer_done, false);
    assert_int_equal(uv_loop_init(&b.loop), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    assert_int_equal(uv_pipe_init(&b.loop, &b.pipe, 0), 0);
    assert_int_equal(uv_pipe_open(&b.pipe, fds[0]), 0);
    b.pipe.data = &b;
    assert_int_equal(uv_timer_init(&b.loop, &b.timer), 0);
    b.timer.data = &b;
    assert_int_equal(uv_check_init(&b.loop, &b.check), 0);
    b.check.data = &b;
    assert_int_equal(uv_async_init(&b.loop, &b.quit, bound_quit), 0);
    b.quit.data = &b;
    assert_int_equal(sched_new_uv(&b.loop, &b.sched), 0);
    sched_set_batch(b.sched, 16); /* several runs per burst */
    for (int i = BOUND_CHAIN - 1; i >= 0; i--) {
        links[i].next = i == BOUND_CHAIN - 1 ? NULL : actors[i + 1];
        links[i].done = &done;
        links[i].send_fail = &send_fail;
        actors[i] = actor_new("link", link_fn, &links[i], b.sched, BOUND_RING, NULL);
        assert_non_null(actors[i]);
        actors[i]->batch_end = link_batch_end;
    }
    b.first = actors[0];
    assert_int_equal(sched_start(b.sched), 0);
    assert_int_equal(pthread_create(&b.thread, NULL, bound_loop_main, &b), 0);
    o = (struct outsider){.fd = fds[1], .first = actors[0], .end_ns = end_ns};
    assert_int_equal(pthread_create(&out_thread, NULL, outsider_main, &o), 0);

    /* The watchdog: a message stuck in a run queue nobody drains fails here. */
    while (atomic_load(&done) < total && now_ns() < end_ns)
        sleep_ms(1);
    if (atomic_load(&done) < total)
        fail_msg("bound uv chain (%s) stalled after %.1f s: %llu of %llu messages reached "
                 "the end; link counts %llu/%llu/%llu, timer ticks %u, pipe bytes read %u of "
                 "%u sent, thread sent %u (a local send without a drain?)",
                 with_check ? "check + prepare" : "prepare only",
                 (double)(now_ns() - start_ns) / 1e9, (unsigned long long)atomic_load(&done),
                 (unsigned long long)total, (unsigned long long)links[0].count,
                 (unsigned long long)links[1].count, (unsigned long long)links[2].count,
                 b.timer_ticks, b.pipe_seq, o.pipe_sent, o.thread_sent);
    assert_int_equal(pthread_join(out_thread, NULL), 0);
    assert_false(o.gave_up);
    fprintf(stderr, "# bound uv chain (%s): %llu messages through %u actors in %.2f s\n",
            with_check ? "check + prepare" : "prepare only", (unsigned long long)total,
            BOUND_CHAIN, (double)(now_ns() - start_ns) / 1e9);
    uv_async_send(&b.quit);
    assert_int_equal(pthread_join(b.thread, NULL), 0);
    close(fds[1]);

    assert_int_equal(atomic_load(&send_fail), 0);
    assert_int_equal(b.pipe_seq, BOUND_PIPE_MSGS);
    assert_int_equal(b.timer_seq, BOUND_TIMER_TICKS * BOUND_PER_TICK);
    for (unsigned i = 0; i < BOUND_CHAIN; i++) {
        assert_int_equal(links[i].count, total);
        assert_int_equal(actor_processed(actors[i]), total);
        assert_int_equal(actor_depth(actors[i]), 0);
        /* batch_end: once per run, never on an empty run, after all of its messages */
        assert_int_equal(links[i].batch_ends, actor_runs(actors[i]));
        assert_int_equal(links[i].empty_batches, 0);
        assert_int_equal(links[i].batched_msgs, total);
        assert_int_equal(links[i].in_run, 0);
    }
    assert_int_equal(links[BOUND_CHAIN - 1].bad_order, 0);
    assert_int_equal(links[BOUND_CHAIN - 1].next_seq[SRC_PIPE], BOUND_PIPE_MSGS);
    assert_int_equal(links[BOUND_CHAIN - 1].next_seq[SRC_TIMER],
                     BOUND_TIMER_TICKS * BOUND_PER_TICK);
    assert_int_equal(links[BOUND_CHAIN - 1].next_seq[SRC_THREAD], BOUND_THREAD_MSGS);
    for (unsigned i = 0; i < BOUND_CHAIN; i++)
        actor_free(actors[i]);
    sched_free(b.sched);
    assert_int_equal(uv_loop_close(&b.loop), 0);
}

static void test_bound_uv_chain_prepare_only(void **state)
{
    bound_chain(false);
}

static void test_bound_uv_chain_with_check_drain(void **state)
{
    bound_chain(true);
}

/* A send from a timer callback with nothing else to wake the loop: without the prepare
 * drain the loop would block in epoll with the message queued (no timer left, no I/O). */
struct lone_timer {
    struct actor *a;
    atomic_uint_fast64_t *send_fail;
};

static void lone_timer_cb(uv_timer_t *t)
{
    struct lone_timer *lt = t->data;

    if (actor_send(lt->a, msg_make(SRC_TIMER, 0)) != 0)
        atomic_fetch_add(lt->send_fail, 1);
}

static void *lone_loop_main(void *arg)
{
    struct bound_loop *b = arg;

    sched_uv_bind(b->sched);
    uv_timer_start(&b->timer, lone_timer_cb, 20, 0); /* one shot */
    uv_run(&b->loop, UV_RUN_DEFAULT);
    return NULL;
}

static void lone_quit(uv_async_t *a)
{
    struct bound_loop *b = a->data;

    sched_stop_and_join(b->sched);
    uv_close((uv_handle_t *)&b->quit, NULL);
    uv_close((uv_handle_t *)&b->timer, NULL);
}

static void test_bound_uv_lone_timer_send(void **state)
{
    atomic_uint_fast64_t done = 0, send_fail = 0;
    struct link last = {.done = &done, .send_fail = &send_fail};
    struct lone_timer lt = {.send_fail = &send_fail};
    struct bound_loop b;
    struct actor *a;
    uint64_t end_ns = now_ns() + 5ull * 1000 * 1000 * 1000;

    memset(&b, 0, sizeof(b));
    assert_int_equal(uv_loop_init(&b.loop), 0);
    assert_int_equal(uv_timer_init(&b.loop, &b.timer), 0);
    assert_int_equal(uv_async_init(&b.loop, &b.quit, lone_quit), 0);
    b.quit.data = &b;
    assert_int_equal(sched_new_uv(&b.loop, &b.sched), 0);
    a = actor_new("lone", link_fn, &last, b.sched, 8, NULL);
    a->batch_end = link_batch_end;
    lt.a = a;
    b.timer.data = &lt;
    assert_int_equal(pthread_create(&b.thread, NULL, lone_loop_main, &b), 0);
    while (atomic_load(&done) < 1 && now_ns() < end_ns)
        sleep_ms(1);
    if (atomic_load(&done) < 1)
        fail_msg("a send from a timer callback on the bound loop was not run in 5 s "
                 "(the loop blocked with it queued)");
    uv_async_send(&b.quit);
    assert_int_equal(pthread_join(b.thread, NULL), 0);
    assert_int_equal(atomic_load(&send_fail), 0);
    assert_int_equal(last.count, 1);
    assert_int_equal(last.batch_ends, 1);
    assert_int_equal(actor_runs(a), 1);
    actor_free(a);
    sched_free(b.sched);
    assert_int_equal(uv_loop_close(&b.loop), 0);
}

/* ---- same-thread sends on a thread scheduler ---- */

struct local_probe {
    struct sched *s;
    struct actor *next;         /* NULL: last */
    uint64_t count;
    uint64_t not_on_home;       /* runs where sched_current() was not s */
    uint64_t went_remote;       /* sends to next that landed in its ring */
    uint64_t send_fail;
    unsigned next_seq;
    uint64_t bad_order;
};

static void local_probe_fn(struct actor *self, void *msg)
{
    struct local_probe *p = self->state;
    unsigned seq = (unsigned)((uint64_t)(uintptr_t)msg & 0xffffffffu);

    p->count++;
    if (sched_current() != p->s)
        p->not_on_home++;
    if (p->next == NULL) {
        if (seq != p->next_seq)
            p->bad_order++;
        p->next_seq = seq + 1;
        return;
    }
    unsigned ring_before = mailbox_depth(&p->next->mailbox);
    if (actor_send(p->next, msg) != 0)
        p->send_fail++;
    else if (mailbox_depth(&p->next->mailbox) != ring_before)
        p->went_remote++;
}

/* main -> a (cross-thread: the ring) -> b (same thread: the local half), in order. */
static void test_thread_sched_local_sends(void **state)
{
    struct sched *s = sched_new_thread("local");
    struct local_probe pb = {.s = s, .next_seq = 1}, pa = {.s = s};
    struct actor *b = actor_new("b", local_probe_fn, &pb, s, 4096, NULL);
    struct actor *a = actor_new("a", local_probe_fn, &pa, s, 4096, NULL);

    pa.next = b;
    assert_null(sched_current()); /* the test's own thread runs no scheduler */
    assert_int_equal(sched_start(s), 0);
    for (unsigned n = 1; n <= 3000; n++) {
        while (actor_send(a, msg_make(0, n)) == -EAGAIN)
            sched_yield();
    }
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(pa.count, 3000);
    assert_int_equal(pb.count, 3000);
    assert_int_equal(pa.not_on_home + pb.not_on_home, 0);
    assert_int_equal(pa.went_remote, 0); /* every a -> b send took the local half */
    assert_int_equal(pa.send_fail, 0);
    assert_int_equal(pb.bad_order, 0);
    struct actor *both[] = {a, b};
    for (int i = 0; i < 2; i++) {
        assert_int_equal(actor_processed(both[i]), 3000);
        assert_int_equal(actor_depth(both[i]), 0);
        actor_free(both[i]);
    }
    sched_free(s);
}

/* One behaviour floods a same-thread peer: its local half takes ring_size - 1 messages,
 * then reports -EAGAIN; the accepted ones all arrive, in order. */
struct flooder {
    struct actor *to;
    unsigned sent, refused;
};

static void flooder_fn(struct actor *self, void *msg)
{
    struct flooder *f = self->state;

    for (unsigned n = 1; n <= 100; n++) {
        if (actor_send(f->to, msg_make(0, f->sent + 1)) == 0)
            f->sent++;
        else
            f->refused++;
    }
}

static void test_thread_sched_local_half_full(void **state)
{
    struct sched *s = sched_new_thread("flood");
    struct local_probe pb = {.s = s, .next_seq = 1};
    struct flooder f = {.sent = 0};
    struct actor *b = actor_new("b", local_probe_fn, &pb, s, 64, NULL);
    struct actor *a = actor_new("a", flooder_fn, &f, s, 8, NULL);

    f.to = b;
    assert_int_equal(actor_send(a, msg_make(0, 0)), 0);
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(f.sent, 63);
    assert_int_equal(f.refused, 37);
    assert_int_equal(pb.count, 63);
    assert_int_equal(pb.next_seq, 64);
    assert_int_equal(pb.bad_order, 0);
    assert_int_equal(actor_depth(b), 0);
    actor_free(a);
    actor_free(b);
    sched_free(s);
}

/* An actor that keeps sending to itself (always runnable through the local list) must
 * not starve an actor made runnable from another thread on the same scheduler. */
struct spinner {
    atomic_bool *stop;
    uint64_t laps;
};

static void spinner_fn(struct actor *self, void *msg)
{
    struct spinner *sp = self->state;

    sp->laps++;
    if (!atomic_load(sp->stop) && actor_send(self, msg) != 0)
        panic("spinner: own mailbox full");
}

static void stopper_fn(struct actor *self, void *msg)
{
    atomic_store((atomic_bool *)self->state, true);
}

static void test_thread_sched_local_cannot_starve_remote(void **state)
{
    struct sched *s = sched_new_thread("starve");
    atomic_bool stop = false;
    struct spinner sp = {.stop = &stop};
    struct actor *spin = actor_new("spin", spinner_fn, &sp, s, 8, NULL);
    struct actor *stopper = actor_new("stopper", stopper_fn, &stop, s, 8, NULL);
    uint64_t end_ns = now_ns() + DEADLINE_NS;

    assert_int_equal(actor_send(spin, msg_make(0, 1)), 0);
    assert_int_equal(sched_start(s), 0);
    while (actor_processed(spin) < 1000 && now_ns() < end_ns)
        sleep_ms(1);
    /* The spinner is busy on the local list now; this send goes through the run queue. */
    assert_int_equal(actor_send(stopper, msg_make(0, 2)), 0);
    while (!atomic_load(&stop) && now_ns() < end_ns)
        sleep_ms(1);
    if (!atomic_load(&stop))
        fail_msg("an actor made runnable from another thread did not run in %llu s while "
                 "a local sender kept its scheduler busy (%llu laps)",
                 (unsigned long long)(DEADLINE_NS / 1000000000ull),
                 (unsigned long long)sp.laps);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(actor_processed(stopper), 1);
    actor_free(spin);
    actor_free(stopper);
    sched_free(s);
}

/* ---- creation failures: -errno, nothing half-made ---- */

#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
/* Address space in use now, in bytes (/proc/self/statm's first field, in pages). */
static unsigned long long vm_size_bytes(void)
{
    unsigned long long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    assert_non_null(f);
    assert_int_equal(fscanf(f, "%llu", &pages), 1);
    fclose(f);
    return pages * (unsigned long long)sysconf(_SC_PAGESIZE);
}

/* Threads parked until released: they hold the stacks glibc cached from earlier tests'
 * threads (a new thread takes a cached stack before it maps one). */
struct parked {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    bool go;
};

static void *parked_main(void *arg)
{
    struct parked *p = arg;
    pthread_mutex_lock(&p->lock);
    while (!p->go)
        pthread_cond_wait(&p->cond, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return NULL;
}
#endif /* not under a sanitizer (test_start_thread_without_address_space) */

/* pthread_create fails (EAGAIN) when the worker's stack does not fit under RLIMIT_AS:
 * sched_start returns that as -EAGAIN, the scheduler stays stopped (stop/join is a no-op,
 * it frees), and a later start with the limit back runs it. glibc's stack cache is
 * emptied first (parked threads take cached stacks until one had to be mapped anew).
 * Skipped under sanitizers (their runtimes map memory of their own around
 * pthread_create). */
static void test_start_thread_without_address_space(void **state)
{
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip();
#else
    struct relay last = {.next = NULL};
    struct sched *s = sched_new_thread("no-stack");
    struct actor *a = actor_new("a", relay_fn, &last, s, 8, NULL);
    struct rlimit was, low;
    int rc;

    struct parked park = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false};
    pthread_t holders[64];
    unsigned nholders = 0;
    bool mapped = false;

    assert_non_null(a);
    while (!mapped && nholders < 64) {
        unsigned long long before = vm_size_bytes();
        assert_int_equal(pthread_create(&holders[nholders], NULL, parked_main, &park), 0);
        nholders++;
        mapped = vm_size_bytes() > before;
    }
    if (!mapped)
        fail_msg("glibc's stack cache not emptied by %u parked threads", nholders);
    assert_int_equal(getrlimit(RLIMIT_AS, &was), 0);
    low = was;
    low.rlim_cur = vm_size_bytes() + (1u << 20); /* 1 MiB: less than a thread stack */
    assert_int_equal(setrlimit(RLIMIT_AS, &low), 0);
    rc = sched_start(s);
    assert_int_equal(setrlimit(RLIMIT_AS, &was), 0);
    pthread_mutex_lock(&park.lock);
    park.go = true;
    pthread_cond_broadcast(&park.cond);
    pthread_mutex_unlock(&park.lock);
    for (unsigned i = 0; i < nholders; i++)
        pthread_join(holders[i], NULL);
    assert_int_equal(rc, -EAGAIN);
    assert_int_equal(sched_stop_and_join(s), 0); /* never started: nothing to join */

    /* the limit back: the same scheduler starts and runs its actor */
    assert_int_equal(actor_send(a, msg_make(0, 1)), 0);
    assert_int_equal(sched_start(s), 0);
    assert_int_equal(sched_stop_and_join(s), 0);
    assert_int_equal(last.count, 1);
    actor_free(a);
    sched_free(s);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_producers_into_one_actor),
        cmocka_unit_test(test_many_producers_ring_mailbox),
        cmocka_unit_test(test_many_producers_mutex_mailbox),
        cmocka_unit_test(test_counts_local_remote_wakeups),
        cmocka_unit_test(test_msg_ops_wrap_sent_unsent),
        cmocka_unit_test(test_full_mailbox_then_drain),
        cmocka_unit_test(test_bad_ring_size),
        cmocka_unit_test(test_uv_drain_never_waits_for_a_sender),
        cmocka_unit_test(test_batch_bound_and_fairness),
        cmocka_unit_test(test_batch_setting),
        cmocka_unit_test(test_stop_join_drains_thread),
        cmocka_unit_test(test_stop_join_drains_uv),
        cmocka_unit_test(test_pingpong_thread_thread_one_ball),
        cmocka_unit_test(test_pingpong_thread_thread_three_balls),
        cmocka_unit_test(test_pingpong_thread_uv_one_ball),
        cmocka_unit_test(test_pingpong_thread_uv_three_balls),
        cmocka_unit_test(test_bound_uv_lone_timer_send),
        cmocka_unit_test(test_bound_uv_chain_prepare_only),
        cmocka_unit_test(test_bound_uv_chain_with_check_drain),
        cmocka_unit_test(test_thread_sched_local_sends),
        cmocka_unit_test(test_thread_sched_local_half_full),
        cmocka_unit_test(test_thread_sched_local_cannot_starve_remote),
        cmocka_unit_test(test_start_thread_without_address_space),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
