/* test_server: the connection layer (server.c, conn.c) over loopback, driven by plain
 * blocking sockets against one in-process loop whose architecture either answers at once
 * or holds requests until the test releases them: reading pauses at the pipeline cap and
 * resumes in order; a peer's half-close still gets its answer, then the close; a
 * "Connection: close" answer lingers (FIN, input discarded) instead of resetting; a
 * request whose headers stall gets 408 and the close; idle connections time out; a
 * graceful stop answers what is in flight; loops without a thread are still wound down
 * by server_join; creation errors come back as errors; a port another socket holds is
 * refused while the server's own loops share theirs; out of descriptors, accepting
 * pauses and the backlog waits instead of being reset; loop threads are named io-N.
 * Every wait has a deadline. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/base/atomics.h"
#include "common/net/server.h"
#include "common/base/util.h"

#define HELD_MAX 64
#define WAIT_MS 3000 /* the longest any step may take */

enum { ANSWER_NOW, HOLD };

/* The architecture under test. mode and seen are shared with the test thread; the rest
 * belongs to the loop's thread. */
struct arch {
    unsigned mode;              /* ANSWER_NOW or HOLD (atomic) */
    unsigned seen;              /* requests handed to on_request (atomic) */
    struct server_loop *loop;
    uv_async_t release;         /* test thread -> loop: answer every held request */
    struct request *held[HELD_MAX];
    unsigned nheld;
};

struct fixture {
    struct arch arch;
    struct server *srv;
    int port;
};

static void sleep_ms(unsigned ms)
{
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* 200 text/plain with the request-target as the body, so the order is visible. */
static void answer(struct server_loop *l, struct request *req)
{
    req->resp.status = 200;
    req->resp.content_type = CT_TEXT;
    buf_reset(&req->resp.body);
    buf_append(&req->resp.body, req->target.data, req->target.len);
    server_respond(l, req);
}

static void on_release(uv_async_t *a)
{
    struct arch *t = a->data;
    for (unsigned i = 0; i < t->nheld; i++)
        answer(t->loop, t->held[i]);
    t->nheld = 0;
}

static void loop_init(struct server_loop *l, void *ctx)
{
    struct arch *t = ctx;
    t->loop = l;
    uv_async_init(server_loop_uv(l), &t->release, on_release);
    t->release.data = t;
}

static void loop_fini(struct server_loop *l, void *ctx)
{
    struct arch *t = ctx;
    uv_close((uv_handle_t *)&t->release, NULL);
}

static void on_request(struct server_loop *l, struct request *req, void *ctx)
{
    struct arch *t = ctx;
    atomics_add_relaxed(&t->seen, 1);
    if (atomics_load_relaxed(&t->mode) == HOLD && t->nheld < HELD_MAX)
        t->held[t->nheld++] = req;
    else
        answer(l, req);
}

static const struct server_hooks hooks = {
    .loop_init = loop_init,
    .loop_fini = loop_fini,
    .on_request = on_request,
};

/* One loop on a free port with these limits. */
static struct server_config config(int port, unsigned max_pipeline, uint64_t header_timeout_ms,
                                   uint64_t idle_timeout_ms)
{
    struct server_config cfg;
    server_config_default(&cfg);
    cfg.port = port;
    cfg.max_pipeline = max_pipeline;
    cfg.header_timeout_ms = header_timeout_ms;
    cfg.idle_timeout_ms = idle_timeout_ms;
    return cfg;
}

static struct fixture *start_server(unsigned mode, unsigned max_pipeline,
                                    uint64_t header_timeout_ms, uint64_t idle_timeout_ms)
{
    struct fixture *f = xcalloc(1, sizeof *f);
    struct server_config cfg = config(0, max_pipeline, header_timeout_ms, idle_timeout_ms);
    char err[256] = "";
    f->arch.mode = mode;
    int rc = server_create(&cfg, &hooks, &f->arch, &f->srv, err, sizeof err);
    if (rc != 0)
        fail_msg("server_create: %d (%s)", rc, err);
    f->port = server_port(f->srv);
    rc = server_start(f->srv);
    if (rc != 0)
        fail_msg("server_start: %d", rc);
    return f;
}

static void stop_server(struct fixture *f)
{
    server_stop(f->srv);
    server_join(f->srv);
    server_free(f->srv);
    free(f);
}

static void release_held(struct fixture *f, unsigned mode)
{
    atomics_store_relaxed(&f->arch.mode, mode);
    uv_async_send(&f->arch.release);
}

/* Waits until the architecture has seen n requests; returns what it saw. */
static unsigned wait_seen(struct fixture *f, unsigned n)
{
    uint64_t end = now_ns() + (uint64_t)WAIT_MS * 1000000u;
    unsigned seen;
    while ((seen = atomics_load_relaxed(&f->arch.seen)) < n && now_ns() < end)
        sleep_ms(5);
    return seen;
}

static int client_connect(int port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct timeval tv = {.tv_sec = WAIT_MS / 1000, .tv_usec = (WAIT_MS % 1000) * 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0)
        fail_msg("connect to port %d: %s", port, strerror(errno));
    return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, s, n, MSG_NOSIGNAL);
        if (w < 0)
            fail_msg("send: %s", strerror(errno));
        s += w;
        n -= (size_t)w;
    }
}

