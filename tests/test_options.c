/* test_options: the servers' shared command line (common/app/options.c): both --opt value and
 * --opt=value, -h and --version, an empty value refused, ranges checked (group commit
 * 1..64 where batching exists, only 1 elsewhere; the timeouts), and a usage error said
 * in two lines on stderr (what was wrong, then where --help is) instead of the whole
 * text; the actor runtime's ladder flags (--placement, --message, --mailbox, --drain,
 * --spin): defaults, every value, ranges, refused by a server without OPT_LADDER, and
 * --placement=spread refused beside --workers. stderr is captured through a temporary
 * file. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/app/options.h"

#define ARGV_MAX 16

/* options_parse on a NULL-terminated list; stderr's text goes to err (errlen bytes). */
static int parse(struct options *o, int features, char *err, size_t errlen, ...)
{
    char *argv[ARGV_MAX + 2];
    int argc = 0;
    va_list ap;
    argv[argc++] = "test-server";
    va_start(ap, errlen);
    for (char *a; argc <= ARGV_MAX && (a = va_arg(ap, char *)) != NULL;)
        argv[argc++] = a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stderr);
    int saved = dup(STDERR_FILENO);
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    dup2(fileno(tmp), STDERR_FILENO);
    int rc = options_parse(o, argc, argv, "test-server", features);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(tmp);
    size_t n = fread(err, 1, errlen - 1, tmp);
    err[n] = '\0';
    fclose(tmp);
    return rc;
}

static unsigned lines(const char *s)
{
    unsigned n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void test_both_value_forms(void **state)
{
    (void)state;
    struct options o;
    char err[2048];
    assert_int_equal(parse(&o, 0, err, sizeof err, "--port=8081", "--threads", "3", "--db",
                           "x.db", "--store-timeout-ms=40", NULL),
                     0);
    assert_int_equal(o.port, 8081);
    assert_int_equal(o.threads, 3);
    assert_string_equal(o.db_path, "x.db");
    assert_int_equal(o.store_timeout_ms, 40);
    assert_string_equal(err, "");
    /* the defaults the documentation gives */
    assert_int_equal(parse(&o, 0, err, sizeof err, NULL), 0);
    assert_int_equal(o.store_timeout_ms, 250);
    assert_int_equal(o.header_timeout_ms, 10000);
    assert_int_equal(o.body_timeout_ms, 10000);
    assert_int_equal(o.send_timeout_ms, 60000);
    assert_int_equal(o.idle_timeout_ms, 60000);
    assert_string_equal(o.db_path, "test-server.db");
}

static void test_help_and_version(void **state)
{
    (void)state;
    struct options o;
    char err[2048];
    assert_int_equal(parse(&o, 0, err, sizeof err, "-h", NULL), 0);
    assert_true(o.help);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--help", NULL), 0);
    assert_true(o.help);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--version", NULL), 0);
    assert_true(o.version);
    assert_false(o.help);
}

/* An empty value is never what was meant: --db= would open "" and --host "" would bind
 * every address; both forms are usage errors naming the flag. */
static void test_empty_value_refused(void **state)
{
    (void)state;
    struct options o;
    char err[2048];
    assert_int_equal(parse(&o, 0, err, sizeof err, "--host=", NULL), -EINVAL);
    assert_non_null(strstr(err, "'--host'"));
    assert_non_null(strstr(err, "empty"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--db", "", NULL), -EINVAL);
    assert_non_null(strstr(err, "'--db'"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--access-log=", NULL), -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--bearer", "", NULL), -EINVAL);
}

static void test_ranges(void **state)
{
    (void)state;
    struct options o;
    char err[2048];
    int both = OPT_WORKERS | OPT_GROUP_COMMIT;
    assert_int_equal(parse(&o, both, err, sizeof err, "--group-commit", "64", NULL), 0);
    assert_int_equal(o.group_commit, 64);
    assert_int_equal(parse(&o, both, err, sizeof err, "--group-commit", "0", NULL), -EINVAL);
    assert_int_equal(parse(&o, both, err, sizeof err, "--group-commit", "65", NULL), -EINVAL);
    assert_non_null(strstr(err, "--group-commit"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--group-commit", "2", NULL), -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--group-commit", "1", NULL), 0);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--store-timeout-ms", "0", NULL), -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--store-timeout-ms", "60001", NULL),
                     -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--body-timeout-ms", "x", NULL), -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--send-timeout-ms", "0", NULL), -EINVAL);
    assert_int_equal(parse(&o, 0, err, sizeof err, "--workers", "1", NULL), -EINVAL);
}

