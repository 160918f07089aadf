/* test_json: json_parse_user's accept/refuse decisions and reason strings (including
 * hostile shapes: 100,000-deep nesting, NUL, huge strings) and the writer's exact bytes
 * for every class of character and for user, list and error objects. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/http/json.h"
#include "common/base/util.h"

#define R_JSON "invalid json"
#define R_OBJECT "body must be an object"
#define R_NAME "name must be a string of 1..64 bytes"
#define R_EMAIL "email must be a string of 3..128 bytes containing @"

/* Parses body (len bytes) and checks the outcome: reason NULL means success expected. */
static void expect_parse(const char *body, size_t len, const char *want_reason)
{
    struct user u;
    memset(&u, 0x5a, sizeof u);
    const char *reason = NULL;
    int r = json_parse_user(body, len, &u, &reason);
    if (want_reason == NULL) {
        if (r != 0)
            fail_msg("body %.80s: expected success, got %d (%s)", body, r, reason);
    } else {
        if (r != -EINVAL)
            fail_msg("body %.80s: expected -EINVAL (%s), got %d", body, want_reason, r);
        assert_non_null(reason);
        assert_string_equal(reason, want_reason);
    }
}

#define PARSE(lit, want) expect_parse((lit), sizeof(lit) - 1, (want))

static void test_parse_valid(void **state)
{
    (void)state;
    static const char body[] = "{\"name\":\"alice\",\"email\":\"a@example.com\",\"x\":[1,{}]}";
    struct user u;
    memset(&u, 0, sizeof u);
    u.id = 77;
    const char *reason = NULL;
    assert_int_equal(json_parse_user(body, sizeof body - 1, &u, &reason), 0);
    assert_int_equal(u.id, 77); /* untouched */
    assert_string_equal(u.name, "alice");
    assert_int_equal(u.name_len, 5);
    assert_string_equal(u.email, "a@example.com");
    assert_int_equal(u.email_len, 13);

    /* escapes are decoded; whitespace around is fine; not NUL-terminated input */
    char buf[64] = " { \"email\" : \"x@y\" , \"name\" : \"a\\u00e9\\\"\" } ";
    size_t n = strlen(buf);
    buf[n] = 'Z'; /* garbage past len must not be read */
    assert_int_equal(json_parse_user(buf, n, &u, &reason), 0);
    assert_string_equal(u.name, "a\xc3\xa9\"");
    assert_int_equal(u.name_len, 4);
    assert_string_equal(u.email, "x@y");

    /* boundaries: 64-byte name, 128-byte email, 3-byte email */
    char big[512];
    snprintf(big, sizeof big, "{\"name\":\"%064d\",\"email\":\"@%0127d\"}", 0, 0);
    expect_parse(big, strlen(big), NULL);
    PARSE("{\"name\":\"n\",\"email\":\"a@b\"}", NULL);
    /* 32 levels of nesting are allowed */
    char deep[256];
    size_t k = (size_t)snprintf(deep, sizeof deep, "{\"name\":\"n\",\"email\":\"a@b\",\"d\":");
    for (int i = 0; i < 31; i++)
        deep[k++] = '[';
    for (int i = 0; i < 31; i++)
        deep[k++] = ']';
    deep[k++] = '}';
    expect_parse(deep, k, NULL);
}

static void test_parse_name_errors(void **state)
{
    (void)state;
    PARSE("{\"email\":\"a@b.c\"}", R_NAME);
    PARSE("{\"name\":1,\"email\":\"a@b.c\"}", R_NAME);
    PARSE("{\"name\":null,\"email\":\"a@b.c\"}", R_NAME);
    PARSE("{\"name\":[\"a\"],\"email\":\"a@b.c\"}", R_NAME);
    PARSE("{\"name\":\"\",\"email\":\"a@b.c\"}", R_NAME);
    char big[256];
    snprintf(big, sizeof big, "{\"name\":\"%065d\",\"email\":\"a@b.c\"}", 0);
    expect_parse(big, strlen(big), R_NAME);
    /* 64 characters but 65 bytes after decoding */
    snprintf(big, sizeof big, "{\"name\":\"\\u00e9%063d\",\"email\":\"a@b.c\"}", 0);
    expect_parse(big, strlen(big), R_NAME);
    /* name checked before email */
    PARSE("{\"name\":2,\"email\":3}", R_NAME);
}

