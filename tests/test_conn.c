/* test_conn: conn.c with full control of timing: a loop turned by the test's thread, one
 * connection on a socketpair, the test choosing read splits, reply order, when it stops
 * reading and what time it is (clock offset + conn_sweep). Cases: an error behind a request
 * in flight (one 400, no memory), pipelining across a short header deadline, a deadline with
 * a request in flight, slow but steady bodies and readers (not cut), a reader that stops
 * (cut), a reply after the client left. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "common/net/conn.h"
#include "common/net/loop.h"
#include "common/net/server.h"
#include "common/base/util.h"

#define HELD_MAX 64
#define TURNS 8 /* loop turns per pump: every callback a step can cause has run */

enum { HOLD, ANSWER_NOW };

/* The test's architecture and the client end. Single-threaded: the test is the loop's
 * thread. */
struct harness {
    struct server *srv;
    struct server_loop *l;
    int client;
    unsigned mode;
    unsigned seen;             /* requests handed to on_request */
    size_t body_len;           /* 0: answers echo the target; else a body this long */
    struct request *held[HELD_MAX];
    unsigned nheld;
    struct buf in;             /* what the client has read */
};

/* 200 with the request-target as the body (the order is visible), or body_len bytes. */
static void answer(struct harness *h, struct request *req)
{
    req->resp.status = 200;
    req->resp.content_type = CT_TEXT;
    buf_reset(&req->resp.body);
    if (h->body_len == 0) {
        buf_append(&req->resp.body, req->target.data, req->target.len);
    } else {
        buf_reserve(&req->resp.body, h->body_len);
        memset(req->resp.body.data, 'b', h->body_len);
        req->resp.body.len = h->body_len;
    }
    server_respond(h->l, req);
}

static void on_request(struct server_loop *l, struct request *req, void *ctx)
{
    struct harness *h = ctx;
    h->seen++;
    if (h->mode == HOLD && h->nheld < HELD_MAX)
        h->held[h->nheld++] = req;
    else
        answer(h, req);
}

static const struct server_hooks hooks = {.on_request = on_request};

static void pump(struct harness *h)
{
    for (int i = 0; i < TURNS; i++)
        server_loop_turn(h->srv, 0);
}

/* Moves the connection layer's clock forward and runs the sweep, as its timer would. */
static void advance(struct harness *h, uint64_t ms)
{
    h->l->clock_offset_ms += ms;
    conn_sweep(h->l, loop_now_ms(h->l));
    pump(h);
}

static struct server_config config(void)
{
    struct server_config cfg;
    server_config_default(&cfg);
    cfg.port = 0;
    cfg.threads = 1;
    return cfg;
}

/* A loop on this thread and one connection on a socketpair. */
static struct harness *start(const struct server_config *cfg, unsigned mode)
{
    struct harness *h = xcalloc(1, sizeof *h);
    char err[256] = "";
    h->mode = mode;
    if (server_create(cfg, &hooks, h, &h->srv, err, sizeof err) != 0)
        fail_msg("server_create: %s", err);
    server_loop_turn(h->srv, 0); /* this thread is the loop's from here on */
    h->l = server_loop_at(h->srv, 0);
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    h->client = sv[1];
    fcntl(h->client, F_SETFL, fcntl(h->client, F_GETFL) | O_NONBLOCK);
    conn_open(h->l, sv[0]);
    pump(h);
    assert_int_equal(h->l->nconns, 1);
    return h;
}

/* Answers what is held (in order), closes everything and frees the server. */
static void finish(struct harness *h)
{
    for (unsigned i = 0; i < h->nheld; i++)
        if (h->held[i] != NULL)
            answer(h, h->held[i]);
    h->nheld = 0;
    if (h->client >= 0)
        close(h->client);
    pump(h);
    conn_close_all(h->l);
    pump(h);
    assert_int_equal(h->l->nconns, 0);
    assert_int_equal(h->l->pool.in_use, 0);
    server_stop(h->srv);
    server_join(h->srv);
    server_free(h->srv);
    buf_free(&h->in);
    free(h);
}

static void answer_held(struct harness *h, unsigned i)
{
    assert_true(i < h->nheld && h->held[i] != NULL);
    struct request *req = h->held[i];
    h->held[i] = NULL;
    answer(h, req);
}

static void send_bytes(struct harness *h, const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = send(h->client, s, n, MSG_NOSIGNAL);
        if (w < 0)
            fail_msg("send: %s", strerror(errno));
        s += w;
        n -= (size_t)w;
    }
}