static void send_str(int fd, const char *s)
{
    send_all(fd, s, strlen(s));
}

/* Bytes of one complete response at the start of p[0..n), or 0 if it is not all there. */
static size_t response_len(const char *p, size_t n)
{
    if (n == 0)
        return 0; /* p may be NULL then (an empty buffer) */
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t head = (size_t)(end - p) + 4;
    const char *cl = memmem(p, head, "Content-Length: ", 16);
    size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
    return n >= head + body ? head + body : 0;
}

/* Reads until `want` complete responses are in *in (or EOF, an error or the timeout);
 * returns how many are. */
static unsigned read_responses(int fd, struct buf *in, unsigned want)
{
    unsigned have = 0;
    size_t off = 0;
    for (;;) {
        size_t len;
        while (have < want && (len = response_len(in->data + off, in->len - off)) > 0) {
            off += len;
            have++;
        }
        if (have == want)
            return have;
        char tmp[4096];
        ssize_t r = recv(fd, tmp, sizeof tmp, 0);
        if (r <= 0)
            return have;
        buf_append(in, tmp, (size_t)r);
    }
}

/* After the responses: 0 when the server closed cleanly (FIN), else -errno (a reset, or
 * -EAGAIN when it is still open at the timeout), or 1 when more bytes came. */
static int read_eof(int fd)
{
    char tmp[256];
    ssize_t r = recv(fd, tmp, sizeof tmp, 0);
    if (r == 0)
        return 0;
    return r > 0 ? 1 : -errno;
}

/* The body of the i-th response (0-based) in `in` must be `want`. */
static void expect_body(const struct buf *in, unsigned i, const char *want)
{
    size_t off = 0;
    for (unsigned k = 0; k < i; k++)
        off += response_len(in->data + off, in->len - off);
    const char *p = in->data + off;
    size_t len = response_len(p, in->len - off);
    const char *end = memmem(p, len, "\r\n\r\n", 4);
    size_t head = (size_t)(end - p) + 4;
    if (len - head != strlen(want) || memcmp(p + head, want, len - head) != 0)
        fail_msg("response %u: body '%.*s', want '%s'", i, (int)(len - head), p + head, want);
}

/* The end of a test: the client's buffer and socket, then the server. */
static void finish(struct fixture *f, int fd, struct buf *in)
{
    buf_free(in);
    close(fd);
    stop_server(f);
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: t\r\n\r\n"

/* ---- pause and resume ---- */

static void test_pipeline_pauses_at_cap_and_resumes_in_order(void **state)
{
    (void)state;
    struct fixture *f = start_server(HOLD, 2, 10000, 60000);
    int fd = client_connect(f->port);
    send_str(fd, GET("/r1") GET("/r2") GET("/r3") GET("/r4") GET("/r5") GET("/r6"));
    assert_int_equal(wait_seen(f, 2), 2);
    sleep_ms(200); /* a connection that did not pause would hand over more meanwhile */
    assert_int_equal(atomics_load_relaxed(&f->arch.seen), 2);

    release_held(f, ANSWER_NOW);
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 6), 6);
    assert_int_equal(atomics_load_relaxed(&f->arch.seen), 6);
    for (unsigned i = 0; i < 6; i++) {
        char want[16];
        snprintf(want, sizeof want, "/r%u", i + 1);
        expect_body(&in, i, want);
    }
    /* reading was started again: the connection takes a new request */
    buf_reset(&in);
    send_str(fd, GET("/after"));
    assert_int_equal(read_responses(fd, &in, 1), 1);
    expect_body(&in, 0, "/after");
    finish(f, fd, &in);
}

/* ---- the peer's half-close ---- */

