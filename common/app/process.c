/* serve: process lifecycle shared by both servers. The first SIGINT/SIGTERM is taken
 * with sigwait on the main thread (blocked everywhere else), so the graceful stop runs
 * in normal code; from then on a second one ends the process at once (a handler that
 * only calls _exit), and a watchdog ends it if the stop outlives its bound. */
#include "process.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define STOP_GRACE_MS 500 /* the watchdog's margin past stop timeout + store timeout */

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

/* The second signal: the stop is not wanted any more. Async-signal-safe: write, _exit. */
static void on_second_signal(int sig)
{
    static const char msg[] = "server: second signal during the stop, exiting at once\n";
    ssize_t n = write(STDERR_FILENO, msg, sizeof msg - 1);
    (void)n;
    _exit(128 + sig);
}

/* The stop watchdog: a thread that ends the process with status 1 if the stop has not
 * finished by `deadline` (a loop or worker stuck where no timeout reaches it). */
struct watchdog {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int done;
    struct timespec deadline; /* CLOCK_MONOTONIC */
    uint64_t bound_ms;
    const char *prog;
    pthread_t thread;
    int running;
};

static void *watchdog_main(void *arg)
{
    struct watchdog *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->done) {
        if (pthread_cond_timedwait(&w->cond, &w->lock, &w->deadline) == ETIMEDOUT && !w->done) {
            fprintf(stderr, "%s: the stop did not finish within %llu ms, exiting (status 1)\n",
                    w->prog, (unsigned long long)w->bound_ms);
            _exit(1);
        }
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* Arms the stop's two exits: a second signal (_exit(128 + signal)) and the watchdog
 * (_exit(1) after bound_ms). Main thread, right after the first signal; sigs stay
 * blocked in every other thread, so the handler runs on this one. */
static void stop_guard_arm(struct watchdog *w, const sigset_t *sigs, const char *prog,
                           uint64_t bound_ms)
{
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_mutex_init(&w->lock, NULL);
    pthread_cond_init(&w->cond, &ca);
    pthread_condattr_destroy(&ca);
    w->done = 0;
    w->prog = prog;
    w->bound_ms = bound_ms;
    clock_gettime(CLOCK_MONOTONIC, &w->deadline);
    w->deadline.tv_sec += (time_t)(bound_ms / 1000);
    w->deadline.tv_nsec += (long)(bound_ms % 1000) * 1000000L;
    if (w->deadline.tv_nsec >= 1000000000L) {
        w->deadline.tv_sec++;
        w->deadline.tv_nsec -= 1000000000L;
    }
    /* acquire: the watchdog thread (created with the signals still blocked) */
    w->running = pthread_create(&w->thread, NULL, watchdog_main, w) == 0;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_second_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    pthread_sigmask(SIG_UNBLOCK, sigs, NULL); /* a pending second signal lands now */
}

/* The stop finished: the watchdog stands down. */
static void stop_guard_disarm(struct watchdog *w)
{
    if (w->running) {
        pthread_mutex_lock(&w->lock);
        w->done = 1;
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        pthread_join(w->thread, NULL);
    }
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
}

int serve_main(int argc, char **argv, const struct serve_arch *arch)
{
    struct serve_ctx *ctx = xcalloc(1, sizeof *ctx);
    int code = 1;
    char err[512] = "";
    struct watchdog watchdog;
    int guarded = 0;

    if (options_parse(&ctx->opt, argc, argv, arch->prog, arch->allow_workers) != 0) {
        free(ctx);
        return 2;
    }
    if (ctx->opt.help) {
        options_usage(stdout, arch->prog, arch->allow_workers);
        free(ctx);
        return 0;
    }
    if (ctx->opt.version) {
        options_version(stdout, arch->prog);
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
    struct store_options so = {.kind = ctx->opt.store,
                               .db_path = ctx->opt.db_path,
                               .seed_users = ctx->opt.seed_users,
                               .timeout_ms = ctx->opt.store_timeout_ms};
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
    cfg.body_timeout_ms = ctx->opt.body_timeout_ms;
    cfg.send_timeout_ms = ctx->opt.send_timeout_ms;
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
    ctx->registry.store_full_rejections = &ctx->app.store_full_rejections;

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
    fprintf(stderr, "%s: listening on http://%s:%d (store=%s, threads=%u%s, group_commit=%u%s%s)\n",
            arch->prog, ctx->opt.host, server_port(ctx->srv), store_kind_name(ctx->store), n,
            workers, ctx->opt.group_commit, ctx->info[0] ? ", " : "", ctx->info);
    nofile_log(arch->prog, nofile_rc, nofile, nofile_was, nofile_hard, ctx->opt.max_conns);

    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "%s: %s received, stopping (a second signal exits at once)\n", arch->prog,
            sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* every bound of the stop: in-flight work gets the stop timeout, a store call that
     * holds a loop at that moment its own timeout */
    stop_guard_arm(&watchdog, &sigs, arch->prog,
                   cfg.stop_timeout_ms + ctx->opt.store_timeout_ms + STOP_GRACE_MS);
    guarded = 1;
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
    if (guarded)
        stop_guard_disarm(&watchdog);
    if (code == 0)
        fprintf(stderr, "%s: stopped\n", arch->prog);
    return code;
}
