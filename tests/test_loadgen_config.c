/* test_loadgen_config: command-line parsing: defaults, durations, URLs, the usage
 * errors that make loadgen exit 2, "--opt value" and "--opt=value", --version,
 * --tick/--io/--agent/--start-at, and the one clock (timebase) that every loadgen
 * timestamp uses. */
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
#include "loadgen/timebase.h"

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

/* RFC 3986 3.2: the authority ends at '/', '?' or '#'; a query without a path is "/?q". */
static void test_url_query_ends_the_authority(void **state)
{
    (void)state;
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://127.0.0.1?x=1", NULL), 0);
    assert_string_equal(cfg.host, "127.0.0.1");
    assert_int_equal(cfg.port, 80);
    assert_string_equal(cfg.path, "/?x=1");
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:8080?x", NULL), 0);
    assert_string_equal(cfg.host, "h");
    assert_int_equal(cfg.port, 8080);
    assert_string_equal(cfg.path, "/?x");
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://[::1]:9?q", NULL), 0);
    assert_string_equal(cfg.host, "::1");
    assert_string_equal(cfg.path, "/?q");
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:9/users?limit=2", NULL), 0);
    assert_string_equal(cfg.path, "/users?limit=2");
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:9", NULL), 0);
    assert_string_equal(cfg.path, "/");
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
    /* a fragment is never sent: refused, not dropped */
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1/ping#x", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h#x", NULL), -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:8x", NULL), -EINVAL);
    assert_int_equal(
        parse(&cfg, err, sizeof err, "--url", "http://h:1", "--connections", "0", NULL), -EINVAL);
    /* a positive rate under 0.001 req/s prints (JSON target_rps, %.3f) as 0, the closed loop */
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "1e-7", NULL),
                     -EINVAL);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "0.001", NULL),
                     0);
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

static void test_tick_io_defaults(void **state)
{
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", NULL), 0);
    assert_true(cfg.tick_auto); /* closed loop: the minimum, unused */
    assert_int_equal(cfg.tick_ns, CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(cfg.io, IO_EPOLL);
    assert_int_equal(cfg.agent_index, 0);
    assert_int_equal(cfg.agent_count, 1);
    assert_true(cfg.start_at == 0);
    assert_null(cfg.hist_out_path);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "90000",
                           NULL),
                     0);
    assert_true(cfg.tick_auto); /* epoll: 16 / 90,000 req/s = 177.8 us */
    assert_int_equal(cfg.tick_ns, 178000);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "90000",
                           "--io", "uring", NULL),
                     0);
    assert_true(cfg.tick_auto);
    assert_int_equal(cfg.tick_ns, 178000); /* 16 / 90,000 req/s = 177.8 us */
    config_pick_tick(&cfg); /* idempotent */
    assert_int_equal(cfg.tick_ns, 178000);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "90000",
                           "--threads", "2", "--tick", "auto", "--io", "auto", NULL),
                     0);
    assert_true(cfg.tick_auto);
    assert_int_equal(cfg.tick_ns, 356000); /* 45,000 req/s per thread */
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "90000",
                           "--agent", "0/3", "--io", "uring", NULL),
                     0);
    assert_int_equal(cfg.tick_ns, 500000); /* 30,000 req/s per agent: capped */
    config_pick_tick(&cfg);
    assert_int_equal(cfg.tick_ns, 500000);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--rate", "90000",
                           "--io", "uring", "--tick", "1ms", NULL),
                     0);
    config_pick_tick(&cfg); /* a fixed tick stays */
    assert_int_equal(cfg.tick_ns, 1000000);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--tick", "1ms", "--io",
                           "uring", "--agent", "2/3", "--start-at", "1767225600.25",
                           "--hist-out", "x.hist.json", NULL),
                     0);
    assert_int_equal(cfg.tick_ns, 1000000);
    assert_false(cfg.tick_auto);
    assert_int_equal(cfg.io, IO_URING);
    assert_int_equal(cfg.agent_index, 2);
    assert_int_equal(cfg.agent_count, 3);
    assert_true(cfg.start_at == 1767225600.25);
    assert_string_equal(cfg.hist_out_path, "x.hist.json");
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--tick", "0", NULL), 0);
    assert_int_equal(cfg.tick_ns, 0);
    assert_false(cfg.tick_auto);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--tick", "101ms", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--tick"));
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--io", "kqueue", NULL),
                     -EINVAL);
}

