/* test_router: every route of the contract, HEAD wherever GET is routed, 404, 405 +
 * Allow (naming HEAD with GET), targets not in origin-form, bad user ids, the list
 * query (limit/after bounds), percent-decoding of the path (valid, invalid, NUL,
 * non-ASCII), and router_apply copying the match into a request. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/http/http.h"
#include "common/app/router.h"
#include "common/base/util.h"

struct rcase {
    uint8_t method;
    const char *target;
    uint8_t route;
    uint16_t status;
    uint8_t users_group;
    const char *allow; /* NULL: none expected */
    uint64_t id;
    unsigned limit;
    uint64_t after;
};

static const char *route_name(unsigned r)
{
    static const char *names[] = {"PING", "USER_GET", "USER_LIST", "USER_CREATE", "METRICS",
                                  "OTHER"};
    return r < ARRAY_LEN(names) ? names[r] : "?";
}

static void check(const struct rcase *c)
{
    struct route_match m;
    memset(&m, 0x5a, sizeof m); /* router_match must fill everything */
    router_match(c->method, c->target, strlen(c->target), &m);
    const char *allow = m.allow ? m.allow : "(none)";
    const char *want_allow = c->allow ? c->allow : "(none)";
    if (m.route != c->route || m.status != c->status || m.users_group != c->users_group ||
        strcmp(allow, want_allow) != 0)
        fail_msg("%s %s: route %s status %u group %u allow %s; want route %s status %u group %u "
                 "allow %s",
                 llhttp_method_name((llhttp_method_t)c->method), c->target, route_name(m.route),
                 m.status, m.users_group, allow, route_name(c->route), c->status,
                 c->users_group, want_allow);
    if (c->status != 0 && (m.reason == NULL || m.reason[0] == '\0'))
        fail_msg("%s: status %u without a reason", c->target, m.status);
    if (c->route == ROUTE_USER_GET && m.id != c->id)
        fail_msg("%s: id %llu, want %llu", c->target, (unsigned long long)m.id,
                 (unsigned long long)c->id);
    if (c->route == ROUTE_USER_LIST && (m.limit != c->limit || m.after != c->after))
        fail_msg("%s: limit %u after %llu, want limit %u after %llu", c->target, m.limit,
                 (unsigned long long)m.after, c->limit, (unsigned long long)c->after);
}

static void run(const struct rcase *cases, size_t n)
{
    for (size_t i = 0; i < n; i++)
        check(&cases[i]);
}

#define OK(meth, t, r) {meth, t, r, 0, 0, NULL, 0, 0, 0}
#define USERS_OK(meth, t, r) {meth, t, r, 0, 1, NULL, 0, 0, 0}
#define GET_USER(t, idv) {HTTP_GET, t, ROUTE_USER_GET, 0, 1, NULL, idv, 0, 0}
#define LIST(t, lim, aft) {HTTP_GET, t, ROUTE_USER_LIST, 0, 1, NULL, 0, lim, aft}
#define ERR(meth, t, st, grp, al) {meth, t, ROUTE_OTHER, st, grp, al, 0, 0, 0}

/* Each of the n targets, requested with method, is an error: status, users group, no
 * Allow. */
static void run_errors(uint8_t method, uint16_t status, uint8_t group, const char *const *targets,
                       size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const struct rcase c = ERR(method, targets[i], status, group, NULL);
        check(&c);
    }
}

static void test_routes(void **state)
{
    (void)state;
    static const struct rcase cases[] = {
        OK(HTTP_GET, "/ping", ROUTE_PING),
        OK(HTTP_GET, "/ping?x=1", ROUTE_PING),
        OK(HTTP_GET, "/metrics", ROUTE_METRICS),
        GET_USER("/users/1", 1),
        GET_USER("/users/42?x=y", 42),
        GET_USER("/users/1234567890123456789", 1234567890123456789ull),
        GET_USER("/users/007", 7),
        LIST("/users", 10, 0),
        USERS_OK(HTTP_POST, "/users", ROUTE_USER_CREATE),
        USERS_OK(HTTP_POST, "/users?limit=abc", ROUTE_USER_CREATE), /* query ignored */
    };
    run(cases, ARRAY_LEN(cases));
}

