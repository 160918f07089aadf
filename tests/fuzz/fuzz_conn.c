/* fuzz_conn: libFuzzer over the connection layer (conn.c, server.c), timing in the input:
 * each input scripts one socketpair connection (bytes cut anywhere, loop turns, replies in
 * any order and size, clock moves, partial reads, half-close, close). Checks: at most
 * max_pipeline + 1 requests in use, answers in request order, one error answer at most and
 * nothing after it, everything freed at the end. make fuzz / fuzz-ci; FUZZ_TRACE=1 traces.
 * Invariant: one loop, created once, driven on this thread. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/net/conn.h"
#include "common/net/loop.h"
#include "common/net/server.h"

#define MAX_PIPELINE 3 /* small, so the pause-and-resume path runs often */
#define HELD_MAX 64
#define REQS_MAX 256
#define BIG_BODY (256 * 1024) /* more than the socket buffers: partial writes */

struct expected {
    char target[48];  /* the echoed body (truncated targets are compared by length) */
    size_t target_len;
    size_t body_len;  /* what the 200 carries */
    int head;         /* HEAD: no body bytes */
};

struct fuzz_state {
    struct server *srv;
    struct server_loop *l;
    struct request *held[HELD_MAX];
    unsigned nheld;
    struct expected exp[REQS_MAX];
    unsigned nreq;
    unsigned ncheck;  /* responses checked so far */
    struct buf in;    /* what the client read */
    size_t in_off;    /* start of the first response not checked yet */
    int done;         /* an error answer or a Connection: close was seen */
    size_t slack;     /* bytes that may still follow then (an error answer's body, which
                         a HEAD request's answer leaves out) */
};

static struct fuzz_state fz;

static void on_request(struct server_loop *l, struct request *req, void *ctx)
{
    if (fz.nreq < REQS_MAX) {
        struct expected *e = &fz.exp[fz.nreq];
        e->target_len = req->target.len;
        size_t n = req->target.len < sizeof e->target ? req->target.len : sizeof e->target;
        memcpy(e->target, req->target.data, n);
        e->head = (req->resp.flags & RESP_NO_BODY) != 0;
    }
    fz.nreq++;
    if (fz.nheld < HELD_MAX) {
        fz.held[fz.nheld++] = req;
        return;
    }
    /* more held than the harness tracks: cannot happen under the pipeline cap */
    fprintf(stderr, "more than %d requests held\n", HELD_MAX);
    abort();
}

static const struct server_hooks hooks = {.on_request = on_request};

/* Answers held request i: its target as the body, or BIG_BODY bytes. */
static void answer(unsigned i, int big)
{
    struct request *req = fz.held[i];
    fz.held[i] = fz.held[--fz.nheld];
    /* the body identifies the request (its target), so the client side can check that
     * answers come back in request order whatever order they were given in here */
    req->resp.status = 200;
    req->resp.content_type = CT_TEXT;
    buf_reset(&req->resp.body);
    if (big) {
        buf_reserve(&req->resp.body, BIG_BODY);
        memset(req->resp.body.data, 'b', BIG_BODY);
        req->resp.body.len = BIG_BODY;
    } else {
        buf_append(&req->resp.body, req->target.data, req->target.len);
    }
    server_respond(fz.l, req);
}

static void check_pool(void)
{
    if (fz.l->pool.in_use > MAX_PIPELINE + 1) {
        fprintf(stderr, "%u requests in use, cap %d + 1\n", fz.l->pool.in_use, MAX_PIPELINE);
        abort();
    }
}

static void turn(unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        server_loop_turn(fz.srv, 0);
        check_pool();
    }
}

/* Checks every complete response read so far. */
static void check_responses(void)
{
    for (;;) {
        size_t n = fz.in.len - fz.in_off;
        if (n == 0)
            return;
        const char *p = fz.in.data + fz.in_off;
        if (fz.done) {
            if (n > fz.slack) {
                fprintf(stderr, "%zu bytes after the last answer\n", n - fz.slack);
                abort();
            }
            return;
        }
        const char *end = memmem(p, n, "\r\n\r\n", 4);
        if (end == NULL)
            return;
        size_t head = (size_t)(end - p) + 4;
        if (n < 12 || memcmp(p, "HTTP/1.1 ", 9) != 0) {
            fprintf(stderr, "bad status line\n");
            abort();
        }
        unsigned status = (unsigned)atoi(p + 9);
        const char *cl = memmem(p, head, "\r\nContent-Length: ", 18);
        if (cl == NULL) {
            fprintf(stderr, "no Content-Length\n");
            abort();
        }
        size_t len = strtoul(cl + 18, NULL, 10);
        int closes = memmem(p, head, "\r\nConnection: close\r\n", 21) != NULL;
        size_t body = len;
        if (status == 200) {
            if (fz.ncheck >= fz.nreq || fz.ncheck >= REQS_MAX) {
                fprintf(stderr, "an answer with no request\n");
                abort();
            }
            const struct expected *e = &fz.exp[fz.ncheck];
            if (e->head)
                body = 0;
            if (n < head + body)
                return; /* not all here yet */
            if (len != BIG_BODY || e->target_len == BIG_BODY) {
                size_t cmp = e->target_len < sizeof e->target ? e->target_len : sizeof e->target;
                if (len != e->target_len || (body && memcmp(p + head, e->target, cmp) != 0)) {
                    fprintf(stderr, "answer %u out of order: %zu bytes, want '%.*s'\n",
                            fz.ncheck, len, (int)cmp, e->target);
                    abort();
                }
            }
            fz.ncheck++;
        } else if (status >= 400) {
            /* the refused input's answer: always the last; its body may be left out (a
             * HEAD request's), so what follows is checked against its length */
            if (!closes) {
                fprintf(stderr, "error %u without Connection: close\n", status);
                abort();
            }
            fz.in_off += head;
            fz.done = 1;
            fz.slack = len;
            continue;
        } else {
            fprintf(stderr, "unexpected status %u\n", status);
            abort();
        }
        fz.in_off += head + body;
        if (closes)
            fz.done = 1;
    }
}

