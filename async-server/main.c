/* async-server: every request is handled inline in the libuv callbacks of the loop
 * that read it; one shared store behind a pthread mutex. The architecture the actor
 * server is measured against: no queue, no hop, one lock around the store call (taken with a trylock first, so /metrics counts the
 * acquisitions that had to wait: store_lock_waits_total). */
#include <pthread.h>
#include <stdlib.h>

#include "common/app/process.h"

struct async_state {
    pthread_mutex_t store_lock;
};

struct async_loop {
    struct rid_state rid;
    struct accesslog_buf log;
};

/* Takes the store's lock, counting the acquisition and, when a trylock finds it held,
 * the wait (m: this loop's metrics, written by this thread only). */
static inline void store_lock(pthread_mutex_t *lock, struct metrics *m)
{
    counter_inc(&m->store_lock_acquisitions);
    if (pthread_mutex_trylock(lock) == 0)
        return;
    counter_inc(&m->store_lock_waits);
    pthread_mutex_lock(lock);
}

static void loop_init(struct server_loop *l, void *arg)
{
    struct serve_ctx *ctx = arg;
    struct async_loop *al = xcalloc(1, sizeof *al);
    rid_seed(&al->rid, now_ns() ^ ((uint64_t)server_loop_index(l) << 48) ^ 0x5bd1e995u);
    accesslog_buf_init(&al->log, &ctx->log);
    server_loop_set_data(l, al);
}

static void loop_fini(struct server_loop *l, void *arg)
{
    struct async_loop *al = server_loop_data(l);
    accesslog_buf_destroy(&al->log);
    free(al);
    server_loop_set_data(l, NULL);
}

static void on_tick(struct server_loop *l, void *arg)
{
    struct async_loop *al = server_loop_data(l);
    accesslog_tick(&al->log, now_ns());
}

static void on_request(struct server_loop *l, struct request *req, void *arg)
{
    struct serve_ctx *ctx = arg;
    struct async_state *st = ctx->arch;
    struct async_loop *al = server_loop_data(l);
    if (app_route(req) == APP_USERS) {
        mw_request_id(req, &al->rid);
        if (mw_auth(req, ctx->app.bearer, ctx->app.bearer_len) == 0 &&
            app_validate(req) == APP_STORE) {
            store_lock(&st->store_lock, server_loop_metrics(l));
            app_store_exec(&ctx->app, ctx->store, req);
            pthread_mutex_unlock(&st->store_lock);
        }
        accesslog_request(&al->log, req, now_ns());
    }
    app_render_body(&ctx->app, req);
    server_respond(l, req);
}

static struct async_state state = {.store_lock = PTHREAD_MUTEX_INITIALIZER};

static int arch_init(struct serve_ctx *ctx)
{
    ctx->arch = &state;
    return 0;
}

static const struct server_hooks hooks = {
    .loop_init = loop_init,
    .loop_fini = loop_fini,
    .on_request = on_request,
    .on_tick = on_tick,
};

int main(int argc, char **argv)
{
    static const struct serve_arch arch = {
        .prog = "async-server",
        .allow_workers = 0,
        .hooks = &hooks,
        .init = arch_init,
    };
    return serve_main(argc, argv, &arch);
}
