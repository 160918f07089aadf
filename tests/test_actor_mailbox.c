/* test_actor_mailbox: the two halves of an actor's mailbox alone. The bounded MPSC
 * ring: size checks, full reports -EAGAIN, FIFO, and many producers against one
 * consumer thread deliver every message exactly once in per-producer order. The
 * same-thread localq: FIFO across growth and wrap-around, full at its bound, depth. A
 * producer stalled between claiming and publishing blocks no other producer. The ladder's
 * alternative mailboxes (altq: ck_ring MPSC, mutex + condvar): size checks, full at
 * ring_size - 1, FIFO across wrap-around, many producers exactly once in order, and a
 * blocking pop woken by a push.
 * Counts shrink under ThreadSanitizer. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <time.h>
#include <cmocka.h>

#include "actor/altq.h"
#include "actor/localq.h"
#include "actor/mailbox.h"

#if defined(__SANITIZE_THREAD__)
#define PER_PRODUCER 50000u
#else
#define PER_PRODUCER 200000u
#endif
#define PRODUCERS 4u

/* A message is an integer in a pointer: producer in the high half, 1-based sequence in
 * the low half, so it is never NULL and the consumer can check order. */
static void *msg_make(unsigned producer, unsigned seq)
{
    return (void *)(uintptr_t)(((uint64_t)producer << 32) | (uint64_t)seq);
}

/* ---- altq: the ring and mutex mailboxes ---- */

static const enum altq_kind altq_kinds[] = {ALTQ_RING, ALTQ_MUTEX};

static void test_altq_sizes_full_fifo(void **state)
{
    for (size_t k = 0; k < 2; k++) {
        struct altq q;
        void *msg = NULL;
        unsigned next = 1;

        assert_int_equal(altq_init(&q, altq_kinds[k], 2), -EINVAL);
        assert_int_equal(altq_init(&q, altq_kinds[k], 6), -EINVAL);
        assert_int_equal(altq_init(&q, altq_kinds[k], 8), 0);
        assert_int_equal(altq_capacity(&q), 7);
        assert_int_equal(altq_try_pop(&q, &msg), -EAGAIN);
        /* three laps of fill-to-full and drain: FIFO across the wrap */
        for (unsigned lap = 0, seq = 1; lap < 3; lap++) {
            for (unsigned i = 0; i < 7; i++)
                assert_int_equal(altq_push(&q, msg_make(0, seq++)), 0);
            assert_int_equal(altq_depth(&q), 7);
            assert_int_equal(altq_push(&q, msg_make(0, 999)), -EAGAIN);
            for (unsigned i = 0; i < 7; i++) {
                assert_int_equal(altq_try_pop(&q, &msg), 0);
                assert_ptr_equal(msg, msg_make(0, next++));
            }
            assert_int_equal(altq_depth(&q), 0);
            assert_int_equal(altq_try_pop(&q, &msg), -EAGAIN);
        }
        altq_destroy(&q);
    }
}

struct altq_producer {
    struct altq *q;
    unsigned id;
    pthread_t thread;
};

static void *altq_producer_main(void *arg)
{
    struct altq_producer *p = arg;
    for (unsigned seq = 1; seq <= PER_PRODUCER; seq++)
        while (altq_push(p->q, msg_make(p->id, seq)) == -EAGAIN)
            sched_yield();
    return NULL;
}

static void test_altq_many_producers(void **state)
{
    for (size_t k = 0; k < 2; k++) {
        struct altq q;
        struct altq_producer prod[PRODUCERS];
        unsigned next[PRODUCERS];
        void *msg;

        assert_int_equal(altq_init(&q, altq_kinds[k], 256), 0);
        for (unsigned i = 0; i < PRODUCERS; i++) {
            next[i] = 1;
            prod[i] = (struct altq_producer){.q = &q, .id = i};
            assert_int_equal(pthread_create(&prod[i].thread, NULL, altq_producer_main,
                                            &prod[i]), 0);
        }
        /* altq_pop waits (asleep on the condvar for the mutex queue) */
        for (unsigned long n = 0; n < (unsigned long)PRODUCERS * PER_PRODUCER; n++) {
            altq_pop(&q, &msg);
            uint64_t v = (uint64_t)(uintptr_t)msg;
            unsigned id = (unsigned)(v >> 32), seq = (unsigned)(v & 0xffffffffu);
            if (id >= PRODUCERS || seq != next[id])
                fail_msg("kind %zu: producer %u sent %u, want %u", k, id, seq,
                         id < PRODUCERS ? next[id] : 0);
            next[id]++;
        }
        for (unsigned i = 0; i < PRODUCERS; i++)
            assert_int_equal(pthread_join(prod[i].thread, NULL), 0);
        assert_int_equal(altq_try_pop(&q, &msg), -EAGAIN);
        altq_destroy(&q);
    }
}

