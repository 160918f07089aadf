/* actor-server: every request is a message. The I/O loops (common/net/server.c) parse and
 * write; each parsed request travels as a message through actors and comes back to its
 * loop's inbox actor:
 *   /ping, /metrics, 404:  loop -> router -> inbox
 *   /users routes:         loop -> router -> request_id -> auth -> store -> logger -> inbox
 * (auth or validation failures skip the store). The store actor alone owns the store.
 * Topology: one set of stateless actors (router, request_id, auth, logger) per scheduler
 * — per I/O loop with --workers 0, per worker thread otherwise — and one store actor (on
 * loop 0, or worker 0), which commits each POST alone or, with --group-commit N > 1, up
 * to N in one transaction. The message is the struct request itself: no allocation per
 * hop.
 * Backpressure: a loop holds at most INFLIGHT_MAX requests in actors; beyond that, or
 * when any mailbox is full, the request is answered 503 + Retry-After: 1 at once. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actor/actor.h"
#include "common/base/atomics.h"
#include "actor/sched.h"
#include "common/app/process.h"

#define INFLIGHT_MAX 16384 /* per loop; the inbox holds twice that, so it never fills */
#define INBOX_RING 32768
#define MW_RING 16384
#define STORE_RING 32768

struct mw_set {
    struct actor *router, *request_id, *auth, *logger;
    struct actor *store;    /* the one store actor (a copy, for auth's hop) */
    const struct app *app;  /* the bearer, for auth */
    struct rid_state rid;
    struct accesslog_buf log;
};

struct actor_loop {
    struct serve_ctx *ctx;
    struct server_loop *l;
    struct sched *sched;
    struct actor *inbox;
    struct mw_set *set;
    unsigned inflight;
    uv_async_t fin_async;
    bool fin_ready; /* fin_async initialised (closed by on_fin, or by arch_unwind) */
};

/* The store actor's state: the store is ctx->store, touched only here. With
 * --group-commit N > 1, POSTs wait in `creates` until the end of the run, until N are
 * waiting, or until another operation must see them, then commit in one transaction;
 * each 201 leaves only after that commit. With N = 1 (the default) each POST is
 * committed alone, by the same call the async server makes. */
_Static_assert(OPTIONS_GROUP_COMMIT_MAX <= STORE_BATCH_MAX, "group commit above the batch cap");
struct store_actor {
    struct serve_ctx *ctx;
    unsigned group_max;
    unsigned ncreates;
    struct request *creates[STORE_BATCH_MAX];
};

struct actor_state {
    struct serve_ctx *ctx;
    unsigned nloops, nsets, nworkers;
    struct actor_loop *loops;
    struct mw_set *sets;
    struct sched **workers;
    struct actor *store;
    struct store_actor store_state;
    unsigned busy_loops; /* atomic: loops still serving during a stop */
    bool failed;         /* arch_init failed: only the loops' schedulers are left */
};

/* A sentinel message: "flush your log buffer if it is old". */
static struct request tick_msg;

/* The actor_loop of the loop this thread runs (set by loop_init): the hooks of the
 * request path find it without a call into server.c. Where one thread runs several
 * loops (server_start failed and server_join runs them in turn), it is the last one
 * initialised: the hooks then look the loop's own up. */
static _Thread_local struct actor_loop *this_loop;

/* l's actor_loop: this_loop, unless this thread runs several loops (see above). */
static inline struct actor_loop *loop_here(struct server_loop *l)
{
    struct actor_loop *al = this_loop;
    return al != NULL && al->l == l ? al : server_loop_data(l);
}

static struct actor_loop *loop_of(struct request *req)
{
    return req->user_data;
}

/* The answer to a request that found a mailbox full or its loop over the cap. */
static void __attribute__((noinline)) set_overloaded(struct request *req)
{
    response_error(&req->resp, 503, "overloaded");
    req->resp.flags |= RESP_RETRY_AFTER;
}

/* Hands req back to its loop; the inbox has room by construction (the in-flight cap).
 * Inline, like forward: a hop is a few stores on the same thread (actor_send). */
