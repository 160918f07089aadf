/* fuzz_request: libFuzzer harness over the whole request path without sockets: the input
 * is split into several reads (split points taken from its first bytes), fed through
 * http_parser_feed, and every parsed request runs the async server's steps (app_route ->
 * mw_request_id -> mw_auth -> app_validate -> app_store_exec -> accesslog_request ->
 * app_render_body -> response_render) on a fresh memory store; the end of input is
 * the peer's half-close. Pauses (pipeline cap, Connection: close) are handled as
 * conn.c does. Checks the rendered responses' framing and statuses (a HEAD answer: the
 * Content-Length of its body and no body), and that the same bytes sent in one read give
 * the same responses, not only crashes.
 * Build and run: make fuzz (FUZZ_SECONDS), make fuzz-ci. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/app/app.h"
#include "common/http/http.h"
#include "common/http/metrics.h"
#include "common/app/middleware.h"
#include "common/store/store.h"

#define FUZZ_BEARER "fuzz-token-0123456789"
#define FUZZ_MAX_PIPELINE 3 /* small, so the pause-and-resume path runs often */

struct fuzz_conn {
    struct http_parser parser;
    struct app app;
    struct store *store;
    struct rid_state rid;
    struct accesslog_buf log;
    struct buf out;       /* rendered responses */
    struct buf body_lens; /* size_t per response: body bytes actually rendered */
    unsigned since_pause; /* requests since the last pipeline pause */
    int closing;          /* a response said Connection: close */
};

static struct request *fz_begin(void *ctx)
{
    (void)ctx;
    return request_new();
}

static int status_allowed(unsigned s)
{
    switch (s) {
    case 200: case 201: case 400: case 401: case 404: case 405: case 413: case 414:
    case 415: case 431: case 501:
        return 1;
    default:
        return 0;
    }
}

/* Checks one rendered response in out[start..]: status line, Content-Length matches the
 * body (a HEAD answer: the body it would have, none rendered), the header block ends
 * once, "Connection: keep-alive" only when asked for and not closing. Aborts (a
 * finding) otherwise. Returns the body bytes rendered. */
static size_t check_rendered(const struct buf *out, size_t start, const struct response *resp,
                             enum close_mode close)
{
    const char *p = out->data + start;
    size_t n = out->len - start;
    if (n < 12 || memcmp(p, "HTTP/1.1 ", 9) != 0) {
        fprintf(stderr, "bad status line\n");
        abort();
    }
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (end == NULL) {
        fprintf(stderr, "no end of headers\n");
        abort();
    }
    size_t head = (size_t)(end - p) + 4;
    size_t body = (resp->flags & RESP_NO_BODY) ? 0 : resp->body.len;
    if (n - head != body) {
        fprintf(stderr, "body length %zu, rendered %zu\n", body, n - head);
        abort();
    }
    int keep_alive_line = memmem(p, head, "\r\nConnection: keep-alive\r\n", 26) != NULL;
    if (keep_alive_line != (close == CLOSE_KEEP && (resp->flags & RESP_KEEP_ALIVE))) {
        fprintf(stderr, "Connection: keep-alive %s\n", keep_alive_line ? "sent" : "missing");
        abort();
    }
    char want[64];
    snprintf(want, sizeof want, "\r\nContent-Length: %zu\r\n", resp->body.len);
    if (memmem(p, head, want, strlen(want)) == NULL) {
        fprintf(stderr, "Content-Length header missing or wrong\n");
        abort();
    }
    /* a header value must never carry CR/LF from the request (response splitting) */
    for (const char *q = p; q < end; q++) {
        if (*q == '\r' && q[1] != '\n') {
            fprintf(stderr, "bare CR in response head\n");
            abort();
        }
        if (*q == '\n' && (q == p || q[-1] != '\r')) {
            fprintf(stderr, "bare LF in response head\n");
            abort();
        }
    }
    return n - head;
}

