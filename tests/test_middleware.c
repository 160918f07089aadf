/* test_middleware: request id (valid incoming kept, invalid or absent replaced by 16
 * lowercase hex digits, the 64/65-character edge, through the real parser), bearer auth
 * (exact token and the near misses), and the access log (line format, 256-byte target
 * cut, flush at 64 KiB, after a second, and on destroy). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/http/http.h"
#include "common/app/middleware.h"
#include "common/base/util.h"

#define TOKEN "test-token-aaaaaaaaaaaaaaaaaaaa"

/* ---- a request through the real parser ---- */

struct one {
    struct request *req;
};

static struct request *one_begin(void *ctx)
{
    (void)ctx;
    return request_new();
}

static int one_complete(void *ctx, struct request *req)
{
    struct one *o = ctx;
    o->req = req;
    return 0;
}

static const struct http_parser_ops one_ops = {one_begin, one_complete};

/* Parses "GET /users/1" with the extra header lines; caller frees the request. */
static struct request *parse_with(const char *extra_headers)
{
    struct http_limits lim;
    http_limits_default(&lim);
    struct one o = {NULL};
    struct http_parser hp;
    http_parser_init(&hp, &lim, &one_ops, &o);
    struct buf raw = {0};
    buf_printf(&raw, "GET /users/1 HTTP/1.1\r\nHost: h\r\n%s\r\n", extra_headers);
    size_t used = 0;
    int rc = http_parser_feed(&hp, raw.data, raw.len, &used);
    if (rc != 0 || o.req == NULL)
        fail_msg("parse of [%s] failed: rc %d status %u", extra_headers, rc, hp.error_status);
    struct request *partial = NULL;
    http_parser_destroy(&hp, &partial);
    assert_null(partial);
    buf_free(&raw);
    return o.req;
}

static void expect_hex16(const char *id)
{
    if (strlen(id) != 16)
        fail_msg("generated id '%s' has length %zu, want 16", id, strlen(id));
    for (int i = 0; i < 16; i++)
        if (!((id[i] >= '0' && id[i] <= '9') || (id[i] >= 'a' && id[i] <= 'f')))
            fail_msg("generated id '%s' has a non-hex character at %d", id, i);
}

static void test_request_id_kept(void **state)
{
    (void)state;
    struct rid_state rs;
    rid_seed(&rs, 42);
    char id64[65];
    memset(id64, 'A', 64);
    id64[64] = '\0';
    id64[0] = 'z';
    id64[63] = '9';
    const char *valid[] = {"abc", "A-Z_a.z-09", "x", id64};
    for (size_t i = 0; i < ARRAY_LEN(valid); i++) {
        struct buf h = {0};
        buf_printf(&h, "X-Request-Id: %s\r\n", valid[i]);
        struct request *req = parse_with(h.data);
        mw_request_id(req, &rs);
        if (strcmp(req->request_id, valid[i]) != 0)
            fail_msg("incoming id '%s' became '%s'", valid[i], req->request_id);
        assert_int_equal(req->request_id_len, strlen(valid[i]));
        assert_true(req->resp.flags & RESP_REQUEST_ID);
        request_free(req);
        buf_free(&h);
    }
}

static void test_request_id_replaced(void **state)
{
    (void)state;
    struct rid_state rs;
    rid_seed(&rs, 42);
    char id65[66];
    memset(id65, 'a', 65);
    id65[65] = '\0';
    const char *invalid[] = {"a b", "a/b", "a\"b", "a:b", "<script>", "\xc3\xa9t\xc3\xa9", "a,b",
                             id65};
    char prev[REQUEST_ID_MAX + 1] = "";
    for (size_t i = 0; i < ARRAY_LEN(invalid); i++) {
        struct buf h = {0};
        buf_printf(&h, "X-Request-Id: %s\r\n", invalid[i]);
        struct request *req = parse_with(h.data);
        mw_request_id(req, &rs);
        expect_hex16(req->request_id);
        assert_int_equal(req->request_id_len, 16);
        assert_true(req->resp.flags & RESP_REQUEST_ID);
        if (strcmp(prev, req->request_id) == 0)
            fail_msg("two generated ids are equal: %s", prev);
        strcpy(prev, req->request_id);
        request_free(req);
        buf_free(&h);
    }
    /* absent, and empty */
    struct request *req = parse_with("");
    mw_request_id(req, &rs);
    expect_hex16(req->request_id);
    request_free(req);
    req = parse_with("X-Request-Id:\r\n");
    mw_request_id(req, &rs);
    expect_hex16(req->request_id);
    request_free(req);
}

