/* test_actor_topology: the actor server's topology on the runtime alone, with real
 * parallelism: 4 libuv loops on 4 threads (as --threads 4), each keeping a window of
 * pipelined requests in flight through router -> store -> logger -> its own inbox, with
 * the stateless actors on 2 workers (as --workers 2: loop i uses set i mod 2, the store on
 * worker 0) or on the loops (--workers 0: the store on loop 0). Checks: every request
 * answered exactly once, in order per loop; the store never runs on two threads at once
 * and only on its home thread; every reply comes back on its loop's thread. A lost
 * wake-up fails at a deadline. Counts shrink under ThreadSanitizer. */
#include <errno.h>
#include <pthread.h>
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

#include "actor/actor.h"
#include "actor/sched.h"
#include "common/base/util.h"

#if defined(__SANITIZE_THREAD__)
#define PER_LOOP 4000u
#else
#define PER_LOOP 20000u
#endif
#define LOOPS 4u
#define WINDOW 16u /* in flight per loop: the server's per-connection pipeline cap */
#define DEADLINE_NS (60ull * 1000 * 1000 * 1000)

struct req {
    unsigned loop;
    unsigned seq;   /* 1-based, per loop */
    uint64_t id;    /* assigned by the store */
    unsigned hops;  /* router, store, logger each add one */
};

struct set {
    struct actor *router, *logger;
};

struct loop {
    unsigned idx;
    uv_loop_t uv;
    uv_async_t quit;
    struct sched *sched;
    struct actor *inbox;
    struct set *set;
    pthread_t thread;
    struct req reqs[WINDOW];
    unsigned sent, next_seq, received;
    unsigned bad_order, bad_thread, bad_hops;
    uint64_t last_id_seen;
};

struct topo {
    struct loop loops[LOOPS];
    struct set sets[LOOPS];
    struct sched *workers[2];
    unsigned nworkers;
    struct actor *store;
    struct sched *store_home;
    atomic_uint store_busy;  /* 1 while the store runs: two at once is a violation */
    atomic_uint store_overlap;
    atomic_uint store_wrong_thread;
    uint64_t next_id;        /* store state: touched only by the store actor */
    atomic_uint done;
};

static struct topo T;
static int start_msg;

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void send_or_die(struct actor *to, void *msg)
{
    if (actor_send(to, msg) != 0)
        panic("topology: mailbox of %s full", to->name);
}

static void router_fn(struct actor *self, void *msg)
{
    struct req *r = msg;
    r->hops++;
    send_or_die(T.store, r);
}

static void store_fn(struct actor *self, void *msg)
{
    struct req *r = msg;

    if (atomic_exchange(&T.store_busy, 1) != 0)
        atomic_fetch_add(&T.store_overlap, 1);
    if (sched_current() != T.store_home)
        atomic_fetch_add(&T.store_wrong_thread, 1);
    r->id = ++T.next_id;
    r->hops++;
    atomic_store(&T.store_busy, 0);
    send_or_die(T.loops[r->loop].set->logger, r);
}

static void logger_fn(struct actor *self, void *msg)
{
    struct req *r = msg;
    r->hops++;
    send_or_die(T.loops[r->loop].inbox, r);
}

/* Sends the next request of this loop in slot r (loop thread). */
static void loop_send(struct loop *l, struct req *r)
{
    r->loop = l->idx;
    r->seq = ++l->sent;
    r->hops = 0;
    r->id = 0;
    send_or_die(l->set->router, r);
}

static void inbox_fn(struct actor *self, void *msg)
{
    struct loop *l = self->state;

    if (msg == &start_msg) {
        for (unsigned i = 0; i < WINDOW && l->sent < PER_LOOP; i++)
            loop_send(l, &l->reqs[i]);
        return;
    }
    struct req *r = msg;
    if (sched_current() != l->sched)
        l->bad_thread++;
    if (r->loop != l->idx || r->seq != l->next_seq + 1)
        l->bad_order++;
    if (r->hops != 3 || r->id <= l->last_id_seen)
        l->bad_hops++; /* a store id goes up along one loop's ordered requests */
    l->last_id_seen = r->id;
    l->next_seq = r->seq;
    if (++l->received == PER_LOOP) {
        atomic_fetch_add(&T.done, 1);
        return;
    }
    if (l->sent < PER_LOOP)
        loop_send(l, r);
}

static void quit_cb(uv_async_t *h)
{
    struct loop *l = h->data;
    sched_stop_and_join(l->sched);
    uv_close((uv_handle_t *)h, NULL);
}

static void *loop_main(void *arg)
{
    struct loop *l = arg;

    sched_uv_bind(l->sched); /* sends from this thread to its actors go local */
    uv_run(&l->uv, UV_RUN_DEFAULT);
    return NULL;
}

