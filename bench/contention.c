/* contention: message passing against mutex contention, without sockets. T threads run
 * the S3 store mix (80% get, 15% list of 10, 5% create) (a) directly on the store behind
 * one pthread mutex, as the async server does, and (b) as request/reply messages to a
 * store actor on its own worker, from T client actors on T workers, through the real
 * mailboxes and schedulers. Prints ops/s and p50/p99 per operation for each T, then the
 * cost of one hop (raw mailbox push+pop; an actor hop on the cross-thread path and on the
 * same-thread path; a cross-thread ping-pong). --queues compares the production mailbox
 * (Vyukov's bounded queue, whose producers never wait for each other) with the ck_ring
 * MPSC ring it replaced (a producer waits for every earlier one to publish): T producer
 * threads into one consumer, throughput and push latency. --hop-only KIND runs N hops of one kind with callgrind collecting only them
 * (bench/contention.sh turns that into instructions/hop). */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>
#include <valgrind/callgrind.h>

#include "actor/actor.h"
#include "actor/altq.h"
#include "actor/mailbox.h"
#include "actor/sched.h"
#include "common/base/histogram.h"
#include "common/store/store.h"
#include "common/base/util.h"

#define SEED_USERS 10000u
#define LIST_LIMIT 10u
#define MAX_THREADS 64u
#define HIST_MAX_NS 60000000000ull /* 60 s */

enum op_kind { OP_GET, OP_LIST, OP_CREATE, OP_COUNT };
static const char *const op_names[OP_COUNT] = {"get", "list", "create"};

struct config {
    unsigned threads[16];
    unsigned nthreads;
    double seconds;
    enum store_kind store;
    unsigned long hop_iters;
    const char *hop_only; /* NULL, or "mailbox", "remote", "local", "ckring" */
    int queues;           /* --queues: the mailbox against the ck_ring MPSC ring only */
};

/* One thread's (or client actor's) figures: a latency histogram (ns) per operation. */
struct tally {
    struct histogram *hist[OP_COUNT];
    uint64_t ops;
    uint64_t errors;
};

static void tally_init(struct tally *t)
{
    for (int k = 0; k < OP_COUNT; k++)
        t->hist[k] = histogram_new(1, HIST_MAX_NS, 3);
    t->ops = 0;
    t->errors = 0;
}

static void tally_free(struct tally *t)
{
    for (int k = 0; k < OP_COUNT; k++)
        histogram_free(t->hist[k]);
}

/* xorshift64*: the mix and the keys, per thread, no shared state. */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static enum op_kind pick_op(uint64_t *rng, uint64_t *arg)
{
    unsigned w = (unsigned)(rng_next(rng) % 100);

    if (w < 80) {
        *arg = 1 + rng_next(rng) % SEED_USERS;
        return OP_GET;
    }
    if (w < 95) {
        *arg = rng_next(rng) % (SEED_USERS - LIST_LIMIT + 1);
        return OP_LIST;
    }
    *arg = 0;
    return OP_CREATE;
}

/* A message between a client actor and the store actor (reused: one outstanding). */
struct op_msg {
    enum op_kind kind;
    uint64_t arg;
    int rc;
    unsigned count;
    struct actor *reply_to;
    struct user users[LIST_LIMIT];
};

/* Runs one operation on the store; returns 0 or a negative errno. Caller serialises. */
static int op_exec(struct store *st, struct op_msg *m, uint64_t seq)
{
    int has_more = 0;
    char name[40], email[64];
    int nl, el;

    switch (m->kind) {
    case OP_GET:
        return store_get(st, m->arg, &m->users[0]);
    case OP_LIST:
        return store_list(st, m->arg, LIST_LIMIT, m->users, &m->count, &has_more);
    default:
        nl = snprintf(name, sizeof name, "bc-%llu", (unsigned long long)seq);
        el = snprintf(email, sizeof email, "bc-%llu@example.com", (unsigned long long)seq);
        return store_create(st, name, (size_t)nl, email, (size_t)el, &m->users[0]);
    }
}

static struct store *open_store(enum store_kind kind, char *path, size_t pathlen)
{
    struct store_options so = {.kind = kind, .seed_users = SEED_USERS};
    struct store *st = NULL;
    char err[256];

