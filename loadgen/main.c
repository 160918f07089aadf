/* loadgen: HTTP/1.1 load generator, closed loop or constant rate with coordinated
 * omission corrected latency. main parses flags, resolves the target, picks the I/O
 * (io_uring or epoll), starts one worker per thread, waits for --start-at, prints
 * progress, measures its own CPU over the measured window, merges the workers' stats and
 * writes the reports. `loadgen merge` is merge.c. Globals here only: the stop flag.
 * Every time is the timebase clock (CLOCK_MONOTONIC); libuv's clock is never read. */
#include <errno.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <llhttp.h>
#include <netdb.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "common/base/atomics.h"
#include "config.h"
#include "merge.h"
#include "mix.h"
#include "report.h"
#include "stats.h"
#include "timebase.h"
#include "uring.h"
#include "common/base/util.h"
#include "worker.h"

/* The commit loadgen was built from, as the servers' --version gives it (the Makefile
 * passes -DBUILD_GIT_COMMIT="\"<commit>\"" to this file and common/app/options.c). */
#ifndef BUILD_GIT_COMMIT
#define BUILD_GIT_COMMIT ""
#endif

static volatile int g_interrupted;

/* --version: one line on stdout, the commit and the libraries' versions. */
static void print_version(void)
{
    const char *commit = BUILD_GIT_COMMIT;
    printf("loadgen %s (libuv %s, llhttp %d.%d.%d, jansson %s)\n", *commit ? commit : "unknown",
           uv_version_string(), LLHTTP_VERSION_MAJOR, LLHTTP_VERSION_MINOR, LLHTTP_VERSION_PATCH,
           JANSSON_VERSION);
}

/* Whether the output file `path` of option `opt` can be written, before the run, as
 * fopen(path, "w") will: an existing file must be writable and not a folder (its folder
 * need not be: /dev/null for a user); a new one needs a writable folder. 0, or -errno with
 * the reason in err. */
static int check_output(const char *opt, const char *path, char *err, size_t errlen)
{
    char copy[PATH_MAX];
    struct stat st;
    if (stat(path, &st) == 0) {
        if (!S_ISDIR(st.st_mode) && access(path, W_OK) == 0)
            return 0;
        int e = S_ISDIR(st.st_mode) ? EISDIR : errno;
        snprintf(err, errlen, "%s %s: %s", opt, path, strerror(e));
        return -e;
    }
    snprintf(copy, sizeof copy, "%s", path);
    const char *dir = dirname(copy);
    if (access(dir, W_OK | X_OK) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s %s: folder '%s': %s", opt, path, dir, strerror(e));
        return -e;
    }
    return 0;
}