static void test_request_id_seeds(void **state)
{
    (void)state;
    /* different seeds (per thread) give different sequences; seed 0 still works */
    struct rid_state a, b, z;
    rid_seed(&a, 1);
    rid_seed(&b, 2);
    rid_seed(&z, 0);
    struct request ra, rb, rz;
    memset(&ra, 0, sizeof ra);
    memset(&rb, 0, sizeof rb);
    memset(&rz, 0, sizeof rz);
    mw_request_id(&ra, &a);
    mw_request_id(&rb, &b);
    mw_request_id(&rz, &z);
    expect_hex16(ra.request_id);
    expect_hex16(rz.request_id);
    assert_string_not_equal(ra.request_id, rb.request_id);
}

/* ---- auth ---- */

static int auth_with(const char *header_line, struct request **out)
{
    struct request *req = parse_with(header_line);
    int rc = mw_auth(req, TOKEN, strlen(TOKEN));
    *out = req;
    return rc;
}

static void expect_auth(const char *header_line, int want_ok)
{
    struct request *req = NULL;
    int rc = auth_with(header_line, &req);
    if (want_ok) {
        if (rc != 0)
            fail_msg("[%s]: auth refused (%d), want accepted", header_line, rc);
        assert_int_equal(req->resp.status, 0);
    } else {
        if (rc != -EACCES)
            fail_msg("[%s]: auth returned %d, want -EACCES", header_line, rc);
        assert_int_equal(req->resp.status, 401);
        assert_int_equal(req->resp.content_type, CT_JSON);
        assert_true(req->resp.body.len > 10);
        assert_memory_equal(req->resp.body.data, "{\"error\":\"", 10);
    }
    request_free(req);
}

static void test_auth(void **state)
{
    (void)state;
    expect_auth("Authorization: Bearer " TOKEN "\r\n", 1);
    expect_auth("authorization: Bearer " TOKEN "\r\n", 1); /* field names are case-blind */
    /* RFC 9110 11.1: the auth scheme is case-insensitive */
    expect_auth("Authorization: bearer " TOKEN "\r\n", 1);
    expect_auth("Authorization: BEARER " TOKEN "\r\n", 1);
    expect_auth("Authorization: Bearer test-token-aaaaaaaaaaaaaaaaaaab\r\n", 0); /* wrong */
    expect_auth("Authorization: Bearer TEST-TOKEN-AAAAAAAAAAAAAAAAAAAA\r\n", 0); /* case */
    expect_auth("Authorization: Bearer test-token-aaaaaaaaaaaaaaaaaaa\r\n", 0);  /* prefix */
    expect_auth("Authorization: Bearer test\r\n", 0);
    expect_auth("Authorization: Bearer " TOKEN "a\r\n", 0); /* token + extra char */
    expect_auth("Authorization: Bearer " TOKEN " x\r\n", 0);
    expect_auth("Authorization: Bearer  " TOKEN "\r\n", 0); /* two spaces */
    expect_auth("Authorization: Bearer\r\n", 0);
    expect_auth("Authorization: Bearer \r\n", 0);
    expect_auth("Authorization: " TOKEN "\r\n", 0);
    expect_auth("Authorization: Basic dXNlcjpwYXNz\r\n", 0);
    expect_auth("Authorization: Basic " TOKEN "\r\n", 0);
    expect_auth("Authorization:\r\n", 0);
    expect_auth("", 0); /* missing */
    expect_auth("X-Authorization: Bearer " TOKEN "\r\n", 0);

    /* the reasons tell missing from wrong */
    struct request *req = NULL;
    assert_int_equal(auth_with("", &req), -EACCES);
    assert_string_equal(req->resp.body.data, "{\"error\":\"missing bearer token\"}");
    request_free(req);
    assert_int_equal(auth_with("Authorization: Bearer nope\r\n", &req), -EACCES);
    assert_string_equal(req->resp.body.data, "{\"error\":\"invalid bearer token\"}");
    request_free(req);

    /* a header longer than the kept cap is refused, whatever it starts with */
    struct buf h = {0};
    buf_append_str(&h, "Authorization: Bearer " TOKEN);
    while (h.len < AUTH_HEADER_MAX + 40)
        buf_append(&h, "a", 1);
    buf_append_str(&h, "\r\n");
    expect_auth(h.data, 0);
    buf_free(&h);
}