static void respond(struct fuzz_conn *c, struct request *req, enum close_mode close)
{
    if (!status_allowed(req->resp.status)) {
        fprintf(stderr, "unexpected status %u\n", req->resp.status);
        abort();
    }
    size_t start = c->out.len;
    response_render(&c->out, &req->resp, req->request_id, close);
    size_t body = check_rendered(&c->out, start, &req->resp, close);
    buf_append(&c->body_lens, &body, sizeof body);
}

static int fz_complete(void *ctx, struct request *req)
{
    struct fuzz_conn *c = ctx;
    /* the async server's on_request, step by step */
    if (app_route(req) == APP_USERS) {
        mw_request_id(req, &c->rid);
        if (mw_auth(req, c->app.bearer, c->app.bearer_len) == 0 && app_validate(req) == APP_STORE)
            app_store_exec(&c->app, c->store, req);
        accesslog_request(&c->log, req, now_ns());
    }
    app_render_body(&c->app, req);
    enum close_mode close = req->keep_alive ? CLOSE_KEEP : CLOSE_AFTER;
    respond(c, req, close);
    request_free(req);
    if (close == CLOSE_AFTER) {
        c->closing = 1;
        return 1;
    }
    if (++c->since_pause >= FUZZ_MAX_PIPELINE) {
        c->since_pause = 0;
        return 1; /* the pipeline cap: the rest is fed again later */
    }
    return 0;
}

static const struct http_parser_ops fz_ops = {.begin = fz_begin, .complete = fz_complete};

/* Feeds one read; returns 0 to go on, -1 when the connection is done. */
static int feed(struct fuzz_conn *c, const uint8_t *data, size_t len)
{
    while (len > 0) {
        size_t used = 0;
        int rc = http_parser_feed(&c->parser, (const char *)data, len, &used);
        if (rc < 0) {
            /* respond_parse_error in conn.c */
            unsigned st = c->parser.error_status;
            if (st != 400 && st != 413 && st != 414 && st != 431 && st != 501) {
                fprintf(stderr, "parse error status %u\n", st);
                abort();
            }
            struct request *req = c->parser.cur;
            c->parser.cur = NULL;
            if (req == NULL)
                req = fz_begin(c);
            req->route = ROUTE_OTHER;
            response_error(&req->resp, (uint16_t)st,
                                c->parser.error_reason ? c->parser.error_reason
                                                       : "malformed request");
            respond(c, req, CLOSE_AFTER);
            request_free(req);
            return -1;
        }
        if (used > len) {
            fprintf(stderr, "consumed %zu of %zu\n", used, len);
            abort();
        }
        if (rc == 1 && c->closing)
            return -1;
        if (rc == 0 && used != len) {
            fprintf(stderr, "feed returned 0 with %zu of %zu consumed\n", used, len);
            abort();
        }
        data += used; /* paused (rc 1): the kept bytes are fed again */
        len -= used;
    }
    return 0;
}

/* One connection: feeds data[0..size) in the given reads, returns the rendered output
 * in *out and the body bytes of each response in *lens (caller frees both). */
static void run_conn(const uint8_t *data, const size_t *cuts, size_t ncuts,
                     const struct http_limits *lim, struct metrics_registry *registry,
                     struct accesslog *devnull, struct buf *out, struct buf *lens)
{
    struct fuzz_conn c;
    memset(&c, 0, sizeof c);
    char err[128];
    struct store_options so = {.kind = STORE_MEMORY, .seed_users = 20};
    if (store_open(&so, &c.store, err, sizeof err) != 0)
        abort();
    c.app.bearer = FUZZ_BEARER;
    c.app.bearer_len = strlen(FUZZ_BEARER);
    c.app.registry = registry;
    registry->store_users = &c.app.store_users;
    rid_seed(&c.rid, 42);
    accesslog_buf_init(&c.log, devnull);
    http_parser_init(&c.parser, lim, &fz_ops, &c);