static inline __attribute__((always_inline)) void reply(struct request *req)
{
    if (actor_send(loop_of(req)->inbox, req) != 0)
        panic("actor-server: inbox full despite the in-flight cap");
}

/* The slow path of forward: answer 503 through the loop's inbox. */
static void __attribute__((noinline)) forward_failed(struct request *req)
{
    set_overloaded(req);
    reply(req);
}

/* Sends req on to the next actor, or back to its loop with a 503 when that is full. */
static inline __attribute__((always_inline)) void forward(struct actor *to, struct request *req)
{
    if (actor_send(to, req) != 0)
        forward_failed(req);
}

static void router_fn(struct actor *self, void *msg)
{
    struct request *req = msg;
    if (app_route(req) == APP_USERS)
        forward(loop_of(req)->set->request_id, req);
    else
        reply(req);
}

static void request_id_fn(struct actor *self, void *msg)
{
    struct request *req = msg;
    struct mw_set *set = self->state;
    mw_request_id(req, &set->rid);
    forward(set->auth, req);
}

static void auth_fn(struct actor *self, void *msg)
{
    struct request *req = msg;
    struct mw_set *set = self->state;
    const struct app *app = set->app;
    if (mw_auth(req, app->bearer, app->bearer_len) == 0 && app_validate(req) == APP_STORE)
        forward(set->store, req);
    else
        forward(set->logger, req);
}

static void store_commit(struct store_actor *sa)
{
    if (sa->ncreates == 0)
        return;
    app_store_create_batch(&sa->ctx->app, sa->ctx->store, sa->creates, sa->ncreates);
    for (unsigned i = 0; i < sa->ncreates; i++)
        forward(loop_of(sa->creates[i])->set->logger, sa->creates[i]);
    sa->ncreates = 0;
}

/* --group-commit 1: every operation alone, exactly the async server's store step. */
static void store_fn(struct actor *self, void *msg)
{
    struct request *req = msg;
    struct store_actor *sa = self->state;
    app_store_exec(&sa->ctx->app, sa->ctx->store, req);
    forward(loop_of(req)->set->logger, req);
}

/* --group-commit N > 1: POSTs wait for their group's COMMIT; other operations commit
 * what waits first. */
static void store_group_fn(struct actor *self, void *msg)
{
    struct request *req = msg;
    struct store_actor *sa = self->state;
    if (req->route == ROUTE_USER_CREATE) {
        sa->creates[sa->ncreates++] = req;
        if (sa->ncreates == sa->group_max)
            store_commit(sa);
        return;
    }
    if (sa->ncreates != 0)
        store_commit(sa); /* reads see every write that came before them */
    app_store_exec(&sa->ctx->app, sa->ctx->store, req);
    forward(loop_of(req)->set->logger, req);
}

static void store_batch_end(struct actor *self)
{
    store_commit(self->state);
}

static void logger_fn(struct actor *self, void *msg)
{
    struct mw_set *set = self->state;
    if (msg == &tick_msg) {
        accesslog_tick(&set->log, now_ns());
        return;
    }
    struct request *req = msg;
    accesslog_request(&set->log, req, now_ns());
    reply(req);
}

/* Runs on the loop's thread: render and hand to the connection. */
static void inbox_fn(struct actor *self, void *msg)
{
    struct actor_loop *al = self->state;
    struct request *req = msg;
    al->inflight--;
    /* a 503 from a full mailbox is an overload; one from the store's timeout is not */
    if (req->resp.status == 503 && req->store_rc != -EBUSY)
        counter_inc(&server_loop_metrics(al->l)->overload_rejections);
    app_render_body(&al->ctx->app, req);
    server_respond(al->l, req);
}

static void on_request(struct server_loop *l, struct request *req, void *arg)
{
    struct actor_loop *al = loop_here(l);
    req->user_data = al;
    /* al is NULL only on a loop whose architecture failed to start (it is stopping) */
    if (al == NULL || al->inflight >= INFLIGHT_MAX || actor_send(al->set->router, req) != 0) {
        set_overloaded(req);
        counter_inc(&server_loop_metrics(l)->overload_rejections);
        server_respond(l, req);
        return;
    }
    al->inflight++;
}