static void test_init_rejects_bad_sizes(void **state)
{
    struct mailbox mb;
    unsigned bad[] = {0, 1, 3, 6, 1000, (1u << 30) + 1};

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mailbox_init(&mb, bad[i]), -EINVAL);
    assert_int_equal(mailbox_init(&mb, 2), 0);
    assert_int_equal(mailbox_capacity(&mb), 1);
    mailbox_destroy(&mb);
}

static void test_full_reports_eagain_and_fifo(void **state)
{
    struct mailbox mb;
    void *msg = NULL;

    assert_int_equal(mailbox_init(&mb, 8), 0);
    assert_int_equal(mailbox_capacity(&mb), 7);
    assert_int_equal(mailbox_pop(&mb, &msg), -EAGAIN);
    for (unsigned i = 1; i <= 7; i++)
        assert_int_equal(mailbox_push(&mb, msg_make(0, i)), 0);
    assert_int_equal(mailbox_depth(&mb), 7);
    assert_int_equal(mailbox_push(&mb, msg_make(0, 8)), -EAGAIN);
    assert_int_equal(mailbox_depth(&mb), 7);
    /* Draining one slot makes room for exactly one more. */
    assert_int_equal(mailbox_pop(&mb, &msg), 0);
    assert_ptr_equal(msg, msg_make(0, 1));
    assert_int_equal(mailbox_push(&mb, msg_make(0, 8)), 0);
    assert_int_equal(mailbox_push(&mb, msg_make(0, 9)), -EAGAIN);
    for (unsigned i = 2; i <= 8; i++) {
        assert_int_equal(mailbox_pop(&mb, &msg), 0);
        assert_ptr_equal(msg, msg_make(0, i));
    }
    assert_int_equal(mailbox_pop(&mb, &msg), -EAGAIN);
    assert_int_equal(mailbox_depth(&mb), 0);
    mailbox_destroy(&mb);
}

struct producer {
    struct mailbox *mb;
    unsigned id;
    unsigned count;
    uint64_t full; /* pushes that found the mailbox full and were retried */
    pthread_t thread;
};

static void *producer_main(void *arg)
{
    struct producer *p = arg;

    for (unsigned seq = 1; seq <= p->count; seq++) {
        while (mailbox_push(p->mb, msg_make(p->id, seq)) == -EAGAIN) {
            p->full++;
            sched_yield();
        }
    }
    return NULL;
}

static void test_many_producers_one_consumer(void **state)
{
    struct mailbox mb;
    struct producer prod[PRODUCERS];
    unsigned next[PRODUCERS];
    uint64_t total = 0, want = (uint64_t)PRODUCERS * PER_PRODUCER, bad_order = 0;
    unsigned bad_id = 0, bad_got = 0, bad_want = 0;
    void *msg;

    assert_int_equal(mailbox_init(&mb, 1024), 0);
    for (unsigned i = 0; i < PRODUCERS; i++) {
        prod[i] = (struct producer){.mb = &mb, .id = i, .count = PER_PRODUCER};
        next[i] = 1;
        assert_int_equal(pthread_create(&prod[i].thread, NULL, producer_main, &prod[i]), 0);
    }
    while (total < want) {
        if (mailbox_pop(&mb, &msg) != 0) {
            sched_yield();
            continue;
        }
        uint64_t v = (uint64_t)(uintptr_t)msg;
        unsigned id = (unsigned)(v >> 32), seq = (unsigned)(v & 0xffffffffu);
        assert_in_range(id, 0, PRODUCERS - 1);
        if (seq != next[id] && bad_order++ == 0) {
            bad_id = id;
            bad_got = seq;
            bad_want = next[id];
        }
        next[id] = seq + 1;
        total++;
    }
    for (unsigned i = 0; i < PRODUCERS; i++)
        assert_int_equal(pthread_join(prod[i].thread, NULL), 0);
    if (bad_order != 0)
        fail_msg("%llu out-of-order messages; first: producer %u got %u want %u",
                 (unsigned long long)bad_order, bad_id, bad_got, bad_want);
    for (unsigned i = 0; i < PRODUCERS; i++)
        assert_int_equal(next[i], PER_PRODUCER + 1);
    assert_int_equal(mailbox_pop(&mb, &msg), -EAGAIN);
    assert_int_equal(mailbox_depth(&mb), 0);
    mailbox_destroy(&mb);
}

/* Interleaved pushes and pops move head and tail around the array while it grows: the
 * order must survive every doubling, including one with the queue wrapped. */
/* ---- a producer stalled between claiming and publishing its slot ---- */

struct stalled {
    struct mailbox *mb;
    size_t pos;       /* the slot it claimed */
    void *msg;
    atomic_int other_pushed; /* set by the other producer once its push returned */
    int other_rc;
};

static void *other_producer(void *arg)
{
    struct stalled *st = arg;
    st->other_rc = mailbox_push(st->mb, msg_make(1, 1));
    atomic_store(&st->other_pushed, 1);
    return NULL;
}