/* HEAD is routed exactly like GET (RFC 9110 9.3.2): same route, ids, query, errors. */
static void test_head(void **state)
{
    (void)state;
    static const struct rcase cases[] = {
        OK(HTTP_HEAD, "/ping", ROUTE_PING),
        OK(HTTP_HEAD, "/metrics", ROUTE_METRICS),
        {HTTP_HEAD, "/users/42", ROUTE_USER_GET, 0, 1, NULL, 42, 0, 0},
        {HTTP_HEAD, "/users?limit=3&after=5", ROUTE_USER_LIST, 0, 1, NULL, 0, 3, 5},
        ERR(HTTP_HEAD, "/nope", 404, 0, NULL),
        ERR(HTTP_HEAD, "/users/0", 400, 1, NULL),
        ERR(HTTP_HEAD, "/users?limit=0", 400, 1, NULL),
        ERR(HTTP_HEAD, "/users/%zz", 400, 0, NULL),
    };
    run(cases, ARRAY_LEN(cases));
}

static void test_not_found(void **state)
{
    (void)state;
    /* GET: no such resource; the last two (not in origin-form, RFC 9112 3.2) name none */
    static const char *const get404[] = {"/", "/pingx", "/ping/", "/PING", "/user", "/usersx",
                                         "/metrics/x", "/users/", "http://h/ping", ""};
    run_errors(HTTP_GET, 404, 0, get404, ARRAY_LEN(get404));
    static const char *const users404[] = {"/users/1/x", "/users/1/"};
    run_errors(HTTP_GET, 404, 1, users404, ARRAY_LEN(users404));
    static const struct rcase cases[] = {
        ERR(HTTP_DELETE, "/nope", 404, 0, NULL),
        /* targets not in origin-form (RFC 9112 3.2) name no resource here */
        ERR(HTTP_OPTIONS, "*", 404, 0, NULL),
        ERR(HTTP_CONNECT, "h:80", 404, 0, NULL),
        ERR(HTTP_CONNECT, "h:", 404, 0, NULL),
        /* the asterisk-form is for OPTIONS alone (3.2.4): an invalid request-line */
        ERR(HTTP_GET, "*", 400, 0, NULL),
        ERR(HTTP_HEAD, "*", 400, 0, NULL),
    };
    run(cases, ARRAY_LEN(cases));
}

static void test_method_not_allowed(void **state)
{
    (void)state;
    static const struct rcase cases[] = {
        ERR(HTTP_POST, "/ping", 405, 0, "GET, HEAD"),
        ERR(HTTP_OPTIONS, "/ping", 405, 0, "GET, HEAD"),
        ERR(HTTP_DELETE, "/metrics", 405, 0, "GET, HEAD"),
        ERR(HTTP_PUT, "/users", 405, 1, "GET, HEAD, POST"),
        ERR(HTTP_DELETE, "/users", 405, 1, "GET, HEAD, POST"),
        ERR(HTTP_POST, "/users/1", 405, 1, "GET, HEAD"),
        ERR(HTTP_DELETE, "/users/abc", 405, 1, "GET, HEAD"),
        ERR(HTTP_TRACE, "/users/1", 405, 1, "GET, HEAD"),
    };
    run(cases, ARRAY_LEN(cases));
}

static void test_bad_ids(void **state)
{
    (void)state;
    static const char *const targets[] = {
        "/users/abc", "/users/0", "/users/18446744073709551616", "/users/99999999999999999999999",
        "/users/-1", "/users/+1", "/users/1.5", "/users/1a", "/users/%20"};
    run_errors(HTTP_GET, 400, 1, targets, ARRAY_LEN(targets));
}