static void test_parse_email_errors(void **state)
{
    (void)state;
    PARSE("{\"name\":\"n\"}", R_EMAIL);
    PARSE("{\"name\":\"n\",\"email\":\"abc.example.com\"}", R_EMAIL);
    PARSE("{\"name\":\"n\",\"email\":\"a@\"}", R_EMAIL);
    PARSE("{\"name\":\"n\",\"email\":true}", R_EMAIL);
    char big[512];
    snprintf(big, sizeof big, "{\"name\":\"n\",\"email\":\"@%0128d\"}", 0);
    expect_parse(big, strlen(big), R_EMAIL);
}

static void test_parse_invalid_json(void **state)
{
    (void)state;
    PARSE("", R_JSON);
    PARSE("   ", R_JSON);
    PARSE("{", R_JSON);
    PARSE("{\"name\":\"n\",\"email\":\"a@b\"", R_JSON);
    PARSE("{'name':'n'}", R_JSON);
    PARSE("{\"name\":\"n\",\"email\":\"a@b\",}", R_JSON);
    /* trailing garbage */
    PARSE("{\"name\":\"n\",\"email\":\"a@b\"}x", R_JSON);
    PARSE("{\"name\":\"n\",\"email\":\"a@b\"}{}", R_JSON);
    /* duplicate keys are ambiguous: refused */
    PARSE("{\"name\":\"n\",\"name\":\"m\",\"email\":\"a@b\"}", R_JSON);
    /* invalid UTF-8 */
    PARSE("{\"name\":\"\xff\",\"email\":\"a@b\"}", R_JSON);
    /* 33 levels */
    char deep[256];
    size_t k = (size_t)snprintf(deep, sizeof deep, "{\"name\":\"n\",\"email\":\"a@b\",\"d\":");
    for (int i = 0; i < 32; i++)
        deep[k++] = '[';
    for (int i = 0; i < 32; i++)
        deep[k++] = ']';
    deep[k++] = '}';
    expect_parse(deep, k, R_JSON);
    /* brackets inside strings do not count as nesting */
    char s[256];
    snprintf(s, sizeof s, "{\"name\":\"%s\",\"email\":\"a@b\"}",
             "[[[[[[[[[[[[[[[[[[[[\\\"{{{{{{{{{{{{{{{{{{{{");
    expect_parse(s, strlen(s), NULL);
}

static void test_parse_deep_nesting(void **state)
{
    (void)state;
    size_t n = 100000;
    char *body = xmalloc(2 * n + 1);
    memset(body, '[', n);
    memset(body + n, ']', n);
    expect_parse(body, 2 * n, R_JSON);
    memset(body, '{', n); /* unbalanced object openers */
    expect_parse(body, n, R_JSON);
    for (size_t i = 0; i < n; i++) /* alternating {"a":[ ... */
        body[i] = "{["[i & 1];
    expect_parse(body, n, R_JSON);
    free(body);
}

static void test_parse_nul(void **state)
{
    (void)state;
    PARSE("{\"name\":\"a\\u0000b\",\"email\":\"a@b\"}", R_JSON);
    PARSE("{\"name\":\"n\",\"email\":\"a@\\u0000b\"}", R_JSON);
    static const char raw[] = "{\"name\":\"a\0b\",\"email\":\"a@b\"}";
    expect_parse(raw, sizeof raw - 1, R_JSON);
    static const char after[] = "{\"name\":\"ab\",\"email\":\"a@b\"}\0";
    expect_parse(after, sizeof after - 1, R_JSON);
}

static void test_parse_not_object(void **state)
{
    (void)state;
    PARSE("[]", R_OBJECT);
    PARSE("[{\"name\":\"n\",\"email\":\"a@b\"}]", R_OBJECT);
    PARSE("\"name\"", R_OBJECT);
    PARSE("42", R_OBJECT);
    PARSE("null", R_OBJECT);
    PARSE("true", R_OBJECT);
}

static void test_parse_huge_string(void **state)
{
    (void)state;
    size_t n = 1 << 20;
    char *body = xmalloc(n + 64);
    size_t k = (size_t)sprintf(body, "{\"email\":\"a@b\",\"name\":\"");
    memset(body + k, 'a', n);
    k += n;
    k += (size_t)sprintf(body + k, "\"}");
    expect_parse(body, k, R_NAME);
    free(body);
}