    if (kind == STORE_SQLITE) {
        snprintf(path, pathlen, "/tmp/contention-%ld.db", (long)getpid());
        unlink(path);
        so.db_path = path;
    }
    if (store_open(&so, &st, err, sizeof err) != 0)
        panic("contention: store_open: %s", err);
    return st;
}

static void close_store(struct store *st, enum store_kind kind, const char *path)
{
    char side[300];

    store_close(st);
    if (kind != STORE_SQLITE)
        return;
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
}

/* ---- (a) the mutex ---------------------------------------------------------------- */

struct mutex_run {
    struct store *store;
    pthread_mutex_t lock;
    uint64_t deadline;
    atomic_uint_fast64_t seq;
};

struct mutex_thread {
    struct mutex_run *run;
    struct tally tally;
    uint64_t rng;
    pthread_t thread;
};

static void *mutex_main(void *arg)
{
    struct mutex_thread *mt = arg;
    struct mutex_run *run = mt->run;
    struct op_msg m;

    for (;;) {
        uint64_t t0 = now_ns();
        if (t0 >= run->deadline)
            break;
        m.kind = pick_op(&mt->rng, &m.arg);
        pthread_mutex_lock(&run->lock);
        int rc = op_exec(run->store, &m, atomic_fetch_add(&run->seq, 1));
        pthread_mutex_unlock(&run->lock);
        histogram_record(mt->tally.hist[m.kind], now_ns() - t0);
        mt->tally.ops++;
        if (rc != 0)
            mt->tally.errors++;
    }
    return NULL;
}

/* ---- (b) the store actor ------------------------------------------------------------ */

struct client {
    struct actor *self;
    struct actor *store;
    struct op_msg msg;
    struct tally tally;
    uint64_t rng, t0, deadline;
    atomic_uint *running;
};

struct store_state {
    struct store *store;
    uint64_t seq;
};

static struct op_msg start_msg; /* "begin": sent once to each client by the main thread */

static void store_fn(struct actor *self, void *msg)
{
    struct store_state *ss = self->state;
    struct op_msg *m = msg;

    m->rc = op_exec(ss->store, m, ss->seq++);
    if (actor_send(m->reply_to, m) != 0)
        panic("contention: client mailbox full");
}

static void client_fn(struct actor *self, void *msg)
{
    struct client *c = self->state;
    uint64_t now = now_ns();

    if (msg != &start_msg) {
        histogram_record(c->tally.hist[c->msg.kind], now - c->t0);
        c->tally.ops++;
        if (c->msg.rc != 0)
            c->tally.errors++;
    }
    if (now >= c->deadline) {
        atomic_fetch_sub(c->running, 1);
        return;
    }
    c->msg.kind = pick_op(&c->rng, &c->msg.arg);
    c->msg.reply_to = self;
    c->t0 = now;
    if (actor_send(c->store, &c->msg) != 0)
        panic("contention: store mailbox full");
}

static struct actor *new_actor(const char *name, actor_fn fn, void *state, struct sched *home)
{
    int err = 0;
    struct actor *a = actor_new(name, fn, state, home, 1024, &err);

    if (a == NULL)
        panic("contention: actor_new(%s): %d", name, err);
    return a;
}

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* ---- one T, both ways ------------------------------------------------------------------ */

struct result {
    uint64_t ops, errors;
    double seconds;
    struct tally sum;
};

static void result_add(struct result *r, const struct tally *t)
{
    for (int k = 0; k < OP_COUNT; k++)
        if (histogram_merge(r->sum.hist[k], t->hist[k]) != 0)
            panic("contention: histogram layouts differ");
    r->ops += t->ops;
    r->errors += t->errors;
}

static void run_mutex(const struct config *cfg, unsigned T, struct result *r)
{
    char path[128];
    struct mutex_run run = {.store = open_store(cfg->store, path, sizeof path)};
    struct mutex_thread *mt = xcalloc(T, sizeof *mt);
    uint64_t t0;

    pthread_mutex_init(&run.lock, NULL);
    atomic_init(&run.seq, 0);
    t0 = now_ns();
    run.deadline = t0 + (uint64_t)(cfg->seconds * 1e9);
    for (unsigned i = 0; i < T; i++) {
        mt[i].run = &run;
        mt[i].rng = 0x9E3779B97F4A7C15ull * (i + 1);
        tally_init(&mt[i].tally);
        if (pthread_create(&mt[i].thread, NULL, mutex_main, &mt[i]) != 0)
            panic("contention: pthread_create");
    }
    for (unsigned i = 0; i < T; i++)
        pthread_join(mt[i].thread, NULL);
    r->seconds = (double)(now_ns() - t0) / 1e9;
    for (unsigned i = 0; i < T; i++) {
        result_add(r, &mt[i].tally);
        tally_free(&mt[i].tally);
    }
    free(mt);
    pthread_mutex_destroy(&run.lock);
    close_store(run.store, cfg->store, path);
}