static void test_peer_eof_gets_its_answer_then_close(void **state)
{
    (void)state;
    struct fixture *f = start_server(HOLD, 16, 10000, 60000);
    int fd = client_connect(f->port);
    send_str(fd, GET("/q1") GET("/q2"));
    assert_int_equal(wait_seen(f, 2), 2);
    shutdown(fd, SHUT_WR); /* the peer has said everything */
    sleep_ms(100);         /* the server sees the EOF while both are in flight */
    release_held(f, ANSWER_NOW);
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 2), 2);
    expect_body(&in, 0, "/q1");
    expect_body(&in, 1, "/q2");
    assert_int_equal(read_eof(fd), 0); /* then the server closes */
    finish(f, fd, &in);
}

/* ---- linger after Connection: close ---- */

static void test_close_lingers_instead_of_reset(void **state)
{
    (void)state;
    struct fixture *f = start_server(ANSWER_NOW, 16, 10000, 60000);
    int fd = client_connect(f->port);
    /* A closing request followed by input the server must not parse: without the
     * linger (shutdown, then read and discard) the unread bytes would make the kernel
     * answer the close with a reset, which can destroy the response in flight. */
    struct buf req = {0};
    buf_append_str(&req, "GET /bye HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    buf_append_str(&req, GET("/never"));
    while (req.len < 256 * 1024)
        buf_append_str(&req, "junk junk junk junk junk junk junk junk junk junk junk\r\n");
    send_all(fd, req.data, req.len);
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 1), 1);
    assert_non_null(strstr(in.data, "\r\nConnection: close\r\n"));
    assert_int_equal(read_eof(fd), 0); /* FIN, not a reset */
    send_str(fd, "more input after the FIN is read and discarded\r\n");
    sleep_ms(50);
    assert_int_equal(atomics_load_relaxed(&f->arch.seen), 1);
    buf_free(&req);
    finish(f, fd, &in);
}

/* ---- deadlines ---- */

static void test_stalled_headers_get_408_then_close(void **state)
{
    (void)state;
    struct fixture *f = start_server(ANSWER_NOW, 16, 300, 60000);
    int fd = client_connect(f->port);
    uint64_t t0 = now_ns();
    send_str(fd, "GET /slow HTTP/1.1\r\nHost: t\r\n"); /* the blank line never comes */
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 1), 1);
    uint64_t waited_ms = (now_ns() - t0) / 1000000u;
    if (waited_ms < 300)
        fail_msg("408 after %llu ms, before the 300 ms header timeout",
                 (unsigned long long)waited_ms);
    assert_memory_equal(in.data, "HTTP/1.1 408 Request Timeout\r\n", 30);
    assert_non_null(strstr(in.data, "\r\nConnection: close\r\n"));
    assert_int_equal(read_eof(fd), 0);
    assert_int_equal(atomics_load_relaxed(&f->arch.seen), 0); /* never a request */
    finish(f, fd, &in);
}

static void test_idle_connection_times_out(void **state)
{
    (void)state;
    struct fixture *f = start_server(ANSWER_NOW, 16, 10000, 300);
    int fd = client_connect(f->port);
    send_str(fd, GET("/one"));
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 1), 1);
    uint64_t t0 = now_ns();
    assert_int_equal(read_eof(fd), 0); /* closed by the idle timeout, without a word */
    uint64_t waited_ms = (now_ns() - t0) / 1000000u;
    if (waited_ms < 250)
        fail_msg("idle close after %llu ms, before the 300 ms idle timeout",
                 (unsigned long long)waited_ms);
    finish(f, fd, &in);
}

/* ---- graceful stop ---- */

static void test_stop_answers_in_flight_then_closes(void **state)
{
    (void)state;
    struct fixture *f = start_server(HOLD, 16, 10000, 60000);
    int busy = client_connect(f->port);
    int idle = client_connect(f->port);
    send_str(busy, GET("/inflight"));
    assert_int_equal(wait_seen(f, 1), 1);
    server_stop(f->srv);
    assert_int_equal(read_eof(idle), 0); /* idle: closed at once */
    release_held(f, ANSWER_NOW);
    struct buf in = {0};
    assert_int_equal(read_responses(busy, &in, 1), 1);
    assert_non_null(strstr(in.data, "\r\nConnection: close\r\n"));
    assert_int_equal(read_eof(busy), 0);
    server_join(f->srv);
    server_free(f->srv);
    free(f);
    buf_free(&in);
    close(busy);
    close(idle);
}

/* ---- teardown without threads, and creation errors ---- */

static unsigned inits, finis; /* main thread only in this test */

static void count_init(struct server_loop *l, void *ctx)
{
    inits++;
}

static void count_fini(struct server_loop *l, void *ctx)
{
    finis++;
}

