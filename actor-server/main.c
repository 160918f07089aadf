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
 * when any mailbox is full, the request is answered 503 + Retry-After: 1 at once.
 * The runtime's ladder (--placement, --message, --mailbox, --drain, --spin) changes one
 * of these choices each (ARCHITECTURE.md "Actor topology"); the defaults are the above. */
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
    bool spread;         /* --placement=spread: workers[k] runs actor kind k alone */
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

/* --placement=spread: one scheduler thread per actor kind, in this order (thread names). */
enum { KIND_ROUTER, KIND_REQUEST_ID, KIND_AUTH, KIND_LOGGER, KIND_STORE, KIND_COUNT };
static const char *const kind_names[KIND_COUNT] = {"router", "request_id", "auth", "logger",
                                                   "store"};

/* --message: how a request travels between actors (set once by arch_init, before any
 * loop runs; read-only afterwards). pointer: the request itself (no msg_ops, the inline
 * same-thread path). malloc: a heap envelope per hop, allocated by the sender and freed
 * by the receiver. copy: a deep copy per hop (isolated heaps): the loop's request stays
 * with its connection, each hop clones the message and frees the sender's clone, and the
 * loop's inbox copies the last clone back into the loop's request. The tick sentinel is
 * a signal, not a request: in copy mode it travels as itself. */
static unsigned message_mode;

struct envelope {
    void *msg;
};

/* A clone and the loop's request it came from. */
struct msg_copy {
    struct request *orig;
    struct request req;
};

static void *envelope_wrap(void *msg)
{
    struct envelope *e = xmalloc(sizeof *e);
    e->msg = msg;
    return e;
}

static void envelope_unsent(void *wrapped)
{
    free(wrapped);
}

static struct msg_copy *copy_of(struct request *clone)
{
    return (struct msg_copy *)(void *)((char *)clone - offsetof(struct msg_copy, req));
}

static void copy_free(struct msg_copy *mc)
{
    request_clone_release(&mc->req);
    free(mc);
}

static struct request *copy_new(struct request *orig, const struct request *src)
{
    struct msg_copy *mc = xmalloc(sizeof *mc);
    mc->orig = orig;
    request_clone_into(&mc->req, src);
    return &mc->req;
}

/* The entry hop (loop -> router): the first clone; the loop's request stays put. */
static void *copy_wrap_entry(void *msg)
{
    return copy_new(msg, msg);
}

/* Any other hop: a clone of the sender's clone (which `copy_sent` frees). */
static void *copy_wrap(void *msg)
{
    return msg == &tick_msg ? msg : copy_new(copy_of(msg)->orig, msg);
}

static void copy_sent(void *msg)
{
    if (msg != &tick_msg)
        copy_free(copy_of(msg));
}

static void copy_unsent(void *wrapped)
{
    if (wrapped != &tick_msg)
        copy_free(copy_of(wrapped));
}

static const struct actor_msg_ops envelope_ops = {envelope_wrap, NULL, envelope_unsent};
static const struct actor_msg_ops copy_entry_ops = {copy_wrap_entry, NULL, copy_unsent};
static const struct actor_msg_ops copy_ops = {copy_wrap, copy_sent, copy_unsent};

/* What a behaviour handles, from what arrived: the envelope's content (freed here), the
 * clone itself, or (at a loop's inbox, to_loop) the loop's request with the clone's
 * contents copied back (the clone freed). */
static void *msg_open(void *msg, bool to_loop)
{
    if (message_mode == OPTIONS_MESSAGE_MALLOC) {
        struct envelope *e = msg;
        void *m = e->msg;
        free(e);
        return m;
    }
    if (!to_loop || msg == &tick_msg)
        return msg;
    struct msg_copy *mc = copy_of(msg);
    struct request *orig = mc->orig;
    request_copy_into(orig, &mc->req);
    copy_free(mc);
    return orig;
}

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

