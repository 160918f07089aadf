/* test_invariants: ASSERT (common/base/util.h) is on in what the unit tests link: a broken
 * invariant aborts with its file, line and condition. Each case breaks one on purpose in
 * a child process and expects SIGABRT and the message; a library built with NDEBUG (the
 * benchmark build's) would let the child exit 0 and the case fail. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/base/util.h"
#include "common/http/request.h"

/* Runs fn in a child with stderr into a pipe; asserts it died of SIGABRT and that its
 * stderr holds want. */
static void expect_abort(void (*fn)(void), const char *want)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], STDERR_FILENO);
        close(fds[0]);
        fn();
        _exit(0); /* the invariant was not checked */
    }
    close(fds[1]);
    char out[512];
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fds[0], out + n, sizeof out - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
        fail_msg("child did not abort (status %d); stderr: %s", status, out);
    if (strstr(out, want) == NULL)
        fail_msg("stderr lacks '%s': %s", want, out);
}

/* struct buf: the byte after len must be NUL while cap > 0 */
static void break_buf_nul(void)
{
    struct buf b = {0};
    buf_append(&b, "ab", 2);
    b.data[b.len] = 'x';
    buf_append(&b, "c", 1);
}

/* a request pool: a put without a get */
static void break_pool_count(void)
{
    struct request_pool p = {0};
    struct request *req = request_new();
    request_pool_put(&p, req);
}

static void test_buf_nul_asserted(void **state)
{
    (void)state;
    expect_abort(break_buf_nul, "invariant broken: b->cap == 0 ||");
}

static void test_pool_count_asserted(void **state)
{
    (void)state;
    expect_abort(break_pool_count, "invariant broken: p->in_use > 0");
}

/* and a kept invariant costs nothing visible: the same calls without the breach */
static void test_kept_invariants_pass(void **state)
{
    (void)state;
    struct buf b = {0};
    buf_reserve(&b, 10);
    assert_int_equal(b.data[0], '\0');
    buf_append(&b, "ab", 2);
    assert_string_equal(b.data, "ab");
    buf_free(&b);
    struct request_pool p = {0};
    request_pool_put(&p, request_pool_get(&p));
    assert_int_equal(p.in_use, 0);
    request_pool_drain(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_buf_nul_asserted),
        cmocka_unit_test(test_pool_count_asserted),
        cmocka_unit_test(test_kept_invariants_pass),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