/* What a usage error prints: the problem (flag and value) on one line, then one line
 * pointing at --help; not the 30 lines of the full text. */
static void test_usage_error_is_two_lines(void **state)
{
    (void)state;
    struct options o;
    char err[4096];
    assert_int_equal(parse(&o, 0, err, sizeof err, "--port", "notaport", NULL), -EINVAL);
    assert_int_equal(lines(err), 2);
    assert_non_null(strstr(err, "--port"));
    assert_non_null(strstr(err, "'notaport'"));
    assert_non_null(strstr(strchr(err, '\n'), "--help"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--bogus", NULL), -EINVAL);
    assert_int_equal(lines(err), 2);
    assert_non_null(strstr(err, "'--bogus'"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--port", NULL), -EINVAL);
    assert_int_equal(lines(err), 2);
    assert_non_null(strstr(err, "needs a value"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "extra", NULL), -EINVAL);
    assert_int_equal(lines(err), 2);
}

static void test_ladder_flags(void **state)
{
    (void)state;
    struct options o;
    char err[512];
    const int actor = OPT_WORKERS | OPT_GROUP_COMMIT | OPT_LADDER;

    assert_int_equal(parse(&o, actor, err, sizeof err, NULL), 0);
    assert_int_equal(o.placement, OPTIONS_PLACEMENT_LOCAL);
    assert_int_equal(o.message, OPTIONS_MESSAGE_POINTER);
    assert_int_equal(o.mailbox, OPTIONS_MAILBOX_VYUKOV);
    assert_int_equal(o.drain, 64);
    assert_int_equal(o.spin, 64);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--placement=spread", "--message",
                           "copy", "--mailbox=mutex", "--drain", "1", "--spin=0", NULL), 0);
    assert_int_equal(o.placement, OPTIONS_PLACEMENT_SPREAD);
    assert_int_equal(o.message, OPTIONS_MESSAGE_COPY);
    assert_int_equal(o.mailbox, OPTIONS_MAILBOX_MUTEX);
    assert_int_equal(o.drain, 1);
    assert_int_equal(o.spin, 0);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--message=malloc", "--mailbox=ring",
                           "--drain=4096", "--spin=1000000", NULL), 0);
    assert_int_equal(o.message, OPTIONS_MESSAGE_MALLOC);
    assert_int_equal(o.mailbox, OPTIONS_MAILBOX_RING);
    assert_int_equal(o.drain, 4096);
    assert_string_equal(options_placement_names[o.placement], "local");
    assert_string_equal(options_message_names[o.message], "malloc");
    assert_string_equal(options_mailbox_names[o.mailbox], "ring");
    /* bad values, each named */
    assert_int_equal(parse(&o, actor, err, sizeof err, "--placement=remote", NULL), -EINVAL);
    assert_non_null(strstr(err, "'remote'"));
    assert_int_equal(parse(&o, actor, err, sizeof err, "--message=box", NULL), -EINVAL);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--mailbox=lock", NULL), -EINVAL);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--drain=0", NULL), -EINVAL);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--drain=4097", NULL), -EINVAL);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--spin=1000001", NULL), -EINVAL);
    /* spread makes its own threads */
    assert_int_equal(parse(&o, actor, err, sizeof err, "--placement=spread", "--workers=2",
                           NULL), -EINVAL);
    assert_non_null(strstr(err, "--workers"));
    assert_int_equal(lines(err), 2);
    assert_int_equal(parse(&o, actor, err, sizeof err, "--placement=spread", "--workers=0",
                           NULL), 0);
    /* a server without the runtime (async-server) refuses them */
    assert_int_equal(parse(&o, 0, err, sizeof err, "--placement=local", NULL), -EINVAL);
    assert_non_null(strstr(err, "actor server"));
    assert_int_equal(parse(&o, 0, err, sizeof err, "--spin=3", NULL), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_value_forms),
        cmocka_unit_test(test_help_and_version),
        cmocka_unit_test(test_empty_value_refused),
        cmocka_unit_test(test_ranges),
        cmocka_unit_test(test_usage_error_is_two_lines),
        cmocka_unit_test(test_ladder_flags),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