/* On the loop's thread before it serves: sends made here need no wake-up. */
static void loop_init(struct server_loop *l, void *arg)
{
    struct actor_loop *al = server_loop_data(l);
    this_loop = al;
    if (al != NULL) /* NULL: arch_init failed and undid itself; the loop only stops */
        sched_uv_bind(al->sched);
}

/* After the I/O callbacks of an iteration: run what they sent, so the replies are
 * written in this same iteration. */
static void before_flush(struct server_loop *l, void *arg)
{
    struct actor_loop *al = loop_here(l);
    if (al != NULL)
        sched_uv_drain(al->sched);
}

static void on_tick(struct server_loop *l, void *arg)
{
    struct actor_loop *al = server_loop_data(l);
    if (al != NULL)
        actor_send(al->set->logger, &tick_msg); /* skipped when full: it is busy anyway */
}

static void on_fin(uv_async_t *a)
{
    struct actor_loop *al = a->data;
    sched_stop_and_join(al->sched);
    uv_close((uv_handle_t *)a, NULL);
}

/* A loop has no connection left. Its scheduler may still run actors other loops need
 * (the store on loop 0), so schedulers stop only when every loop is done. */
static void loop_fini(struct server_loop *l, void *arg)
{
    struct serve_ctx *ctx = arg;
    struct actor_state *st = ctx->arch;
    if (st->failed) /* arch_unwind closed the fin handles already */
        return;
    if (atomics_sub_acq_rel(&st->busy_loops, 1) == 1)
        for (unsigned i = 0; i < st->nloops; i++)
            uv_async_send(&st->loops[i].fin_async);
}

/* The logger follows the store: a write is committed before the logger sees it, so its
 * mailbox must never be full (a 503 then would deny a committed write). It holds every
 * request its loops can have in flight, plus room for the tick messages. */
static unsigned logger_ring(unsigned loops_per_set)
{
    uint64_t need = (uint64_t)INFLIGHT_MAX * loops_per_set + 1024;
    unsigned ring = MW_RING;
    while (ring < need && ring < (1u << 30))
        ring <<= 1;
    return ring;
}

/* actor_new with a message: 0 and *out, or a negative errno (printed) and *out NULL. */
static int new_actor(struct actor **out, const char *name, actor_fn fn, void *state,
                     struct sched *home, unsigned ring)
{
    int err = -ENOMEM;
    *out = actor_new(name, fn, state, home, ring, &err);
    if (*out == NULL)
        fprintf(stderr, "actor-server: cannot create the %s actor: %s\n", name, strerror(-err));
    return *out != NULL ? 0 : err;
}

/* One sample of one actor: its mailbox depth (depth != 0) or its processed count. */
static void metrics_actor(struct buf *out, const struct actor *a, unsigned instance, int depth)
{
    if (depth)
        buf_printf(out, "actor_mailbox_depth{actor=\"%s\",instance=\"%u\"} %u\n", a->name,
                   instance, actor_depth(a));
    else
        buf_printf(out, "actor_messages_processed_total{actor=\"%s\",instance=\"%u\"} %llu\n",
                   a->name, instance, (unsigned long long)actor_processed(a));
}

/* The actor families, each family's samples together (Prometheus text format). */
static void metrics_extra(struct buf *out, void *arg)
{
    struct actor_state *st = arg;
    static const char *const head[2] = {
        "# HELP actor_messages_processed_total Messages an actor has handled.\n"
        "# TYPE actor_messages_processed_total counter\n",
        "# HELP actor_mailbox_depth Messages waiting in an actor's mailbox.\n"
        "# TYPE actor_mailbox_depth gauge\n",
    };
    for (int depth = 1; depth >= 0; depth--) {
        buf_append_str(out, head[depth]);
        for (unsigned i = 0; i < st->nsets; i++) {
            struct mw_set *set = &st->sets[i];
            metrics_actor(out, set->router, i, depth);
            metrics_actor(out, set->request_id, i, depth);
            metrics_actor(out, set->auth, i, depth);
            metrics_actor(out, set->logger, i, depth);
        }
        metrics_actor(out, st->store, 0, depth);
        for (unsigned i = 0; i < st->nloops; i++)
            metrics_actor(out, st->loops[i].inbox, i, depth);
    }
}