/* Reads up to max bytes the client has. */
static void client_read(int fd, size_t max)
{
    char tmp[16384];
    while (max > 0) {
        ssize_t r = recv(fd, tmp, max < sizeof tmp ? max : sizeof tmp, MSG_DONTWAIT);
        if (r <= 0)
            break;
        buf_append(&fz.in, tmp, (size_t)r);
        max -= (size_t)r;
    }
    check_responses();
}

static const char *const fragments[] = {
    "GET /a HTTP/1.1\r\nHost: t\r\n\r\n",
    "POST /b HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    "GET /c HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    "HEAD /d HTTP/1.1\r\nHost: t\r\n\r\n",
    "POST /e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
    "GET /f HTTP/1.0\r\n\r\n",
    "\x01",
    "GET /g HTTP/1.1\r\nHost: t\r\nContent-Length: 1x\r\n\r\n",
};

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    signal(SIGPIPE, SIG_IGN);
    struct server_config cfg;
    server_config_default(&cfg);
    cfg.port = 0;
    cfg.threads = 1;
    cfg.max_pipeline = MAX_PIPELINE;
    cfg.header_timeout_ms = 1000;
    cfg.body_timeout_ms = 1000;
    cfg.send_timeout_ms = 2000;
    cfg.idle_timeout_ms = 5000;
    char err[256];
    if (server_create(&cfg, &hooks, NULL, &fz.srv, err, sizeof err) != 0) {
        fprintf(stderr, "server_create: %s\n", err);
        abort();
    }
    server_loop_turn(fz.srv, 0);
    fz.l = server_loop_at(fz.srv, 0);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        return 0;
    int small = 4096;
    setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof small);
    setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) | O_NONBLOCK);
    int client = sv[1];
    fz.nheld = fz.nreq = fz.ncheck = 0;
    fz.done = 0;
    fz.slack = 0;
    fz.in_off = 0;
    buf_reset(&fz.in);
    conn_open(fz.l, sv[0]);

    size_t i = 0;
    static int trace = -1;
    if (trace < 0)
        trace = getenv("FUZZ_TRACE") != NULL;
    while (i < size) {
        uint8_t op = data[i++] % 8;
        uint8_t arg = i < size ? data[i++] : 0;
        if (trace)
            fprintf(stderr, "op %u arg %u: in_use %u held %u reqs %u read %zu\n", op, arg,
                    fz.l->pool.in_use, fz.nheld, fz.nreq, fz.in.len);
        switch (op) {
        case 0: { /* raw bytes from the input */
            size_t n = arg % 32 + 1;
            if (n > size - i)
                n = size - i;
            if (client >= 0 && n > 0)
                (void)!send(client, data + i, n, MSG_DONTWAIT | MSG_NOSIGNAL);
            i += n;
            break;
        }
        case 1: { /* a fragment, from byte `cut` on, or up to it */
            const char *f = fragments[arg % ARRAY_LEN(fragments)];
            size_t len = strlen(f);
            uint8_t cut = i < size ? data[i++] : 0;
            size_t at = cut % (len + 1);
            if (client >= 0) {
                if (cut & 0x80)
                    (void)!send(client, f + at, len - at, MSG_DONTWAIT | MSG_NOSIGNAL);
                else
                    (void)!send(client, f, at ? at : len, MSG_DONTWAIT | MSG_NOSIGNAL);
            }
            break;
        }
        case 2:
            turn(arg % 4 + 1);
            break;
        case 3:
            if (fz.nheld > 0)
                answer(arg % fz.nheld, (arg & 0xe0) == 0xe0);
            break;
        case 4:
            fz.l->clock_offset_ms += (uint64_t)arg * 20;
            conn_sweep(fz.l, loop_now_ms(fz.l));
            check_pool();
            break;
        case 5:
            if (client >= 0)
                client_read(client, (size_t)arg * 256 + 1);
            break;
        case 6:
            if (client >= 0)
                shutdown(client, SHUT_WR);
            break;
        default:
            if (client >= 0 && arg % 4 == 0) {
                client_read(client, SIZE_MAX);
                close(client);
                client = -1;
            }
            break;
        }
    }

    /* the end: the client reads what is there and leaves, every reply comes back, and the
     * connection must be gone within a few sweeps */
    turn(2);
    if (client >= 0) {
        client_read(client, SIZE_MAX);
        close(client);
    }
    for (int k = 0; k < 20 && (fz.l->nconns > 0 || fz.nheld > 0); k++) {
        while (fz.nheld > 0) /* resumed reading may hand over more */
            answer(0, 0);
        turn(4);
        fz.l->clock_offset_ms += 3000;
        conn_sweep(fz.l, loop_now_ms(fz.l));
    }
    turn(2);
    if (fz.l->nconns != 0 || fz.l->pool.in_use != 0) {
        fprintf(stderr, "at the end: %u connections, %u requests in use\n", fz.l->nconns,
                fz.l->pool.in_use);
        abort();
    }
    return 0;
}