/* --interval: 1 s by default, 0 turns it off, a bad value is refused, and a long run gets
 * wider intervals, never more than CONFIG_MAX_INTERVALS. */
static void test_intervals(void **state)
{
    (void)state;
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--duration", "15", NULL), 0);
    assert_int_equal(cfg.interval_ns, 1000000000ull);
    assert_int_equal(config_intervals(&cfg), 15);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--duration", "2500ms",
                           "--interval", "1s", NULL), 0);
    assert_int_equal(config_intervals(&cfg), 3); /* the last one 0.5 s */
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--interval", "0", NULL), 0);
    assert_int_equal(config_intervals(&cfg), 0);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--interval", "soon", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--interval"));
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--duration", "3600",
                           NULL), 0);
    assert_int_equal(config_intervals(&cfg), CONFIG_MAX_INTERVALS);
    assert_int_equal(cfg.interval_ns, 1000000000ull);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--duration", "3601",
                           NULL), 0);
    assert_true(cfg.interval_ns > 1000000000ull);
    assert_true(config_intervals(&cfg) <= CONFIG_MAX_INTERVALS);
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--duration", "36000",
                           "--interval", "1ms", NULL), 0);
    assert_int_equal(cfg.interval_ns, 10000000000ull);
    assert_int_equal(config_intervals(&cfg), CONFIG_MAX_INTERVALS);
}

/* --tick auto: bounded, monotone in the rate per event loop, and never coarser than the
 * minimum when it would batch nothing. */