/* Frees every actor arch_init made (those it got to; the rest are NULL) and the sets'
 * log buffers. Nobody may send to them any more: worker threads joined, loops not
 * running. Main thread. */
static void actors_free(struct actor_state *st)
{
    for (unsigned i = 0; i < st->nsets; i++) {
        struct mw_set *set = &st->sets[i];
        accesslog_buf_destroy(&set->log);
        actor_free(set->router);
        actor_free(set->request_id);
        actor_free(set->auth);
        actor_free(set->logger);
    }
    actor_free(st->store);
    for (unsigned i = 0; i < st->nloops; i++)
        actor_free(st->loops[i].inbox);
}

/* Undoes a failed arch_init on the main thread, before any loop runs: the worker
 * threads that started stop, every actor and worker scheduler is freed, and the loops'
 * schedulers and fin handles are closed; those two live until arch_fini, after the
 * loops' last turn (serve_main starts and stops them) ran their close callbacks. No
 * loop keeps architecture data, so the hooks leave the loops alone. */
static void arch_unwind(struct actor_state *st)
{
    for (unsigned w = 0; w < st->nworkers; w++)
        if (st->workers[w] != NULL)
            sched_stop_and_join(st->workers[w]);
    actors_free(st);
    for (unsigned w = 0; w < st->nworkers; w++) {
        sched_free(st->workers[w]);
        st->workers[w] = NULL;
    }
    for (unsigned i = 0; i < st->nloops; i++) {
        struct actor_loop *al = &st->loops[i];
        server_loop_set_data(al->l, NULL);
        if (al->sched != NULL)
            sched_stop_and_join(al->sched); /* nothing ran: closes its async handle */
        if (al->fin_ready)
            uv_close((uv_handle_t *)&al->fin_async, NULL);
    }
    st->failed = true;
}

/* Creates the schedulers and actors; 0, or a negative errno with a message printed and
 * everything undone (arch_unwind). */
static int arch_build(struct actor_state *st)
{
    struct serve_ctx *ctx = st->ctx;
    int rc;

    /* schedulers: one per loop (its inbox, and the actors with --workers 0), plus workers */
    for (unsigned i = 0; i < st->nloops; i++) {
        struct actor_loop *al = &st->loops[i];
        /* acquire: the loop's scheduler (its async handle) */
        if ((rc = sched_new_uv(server_loop_uv(al->l), &al->sched)) < 0) {
            fprintf(stderr, "actor-server: loop %u: cannot create its scheduler: %s\n", i,
                    uv_strerror(rc));
            return rc;
        }
        /* acquire: the handle that stops that scheduler once every loop is done */
        if ((rc = uv_async_init(server_loop_uv(al->l), &al->fin_async, on_fin)) < 0) {
            fprintf(stderr, "actor-server: loop %u: cannot create its stop handle: %s\n", i,
                    uv_strerror(rc));
            return rc;
        }
        al->fin_ready = true;
        al->fin_async.data = al;
        if ((rc = new_actor(&al->inbox, "inbox", inbox_fn, al, al->sched, INBOX_RING)) < 0)
            return rc;
    }
    for (unsigned w = 0; w < st->nworkers; w++) {
        char name[32];
        snprintf(name, sizeof name, "actor-%u", w % 100000u); /* <= 15 bytes */
        st->workers[w] = sched_new_thread(name);
    }
    for (unsigned i = 0; i < st->nsets; i++) {
        struct mw_set *set = &st->sets[i];
        struct sched *home = st->nworkers ? st->workers[i] : st->loops[i].sched;
        rid_seed(&set->rid, now_ns() ^ ((uint64_t)(i + 1) << 40) ^ 0x7f4a7c15u);
        if ((rc = new_actor(&set->router, "router", router_fn, set, home, MW_RING)) < 0 ||
            (rc = new_actor(&set->request_id, "request_id", request_id_fn, set, home,
                            MW_RING)) < 0 ||
            (rc = new_actor(&set->auth, "auth", auth_fn, set, home, MW_RING)) < 0 ||
            (rc = new_actor(&set->logger, "logger", logger_fn, set, home,
                            logger_ring((st->nloops + st->nsets - 1) / st->nsets))) < 0)
            return rc;
    }
    for (unsigned i = 0; i < st->nloops; i++)
        st->loops[i].set = &st->sets[i % st->nsets];
    st->store_state.ctx = ctx;
    st->store_state.group_max = ctx->opt.group_commit;
    rc = new_actor(&st->store, "store",
                   st->store_state.group_max > 1 ? store_group_fn : store_fn, &st->store_state,
                   st->nworkers ? st->workers[0] : st->loops[0].sched, STORE_RING);
    if (rc < 0)
        return rc;
    if (st->store_state.group_max > 1)
        st->store->batch_end = store_batch_end; /* commits what the run left waiting */
    for (unsigned i = 0; i < st->nsets; i++) {
        st->sets[i].store = st->store;
        st->sets[i].app = &ctx->app;
    }
    for (unsigned i = 0; i < st->nloops; i++)
        if ((rc = sched_start(st->loops[i].sched)) < 0)
            return rc; /* uv kind: cannot fail (the loop runs it) */
    /* acquire: the worker threads */
    for (unsigned w = 0; w < st->nworkers; w++)
        if ((rc = sched_start(st->workers[w])) < 0) {
            fprintf(stderr, "actor-server: cannot start worker thread %u: %s\n", w,
                    strerror(-rc));
            return rc;
        }
    return 0;
}

