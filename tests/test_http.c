/* test_http: the request parser (every field; input one byte at a time and in every
 * 2-way split; pipelining in order; pause/resume; each limit with its status; the
 * malformed and smuggling shapes that must give 400; Host lines; HTTP/1.x versions;
 * Transfer-Encoding lists; chunked trailers read and discarded; the HEAD and HTTP/1.0
 * keep-alive response flags). Rendering is test_response's, Host syntax test_host's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/http/http.h"
#include "common/base/util.h"

#define MAX_REQS 16

/* Collects completed requests; `pause_every` makes complete() return 1. */
struct harness {
    struct http_limits lim;
    struct http_parser hp;
    struct request *reqs[MAX_REQS];
    unsigned nreqs;
    unsigned begins;
    int pause_every;
    unsigned pauses;
};

static struct request *h_begin(void *ctx)
{
    struct harness *h = ctx;
    h->begins++;
    return request_new();
}

static int h_complete(void *ctx, struct request *req)
{
    struct harness *h = ctx;
    if (h->nreqs >= MAX_REQS)
        fail_msg("more than %d requests completed", MAX_REQS);
    h->reqs[h->nreqs++] = req;
    if (h->pause_every) {
        h->pauses++;
        return 1;
    }
    return 0;
}

static const struct http_parser_ops h_ops = {h_begin, h_complete};

static void h_init(struct harness *h)
{
    memset(h, 0, sizeof *h);
    http_limits_default(&h->lim);
    http_parser_init(&h->hp, &h->lim, &h_ops, h);
}

static void h_destroy(struct harness *h)
{
    struct request *partial = NULL;
    http_parser_destroy(&h->hp, &partial);
    request_free(partial);
    for (unsigned i = 0; i < h->nreqs; i++)
        request_free(h->reqs[i]);
    h->nreqs = 0;
}

/* Feeds one piece, resuming after pauses until it is all consumed. Returns 0 or the
 * negative result of http_parser_feed. */
static int h_feed(struct harness *h, const char *data, size_t len)
{
    size_t off = 0;
    while (off < len) {
        size_t used = 0;
        int rc = http_parser_feed(&h->hp, data + off, len - off, &used);
        if (used > len - off)
            fail_msg("consumed %zu > offered %zu", used, len - off);
        off += used;
        if (rc < 0)
            return rc;
        if (rc == 1)
            continue;
        if (off != len)
            fail_msg("feed returned 0 but consumed %zu of %zu", off, len);
    }
    return 0;
}

