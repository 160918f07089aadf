/* micro: per-call cost of the shared request path, without sockets. A "req_*" case feeds
 * the raw bytes of one request to a keep-alive http_parser whose complete callback runs
 * the async server's steps (route, request id, auth, validate, memory store, access log
 * to /dev/null, body, metrics, response rendered into a reused buffer); a "path_*" case
 * is one router_match call. Prints JSON on stdout (ns/op medians), a table on stderr.
 * Not a test: it asserts only that each case answers the status it was built for. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "common/app/app.h"
#include "common/http/http.h"
#include "common/http/metrics.h"
#include "common/app/middleware.h"
#include "common/app/router.h"
#include "common/store/store.h"
#include "common/base/util.h"

#define BEARER "test-token-aaaaaaaaaaaaaaaaaaaa"
#define SEED_USERS 10000

/* One simulated connection: the async server's loop state, minus the socket. */
struct bench_conn {
    struct http_parser parser;
    struct http_limits limits;
    struct app app;
    struct store *store;
    struct accesslog log;
    struct accesslog_buf logbuf;
    struct rid_state rid;
    struct metrics metrics;
    struct request *req; /* the pool: one request object, reused */
    struct buf out;      /* rendered responses, reset after each request */
    unsigned last_status;
    uint64_t completed;
};

enum case_kind { CASE_REQUEST, CASE_PATH };

struct bench_case {
    const char *name;
    enum case_kind kind;
    const char *input;     /* raw request bytes, or the request-target for CASE_PATH */
    uint8_t method;        /* CASE_PATH */
    unsigned want_status;  /* response status (CASE_REQUEST) or router status (CASE_PATH) */
};

#define POST_BODY "{\"name\":\"bench-user\",\"email\":\"bench-user@example.com\"}"
#define STR_(x) #x
#define STR(x) STR_(x)

static const struct bench_case cases[] = {
    {"req_ping", CASE_REQUEST, "GET /ping HTTP/1.1\r\nHost: localhost\r\n\r\n", 0, 200},
    {"req_user_get", CASE_REQUEST,
     "GET /users/1 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " BEARER "\r\n\r\n", 0,
     200},
    {"req_user_list", CASE_REQUEST,
     "GET /users?limit=10&after=500 HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " BEARER
     "\r\n\r\n",
     0, 200},
    {"req_user_create", CASE_REQUEST,
     "POST /users HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer " BEARER
     "\r\nContent-Type: application/json\r\nContent-Length: 54\r\n\r\n" POST_BODY,
     0, 201},
    {"path_shallow", CASE_PATH, "/ping", HTTP_GET, 0},
    {"path_deep", CASE_PATH, "/users/12345?limit=100&after=99999", HTTP_GET, 0},
    {"path_percent", CASE_PATH, "/users/%31%32", HTTP_GET, 0},
    {"path_rejected", CASE_PATH, "/users/%zz", HTTP_GET, 400},
    {"path_not_found", CASE_PATH, "/no/such/path", HTTP_GET, 404},
};

_Static_assert(sizeof(POST_BODY) - 1 == 54, "Content-Length of the POST case");

/* ---- the simulated connection ---- */

static struct request *conn_begin(void *ctx)
{
    struct bench_conn *bc = ctx;
    request_reset(bc->req);
    return bc->req;
}

/* The async server's on_request followed by server_respond's rendering and counting. */
static int conn_complete(void *ctx, struct request *req)
{
    struct bench_conn *bc = ctx;
    if (app_route(req) == APP_USERS) {
        mw_request_id(req, &bc->rid);
        if (mw_auth(req, bc->app.bearer, bc->app.bearer_len) == 0 &&
            app_validate(req) == APP_STORE)
            app_store_exec(&bc->app, bc->store, req);
        accesslog_request(&bc->logbuf, req, now_ns());
    }
    app_render_body(&bc->app, req);
    enum close_mode close = req->keep_alive ? CLOSE_KEEP : CLOSE_AFTER;
    response_render(&bc->out, &req->resp, req->request_id, close);
    uint64_t now = now_ns();
    uint64_t lat_us = now > req->parsed_ns ? (now - req->parsed_ns) / 1000 : 0;
    metrics_count_request(&bc->metrics, req->route, req->resp.status, lat_us);
    bc->last_status = req->resp.status;
    bc->completed++;
    return 0;
}

static const struct http_parser_ops conn_ops = {
    .begin = conn_begin,
    .complete = conn_complete,
};