static int arch_init(struct serve_ctx *ctx)
{
    struct actor_state *st = xcalloc(1, sizeof *st);
    ctx->arch = st;
    st->ctx = ctx;
    st->nloops = server_loop_count(ctx->srv);
    st->nworkers = (unsigned)ctx->opt.workers;
    st->nsets = st->nworkers ? st->nworkers : st->nloops;
    st->busy_loops = st->nloops;
    st->loops = xcalloc(st->nloops, sizeof *st->loops);
    st->sets = xcalloc(st->nsets, sizeof *st->sets);
    st->workers = xcalloc(st->nworkers ? st->nworkers : 1, sizeof *st->workers);
    for (unsigned i = 0; i < st->nloops; i++) {
        struct actor_loop *al = &st->loops[i];
        al->ctx = ctx;
        al->l = server_loop_at(ctx->srv, i);
        server_loop_set_data(al->l, al);
    }
    for (unsigned i = 0; i < st->nsets; i++)
        accesslog_buf_init(&st->sets[i].log, &ctx->log);

    int rc = arch_build(st);
    if (rc < 0) {
        arch_unwind(st);
        return rc;
    }
    ctx->registry.extra = metrics_extra;
    ctx->registry.extra_ctx = st;
    return 0;
}

/* After the loops ran to their end: the workers stop, then everything arch_init made is
 * freed (after a failed init, only the loops' schedulers were left). */
static void arch_fini(struct serve_ctx *ctx)
{
    struct actor_state *st = ctx->arch;
    if (!st->failed) {
        for (unsigned w = 0; w < st->nworkers; w++)
            sched_stop_and_join(st->workers[w]);
        actors_free(st);
    }
    for (unsigned i = 0; i < st->nloops; i++)
        sched_free(st->loops[i].sched);
    for (unsigned w = 0; w < st->nworkers; w++)
        sched_free(st->workers[w]);
    free(st->workers);
    free(st->sets);
    free(st->loops);
    free(st);
}

static const struct server_hooks hooks = {
    .loop_init = loop_init,
    .before_flush = before_flush,
    .loop_fini = loop_fini,
    .on_request = on_request,
    .on_tick = on_tick,
};

int main(int argc, char **argv)
{
    static const struct serve_arch arch = {
        .prog = "actor-server",
        .allow_workers = OPT_WORKERS | OPT_GROUP_COMMIT,
        .hooks = &hooks,
        .init = arch_init,
        .fini = arch_fini,
    };
    return serve_main(argc, argv, &arch);
}