static void run_actor(const struct config *cfg, unsigned T, struct result *r)
{
    char path[128];
    struct store_state ss = {.store = open_store(cfg->store, path, sizeof path)};
    struct sched *store_sched = sched_new_thread("store");
    struct actor *store = new_actor("store", store_fn, &ss, store_sched);
    struct sched **cs = xcalloc(T, sizeof *cs);
    struct client *cl = xcalloc(T, sizeof *cl);
    atomic_uint running;
    uint64_t t0, deadline;

    atomic_init(&running, T);
    for (unsigned i = 0; i < T; i++) {
        char name[32];
        snprintf(name, sizeof name, "client-%u", i);
        cs[i] = sched_new_thread(name);
        cl[i].self = new_actor("client", client_fn, &cl[i], cs[i]);
        cl[i].store = store;
        cl[i].rng = 0x9E3779B97F4A7C15ull * (i + 1);
        cl[i].running = &running;
        tally_init(&cl[i].tally);
    }
    if (sched_start(store_sched) != 0)
        panic("contention: sched_start");
    for (unsigned i = 0; i < T; i++)
        if (sched_start(cs[i]) != 0)
            panic("contention: sched_start");
    t0 = now_ns();
    deadline = t0 + (uint64_t)(cfg->seconds * 1e9);
    for (unsigned i = 0; i < T; i++) {
        cl[i].deadline = deadline;
        if (actor_send(cl[i].self, &start_msg) != 0)
            panic("contention: start");
    }
    while (atomic_load(&running) != 0)
        sleep_ms(1);
    r->seconds = (double)(now_ns() - t0) / 1e9;
    for (unsigned i = 0; i < T; i++)
        sched_stop_and_join(cs[i]);
    sched_stop_and_join(store_sched);
    for (unsigned i = 0; i < T; i++) {
        result_add(r, &cl[i].tally);
        tally_free(&cl[i].tally);
        actor_free(cl[i].self);
        sched_free(cs[i]);
    }
    actor_free(store);
    sched_free(store_sched);
    free(cl);
    free(cs);
    close_store(ss.store, cfg->store, path);
}

static void print_result(const char *mode, unsigned T, unsigned threads, long cores,
                         const struct result *r)
{
    printf("%-6s %3u %7u %-5s %12.0f", mode, T, threads, threads > (unsigned)cores ? "yes" : "no",
           (double)r->ops / r->seconds);
    for (int k = 0; k < OP_COUNT; k++)
        printf(" %9.2f %9.2f", histogram_percentile(r->sum.hist[k], 50) / 1e3,
               histogram_percentile(r->sum.hist[k], 99) / 1e3);
    printf(" %8llu\n", (unsigned long long)r->errors);
    fflush(stdout);
}

/* ---- hops ----------------------------------------------------------------------------- */

static void nop_fn(struct actor *self, void *msg)
{
    (void)self;
    (void)msg;
}

/* Raw mailbox: push then pop on one thread, iters times. Returns ns per push+pop. */
static double hop_mailbox(unsigned long iters, int collect)
{
    struct mailbox mb;
    void *out;
    uint64_t t0, t1;

    if (mailbox_init(&mb, 1024) != 0)
        panic("contention: mailbox_init");
    if (collect) {
        CALLGRIND_ZERO_STATS;
        CALLGRIND_TOGGLE_COLLECT;
    }
    t0 = now_ns();
    for (unsigned long i = 0; i < iters; i++) {
        if (mailbox_push(&mb, &mb) != 0 || mailbox_pop(&mb, &out) != 0)
            panic("contention: mailbox hop failed");
    }
    t1 = now_ns();
    if (collect)
        CALLGRIND_TOGGLE_COLLECT;
    mailbox_destroy(&mb);
    return (double)(t1 - t0) / (double)iters;
}