/* ---- access log ---- */

struct logfix {
    char path[64];
    struct accesslog log;
    struct accesslog_buf lb;
};

static void logfix_open(struct logfix *f)
{
    snprintf(f->path, sizeof f->path, "/tmp/test_middleware.%d.log", (int)getpid());
    unlink(f->path);
    assert_int_equal(accesslog_open(&f->log, f->path), 0);
    accesslog_buf_init(&f->lb, &f->log);
}

static void logfix_close(struct logfix *f)
{
    accesslog_buf_destroy(&f->lb);
    accesslog_close(&f->log);
    unlink(f->path);
}

static off_t file_size(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0)
        fail_msg("stat %s failed", path);
    return st.st_size;
}

static void read_file(const char *path, struct buf *out)
{
    buf_reset(out);
    FILE *fp = fopen(path, "r");
    assert_non_null(fp);
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, fp)) > 0)
        buf_append(out, chunk, n);
    fclose(fp);
}

static void fill_req(struct request *req, uint8_t method, const char *target, uint16_t status,
                     const char *rid, uint64_t parsed_ns)
{
    memset(req, 0, sizeof *req);
    request_reset(req);
    req->method = method;
    buf_append_str(&req->target, target);
    req->resp.status = status;
    strcpy(req->request_id, rid);
    req->request_id_len = (uint8_t)strlen(rid);
    req->parsed_ns = parsed_ns;
}

static void test_accesslog_line(void **state)
{
    (void)state;
    struct logfix f;
    logfix_open(&f);
    struct request req;
    uint64_t now = f.lb.last_flush_ns + 1000; /* well within the second: no flush */
    fill_req(&req, HTTP_GET, "/users/1?x=y", 200, "0123456789abcdef", now - 1500000);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t before_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    accesslog_request(&f.lb, &req, now);
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t after_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
    assert_int_equal(f.lb.lines, 1);
    assert_int_equal(file_size(f.path), 0); /* buffered */

    unsigned long long ms = 0;
    char rest[256];
    if (sscanf(f.lb.buf.data, "%llu %255[^\n]", &ms, rest) != 2)
        fail_msg("line does not start with a time: %s", f.lb.buf.data);
    assert_string_equal(rest, "GET /users/1?x=y 200 1500us 0123456789abcdef");
    /* CLOCK_REALTIME_COARSE may lag by a tick */
    if (ms + 20 < before_ms || ms > after_ms)
        fail_msg("time %llu ms not within [%llu, %llu]", ms, (unsigned long long)before_ms,
                 (unsigned long long)after_ms);
    assert_int_equal(f.lb.buf.data[f.lb.buf.len - 1], '\n');

    /* a second line: POST, 401, no duration when the clock did not move */
    buf_reset(&req.target);
    buf_append_str(&req.target, "/users");
    req.method = HTTP_POST;
    req.resp.status = 401;
    req.parsed_ns = now + 5;
    accesslog_request(&f.lb, &req, now);
    const char *second = strchr(f.lb.buf.data, '\n') + 1;
    const char *sp = strchr(second, ' ');
    assert_non_null(sp);
    assert_string_equal(sp, " POST /users 401 0us 0123456789abcdef\n");

    /* flushing writes exactly the buffered bytes */
    size_t buffered = f.lb.buf.len;
    assert_int_equal(accesslog_flush(&f.lb), 0);
    assert_int_equal(f.lb.buf.len, 0);
    assert_int_equal(file_size(f.path), (off_t)buffered);
    buf_free(&req.target);
    logfix_close(&f);
}