static void send_str(struct harness *h, const char *s)
{
    send_bytes(h, s, strlen(s));
}

/* Reads up to max bytes that are there now; returns them, or -1 at EOF (after the data),
 * -2 when the socket has nothing. */
static ssize_t client_read(struct harness *h, size_t max)
{
    size_t got = 0;
    char tmp[65536];
    while (got < max) {
        size_t want = max - got < sizeof tmp ? max - got : sizeof tmp;
        ssize_t r = recv(h->client, tmp, want, 0);
        if (r == 0)
            return got ? (ssize_t)got : -1;
        if (r < 0)
            return got ? (ssize_t)got : -2;
        buf_append(&h->in, tmp, (size_t)r);
        got += (size_t)r;
    }
    return (ssize_t)got;
}

/* Whether the client sees EOF now (after reading what is left). */
static int client_eof(struct harness *h)
{
    ssize_t r;
    while ((r = client_read(h, SIZE_MAX)) > 0)
        ;
    return r == -1;
}

/* Bytes of one complete response at p[0..n), or 0. */
static size_t response_len(const char *p, size_t n)
{
    if (n == 0)
        return 0;
    const char *end = memmem(p, n, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t head = (size_t)(end - p) + 4;
    const char *cl = memmem(p, head, "Content-Length: ", 16);
    size_t body = cl ? strtoul(cl + 16, NULL, 10) : 0;
    return n >= head + body ? head + body : 0;
}

/* The complete responses in h->in: count, and the status and body of the i-th. */
static unsigned responses(const struct harness *h)
{
    unsigned k = 0;
    size_t off = 0, len;
    while ((len = response_len(h->in.data + off, h->in.len - off)) > 0) {
        off += len;
        k++;
    }
    return k;
}

static const char *response_at(const struct harness *h, unsigned i, size_t *len)
{
    size_t off = 0;
    for (unsigned k = 0; k < i; k++)
        off += response_len(h->in.data + off, h->in.len - off);
    *len = response_len(h->in.data + off, h->in.len - off);
    return h->in.data + off;
}

static void expect_response(const struct harness *h, unsigned i, const char *status_line,
                            const char *body)
{
    size_t len;
    const char *p = response_at(h, i, &len);
    if (len == 0)
        fail_msg("response %u missing (%u complete)", i, responses(h));
    if (len < strlen(status_line) || memcmp(p, status_line, strlen(status_line)) != 0)
        fail_msg("response %u: '%.40s', want '%s'", i, p, status_line);
    if (body != NULL) {
        const char *end = memmem(p, len, "\r\n\r\n", 4);
        size_t head = (size_t)(end - p) + 4;
        if (len - head != strlen(body) || memcmp(p + head, body, len - head) != 0)
            fail_msg("response %u: body '%.*s', want '%s'", i, (int)(len - head), p + head,
                     body);
    }
}

static int response_closes(const struct harness *h, unsigned i)
{
    size_t len;
    const char *p = response_at(h, i, &len);
    return memmem(p, len, "\r\nConnection: close\r\n", 21) != NULL;
}

static unsigned count_in(const struct harness *h, const char *needle)
{
    unsigned k = 0;
    const char *p = h->in.data;
    size_t left = h->in.len, n = strlen(needle);
    const char *q;
    while (left >= n && (q = memmem(p, left, needle, n)) != NULL) {
        k++;
        left -= (size_t)(q + n - p);
        p = q + n;
    }
    return k;
}

#define GET(path) "GET " path " HTTP/1.1\r\nHost: t\r\n\r\n"

/* ---- bug 1: an error behind a request in flight ---- */

/* A request waits in the architecture (as a POST waits for the store), then one invalid
 * byte and a stream of one-byte writes, each read on its own. The old layer answered
 * every read with a fresh 400 request from the pool (llhttp's error is sticky) and kept
 * reading: 2,000 writes took 2,000 requests. Now: one 400, queued behind the request in
 * flight, and nothing more is read. */
static void test_error_behind_inflight_answered_once(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.max_pipeline = 4;
    struct harness *h = start(&cfg, HOLD);
    send_str(h, GET("/held"));
    pump(h);
    assert_int_equal(h->seen, 1);
    send_str(h, "\x01");
    pump(h);
    unsigned peak = 0;
    int i;
    for (i = 0; i < 2000; i++) {
        /* a server that stopped reading fills the socket: then the writes stop */
        if (send(h->client, "x", 1, MSG_NOSIGNAL | MSG_DONTWAIT) != 1)
            break;
        server_loop_turn(h->srv, 0);
        if (h->l->pool.in_use > peak)
            peak = h->l->pool.in_use;
        if (peak > 2)
            fail_msg("after %d one-byte writes: %u requests taken from the pool, want at "
                     "most 2 (the one in flight and one 400)", i + 1, peak);
    }
    print_message("# %d one-byte writes taken before the socket filled; peak %u requests\n",
                  i, peak);
    pump(h);
    assert_int_equal(client_read(h, SIZE_MAX), -2); /* the 400 waits for /held */
    answer_held(h, 0);
    pump(h);
    assert_true(client_eof(h)); /* both answers, then the FIN of the linger */
    assert_int_equal(responses(h), 2);
    expect_response(h, 0, "HTTP/1.1 200 ", "/held");
    expect_response(h, 1, "HTTP/1.1 400 ", NULL);
    assert_true(response_closes(h, 1));
    assert_int_equal(count_in(h, "HTTP/1.1 400 "), 1);
    assert_int_equal(h->seen, 1);
    finish(h);
}

/* ---- bug 2: deadlines per request, and what is in flight when one fires ---- */

/* A client that pipelines steadily, every read ending inside a request, 300 ms apart:
 * 40 requests over 12 s with a 1 s header deadline. Each request's header block takes
 * far less than 1 s, so none may be cut. The old layer armed the deadline once, at the
 * first partial read, and answered 408 after about 1 s. */
static void test_pipelined_stream_crosses_header_deadline(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.header_timeout_ms = 1000;
    struct harness *h = start(&cfg, ANSWER_NOW);
    struct buf stream = {0};
    size_t starts[41];
    for (int i = 0; i < 40; i++) {
        char line[64];
        starts[i] = stream.len;
        snprintf(line, sizeof line, "GET /r%d HTTP/1.1\r\nHost: t\r\n\r\n", i);
        buf_append_str(&stream, line);
    }
    starts[40] = stream.len;
    size_t sent = 0;
    for (int i = 0; i < 40; i++) {
        size_t cut = i < 39 ? starts[i + 1] + 7 : starts[40]; /* inside the next one */
        send_bytes(h, stream.data + sent, cut - sent);
        sent = cut;
        pump(h);
        advance(h, 300);
        client_read(h, SIZE_MAX);
    }
    assert_int_equal(count_in(h, "HTTP/1.1 408"), 0);
    assert_int_equal(responses(h), 40);
    for (int i = 0; i < 40; i++) {
        char want[16];
        snprintf(want, sizeof want, "/r%d", i);
        expect_response(h, (unsigned)i, "HTTP/1.1 200 ", want);
    }
    buf_free(&stream);
    finish(h);
}

/* A request is in flight and the next one's headers stall past the deadline: the
 * answer in flight still goes out, then 408 and the close (as nginx and h2o answer what
 * they have before closing). The old layer closed at once and lost the answer. */
static void test_deadline_answers_inflight_first(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.header_timeout_ms = 1000;
    struct harness *h = start(&cfg, HOLD);
    send_str(h, GET("/first") "GET /second HTTP/1.1\r\nHo");
    pump(h);
    assert_int_equal(h->seen, 1);
    advance(h, 100); /* the first sweep after the request began sees it */
    advance(h, 800);
    advance(h, 300); /* 1,200 ms: the 408 is owed */
    assert_int_equal(client_read(h, SIZE_MAX), -2); /* not closed; the 408 waits */
    assert_int_equal(h->l->nconns, 1);
    answer_held(h, 0);
    pump(h);
    assert_true(client_eof(h));
    assert_int_equal(responses(h), 2);
    expect_response(h, 0, "HTTP/1.1 200 ", "/first");
    expect_response(h, 1, "HTTP/1.1 408 ", NULL);
    assert_true(response_closes(h, 1));
    finish(h);
}

/* A body that arrives one byte every 400 ms is slow but alive: with 1 s header and body
 * deadlines it is never cut (40 s in all); a body that stops is cut with 408. The old
 * layer counted the whole request against the header deadline. */
static void test_body_deadline_is_progress_based(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.header_timeout_ms = 1000;
    cfg.body_timeout_ms = 1000;
    struct harness *h = start(&cfg, ANSWER_NOW);
    send_str(h, "POST /slow HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n");
    pump(h);
    for (int i = 0; i < 100; i++) {
        advance(h, 400);
        send_str(h, "y");
        pump(h);
    }
    advance(h, 10);
    client_read(h, SIZE_MAX);
    assert_int_equal(responses(h), 1);
    expect_response(h, 0, "HTTP/1.1 200 ", "/slow");
    assert_int_equal(h->seen, 1);

    /* the same body, stalled after 10 bytes */
    send_str(h, "POST /stall HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\n0123456789");
    pump(h);
    advance(h, 100);
    advance(h, 800);
    assert_int_equal(client_read(h, SIZE_MAX), -2); /* 900 ms without a byte: not yet */
    advance(h, 300);
    assert_true(client_eof(h));
    assert_int_equal(responses(h), 2);
    expect_response(h, 1, "HTTP/1.1 408 ", NULL);
    finish(h);
}

/* ---- the peer's reading ---- */

/* A 4 MiB answer to a client that reads 64 KiB every 500 ms (32 s in all) with a 1 s
 * idle timeout and a 2 s send deadline: it makes progress, so it is never cut, and gets
 * every byte. The old layer ran the idle timeout while the answer was being written. */
static void test_slow_reader_with_progress_not_cut(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.idle_timeout_ms = 1000;
    cfg.send_timeout_ms = 2000;
    struct harness *h = start(&cfg, ANSWER_NOW);
    h->body_len = 4u << 20;
    send_str(h, GET("/big"));
    pump(h);
    for (int i = 0; i < 200 && responses(h) == 0; i++) {
        advance(h, 500);
        ssize_t r = client_read(h, 64 * 1024);
        if (r == -1)
            fail_msg("cut after %zu bytes, %d s (fake) into a steady read",
                     h->in.len, (i + 1) / 2);
        pump(h);
    }
    assert_int_equal(responses(h), 1);
    expect_response(h, 0, "HTTP/1.1 200 ", NULL);
    assert_int_equal(h->l->nconns, 1); /* still open: idle only from now on */
    finish(h);
}

/* The same answer to a client that reads nothing: once none of the output has been
 * taken for the send deadline (2 s), the connection is closed and its memory freed
 * (the idle timeout, 60 s here, has nothing to do with it). The old layer had no such
 * deadline: the write waited until the idle timeout, or forever. */
static void test_reader_that_stops_is_cut(void **state)
{
    (void)state;
    struct server_config cfg = config();
    cfg.send_timeout_ms = 2000;
    struct harness *h = start(&cfg, ANSWER_NOW);
    h->body_len = 4u << 20;
    send_str(h, GET("/big"));
    pump(h);
    assert_true(client_read(h, 100 * 1024) > 0); /* it started, then stops reading */
    pump(h);
    advance(h, 500);
    advance(h, 500);
    advance(h, 500);
    assert_int_equal(h->l->nconns, 1); /* 1.5 s without progress: not yet */
    advance(h, 500);
    advance(h, 500);
    assert_int_equal(h->l->nconns, 0); /* past 2 s: closed and freed */
    finish(h);
}

/* ---- replies after the client left ---- */

/* Three requests in flight; the client leaves; the replies come back out of order. Each
 * is dropped without touching freed memory (ASan builds check), the connection is freed
 * with the last one, and every request goes back to the pool. */
static void test_reply_after_client_left(void **state)
{
    (void)state;
    struct server_config cfg = config();
    struct harness *h = start(&cfg, HOLD);
    send_str(h, GET("/a") GET("/b") GET("/c"));
    pump(h);
    assert_int_equal(h->seen, 3);
    assert_int_equal(h->l->pool.in_use, 3);
    close(h->client);
    h->client = -1;
    pump(h);
    answer_held(h, 2);
    pump(h);
    assert_int_equal(h->l->nconns, 1); /* /a and /b are still owed a reply */
    answer_held(h, 0);
    pump(h);
    answer_held(h, 1);
    pump(h);
    assert_int_equal(h->l->nconns, 0);
    assert_int_equal(h->l->pool.in_use, 0);
    finish(h);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* as the servers do: a write to a gone peer is an error */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_behind_inflight_answered_once),
        cmocka_unit_test(test_pipelined_stream_crosses_header_deadline),
        cmocka_unit_test(test_deadline_answers_inflight_first),
        cmocka_unit_test(test_body_deadline_is_progress_based),
        cmocka_unit_test(test_slow_reader_with_progress_not_cut),
        cmocka_unit_test(test_reader_that_stops_is_cut),
        cmocka_unit_test(test_reply_after_client_left),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