/* An actor hop, one thread, uncontended: actor_send and the scheduler running the actor
 * (sched_uv_drain on a loop scheduler). local = 0: the cross-thread path (the mailbox
 * ring, the pending count, the run queue); local = 1: the loop is bound to this thread,
 * so the same-thread path (localq, the local run list). Returns ns per hop. */
static double hop_actor(unsigned long iters, int local, int collect)
{
    uv_loop_t loop;
    struct sched *s;
    struct actor *a;
    static int msg;
    uint64_t t0, t1;

    uv_loop_init(&loop);
    if (sched_new_uv(&loop, &s) != 0)
        panic("contention: sched_new_uv");
    a = new_actor("nop", nop_fn, NULL, s);
    if (local)
        sched_uv_bind(s);
    /* The first send posts the loop's wake-up (idle -> awake); the loop would clear it in
     * its async callback, which never runs here, so the timed hops below see an awake
     * scheduler: no wake-up, as on a busy loop. */
    if (actor_send(a, &msg) != 0)
        panic("contention: send");
    sched_uv_drain(s);
    if (collect) {
        CALLGRIND_ZERO_STATS;
        CALLGRIND_TOGGLE_COLLECT;
    }
    t0 = now_ns();
    for (unsigned long i = 0; i < iters; i++) {
        if ((local ? actor_send(a, &msg) : actor_send_remote(a, &msg)) != 0)
            panic("contention: send");
        sched_uv_drain(s);
    }
    t1 = now_ns();
    if (collect)
        CALLGRIND_TOGGLE_COLLECT;
    if (actor_processed(a) != iters + 1)
        panic("contention: %llu of %lu hops ran", (unsigned long long)actor_processed(a),
              iters + 1);
    sched_stop_and_join(s);
    uv_run(&loop, UV_RUN_NOWAIT);
    actor_free(a);
    sched_free(s);
    uv_loop_close(&loop);
    return (double)(t1 - t0) / (double)iters;
}

/* Ping-pong between two actors on two worker threads: ns per one-way hop, wake-ups and
 * cache-line transfers included. */
struct pp {
    struct actor *peer;
    unsigned long left;
    atomic_int *done;
};

static void pp_fn(struct actor *self, void *msg)
{
    struct pp *p = self->state;

    if (p->left == 0) {
        atomic_store(p->done, 1);
        return;
    }
    p->left--;
    if (actor_send(p->peer, msg) != 0)
        panic("contention: ping-pong send");
}

static double hop_pingpong(unsigned long iters)
{
    struct sched *s1 = sched_new_thread("ping"), *s2 = sched_new_thread("pong");
    atomic_int done;
    struct pp p1 = {.left = iters, .done = &done}, p2 = {.left = iters, .done = &done};
    struct actor *a1 = new_actor("ping", pp_fn, &p1, s1), *a2 = new_actor("pong", pp_fn, &p2, s2);
    static int ball;
    uint64_t t0, t1;

    atomic_init(&done, 0);
    p1.peer = a2;
    p2.peer = a1;
    sched_start(s1);
    sched_start(s2);
    t0 = now_ns();
    if (actor_send(a1, &ball) != 0)
        panic("contention: ping-pong start");
    while (!atomic_load(&done))
        sleep_ms(1);
    t1 = now_ns();
    sched_stop_and_join(s1);
    sched_stop_and_join(s2);
    actor_free(a1);
    actor_free(a2);
    sched_free(s1);
    sched_free(s2);
    /* 2 * iters hops, and the one that found left == 0 */
    return (double)(t1 - t0) / (double)(2 * iters + 1);
}

/* ---- the ck_ring MPSC ring the mailbox replaced (issue 16), for --queues ------------ */

/* What actor/mailbox.c was before Vyukov's queue: Concurrency Kit's ring, a
 * producer reserving a slot with a CAS on the producer head, writing it, then publishing
 * once every earlier reservation is published (spinning 32 polls, then sched_yield, as
 * the production code did). A producer preempted between reserve and publish holds up
 * every later producer of the ring: the convoy --queues measures against the mailbox.
 * It is the server's --mailbox=ring (actor/altq.c), used here as it is there. */
struct ckq {
    struct altq q;
};