/* The behaviours for --message=malloc|copy: open what arrived, then the behaviour. */
#define OPENED(fn, to_loop)                                                               \
    static void fn##_opened(struct actor *self, void *msg)                                \
    {                                                                                     \
        fn(self, msg_open(msg, to_loop));                                                 \
    }
OPENED(router_fn, false)
OPENED(request_id_fn, false)
OPENED(auth_fn, false)
OPENED(store_fn, false)
OPENED(store_group_fn, false)
OPENED(logger_fn, false)
OPENED(inbox_fn, true)
#undef OPENED

/* The behaviour for this --message: plain (pointer) or its opening twin. */
static actor_fn behaviour(actor_fn plain, actor_fn opened)
{
    return message_mode == OPTIONS_MESSAGE_POINTER ? plain : opened;
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

/* The ladder's --mailbox and --message for one actor (before any send to it); entry:
 * only the loops send to it (the router). 0 or a negative errno (printed). */
static int ladder_apply(struct actor *a, const struct options *opt, bool entry)
{
    static const enum actor_mailbox_kind kinds[OPTIONS_MAILBOX_COUNT] = {
        [OPTIONS_MAILBOX_VYUKOV] = ACTOR_MAILBOX_VYUKOV,
        [OPTIONS_MAILBOX_RING] = ACTOR_MAILBOX_RING,
        [OPTIONS_MAILBOX_MUTEX] = ACTOR_MAILBOX_MUTEX,
    };
    int rc = actor_set_mailbox(a, kinds[opt->mailbox]);
    if (rc < 0) {
        fprintf(stderr, "actor-server: the %s actor's mailbox: %s\n", a->name, strerror(-rc));
        return rc;
    }
    if (opt->message == OPTIONS_MESSAGE_MALLOC)
        actor_set_route(a, &envelope_ops, false);
    else if (opt->message == OPTIONS_MESSAGE_COPY)
        actor_set_route(a, entry ? &copy_entry_ops : &copy_ops, false);
    return 0;
}

/* The scheduler of set i's actor of kind k. */
static struct sched *home_of(const struct actor_state *st, unsigned i, unsigned k)
{
    if (st->spread)
        return st->workers[k];
    if (k == KIND_STORE) /* one store actor: loop 0's or worker 0's */
        return st->nworkers ? st->workers[0] : st->loops[0].sched;
    return st->nworkers ? st->workers[i] : st->loops[i].sched;
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

/* The runtime's counts: every scheduler's, summed (metrics_render's runtime hook). */
static void runtime_counts(struct runtime_counts *out, void *arg)
{
    struct actor_state *st = arg;
    struct sched_counts sum = {0};
    for (unsigned i = 0; i < st->nloops; i++)
        sched_counts_add(st->loops[i].sched, &sum);
    for (unsigned w = 0; w < st->nworkers; w++)
        sched_counts_add(st->workers[w], &sum);
    out->messages += sum.messages;
    out->cross_thread += sum.cross_thread;
    out->wakeups += sum.wakeups;
}

/* The actor families, each family's samples together (Prometheus text format), after
 * the runtime's design choices (the ladder flags) as an info metric. */
static void metrics_extra(struct buf *out, void *arg)
{
    struct actor_state *st = arg;
    const struct options *opt = &st->ctx->opt;
    buf_printf(out,
               "# HELP actor_runtime_info The actor runtime's design choices (the ladder "
               "flags).\n"
               "# TYPE actor_runtime_info gauge\n"
               "actor_runtime_info{placement=\"%s\",message=\"%s\",mailbox=\"%s\","
               "drain=\"%u\",spin=\"%u\",workers=\"%u\"} 1\n",
               options_placement_names[opt->placement], options_message_names[opt->message],
               options_mailbox_names[opt->mailbox], opt->drain, opt->spin, st->nworkers);
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
        sched_set_batch(al->sched, ctx->opt.drain);
        if ((rc = new_actor(&al->inbox, "inbox", behaviour(inbox_fn, inbox_fn_opened), al,
                            al->sched, INBOX_RING)) < 0 ||
            (rc = ladder_apply(al->inbox, &ctx->opt, false)) < 0)
            return rc;
    }
    for (unsigned w = 0; w < st->nworkers; w++) {
        char name[32];
        if (st->spread)
            snprintf(name, sizeof name, "%s", kind_names[w]); /* <= 15 bytes */
        else
            snprintf(name, sizeof name, "actor-%u", w % 100000u); /* <= 15 bytes */
        st->workers[w] = sched_new_thread(name);
        sched_set_batch(st->workers[w], ctx->opt.drain);
        sched_set_spin(st->workers[w], ctx->opt.spin);
    }
    for (unsigned i = 0; i < st->nsets; i++) {
        struct mw_set *set = &st->sets[i];
        rid_seed(&set->rid, now_ns() ^ ((uint64_t)(i + 1) << 40) ^ 0x7f4a7c15u);
        if ((rc = new_actor(&set->router, "router", behaviour(router_fn, router_fn_opened),
                            set, home_of(st, i, KIND_ROUTER), MW_RING)) < 0 ||
            (rc = ladder_apply(set->router, &ctx->opt, true)) < 0 ||
            (rc = new_actor(&set->request_id, "request_id",
                            behaviour(request_id_fn, request_id_fn_opened), set,
                            home_of(st, i, KIND_REQUEST_ID), MW_RING)) < 0 ||
            (rc = ladder_apply(set->request_id, &ctx->opt, false)) < 0 ||
            (rc = new_actor(&set->auth, "auth", behaviour(auth_fn, auth_fn_opened), set,
                            home_of(st, i, KIND_AUTH), MW_RING)) < 0 ||
            (rc = ladder_apply(set->auth, &ctx->opt, false)) < 0 ||
            (rc = new_actor(&set->logger, "logger", behaviour(logger_fn, logger_fn_opened),
                            set, home_of(st, i, KIND_LOGGER),
                            logger_ring((st->nloops + st->nsets - 1) / st->nsets))) < 0 ||
            (rc = ladder_apply(set->logger, &ctx->opt, false)) < 0)
            return rc;
    }
    for (unsigned i = 0; i < st->nloops; i++)
        st->loops[i].set = &st->sets[i % st->nsets];
    st->store_state.ctx = ctx;
    st->store_state.group_max = ctx->opt.group_commit;
    rc = new_actor(&st->store, "store",
                   st->store_state.group_max > 1
                       ? behaviour(store_group_fn, store_group_fn_opened)
                       : behaviour(store_fn, store_fn_opened),
                   &st->store_state, home_of(st, 0, KIND_STORE), STORE_RING);
    if (rc < 0 || (rc = ladder_apply(st->store, &ctx->opt, false)) < 0)
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
    st->spread = ctx->opt.placement == OPTIONS_PLACEMENT_SPREAD;
    message_mode = ctx->opt.message;
    /* spread: one thread per kind and one set of actors that every loop sends to */
    st->nworkers = st->spread ? KIND_COUNT : (unsigned)ctx->opt.workers;
    st->nsets = st->spread ? 1 : st->nworkers ? st->nworkers : st->nloops;
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
    ctx->registry.runtime = runtime_counts;
    ctx->registry.runtime_ctx = st;
    snprintf(ctx->info, sizeof ctx->info, "placement=%s message=%s mailbox=%s drain=%u spin=%u",
             options_placement_names[ctx->opt.placement],
             options_message_names[ctx->opt.message],
             options_mailbox_names[ctx->opt.mailbox], ctx->opt.drain, ctx->opt.spin);
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
        .allow_workers = OPT_WORKERS | OPT_GROUP_COMMIT | OPT_LADDER,
        .hooks = &hooks,
        .init = arch_init,
        .fini = arch_fini,
    };
    return serve_main(argc, argv, &arch);
}
