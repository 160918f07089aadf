/* serve: process lifecycle shared by both servers; signals are taken with sigwait on
 * the main thread (blocked everywhere else), so no work happens in a signal handler. */
#include "serve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* nofile_raise: raises the soft RLIMIT_NOFILE to the hard limit (a login's soft limit is
 * often 1024, fewer descriptors than --max-conns connections need). Fills *soft (in effect
 * afterwards), *was (before) and *hard; returns 0, or -errno when the limit cannot be read
 * (then nothing is changed). A failed raise leaves the old limit in *soft. */
static int nofile_raise(rlim_t *soft, rlim_t *was, rlim_t *hard)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -errno;
    *was = *soft = rl.rlim_cur;
    *hard = rl.rlim_max;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            *soft = rl.rlim_cur;
    }
    return 0;
}

/* nofile_log: one stderr line with the open-file limit the server runs with, and what it
 * means next to --max-conns (each connection holds one descriptor). */
static void nofile_log(const char *prog, int rc, rlim_t soft, rlim_t was, rlim_t hard,
                       unsigned max_conns)
{
    if (rc < 0) {
        fprintf(stderr, "%s: open files limit unknown: %s\n", prog, strerror(-rc));
        return;
    }
    char raised[64] = "";
    if (soft != was)
        snprintf(raised, sizeof raised, ", raised from %llu", (unsigned long long)was);
    char room[160] = "";
    if (soft != RLIM_INFINITY && soft < (rlim_t)max_conns + 64)
        snprintf(room, sizeof room,
                 "; below --max-conns %u: connections past about %llu are turned away",
                 max_conns, (unsigned long long)(soft > 64 ? soft - 64 : 0));
    if (hard == RLIM_INFINITY)
        fprintf(stderr, "%s: open files limit %llu (hard unlimited%s)%s\n", prog,
                (unsigned long long)soft, raised, room);
    else
        fprintf(stderr, "%s: open files limit %llu (hard %llu%s)%s\n", prog,
                (unsigned long long)soft, (unsigned long long)hard, raised, room);
}

int serve_main(int argc, char **argv, const struct serve_arch *arch)
{
    struct serve_ctx *ctx = xcalloc(1, sizeof *ctx);
    int code = 1;
    char err[512] = "";

    if (options_parse(&ctx->opt, argc, argv, arch->prog, arch->allow_workers) != 0) {
        free(ctx);
        return 2;
    }
    if (ctx->opt.help) {
        options_usage(stdout, arch->prog, arch->allow_workers);
        free(ctx);
        return 0;
    }
    /* before anything opens a descriptor: the limit every loop thread inherits */
    rlim_t nofile = 0, nofile_was = 0, nofile_hard = 0;
    int nofile_rc = nofile_raise(&nofile, &nofile_was, &nofile_hard);
    signal(SIGPIPE, SIG_IGN);
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL); /* inherited by every thread created below */

    /* acquire: the access log */
    int rc = accesslog_open(&ctx->log, ctx->opt.access_log);
    if (rc < 0) {
        fprintf(stderr, "%s: cannot open access log '%s': %s\n", arch->prog,
                ctx->opt.access_log, strerror(-rc));
        goto out_free;
    }
    /* acquire: the store */
    struct store_options so = {
        .kind = ctx->opt.store, .db_path = ctx->opt.db_path, .seed_users = ctx->opt.seed_users};
    rc = store_open(&so, &ctx->store, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "%s: cannot open the %s store: %s\n", arch->prog,
                ctx->opt.store == STORE_SQLITE ? "sqlite" : "memory", err);
        goto out_log;
    }
    ctx->app.bearer = ctx->opt.bearer;
    ctx->app.bearer_len = strlen(ctx->opt.bearer);
    ctx->app.registry = &ctx->registry;
    counter_set(&ctx->app.store_users, store_count(ctx->store));

    /* acquire: the loops and their listeners */
    struct server_config cfg;
    server_config_default(&cfg);
    cfg.host = ctx->opt.host;
    cfg.port = ctx->opt.port;
    cfg.threads = ctx->opt.threads;
    cfg.max_conns = ctx->opt.max_conns;
    cfg.limits.max_body = ctx->opt.max_body;
    cfg.header_timeout_ms = ctx->opt.header_timeout_ms;
    cfg.idle_timeout_ms = ctx->opt.idle_timeout_ms;
    rc = server_create(&cfg, arch->hooks, ctx, &ctx->srv, err, sizeof err);
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", arch->prog, err);
        goto out_store;
    }
    unsigned n = server_loop_count(ctx->srv);
    ctx->registry.threads = xcalloc(n, sizeof *ctx->registry.threads);
    ctx->registry.count = n;
    for (unsigned i = 0; i < n; i++)
        ctx->registry.threads[i] = server_loop_metrics(server_loop_at(ctx->srv, i));
    ctx->registry.store_users = &ctx->app.store_users;

    /* acquire: the architecture */
    int arch_rc = arch->init != NULL ? arch->init(ctx) : 0;
    rc = server_start(ctx->srv);
    if (rc == 0 && arch_rc != 0) {
        /* The architecture half-started: run the loops' normal stop so that everything
         * it attached to them is released the usual way, then exit 1. */
        server_stop(ctx->srv);
        goto out_server;
    }
    if (rc < 0) {
        fprintf(stderr, "%s: cannot start threads: %s\n", arch->prog, strerror(-rc));
        server_stop(ctx->srv);
        goto out_server;
    }
    char workers[32] = "";
    if (arch->allow_workers & OPT_WORKERS)
        snprintf(workers, sizeof workers, ", workers=%d", ctx->opt.workers);
    fprintf(stderr, "%s: listening on http://%s:%d (store=%s, threads=%u%s, group_commit=%u)\n",
            arch->prog, ctx->opt.host, server_port(ctx->srv), store_kind_name(ctx->store), n,
            workers, ctx->opt.group_commit);
    nofile_log(arch->prog, nofile_rc, nofile, nofile_was, nofile_hard, ctx->opt.max_conns);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "%s: %s received, stopping\n", arch->prog, sig == SIGINT ? "SIGINT" : "SIGTERM");
    server_stop(ctx->srv);
    code = 0;
out_server:
    /* release in reverse: the loops stop running, then the architecture stops its own
     * threads (which may still send to the loops' handles), then the loops' memory goes */
    server_join(ctx->srv);
    if (arch->fini != NULL)
        arch->fini(ctx);
    server_free(ctx->srv);
    free(ctx->registry.threads);
out_store:
    store_close(ctx->store);
out_log:
    accesslog_close(&ctx->log);
out_free:
    free(ctx);
    if (code == 0)
        fprintf(stderr, "%s: stopped\n", arch->prog);
    return code;
}