static void test_percent_decoding(void **state)
{
    (void)state;
    static const struct rcase cases[] = {
        GET_USER("/users/%31", 1),
        GET_USER("/users/%31%32", 12),
        GET_USER("/%75sers/5", 5),
        OK(HTTP_GET, "/%70ing", ROUTE_PING),
        OK(HTTP_GET, "/%70%69%6E%67", ROUTE_PING),
        OK(HTTP_GET, "/%70%69%6e%67", ROUTE_PING),
        LIST("/%75sers?limit=3", 3, 0),
        /* decoded '/' is a path separator like any other: not a user id */
        ERR(HTTP_GET, "/users/1%2Fx", 404, 1, NULL),
    };
    run(cases, ARRAY_LEN(cases));
    /* bad escapes, NUL, and bytes that are not ASCII (encoded or raw) */
    static const char *const bad[] = {"/users/%zz", "/users/%3", "/users/%", "/%00", "/ping%00",
                                      "/%C3%A9", "/%80", "/\xc3\xa9", "/users/\xff"};
    run_errors(HTTP_GET, 400, 0, bad, ARRAY_LEN(bad));
}

static void test_list_query(void **state)
{
    (void)state;
    static const struct rcase cases[] = {
        LIST("/users", 10, 0),
        LIST("/users?", 10, 0),
        LIST("/users?limit=1", 1, 0),
        LIST("/users?limit=100", 100, 0),
        LIST("/users?limit=50&after=7", 50, 7),
        LIST("/users?after=7&limit=2", 2, 7),
        LIST("/users?after=0", 10, 0),
        LIST("/users?after=18446744073709551615", 10, 18446744073709551615ull),
        LIST("/users?x=1&&limit=5&y", 5, 0),
        LIST("/users?limit=5&limit=6", 6, 0),
    };
    run(cases, ARRAY_LEN(cases));
    static const char *const bad[] = {
        "/users?limit=0", "/users?limit=101", "/users?limit=abc", "/users?limit=",
        "/users?limit=-1", "/users?limit=1.5", "/users?limit=99999999999999999999",
        "/users?after=abc", "/users?after=-1", "/users?after="};
    run_errors(HTTP_GET, 400, 1, bad, ARRAY_LEN(bad));
}

static void test_long_path(void **state)
{
    (void)state;
    /* the largest target the parser lets through, all percent-encoded: no overflow */
    struct buf b = {0};
    buf_append_str(&b, "/users/");
    while (b.len + 3 <= 8192)
        buf_append_str(&b, "%31");
    struct route_match m;
    router_match(HTTP_GET, b.data, b.len, &m);
    assert_int_equal(m.status, 400); /* far too many digits for an id */
    buf_reset(&b);
    buf_append_str(&b, "/");
    while (b.len < 8192)
        buf_append_str(&b, "a");
    router_match(HTTP_GET, b.data, b.len, &m);
    assert_int_equal(m.status, 404);
    buf_free(&b);
}

static void test_apply(void **state)
{
    (void)state;
    struct request req;
    memset(&req, 0, sizeof req);
    request_reset(&req);
    req.method = HTTP_GET;
    buf_append_str(&req.target, "/users?limit=3&after=9");
    router_apply(&req);
    assert_int_equal(req.route, ROUTE_USER_LIST);
    assert_int_equal(req.users_group, 1);
    assert_int_equal(req.route_error, 0);
    assert_int_equal(req.limit, 3);
    assert_int_equal(req.after, 9);

    request_reset(&req);
    req.method = HTTP_PUT;
    buf_append_str(&req.target, "/users");
    router_apply(&req);
    assert_int_equal(req.route, ROUTE_OTHER);
    assert_int_equal(req.route_error, 405);
    assert_string_equal(req.resp.allow, "GET, HEAD, POST");
    assert_non_null(req.error_reason);

    request_reset(&req);
    req.method = HTTP_GET;
    buf_append_str(&req.target, "/users/%32");
    router_apply(&req);
    assert_int_equal(req.route, ROUTE_USER_GET);
    assert_int_equal(req.id, 2);
    assert_null(req.resp.allow);

    /* an empty target (never allocated) is a 404, not a crash */
    struct request empty;
    memset(&empty, 0, sizeof empty);
    request_reset(&empty);
    empty.method = HTTP_GET;
    router_apply(&empty);
    assert_int_equal(empty.route_error, 404);
    buf_free(&req.target);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_head),
        cmocka_unit_test(test_not_found),
        cmocka_unit_test(test_method_not_allowed),
        cmocka_unit_test(test_bad_ids),
        cmocka_unit_test(test_percent_decoding),
        cmocka_unit_test(test_list_query),
        cmocka_unit_test(test_long_path),
        cmocka_unit_test(test_apply),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