static struct actor *mk(const char *name, actor_fn fn, void *state, struct sched *home)
{
    int err = 0;
    struct actor *a = actor_new(name, fn, state, home, 1024, &err);
    if (a == NULL)
        panic("topology: actor_new %s: %d", name, err);
    return a;
}

static void run_topology(unsigned nworkers)
{
    memset(&T, 0, sizeof T);
    T.nworkers = nworkers;
    for (unsigned w = 0; w < nworkers; w++)
        T.workers[w] = sched_new_thread(w == 0 ? "topo-w0" : "topo-w1");
    for (unsigned i = 0; i < LOOPS; i++) {
        struct loop *l = &T.loops[i];
        l->idx = i;
        assert_int_equal(uv_loop_init(&l->uv), 0);
        assert_int_equal(sched_new_uv(&l->uv, &l->sched), 0);
        assert_int_equal(uv_async_init(&l->uv, &l->quit, quit_cb), 0);
        l->quit.data = l;
        l->inbox = mk("inbox", inbox_fn, l, l->sched);
    }
    unsigned nsets = nworkers ? nworkers : LOOPS;
    for (unsigned i = 0; i < nsets; i++) {
        struct sched *home = nworkers ? T.workers[i] : T.loops[i].sched;
        T.sets[i].router = mk("router", router_fn, NULL, home);
        T.sets[i].logger = mk("logger", logger_fn, NULL, home);
    }
    for (unsigned i = 0; i < LOOPS; i++)
        T.loops[i].set = &T.sets[i % nsets];
    T.store_home = nworkers ? T.workers[0] : T.loops[0].sched;
    T.store = mk("store", store_fn, NULL, T.store_home);

    for (unsigned w = 0; w < nworkers; w++)
        assert_int_equal(sched_start(T.workers[w]), 0);
    for (unsigned i = 0; i < LOOPS; i++) {
        assert_int_equal(sched_start(T.loops[i].sched), 0);
        assert_int_equal(pthread_create(&T.loops[i].thread, NULL, loop_main, &T.loops[i]), 0);
    }
    /* Each loop starts its window when its thread runs the inbox. */
    for (unsigned i = 0; i < LOOPS; i++)
        assert_int_equal(actor_send(T.loops[i].inbox, &start_msg), 0);
    uint64_t deadline = now_ns() + DEADLINE_NS;
    while (atomic_load(&T.done) != LOOPS && now_ns() < deadline)
        sleep_ms(2);
    unsigned done = atomic_load(&T.done);
    if (done != LOOPS) {
        for (unsigned i = 0; i < LOOPS; i++)
            fprintf(stderr, "# loop %u: sent %u received %u\n", i, T.loops[i].sent,
                    T.loops[i].received);
        fail_msg("topology with %u workers: %u of %u loops finished in 60 s (lost wake-up?)",
                 nworkers, done, LOOPS);
    }
    /* Everything answered: nothing is in flight. Stop the loops, then the workers. */
    for (unsigned i = 0; i < LOOPS; i++)
        uv_async_send(&T.loops[i].quit);
    for (unsigned i = 0; i < LOOPS; i++)
        assert_int_equal(pthread_join(T.loops[i].thread, NULL), 0);
    for (unsigned w = 0; w < nworkers; w++)
        assert_int_equal(sched_stop_and_join(T.workers[w]), 0);

    for (unsigned i = 0; i < LOOPS; i++) {
        struct loop *l = &T.loops[i];
        assert_int_equal(l->received, PER_LOOP);
        assert_int_equal(l->bad_order, 0);
        assert_int_equal(l->bad_thread, 0);
        assert_int_equal(l->bad_hops, 0);
    }
    assert_int_equal(T.next_id, (uint64_t)LOOPS * PER_LOOP);
    assert_int_equal(atomic_load(&T.store_overlap), 0);
    assert_int_equal(atomic_load(&T.store_wrong_thread), 0);

    actor_free(T.store);
    for (unsigned i = 0; i < nsets; i++) {
        actor_free(T.sets[i].router);
        actor_free(T.sets[i].logger);
    }
    for (unsigned i = 0; i < LOOPS; i++) {
        actor_free(T.loops[i].inbox);
        sched_free(T.loops[i].sched);
        assert_int_equal(uv_loop_close(&T.loops[i].uv), 0);
    }
    for (unsigned w = 0; w < nworkers; w++)
        sched_free(T.workers[w]);
}

static void test_four_loops_two_workers(void **state)
{
    run_topology(2);
}

static void test_four_loops_no_workers(void **state)
{
    run_topology(0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_four_loops_two_workers),
        cmocka_unit_test(test_four_loops_no_workers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