static void on_signal(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

static double tv_s(struct timeval tv)
{
    return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* 1 to use io_uring, 0 for epoll, or -1 (message printed) when --io uring cannot be had. */
static int pick_io(const struct config *cfg)
{
    if (cfg->io == IO_EPOLL)
        return 0;
    struct uring probe;
    int rc = uring_init(&probe, 8, 16);
    if (rc == 0) {
        uring_exit(&probe);
        return 1;
    }
    if (cfg->io == IO_URING) {
        fprintf(stderr, "loadgen: --io uring: io_uring is not usable here: %s\n", strerror(-rc));
        return -1;
    }
    return 0;
}

static int resolve(const struct config *cfg, struct sockaddr_storage *out)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_family = AF_UNSPEC;
    char port[8];
    snprintf(port, sizeof port, "%u", (unsigned)cfg->port);
    int rc = getaddrinfo(cfg->host, port, &hints, &res);
    if (rc != 0) {
        fprintf(stderr, "loadgen: cannot resolve %s: %s\n", cfg->host, gai_strerror(rc));
        return -EINVAL;
    }
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* nofile_raise: raises the soft open-file limit to the hard one (each connection holds a
 * descriptor; a login's soft limit is often 1024) and warns on stderr when even that is
 * short of `need` connections plus headroom. */
static void nofile_raise(unsigned need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0 && getrlimit(RLIMIT_NOFILE, &rl) != 0)
            return;
    }
    if (rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < (rlim_t)need + 64)
        fprintf(stderr, "loadgen: open files limit %llu is short of %u connections + 64: "
                "some connects will fail (EMFILE)\n", (unsigned long long)rl.rlim_cur, need);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "merge") == 0)
        return merge_main(argc - 1, argv + 1);
    static struct config cfg;
    char err[512];
    int rc = config_parse(argc, argv, getenv("BEARER"), &cfg, err, sizeof err);
    if (rc == 2)
        print_version();
    if (rc == 1 || rc == 2)
        return 0;
    if (rc == 0 && config_check_start_at(cfg.start_at, timebase_realtime_s(), err,
                                         sizeof err) < 0)
        rc = -ETIME;
    const char *outputs[3][2] = {{"--json", cfg.json_path}, {"--hgrm", cfg.hgrm_path},
                                 {"--hist-out", cfg.hist_out_path}};
    for (int i = 0; i < 3 && rc == 0; i++)
        if (outputs[i][1] != NULL && check_output(outputs[i][0], outputs[i][1], err,
                                                   sizeof err) < 0)
            rc = -EINVAL;
    if (rc < 0) {
        fprintf(stderr, "loadgen: %s\n", err);
        fprintf(stderr, "try 'loadgen --help'\n");
        return 2;
    }
    nofile_raise(cfg.connections);

    static struct mix mix;
    char mix_name[600];
    if (cfg.mix_path) {
        rc = mix_load_file(cfg.mix_path, cfg.bearer, cfg.host_header, &mix, err, sizeof err);
        snprintf(mix_name, sizeof mix_name, "%s", cfg.mix_path);
    } else {
        const char *path = strcmp(cfg.path, "/") == 0 ? "/ping" : cfg.path;
        char text[400];
        snprintf(text, sizeof text, "1 GET %s - 200\n", path);
        rc = mix_parse(text, cfg.bearer, cfg.host_header, &mix, err, sizeof err);
        snprintf(mix_name, sizeof mix_name, "default:GET %s", path);
    }
    if (rc < 0) {
        fprintf(stderr, "loadgen: mix: %s\n", err);
        return 2;
    }

    static struct worker_shared sh;
    sh.cfg = &cfg;
    sh.mix = &mix;
    if (resolve(&cfg, &sh.addr) < 0)
        return 1;
    int use_uring = pick_io(&cfg);
    if (use_uring < 0)
        return 1;
    sh.use_uring = use_uring;
    char hostname[256] = "";
    gethostname(hostname, sizeof hostname - 1);

    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    unsigned nthreads = cfg.threads;
    pthread_barrier_init(&sh.connected, NULL, nthreads + 1);
    pthread_barrier_init(&sh.go, NULL, nthreads + 1);
    gate_init(&sh.gate);
    struct worker **workers = xcalloc(nthreads, sizeof *workers);
    unsigned started = 0;
    for (; started < nthreads; started++) {
        unsigned n = cfg.connections / nthreads + (started < cfg.connections % nthreads);
        workers[started] = worker_new(&sh, started, n);
        rc = worker_start(workers[started]);
        if (rc < 0) {
            fprintf(stderr, "loadgen: cannot start thread %u of %u: %s\n", started + 1,
                    nthreads, strerror(-rc));
            break;
        }
    }
    gate_open(&sh.gate, started < nthreads);
    if (started < nthreads) { /* the started ones end at the gate */
        for (unsigned i = 0; i <= started; i++) {
            if (i < started)
                worker_join(workers[i]);
            worker_free(workers[i]);
        }
        free(workers);
        return 1;
    }

    /* Every worker has tried its first connects: run, or give up if none succeeded. */
    pthread_barrier_wait(&sh.connected);
    uint64_t established = 0;
    int first_error = 0;
    for (unsigned i = 0; i < nthreads; i++) {
        established += worker_stats(workers[i])->connections_established;
        if (!first_error)
            first_error = worker_first_error(workers[i]);
    }
    sh.abort = established == 0;
    int exit_code = 0;
    if (sh.abort) {
        fprintf(stderr, "loadgen: cannot connect to %s: %s\n", cfg.url,
                first_error ? uv_strerror(first_error) : "unknown error");
        exit_code = 1;
    }
    sh.start_ns = timebase_now_ns();
    if (!sh.abort && cfg.start_at > 0) {
        /* One conversion from CLOCK_REALTIME; from here on only the monotonic clock. */
        double ahead_s;
        uint64_t at = timebase_from_realtime(cfg.start_at, &ahead_s);
        if (config_check_start_at(cfg.start_at, timebase_realtime_s(), err, sizeof err) < 0) {
            fprintf(stderr, "loadgen: %s (it passed while connecting)\n", err);
            sh.abort = 1;
            exit_code = 1;
        } else if (at > sh.start_ns) {
            if (timebase_sleep_until(at, &g_interrupted) < 0) {
                fprintf(stderr, "loadgen: interrupted while waiting for --start-at\n");
                sh.abort = 1;
                exit_code = 1;
            }
            sh.start_ns = at;
        } else if (at > 0) {
            sh.start_ns = at; /* up to 1 s late: planned times already due are sent at once */
        }
    }
    pthread_barrier_wait(&sh.go);

    uint64_t measure_start_ns = sh.start_ns + cfg.warmup_ns;
    uint64_t now0 = timebase_now_ns();
    uint64_t last_ns = now0 > sh.start_ns ? now0 : sh.start_ns;
    uint64_t end_ns = measure_start_ns + cfg.duration_ns;
    struct rusage ru0 = {0}, ru1 = {0};
    int progress = !cfg.quiet && isatty(STDERR_FILENO) && !sh.abort;
    if (!sh.abort) {
        uint64_t last_done = 0, next_ns = last_ns + 1000000000u;
        int measuring = 0;
        for (;;) {
            uint64_t wake = next_ns;
            if (!measuring && measure_start_ns < wake)
                wake = measure_start_ns;
            if (end_ns < wake)
                wake = end_ns;
            timebase_sleep_until(wake, &g_interrupted);
            uint64_t now = timebase_now_ns();
            if (!measuring && now >= measure_start_ns) {
                getrusage(RUSAGE_SELF, &ru0);
                measuring = 1;
            }
            if (now >= end_ns || g_interrupted)
                break;
            if (now >= next_ns) {
                uint64_t done = 0, errs = 0;
                for (unsigned i = 0; i < nthreads; i++) {
                    struct stats *s = worker_stats(workers[i]);
                    done += atomics_load64_relaxed(&s->progress_completed);
                    errs += atomics_load64_relaxed(&s->progress_errors);
                }
                if (progress)
                    fprintf(stderr, "\r[%5.1fs%s] %10.0f req/s  %12llu done  %8llu errors ",
                            (double)(now - sh.start_ns) / 1e9, measuring ? "" : " warmup",
                            (double)(done - last_done) * 1e9 / (double)(now - last_ns),
                            (unsigned long long)done, (unsigned long long)errs);
                last_done = done;
                last_ns = now;
                next_ns += 1000000000u;
            }
        }
        if (!measuring)
            getrusage(RUSAGE_SELF, &ru0);
        getrusage(RUSAGE_SELF, &ru1);
        if (g_interrupted)
            atomics_store_seq_cst(&sh.stop, 1);
        if (progress)
            fputc('\n', stderr);
    }

    struct stats total;
    stats_init(&total);
    stats_intervals_init(&total, config_intervals(&cfg), cfg.interval_ns);
    uint64_t stop_ns = 0;
    for (unsigned i = 0; i < nthreads; i++) {
        worker_join(workers[i]);
        stats_merge(&total, worker_stats(workers[i]));
        if (worker_stop_ns(workers[i]) > stop_ns)
            stop_ns = worker_stop_ns(workers[i]);
    }

    if (!sh.abort) {
        struct report r = {
            .cfg = &cfg,
            .mix_name = mix_name,
            .total = &total,
            .elapsed_s = stop_ns > measure_start_ns ? (double)(stop_ns - measure_start_ns) / 1e9
                                                    : 0.0,
            .cpu_user_s = tv_s(ru1.ru_utime) - tv_s(ru0.ru_utime),
            .cpu_sys_s = tv_s(ru1.ru_stime) - tv_s(ru0.ru_stime),
            .io = use_uring ? "io_uring" : "epoll",
            .hostname = hostname,
        };
        r.cpu_pct = r.elapsed_s > 0 ? 100.0 * (r.cpu_user_s + r.cpu_sys_s) / r.elapsed_s : 0.0;
        if (!cfg.quiet)
            report_print(&r, stdout);
        if (cfg.json_path && (rc = report_write_json(&r, cfg.json_path)) < 0) {
            fprintf(stderr, "loadgen: --json %s: %s\n", cfg.json_path, strerror(-rc));
            exit_code = 1;
        }
        if (cfg.hgrm_path && (rc = report_write_hgrm(&r, cfg.hgrm_path)) < 0) {
            fprintf(stderr, "loadgen: --hgrm %s: %s\n", cfg.hgrm_path, strerror(-rc));
            exit_code = 1;
        }
        if (cfg.hist_out_path && (rc = report_write_hist(&r, cfg.hist_out_path)) < 0) {
            fprintf(stderr, "loadgen: --hist-out %s: %s\n", cfg.hist_out_path, strerror(-rc));
            exit_code = 1;
        }
    }

    stats_free(&total);
    for (unsigned i = 0; i < nthreads; i++)
        worker_free(workers[i]);
    free(workers);
    mix_free(&mix);
    pthread_barrier_destroy(&sh.connected);
    pthread_barrier_destroy(&sh.go);
    gate_destroy(&sh.gate);
    return exit_code;
}