/* Opens a fresh store (10,000 seeded users) and connection state; exits 1 on failure. */
static void conn_open(struct bench_conn *bc)
{
    memset(bc, 0, sizeof *bc);
    char err[256];
    struct store_options so = {.kind = STORE_MEMORY, .seed_users = SEED_USERS};
    if (store_open(&so, &bc->store, err, sizeof err) != 0) {
        fprintf(stderr, "micro: store_open: %s\n", err);
        exit(1);
    }
    if (accesslog_open(&bc->log, "/dev/null") != 0) {
        fprintf(stderr, "micro: cannot open /dev/null as the access log\n");
        exit(1);
    }
    accesslog_buf_init(&bc->logbuf, &bc->log);
    rid_seed(&bc->rid, 0x5bd1e995u);
    metrics_init(&bc->metrics);
    bc->app.bearer = BEARER;
    bc->app.bearer_len = strlen(BEARER);
    bc->app.store_users = SEED_USERS;
    bc->req = xcalloc(1, sizeof *bc->req);
    http_limits_default(&bc->limits);
    http_parser_init(&bc->parser, &bc->limits, &conn_ops, bc);
}

static void conn_close(struct bench_conn *bc)
{
    struct request *partial = NULL;
    http_parser_destroy(&bc->parser, &partial);
    if (partial != NULL && partial != bc->req)
        request_free(partial);
    request_free(bc->req);
    buf_free(&bc->out);
    metrics_destroy(&bc->metrics);
    accesslog_buf_destroy(&bc->logbuf);
    accesslog_close(&bc->log);
    store_close(bc->store);
}

/* ---- the measured loops ---- */

static __attribute__((noinline)) int run_request(struct bench_conn *bc, const char *raw,
                                                 size_t len, uint64_t iters)
{
    for (uint64_t i = 0; i < iters; i++) {
        size_t used = 0;
        int rc = http_parser_feed(&bc->parser, raw, len, &used);
        if (rc != 0)
            return rc < 0 ? rc : -EAGAIN;
        buf_reset(&bc->out);
    }
    return 0;
}

static __attribute__((noinline)) unsigned run_path(uint8_t method, const char *target,
                                                    size_t len, uint64_t iters)
{
    struct route_match m;
    unsigned status = 0;
    for (uint64_t i = 0; i < iters; i++) {
        router_match(method, target, len, &m);
        __asm__ volatile("" : : "g"(&m) : "memory");
        status = m.status;
    }
    return status;
}

/* Runs `iters` iterations of case c on a fresh connection, after `warm` unmeasured ones.
 * Returns the measured nanoseconds. With dump non-NULL, callgrind collects only the
 * measured iterations and dumps them under that name (no-ops outside valgrind). Exits 1
 * when the case does not answer its expected status. */
static uint64_t case_run(const struct bench_case *c, uint64_t warm, uint64_t iters,
                         const char *dump)
{
    size_t len = strlen(c->input);
    uint64_t t0 = 0, t1 = 0;
    if (c->kind == CASE_PATH) {
        unsigned st = run_path(c->method, c->input, len, warm ? warm : 1);
        if (st != c->want_status) {
            fprintf(stderr, "micro: %s: router status %u, want %u\n", c->name, st,
                    c->want_status);
            exit(1);
        }
        if (dump != NULL) {
            CALLGRIND_ZERO_STATS;
            CALLGRIND_TOGGLE_COLLECT;
        }
        t0 = now_ns();
        run_path(c->method, c->input, len, iters);
        t1 = now_ns();
        if (dump != NULL) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT(dump);
        }
        return t1 - t0;
    }
    struct bench_conn bc;
    conn_open(&bc);
    int rc = run_request(&bc, c->input, len, warm ? warm : 1);
    if (rc == 0 && bc.last_status == c->want_status) {
        if (dump != NULL) {
            CALLGRIND_ZERO_STATS;
            CALLGRIND_TOGGLE_COLLECT;
        }
        t0 = now_ns();
        rc = run_request(&bc, c->input, len, iters);
        t1 = now_ns();
        if (dump != NULL) {
            CALLGRIND_TOGGLE_COLLECT;
            CALLGRIND_DUMP_STATS_AT(dump);
        }
    }
    if (rc != 0 || bc.last_status != c->want_status) {
        fprintf(stderr, "micro: %s: feed rc %d, status %u, want %u (parser: %u %s)\n", c->name,
                rc, bc.last_status, c->want_status, bc.parser.error_status,
                bc.parser.error_reason ? bc.parser.error_reason : "");
        exit(1);
    }
    conn_close(&bc);
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: micro [--filter SUBSTR] [--runs N] [--min-run-ms MS] [--iters N]\n"
            "             [--callgrind N] [--list]\n"
            "  --filter SUBSTR  only cases whose name contains SUBSTR (repeatable)\n"
            "  --runs N         timed runs per case, median reported (default 15)\n"
            "  --min-run-ms MS  calibrate iterations so one run takes >= MS (default 20)\n"
            "  --iters N        fixed iterations per run instead of calibrating\n"
            "  --callgrind N    per case, a run of N and one of 2N iterations, callgrind\n"
            "                   collection toggled around each and dumped as CASE@1 and\n"
            "                   CASE@2: instructions/op = (Ir@2 - Ir@1) / N (use under\n"
            "                   valgrind --tool=callgrind --collect-atstart=no)\n"
            "  --list           print the case names and exit\n"
            "Output: JSON on stdout ({\"cases\":[{name, ns_per_op_median, ...}]}), a table on\n"
            "stderr. Exit 0 ok, 1 a case answered the wrong status, 2 usage.\n");
}

