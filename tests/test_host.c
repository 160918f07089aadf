/* test_host: the Host value syntax (RFC 9112 3.2, RFC 9110 7.2, RFC 3986 3.2.2): the
 * values to accept and to refuse, whole and fed to the scanner in every 2-way split (as
 * llhttp may deliver them), and the cap on an IP-literal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "common/http/host.h"
#include "common/base/util.h"

/* Feeds v to the scanner in two pieces at every split point; each must agree. */
static void expect_split(const char *v, int want)
{
    size_t n = strlen(v);
    for (size_t cut = 0; cut <= n; cut++) {
        struct buf lit = {0};
        uint8_t st = host_scan(HOST_START, &lit, v, cut);
        st = host_scan(st, &lit, v + cut, n - cut);
        buf_free(&lit);
        if (host_scan_valid(st) != want)
            fail_msg("Host '%s' split at %zu: %s, want %s", v, cut,
                     want ? "invalid" : "valid", want ? "valid" : "invalid");
    }
}

static void test_host_syntax(void **state)
{
    (void)state;
    static const char *const valid[] = {
        "", "h", "localhost", "127.0.0.1", "127.0.0.1:8080", "example.com:80", "h:",
        "999.1.1.1", /* not an IPv4address, but a valid reg-name */
        "a-b.c_d~e", "!$&'()*+;=", "h%41", "%7e:1", "[::1]", "[::1]:8080",
        "[2001:db8::ff00:42:8329]", "[::ffff:192.0.2.1]:443", "[v1.fe:x]", "[V7.a,b]",
        "h ", "h\t", "h:80  ", "[::1] ", ":80", "H.EXAMPLE",
    };
    static const char *const invalid[] = {
        "user@h", "u:p@h", "h/path", "h/", "h?q", "h#f", "a, b", "a,b", ",", "a b",
        "h:80x", "h:8 0", "h:-1", "h:80:90", "[::1", "::1", "[::1]x", "[::1]:x", "[zz]",
        "[]", "[1.2.3.4]", "[v.x]", "[v1.]", "[vz.x]", "[::1%25eth0]", "h%4", "h%zz", "%",
        "h\"", "h<", "h\\", "h^", "h`", "h{", "h|", "\xc3\xa9", "h\x7f", "h\x01", " h",
        "[::1]]", "h[", "h]",
    };
    for (size_t i = 0; i < ARRAY_LEN(valid); i++) {
        if (!host_valid(valid[i], strlen(valid[i])))
            fail_msg("Host '%s': invalid, want valid", valid[i]);
        expect_split(valid[i], 1);
    }
    for (size_t i = 0; i < ARRAY_LEN(invalid); i++) {
        if (host_valid(invalid[i], strlen(invalid[i])))
            fail_msg("Host '%s': valid, want invalid", invalid[i]);
        expect_split(invalid[i], 0);
    }
    /* an IP-literal longer than any address is refused, not copied without bound */
    struct buf b = {0};
    buf_append_str(&b, "[v1.");
    for (int i = 0; i < 100; i++)
        buf_append(&b, "a", 1);
    buf_append_str(&b, "]");
    assert_false(host_valid(b.data, b.len));
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_syntax),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