static const struct server_hooks counting_hooks = {
    .loop_init = count_init,
    .loop_fini = count_fini,
    .on_request = on_request,
};

/* Loops whose threads never started (as after a failed server_start) still get their
 * loop_init and loop_fini, on the joining thread, and then free cleanly. */
static void test_join_runs_loops_that_had_no_thread(void **state)
{
    (void)state;
    char err[256] = "";
    struct server *srv = NULL;
    struct arch t = {0};
    struct server_config cfg = config(0, 16, 10000, 60000);
    cfg.threads = 3;
    inits = finis = 0;
    assert_int_equal(server_create(&cfg, &counting_hooks, &t, &srv, err, sizeof err), 0);
    server_stop(srv);
    server_join(srv);
    assert_int_equal(inits, 3);
    assert_int_equal(finis, 3);
    server_free(srv);
}

static void test_create_reports_errors(void **state)
{
    (void)state;
    char err[256] = "";
    struct server *srv = NULL;
    struct arch t = {0};
    struct server_config cfg = config(0, 16, 10000, 60000);
    cfg.host = "not-an-address";
    cfg.threads = 2;
    int rc = server_create(&cfg, &hooks, &t, &srv, err, sizeof err);
    assert_int_equal(rc, UV_EINVAL);
    assert_null(srv);
    assert_non_null(strstr(err, "not-an-address"));
}

/* ---- the port ---- */

/* For servers of several loops: no per-loop state (hooks' release handle is one loop's). */
static const struct server_hooks plain_hooks = {.on_request = on_request};

/* A listening socket on 127.0.0.1, with SO_REUSEPORT or not; *port gets its port. */
static int foreign_listener(int reuseport, int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    assert_true(fd >= 0);
    if (reuseport)
        assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one), 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fd, 16), 0);
    socklen_t alen = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &alen);
    *port = ntohs(a.sin_port);
    return fd;
}

/* Another process's listener on the port, SO_REUSEPORT or not, is refused with a clear
 * message (the old listener set SO_REUSEPORT before bind, so it silently joined a
 * foreign SO_REUSEPORT group and took half of its connections); the server's own loops
 * still share one port, and a second server on it is refused too. */
static void test_port_held_elsewhere_is_refused(void **state)
{
    (void)state;
    struct arch t = {0};
    for (int reuseport = 0; reuseport <= 1; reuseport++) {
        int port = 0;
        int fd = foreign_listener(reuseport, &port);
        struct server_config cfg = config(port, 16, 10000, 60000);
        cfg.threads = 2;
        struct server *srv = NULL;
        char err[256] = "";
        int rc = server_create(&cfg, &plain_hooks, &t, &srv, err, sizeof err);
        if (rc != UV_EADDRINUSE)
            fail_msg("a port held by a listener (SO_REUSEPORT %d): rc %d, want EADDRINUSE",
                     reuseport, rc);
        assert_null(srv);
        assert_non_null(strstr(err, "already in use"));
        close(fd);
    }
    /* the server's own loops share the port; a second server cannot join them */
    struct fixture *f = xcalloc(1, sizeof *f);
    struct server_config cfg = config(0, 16, 10000, 60000);
    cfg.threads = 3;
    char err[256] = "";
    f->arch.mode = ANSWER_NOW;
    assert_int_equal(server_create(&cfg, &plain_hooks, &f->arch, &f->srv, err, sizeof err), 0);
    f->port = server_port(f->srv);
    assert_int_equal(server_start(f->srv), 0);
    struct server *second = NULL;
    struct server_config cfg2 = config(f->port, 16, 10000, 60000);
    assert_int_equal(server_create(&cfg2, &plain_hooks, &t, &second, err, sizeof err),
                     UV_EADDRINUSE);
    int fd = client_connect(f->port);
    send_str(fd, GET("/shared"));
    struct buf in = {0};
    assert_int_equal(read_responses(fd, &in, 1), 1);
    expect_body(&in, 0, "/shared");
    finish(f, fd, &in);
}

/* ---- out of descriptors ---- */