static int parse_count(const char *s, uint64_t *out)
{
    return parse_u64(s, strlen(s), out) == 0 && *out > 0 ? 0 : -EINVAL;
}

#define MAX_FILTERS 16
#define MAX_RUNS 1000

static int case_selected(const char *name, const char **filters, size_t nfilters)
{
    if (nfilters == 0)
        return 1;
    for (size_t i = 0; i < nfilters; i++)
        if (strstr(name, filters[i]) != NULL)
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *filters[MAX_FILTERS];
    size_t nfilters = 0;
    uint64_t runs = 15, min_run_ms = 20, fixed_iters = 0, cg_iters = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        }
        if (strcmp(a, "--list") == 0) {
            for (size_t k = 0; k < ARRAY_LEN(cases); k++)
                printf("%s\n", cases[k].name);
            return 0;
        }
        const char *v = i + 1 < argc ? argv[++i] : NULL;
        int ok = v != NULL;
        if (ok && strcmp(a, "--filter") == 0)
            ok = nfilters < MAX_FILTERS && (filters[nfilters++] = v) != NULL;
        else if (ok && strcmp(a, "--runs") == 0)
            ok = parse_count(v, &runs) == 0 && runs <= MAX_RUNS;
        else if (ok && strcmp(a, "--min-run-ms") == 0)
            ok = parse_count(v, &min_run_ms) == 0;
        else if (ok && strcmp(a, "--iters") == 0)
            ok = parse_count(v, &fixed_iters) == 0;
        else if (ok && strcmp(a, "--callgrind") == 0)
            ok = parse_count(v, &cg_iters) == 0;
        else
            ok = 0;
        if (!ok) {
            fprintf(stderr, "micro: bad or incomplete argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }

    size_t selected = 0;
    for (size_t k = 0; k < ARRAY_LEN(cases); k++)
        selected += case_selected(cases[k].name, filters, nfilters);
    if (selected == 0) {
        fprintf(stderr, "micro: no case matches the filter (see --list)\n");
        return 2;
    }

    if (cg_iters > 0) {
        /* callgrind mode: fixed iterations, one collected run per case */
        printf("{\"callgrind_iters\":%llu,\"cases\":[", (unsigned long long)cg_iters);
        int first = 1;
        for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
            if (!case_selected(cases[k].name, filters, nfilters))
                continue;
            /* N then 2N iterations: the difference / N cancels the fixed overhead */
            uint64_t warm = cg_iters / 10 ? cg_iters / 10 : 1;
            char dump[64];
            snprintf(dump, sizeof dump, "%s@1", cases[k].name);
            case_run(&cases[k], warm, cg_iters, dump);
            snprintf(dump, sizeof dump, "%s@2", cases[k].name);
            case_run(&cases[k], warm, 2 * cg_iters, dump);
            printf("%s\"%s\"", first ? "" : ",", cases[k].name);
            first = 0;
        }
        printf("]}\n");
        return 0;
    }

    double *samples = xcalloc(runs, sizeof *samples);
    printf("{\"runs\":%llu,\"cases\":[", (unsigned long long)runs);
    fprintf(stderr, "%-18s %12s %12s %12s %10s\n", "case", "median ns/op", "min ns/op",
            "max ns/op", "iters/run");
    int first = 1;
    for (size_t k = 0; k < ARRAY_LEN(cases); k++) {
        const struct bench_case *c = &cases[k];
        if (!case_selected(c->name, filters, nfilters))
            continue;
        uint64_t iters = fixed_iters;
        if (iters == 0) {
            /* calibrate: double until one run takes >= min_run_ms */
            iters = 16;
            for (;;) {
                uint64_t ns = case_run(c, 16, iters, NULL);
                if (ns >= min_run_ms * 1000000ull || iters >= (1ull << 40))
                    break;
                iters *= 2;
            }
        }
        for (uint64_t r = 0; r < runs; r++)
            samples[r] = (double)case_run(c, iters / 10 + 1, iters, NULL) / (double)iters;
        qsort(samples, runs, sizeof *samples, cmp_double);
        double median = runs % 2 ? samples[runs / 2]
                                 : (samples[runs / 2 - 1] + samples[runs / 2]) / 2.0;
        printf("%s{\"name\":\"%s\",\"ns_per_op_median\":%.2f,\"ns_per_op_min\":%.2f,"
               "\"ns_per_op_max\":%.2f,\"iters_per_run\":%llu}",
               first ? "" : ",", c->name, median, samples[0], samples[runs - 1],
               (unsigned long long)iters);
        fprintf(stderr, "%-18s %12.1f %12.1f %12.1f %10llu\n", c->name, median, samples[0],
                samples[runs - 1], (unsigned long long)iters);
        first = 0;
    }
    printf("]}\n");
    free(samples);
    return 0;
}