/* --- writer --- */

static void expect_bytes(const struct buf *b, const char *want, size_t want_len)
{
    if (b->len != want_len || memcmp(b->data, want, want_len) != 0)
        fail_msg("got [%.*s] (%zu bytes), want [%.*s] (%zu bytes)", (int)b->len, b->data,
                 b->len, (int)want_len, want, want_len);
    assert_int_equal(b->data[b->len], '\0');
}

#define EXPECT(b, lit) expect_bytes((b), (lit), sizeof(lit) - 1)

static void test_write_string_classes(void **state)
{
    (void)state;
    struct buf b = {0};
    json_append_string(&b, "", 0);
    EXPECT(&b, "\"\"");
    buf_reset(&b);
    json_append_string(&b, "plain text 123 ~!", 17);
    EXPECT(&b, "\"plain text 123 ~!\"");
    buf_reset(&b);
    json_append_string(&b, "q\"b\\s/", 6);
    EXPECT(&b, "\"q\\\"b\\\\s/\"");
    buf_reset(&b);
    json_append_string(&b, "\n\r\t\b\f", 5);
    EXPECT(&b, "\"\\n\\r\\t\\b\\f\"");
    buf_reset(&b);
    /* bytes >= 0x80 and DEL unchanged */
    json_append_string(&b, "\xc3\xa9\xe2\x82\xac\xff\x7f", 7);
    EXPECT(&b, "\"\xc3\xa9\xe2\x82\xac\xff\x7f\"");
    buf_reset(&b);

    /* every control byte: the short forms above, else \u00xx in lowercase hex */
    for (unsigned c = 0; c < 0x20; c++) {
        char in[3] = {'a', (char)c, 'z'}, want[16];
        const char *shortf = NULL;
        switch (c) {
        case '\n': shortf = "\\n"; break;
        case '\r': shortf = "\\r"; break;
        case '\t': shortf = "\\t"; break;
        case '\b': shortf = "\\b"; break;
        case '\f': shortf = "\\f"; break;
        }
        if (shortf)
            snprintf(want, sizeof want, "\"a%sz\"", shortf);
        else
            snprintf(want, sizeof want, "\"a\\u%04xz\"", c);
        buf_reset(&b);
        json_append_string(&b, in, 3);
        expect_bytes(&b, want, strlen(want));
    }
    /* every byte >= 0x20 except '"' and '\\' passes through */
    for (unsigned c = 0x20; c < 0x100; c++) {
        if (c == '"' || c == '\\')
            continue;
        char in[1] = {(char)c}, want[3] = {'"', (char)c, '"'};
        buf_reset(&b);
        json_append_string(&b, in, 1);
        expect_bytes(&b, want, 3);
    }
    /* appends after existing content, escaping at the very ends */
    buf_reset(&b);
    buf_append_str(&b, "x=");
    json_append_string(&b, "\x01mid\x1f", 5);
    EXPECT(&b, "x=\"\\u0001mid\\u001f\"");
    buf_free(&b);
}

static struct user mk(uint64_t id, const char *name, const char *email)
{
    struct user u;
    memset(&u, 0, sizeof u);
    u.id = id;
    u.name_len = (uint8_t)strlen(name);
    memcpy(u.name, name, u.name_len);
    u.email_len = (uint8_t)strlen(email);
    memcpy(u.email, email, u.email_len);
    return u;
}

static void test_write_user(void **state)
{
    (void)state;
    struct buf b = {0};
    struct user u = mk(1, "user-1", "user-1@example.com");
    json_append_user(&b, &u);
    EXPECT(&b, "{\"id\":1,\"name\":\"user-1\",\"email\":\"user-1@example.com\"}");
    buf_reset(&b);
    u = mk(UINT64_MAX, "a\"b\n", "c\\@\x01");
    json_append_user(&b, &u);
    EXPECT(&b, "{\"id\":18446744073709551615,\"name\":\"a\\\"b\\n\",\"email\":\"c\\\\@\\u0001\"}");
    buf_reset(&b);
    /* worst case: every byte of full-length fields escaped to 6 bytes */
    char name[USER_NAME_MAX + 1], email[USER_EMAIL_MAX + 1];
    memset(name, 1, USER_NAME_MAX);
    name[USER_NAME_MAX] = 0;
    memset(email, 2, USER_EMAIL_MAX);
    email[USER_EMAIL_MAX] = 0;
    u = mk(UINT64_MAX, name, email);
    json_append_user(&b, &u);
    assert_int_equal(b.len, 28 + 20 + 6 * (USER_NAME_MAX + USER_EMAIL_MAX));
    buf_free(&b);
}