static void ckq_init(struct ckq *q, unsigned size)
{
    if (altq_init(&q->q, ALTQ_RING, size) != 0)
        panic("contention: bad ck_ring size %u", size);
}

static void ckq_destroy(struct ckq *q)
{
    altq_destroy(&q->q);
}

static int ckq_push(struct ckq *q, void *msg)
{
    return altq_push(&q->q, msg);
}

static int ckq_pop(struct ckq *q, void **msg)
{
    return altq_try_pop(&q->q, msg);
}

static double hop_ckq(unsigned long iters, int collect)
{
    struct ckq q;
    void *out;
    uint64_t t0, t1;

    ckq_init(&q, 1024);
    if (collect) {
        CALLGRIND_ZERO_STATS;
        CALLGRIND_TOGGLE_COLLECT;
    }
    t0 = now_ns();
    for (unsigned long i = 0; i < iters; i++) {
        if (ckq_push(&q, &q) != 0 || ckq_pop(&q, &out) != 0)
            panic("contention: ck_ring hop failed");
    }
    t1 = now_ns();
    if (collect)
        CALLGRIND_TOGGLE_COLLECT;
    ckq_destroy(&q);
    return (double)(t1 - t0) / (double)iters;
}

/* T producers push `per` messages each into one queue drained by one consumer thread. */
struct qrun {
    int use_ck; /* 1: the ck_ring; 0: the production mailbox */
    struct mailbox mb;
    struct ckq ck;
    unsigned long per;
    atomic_uint started;
};

struct qprod {
    struct qrun *run;
    struct histogram *push_ns; /* time of each successful push (full retries excluded) */
    unsigned long full;
    pthread_t thread;
};

static void *qprod_main(void *arg)
{
    struct qprod *p = arg;
    struct qrun *run = p->run;

    atomic_fetch_add(&run->started, 1);
    for (unsigned long i = 0; i < run->per; i++) {
        for (;;) {
            uint64_t t0 = now_ns();
            int rc = run->use_ck ? ckq_push(&run->ck, p) : mailbox_push(&run->mb, p);
            if (rc == 0) {
                histogram_record(p->push_ns, now_ns() - t0);
                break;
            }
            p->full++;
            sched_yield();
        }
    }
    return NULL;
}

static void run_queues(unsigned T, int use_ck, unsigned long per, long cores)
{
    struct qrun run = {.use_ck = use_ck, .per = per};
    struct qprod *ps = xcalloc(T, sizeof *ps);
    struct histogram *all = histogram_new(1, HIST_MAX_NS, 3);
    unsigned long want = per * T, got = 0;
    void *msg;
    uint64_t t0, t1;

    atomic_init(&run.started, 0);
    if (use_ck)
        ckq_init(&run.ck, 4096);
    else if (mailbox_init(&run.mb, 4096) != 0)
        panic("contention: mailbox_init");
    t0 = now_ns();
    for (unsigned i = 0; i < T; i++) {
        ps[i].run = &run;
        ps[i].push_ns = histogram_new(1, HIST_MAX_NS, 3);
        if (pthread_create(&ps[i].thread, NULL, qprod_main, &ps[i]) != 0)
            panic("contention: pthread_create");
    }
    while (got < want) {
        int rc = use_ck ? ckq_pop(&run.ck, &msg) : mailbox_pop(&run.mb, &msg);
        if (rc == 0)
            got++;
        else
            sched_yield();
    }
    t1 = now_ns();
    unsigned long full = 0;
    for (unsigned i = 0; i < T; i++) {
        pthread_join(ps[i].thread, NULL);
        histogram_merge(all, ps[i].push_ns);
        histogram_free(ps[i].push_ns);
        full += ps[i].full;
    }
    printf("%-7s %3u %7u %-5s %12.0f %10.0f %10.0f %12.0f %10lu\n", use_ck ? "ck_ring" : "mailbox", T, T + 1,
           T + 1 > (unsigned)cores ? "yes" : "no", (double)want / ((double)(t1 - t0) / 1e9),
           (double)histogram_percentile(all, 50), (double)histogram_percentile(all, 99),
           (double)histogram_max(all), full);
    fflush(stdout);
    histogram_free(all);
    if (use_ck)
        ckq_destroy(&run.ck);
    else
        mailbox_destroy(&run.mb);
    free(ps);
}

