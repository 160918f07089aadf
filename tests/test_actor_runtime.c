/* test_actor_runtime: actors on thread and libuv schedulers: many producers into one
 * actor (exactly once, per-producer order), a full mailbox, the batch bound and run
 * queue fairness, stop/join draining, and ping-pong stress that would hang on one lost
 * wake-up (a deadline fails the test instead). Counts shrink under ThreadSanitizer. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include <uv.h>

#include "actor-server/actor.h"
#include "actor-server/sched.h"
#include "util.h"

#if defined(__SANITIZE_THREAD__)
#define PER_PRODUCER 100000u
#define ROUND_TRIPS 100000u
#else
#define PER_PRODUCER 200000u
#define ROUND_TRIPS 200000u
#endif
#define PRODUCERS 4u
#define DEADLINE_NS (20ull * 1000 * 1000 * 1000) /* a lost wake-up fails here */

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

static void test_many_producers_into_one_actor(void **state)
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
    s = sched_new_uv(&loop);
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
        u.sched = sched_new_uv(&u.loop);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_many_producers_into_one_actor),
        cmocka_unit_test(test_full_mailbox_then_drain),
        cmocka_unit_test(test_bad_ring_size),
        cmocka_unit_test(test_batch_bound_and_fairness),
        cmocka_unit_test(test_batch_setting),
        cmocka_unit_test(test_stop_join_drains_thread),
        cmocka_unit_test(test_stop_join_drains_uv),
        cmocka_unit_test(test_pingpong_thread_thread_one_ball),
        cmocka_unit_test(test_pingpong_thread_thread_three_balls),
        cmocka_unit_test(test_pingpong_thread_uv_one_ball),
        cmocka_unit_test(test_pingpong_thread_uv_three_balls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