/* Feeds data in pieces of `chunk` bytes (0 = all at once). */
static int h_feed_chunked(struct harness *h, const char *data, size_t len, size_t chunk)
{
    if (chunk == 0)
        chunk = len;
    for (size_t off = 0; off < len; off += chunk) {
        size_t n = len - off < chunk ? len - off : chunk;
        int rc = h_feed(h, data + off, n);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static int h_feed_split(struct harness *h, const char *data, size_t len, size_t split)
{
    int rc = h_feed(h, data, split);
    if (rc < 0)
        return rc;
    return h_feed(h, data + split, len - split);
}

static void expect_buf(const struct buf *b, const char *want, size_t want_len, const char *what)
{
    if (b->len != want_len || (want_len && memcmp(b->data, want, want_len) != 0))
        fail_msg("%s: got %zu bytes '%.*s', want %zu bytes '%.*s'", what, b->len, (int)b->len,
                 b->data ? b->data : "", want_len, (int)want_len, want);
}

/* ---- fields ---- */

static const char full_req[] =
    "POST /users?limit=5 HTTP/1.1\r\n"
    "Host: example\r\n"
    "Content-Type: Application/JSON; charset=utf-8\r\n"
    "X-Request-Id: abc-DEF_123.x\r\n"
    "authorization: Bearer tok\r\n"
    "X-Other: whatever\r\n"
    "Content-Length: 11\r\n"
    "\r\n"
    "{\"a\":\"b\"}\r\n";

static void check_full_req(const struct harness *h)
{
    if (h->nreqs != 1)
        fail_msg("requests completed: got %u, want 1", h->nreqs);
    const struct request *r = h->reqs[0];
    assert_int_equal(r->method, HTTP_POST);
    assert_int_equal(r->http_minor, 1);
    assert_int_equal(r->keep_alive, 1);
    assert_int_equal(r->has_host, 1);
    assert_int_equal(r->content_type, 1);
    assert_int_equal(r->request_id_len, 13);
    assert_string_equal(r->request_id, "abc-DEF_123.x");
    assert_int_equal(r->auth_len, 10);
    assert_string_equal(r->auth, "Bearer tok");
    expect_buf(&r->target, "/users?limit=5", 14, "target");
    expect_buf(&r->body, "{\"a\":\"b\"}\r\n", 11, "body");
    assert_true(r->parsed_ns > 0);
    assert_false(http_parser_mid_request(&h->hp));
}

static void test_fields(void **state)
{
    (void)state;
    struct harness h;
    h_init(&h);
    assert_int_equal(h_feed(&h, full_req, sizeof full_req - 1), 0);
    check_full_req(&h);
    h_destroy(&h);
}

static void test_fields_variants(void **state)
{
    (void)state;
    struct {
        const char *raw;
        uint8_t method, minor, keep_alive, has_host, content_type, rid_len;
    } cases[] = {
        {"GET /ping HTTP/1.0\r\n\r\n", HTTP_GET, 0, 0, 0, 0, 0},
        {"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", HTTP_GET, 0, 1, 0, 0, 0},
        {"GET /ping HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n", HTTP_GET, 1, 0, 1, 0, 0},
        {"DELETE /x HTTP/1.1\r\nHOST: h\r\nContent-Type: text/plain\r\n\r\n", HTTP_DELETE, 1, 1,
         1, 2, 0},
        {"PUT /x HTTP/1.1\r\nHost: h\r\nContent-Type: application/jsonx\r\n\r\n", HTTP_PUT, 1, 1,
         1, 2, 0},
        /* invalid request ids are dropped (length 0), not errors */
        {"GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: a b\r\n\r\n", HTTP_GET, 1, 1, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nX-Request-Id: \r\n\r\n", HTTP_GET, 1, 1, 1, 0, 0},
        {"GET / HTTP/1.1\r\nHost: h\r\nx-request-id: "
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n",
         HTTP_GET, 1, 1, 1, 0, 64},
        {"GET / HTTP/1.1\r\nHost: h\r\nx-request-id: "
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n",
         HTTP_GET, 1, 1, 1, 0, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed(&h, cases[i].raw, strlen(cases[i].raw));
        if (rc != 0 || h.nreqs != 1)
            fail_msg("case %zu: rc %d (status %u %s), requests %u", i, rc, h.hp.error_status,
                     h.hp.error_reason, h.nreqs);
        const struct request *r = h.reqs[0];
        if (r->method != cases[i].method || r->http_minor != cases[i].minor ||
            r->keep_alive != cases[i].keep_alive || r->has_host != cases[i].has_host ||
            r->content_type != cases[i].content_type || r->request_id_len != cases[i].rid_len)
            fail_msg("case %zu: method %u/%u minor %u/%u keep_alive %u/%u host %u/%u ct %u/%u "
                     "rid %u/%u (got/want)",
                     i, r->method, cases[i].method, r->http_minor, cases[i].minor, r->keep_alive,
                     cases[i].keep_alive, r->has_host, cases[i].has_host, r->content_type,
                     cases[i].content_type, r->request_id_len, cases[i].rid_len);
        h_destroy(&h);
    }
}

static void test_auth_too_long(void **state)
{
    (void)state;
    struct buf raw = {0};
    buf_append_str(&raw, "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ");
    for (int i = 0; i < AUTH_HEADER_MAX; i++)
        buf_append(&raw, "x", 1);
    buf_append_str(&raw, "\r\n\r\n");
    struct harness h;
    h_init(&h);
    assert_int_equal(h_feed(&h, raw.data, raw.len), 0);
    assert_int_equal(h.nreqs, 1);
    assert_int_equal(h.reqs[0]->auth_len, AUTH_HEADER_MAX + 1);
    h_destroy(&h);
    buf_free(&raw);
}

/* ---- pieces ---- */

static void test_byte_at_a_time(void **state)
{
    (void)state;
    struct harness h;
    h_init(&h);
    assert_int_equal(h_feed_chunked(&h, full_req, sizeof full_req - 1, 1), 0);
    check_full_req(&h);
    h_destroy(&h);
}

static void test_every_split(void **state)
{
    (void)state;
    size_t len = sizeof full_req - 1;
    for (size_t split = 0; split <= len; split++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed_split(&h, full_req, len, split);
        if (rc != 0)
            fail_msg("split %zu: rc %d status %u", split, rc, h.hp.error_status);
        check_full_req(&h);
        h_destroy(&h);
    }
}

static const char chunked_req[] = "POST /users HTTP/1.1\r\n"
                                  "Host: h\r\n"
                                  "Content-Type: application/json\r\n"
                                  "Transfer-Encoding: chunked\r\n"
                                  "\r\n"
                                  "4\r\n{\"a\"\r\n"
                                  "5;ext=1\r\n:\"b\"}\r\n"
                                  "0\r\n\r\n";

static void test_chunked_body(void **state)
{
    (void)state;
    size_t len = sizeof chunked_req - 1;
    for (size_t chunk = 0; chunk <= 3; chunk++) {
        struct harness h;
        h_init(&h);
        assert_int_equal(h_feed_chunked(&h, chunked_req, len, chunk), 0);
        assert_int_equal(h.nreqs, 1);
        expect_buf(&h.reqs[0]->body, "{\"a\":\"b\"}", 9, "chunked body");
        h_destroy(&h);
    }
}

/* ---- pipelining and pause ---- */

static const char pipeline[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
                               "POST /users HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
                               "GET /c HTTP/1.1\r\nHost: h\r\nX-Request-Id: r3\r\n\r\n"
                               "GET /d HTTP/1.0\r\n\r\n";

static void check_pipeline(const struct harness *h, const char *what)
{
    if (h->nreqs != 4)
        fail_msg("%s: requests %u, want 4", what, h->nreqs);
    expect_buf(&h->reqs[0]->target, "/a", 2, "req 0 target");
    assert_int_equal(h->reqs[0]->method, HTTP_GET);
    expect_buf(&h->reqs[1]->target, "/users", 6, "req 1 target");
    assert_int_equal(h->reqs[1]->method, HTTP_POST);
    expect_buf(&h->reqs[1]->body, "xyz", 3, "req 1 body");
    expect_buf(&h->reqs[2]->target, "/c", 2, "req 2 target");
    assert_int_equal(h->reqs[2]->body.len, 0);
    assert_string_equal(h->reqs[2]->request_id, "r3");
    assert_int_equal(h->reqs[1]->request_id_len, 0); /* no leak between requests */
    expect_buf(&h->reqs[3]->target, "/d", 2, "req 3 target");
    assert_int_equal(h->reqs[3]->http_minor, 0);
}

static void test_pipelined(void **state)
{
    (void)state;
    size_t len = sizeof pipeline - 1;
    for (size_t chunk = 0; chunk <= 2; chunk++) {
        struct harness h;
        h_init(&h);
        assert_int_equal(h_feed_chunked(&h, pipeline, len, chunk), 0);
        check_pipeline(&h, chunk ? "byte pieces" : "one piece");
        h_destroy(&h);
    }
    for (size_t split = 0; split <= len; split++) {
        struct harness h;
        h_init(&h);
        assert_int_equal(h_feed_split(&h, pipeline, len, split), 0);
        check_pipeline(&h, "split");
        h_destroy(&h);
    }
}

static void test_pause_resume(void **state)
{
    (void)state;
    struct harness h;
    h_init(&h);
    h.pause_every = 1;
    size_t len = sizeof pipeline - 1;
    size_t first_len = strlen("GET /a HTTP/1.1\r\nHost: h\r\n\r\n");
    size_t used = 0;
    int rc = http_parser_feed(&h.hp, pipeline, len, &used);
    assert_int_equal(rc, 1);
    assert_int_equal(used, first_len);
    assert_int_equal(h.nreqs, 1);
    assert_int_equal(h.begins, 1); /* nothing of the second request parsed yet */
    assert_false(http_parser_mid_request(&h.hp));
    /* the rest, one paused request at a time */
    size_t off = used;
    unsigned feeds = 1;
    while (off < len) {
        rc = http_parser_feed(&h.hp, pipeline + off, len - off, &used);
        assert_true(rc == 1 || rc == 0);
        off += used;
        feeds++;
    }
    assert_int_equal(feeds, 4);
    check_pipeline(&h, "paused");
    h_destroy(&h);
}

static void test_mid_request(void **state)
{
    (void)state;
    struct harness h;
    h_init(&h);
    static const char part1[] = "POST /users HTTP/1.1\r\nHo";
    static const char part2[] = "st: h\r\nContent-Length: 2\r\n\r\na";
    assert_false(http_parser_mid_request(&h.hp));
    assert_int_equal(h_feed(&h, part1, sizeof part1 - 1), 0);
    assert_true(http_parser_mid_request(&h.hp));
    assert_true(http_parser_in_headers(&h.hp));
    assert_int_equal(h_feed(&h, part2, sizeof part2 - 1), 0);
    assert_true(http_parser_mid_request(&h.hp));
    assert_false(http_parser_in_headers(&h.hp));
    assert_int_equal(h_feed(&h, "b", 1), 0);
    assert_false(http_parser_mid_request(&h.hp));
    assert_int_equal(h.nreqs, 1);
    h_destroy(&h);
}

/* ---- errors ---- */

/* Feeds raw (whole, then one byte at a time) and expects failure with `status`. */
static void expect_error(const char *raw, size_t len, uint16_t status, const char *what,
                         const struct http_limits *lim)
{
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        struct harness h;
        h_init(&h);
        if (lim != NULL)
            h.lim = *lim;
        int rc = h_feed_chunked(&h, raw, len, chunk);
        if (rc >= 0 || h.hp.error_status != status)
            fail_msg("%s (%s): rc %d status %u (%s), want status %u", what,
                     chunk ? "byte at a time" : "whole", rc, h.hp.error_status,
                     h.hp.error_reason ? h.hp.error_reason : "-", status);
        assert_non_null(h.hp.error_reason);
        h_destroy(&h);
    }
}

static void expect_ok(const char *raw, size_t len, const char *what,
                      const struct http_limits *lim)
{
    struct harness h;
    h_init(&h);
    if (lim != NULL)
        h.lim = *lim;
    int rc = h_feed(&h, raw, len);
    if (rc != 0 || h.nreqs != 1)
        fail_msg("%s: rc %d status %u (%s), requests %u; want success", what, rc,
                 h.hp.error_status, h.hp.error_reason ? h.hp.error_reason : "-", h.nreqs);
    h_destroy(&h);
}

#define EXPECT_ERROR(lit, status) expect_error((lit), sizeof(lit) - 1, (status), (lit), NULL)

/* "GET /<pad> HTTP/1.1\r\nHost: h\r\n" + extra + "\r\n", target of target_len bytes. */
static void build_req(struct buf *b, size_t target_len, const char *extra)
{
    buf_reset(b);
    buf_append_str(b, "GET /");
    for (size_t i = 1; i < target_len; i++)
        buf_append(b, "a", 1);
    buf_append_str(b, " HTTP/1.1\r\nHost: h\r\n");
    buf_append_str(b, extra);
    buf_append_str(b, "\r\n");
}

static void test_limit_target(void **state)
{
    (void)state;
    struct buf b = {0};
    build_req(&b, 8192, "");
    expect_ok(b.data, b.len, "target of 8192 bytes", NULL);
    build_req(&b, 8193, "");
    expect_error(b.data, b.len, 414, "target of 8193 bytes", NULL);
    /* refused before the whole line has arrived */
    build_req(&b, 9000, "");
    struct harness h;
    h_init(&h);
    assert_true(h_feed(&h, b.data, 8500) < 0);
    assert_int_equal(h.hp.error_status, 414);
    h_destroy(&h);
    buf_free(&b);
}

static void test_limit_header_bytes(void **state)
{
    (void)state;
    struct buf extra = {0}, b = {0};
    /* one big header: field + value bytes just under, then over, the 16 KiB cap */
    buf_append_str(&extra, "X-Big: ");
    for (int i = 0; i < 17 * 1024; i++)
        buf_append(&extra, "v", 1);
    buf_append_str(&extra, "\r\n");
    build_req(&b, 1, extra.data);
    expect_error(b.data, b.len, 431, "17 KiB header value", NULL);

    buf_reset(&extra);
    buf_append_str(&extra, "X-Big: ");
    for (int i = 0; i < 15 * 1024; i++)
        buf_append(&extra, "v", 1);
    buf_append_str(&extra, "\r\n");
    build_req(&b, 1, extra.data);
    expect_ok(b.data, b.len, "15 KiB header value", NULL);

    /* many medium headers adding up to more than 16 KiB */
    buf_reset(&extra);
    for (int i = 0; i < 40; i++) {
        buf_printf(&extra, "X-H%d: ", i);
        for (int j = 0; j < 500; j++)
            buf_append(&extra, "w", 1);
        buf_append_str(&extra, "\r\n");
    }
    build_req(&b, 1, extra.data);
    expect_error(b.data, b.len, 431, "40 x 500-byte headers", NULL);
    buf_free(&extra);
    buf_free(&b);
}

static void test_limit_header_count(void **state)
{
    (void)state;
    struct buf extra = {0}, b = {0};
    for (int i = 0; i < 99; i++) /* + Host = 100 */
        buf_printf(&extra, "X-H%d: v\r\n", i);
    build_req(&b, 1, extra.data);
    expect_ok(b.data, b.len, "100 headers", NULL);
    buf_append_str(&extra, "X-Last: v\r\n");
    build_req(&b, 1, extra.data);
    expect_error(b.data, b.len, 431, "101 headers", NULL);
    buf_free(&extra);
    buf_free(&b);
}

static void test_limit_body(void **state)
{
    (void)state;
    /* Content-Length above the cap: refused at the end of the headers, no body sent. */
    static const char big_cl[] = "POST /users HTTP/1.1\r\nHost: h\r\nContent-Length: 65537\r\n\r\n";
    EXPECT_ERROR(big_cl, 413);
    struct harness h;
    h_init(&h);
    assert_true(h_feed(&h, big_cl, sizeof big_cl - 1) < 0);
    assert_int_equal(h.hp.error_status, 413);
    struct request *partial = NULL;
    http_parser_destroy(&h.hp, &partial);
    assert_non_null(partial);
    assert_int_equal(partial->body.cap, 0); /* nothing allocated for the body */
    request_free(partial);
    h_init(&h); /* fresh parser so h_destroy has something valid */
    h_destroy(&h);

    /* a Content-Length that overflows 64 bits */
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n",
                 413);

    /* exactly at the cap is fine */
    struct http_limits small;
    http_limits_default(&small);
    small.max_body = 10;
    static const char at_cap[] = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789";
    expect_ok(at_cap, sizeof at_cap - 1, "body at the cap", &small);
    static const char over[] = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n";
    expect_error(over, sizeof over - 1, 413, "Content-Length 11 > 10", &small);

    /* chunked: no length up front, refused as the body crosses the cap */
    static const char chunked_ok[] = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                                     "5\r\n01234\r\n5\r\n56789\r\n0\r\n\r\n";
    expect_ok(chunked_ok, sizeof chunked_ok - 1, "chunked body at the cap", &small);
    static const char chunked_over[] =
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        "5\r\n01234\r\n6\r\n56789a\r\n0\r\n\r\n";
    expect_error(chunked_over, sizeof chunked_over - 1, 413, "chunked body over the cap", &small);
    /* default cap, one huge chunk announced */
    struct buf b = {0};
    buf_append_str(&b, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
                       "10001\r\n");
    for (int i = 0; i < 0x10001; i++)
        buf_append(&b, "z", 1);
    buf_append_str(&b, "\r\n0\r\n\r\n");
    h_init(&h);
    assert_true(h_feed(&h, b.data, b.len) < 0);
    assert_int_equal(h.hp.error_status, 413);
    h_destroy(&h);
    buf_free(&b);
}

static void test_missing_host(void **state)
{
    (void)state;
    EXPECT_ERROR("GET /ping HTTP/1.1\r\n\r\n", 400);
    EXPECT_ERROR("GET /ping HTTP/1.1\r\nHostname: x\r\n\r\n", 400);
    static const char http10[] = "GET /ping HTTP/1.0\r\n\r\n";
    expect_ok(http10, sizeof http10 - 1, "HTTP/1.0 without Host", NULL);
}

static void test_malformed(void **state)
{
    (void)state;
    /* obs-fold */
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n\tb\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\n Host: h\r\n\r\n", 400);
    /* empty header name */
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\n:\r\n\r\n", 400);
    /* bare CR: in the request line, in a value, after an empty value, at the end */
    EXPECT_ERROR("GET / HTTP/1.1\rHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nX-A: a\rb\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nX-A:\rb\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nX-A: \r\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\n\rX", 400);
    /* smuggling shapes */
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                 "Content-Length: 3\r\n\r\n0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n"
                 "abcd",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n"
                 "abc",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\nabc", 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\nabc", 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n"
                 "0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 400);
    /* other malformed shapes */
    EXPECT_ERROR("GET / HTTP/2.0\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / FOO/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("G@T / HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHo st: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost : h\r\n\r\n", 400);
    /* empty lines before a request are skipped, but its header block is still checked */
    EXPECT_ERROR("\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nX-A: a\r\n b\r\n\r\n", 400);
    EXPECT_ERROR("\r\nGET / HTTP/1.1\r\nHost: h\r\n: v\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\n\r\n\r\nGET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n",
                 400);
    /* a bad request after a good one: the good one is still delivered first */
    static const char good_bad[] = "GET /a HTTP/1.1\r\nHost: h\r\n\r\nGET / HTTP/1.1\r\n: x\r\n\r\n";
    struct harness h;
    h_init(&h);
    assert_true(h_feed(&h, good_bad, sizeof good_bad - 1) < 0);
    assert_int_equal(h.hp.error_status, 400);
    assert_int_equal(h.nreqs, 1);
    expect_buf(&h.reqs[0]->target, "/a", 2, "good request before the bad one");
    h_destroy(&h);
}


/* ---- Host (RFC 9112 3.2, RFC 9110 7.2, RFC 3986 3.2.2) ---- */

static void test_host_header(void **state)
{
    (void)state;
    /* more than one Host line, the same or different: 400 (any version) */
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: a\r\nX: y\r\nhost: b\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h\r\nHost:\r\n\r\n", 400);
    /* an invalid value: 400 (whole, and one byte at a time through the scanner) */
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: user@h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h/path\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: a, b\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: [::1]:x\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.1\r\nHost: h%4\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.0\r\nHost: h:80:90\r\n\r\n", 400);
    /* valid values, every 2-way split of the request (the scanner keeps its state) */
    static const char *const ok[] = {
        "GET / HTTP/1.1\r\nHost: [2001:db8::1]:8080\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: h%41.example:80\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: \r\n\r\n", /* empty: allowed (RFC 9112 3.2) */
        "GET / HTTP/1.1\r\nHost: [v1.x]\r\nX-A: [::1\r\n\r\n",
    };
    for (size_t k = 0; k < ARRAY_LEN(ok); k++) {
        size_t len = strlen(ok[k]);
        for (size_t split = 0; split <= len; split++) {
            struct harness h;
            h_init(&h);
            int rc = h_feed_split(&h, ok[k], len, split);
            if (rc != 0 || h.nreqs != 1 || !h.reqs[0]->has_host)
                fail_msg("'%s' split %zu: rc %d status %u (%s)", ok[k], split, rc,
                         h.hp.error_status, h.hp.error_reason ? h.hp.error_reason : "-");
            h_destroy(&h);
        }
    }
    /* the Host scan of one request does not leak into the next */
    static const char two[] = "GET / HTTP/1.1\r\nHost: [::1\r\n\r\n";
    EXPECT_ERROR(two, 400);
    static const char pipe2[] = "GET /a HTTP/1.1\r\nHost: a\r\n\r\nGET /b HTTP/1.1\r\nHost: b\r\n\r\n";
    struct harness h;
    h_init(&h);
    assert_int_equal(h_feed(&h, pipe2, sizeof pipe2 - 1), 0);
    assert_int_equal(h.nreqs, 2);
    h_destroy(&h);
}

/* ---- versions (RFC 9112 2.3, RFC 9110 6.2) ---- */

static void test_versions(void **state)
{
    (void)state;
    static const char *const as11[] = {
        "GET / HTTP/1.2\r\nHost: h\r\n\r\n",
        "GET / HTTP/1.9\r\nHost: h\r\n\r\n",
    };
    for (size_t i = 0; i < ARRAY_LEN(as11); i++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed(&h, as11[i], strlen(as11[i]));
        if (rc != 0 || h.nreqs != 1)
            fail_msg("'%s': rc %d status %u", as11[i], rc, h.hp.error_status);
        assert_int_equal(h.reqs[0]->http_minor, 1);
        assert_int_equal(h.reqs[0]->keep_alive, 1);
        assert_int_equal(h.reqs[0]->resp.flags & RESP_KEEP_ALIVE, 0);
        h_destroy(&h);
    }
    EXPECT_ERROR("GET / HTTP/1.2\r\n\r\n", 400); /* served as 1.1: Host required */
    EXPECT_ERROR("GET / HTTP/0.9\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/3.1\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1.10\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / HTTP/1\r\nHost: h\r\n\r\n", 400);
    EXPECT_ERROR("GET / http/1.1\r\nHost: h\r\n\r\n", 400);
}

/* ---- Transfer-Encoding (RFC 9112 6.1, 6.3) ---- */

static void test_transfer_encoding(void **state)
{
    (void)state;
    /* present, chunked not final: 400 */
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: \r\nContent-Length: 5\r\n\r\n"
                 "hello",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ,\r\nContent-Length: 5\r\n\r\n"
                 "hello",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;a=b\r\n\r\n0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: gzip\r\n\r\n0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: identity\r\n\r\n", 400);
    /* chunked twice */
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, chunked\r\n\r\n"
                 "0\r\n\r\n",
                 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 400);
    /* chunked final, but a coding under it this server does not undo: 501 */
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
                 "0\r\n\r\n",
                 501);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n"
                 "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
                 501);
    /* HTTP/1.0 with Transfer-Encoding: faulty framing (6.1) */
    EXPECT_ERROR("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400);
    /* a value longer than the parser reads is refused, not half-read */
    struct buf b = {0};
    buf_append_str(&b, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: ");
    for (int i = 0; i < 100; i++)
        buf_append_str(&b, "gzip, ");
    buf_append_str(&b, "chunked\r\n\r\n0\r\n\r\n");
    expect_error(b.data, b.len, 400, "600-byte Transfer-Encoding", NULL);
    buf_free(&b);
    /* accepted: chunked alone, any case, with OWS and empty list elements (RFC 9110
     * 5.6.1) before it */
    static const char *const ok[] = {
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: CHUNKED\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:  chunked  \r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    };
    for (size_t i = 0; i < ARRAY_LEN(ok); i++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed(&h, ok[i], strlen(ok[i]));
        if (rc != 0 || h.nreqs != 1)
            fail_msg("'%s': rc %d status %u (%s)", ok[i], rc, h.hp.error_status,
                     h.hp.error_reason ? h.hp.error_reason : "-");
        expect_buf(&h.reqs[0]->body, "abc", 3, "chunked body");
        h_destroy(&h);
    }
}

/* ---- trailers (RFC 9112 7.1.2, RFC 9110 6.5) ---- */

static const char trailer_req[] = "POST /users HTTP/1.1\r\n"
                                  "Host: h\r\n"
                                  "Content-Type: application/json\r\n"
                                  "X-Request-Id: head-id\r\n"
                                  "Transfer-Encoding: chunked\r\n"
                                  "\r\n"
                                  "9\r\n{\"a\":\"b\"}\r\n"
                                  "0\r\n"
                                  "X-Checksum: abc\r\n"
                                  "X-Other:  v , w \r\n"
                                  "\r\n"
                                  "GET /next HTTP/1.1\r\nHost: h\r\n\r\n";

static void check_trailer_req(const struct harness *h, const char *what)
{
    if (h->nreqs != 2)
        fail_msg("%s: requests %u, want 2", what, h->nreqs);
    const struct request *r = h->reqs[0];
    expect_buf(&r->body, "{\"a\":\"b\"}", 9, "body before the trailer");
    assert_string_equal(r->request_id, "head-id"); /* header values untouched */
    assert_int_equal(r->content_type, 1);
    expect_buf(&h->reqs[1]->target, "/next", 5, "request after the trailer");
}

static void test_trailers(void **state)
{
    (void)state;
    size_t len = sizeof trailer_req - 1;
    for (size_t chunk = 0; chunk <= 1; chunk++) {
        struct harness h;
        h_init(&h);
        assert_int_equal(h_feed_chunked(&h, trailer_req, len, chunk), 0);
        check_trailer_req(&h, chunk ? "byte at a time" : "whole");
        h_destroy(&h);
    }
    for (size_t split = 0; split <= len; split++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed_split(&h, trailer_req, len, split);
        if (rc != 0)
            fail_msg("split %zu: rc %d status %u (%s)", split, rc, h.hp.error_status,
                     h.hp.error_reason ? h.hp.error_reason : "-");
        check_trailer_req(&h, "split");
        h_destroy(&h);
    }
    /* fields only the header section may carry: 400, never merged */
#define TRAILER(fields) \
    "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nx\r\n0\r\n" fields "\r\n"
    EXPECT_ERROR(TRAILER("Authorization: Bearer t\r\n"), 400);
    EXPECT_ERROR(TRAILER("X-Ok: 1\r\nauthorization: Bearer t\r\n"), 400);
    EXPECT_ERROR(TRAILER("Host: other\r\n"), 400);
    EXPECT_ERROR(TRAILER("Content-Type: application/json\r\n"), 400);
    EXPECT_ERROR(TRAILER("Content-Length: 5\r\n"), 400);
    EXPECT_ERROR(TRAILER("Transfer-Encoding: chunked\r\n"), 400);
    EXPECT_ERROR(TRAILER("X-Request-Id: smuggled\r\n"), 400);
    EXPECT_ERROR(TRAILER("Connection: close\r\n"), 400);
    /* the trailer section is scanned like a header block */
    EXPECT_ERROR(TRAILER("X-A: a\r\n b\r\n"), 400);
    EXPECT_ERROR(TRAILER(" X-A: a\r\n"), 400);
    EXPECT_ERROR(TRAILER("X-A: a\rb\r\n"), 400);
    EXPECT_ERROR(TRAILER(": v\r\n"), 400);
    EXPECT_ERROR(TRAILER("X A: v\r\n"), 400);
    EXPECT_ERROR("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\r\n", 400);
#undef TRAILER
    /* trailer fields count against the header limits */
    struct buf b = {0};
    buf_append_str(&b, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n");
    for (int i = 0; i < 100; i++)
        buf_printf(&b, "X-T%d: v\r\n", i);
    buf_append_str(&b, "\r\n");
    expect_error(b.data, b.len, 431, "101 header + trailer fields", NULL);
    buf_free(&b);
}

/* ---- response flags set by the parser ---- */

static void test_response_flags(void **state)
{
    (void)state;
    static const struct {
        const char *raw;
        uint8_t flags, keep_alive;
    } cases[] = {
        {"HEAD /ping HTTP/1.1\r\nHost: h\r\n\r\n", RESP_NO_BODY, 1},
        {"GET /ping HTTP/1.1\r\nHost: h\r\n\r\n", 0, 1},
        {"GET /ping HTTP/1.1\r\nHost: h\r\nConnection: keep-alive\r\n\r\n", 0, 1},
        {"GET /ping HTTP/1.0\r\n\r\n", 0, 0},
        {"GET /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", RESP_KEEP_ALIVE, 1},
        {"GET /ping HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", RESP_KEEP_ALIVE, 1},
        {"HEAD /ping HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", RESP_NO_BODY | RESP_KEEP_ALIVE,
         1},
        /* "close" wins over "keep-alive" (RFC 9112 9.6) */
        {"GET /ping HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", 0, 0},
        {"GET /ping HTTP/1.0\r\nConnection: close\r\nConnection: keep-alive\r\n\r\n", 0, 0},
        {"GET /ping HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n", 0, 0},
    };
    for (size_t i = 0; i < ARRAY_LEN(cases); i++) {
        struct harness h;
        h_init(&h);
        int rc = h_feed(&h, cases[i].raw, strlen(cases[i].raw));
        if (rc != 0 || h.nreqs != 1)
            fail_msg("case %zu: rc %d status %u", i, rc, h.hp.error_status);
        const struct request *r = h.reqs[0];
        if (r->resp.flags != cases[i].flags || r->keep_alive != cases[i].keep_alive)
            fail_msg("case %zu: flags 0x%x keep_alive %u, want 0x%x %u", i, r->resp.flags,
                     r->keep_alive, cases[i].flags, cases[i].keep_alive);
        h_destroy(&h);
    }
    /* a HEAD refused mid-headers keeps its no-body flag for the error answer */
    struct harness h;
    h_init(&h);
    static const char bad_head[] = "HEAD /ping HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n";
    assert_true(h_feed(&h, bad_head, sizeof bad_head - 1) < 0);
    struct request *partial = NULL;
    http_parser_destroy(&h.hp, &partial);
    assert_non_null(partial);
    assert_int_equal(partial->resp.flags & RESP_NO_BODY, RESP_NO_BODY);
    request_free(partial);
    h_init(&h);
    h_destroy(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fields),
        cmocka_unit_test(test_fields_variants),
        cmocka_unit_test(test_auth_too_long),
        cmocka_unit_test(test_byte_at_a_time),
        cmocka_unit_test(test_every_split),
        cmocka_unit_test(test_chunked_body),
        cmocka_unit_test(test_pipelined),
        cmocka_unit_test(test_pause_resume),
        cmocka_unit_test(test_mid_request),
        cmocka_unit_test(test_limit_target),
        cmocka_unit_test(test_limit_header_bytes),
        cmocka_unit_test(test_limit_header_count),
        cmocka_unit_test(test_limit_body),
        cmocka_unit_test(test_missing_host),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_host_header),
        cmocka_unit_test(test_versions),
        cmocka_unit_test(test_transfer_encoding),
        cmocka_unit_test(test_trailers),
        cmocka_unit_test(test_response_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
