/* test_response: response_render's exact bytes (the Date line is checked for shape,
 * then removed before comparing), and the status table (status.h): every row's reason
 * phrase, its pre-rendered status line and its metrics column. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/http/response.h"
#include "common/http/status.h"
#include "common/base/util.h"

/* Renders, checks the Date line's shape and position (third line), removes it and
 * compares the rest. */
static void expect_render(const struct response *resp, const char *rid, enum close_mode close,
                          const char *want)
{
    struct buf out = {0};
    response_render(&out, resp, rid, close);
    const char *d = strstr(out.data, "\r\nDate: ");
    if (d == NULL)
        fail_msg("no Date line in:\n%s", out.data);
    d += 2;
    /* "Date: Sun, 06 Nov 1994 08:49:37 GMT\r\n" */
    static const char shape[] = "Date: AAA, 00 AAA 0000 00:00:00 GMT\r\n";
    size_t dlen = sizeof shape - 1;
    for (size_t i = 0; i < dlen; i++) {
        char s = shape[i], c = d[i];
        int ok = s == 'A'   ? ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'))
                 : s == '0' ? (c >= '0' && c <= '9')
                            : c == s;
        if (!ok)
            fail_msg("Date line malformed at %zu: %.40s", i, d);
    }
    struct buf rest = {0};
    buf_append(&rest, out.data, (size_t)(d - out.data));
    buf_append(&rest, d + dlen, out.len - (size_t)(d - out.data) - dlen);
    if (strcmp(rest.data, want) != 0)
        fail_msg("rendered:\n%s\nwant:\n%s", rest.data, want);
    buf_free(&out);
    buf_free(&rest);
}

/* One rendering case: a response built from these fields (error: response_error with
 * that reason instead of body and content type), rendered, compared without its Date. */
struct render_case {
    const char *name;
    uint16_t status;
    enum content_type ct;
    const char *body;
    const char *error; /* response_error(resp, status, error) when set */
    uint8_t flags;
    const char *allow;
    uint64_t location_id;
    const char *rid;
    enum close_mode close;
    const char *want;
};

static const struct render_case render_cases[] = {
    {"text", 200, CT_TEXT, "pong", NULL, 0, NULL, 0, NULL, CLOSE_KEEP,
     "HTTP/1.1 200 OK\r\nServer: refsrv\r\nContent-Type: text/plain\r\n"
     "Content-Length: 4\r\n\r\npong"},
    {"a request id only with RESP_REQUEST_ID; close", 200, CT_TEXT, "pong", NULL, 0, NULL, 0,
     "abc", CLOSE_AFTER,
     "HTTP/1.1 200 OK\r\nServer: refsrv\r\nContent-Type: text/plain\r\n"
     "Content-Length: 4\r\nConnection: close\r\n\r\npong"},
    {"created", 201, CT_JSON, "{\"id\":7,\"name\":\"n\",\"email\":\"a@b\"}", NULL,
     RESP_LOCATION | RESP_REQUEST_ID, NULL, 7, "rid-1", CLOSE_KEEP,
     "HTTP/1.1 201 Created\r\nServer: refsrv\r\nContent-Type: application/json\r\n"
     "Content-Length: 33\r\nX-Request-Id: rid-1\r\nLocation: /users/7\r\n\r\n"
     "{\"id\":7,\"name\":\"n\",\"email\":\"a@b\"}"},
    {"405 with Allow", 405, CT_NONE, NULL, "method not allowed", 0, "GET, POST", 0, NULL,
     CLOSE_AFTER,
     "HTTP/1.1 405 Method Not Allowed\r\nServer: refsrv\r\n"
     "Content-Type: application/json\r\nContent-Length: 30\r\n"
     "Connection: close\r\nAllow: GET, POST\r\n\r\n{\"error\":\"method not allowed\"}"},
    {"503 with Retry-After", 503, CT_NONE, NULL, "overloaded", RESP_RETRY_AFTER, NULL, 0,
     NULL, CLOSE_KEEP,
     "HTTP/1.1 503 Service Unavailable\r\nServer: refsrv\r\n"
     "Content-Type: application/json\r\nContent-Length: 22\r\n"
     "Retry-After: 1\r\n\r\n{\"error\":\"overloaded\"}"},
    {"prometheus", 200, CT_PROMETHEUS, "x 1\n", NULL, 0, NULL, 0, NULL, CLOSE_KEEP,
     "HTTP/1.1 200 OK\r\nServer: refsrv\r\nContent-Type: text/plain; version=0.0.4\r\n"
     "Content-Length: 4\r\n\r\nx 1\n"},
    {"HEAD: the Content-Length of the body, no body", 404, CT_NONE, NULL, "not found",
     RESP_NO_BODY, NULL, 0, NULL, CLOSE_KEEP,
     "HTTP/1.1 404 Not Found\r\nServer: refsrv\r\nContent-Type: application/json\r\n"
     "Content-Length: 21\r\n\r\n"},
    {"HTTP/1.0 keep-alive confirmed", 404, CT_NONE, NULL, "not found", RESP_KEEP_ALIVE, NULL,
     0, NULL, CLOSE_KEEP,
     "HTTP/1.1 404 Not Found\r\nServer: refsrv\r\nContent-Type: application/json\r\n"
     "Content-Length: 21\r\nConnection: keep-alive\r\n\r\n{\"error\":\"not found\"}"},
    {"a close overrides keep-alive", 404, CT_NONE, NULL, "not found",
     RESP_KEEP_ALIVE | RESP_NO_BODY, NULL, 0, NULL, CLOSE_AFTER,
     "HTTP/1.1 404 Not Found\r\nServer: refsrv\r\nContent-Type: application/json\r\n"
     "Content-Length: 21\r\nConnection: close\r\n\r\n"},
    {"401 carries the Bearer challenge (RFC 9110 11.6.1 MUST)", 401, CT_NONE, NULL,
     "missing bearer token", RESP_REQUEST_ID, NULL, 0, "rid-2", CLOSE_KEEP,
     "HTTP/1.1 401 Unauthorized\r\nServer: refsrv\r\nContent-Type: application/json\r\n"
     "Content-Length: 32\r\nX-Request-Id: rid-2\r\n"
     "WWW-Authenticate: Bearer realm=\"users\"\r\n\r\n{\"error\":\"missing bearer token\"}"},
    {"501", 501, CT_NONE, NULL, "transfer coding not implemented", 0, NULL, 0, NULL,
     CLOSE_AFTER,
     "HTTP/1.1 501 Not Implemented\r\nServer: refsrv\r\n"
     "Content-Type: application/json\r\nContent-Length: 43\r\n"
     "Connection: close\r\n\r\n{\"error\":\"transfer coding not implemented\"}"},
};

