/* test_loadgen_config: command-line parsing: defaults, durations, URLs, and the usage
 * errors that make loadgen exit 2. */
#include <errno.h>
#include <getopt.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "loadgen/config.h"

static int parse(struct config *cfg, char *err, size_t errlen, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "loadgen";
    va_list ap;
    va_start(ap, errlen);
    for (char *a; (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    optind = 0; /* full getopt reset */
    return config_parse(argc, argv, NULL, cfg, err, errlen);
}

static void test_defaults(void **state)
{
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://127.0.0.1:8080", NULL), 0);
    assert_int_equal(cfg.connections, 64);
    assert_int_equal(cfg.threads, 1);
    assert_int_equal(cfg.pipeline, 1);
    assert_true(cfg.rate == 0);
    assert_int_equal(cfg.warmup_ns, 0);
    assert_int_equal(cfg.timeout_ns, 10000000000ull);
    assert_string_equal(cfg.host, "127.0.0.1");
    assert_int_equal(cfg.port, 8080);
    assert_string_equal(cfg.host_header, "127.0.0.1:8080");
    assert_string_equal(cfg.path, "/");
    assert_string_equal(cfg.bearer, "test-token-aaaaaaaaaaaaaaaaaaaa");
}

static void test_all_flags(void **state)
{
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://localhost:9/x", "--mix", "m",
                           "--connections", "10", "--threads", "2", "--duration", "500ms",
                           "--warmup", "2s", "--rate", "1500.5", "--arrivals", "poisson",
                           "--pipeline", "4", "--timeout", "3", "--bearer", "B", "--seed", "9",
                           "--json", "j", "--hgrm", "h", "--quiet", NULL),
                     0);
    assert_int_equal(cfg.connections, 10);
    assert_int_equal(cfg.threads, 2);
    assert_int_equal(cfg.duration_ns, 500000000ull);
    assert_int_equal(cfg.warmup_ns, 2000000000ull);
    assert_true(cfg.rate == 1500.5);
    assert_int_equal(cfg.arrivals, ARRIVALS_POISSON);
    assert_int_equal(cfg.pipeline, 4);
    assert_int_equal(cfg.timeout_ns, 3000000000ull);
    assert_string_equal(cfg.bearer, "B");
    assert_int_equal(cfg.seed, 9);
    assert_string_equal(cfg.json_path, "j");
    assert_string_equal(cfg.hgrm_path, "h");
    assert_int_equal(cfg.quiet, 1);
    assert_string_equal(cfg.path, "/x");
}

static void test_durations(void **state)
{
    uint64_t ns;
    assert_int_equal(config_parse_duration("15", &ns), 0);
    assert_int_equal(ns, 15000000000ull);
    assert_int_equal(config_parse_duration("15s", &ns), 0);
    assert_int_equal(ns, 15000000000ull);
    assert_int_equal(config_parse_duration("500ms", &ns), 0);
    assert_int_equal(ns, 500000000ull);
    assert_int_equal(config_parse_duration("1.5m", &ns), 0);
    assert_int_equal(ns, 90000000000ull);
    assert_int_equal(config_parse_duration("10x", &ns), -EINVAL);
    assert_int_equal(config_parse_duration("", &ns), -EINVAL);
    assert_int_equal(config_parse_duration("-1", &ns), -EINVAL);
}

static void test_usage_errors(void **state)
{
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--bogus", NULL), -EINVAL);
    assert_non_null(strstr(err, "--bogus"));
    assert_int_equal(parse(&cfg, err, sizeof err, NULL), -EINVAL);
    assert_non_null(strstr(err, "--url"));
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "ftp://x", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:99999", NULL), -EINVAL);
    assert_int_equal(
        parse(&cfg, err, sizeof err, "--url", "http://h:1", "--connections", "0", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "x", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--rate"));
    assert_int_equal(
        parse(&cfg, err, sizeof err, "--url", "http://h:1", "--arrivals", "burst", NULL), -EINVAL);
    assert_int_equal(
        parse(&cfg, err, sizeof err, "--url", "http://h:1", "--pipeline", "65", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--threads", "4",
                           "--connections", "2", NULL),
                     -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "extra", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_all_flags),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_usage_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