static void *late_publisher(void *arg)
{
    struct stalled *st = arg;
    struct timespec ts = {.tv_sec = 0, .tv_nsec = 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    /* the stalled producer's two stores, as mailbox_push makes them */
    st->mb->cells[st->pos & st->mb->mask].msg = st->msg;
    atomic_store_explicit(&st->mb->cells[st->pos & st->mb->mask].seq, st->pos + 1,
                          memory_order_release);
    return NULL;
}

/* The progress guarantee (ARCHITECTURE.md, "Mailbox progress guarantee"): a producer that claimed a
 * slot and stalls before publishing it does not block another producer's push; the
 * consumer waits for the stalled message and keeps FIFO order. */
static void test_stalled_producer_blocks_no_producer(void **state)
{
    struct mailbox mb;
    struct stalled st = {.mb = &mb, .msg = msg_make(0, 1)};
    pthread_t other, late;
    void *msg = NULL;

    assert_int_equal(mailbox_init(&mb, 8), 0);
    atomic_init(&st.other_pushed, 0);
    /* A producer claims slot 0 (its CAS) and is "preempted". */
    st.pos = atomic_fetch_add(&mb.tail, 1);
    assert_int_equal(st.pos, 0);
    assert_int_equal(pthread_create(&other, NULL, other_producer, &st), 0);
    for (int i = 0; i < 5000 && !atomic_load(&st.other_pushed); i++) {
        struct timespec ts = {.tv_sec = 0, .tv_nsec = 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    if (!atomic_load(&st.other_pushed))
        fail_msg("a push waited 5 s for a producer stalled between claim and publish");
    assert_int_equal(pthread_join(other, NULL), 0);
    assert_int_equal(st.other_rc, 0);
    assert_int_equal(mailbox_depth(&mb), 2);
    /* A consumer that must not wait is told so at once and takes nothing. */
    assert_int_equal(mailbox_try_pop(&mb, &msg), -EBUSY);
    assert_int_equal(mailbox_depth(&mb), 2);
    /* The consumer waits for the stalled message (published 50 ms later), then the next. */
    assert_int_equal(pthread_create(&late, NULL, late_publisher, &st), 0);
    assert_int_equal(mailbox_pop(&mb, &msg), 0);
    assert_ptr_equal(msg, msg_make(0, 1));
    assert_int_equal(mailbox_pop(&mb, &msg), 0);
    assert_ptr_equal(msg, msg_make(1, 1));
    assert_int_equal(mailbox_pop(&mb, &msg), -EAGAIN);
    assert_int_equal(pthread_join(late, NULL), 0);
    mailbox_destroy(&mb);
}

static void test_localq_fifo_across_growth(void **state)
{
    struct localq q;
    unsigned pushed = 0, popped = 0;

    localq_init(&q, 1000);
    assert_int_equal(localq_depth(&q), 0);
    /* Three pushes per pop: the depth climbs through 16, 32, ... 1024 slots while head
     * advances, so the queued range straddles the array's end at some doublings. */
    while (pushed < 900) {
        for (int k = 0; k < 3 && pushed < 900; k++)
            assert_int_equal(localq_push(&q, msg_make(0, ++pushed)), 0);
        assert_ptr_equal(localq_pop(&q), msg_make(0, ++popped));
        assert_int_equal(localq_depth(&q), pushed - popped);
    }
    while (popped < pushed)
        assert_ptr_equal(localq_pop(&q), msg_make(0, ++popped));
    assert_int_equal(localq_depth(&q), 0);
    localq_destroy(&q);
}

static void test_localq_full_at_bound(void **state)
{
    struct localq q;

    /* A bound that is not a power of two: full at exactly 100, not at the array size. */
    localq_init(&q, 100);
    for (unsigned i = 1; i <= 100; i++)
        assert_int_equal(localq_push(&q, msg_make(1, i)), 0);
    assert_int_equal(localq_push(&q, msg_make(1, 101)), -EAGAIN);
    assert_int_equal(localq_depth(&q), 100);
    assert_ptr_equal(localq_pop(&q), msg_make(1, 1));
    assert_int_equal(localq_push(&q, msg_make(1, 101)), 0);
    assert_int_equal(localq_push(&q, msg_make(1, 102)), -EAGAIN);
    for (unsigned i = 2; i <= 101; i++)
        assert_ptr_equal(localq_pop(&q), msg_make(1, i));
    assert_int_equal(localq_depth(&q), 0);
    localq_destroy(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_rejects_bad_sizes),
        cmocka_unit_test(test_altq_sizes_full_fifo),
        cmocka_unit_test(test_altq_many_producers),
        cmocka_unit_test(test_full_reports_eagain_and_fifo),
        cmocka_unit_test(test_many_producers_one_consumer),
        cmocka_unit_test(test_stalled_producer_blocks_no_producer),
        cmocka_unit_test(test_localq_fifo_across_growth),
        cmocka_unit_test(test_localq_full_at_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