static void test_accesslog_target_cut(void **state)
{
    (void)state;
    struct logfix f;
    logfix_open(&f);
    struct buf t = {0};
    buf_append_str(&t, "/");
    while (t.len < 1000)
        buf_append(&t, "t", 1);
    struct request req;
    uint64_t now = f.lb.last_flush_ns + 1000;
    fill_req(&req, HTTP_GET, t.data, 404, "r", now);
    accesslog_request(&f.lb, &req, now);
    const char *p = strchr(f.lb.buf.data, ' ') + 1;
    assert_memory_equal(p, "GET /", 5);
    p += 4;
    const char *end = strchr(p, ' ');
    assert_int_equal(end - p, 256);
    assert_string_equal(end, " 404 0us r\n");
    buf_free(&t);
    buf_free(&req.target);
    logfix_close(&f);
}

static void test_accesslog_flush_64k(void **state)
{
    (void)state;
    struct logfix f;
    logfix_open(&f);
    struct request req;
    uint64_t now = f.lb.last_flush_ns + 1000;
    fill_req(&req, HTTP_GET, "/users/123", 200, "0123456789abcdef", now);
    size_t total = 0;
    unsigned lines = 0;
    for (;;) {
        size_t before = f.lb.buf.len;
        accesslog_request(&f.lb, &req, now);
        lines++;
        if (f.lb.buf.len < before) { /* flushed */
            total += before;
            break;
        }
        if (f.lb.buf.len >= 64 * 1024)
            fail_msg("%zu bytes buffered without a flush", f.lb.buf.len);
        assert_int_equal(file_size(f.path), 0);
        if (lines > 10000)
            fail_msg("no flush after %u lines", lines);
    }
    off_t size = file_size(f.path);
    if (size < 64 * 1024 || size > 64 * 1024 + 200)
        fail_msg("flushed %lld bytes, want 64 KiB .. 64 KiB + one line",
                 (long long)size);
    assert_int_equal(f.lb.buf.len, 0);
    assert_true((size_t)size >= total);

    /* every flushed line is whole */
    struct buf content = {0};
    read_file(f.path, &content);
    assert_int_equal(content.data[content.len - 1], '\n');
    unsigned nl = 0;
    for (size_t i = 0; i < content.len; i++)
        nl += content.data[i] == '\n';
    assert_int_equal(nl, lines);
    buf_free(&content);
    buf_free(&req.target);
    logfix_close(&f);
}

static void test_accesslog_flush_time(void **state)
{
    (void)state;
    struct logfix f;
    logfix_open(&f);
    struct request req;
    uint64_t t0 = f.lb.last_flush_ns;
    fill_req(&req, HTTP_GET, "/users/1", 200, "abc", t0);
    accesslog_request(&f.lb, &req, t0 + 10);
    accesslog_tick(&f.lb, t0 + 999999999ull);
    assert_int_equal(file_size(f.path), 0);
    accesslog_tick(&f.lb, t0 + 1000000000ull);
    assert_true(file_size(f.path) > 0);
    assert_int_equal(f.lb.buf.len, 0);

    /* a request line a second after the last flush flushes by itself */
    off_t s1 = file_size(f.path);
    uint64_t t1 = f.lb.last_flush_ns;
    accesslog_request(&f.lb, &req, t1 + 2000000000ull);
    assert_true(file_size(f.path) > s1);

    /* destroy flushes what is left */
    accesslog_request(&f.lb, &req, f.lb.last_flush_ns + 1);
    off_t s2 = file_size(f.path);
    accesslog_buf_destroy(&f.lb);
    assert_true(file_size(f.path) > s2);
    accesslog_buf_init(&f.lb, &f.log); /* for logfix_close */
    buf_free(&req.target);
    logfix_close(&f);
}

static void test_accesslog_devnull(void **state)
{
    (void)state;
    struct accesslog log;
    assert_int_equal(accesslog_open(&log, NULL), 0);
    accesslog_close(&log);
    assert_int_equal(accesslog_open(&log, "/dev/null"), 0);
    accesslog_close(&log);
    assert_int_equal(accesslog_open(&log, "/nonexistent-dir/x.log"), -ENOENT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_request_id_kept),
        cmocka_unit_test(test_request_id_replaced),
        cmocka_unit_test(test_request_id_seeds),
        cmocka_unit_test(test_auth),
        cmocka_unit_test(test_accesslog_line),
        cmocka_unit_test(test_accesslog_target_cut),
        cmocka_unit_test(test_accesslog_flush_64k),
        cmocka_unit_test(test_accesslog_flush_time),
        cmocka_unit_test(test_accesslog_devnull),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