static void test_render(void **state)
{
    (void)state;
    for (size_t i = 0; i < ARRAY_LEN(render_cases); i++) {
        const struct render_case *c = &render_cases[i];
        struct response r;
        memset(&r, 0, sizeof r);
        if (c->error != NULL) {
            response_error(&r, c->status, c->error);
        } else {
            r.status = c->status;
            r.content_type = c->ct;
            buf_append_str(&r.body, c->body);
        }
        r.flags = c->flags;
        r.allow = c->allow;
        r.location_id = c->location_id;
        print_message("# %s\n", c->name);
        expect_render(&r, c->rid, c->close, c->want);
        buf_free(&r.body);
    }
}

/* Empty body, no content type, appended after what the buffer holds. */
static void test_render_appends(void **state)
{
    (void)state;
    struct response r;
    memset(&r, 0, sizeof r);
    r.status = 404;
    struct buf out = {0};
    buf_append_str(&out, "PREV");
    response_render(&out, &r, NULL, CLOSE_KEEP);
    static const char head[] = "PREVHTTP/1.1 404 Not Found\r\nServer: refsrv\r\nDate: ";
    assert_memory_equal(out.data, head, sizeof head - 1);
    assert_non_null(strstr(out.data, "GMT\r\nContent-Length: 0\r\n\r\n"));
    assert_int_equal(out.data[out.len - 1], '\n');
    buf_free(&out);
}

static void test_status_text(void **state)
{
    (void)state;
    static const struct {
        unsigned status;
        const char *text;
    } t[] = {{200, "OK"},
             {201, "Created"},
             {400, "Bad Request"},
             {401, "Unauthorized"},
             {404, "Not Found"},
             {405, "Method Not Allowed"},
             {408, "Request Timeout"},
             {413, "Content Too Large"},
             {414, "URI Too Long"},
             {415, "Unsupported Media Type"},
             {431, "Request Header Fields Too Large"},
             {500, "Internal Server Error"},
             {501, "Not Implemented"},
             {503, "Service Unavailable"},
             {299, "Unknown"}};
    for (size_t i = 0; i < ARRAY_LEN(t); i++)
        assert_string_equal(status_reason(t[i].status), t[i].text);
}

/* Every row of the table: its status line renders with its reason; its column is its
 * own and maps back to the code; a code outside the table is "Unknown" and "other". */
static void test_status_table(void **state)
{
    (void)state;
    static const unsigned codes[] = {
#define ROW_CODE(code, reason) code,
        STATUS_TABLE(ROW_CODE)
#undef ROW_CODE
    };
    assert_int_equal(ARRAY_LEN(codes), STATUS_COL_COUNT - 1);
    struct response r;
    memset(&r, 0, sizeof r);
    for (size_t i = 0; i < ARRAY_LEN(codes); i++) {
        char want[96];
        snprintf(want, sizeof want, "HTTP/1.1 %u %s\r\nServer: refsrv\r\nDate: ", codes[i],
                 status_reason(codes[i]));
        struct buf out = {0};
        r.status = (uint16_t)codes[i];
        response_render(&out, &r, NULL, CLOSE_KEEP);
        if (strncmp(out.data, want, strlen(want)) != 0)
            fail_msg("status %u renders as '%.60s', want '%s'", codes[i], out.data, want);
        buf_free(&out);
        assert_int_equal(status_col(codes[i]), i);
        assert_int_equal(status_col_code(status_col(codes[i])), codes[i]);
    }
    assert_int_equal(status_col(299), STATUS_COL_OTHER);
    assert_int_equal(status_col_code(STATUS_COL_OTHER), 0);
    struct buf out = {0};
    r.status = 299;
    response_render(&out, &r, NULL, CLOSE_KEEP);
    assert_memory_equal(out.data, "HTTP/1.1 299 Unknown\r\n", 22);
    buf_free(&out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_render),
        cmocka_unit_test(test_render_appends),
        cmocka_unit_test(test_status_text),
        cmocka_unit_test(test_status_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