    size_t off = 0;
    for (size_t i = 0; i < ncuts; i++) {
        if (cuts[i] == 0)
            continue;
        /* each read in its own heap block, so ASan sees reads past its end */
        uint8_t *chunk = xmalloc(cuts[i]);
        memcpy(chunk, data + off, cuts[i]);
        int done = feed(&c, chunk, cuts[i]);
        free(chunk);
        off += cuts[i];
        if (done)
            break;
    }
    /* half-close: the peer is gone; drop a request in progress, as conn.c does */
    struct request *partial = NULL;
    http_parser_destroy(&c.parser, &partial);
    request_free(partial);
    accesslog_buf_destroy(&c.log);
    store_close(c.store);
    *out = c.out;
    *lens = c.body_lens;
}

/* Normalises rendered responses for comparison: successes whole but without the Date
 * line (it may differ across a second); errors as status + close only, since which of
 * two faults in one input is reported first may depend on where a read ends. */
static void normalise(const struct buf *b, const struct buf *lens, struct buf *dst)
{
    size_t i = 0, k = 0;
    while (i < b->len) {
        const char *p = b->data + i;
        const char *end = memmem(p, b->len - i, "\r\n\r\n", 4); /* checked when rendered */
        size_t head = (size_t)(end - p) + 4;
        static const char close_line[] = "\r\nConnection: close\r\n";
        size_t body;
        memcpy(&body, lens->data + k++ * sizeof body, sizeof body);
        int close = memmem(p, head, close_line, sizeof close_line - 1) != NULL;
        if (p[9] >= '4') {
            buf_append(dst, p, 12);
            buf_append_str(dst, close ? " close\n" : "\n");
        } else {
            size_t j = 0;
            while (j < head) {
                const char *nl = memchr(p + j, '\n', head - j);
                size_t e = (size_t)(nl - p) + 1;
                if (!(e - j >= 6 && memcmp(p + j, "Date: ", 6) == 0))
                    buf_append(dst, p + j, e - j);
                j = e;
            }
            buf_append(dst, p + head, body);
        }
        i += head + body;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct http_limits lim;
    static struct metrics thread_metrics;
    static struct metrics *threads[1];
    static struct metrics_registry registry;
    static struct accesslog devnull = {.fd = -1};
    if (devnull.fd < 0) {
        http_limits_default(&lim);
        lim.max_body = 8192; /* small, so 413 paths are reachable */
        metrics_init(&thread_metrics);
        threads[0] = &thread_metrics;
        registry.threads = threads;
        registry.count = 1;
        if (accesslog_open(&devnull, "/dev/null") != 0)
            abort();
    }
    if (size < 4)
        return 0;
    /* split points: up to 4 reads plus the rest, lengths from the first 4 bytes */
    size_t cuts[5];
    size_t ncuts = 0, rest = size - 4;
    for (int i = 0; i < 4 && rest > 0; i++) {
        size_t n = data[i] % 64 == 0 ? rest : (size_t)data[i] % (rest + 1);
        cuts[ncuts++] = n;
        rest -= n;
    }
    if (rest > 0)
        cuts[ncuts++] = rest;
    size_t whole = size - 4;

    /* The same bytes in several reads and in one read must give the same responses
     * (values arriving in pieces, pauses and rescans must not change the outcome). */
    struct buf split = {0}, one = {0}, a = {0}, b = {0}, split_lens = {0}, one_lens = {0};
    run_conn(data + 4, cuts, ncuts, &lim, &registry, &devnull, &split, &split_lens);
    run_conn(data + 4, &whole, 1, &lim, &registry, &devnull, &one, &one_lens);
    normalise(&split, &split_lens, &a);
    normalise(&one, &one_lens, &b);
    if (a.len != b.len || (a.len && memcmp(a.data, b.data, a.len) != 0)) {
        fprintf(stderr, "split reads gave different responses:\n--- split (%zu)\n%.*s\n--- one "
                "(%zu)\n%.*s\n", a.len, (int)(a.len > 2000 ? 2000 : a.len), a.data, b.len,
                (int)(b.len > 2000 ? 2000 : b.len), b.data);
        abort();
    }
    buf_free(&split);
    buf_free(&one);
    buf_free(&split_lens);
    buf_free(&one_lens);
    buf_free(&a);
    buf_free(&b);
    return 0;
}