static void test_write_list(void **state)
{
    (void)state;
    struct buf b = {0};
    json_append_user_list(&b, NULL, 0, 0);
    EXPECT(&b, "{\"users\":[],\"next\":null}");
    struct user us[3] = {mk(11, "user-11", "user-11@example.com"),
                         mk(12, "user-12", "user-12@example.com"),
                         mk(13, "x", "x@y")};
    buf_reset(&b);
    json_append_user_list(&b, us, 2, 1);
    EXPECT(&b, "{\"users\":[{\"id\":11,\"name\":\"user-11\",\"email\":\"user-11@example.com\"},"
               "{\"id\":12,\"name\":\"user-12\",\"email\":\"user-12@example.com\"}],\"next\":12}");
    buf_reset(&b);
    json_append_user_list(&b, us + 2, 1, 0);
    EXPECT(&b, "{\"users\":[{\"id\":13,\"name\":\"x\",\"email\":\"x@y\"}],\"next\":null}");

    /* a full page of 100 worst-case users: sized once, output well-formed */
    struct user *many = xcalloc(STORE_LIST_MAX, sizeof *many);
    char name[USER_NAME_MAX + 1], email[USER_EMAIL_MAX + 1];
    memset(name, '"', USER_NAME_MAX);
    name[USER_NAME_MAX] = 0;
    memset(email, 0x1f, USER_EMAIL_MAX);
    email[USER_EMAIL_MAX] = 0;
    for (unsigned i = 0; i < STORE_LIST_MAX; i++)
        many[i] = mk(1000 + i, name, email);
    buf_reset(&b);
    json_append_user_list(&b, many, STORE_LIST_MAX, 1);
    assert_int_equal(strlen(b.data), b.len);
    assert_memory_equal(b.data + b.len - 14, "],\"next\":1099}", 14);
    free(many);
    buf_free(&b);
}

static void test_write_error(void **state)
{
    (void)state;
    struct buf b = {0};
    json_append_error(&b, "invalid json");
    EXPECT(&b, "{\"error\":\"invalid json\"}");
    buf_reset(&b);
    json_append_error(&b, "email must be a string of 3..128 bytes containing @");
    EXPECT(&b, "{\"error\":\"email must be a string of 3..128 bytes containing @\"}");
    buf_reset(&b);
    json_append_error(&b, "say \"hi\"");
    EXPECT(&b, "{\"error\":\"say \\\"hi\\\"\"}");
    buf_free(&b);
}

/* The writer allocates only when the buffer must grow: a warm buffer is reused. */
static void test_write_no_realloc_when_warm(void **state)
{
    (void)state;
    struct buf b = {0};
    struct user u = mk(123, "user-123", "user-123@example.com");
    json_append_user(&b, &u);
    char *data = b.data;
    size_t cap = b.cap;
    for (int i = 0; i < 1000; i++) {
        buf_reset(&b);
        json_append_user(&b, &u);
    }
    assert_ptr_equal(b.data, data);
    assert_int_equal(b.cap, cap);
    /* diagnostic timing, not an assertion */
    uint64_t t0 = now_ns();
    for (int i = 0; i < 1000000; i++) {
        buf_reset(&b);
        json_append_user(&b, &u);
    }
    printf("# json_append_user: %.1f ns/call\n", (double)(now_ns() - t0) / 1e6);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_valid),
        cmocka_unit_test(test_parse_name_errors),
        cmocka_unit_test(test_parse_email_errors),
        cmocka_unit_test(test_parse_invalid_json),
        cmocka_unit_test(test_parse_deep_nesting),
        cmocka_unit_test(test_parse_nul),
        cmocka_unit_test(test_parse_not_object),
        cmocka_unit_test(test_parse_huge_string),
        cmocka_unit_test(test_write_string_classes),
        cmocka_unit_test(test_write_user),
        cmocka_unit_test(test_write_list),
        cmocka_unit_test(test_write_error),
        cmocka_unit_test(test_write_no_realloc_when_warm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
