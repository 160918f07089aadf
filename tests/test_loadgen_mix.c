/* test_loadgen_mix: the mix file parser (good files, exact rendered bytes, errors with
 * line numbers) and weighted picking. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "loadgen/mix.h"

#define HOST "127.0.0.1:8080"

static void render_one(const struct mix *m, unsigned idx, uint64_t seq, struct buf *out)
{
    struct rng r;
    struct buf scratch = {0};
    rng_seed(&r, 7);
    buf_reset(out);
    mix_render(m, idx, &r, seq, out, &scratch);
    buf_free(&scratch);
}

static void test_default_ping_renders_exactly(void **state)
{
    struct mix m;
    char err[256];
    assert_int_equal(mix_parse("1 GET /ping - 200\n", "tok", HOST, &m, err, sizeof err), 0);
    assert_int_equal(m.nlines, 1);
    assert_int_equal(m.lines[0].expect, 200);
    struct buf out = {0};
    render_one(&m, 0, 1, &out);
    assert_string_equal(out.data, "GET /ping HTTP/1.1\r\nHost: " HOST "\r\n\r\n");
    assert_true(m.lines[0].fixed.len > 0); /* pre-rendered */
    buf_free(&out);
    mix_free(&m);
}

static void test_s3_like_mix(void **state)
{
    const char *text = "header Authorization: Bearer ${BEARER}\n"
                       "# weight method path [body-template] expect\n"
                       "\n"
                       "80 GET /users/{rand:5:5} - 200\n"
                       "15 GET /users?limit=10&after={rand:0:9990} - 200\n"
                       "  5 POST /users {\"name\":\"lg-{seq}\", \"email\":\"lg-{seq}@example.com\"} 201\r\n";
    struct mix m;
    char err[256];
    assert_int_equal(mix_parse(text, "secret", HOST, &m, err, sizeof err), 0);
    assert_int_equal(m.nlines, 3);
    assert_int_equal(m.total_weight, 100);
    assert_int_equal(m.lines[2].expect, 201);
    struct buf out = {0};
    render_one(&m, 0, 1, &out);
    assert_string_equal(out.data, "GET /users/5 HTTP/1.1\r\nHost: " HOST
                                  "\r\nAuthorization: Bearer secret\r\n\r\n");
    render_one(&m, 2, 42, &out);
    const char *body = "{\"name\":\"lg-42\", \"email\":\"lg-42@example.com\"}";
    char want[512];
    snprintf(want, sizeof want,
             "POST /users HTTP/1.1\r\nHost: " HOST "\r\nAuthorization: Bearer secret\r\n"
             "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
             strlen(body), body);
    assert_string_equal(out.data, want);
    render_one(&m, 1, 1, &out);
    unsigned long after = 0;
    assert_int_equal(sscanf(out.data, "GET /users?limit=10&after=%lu HTTP/1.1", &after), 1);
    assert_true(after <= 9990);
    buf_free(&out);
    mix_free(&m);
}

static void test_pick_follows_weights(void **state)
{
    struct mix m;
    char err[256];
    assert_int_equal(mix_parse("80 GET /a - 200\n15 GET /b - 200\n5 GET /c - 200\n", "t", HOST,
                               &m, err, sizeof err),
                     0);
    struct rng r;
    rng_seed(&r, 1);
    unsigned counts[3] = {0};
    for (int i = 0; i < 100000; i++)
        counts[mix_pick(&m, &r)]++;
    print_message("counts %u %u %u\n", counts[0], counts[1], counts[2]);
    assert_in_range(counts[0], 79000, 81000);
    assert_in_range(counts[1], 14300, 15700);
    assert_in_range(counts[2], 4600, 5400);
    mix_free(&m);
}

static void test_rand_stays_in_range(void **state)
{
    struct rng r;
    rng_seed(&r, 3);
    int seen_lo = 0, seen_hi = 0;
    for (int i = 0; i < 10000; i++) {
        uint64_t v = rng_range(&r, 1, 10);
        assert_in_range(v, 1, 10);
        seen_lo |= v == 1;
        seen_hi |= v == 10;
    }
    assert_true(seen_lo && seen_hi);
}

struct bad_case {
    const char *text;
    const char *want; /* substring of the error */
};

static void test_bad_lines_name_their_line(void **state)
{
    static const struct bad_case cases[] = {
        {"# c\n1 GET /a - 200\nx GET /b - 200\n", "line 3: expected a request line"},
        {"0 GET /a - 200\n", "line 1: weight '0'"},
        {"\n\n5 get /a - 200\n", "line 3: method 'get'"},
        {"1 GET a - 200\n", "line 1: path 'a' must start with '/'"},
        {"1 GET /a - 99\n", "line 1: expected status '99'"},
        {"1 GET /a\n", "line 1: expected 'WEIGHT METHOD PATH [BODY] EXPECT', got 3 fields"},
        {"1 GET /u/{rand:5:1} - 200\n", "line 1: path: {rand:5:1} has LO > HI"},
        {"1 GET /u/{rand:x:1} - 200\n", "line 1: path: bad placeholder '{rand:x:1}'"},
        {"1 GET /u/{rand:1:2 - 200\n", "line 1: path: unterminated"},
        {"1 GET /a - 200\nheader Host: x\n", "line 2: header 'Host' is set by the load"},
        {"header X-A: ${NOPE}\n1 GET /a - 200\n", "line 1: unknown variable"},
        {"header : v\n1 GET /a - 200\n", "line 1: expected 'header Name: value'"},
        {"1 HEAD /a {} 200\n", "line 1: HEAD cannot have a body"},
        {"# only comments\n", "no request lines"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct mix m;
        char err[256] = "";
        int rc = mix_parse(cases[i].text, "t", HOST, &m, err, sizeof err);
        print_message("case %zu: rc %d err '%s'\n", i, rc, err);
        assert_int_equal(rc, -EINVAL);
        if (strstr(err, cases[i].want) == NULL)
            fail_msg("case %zu: error '%s' lacks '%s'", i, err, cases[i].want);
    }
}

static void test_load_file_errors(void **state)
{
    struct mix m;
    char err[256];
    assert_true(mix_load_file("/nonexistent/x.mix", "t", HOST, &m, err, sizeof err) < 0);
    assert_non_null(strstr(err, "/nonexistent/x.mix"));
    assert_int_equal(mix_load_file("loadgen-scripts/s3_mixed.mix", "t", HOST, &m, err, sizeof err),
                     0);
    assert_int_equal(m.nlines, 3);
    mix_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_ping_renders_exactly),
        cmocka_unit_test(test_s3_like_mix),
        cmocka_unit_test(test_pick_follows_weights),
        cmocka_unit_test(test_rand_stays_in_range),
        cmocka_unit_test(test_bad_lines_name_their_line),
        cmocka_unit_test(test_load_file_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