static void test_auto_tick(void **state)
{
    assert_int_equal(config_auto_tick_ns(0, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(10, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(2000, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(3999, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(4000, 1), CONFIG_TICK_AUTO_MAX_NS);
    assert_int_equal(config_auto_tick_ns(8000, 2), CONFIG_TICK_AUTO_MAX_NS);
    assert_int_equal(config_auto_tick_ns(7999, 2), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(30000, 1), CONFIG_TICK_AUTO_MAX_NS);
    assert_int_equal(config_auto_tick_ns(32000, 1), 500000);
    assert_int_equal(config_auto_tick_ns(50000, 1), 320000);
    assert_int_equal(config_auto_tick_ns(64000, 2), 500000); /* per stream as 32,000 */
    assert_int_equal(config_auto_tick_ns(320000, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(1e8, 1), CONFIG_TICK_AUTO_MIN_NS);
    assert_int_equal(config_auto_tick_ns(1e8, 0), CONFIG_TICK_AUTO_MIN_NS);
    uint64_t prev = CONFIG_TICK_AUTO_MAX_NS;
    for (double r = 4000; r <= 1e6; r *= 1.1) {
        uint64_t t = config_auto_tick_ns(r, 1);
        assert_true(t >= CONFIG_TICK_AUTO_MIN_NS && t <= CONFIG_TICK_AUTO_MAX_NS);
        assert_true(t <= prev); /* a higher rate never gets a coarser tick */
        assert_true(t % 1000 == 0);
        /* at least CONFIG_TICK_AUTO_REQS requests due per tick unless capped */
        if (t < CONFIG_TICK_AUTO_MAX_NS)
            assert_true(r * (double)t / 1e9 >= CONFIG_TICK_AUTO_REQS * 0.99);
        prev = t;
    }
}

static void test_agent_parse(void **state)
{
    unsigned i, n;
    assert_int_equal(config_parse_agent("0/1", &i, &n), 0);
    assert_int_equal(i, 0);
    assert_int_equal(n, 1);
    assert_int_equal(config_parse_agent("7/8", &i, &n), 0);
    assert_int_equal(i, 7);
    assert_int_equal(n, 8);
    const char *bad[] = {"3/3", "0/0", "1", "/2", "1/", "x/2", "1/x", "-1/2", "1/1001", "1 /2"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        assert_int_equal(config_parse_agent(bad[k], &i, &n), -EINVAL);
    struct config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, err, sizeof err, "--url", "http://h:1", "--agent", "2/2", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--agent"));
}

static void test_start_at(void **state)
{
    double t;
    assert_int_equal(config_parse_epoch("1767225600", &t), 0);
    assert_true(t == 1767225600.0);
    assert_int_equal(config_parse_epoch("1767225600.125", &t), 0);
    assert_true(t == 1767225600.125);
    const char *bad[] = {"", "soon", "-5", "+5", "0", "1e400", "12abc", " 12", "nan", "inf"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++)
        assert_int_equal(config_parse_epoch(bad[k], &t), -EINVAL);
    char err[300] = "";
    double now = 1767225600.0;
    assert_int_equal(config_check_start_at(0, now, err, sizeof err), 0); /* not given */
    assert_int_equal(config_check_start_at(now + 5, now, err, sizeof err), 0);
    assert_int_equal(config_check_start_at(now - 0.5, now, err, sizeof err), 0);
    assert_int_equal(config_check_start_at(now - 2.5, now, err, sizeof err), -ETIME);
    assert_non_null(strstr(err, "--start-at"));
    assert_non_null(strstr(err, "2.500 s in the past"));
}

static void test_timebase_is_one_clock(void **state)
{
    /* libuv's uv_hrtime and the timebase read the same clock (1 ms of scheduling slack). */
    assert_int_equal(timebase_check_uv(1000000), 0);
    uint64_t a = timebase_now_ns();
    uint64_t b = timebase_now_ns();
    assert_true(b >= a);
    /* A realtime instant 1.5 s ahead converts to about now + 1.5 s on the timebase. */
    double ahead;
    uint64_t mono_now = timebase_now_ns();
    uint64_t at = timebase_from_realtime(timebase_realtime_s() + 1.5, &ahead);
    assert_true(ahead > 1.49 && ahead <= 1.5 + 1e-3);
    int64_t d = (int64_t)at - (int64_t)(mono_now + 1500000000ull);
    assert_true(d > -5000000 && d < 5000000);
    /* A past instant: negative ahead. */
    timebase_from_realtime(timebase_realtime_s() - 3.0, &ahead);
    assert_true(ahead < -2.99);
    /* Sleeping until a timebase instant really waits until then. */
    uint64_t until = timebase_now_ns() + 2000000;
    assert_int_equal(timebase_sleep_until(until, NULL), 0);
    assert_true(timebase_now_ns() >= until);
}

static void test_value_forms(void **state)
{
    struct config a, b;
    char err[256];
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--duration", "2s",
                           "--connect-timeout", "250ms", "--json", "j.json", NULL),
                     0);
    assert_int_equal(parse(&b, err, sizeof err, "--url=http://h:1", "--duration=2s",
                           "--connect-timeout=250ms", "--json=j.json", NULL),
                     0);
    assert_int_equal(a.duration_ns, 2000000000ull);
    assert_int_equal(b.duration_ns, a.duration_ns);
    assert_int_equal(b.connect_timeout_ns, 250000000ull);
    assert_int_equal(a.connect_timeout_ns, b.connect_timeout_ns);
    assert_string_equal(b.json_path, "j.json");
    assert_string_equal(b.url, "http://h:1");
    /* the default connect timeout, and one under a millisecond is refused */
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", NULL), 0);
    assert_int_equal(a.connect_timeout_ns, CONFIG_CONNECT_TIMEOUT_NS);
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--connect-timeout",
                           "500us", NULL),
                     -EINVAL);
    /* an empty value is an error, in either form, not a default */
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--json=", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "empty"));
    assert_non_null(strstr(err, "--json"));
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--duration", "", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "--duration"));
    assert_int_equal(parse(&a, err, sizeof err, "--url=", NULL), -EINVAL);
    /* a flag given a value */
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--quiet=1", NULL),
                     -EINVAL);
    assert_non_null(strstr(err, "takes no value"));
    /* a value missing at the end */
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--json", NULL), -EINVAL);
    assert_non_null(strstr(err, "needs a value"));
    /* --version: 2, wherever it stands (main prints it and exits 0) */
    assert_int_equal(parse(&a, err, sizeof err, "--version", NULL), 2);
    assert_int_equal(parse(&a, err, sizeof err, "--url", "http://h:1", "--version", NULL), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tick_io_defaults),
        cmocka_unit_test(test_auto_tick),
        cmocka_unit_test(test_intervals),
        cmocka_unit_test(test_agent_parse),
        cmocka_unit_test(test_start_at),
        cmocka_unit_test(test_timebase_is_one_clock),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_all_flags),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_url_query_ends_the_authority),
        cmocka_unit_test(test_usage_errors),
        cmocka_unit_test(test_value_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