/* CPU time of this process (every thread), in ms. */
static uint64_t cpu_ms(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000u +
           (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000u;
}

/* With no descriptor left, clients that connect wait in the listener's backlog: none is
 * reset, the loop does not spin, and each is served once descriptors are back. The old
 * loop closed its listener on EMFILE (the kernel resets every connection queued on it)
 * and bound a new one 200 ms later. */
static void test_out_of_descriptors_keeps_the_backlog(void **state)
{
    (void)state;
    enum { CLIENTS = 8, SPARE = 256 };
    struct fixture *f = start_server(ANSWER_NOW, 16, 10000, 60000);
    int clients[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        clients[i] = socket(AF_INET, SOCK_STREAM, 0);
        assert_true(clients[i] >= 0);
        struct timeval tv = {.tv_sec = WAIT_MS / 1000};
        setsockopt(clients[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    /* no new descriptor from here: the limit at the highest in use, every hole filled */
    struct rlimit was, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
    int top = 0;
    DIR *d = opendir("/proc/self/fd");
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (atoi(e->d_name) > top)
            top = atoi(e->d_name);
    closedir(d);
    low = was;
    low.rlim_cur = (rlim_t)top + 1;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    int spare[SPARE], nspare = 0;
    while (nspare < SPARE && (spare[nspare] = dup(0)) >= 0)
        nspare++;
    assert_true(nspare < SPARE); /* the table is full */

    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)f->port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    for (int i = 0; i < CLIENTS; i++) {
        if (connect(clients[i], (struct sockaddr *)&a, sizeof a) != 0)
            fail_msg("connect %d: %s", i, strerror(errno));
        send_str(clients[i], GET("/queued"));
    }
    uint64_t cpu0 = cpu_ms();
    sleep_ms(500);
    uint64_t spent = cpu_ms() - cpu0;
    /* nobody answered, nobody was reset (checked after the limit is back, so that a
     * failure does not leave the process without descriptors) */
    char bad[160] = "";
    for (int i = 0; i < CLIENTS && !bad[0]; i++) {
        char tmp[64];
        ssize_t r = recv(clients[i], tmp, sizeof tmp, MSG_DONTWAIT);
        if (r >= 0 || errno != EAGAIN)
            snprintf(bad, sizeof bad, "client %d while out of descriptors: recv %zd (%s), "
                     "want EAGAIN", i, r, r < 0 ? strerror(errno) : "data or EOF");
    }
    for (int i = 0; i < nspare; i++)
        close(spare[i]);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
    if (bad[0])
        fail_msg("%s", bad);
    if (spent > 250)
        fail_msg("%llu ms of CPU in 500 ms out of descriptors: the loop spins",
                 (unsigned long long)spent);
    /* descriptors are back: every queued client is served */
    for (int i = 0; i < CLIENTS; i++) {
        struct buf in = {0};
        if (read_responses(clients[i], &in, 1) != 1)
            fail_msg("client %d queued while out of descriptors got no answer", i);
        expect_body(&in, 0, "/queued");
        buf_free(&in);
        close(clients[i]);
    }
    stop_server(f);
}

/* ---- thread names ---- */

/* Each loop thread is named io-<index> (what top -H and perf show). */
static void test_loop_threads_are_named(void **state)
{
    (void)state;
    struct fixture *f = xcalloc(1, sizeof *f);
    struct server_config cfg = config(0, 16, 10000, 60000);
    cfg.threads = 2;
    char err[256] = "";
    assert_int_equal(server_create(&cfg, &plain_hooks, &f->arch, &f->srv, err, sizeof err), 0);
    assert_int_equal(server_start(f->srv), 0);
    int seen[2] = {0, 0};
    for (int tries = 0; tries < 100 && !(seen[0] && seen[1]); tries++) {
        DIR *d = opendir("/proc/self/task");
        assert_non_null(d);
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            char path[300], name[32] = "";
            snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
            FILE *fp = fopen(path, "r");
            if (fp == NULL)
                continue;
            if (fgets(name, sizeof name, fp) != NULL) {
                if (strcmp(name, "io-0\n") == 0)
                    seen[0] = 1;
                if (strcmp(name, "io-1\n") == 0)
                    seen[1] = 1;
            }
            fclose(fp);
        }
        closedir(d);
        sleep_ms(10);
    }
    assert_true(seen[0] && seen[1]);
    stop_server(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pipeline_pauses_at_cap_and_resumes_in_order),
        cmocka_unit_test(test_peer_eof_gets_its_answer_then_close),
        cmocka_unit_test(test_close_lingers_instead_of_reset),
        cmocka_unit_test(test_stalled_headers_get_408_then_close),
        cmocka_unit_test(test_idle_connection_times_out),
        cmocka_unit_test(test_stop_answers_in_flight_then_closes),
        cmocka_unit_test(test_join_runs_loops_that_had_no_thread),
        cmocka_unit_test(test_create_reports_errors),
        cmocka_unit_test(test_port_held_elsewhere_is_refused),
        cmocka_unit_test(test_out_of_descriptors_keeps_the_backlog),
        cmocka_unit_test(test_loop_threads_are_named),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