static void compare_queues(const struct config *cfg, long cores)
{
    unsigned long per = cfg->hop_iters / 4 ? cfg->hop_iters / 4 : 1;

    printf("# queues: T producer threads x %lu messages into one consumer thread (threads = T + 1), "
           "4,096 slots; push latency in ns (one successful push; retries on full not counted)\n", per);
    printf("%-7s %3s %7s %-5s %12s %10s %10s %12s %10s\n", "queue", "T", "threads", "over", "msgs/s",
           "push_p50", "push_p99", "push_max", "full");
    for (unsigned i = 0; i < cfg->nthreads; i++)
        for (int v = 0; v < 2; v++)
            run_queues(cfg->threads[i], v, per, cores);
    printf("hop mailbox_push_pop %.1f ns\n", hop_mailbox(cfg->hop_iters, 0));
    printf("hop ck_ring_push_pop %.1f ns\n", hop_ckq(cfg->hop_iters, 0));
}

/* ---- main ------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: contention [--threads LIST] [--seconds S] [--store memory|sqlite]\n"
            "                  [--hop-iters N] [--hop-only mailbox|remote|local|ckring] [--queues]\n"
            "  --threads LIST  client thread counts T, comma-separated, 1..%u (default 1,2,4,8)\n"
            "  --seconds S     length of each run in seconds (default 1)\n"
            "  --store KIND    memory (default) or sqlite (a file in /tmp, removed after)\n"
            "  --hop-iters N   hops per hop measurement (default 2000000)\n"
            "  --hop-only KIND only N hops of that kind with callgrind collecting them\n"
            "  --queues        only the queue comparison: the production mailbox (Vyukov's\n"
            "                  queue) against the ck_ring MPSC ring it replaced, T producers\n"
            "                  x N/4 messages into one consumer; msgs/s and push latency in ns\n"
            "                  (run under valgrind --tool=callgrind --collect-atstart=no)\n"
            "Prints, per T: ops/s and p50/p99 latency in microseconds per operation for the\n"
            "mutex (T threads) and the store actor (T client workers + 1 store worker), then\n"
            "the cost of one hop in ns.\n",
            MAX_THREADS);
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
    static const struct option opts[] = {
        {"threads", required_argument, NULL, 't'}, {"seconds", required_argument, NULL, 's'},
        {"store", required_argument, NULL, 'S'},   {"hop-iters", required_argument, NULL, 'n'},
        {"hop-only", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"queues", no_argument, NULL, 'q'},
        {NULL, 0, NULL, 0}};
    int c;
    char *end;

    cfg->nthreads = 4;
    cfg->threads[0] = 1, cfg->threads[1] = 2, cfg->threads[2] = 4, cfg->threads[3] = 8;
    cfg->seconds = 1.0;
    cfg->store = STORE_MEMORY;
    cfg->hop_iters = 2000000;
    cfg->hop_only = NULL;
    cfg->queues = 0;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 't': {
            char *p = optarg;
            cfg->nthreads = 0;
            for (;;) {
                errno = 0;
                unsigned long v = strtoul(p, &end, 10);
                if (errno != 0 || end == p || v < 1 || v > MAX_THREADS ||
                    cfg->nthreads == sizeof cfg->threads / sizeof cfg->threads[0]) {
                    fprintf(stderr, "contention: --threads: expected up to 16 counts in 1..%u, "
                                    "comma-separated, got '%s'\n", MAX_THREADS, optarg);
                    return -EINVAL;
                }
                cfg->threads[cfg->nthreads++] = (unsigned)v;
                if (*end == '\0')
                    break;
                if (*end != ',') {
                    fprintf(stderr, "contention: --threads: bad separator in '%s'\n", optarg);
                    return -EINVAL;
                }
                p = end + 1;
            }
            break;
        }
        case 's':
            errno = 0;
            cfg->seconds = strtod(optarg, &end);
            if (errno != 0 || *end != '\0' || !(cfg->seconds >= 0.01 && cfg->seconds <= 3600)) {
                fprintf(stderr, "contention: --seconds: expected 0.01..3600, got '%s'\n", optarg);
                return -EINVAL;
            }
            break;
        case 'S':
            if (strcmp(optarg, "memory") == 0) {
                cfg->store = STORE_MEMORY;
            } else if (strcmp(optarg, "sqlite") == 0) {
                cfg->store = STORE_SQLITE;
            } else {
                fprintf(stderr, "contention: --store: memory or sqlite, got '%s'\n", optarg);
                return -EINVAL;
            }
            break;
        case 'n':
            errno = 0;
            cfg->hop_iters = strtoul(optarg, &end, 10);
            if (errno != 0 || *end != '\0' || end == optarg || cfg->hop_iters < 1 ||
                cfg->hop_iters > 4000000000ul) {
                fprintf(stderr, "contention: --hop-iters: expected 1..4000000000, got '%s'\n",
                        optarg);
                return -EINVAL;
            }
            break;
        case 'o':
            if (strcmp(optarg, "mailbox") != 0 && strcmp(optarg, "remote") != 0 &&
                strcmp(optarg, "local") != 0 && strcmp(optarg, "ckring") != 0) {
                fprintf(stderr, "contention: --hop-only: mailbox, remote, local or ckring, got '%s'\n",
                        optarg);
                return -EINVAL;
            }
            cfg->hop_only = optarg;
            break;
        case 'q':
            cfg->queues = 1;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            return -EINVAL;
        }
    }
    if (optind != argc) {
        fprintf(stderr, "contention: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -EINVAL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    struct config cfg;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    if (parse_args(argc, argv, &cfg) != 0)
        return 2;
    if (cfg.hop_only != NULL) {
        double ns;
        if (strcmp(cfg.hop_only, "mailbox") == 0)
            ns = hop_mailbox(cfg.hop_iters, 1);
        else if (strcmp(cfg.hop_only, "ckring") == 0)
            ns = hop_ckq(cfg.hop_iters, 1);
        else
            ns = hop_actor(cfg.hop_iters, strcmp(cfg.hop_only, "local") == 0, 1);
        printf("hop %s: %lu hops, %.1f ns/hop\n", cfg.hop_only, cfg.hop_iters, ns);
        return 0;
    }
    if (cfg.queues) {
        compare_queues(&cfg, cores);
        return 0;
    }
    printf("# contention: S3 store mix (80%% get, 15%% list of %u, 5%% create), %s store seeded "
           "with %u users, %.2f s per run, %ld online CPUs\n",
           LIST_LIMIT, cfg.store == STORE_SQLITE ? "sqlite" : "memory", SEED_USERS, cfg.seconds,
           cores);
    printf("# mutex: T threads on one pthread mutex; actor: T client workers + 1 store "
           "worker (threads = T + 1); over = more threads than online CPUs (oversubscribed)\n");
    printf("# latencies in microseconds (us), per operation, from the client's side\n");
    printf("%-6s %3s %7s %-5s %12s", "mode", "T", "threads", "over", "ops/s");
    for (int k = 0; k < OP_COUNT; k++)
        printf(" %6s_p50 %6s_p99", op_names[k], op_names[k]);
    printf(" %8s\n", "errors");
    for (unsigned i = 0; i < cfg.nthreads; i++) {
        unsigned T = cfg.threads[i];
        for (int mode = 0; mode < 2; mode++) {
            struct result r = {0};
            tally_init(&r.sum);
            if (mode == 0)
                run_mutex(&cfg, T, &r);
            else
                run_actor(&cfg, T, &r);
            print_result(mode == 0 ? "mutex" : "actor", T, mode == 0 ? T : T + 1, cores, &r);
            tally_free(&r.sum);
        }
    }
    for (unsigned i = 0; i < cfg.nthreads; i++)
        if (cfg.threads[i] + 1 > (unsigned)cores)
            printf("# T=%u: oversubscribed (%u actor threads, %u mutex threads on %ld CPUs): "
                   "figures show time-slicing, not parallel scaling\n",
                   cfg.threads[i], cfg.threads[i] + 1, cfg.threads[i], cores);
    printf("# hops (%lu each, uncontended, one thread unless said): ns per hop\n", cfg.hop_iters);
    printf("hop mailbox_push_pop %.1f ns\n", hop_mailbox(cfg.hop_iters, 0));
    printf("hop actor_remote_path %.1f ns\n", hop_actor(cfg.hop_iters, 0, 0));
    printf("hop actor_local_path %.1f ns\n", hop_actor(cfg.hop_iters, 1, 0));
    printf("hop pingpong_two_workers %.1f ns\n", hop_pingpong(cfg.hop_iters / 10));
    return 0;
}
